//! The trace: what happened in a run, event by event, in time order.
//!
//! The teaching page draws a run at an instant t: which writes have arrived, which batch
//! each is in, which sync is running, which 32-byte units of `wal-6` are dirty in the
//! page cache and which are on the media. Play, pause, step, step back and scrub are all
//! the same operation: *render the trace at t*. So a run does not hand the page a
//! sequence of pictures; it hands it a [`Trace`], a list of small facts with their
//! instants, and [`Trace::state_at`] folds the facts up to t into a [`StateAt`].
//!
//! The trace is also the contract between the simulator and the native binary: a run
//! against a real disk, bucket or database records the same events (from the same
//! group-commit actions) and writes them as the same JSON, so the browser can animate a
//! real run beside a simulated one.
//!
//! # The format
//!
//! - [`Trace::files`] names every file the run touched (`wal-1`, `F7`, `MANIFEST`); events
//!   refer to files by their index in that list, and a file's units are
//!   `unit_bytes`-sized slices of it (unit `u` is bytes `u*unit_bytes ..
//!   (u+1)*unit_bytes`).
//! - [`Trace::writes`] describes every write once (id from 1, arrival, segment, record
//!   size, and for the tiny store its op, key and value); events refer to writes by id.
//! - [`Trace::events`] are sorted by time; events at the same instant keep the order in
//!   which they happened. Times are integer nanoseconds, so ties are exact.
//! - A trace never grows past `events_max` events; if a run produced more, the rest were
//!   dropped and `truncated` is set (a million-write steady run is summarised, not
//!   traced event by event).
//!
//! With the `serde` feature the trace serializes as JSON with every event flattened, for
//! example `{"at": 13000000, "event": "sync_start", "sync": 14, "file": 5, "batch": 14,
//! "units": [1, 2, 3]}`.

use crate::group_commit::SyncError;
use crate::time::Nanos;

/// Version of the JSON layout; bumped when a field changes meaning.
pub const TRACE_FORMAT_VERSION: u32 = 1;

/// The default bound on a trace's length.
pub const EVENTS_MAX_DEFAULT: usize = 1 << 20;

/// What a file is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
pub enum FileKind {
    /// A log segment (`wal-k`).
    Log,
    /// A flushed sorted file (`F7`).
    Table,
    /// The manifest.
    Manifest,
}

/// A file the run touched.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct TraceFile {
    pub name: String,
    pub kind: FileKind,
    /// Size when created (log segments are created zero-filled at this size).
    pub bytes: u64,
}

/// One write of the run.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct TraceWrite {
    /// From 1; also the record's sequence number in the tiny store.
    pub id: u64,
    pub arrival: Nanos,
    /// The log segment its record goes to.
    pub segment: u64,
    pub record_bytes: u64,
    /// `put` or `del` (tiny store only).
    #[cfg_attr(feature = "serde", serde(default, skip_serializing_if = "Option::is_none"))]
    pub op: Option<String>,
    #[cfg_attr(feature = "serde", serde(default, skip_serializing_if = "Option::is_none"))]
    pub key: Option<String>,
    #[cfg_attr(feature = "serde", serde(default, skip_serializing_if = "Option::is_none"))]
    pub value: Option<String>,
}

/// Where a recovery scan stopped, with the segment named.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct TraceScanStop {
    /// `end`, `zero`, `short`, `checksum`, `bad-length`, `bad-fragment`, `old-record`.
    pub reason: String,
    /// File index of the segment, if any segment was scanned.
    pub file: Option<u32>,
    pub offset: u64,
}

/// One fact, without its time.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(tag = "event", rename_all = "snake_case"))]
pub enum Event {
    /// A file is created (log segments zero-filled at their size, on the media).
    Create { file: u32 },
    /// A write reaches the engine.
    Arrive { write: u64 },
    /// The log refused a write (backpressure, or the log has failed).
    Refuse { write: u64, reason: String },
    /// A batch is formed and handed to the storage: writes `first_write ..` (`writes`
    /// of them), `bytes` bytes at `offset` of log segment `segment`.
    BatchFormed { batch: u64, segment: u64, first_write: u64, writes: u64, offset: u64, bytes: u64 },
    /// Bytes written into the page cache of a file (they are dirty, not durable).
    Write { file: u32, offset: u64, bytes: u64 },
    /// A sync starts; `units` are the units it must bring to the media.
    SyncStart { sync: u64, file: u32, batch: Option<u64>, units: Vec<u32> },
    /// A unit reached the stable media.
    UnitPersisted { file: u32, unit: u32 },
    /// A failed sync: the kernel marked these units clean without writing them (Part 3).
    UnitsDropped { file: u32, units: Vec<u32> },
    /// A sync returned.
    SyncEnd { sync: u64, file: u32, ok: bool, error: Option<SyncError> },
    /// Writes told OK.
    Ack { first_write: u64, writes: u64 },
    /// Writes told their outcome is unknown.
    Fail { first_write: u64, writes: u64, error: SyncError },
    /// A write inserted into the MemTable.
    Apply { write: u64 },
    /// A full MemTable starts flushing into table file `file`.
    FlushStart { file: u32, first_write: u64, last_write: u64 },
    /// A manifest edit is written (it is durable once the manifest's sync ends).
    ManifestEdit { edit: u64, table: u32, flushed_through: u64 },
    /// A manifest edit is durable: its table counts as live.
    ManifestDurable { edit: u64 },
    /// The deletion gates were evaluated for a log segment.
    Gates { file: u32, flushed: bool, readers_done: bool },
    /// A log segment was deleted.
    Delete { file: u32 },
    /// A change-data-capture reader confirmed a position.
    ReaderConfirmed { reader: String, seq: u64 },
    /// The power fails: page cache and device cache are gone.
    PowerCut,
    /// What recovery found on the media.
    Recovery {
        acknowledged: Vec<u64>,
        recovered: Vec<u64>,
        lost_acknowledged: Vec<u64>,
        stop: TraceScanStop,
    },
    /// A free-form note for the page ("E1: retry the sync and carry on").
    Note { text: String },
    /// `walab serve`'s upload sealed block `block` of the log cache: `records` durable
    /// records (`bytes` bytes of values) to become `objects` objects. Their PUTs are syncs
    /// on the trace's `objects` file, numbered from [`OBJECT_SYNC_BASE`] plus the object id.
    BlockSealed { block: u64, records: u64, bytes: u64, objects: u64 },
    /// One command in `walab serve`'s metadata log committed block `block`: its `records`
    /// records are in committed objects now, where readers find them, and the WAL no
    /// longer has to keep them.
    Committed { block: u64, records: u64 },
}

/// `walab serve`'s live trace numbers an object's PUT as sync `OBJECT_SYNC_BASE + id`,
/// apart from the WAL's batches.
pub const OBJECT_SYNC_BASE: u64 = 1 << 48;

/// An event at its instant.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(try_from = "wire::WireEvent"))]
pub struct TraceEvent {
    pub at: Nanos,
    #[cfg_attr(feature = "serde", serde(flatten))]
    pub event: Event,
}

/// Reading an event back. The written form flattens the event's fields beside `at`, with
/// the variant's name under `event`; serde's derive reads that shape by buffering every
/// field, which costs the page tens of kilobytes of code. One flat struct with every
/// field any event has reads the same JSON, and the conversion names what is missing.
#[cfg(feature = "serde")]
mod wire {
    use super::{Event, TraceEvent, TraceScanStop};
    use crate::group_commit::SyncError;
    use crate::time::Nanos;

    #[derive(serde::Deserialize)]
    pub(super) struct WireEvent {
        at: Nanos,
        event: String,
        file: Option<u32>,
        write: Option<u64>,
        reason: Option<String>,
        batch: Option<u64>,
        segment: Option<u64>,
        first_write: Option<u64>,
        writes: Option<u64>,
        offset: Option<u64>,
        bytes: Option<u64>,
        sync: Option<u64>,
        units: Option<Vec<u32>>,
        unit: Option<u32>,
        ok: Option<bool>,
        error: Option<SyncError>,
        last_write: Option<u64>,
        edit: Option<u64>,
        table: Option<u32>,
        flushed_through: Option<u64>,
        flushed: Option<bool>,
        readers_done: Option<bool>,
        reader: Option<String>,
        seq: Option<u64>,
        acknowledged: Option<Vec<u64>>,
        recovered: Option<Vec<u64>>,
        lost_acknowledged: Option<Vec<u64>>,
        stop: Option<TraceScanStop>,
        text: Option<String>,
        block: Option<u64>,
        records: Option<u64>,
        objects: Option<u64>,
    }

    impl TryFrom<WireEvent> for TraceEvent {
        type Error = String;

        fn try_from(w: WireEvent) -> Result<TraceEvent, String> {
            let at = w.at;
            let name = w.event;
            let missing = |field: &str| format!("event {name:?} at {} ns: missing field `{field}`", at.0);
            macro_rules! need {
                ($field:ident) => {
                    w.$field.ok_or_else(|| missing(stringify!($field)))?
                };
            }
            let event = match name.as_str() {
                "create" => Event::Create { file: need!(file) },
                "arrive" => Event::Arrive { write: need!(write) },
                "refuse" => Event::Refuse { write: need!(write), reason: need!(reason) },
                "batch_formed" => Event::BatchFormed {
                    batch: need!(batch),
                    segment: need!(segment),
                    first_write: need!(first_write),
                    writes: need!(writes),
                    offset: need!(offset),
                    bytes: need!(bytes),
                },
                "write" => Event::Write { file: need!(file), offset: need!(offset), bytes: need!(bytes) },
                "sync_start" => Event::SyncStart { sync: need!(sync), file: need!(file), batch: w.batch, units: need!(units) },
                "unit_persisted" => Event::UnitPersisted { file: need!(file), unit: need!(unit) },
                "units_dropped" => Event::UnitsDropped { file: need!(file), units: need!(units) },
                "sync_end" => Event::SyncEnd { sync: need!(sync), file: need!(file), ok: need!(ok), error: w.error },
                "ack" => Event::Ack { first_write: need!(first_write), writes: need!(writes) },
                "fail" => Event::Fail { first_write: need!(first_write), writes: need!(writes), error: need!(error) },
                "apply" => Event::Apply { write: need!(write) },
                "flush_start" => {
                    Event::FlushStart { file: need!(file), first_write: need!(first_write), last_write: need!(last_write) }
                }
                "manifest_edit" => {
                    Event::ManifestEdit { edit: need!(edit), table: need!(table), flushed_through: need!(flushed_through) }
                }
                "manifest_durable" => Event::ManifestDurable { edit: need!(edit) },
                "gates" => Event::Gates { file: need!(file), flushed: need!(flushed), readers_done: need!(readers_done) },
                "delete" => Event::Delete { file: need!(file) },
                "reader_confirmed" => Event::ReaderConfirmed { reader: need!(reader), seq: need!(seq) },
                "power_cut" => Event::PowerCut,
                "recovery" => Event::Recovery {
                    acknowledged: need!(acknowledged),
                    recovered: need!(recovered),
                    lost_acknowledged: need!(lost_acknowledged),
                    stop: need!(stop),
                },
                "note" => Event::Note { text: need!(text) },
                "block_sealed" => Event::BlockSealed { block: need!(block), records: need!(records), bytes: need!(bytes), objects: need!(objects) },
                "committed" => Event::Committed { block: need!(block), records: need!(records) },
                _ => return Err(format!("event {name:?} at {} ns: not an event this trace format has", at.0)),
            };
            Ok(TraceEvent { at, event })
        }
    }
}

/// A whole run.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Trace {
    pub format_version: u32,
    /// `tiny-store`, `steady`, `arrivals`, or a native driver's name.
    pub scenario: String,
    /// `per-write`, `group`, `window`, `no-sync`, `periodic`.
    pub policy: String,
    pub seed: Option<u64>,
    pub unit_bytes: u32,
    pub files: Vec<TraceFile>,
    pub writes: Vec<TraceWrite>,
    pub events: Vec<TraceEvent>,
    pub events_max: usize,
    pub truncated: bool,
}

impl Trace {
    pub fn new(scenario: &str, policy: &str, unit_bytes: u32) -> Trace {
        Trace {
            format_version: TRACE_FORMAT_VERSION,
            scenario: scenario.to_string(),
            policy: policy.to_string(),
            seed: None,
            unit_bytes,
            files: Vec::new(),
            writes: Vec::new(),
            events: Vec::new(),
            events_max: EVENTS_MAX_DEFAULT,
            truncated: false,
        }
    }

    /// Adds a file; returns its index for events.
    pub fn add_file(&mut self, name: &str, kind: FileKind, bytes: u64) -> u32 {
        self.files.push(TraceFile { name: name.to_string(), kind, bytes });
        (self.files.len() - 1) as u32
    }

    /// Records an event; time must not go backwards.
    pub fn push(&mut self, at: Nanos, event: Event) {
        if let Some(last) = self.events.last() {
            debug_assert!(last.at <= at, "trace events are recorded in time order");
        }
        if self.events.len() >= self.events_max {
            self.truncated = true;
            return;
        }
        self.events.push(TraceEvent { at, event });
    }

    /// How many events happened at or before `t` (events are sorted by time).
    pub fn events_through(&self, t: Nanos) -> usize {
        self.events.partition_point(|event| event.at <= t)
    }

    /// The instants at which something happens, without repeats: the stops of a
    /// "step" button.
    pub fn instants(&self) -> Vec<Nanos> {
        let mut instants: Vec<Nanos> = self.events.iter().map(|event| event.at).collect();
        instants.dedup();
        instants
    }

    /// The state of the run just after every event at or before `t`.
    pub fn state_at(&self, t: Nanos) -> StateAt {
        let mut state = StateAt::start(self);
        for event in &self.events[..self.events_through(t)] {
            state.apply(event);
        }
        state.at = t;
        state
    }

    /// The index of a file by name.
    pub fn file_index(&self, name: &str) -> Option<u32> {
        self.files.iter().position(|file| file.name == name).map(|index| index as u32)
    }
}

/// Where a write stands at an instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case", tag = "state"))]
pub enum WriteState {
    /// Not arrived yet.
    Future,
    /// Arrived, waiting for a batch.
    Queued,
    /// In a batch being written and synced.
    InBatch { batch: u64 },
    /// Told OK.
    Acked,
    /// Told the outcome is unknown.
    Failed,
    /// Refused at the door.
    Refused,
}

/// Where a unit of a file stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
pub enum UnitState {
    /// Whatever the media holds is what the page cache holds.
    Clean,
    /// Changed in the page cache, not yet handed to a sync.
    Dirty,
    /// Part of a running sync: it may or may not be on the media yet.
    Syncing,
    /// A failed sync marked it clean without writing it: the cache and the media differ.
    Dropped,
}

/// A file at an instant.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct FileAt {
    pub exists: bool,
    pub units: Vec<UnitState>,
}

/// The run at an instant, rebuilt from the trace.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct StateAt {
    pub at: Nanos,
    /// Indexed by write id - 1.
    pub writes: Vec<WriteState>,
    /// Indexed by write id - 1: inserted into the MemTable.
    pub applied: Vec<bool>,
    /// Indexed like [`Trace::files`].
    pub files: Vec<FileAt>,
    /// Running syncs: (sync id, file index).
    pub syncs_running: Vec<(u64, u32)>,
    pub acked: u64,
    pub failed: u64,
    pub batches_formed: u64,
    pub syncs_done: u64,
    /// The newest durable manifest edit.
    pub manifest_durable: Option<u64>,
    pub power_cut: bool,
    /// The trace's unit size, to map written bytes to units.
    pub unit_bytes: u64,
}

impl StateAt {
    /// The state before the first event.
    pub fn start(trace: &Trace) -> StateAt {
        let unit = u64::from(trace.unit_bytes.max(1));
        StateAt {
            at: Nanos::ZERO,
            writes: vec![WriteState::Future; trace.writes.len()],
            applied: vec![false; trace.writes.len()],
            files: trace
                .files
                .iter()
                .map(|file| FileAt {
                    exists: false,
                    units: vec![UnitState::Clean; file.bytes.div_ceil(unit) as usize],
                })
                .collect(),
            syncs_running: Vec::new(),
            acked: 0,
            failed: 0,
            batches_formed: 0,
            syncs_done: 0,
            manifest_durable: None,
            power_cut: false,
            unit_bytes: unit,
        }
    }

    fn write_mut(&mut self, id: u64) -> Option<&mut WriteState> {
        self.writes.get_mut(usize::try_from(id).ok()?.checked_sub(1)?)
    }

    fn unit_mut(&mut self, file: u32, unit: u32) -> Option<&mut UnitState> {
        let units = &mut self.files.get_mut(file as usize)?.units;
        if units.len() <= unit as usize {
            units.resize(unit as usize + 1, UnitState::Clean);
        }
        units.get_mut(unit as usize)
    }

    /// Folds one event in. Events naming unknown writes or files are ignored, so a
    /// truncated or hand-edited trace still renders.
    pub fn apply(&mut self, event: &TraceEvent) {
        self.at = event.at;
        match &event.event {
            Event::Create { file } => {
                if let Some(entry) = self.files.get_mut(*file as usize) {
                    entry.exists = true;
                }
            }
            Event::Arrive { write } => {
                if let Some(state) = self.write_mut(*write) {
                    *state = WriteState::Queued;
                }
            }
            Event::Refuse { write, .. } => {
                if let Some(state) = self.write_mut(*write) {
                    *state = WriteState::Refused;
                }
            }
            Event::BatchFormed { batch, first_write, writes, .. } => {
                self.batches_formed += 1;
                for id in *first_write..first_write + writes {
                    if let Some(state) = self.write_mut(id) {
                        *state = WriteState::InBatch { batch: *batch };
                    }
                }
            }
            Event::Write { file, offset, bytes } => {
                if let Some(entry) = self.files.get_mut(*file as usize) {
                    entry.exists = true;
                }
                if *bytes > 0 {
                    let unit_bytes = self.unit_bytes();
                    let first = offset / unit_bytes;
                    let last = (offset + bytes - 1) / unit_bytes;
                    for unit in first..=last {
                        if let Some(state) = self.unit_mut(*file, unit as u32) {
                            *state = UnitState::Dirty;
                        }
                    }
                }
            }
            Event::SyncStart { sync, file, units, .. } => {
                self.syncs_running.push((*sync, *file));
                for unit in units {
                    if let Some(state) = self.unit_mut(*file, *unit) {
                        *state = UnitState::Syncing;
                    }
                }
            }
            Event::UnitPersisted { file, unit } => {
                if let Some(state) = self.unit_mut(*file, *unit) {
                    if *state == UnitState::Syncing {
                        *state = UnitState::Clean;
                    }
                }
            }
            Event::UnitsDropped { file, units } => {
                for unit in units {
                    if let Some(state) = self.unit_mut(*file, *unit) {
                        *state = UnitState::Dropped;
                    }
                }
            }
            Event::SyncEnd { sync, .. } => {
                self.syncs_running.retain(|(running, _)| running != sync);
                self.syncs_done += 1;
            }
            Event::Ack { first_write, writes } => {
                self.acked += writes;
                for id in *first_write..first_write + writes {
                    if let Some(state) = self.write_mut(id) {
                        *state = WriteState::Acked;
                    }
                }
            }
            Event::Fail { first_write, writes, .. } => {
                self.failed += writes;
                for id in *first_write..first_write + writes {
                    if let Some(state) = self.write_mut(id) {
                        *state = WriteState::Failed;
                    }
                }
            }
            Event::Apply { write } => {
                if let Some(applied) = usize::try_from(*write)
                    .ok()
                    .and_then(|id| id.checked_sub(1))
                    .and_then(|index| self.applied.get_mut(index))
                {
                    *applied = true;
                }
            }
            Event::FlushStart { file, .. } => {
                if let Some(entry) = self.files.get_mut(*file as usize) {
                    entry.exists = true;
                }
            }
            Event::ManifestDurable { edit } => self.manifest_durable = Some(*edit),
            Event::Delete { file } => {
                if let Some(entry) = self.files.get_mut(*file as usize) {
                    entry.exists = false;
                }
            }
            Event::PowerCut => {
                self.power_cut = true;
                self.syncs_running.clear();
            }
            Event::ManifestEdit { .. }
            | Event::Gates { .. }
            | Event::ReaderConfirmed { .. }
            | Event::Recovery { .. }
            | Event::Note { .. }
            | Event::BlockSealed { .. }
            | Event::Committed { .. } => {}
        }
    }

    fn unit_bytes(&self) -> u64 {
        self.unit_bytes
    }
}
