//! The tiny store, end to end, on the simulated device (Parts 2 to 8).
//!
//! Twenty-four writes ([`crate::tiny_store::WRITES`]) arrive at their instants. Each goes
//! through the WAL rule: its record is appended to the log through a log session
//! ([`Session`], around the group-commit machine), and only when the machine
//! acknowledges it is it applied to the MemTable. The log's segments, the flushed files and the manifest are files on one
//! [`Device`], each synced independently.
//!
//! # The store's life, as simulated
//!
//! - **Segments.** Segment `wal-k` holds writes `4k-3 ..= 4k`, a MemTable's worth (the
//!   session's rule, [`crate::session::rollover`]). The store keeps the next
//!   segment prepared (created zero-filled at [`SEGMENT_BYTES`] and synced with its
//!   directory ahead of time, as PostgreSQL prepares WAL segments), so a switch costs no
//!   sync; the trace shows the segment appearing when its first write arrives. A batch
//!   never spans two segments (the machine closes a batch at a segment change).
//! - **Flushes.** When the fourth write of a MemTable is applied, the MemTable is written
//!   as a sorted file (`F7` for writes 1-4, ..., `F12` for 21-24: every record, sorted by
//!   key, newest first) and that file is synced on its own, in parallel with the log.
//! - **The manifest.** Once the flushed file's sync returns, the store appends a manifest
//!   edit (edit 5 for F7, ..., edit 9 for F11), a 16-byte record (edit, file, flushed
//!   through seq, CRC32C of the twelve bytes before it), and syncs the manifest. A flush
//!   counts only once its edit is durable: the LSM page's safe order.
//! - **Deleting segments.** When an edit becomes durable, every segment is checked
//!   against the two gates of Part 8: *flushed* (all its records are in files the durable
//!   manifest lists) and *read* (every CDC reader has confirmed a seq at or past its last
//!   record). A segment passing both is deleted; the session decides which
//!   ([`crate::session::retention`]), the store only deletes.
//! - **Durability modes.** The machine's [`Policy`] decides when a write is
//!   acknowledged: after its batch's sync (per-write, group, window), or as soon as it is
//!   handed to the page cache (no-sync, periodic). Flushed files and manifest edits are
//!   synced in every mode.
//! - **Power cuts.** A run can stop at a power cut: everything that happened strictly
//!   before the instant counts. What is on the media then depends on which units of the
//!   running syncs landed (units of [`TinySetup::unit_bytes`]: 32 bytes tear a record
//!   mid-payload; a 512-byte unit covers a whole segment, so a sync lands whole or not
//!   at all); [`TinyRun::post_crash_states`] lists every legal combination
//!   and [`recover`] reads each one back the way the store's recovery would: the
//!   manifest, the files it lists, then the remaining log segments through
//!   [`crate::scan::scan_tiny`].
//! - **Failed syncs (Part 3).** A fault makes one log batch's sync return EIO (branch
//!   E1) or one flushed file's sync fail (branch E2). On the log, the right path
//!   ([`SyncErrorHandling::FailStop`]) hands the error to the machine, which fails the
//!   waiters and refuses further writes; the wrong path
//!   ([`SyncErrorHandling::RetryAndCarryOn`]) is a buggy driver that retries the sync,
//!   which "succeeds" because the kernel already marked the pages clean, and
//!   acknowledges the writes. On a flushed file, the store writes no manifest edit and
//!   deletes nothing, and stops background work.

use std::ops::ControlFlow;

use super::clock::{self, End, InstantBound, Simulation};
use crate::checksum::crc32c;
use crate::codec::Op;
use crate::device::{Device, FileId, Image, UnitRef};
use crate::group_commit::{Action, BatchId, Policy, SyncError, Tickets};
use crate::scan::{scan_tiny, StopReason, TinyScan};
use crate::session::preset::{Storage, Tuning};
use crate::session::retention::{Gates, NextSeq};
use crate::session::rollover::SegmentRule;
use crate::session::{trace as session_trace, Layout, Resume, Session};
use crate::time::Nanos;
use crate::tiny_store::{self, FIRST_FILE_NUMBER, FIRST_MANIFEST_EDIT, MEMTABLE_WRITES, UNIT_BYTES, WRITES};
use crate::trace::{Event, FileKind, Trace, TraceScanStop, TraceWrite};

/// Size of a log segment as created: four 32-byte units, zero-filled (one partial unit
/// with 512-byte or larger units).
pub const SEGMENT_BYTES: usize = 128;
/// Size of the manifest as created, zero-filled.
pub const MANIFEST_BYTES: usize = 128;
/// Bytes in one manifest edit record.
pub const MANIFEST_RECORD_BYTES: usize = 16;
/// Log segments in the tiny store.
pub const SEGMENTS: u64 = (WRITES.len() / MEMTABLE_WRITES) as u64;

/// A change-data-capture reader and the seq it has confirmed (it is stuck there).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CdcReader {
    pub name: String,
    pub confirmed_seq: u64,
}

/// What the log's driver does when a sync fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncErrorHandling {
    /// Fail the waiters, stop taking writes, recover (the right path).
    FailStop,
    /// Retry the sync and carry on (the wrong path: the retry "succeeds").
    RetryAndCarryOn,
}

impl SyncErrorHandling {
    pub const ALL: [SyncErrorHandling; 2] = [SyncErrorHandling::FailStop, SyncErrorHandling::RetryAndCarryOn];

    /// The name `walab sim power-cut --on-sync-error` takes.
    pub fn name(self) -> &'static str {
        match self {
            SyncErrorHandling::FailStop => "fail-stop",
            SyncErrorHandling::RetryAndCarryOn => "retry",
        }
    }

    pub fn from_name(name: &str) -> Option<SyncErrorHandling> {
        SyncErrorHandling::ALL.into_iter().find(|handling| handling.name() == name)
    }
}

/// One log batch's sync returns EIO (branch E1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogSyncFault {
    /// The batch, B1 = 1.
    pub batch: u64,
    pub handling: SyncErrorHandling,
}

/// A tiny-store run's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TinySetup {
    pub policy: Policy,
    pub log_sync_latency: Nanos,
    pub flush_sync_latency: Nanos,
    pub manifest_sync_latency: Nanos,
    pub readers: Vec<CdcReader>,
    pub log_sync_fault: Option<LogSyncFault>,
    /// The flushed file (by number, 11 = F11) whose sync fails (branch E2).
    pub flush_sync_fault: Option<u64>,
    /// The power fails at this instant; the run stops there.
    pub power_cut: Option<Nanos>,
    /// The device's atomic unit: what a power cut during a sync can tear apart (each
    /// unit lands whole or not at all). [`UNIT_BYTES`] (32) in every figure; 512 or
    /// 4096 for real drives, where one unit covers a whole segment of the tiny store.
    pub unit_bytes: usize,
}

impl TinySetup {
    /// The tiny store's settings: every sync takes 1.0 ms, 32-byte units, no readers, no
    /// faults.
    pub fn new(policy: Policy) -> TinySetup {
        TinySetup {
            policy,
            log_sync_latency: tiny_store::SYNC_LATENCY,
            flush_sync_latency: tiny_store::SYNC_LATENCY,
            manifest_sync_latency: tiny_store::SYNC_LATENCY,
            readers: Vec::new(),
            log_sync_fault: None,
            flush_sync_fault: None,
            power_cut: None,
            unit_bytes: UNIT_BYTES,
        }
    }

    pub fn with_unit_bytes(mut self, unit_bytes: usize) -> TinySetup {
        self.unit_bytes = unit_bytes;
        self
    }

    pub fn with_power_cut(mut self, at: Nanos) -> TinySetup {
        self.power_cut = Some(at);
        self
    }
}

/// A run could not start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TinySetupError {
    Config(crate::group_commit::ConfigError),
    LatencyZero,
    UnitZero,
    UnitTooLarge,
}

impl core::fmt::Display for TinySetupError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            TinySetupError::Config(error) => error.fmt(f),
            TinySetupError::LatencyZero => f.write_str("the sync latency must be longer than zero"),
            TinySetupError::UnitZero => f.write_str("the atomic unit must be at least one byte"),
            TinySetupError::UnitTooLarge => f.write_str("the atomic unit must fit in 32 bits"),
        }
    }
}

impl std::error::Error for TinySetupError {}

/// A durable manifest edit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ManifestEdit {
    pub edit: u64,
    /// The flushed file's number (F7 = 7).
    pub table: u64,
    /// Every seq up to this one is in the files the manifest lists.
    pub flushed_through: u64,
}

impl ManifestEdit {
    fn encode(&self) -> [u8; MANIFEST_RECORD_BYTES] {
        let mut record = [0u8; MANIFEST_RECORD_BYTES];
        record[..4].copy_from_slice(&(self.edit as u32).to_le_bytes());
        record[4..8].copy_from_slice(&(self.table as u32).to_le_bytes());
        record[8..12].copy_from_slice(&(self.flushed_through as u32).to_le_bytes());
        let crc = crc32c(&[&record[..12]]);
        record[12..].copy_from_slice(&crc.to_le_bytes());
        record
    }

    fn decode(record: &[u8]) -> Option<ManifestEdit> {
        if record.len() < MANIFEST_RECORD_BYTES {
            return None;
        }
        let word = |at: usize| u32::from_le_bytes([record[at], record[at + 1], record[at + 2], record[at + 3]]);
        if crc32c(&[&record[..12]]) != word(12) {
            return None;
        }
        Some(ManifestEdit { edit: u64::from(word(0)), table: u64::from(word(4)), flushed_through: u64::from(word(8)) })
    }
}

/// The device's file ids for the tiny store.
#[derive(Clone, Debug)]
pub struct TinyFiles {
    /// wal-1 ..= wal-6.
    pub segments: Vec<FileId>,
    /// F7 ..= F12.
    pub tables: Vec<FileId>,
    pub manifest: FileId,
}

impl TinyFiles {
    fn segment(&self, segment: u64) -> FileId {
        self.segments[(segment - 1) as usize]
    }

    fn table(&self, table: u64) -> FileId {
        self.tables[(table - FIRST_FILE_NUMBER) as usize]
    }
}

/// The gates of one segment at an instant (Part 8).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct SegmentGates {
    pub segment: u64,
    /// Gate 1: every record is in a file the durable manifest lists.
    pub flushed: bool,
    /// Gate 2: every reader has confirmed past its last record.
    pub readers_done: bool,
    /// The segment exists at that instant (created, not deleted).
    pub exists: bool,
}

/// A finished (or power-cut) run.
#[derive(Clone, Debug)]
pub struct TinyRun {
    pub setup: TinySetup,
    pub trace: Trace,
    /// The device as the run left it (at the power cut, if there was one).
    pub device: Device,
    pub files: TinyFiles,
    /// Per write (index id - 1): when it was acknowledged.
    pub acked_at: Vec<Option<Nanos>>,
    /// Per write: when it was failed (told "unknown").
    pub failed_at: Vec<Option<Nanos>>,
    /// Durable manifest edits with the instant each became durable.
    pub manifest_durable: Vec<(Nanos, ManifestEdit)>,
    /// Per segment (index k - 1): when it was created and deleted.
    pub segment_created_at: Vec<Option<Nanos>>,
    pub segment_deleted_at: Vec<Option<Nanos>>,
    /// The instant the run stopped: the power cut, or its last event.
    pub ended_at: Nanos,
}

/// Where recovery's log scan stopped, with the segment named.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct RecoveryStop {
    pub reason: StopReason,
    /// `wal-6`; `None` when no segment was left to scan.
    pub segment: Option<String>,
    pub offset: u64,
}

/// What recovery read back from an image of the media (or of the page cache).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recovery {
    pub manifest: Vec<ManifestEdit>,
    pub flushed_through: u64,
    /// Seqs found in the flushed files the manifest lists.
    pub table_seqs: Vec<u64>,
    /// The log segments that still exist, oldest first.
    pub segments: Vec<String>,
    pub scan: TinyScan,
    /// Every write id recovered (from the flushed files or the log), sorted.
    pub recovered: Vec<u64>,
    pub stop: RecoveryStop,
}

impl Recovery {
    /// The seqs the log scan accepted in one segment (flushed or not).
    pub fn scanned_in(&self, segment: &str) -> Vec<u64> {
        let Some(index) = self.segments.iter().position(|name| name == segment) else {
            return Vec::new();
        };
        self.scan.records.iter().filter(|record| record.segment == index).map(|record| record.record.seq).collect()
    }
}

/// Recovers the tiny store from an image: reads the manifest, the flushed files it lists,
/// then scans the log segments that remain, skipping what is already flushed.
pub fn recover(image: &Image) -> Recovery {
    let mut manifest = Vec::new();
    if let Some(bytes) = image.file("MANIFEST") {
        // Bounded by the manifest's size: one record per 16 bytes.
        for record in bytes.chunks(MANIFEST_RECORD_BYTES) {
            match ManifestEdit::decode(record) {
                Some(edit) => manifest.push(edit),
                None => break,
            }
        }
    }
    let mut table_seqs = Vec::new();
    let mut flushed_through = 0;
    for edit in &manifest {
        if let Some(bytes) = image.file(&format!("F{}", edit.table)) {
            let scan = scan_tiny(&[bytes], 0);
            table_seqs.extend(scan.records.iter().map(|record| record.record.seq));
            flushed_through = flushed_through.max(edit.flushed_through);
        }
    }
    let mut segments = Vec::new();
    let mut segment_bytes: Vec<&[u8]> = Vec::new();
    for (name, bytes) in &image.files {
        if let (true, Some(bytes)) = (name.starts_with("wal-"), bytes) {
            segments.push(name.clone());
            segment_bytes.push(bytes);
        }
    }
    let scan = scan_tiny(&segment_bytes, flushed_through);
    let mut recovered: Vec<u64> = table_seqs.clone();
    recovered.extend(scan.applied().map(|record| record.record.seq));
    recovered.sort_unstable();
    recovered.dedup();
    table_seqs.sort_unstable();
    let stop = RecoveryStop {
        reason: scan.stop.reason,
        segment: segments.get(scan.stop.segment).cloned(),
        offset: scan.stop.offset,
    };
    Recovery { manifest, flushed_through, table_seqs, segments, scan, recovered, stop }
}

/// One legal state of the media after the power cut, and what it means.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CrashState {
    /// The uncertain units that reached the media: (file name, unit).
    pub kept_units: Vec<(String, u32)>,
    pub recovery: Recovery,
    /// Acknowledged before the cut.
    pub acknowledged: Vec<u64>,
    /// Acknowledged and recovered.
    pub survived: Vec<u64>,
    /// Acknowledged and not recovered: a broken promise.
    pub lost_acknowledged: Vec<u64>,
}

impl TinyRun {
    /// Writes acknowledged before the run stopped.
    pub fn acknowledged(&self) -> Vec<u64> {
        ids_where(&self.acked_at, |at| at.is_some())
    }

    /// Writes failed (told "unknown").
    pub fn failed(&self) -> Vec<u64> {
        ids_where(&self.failed_at, |at| at.is_some())
    }

    fn crash_state(&self, kept: Vec<UnitRef>, image: &Image) -> CrashState {
        let recovery = recover(image);
        let acknowledged = self.acknowledged();
        let survived: Vec<u64> = acknowledged.iter().copied().filter(|id| recovery.recovered.contains(id)).collect();
        let lost_acknowledged = acknowledged.iter().copied().filter(|id| !recovery.recovered.contains(id)).collect();
        let kept_units = kept
            .iter()
            .map(|unit| (self.device.name(FileId(unit.file)).to_string(), unit.unit))
            .collect();
        CrashState { kept_units, recovery, acknowledged, survived, lost_acknowledged }
    }

    /// Every legal post-crash state (each subset of the running syncs' units), or `None`
    /// if there are too many to list.
    pub fn post_crash_states(&self) -> Option<Vec<CrashState>> {
        let states = self.device.enumerate_power_cuts()?;
        Some(states.into_iter().map(|(kept, image)| self.crash_state(kept, &image)).collect())
    }

    /// One post-crash state, drawn with a seed.
    pub fn sample_post_crash(&self, seed: u64) -> CrashState {
        let (kept, image) = self.device.sample_power_cut(seed);
        self.crash_state(kept, &image)
    }

    /// Recovery by a process that restarts without a reboot and reads through the page
    /// cache (Part 3's "go deeper").
    pub fn recover_through_page_cache(&self) -> Recovery {
        recover(&self.device.cache_image())
    }

    /// The deletion gates of every segment at instant `t` (Part 8), as the log session
    /// judges them ([`Gates::of`]), with each segment's last write the MemTable's.
    pub fn gates_at(&self, t: Nanos) -> Vec<SegmentGates> {
        let flushed_through = self
            .manifest_durable
            .iter()
            .filter(|(at, _)| *at <= t)
            .map(|(_, edit)| edit.flushed_through)
            .max()
            .unwrap_or(0);
        (1..=SEGMENTS)
            .map(|segment| {
                let last_seq = segment * MEMTABLE_WRITES as u64;
                let index = (segment - 1) as usize;
                let created = self.segment_created_at[index].is_some_and(|at| at <= t);
                let deleted = self.segment_deleted_at[index].is_some_and(|at| at <= t);
                let readers = self.setup.readers.iter().map(|reader| reader.confirmed_seq);
                let gates = Gates::of(Some(last_seq), flushed_through, readers);
                SegmentGates { segment, flushed: gates.consumer, readers_done: gates.readers, exists: created && !deleted }
            })
            .collect()
    }

    /// When write `id` was acknowledged.
    pub fn ack_of(&self, id: u64) -> Option<Nanos> {
        self.acked_at.get((id - 1) as usize).copied().flatten()
    }
}

fn ids_where(per_write: &[Option<Nanos>], keep: impl Fn(&Option<Nanos>) -> bool) -> Vec<u64> {
    per_write.iter().enumerate().filter(|(_, at)| keep(at)).map(|(index, _)| index as u64 + 1).collect()
}

/// Why a device sync is running.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Purpose {
    /// A log batch's persist.
    Log { batch: BatchId },
    /// The wrong path's retry of a failed log sync.
    LogRetry { batch: BatchId },
    /// A periodic background sync of the log.
    Periodic { batch: BatchId },
    /// A flushed file's sync.
    Table { table: u64, segment: u64 },
    /// A manifest edit's sync.
    Manifest { edit: ManifestEdit },
}

#[derive(Clone, Debug)]
struct Pending {
    done_at: Nanos,
    purpose: Purpose,
    /// (file, device sync, the sync's number in the trace).
    syncs: Vec<(FileId, crate::device::SyncId, u64)>,
}

struct TinyLoop {
    setup: TinySetup,
    /// The log: segments of a MemTable's writes each, removable once flushed (the
    /// manifest remembers the seq) and read by every CDC reader.
    session: Session,
    device: Device,
    files: TinyFiles,
    trace: Trace,
    pending: Vec<Pending>,
    memtable: Vec<u64>,
    acked_at: Vec<Option<Nanos>>,
    failed_at: Vec<Option<Nanos>>,
    manifest_durable: Vec<(Nanos, ManifestEdit)>,
    manifest_bytes: usize,
    segment_created_at: Vec<Option<Nanos>>,
    segment_deleted_at: Vec<Option<Nanos>>,
    background_stopped: bool,
    next_sync_number: u64,
    /// Index into [`WRITES`] of the next write to arrive.
    next_write: usize,
}

/// Bound on the instants a tiny-store run visits (24 arrivals and a few syncs each).
pub const TINY_INSTANTS: InstantBound = InstantBound { name: "tiny-store instants", instants_max: 10_000 };

/// Runs the tiny store.
pub fn run(setup: &TinySetup) -> Result<TinyRun, TinySetupError> {
    if [setup.log_sync_latency, setup.flush_sync_latency, setup.manifest_sync_latency].contains(&Nanos::ZERO) {
        return Err(TinySetupError::LatencyZero);
    }
    if setup.unit_bytes == 0 {
        return Err(TinySetupError::UnitZero);
    }
    let unit_bytes = u32::try_from(setup.unit_bytes).map_err(|_| TinySetupError::UnitTooLarge)?;
    let layout = Layout::segments(SegmentRule::Records { records: MEMTABLE_WRITES as u64 }, NextSeq::Elsewhere);
    let config = Storage::SimulatedFile.config(&Tuning::policy(setup.policy));
    let mut session = Session::new(config, layout, Resume::fresh(1)).map_err(TinySetupError::Config)?;
    session.set_tracing(true);
    let mut device = Device::new(setup.unit_bytes);
    let mut trace = Trace::new("tiny-store", setup.policy.kind().name(), unit_bytes);
    let segments: Vec<FileId> = (1..=SEGMENTS)
        .map(|segment| {
            let name = format!("wal-{segment}");
            trace.add_file(&name, FileKind::Log, SEGMENT_BYTES as u64);
            device.register(&name)
        })
        .collect();
    let tables: Vec<FileId> = (0..SEGMENTS)
        .map(|index| {
            let name = format!("F{}", FIRST_FILE_NUMBER + index);
            trace.add_file(&name, FileKind::Table, 0);
            device.register(&name)
        })
        .collect();
    trace.add_file("MANIFEST", FileKind::Manifest, MANIFEST_BYTES as u64);
    let manifest = device.register("MANIFEST");
    device.create(manifest, MANIFEST_BYTES).expect("registered");
    trace.push(Nanos::ZERO, Event::Create { file: manifest.0 });
    for write in &WRITES {
        trace.writes.push(TraceWrite {
            id: write.id,
            arrival: write.arrival,
            segment: write.segment(),
            record_bytes: write.record().len() as u64,
            op: Some(match write.op {
                Op::Put => "put".to_string(),
                Op::Del => "del".to_string(),
            }),
            key: Some(write.key.to_string()),
            value: (write.op == Op::Put).then(|| write.value.to_string()),
        });
    }
    for reader in &setup.readers {
        session.register_reader(&reader.name, reader.confirmed_seq);
    }
    while let Some(event) = session.poll_event() {
        trace.push(Nanos::ZERO, event);
    }
    let mut state = TinyLoop {
        setup: setup.clone(),
        session,
        device,
        files: TinyFiles { segments, tables, manifest },
        trace,
        pending: Vec::new(),
        memtable: Vec::new(),
        acked_at: vec![None; WRITES.len()],
        failed_at: vec![None; WRITES.len()],
        manifest_durable: Vec::new(),
        manifest_bytes: 0,
        segment_created_at: vec![None; SEGMENTS as usize],
        segment_deleted_at: vec![None; SEGMENTS as usize],
        background_stopped: false,
        next_sync_number: 1,
        next_write: 0,
    };
    let ended_at = state.run();
    Ok(TinyRun {
        setup: state.setup,
        trace: state.trace,
        device: state.device,
        files: state.files,
        acked_at: state.acked_at,
        failed_at: state.failed_at,
        manifest_durable: state.manifest_durable,
        segment_created_at: state.segment_created_at,
        segment_deleted_at: state.segment_deleted_at,
        ended_at,
    })
}

impl Simulation for TinyLoop {
    /// The power cut's instant.
    type Stop = Nanos;

    fn next_arrival(&self) -> Option<Nanos> {
        WRITES.get(self.next_write).map(|write| write.arrival)
    }

    fn next_completion(&self) -> Option<Nanos> {
        self.pending.iter().map(|pending| pending.done_at).min()
    }

    fn next_timeout(&self) -> Option<Nanos> {
        // An idle, durable log needs no more ticks: a periodic timer would tick forever.
        let idle = self.next_arrival().is_none() && self.next_completion().is_none();
        let machine = self.session.machine();
        if idle && machine.durable_lsn() == machine.appended_lsn() {
            None
        } else {
            self.session.poll_timeout()
        }
    }

    fn begin(&mut self, now: Nanos) -> ControlFlow<Nanos> {
        match self.setup.power_cut {
            Some(cut) if now >= cut => {
                self.trace.push(cut, Event::PowerCut);
                ControlFlow::Break(cut)
            }
            _ => ControlFlow::Continue(()),
        }
    }

    fn complete(&mut self, now: Nanos) -> ControlFlow<Nanos> {
        while let Some(index) = self.pending.iter().position(|pending| pending.done_at == now) {
            let pending = self.pending.remove(index);
            self.complete_sync(now, pending);
        }
        ControlFlow::Continue(())
    }

    fn arrive(&mut self, now: Nanos) -> ControlFlow<Nanos> {
        while WRITES.get(self.next_write).is_some_and(|write| write.arrival == now) {
            self.arrive_write(now, &WRITES[self.next_write]);
            self.next_write += 1;
        }
        ControlFlow::Continue(())
    }

    fn time_out(&mut self, now: Nanos) {
        self.session.handle_timeout(now);
    }

    fn act(&mut self, now: Nanos) -> ControlFlow<Nanos> {
        self.drain(now);
        ControlFlow::Continue(())
    }
}

impl TinyLoop {
    /// Runs to the power cut or to the last event; returns that instant.
    fn run(&mut self) -> Nanos {
        match clock::run(self, TINY_INSTANTS) {
            Ok(End::Quiet { last }) => last.unwrap_or(Nanos::ZERO),
            Ok(End::Stopped { stop: cut, .. }) => cut,
            Err(exceeded) => panic!("{exceeded}"),
        }
    }

    fn arrive_write(&mut self, now: Nanos, write: &tiny_store::TinyWrite) {
        match self.session.handle_append(now, &write.record()) {
            Ok(appended) => {
                debug_assert_eq!(appended.write, write.id, "ticket n is write n");
                self.trace_session_events(now);
                if appended.opens_segment {
                    let file = self.files.segment(appended.segment);
                    self.device.create(file, SEGMENT_BYTES).expect("registered segment");
                    self.segment_created_at[(appended.segment - 1) as usize] = Some(now);
                    self.trace.push(now, Event::Create { file: file.0 });
                }
            }
            Err(refusal) => {
                self.trace.push(now, Event::Arrive { write: write.id });
                self.trace.push(now, session_trace::refused(write.id, &refusal));
            }
        }
    }

    /// Moves the events the session made into the trace, at `now`.
    fn trace_session_events(&mut self, now: Nanos) {
        while let Some(event) = self.session.poll_event() {
            self.trace.push(now, event);
        }
    }

    fn drain(&mut self, now: Nanos) {
        // Bounded: each action comes from an input of this instant.
        while let Some(action) = self.session.poll_action() {
            self.trace_session_events(now);
            self.perform(now, action);
        }
    }

    fn start_sync(&mut self, now: Nanos, file: FileId, batch: Option<u64>, latency: Nanos, purpose: Purpose) {
        let (sync, units) = self.device.start_sync(file).expect("syncing a live file");
        let number = self.next_sync_number;
        self.next_sync_number += 1;
        self.trace.push(now, Event::SyncStart { sync: number, file: file.0, batch, units });
        self.pending.push(Pending { done_at: now + latency, purpose, syncs: vec![(file, sync, number)] });
    }

    fn perform(&mut self, now: Nanos, action: Action) {
        match action {
            Action::Persist(batch) | Action::Write(batch) => {
                let sync_first = self.setup.policy.syncs_before_ack();
                let file = self.files.segment(batch.segment);
                self.device.write(file, batch.offset as usize, &batch.bytes).expect("writing a live segment");
                self.trace.push(now, Event::Write { file: file.0, offset: batch.offset, bytes: batch.bytes.len() as u64 });
                if sync_first {
                    let latency = self.setup.log_sync_latency;
                    self.start_sync(now, file, Some(batch.id.0), latency, Purpose::Log { batch: batch.id });
                }
                self.session.recycle_buffer(batch.bytes);
            }
            Action::Sync { batch, first_segment, last_segment, .. } => {
                let mut syncs = Vec::new();
                for segment in first_segment..=last_segment {
                    let file = self.files.segment(segment);
                    if self.device.exists(file) {
                        let (sync, units) = self.device.start_sync(file).expect("live segment");
                        let number = self.next_sync_number;
                        self.next_sync_number += 1;
                        self.trace.push(now, Event::SyncStart { sync: number, file: file.0, batch: None, units });
                        syncs.push((file, sync, number));
                    }
                }
                self.pending.push(Pending {
                    done_at: now + self.setup.log_sync_latency,
                    purpose: Purpose::Periodic { batch },
                    syncs,
                });
            }
            Action::Ack(tickets) => self.acknowledge(now, tickets),
            Action::Fail { tickets, .. } => {
                for ticket in tickets.iter() {
                    self.failed_at[(ticket.0 - 1) as usize] = Some(now);
                }
            }
        }
    }

    fn acknowledge(&mut self, now: Nanos, tickets: Tickets) {
        for ticket in tickets.iter() {
            let id = ticket.0;
            self.acked_at[(id - 1) as usize] = Some(now);
            self.trace.push(now, Event::Apply { write: id });
            self.memtable.push(id);
            if self.memtable.len() == MEMTABLE_WRITES {
                self.flush(now);
            }
        }
    }

    /// Writes the full MemTable as a sorted file and starts its sync.
    fn flush(&mut self, now: Nanos) {
        let ids = core::mem::take(&mut self.memtable);
        let segment = WRITES[(ids[0] - 1) as usize].segment();
        let table = FIRST_FILE_NUMBER + segment - 1;
        let file = self.files.table(table);
        let mut writes: Vec<&tiny_store::TinyWrite> = ids.iter().map(|id| &WRITES[(id - 1) as usize]).collect();
        writes.sort_by(|a, b| a.key.cmp(b.key).then(b.id.cmp(&a.id)));
        let bytes: Vec<u8> = writes.iter().flat_map(|write| write.record()).collect();
        self.device.create(file, 0).expect("registered table");
        self.trace.push(now, Event::Create { file: file.0 });
        self.trace.push(now, Event::FlushStart { file: file.0, first_write: ids[0], last_write: ids[ids.len() - 1] });
        self.device.write(file, 0, &bytes).expect("writing a new table");
        self.trace.push(now, Event::Write { file: file.0, offset: 0, bytes: bytes.len() as u64 });
        let latency = self.setup.flush_sync_latency;
        self.start_sync(now, file, None, latency, Purpose::Table { table, segment });
    }

    fn complete_sync(&mut self, now: Nanos, pending: Pending) {
        let (file, sync, number) = pending.syncs.first().copied().unwrap_or((self.files.manifest, crate::device::SyncId(0), 0));
        match pending.purpose {
            Purpose::Log { batch } => {
                let fault = self.setup.log_sync_fault.filter(|fault| fault.batch == batch.0);
                match fault {
                    None => {
                        self.finish(now, number, file, sync);
                        self.session.handle_persisted(now, batch, Ok(())).expect("batch in flight");
                    }
                    Some(fault) => {
                        self.fail(now, number, file, sync);
                        match fault.handling {
                            SyncErrorHandling::FailStop => {
                                self.trace.push(now, Event::Note {
                                    text: format!("{batch}: fdatasync failed; fail the waiters and stop"),
                                });
                                self.session.handle_persisted(now, batch, Err(SyncError::Io)).expect("batch in flight");
                            }
                            SyncErrorHandling::RetryAndCarryOn => {
                                self.trace.push(now, Event::Note {
                                    text: format!("{batch}: fdatasync failed; the driver retries it and carries on"),
                                });
                                let latency = self.setup.log_sync_latency;
                                self.start_sync(now, file, Some(batch.0), latency, Purpose::LogRetry { batch });
                            }
                        }
                    }
                }
            }
            Purpose::LogRetry { batch } => {
                self.finish(now, number, file, sync);
                self.session.handle_persisted(now, batch, Ok(())).expect("batch in flight");
            }
            Purpose::Periodic { batch } => {
                for (file, sync, number) in pending.syncs.clone() {
                    self.finish(now, number, file, sync);
                }
                self.session.handle_persisted(now, batch, Ok(())).expect("sync in flight");
            }
            Purpose::Table { table, segment } => {
                if self.setup.flush_sync_fault == Some(table) {
                    self.fail(now, number, file, sync);
                    self.background_stopped = true;
                    self.trace.push(now, Event::Note {
                        text: format!("F{table}: fsync failed; no manifest edit, wal-{segment} kept"),
                    });
                    return;
                }
                self.finish(now, number, file, sync);
                if self.background_stopped {
                    return;
                }
                let edit = ManifestEdit {
                    edit: FIRST_MANIFEST_EDIT + segment - 1,
                    table,
                    flushed_through: segment * MEMTABLE_WRITES as u64,
                };
                let offset = self.manifest_bytes;
                let manifest = self.files.manifest;
                self.device.write(manifest, offset, &edit.encode()).expect("manifest exists");
                self.manifest_bytes += MANIFEST_RECORD_BYTES;
                self.trace.push(now, Event::ManifestEdit {
                    edit: edit.edit,
                    table: file.0,
                    flushed_through: edit.flushed_through,
                });
                self.trace.push(now, Event::Write { file: manifest.0, offset: offset as u64, bytes: MANIFEST_RECORD_BYTES as u64 });
                let latency = self.setup.manifest_sync_latency;
                self.start_sync(now, manifest, None, latency, Purpose::Manifest { edit });
            }
            Purpose::Manifest { edit } => {
                self.finish(now, number, file, sync);
                self.manifest_durable.push((now, edit));
                self.trace.push(now, Event::ManifestDurable { edit: edit.edit });
                self.collect_segments(now, edit.flushed_through);
            }
        }
    }

    /// A manifest edit is durable: the log's consumer has everything through
    /// `flushed_through`. Every live segment's two gates go into the trace, and the
    /// segments the session names are deleted.
    fn collect_segments(&mut self, now: Nanos, flushed_through: u64) {
        self.session.confirm_consumer(flushed_through);
        let gates: Vec<(u64, Gates)> = self.session.segment_gates().collect();
        let removed = self.session.poll_removal().unwrap_or_default();
        for (segment, gates) in gates {
            let file = self.files.segment(segment);
            self.trace.push(now, Event::Gates { file: file.0, flushed: gates.consumer, readers_done: gates.readers });
            if removed.contains(&segment) {
                self.device.delete(file).expect("live segment");
                self.segment_deleted_at[(segment - 1) as usize] = Some(now);
                self.trace.push(now, Event::Delete { file: file.0 });
            }
        }
        if !removed.is_empty() {
            self.session.handle_removed(&removed, true);
        }
    }

    fn finish(&mut self, now: Nanos, number: u64, file: FileId, sync: crate::device::SyncId) {
        // A deleted file's sync has nothing left to land.
        let units = self.device.finish_sync(sync).unwrap_or_default();
        for unit in units {
            self.trace.push(now, Event::UnitPersisted { file: file.0, unit });
        }
        self.trace.push(now, Event::SyncEnd { sync: number, file: file.0, ok: true, error: None });
    }

    fn fail(&mut self, now: Nanos, number: u64, file: FileId, sync: crate::device::SyncId) {
        let units = self.device.fail_sync(sync).unwrap_or_default();
        self.trace.push(now, Event::UnitsDropped { file: file.0, units });
        self.trace.push(now, Event::SyncEnd { sync: number, file: file.0, ok: false, error: Some(SyncError::Io) });
    }
}

/// The recovery's stop as the trace records it.
pub fn trace_stop(trace: &Trace, stop: &RecoveryStop) -> TraceScanStop {
    TraceScanStop {
        reason: stop.reason.name().to_string(),
        file: stop.segment.as_deref().and_then(|name| trace.file_index(name)),
        offset: stop.offset,
    }
}

/// Appends a crash state's recovery to the run's trace, at the power cut.
pub fn record_recovery(run: &mut TinyRun, state: &CrashState) {
    let stop = trace_stop(&run.trace, &state.recovery.stop);
    let at = run.ended_at;
    run.trace.push(at, Event::Recovery {
        acknowledged: state.acknowledged.clone(),
        recovered: state.recovery.recovered.clone(),
        lost_acknowledged: state.lost_acknowledged.clone(),
        stop,
    });
}
