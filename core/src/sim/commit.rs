//! Group commit on its own: writers arrive, the [`GroupCommit`] machine batches them,
//! and every persist takes a sync latency. No device, no MemTable: this is the
//! simulation behind Part 5's schedules and arithmetic, `walab sim commit`, and the
//! benchmark (a million simulated writes).
//!
//! The loop keeps the hot path allocation-light: arrivals are generated on the fly, the
//! writers waiting for an acknowledgement sit in one ring of arrival times, batch
//! buffers are handed back to the machine for reuse, and per-write and per-batch records
//! are kept only when asked for ([`Keep`]).

use std::collections::VecDeque;
use std::ops::ControlFlow;

use super::clock::{self, earliest, End, InstantBound, Simulation};
use super::SyncLatency;
use crate::group_commit::{Action, AppendError, BatchId, Config, GroupCommit, Policy, Ticket, Tickets};
use crate::rng::Rng;
use crate::session::trace::{self as session_trace, WriteNumbering};
use crate::time::Nanos;
use crate::trace::{Event, FileKind, Trace, TraceWrite};

/// Write n is ticket n: a write the machine refuses for now is offered again, in order,
/// before any later one, so tickets keep the writes' order.
const WRITES_FROM_ONE: WriteNumbering = WriteNumbering::from_one();

mod arrivals;
use self::arrivals::ArrivalStream;
pub use self::arrivals::{Arrivals, ArrivalsError, WRITES_MAX};

/// What a run keeps besides its summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Keep {
    pub writes: bool,
    pub batches: bool,
    pub trace: bool,
}

impl Keep {
    pub const SUMMARY: Keep = Keep { writes: false, batches: false, trace: false };
    pub const ALL: Keep = Keep { writes: true, batches: true, trace: true };
}

/// A group-commit run's inputs.
#[derive(Clone, Debug)]
pub struct CommitSetup {
    pub config: Config,
    pub sync_latency: SyncLatency,
    /// Bytes per record (every record the same size) ...
    pub record_bytes: u32,
    /// ... unless given per write (the tiny store's records).
    pub record_bytes_each: Option<Vec<u32>>,
    /// The log segment of each write; all in segment 1 when `None`.
    pub segment_each: Option<Vec<u64>>,
    /// Seeds sync-latency draws.
    pub seed: u64,
    pub keep: Keep,
    /// Bound on the trace's length.
    pub trace_events_max: usize,
}

impl CommitSetup {
    pub fn new(config: Config, sync_latency: Nanos) -> CommitSetup {
        CommitSetup {
            config,
            sync_latency: SyncLatency::fixed(sync_latency),
            record_bytes: 100,
            record_bytes_each: None,
            segment_each: None,
            seed: 0,
            keep: Keep::SUMMARY,
            trace_events_max: crate::trace::EVENTS_MAX_DEFAULT,
        }
    }
}

/// One batch as it ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct BatchRecord {
    pub id: u64,
    pub segment: u64,
    /// When it was formed and its persist began.
    pub start: Nanos,
    /// When its persist returned (`None` if it never did).
    pub end: Option<Nanos>,
    pub first_write: u64,
    pub writes: u64,
    pub bytes: u64,
}

impl BatchRecord {
    /// The write ids it carries.
    pub fn write_ids(&self) -> Vec<u64> {
        (self.first_write..self.first_write + self.writes).collect()
    }
}

/// One write as it ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct WriteRecord {
    pub id: u64,
    pub arrival: Nanos,
    /// When it was told OK.
    pub ack: Option<Nanos>,
    /// When its record was durable (the same as `ack` for the policies that sync first;
    /// later, or never, for no-sync and periodic).
    pub durable: Option<Nanos>,
    /// The batch (or periodic write) that carried it.
    pub batch: Option<u64>,
}

impl WriteRecord {
    pub fn wait(&self) -> Option<Nanos> {
        self.ack.map(|ack| ack - self.arrival)
    }
}

/// The run in numbers.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Summary {
    pub writes: u64,
    pub acked: u64,
    pub failed: u64,
    /// Persists and syncs (one per batch for the sync-first policies).
    pub syncs: u64,
    /// From the first arrival to the last event.
    pub span: Nanos,
    pub wait_total: Nanos,
    pub wait_min: Nanos,
    pub wait_max: Nanos,
    /// Bytes carried by the batches.
    pub batch_bytes_total: u64,
}

impl Summary {
    pub fn syncs_per_s(&self) -> f64 {
        if self.span.0 == 0 {
            return 0.0;
        }
        self.syncs as f64 * 1e9 / self.span.0 as f64
    }

    /// Writes per batch (per sync).
    pub fn batch_mean(&self) -> f64 {
        if self.syncs == 0 {
            return 0.0;
        }
        self.writes as f64 / self.syncs as f64
    }

    pub fn bytes_per_sync_mean(&self) -> f64 {
        if self.syncs == 0 {
            return 0.0;
        }
        self.batch_bytes_total as f64 / self.syncs as f64
    }

    /// Mean wait from arrival to acknowledgement, in whole nanoseconds (rounded down).
    pub fn wait_mean(&self) -> Nanos {
        if self.acked == 0 {
            return Nanos::ZERO;
        }
        Nanos(self.wait_total.0 / self.acked)
    }

    /// Writes in flight on average over the run (Little's law: total wait / span).
    pub fn in_flight_mean(&self) -> f64 {
        if self.span.0 == 0 {
            return 0.0;
        }
        self.wait_total.0 as f64 / self.span.0 as f64
    }
}

/// Everything a run produced.
#[derive(Clone, Debug)]
pub struct CommitRun {
    pub summary: Summary,
    /// Present when [`Keep::batches`].
    pub batches: Vec<BatchRecord>,
    /// Present when [`Keep::writes`].
    pub writes: Vec<WriteRecord>,
    pub trace: Option<Trace>,
}

impl CommitRun {
    /// The write ids of every batch, in order (needs [`Keep::batches`]).
    pub fn batch_write_ids(&self) -> Vec<Vec<u64>> {
        self.batches.iter().map(BatchRecord::write_ids).collect()
    }
}

/// A run could not start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetupError {
    Config(crate::group_commit::ConfigError),
    Arrivals(ArrivalsError),
    /// A sync latency of zero.
    LatencyZero,
    /// A record size of zero bytes.
    RecordBytesZero,
    /// `record_bytes_each` or `segment_each` does not have one entry per write.
    PerWriteLength,
}

impl core::fmt::Display for SetupError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            SetupError::Config(error) => error.fmt(f),
            SetupError::Arrivals(error) => error.fmt(f),
            SetupError::LatencyZero => f.write_str("the sync latency must be longer than zero"),
            SetupError::RecordBytesZero => f.write_str("records must be at least 1 byte"),
            SetupError::PerWriteLength => f.write_str("per-write sizes or segments do not match the writes"),
        }
    }
}

impl std::error::Error for SetupError {}

/// A persist in flight in the simulation.
#[derive(Clone, Copy, Debug)]
struct Running {
    done_at: Nanos,
    batch: BatchId,
    /// Index into `batches` (when kept).
    record: usize,
    /// For periodic syncs: the last write id the sync covers.
    covers_through: u64,
    /// The trace's file index of the segment synced.
    file: u32,
}

/// The simulation's bookkeeping.
struct Loop<'a> {
    setup: &'a CommitSetup,
    machine: GroupCommit,
    rng: Rng,
    running: Vec<Running>,
    /// Arrival instants of writes appended and not yet acknowledged or failed, in ticket
    /// order (ticket n is write n). Bounded by the machine's `waiters_max`.
    waiting: VecDeque<Nanos>,
    /// Writes refused by backpressure, waiting to be offered again (FIFO).
    paused: VecDeque<(u64, Nanos)>,
    next_write: u64,
    /// The last write id handed to the OS (no-sync and periodic) or durable.
    written_through: u64,
    durable_through: u64,
    summary: Summary,
    batches: Vec<BatchRecord>,
    writes: Vec<WriteRecord>,
    trace: Option<Trace>,
    record: Vec<u8>,
    first_arrival: Option<Nanos>,
    last_event: Nanos,
    arrivals: ArrivalStream<'a>,
    next_arrival: Option<Nanos>,
}

/// Runs group commit over the arrivals.
pub fn run(setup: &CommitSetup, arrivals: &Arrivals) -> Result<CommitRun, SetupError> {
    arrivals.validate().map_err(SetupError::Arrivals)?;
    setup.config.validate().map_err(SetupError::Config)?;
    if !setup.sync_latency.is_positive() {
        return Err(SetupError::LatencyZero);
    }
    let count = arrivals.count();
    if setup.record_bytes == 0 && setup.record_bytes_each.is_none() {
        return Err(SetupError::RecordBytesZero);
    }
    if let Some(each) = &setup.record_bytes_each {
        if each.len() as u64 != count {
            return Err(SetupError::PerWriteLength);
        }
        if each.contains(&0) {
            return Err(SetupError::RecordBytesZero);
        }
    }
    if let Some(each) = &setup.segment_each {
        if each.len() as u64 != count {
            return Err(SetupError::PerWriteLength);
        }
    }
    let machine = GroupCommit::new(setup.config).map_err(SetupError::Config)?;
    let record_max = setup.record_bytes_each.as_ref().and_then(|each| each.iter().max().copied()).unwrap_or(setup.record_bytes);
    let mut state = Loop {
        setup,
        machine,
        rng: Rng::new(setup.seed),
        running: Vec::with_capacity(setup.config.inflight_max),
        waiting: VecDeque::new(),
        paused: VecDeque::new(),
        next_write: 1,
        written_through: 0,
        durable_through: 0,
        summary: Summary { wait_min: Nanos::MAX, ..Summary::default() },
        batches: Vec::new(),
        writes: Vec::new(),
        trace: None,
        record: vec![0x5a; record_max as usize],
        first_arrival: None,
        last_event: Nanos::ZERO,
        arrivals: arrivals.stream(),
        next_arrival: None,
    };
    if setup.keep.trace {
        let mut trace = Trace::new("arrivals", setup.config.policy.kind().name(), 0);
        trace.events_max = setup.trace_events_max;
        let segments_max = setup.segment_each.as_ref().and_then(|each| each.iter().max().copied()).unwrap_or(1);
        for segment in 1..=segments_max {
            trace.add_file(&format!("wal-{segment}"), FileKind::Log, 0);
        }
        for (index, at) in arrivals.stream().enumerate() {
            let id = index as u64 + 1;
            trace.writes.push(TraceWrite {
                id,
                arrival: at,
                segment: state.segment_of(id),
                record_bytes: u64::from(state.bytes_of(id)),
                op: None,
                key: None,
                value: None,
            });
            if trace.writes.len() >= trace.events_max {
                trace.truncated = true;
                break;
            }
        }
        state.trace = Some(trace);
    }
    if setup.keep.writes {
        state.writes.reserve(count as usize);
    }
    state.next_arrival = state.arrivals.next();
    let end = clock::run(&mut state, instants_max(count)).unwrap_or_else(|exceeded| panic!("{exceeded}"));
    state.last_event = match end {
        End::Quiet { last } => last.unwrap_or(Nanos::ZERO),
        End::Stopped { at, .. } => at,
    };
    Ok(state.finish())
}


/// Bound on the instants the loop visits: every instant delivers at least one arrival,
/// completion or timeout, and there are at most three of those per write, plus the
/// periodic ticks (bounded by the writes too: a tick with nothing to sync stops them).
fn instants_max(writes: u64) -> InstantBound {
    InstantBound { name: "sim commit instants", instants_max: writes.saturating_mul(4).saturating_add(16) }
}

impl Simulation for Loop<'_> {
    /// The run is over (every write answered, or the log failed with nothing in flight).
    type Stop = ();

    #[inline]
    fn next_arrival(&self) -> Option<Nanos> {
        self.next_arrival
    }

    #[inline]
    fn next_completion(&self) -> Option<Nanos> {
        let mut next_done: Option<Nanos> = None;
        for running in &self.running {
            next_done = earliest(next_done, Some(running.done_at));
        }
        next_done
    }

    #[inline]
    fn next_timeout(&self) -> Option<Nanos> {
        self.machine.poll_timeout()
    }

    #[inline]
    fn complete(&mut self, now: Nanos) -> ControlFlow<()> {
        while let Some(index) = self.running.iter().position(|running| running.done_at == now) {
            let running = self.running.swap_remove(index);
            self.complete_persist(now, running);
        }
        ControlFlow::Continue(())
    }

    #[inline]
    fn arrive(&mut self, now: Nanos) -> ControlFlow<()> {
        while self.next_arrival == Some(now) {
            self.first_arrival.get_or_insert(now);
            let id = self.next_write;
            self.next_write += 1;
            self.trace(now, || WRITES_FROM_ONE.arrive(Ticket(id)));
            if self.keep_writes() {
                self.writes.push(WriteRecord { id, arrival: now, ack: None, durable: None, batch: None });
            }
            self.summary.writes += 1;
            self.offer(now, id, now);
            self.next_arrival = self.arrivals.next();
        }
        ControlFlow::Continue(())
    }

    #[inline]
    fn time_out(&mut self, now: Nanos) {
        self.machine.handle_timeout(now);
    }

    #[inline]
    fn act(&mut self, now: Nanos) -> ControlFlow<()> {
        self.drain(now);
        let arrivals_done = self.next_arrival.is_none();
        if self.machine.failed().is_some() && arrivals_done && self.running.is_empty() {
            return ControlFlow::Break(());
        }
        if arrivals_done && self.running.is_empty() && self.paused.is_empty() && self.waiting.is_empty() {
            // Periodic: one last tick makes the tail durable, then the run ends.
            if !matches!(self.setup.config.policy, Policy::Periodic { .. })
                || self.machine.durable_lsn() == self.machine.appended_lsn()
            {
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    }
}

impl Loop<'_> {
    fn segment_of(&self, id: u64) -> u64 {
        match &self.setup.segment_each {
            Some(each) => each[(id - 1) as usize],
            None => 1,
        }
    }

    fn bytes_of(&self, id: u64) -> u32 {
        match &self.setup.record_bytes_each {
            Some(each) => each[(id - 1) as usize],
            None => self.setup.record_bytes,
        }
    }

    /// Records an event; the event is built only when a trace is kept.
    #[inline]
    fn trace(&mut self, at: Nanos, event: impl FnOnce() -> Event) {
        if let Some(trace) = &mut self.trace {
            trace.push(at, event());
        }
    }

    fn keep_writes(&self) -> bool {
        self.setup.keep.writes
    }

    /// Offers write `id` (which arrived at `arrival`) to the log at `now`.
    fn offer(&mut self, now: Nanos, id: u64, arrival: Nanos) {
        if !self.paused.is_empty() && self.paused.front().map(|(first, _)| *first) != Some(id) {
            self.paused.push_back((id, arrival));
            return;
        }
        let segment = self.segment_of(id);
        let bytes = self.bytes_of(id) as usize;
        match self.machine.handle_append(now, segment, &self.record[..bytes]) {
            Ok(ticket) => {
                debug_assert_eq!(ticket.0, id, "ticket n is write n");
                self.waiting.push_back(arrival);
                if self.paused.front().map(|(first, _)| *first) == Some(id) {
                    self.paused.pop_front();
                }
            }
            Err(AppendError::Backpressure { .. }) | Err(AppendError::TooManyWaiters) => {
                if self.paused.front().map(|(first, _)| *first) != Some(id) {
                    self.paused.push_back((id, arrival));
                }
            }
            Err(error) => {
                self.trace(now, || session_trace::refused(id, &error));
                if self.paused.front().map(|(first, _)| *first) == Some(id) {
                    self.paused.pop_front();
                }
            }
        }
    }

    fn drain(&mut self, now: Nanos) {
        loop {
            while let Some(action) = self.machine.poll_action() {
                self.perform(now, action);
            }
            // Writers paused by backpressure try again once acknowledgements freed room.
            let before = self.paused.len();
            while let Some(&(id, arrival)) = self.paused.front() {
                self.offer(now, id, arrival);
                if self.paused.front().map(|(first, _)| *first) == Some(id) {
                    break;
                }
            }
            if self.paused.len() == before {
                break;
            }
        }
    }

    fn perform(&mut self, now: Nanos, action: Action) {
        match action {
            Action::Persist(batch) | Action::Write(batch) => {
                let sync_first = self.setup.config.policy.syncs_before_ack();
                let first_write = batch.tickets.first.0;
                let writes = batch.tickets.count;
                let bytes = batch.bytes.len() as u64;
                if self.trace.is_some() {
                    let file = (batch.segment - 1) as u32;
                    self.trace(now, || WRITES_FROM_ONE.formed(&batch));
                    self.trace(now, || Event::Write { file, offset: batch.offset, bytes });
                }
                if self.keep_writes() {
                    for id in first_write..first_write + writes {
                        self.writes[(id - 1) as usize].batch = Some(batch.id.0);
                    }
                }
                if sync_first {
                    self.summary.syncs += 1;
                    self.summary.batch_bytes_total += bytes;
                    let latency = self.setup.sync_latency.draw(&mut self.rng);
                    let record = self.batches.len();
                    if self.setup.keep.batches {
                        self.batches.push(BatchRecord {
                            id: batch.id.0,
                            segment: batch.segment,
                            start: now,
                            end: None,
                            first_write,
                            writes,
                            bytes,
                        });
                    }
                    self.running.push(Running {
                        done_at: now + latency,
                        batch: batch.id,
                        record,
                        covers_through: 0,
                        file: (batch.segment - 1) as u32,
                    });
                    self.trace(now, || Event::SyncStart {
                        sync: batch.id.0,
                        file: (batch.segment - 1) as u32,
                        batch: Some(batch.id.0),
                        units: Vec::new(),
                    });
                } else {
                    self.written_through = first_write + writes - 1;
                }
                self.machine.recycle_buffer(batch.bytes);
            }
            Action::Sync { batch, last_segment, .. } => {
                self.summary.syncs += 1;
                let latency = self.setup.sync_latency.draw(&mut self.rng);
                self.running.push(Running {
                    done_at: now + latency,
                    batch,
                    record: usize::MAX,
                    covers_through: self.written_through,
                    file: (last_segment - 1) as u32,
                });
                self.trace(now, || Event::SyncStart {
                    sync: batch.0,
                    file: (last_segment - 1) as u32,
                    batch: None,
                    units: Vec::new(),
                });
            }
            Action::Ack(tickets) => self.acknowledge(now, tickets),
            Action::Fail { tickets, error } => {
                self.summary.failed += tickets.count;
                for _ in 0..tickets.count {
                    self.waiting.pop_front();
                }
                self.trace(now, || WRITES_FROM_ONE.fail(tickets, error));
            }
        }
    }

    fn acknowledge(&mut self, now: Nanos, tickets: Tickets) {
        let sync_first = self.setup.config.policy.syncs_before_ack();
        for id in tickets.first.0..tickets.end().0 {
            let arrival = self.waiting.pop_front().expect("an acknowledged write was waiting");
            let wait = now - arrival;
            self.summary.acked += 1;
            self.summary.wait_total += wait;
            self.summary.wait_min = self.summary.wait_min.min(wait);
            self.summary.wait_max = self.summary.wait_max.max(wait);
            if self.setup.keep.writes {
                let write = &mut self.writes[(id - 1) as usize];
                write.ack = Some(now);
                if sync_first {
                    write.durable = Some(now);
                }
            }
        }
        self.trace(now, || WRITES_FROM_ONE.ack(tickets));
    }

    fn complete_persist(&mut self, now: Nanos, running: Running) {
        self.machine
            .handle_persisted(now, running.batch, Ok(()))
            .expect("the simulator completes only batches it was given");
        if self.setup.keep.batches && running.record != usize::MAX {
            self.batches[running.record].end = Some(now);
        }
        if running.record == usize::MAX {
            // A periodic sync: every write handed to the OS before it is now durable.
            if self.setup.keep.writes {
                for id in self.durable_through + 1..=running.covers_through {
                    self.writes[(id - 1) as usize].durable = Some(now);
                }
            }
            self.durable_through = self.durable_through.max(running.covers_through);
        }
        self.trace(now, || Event::SyncEnd { sync: running.batch.0, file: running.file, ok: true, error: None });
    }

    fn finish(mut self) -> CommitRun {
        if self.summary.acked == 0 {
            self.summary.wait_min = Nanos::ZERO;
        }
        let first = self.first_arrival.unwrap_or(Nanos::ZERO);
        self.summary.span = self.last_event.saturating_sub(first);
        CommitRun { summary: self.summary, batches: self.batches, writes: self.writes, trace: self.trace }
    }
}

/// The tiny store's 24 writes as a group-commit run: their arrivals, their record sizes
/// and their segments, with the tiny store's sync latency.
pub fn tiny_store_setup(config: Config) -> (CommitSetup, Arrivals) {
    use crate::tiny_store::{SYNC_LATENCY, WRITES};
    let setup = CommitSetup {
        record_bytes_each: Some(WRITES.iter().map(|write| write.record().len() as u32).collect()),
        segment_each: Some(WRITES.iter().map(|write| write.segment()).collect()),
        keep: Keep::ALL,
        ..CommitSetup::new(config, SYNC_LATENCY)
    };
    let arrivals = Arrivals::Given(WRITES.iter().map(|write| write.arrival).collect());
    (setup, arrivals)
}

#[cfg(test)]
mod tests;
