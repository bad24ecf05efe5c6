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
use crate::group_commit::{Action, BatchId, SyncError, Tickets};
use crate::scan::{scan_tiny, StopReason, TinyScan};
use crate::session::preset::{Storage, Tuning};
use crate::session::retention::{Gates, NextSeq};
use crate::session::rollover::SegmentRule;
use crate::session::{trace as session_trace, Layout, Resume, Session};
use crate::time::Nanos;
use crate::tiny_store::{self, FIRST_FILE_NUMBER, FIRST_MANIFEST_EDIT, MEMTABLE_WRITES, WRITES};
use crate::trace::{Event, FileKind, Trace, TraceWrite};

mod recovery;
mod setup;
pub use self::setup::{CdcReader, LogSyncFault, SyncErrorHandling, TinySetup, TinySetupError};
pub use self::recovery::{record_recovery, recover, trace_stop, CrashState, Recovery, RecoveryStop};

/// Size of a log segment as created: four 32-byte units, zero-filled (one partial unit
/// with 512-byte or larger units).
pub const SEGMENT_BYTES: usize = 128;
/// Size of the manifest as created, zero-filled.
pub const MANIFEST_BYTES: usize = 128;
/// Bytes in one manifest edit record.
pub const MANIFEST_RECORD_BYTES: usize = 16;
/// Log segments in the tiny store.
pub const SEGMENTS: u64 = (WRITES.len() / MEMTABLE_WRITES) as u64;

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
                self.trace.push(now, session_trace::offered(write.id));
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
        crate::sort::sort_by(&mut writes, |a, b| a.key.cmp(b.key).then(b.id.cmp(&a.id)));
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
