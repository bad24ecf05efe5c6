//! A log session: one open log, as every driver of one sees it.
//!
//! The group-commit machine ([`crate::group_commit`]) decides batches: what goes in one,
//! when it starts, which writers hear OK. A log is more than its batches. Its records go
//! to segments, and a segment ends somewhere; segments are removed once whoever needs
//! their records has confirmed them; a ring of slot tables lets a batch in only when its
//! slot is free; the storage wants its own settings; and a run is recorded as a trace
//! that numbers its writes. Those decisions were once made by each driver, and made
//! differently. A [`Session`] makes all of them, with no I/O and no clock, around one
//! machine:
//!
//! - [`rollover`]: the segment each record goes to (a segment's bytes or records);
//! - [`retention`]: which whole segments may be removed, behind the consumer's and every
//!   reader's confirmed position;
//! - [`ring`]: for a ring of slot tables (the Postgres WAL), when a batch may be inserted,
//!   what a failure fails, and how far confirmations trim;
//! - [`preset`]: the machine's settings for each storage, the cohort hold included;
//! - [`trace`]: the events of a run, and the one numbering of its writes.
//!
//! The native WAL's driver thread, the tiny store's simulator and the remote WALs'
//! simulator each drive a session, and only carry out what it asks.
//!
//! # The contract for drivers
//!
//! As with the machine (whose contract this extends): feed every input of an instant,
//! then drain [`Session::poll_action`] and perform each [`Action`] as the machine's
//! contract says, then sleep until the next input or [`Session::poll_timeout`].
//!
//! - A record: [`Session::handle_append`] places it in a segment and hands it to the
//!   machine; the answer names its ticket (the record's seq), its write number and its
//!   segment, or why it was refused. A driver that frames the seq into the record asks
//!   [`Session::next_seq`] first.
//! - A persist that returned: [`Session::handle_persisted`]; the deadline passing:
//!   [`Session::handle_timeout`].
//! - Positions: [`Session::confirm_consumer`], [`Session::register_reader`],
//!   [`Session::confirm_reader`]. After them (or after any input), [`Session::poll_removal`]
//!   names the whole segments that may go, oldest first: remove them and report with
//!   [`Session::handle_removed`]. Removal is polled apart from the machine's actions, so a
//!   driver removes when its store allows (the tiny store once a manifest edit is
//!   durable) without taking the machine's actions out of their turn.
//! - On a ring ([`Layout::ring`]) a batch handed out by [`Action::Persist`] is inserted
//!   only once [`Session::ring_admission`] says so (the driver keeps the others and asks
//!   again after its next inputs; an admission that fails is reported back as the
//!   batch's failure); the ring is trimmed as [`Session::poll_trim`] names, and the
//!   trim reported with [`Session::handle_trimmed`]. A failed batch's report is held
//!   back by the session until every earlier batch has settled.
//!
//! While tracing is on ([`Session::set_tracing`]), the session queues the events its
//! inputs and actions make; the driver drains them with [`Session::poll_event`] after
//! each input and each action, stamps them with the instant, and records its own I/O
//! (files, syncs, units) beside them.

pub mod preset;
pub mod retention;
pub mod ring;
pub mod rollover;
pub mod trace;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;

use crate::group_commit::{AppendError, BatchId, CompletionError, Config, ConfigError, GroupCommit, SyncError, Ticket};

/// What the driver must do next: the machine's actions, as its contract says.
pub use crate::group_commit::Action;
use crate::time::Nanos;
use crate::trace::Event;

use crate::ring::RingGeometry;

use self::retention::{Gates, KeptSegment, NextSeq, ReaderId, Retention};
use self::ring::{Admission, NextTrim, RingSchedule, RingTrim};
use self::rollover::{LargerThanSegment, Rollover, SegmentRule};
use self::trace::WriteNumbering;

/// How a log is laid out: where it is cut, and where it remembers its next seq.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub segments: SegmentRule,
    pub next_seq: NextSeq,
    /// A ring of slot tables, trimmed by offset rather than by whole segment (its
    /// generations are the segments, cut at its `segment_bytes`).
    pub ring: Option<RingLayout>,
}

impl Layout {
    /// Segments cut by `rule`, the next seq kept as `next_seq`, no ring.
    pub const fn segments(segments: SegmentRule, next_seq: NextSeq) -> Layout {
        Layout { segments, next_seq, ring: None }
    }

    /// A ring of `geometry`, trimmed at most every `trim_pause` while no batch waits
    /// for its slot.
    pub const fn ring(geometry: RingGeometry, trim_pause: Nanos) -> Layout {
        Layout {
            segments: SegmentRule::Bytes { segment_bytes: geometry.segment_bytes },
            next_seq: NextSeq::InLog,
            ring: Some(RingLayout { geometry, trim_pause }),
        }
    }
}

/// A ring's shape, and how often it is trimmed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RingLayout {
    pub geometry: RingGeometry,
    /// Trims are at least this far apart, unless a batch waits for its slot (each trim
    /// is a transaction: confirmations gather between them).
    pub trim_pause: Nanos,
}

/// What recovery found of a ring: the trim offset, and the (last seq, end offset) of
/// each batch on the chain, oldest first, that confirmations are mapped with.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RingResume {
    pub trim_offset: u64,
    pub confirmations: VecDeque<(u64, u64)>,
}

/// Where a session starts: a fresh log, or what recovery found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resume {
    /// The seq (and ticket) of the next record.
    pub next_seq: u64,
    /// Log position (record bytes since the log began, as far as the storage tells).
    pub lsn: u64,
    /// The segment appends continue in, and the bytes and records already in it.
    pub segment: u64,
    pub segment_bytes: u64,
    pub segment_records: u64,
    /// Every segment kept, oldest first, with its last record's seq.
    pub kept: Vec<KeptSegment>,
    /// A ring's trim offset and confirmations (a fresh ring's by default).
    pub ring: RingResume,
}

impl Resume {
    /// A fresh log, appending from seq 1 into `segment`.
    pub fn fresh(segment: u64) -> Resume {
        Resume { next_seq: 1, lsn: 0, segment, segment_bytes: 0, segment_records: 0, kept: Vec::new(), ring: RingResume::default() }
    }
}

/// Why a record was refused. Nothing was queued; the record has no ticket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// No segment can hold it.
    LargerThanSegment(LargerThanSegment),
    /// The machine refused it (backpressure, too many waiters, a failed log, ...).
    Machine(AppendError),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::LargerThanSegment(error) => error.fmt(f),
            Refusal::Machine(error) => error.fmt(f),
        }
    }
}

impl std::error::Error for Refusal {}

/// A record the session took.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Appended {
    /// Its place in the acknowledgement order, and its seq.
    pub ticket: Ticket,
    /// Its number in the session's trace ([`trace::WriteNumbering`]).
    pub write: u64,
    pub segment: u64,
    /// It is the first record of its segment.
    pub opens_segment: bool,
}

/// Where the removal of segments stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Removal {
    /// Nothing to look at until a position moves or a segment closes.
    Idle,
    /// Something changed: look for removable segments at the next poll.
    Due,
    /// A removal is out; nothing more is asked until it is reported.
    Running,
    /// The last removal failed: look again after the next input (not at once, which
    /// would ask for the same removal in the same poll loop).
    RetryAfterInput,
}

/// One open log. See the module docs.
#[derive(Debug)]
pub struct Session {
    machine: GroupCommit,
    rollover: Rollover,
    retention: Retention,
    numbering: WriteNumbering,
    removal: Removal,
    /// The events made and not yet drained, while tracing is on.
    events: Option<VecDeque<Event>>,
    /// A ring's admission, failure order and trim ([`ring`]).
    ring: Option<RingBook>,
    /// The latest instant an input carried.
    now: Nanos,
}

/// A ring's bookkeeping around [`RingSchedule`].
#[derive(Debug)]
struct RingBook {
    schedule: RingSchedule,
    trim_pause: Nanos,
    /// Every batch handed out and not yet settled: its start offset and generation.
    submitted: BTreeMap<BatchId, (u64, u64)>,
    /// Failures not yet reported to the machine (an earlier batch has not settled), by
    /// start offset.
    unreported: BTreeMap<u64, (BatchId, SyncError)>,
    /// Batches whose last admission said they wait for their slot.
    waiting_for_slot: BTreeSet<BatchId>,
    /// A trim handed out and not yet reported.
    trimming: bool,
    /// When the last trim was handed out.
    last_trim: Option<Nanos>,
}

impl RingBook {
    /// When the next trim may be handed out, if one is wanted.
    fn trim_due(&self) -> Option<Nanos> {
        if self.trimming || !matches!(self.schedule.next_trim(), NextTrim::Run { .. }) {
            return None;
        }
        match self.last_trim {
            Some(last) if self.waiting_for_slot.is_empty() => Some(last + self.trim_pause),
            _ => Some(Nanos::ZERO),
        }
    }
}

impl Session {
    /// A session on a log laid out as `layout`, starting where `resume` says.
    pub fn new(config: Config, layout: Layout, resume: Resume) -> Result<Session, ConfigError> {
        let machine = GroupCommit::resume(config, Ticket(resume.next_seq), resume.lsn, resume.segment, resume.segment_bytes)?;
        let mut retention = Retention::new(layout.next_seq, resume.kept);
        retention.keep(resume.segment);
        let ring = layout.ring.map(|ring| RingBook {
            schedule: RingSchedule::new(ring.geometry, resume.ring.trim_offset, resume.ring.confirmations),
            trim_pause: ring.trim_pause,
            submitted: BTreeMap::new(),
            unreported: BTreeMap::new(),
            waiting_for_slot: BTreeSet::new(),
            trimming: false,
            last_trim: None,
        });
        Ok(Session {
            machine,
            rollover: Rollover::new(layout.segments, resume.segment, resume.segment_bytes, resume.segment_records),
            retention,
            numbering: WriteNumbering::from_ticket(Ticket(resume.next_seq)),
            removal: if ring.is_some() { Removal::Idle } else { Removal::Due },
            events: None,
            ring,
            now: Nanos::ZERO,
        })
    }

    pub fn config(&self) -> &Config {
        self.machine.config()
    }

    /// The machine, for what it reports (positions, counters, a failure).
    pub fn machine(&self) -> &GroupCommit {
        &self.machine
    }

    /// How this session numbers its writes in a trace.
    pub fn numbering(&self) -> WriteNumbering {
        self.numbering
    }

    /// The seq the next record taken will have.
    pub fn next_seq(&self) -> u64 {
        self.machine.next_ticket().0
    }

    /// The segment the last record went to.
    pub fn segment(&self) -> u64 {
        self.rollover.segment()
    }

    /// Offers one record at `now`: placed in its segment and handed to the machine.
    pub fn handle_append(&mut self, now: Nanos, record: &[u8]) -> Result<Appended, Refusal> {
        self.input(now);
        let record_bytes = record.len() as u64;
        let placement = self.rollover.place(record_bytes).map_err(Refusal::LargerThanSegment)?;
        let ticket = self.machine.handle_append(now, placement.segment, record).map_err(Refusal::Machine)?;
        let planned_last_seq = placement.opens_segment.then(|| self.rollover.planned_last_seq(ticket.0)).flatten();
        self.rollover.placed(placement, record_bytes);
        self.retention.appended(placement.segment, ticket.0, planned_last_seq);
        if (placement.opens_segment || self.rollover.current_is_closed()) && self.ring.is_none() {
            // An older segment may have closed, and the newest with records moved.
            self.removal_due();
        }
        self.record(|numbering| numbering.arrive(ticket));
        Ok(Appended {
            ticket,
            write: self.numbering.write(ticket),
            segment: placement.segment,
            opens_segment: placement.opens_segment,
        })
    }

    /// Reports that the persist or sync `batch` returned.
    pub fn handle_persisted(&mut self, now: Nanos, batch: BatchId, result: Result<(), SyncError>) -> Result<(), CompletionError> {
        self.input(now);
        let Some(ring) = &mut self.ring else {
            return self.machine.handle_persisted(now, batch, result);
        };
        let Some(&(start, _)) = ring.submitted.get(&batch) else {
            return Err(CompletionError::UnknownBatch(batch));
        };
        ring.waiting_for_slot.remove(&batch);
        match result {
            Ok(()) => {
                ring.submitted.remove(&batch);
                ring.schedule.settled(start);
                self.machine.handle_persisted(now, batch, Ok(()))?;
            }
            Err(error) => {
                ring.schedule.record_failure(error);
                ring.unreported.insert(start, (batch, error));
            }
        }
        self.report_ring_failures(now)
    }

    /// Reports to the machine every held-back failure whose turn has come (every batch
    /// before it settled), oldest first.
    fn report_ring_failures(&mut self, now: Nanos) -> Result<(), CompletionError> {
        let Some(ring) = &mut self.ring else { return Ok(()) };
        // Bounded by the failures held back: each pass reports one or stops.
        while let Some((&start, &(batch, error))) = ring.unreported.iter().next() {
            if !ring.schedule.may_report_failure(start) {
                break;
            }
            ring.unreported.remove(&start);
            ring.submitted.remove(&batch);
            ring.schedule.settled(start);
            self.machine.handle_persisted(now, batch, Err(error))?;
        }
        Ok(())
    }

    /// On a ring, what the batch handed out as `batch` must do now; `None` for a batch
    /// the ring does not hold (or a log that is no ring).
    pub fn ring_admission(&mut self, batch: BatchId) -> Option<Admission> {
        let ring = self.ring.as_mut()?;
        let &(start, generation) = ring.submitted.get(&batch)?;
        let admission = ring.schedule.admission(generation, start);
        if admission == Admission::Wait(ring::RingWait::Slot) {
            ring.waiting_for_slot.insert(batch);
        } else {
            ring.waiting_for_slot.remove(&batch);
        }
        Some(admission)
    }

    /// On a ring, the trim to carry out now, if one is due (one at a time).
    pub fn poll_trim(&mut self) -> Option<RingTrim> {
        let now = self.now;
        let ring = self.ring.as_mut()?;
        if ring.trim_due()? > now {
            return None;
        }
        let NextTrim::Run { to, released } = ring.schedule.next_trim() else { return None };
        ring.trimming = true;
        ring.last_trim = Some(now);
        Some(RingTrim { to, released })
    }

    /// The trim to `to` was carried out, or failed with `error` (a fence: every batch
    /// not yet inserted fails with it, and the ring is not trimmed again).
    pub fn handle_trimmed(&mut self, now: Nanos, to: u64, result: Result<(), SyncError>) {
        self.input(now);
        if let Some(ring) = &mut self.ring {
            ring.trimming = false;
            match result {
                Ok(()) => ring.schedule.trimmed(to),
                Err(error) => ring.schedule.record_failure(error),
            }
        }
    }

    /// On a ring, the trim offset: every byte below it is trimmed.
    pub fn ring_trim_offset(&self) -> Option<u64> {
        self.ring.as_ref().map(|ring| ring.schedule.trim_offset())
    }

    /// Reports that the time from [`Session::poll_timeout`] has come.
    pub fn handle_timeout(&mut self, now: Nanos) {
        self.input(now);
        self.machine.handle_timeout(now);
    }

    /// The next instant at which [`Session::handle_timeout`] must be called: the
    /// machine's deadline, or a ring's next trim.
    pub fn poll_timeout(&self) -> Option<Nanos> {
        let trim = self.ring.as_ref().and_then(RingBook::trim_due).filter(|due| *due > self.now);
        match (self.machine.poll_timeout(), trim) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The consumer has applied everything through `seq`.
    pub fn confirm_consumer(&mut self, seq: u64) {
        self.retry_removal();
        if self.retention.confirm_consumer(seq) {
            self.confirmed_moved();
        }
    }

    /// Registers a reader positioned after `seq`; the log keeps what it has not confirmed.
    pub fn register_reader(&mut self, name: &str, seq: u64) -> ReaderId {
        self.record(|_| trace::confirmed(name, seq));
        self.retention.register_reader(name, seq)
    }

    /// A reader has read everything through `seq`.
    pub fn confirm_reader(&mut self, reader: ReaderId, seq: u64) {
        self.retry_removal();
        if let Some(name) = self.retention.confirm_reader(reader, seq) {
            let event = trace::confirmed(name, seq);
            self.record(|_| event);
            self.confirmed_moved();
        }
    }

    /// A consumer's or reader's position moved: segments may go, a ring may trim.
    fn confirmed_moved(&mut self) {
        match &mut self.ring {
            Some(ring) => {
                ring.schedule.confirmed(self.retention.confirmed());
            }
            None => self.removal_due(),
        }
    }

    /// The position every gate has passed (the lowest confirmed by the consumer and
    /// the readers).
    pub fn confirmed(&self) -> u64 {
        self.retention.confirmed()
    }

    /// Every kept segment with its two gates, oldest first (Part 8's figure).
    pub fn segment_gates(&self) -> impl Iterator<Item = (u64, Gates)> + '_ {
        self.retention.gates()
    }

    /// The removal named by [`Session::poll_removal`] was carried out (`ok`) or failed
    /// (the segments stay, and are asked for again after the next input).
    pub fn handle_removed(&mut self, segments: &[u64], ok: bool) {
        if ok {
            self.retention.removed(segments);
            self.removal = Removal::Idle;
        } else {
            self.removal = Removal::RetryAfterInput;
        }
    }

    /// The next thing the driver must do, if any (the machine's actions, traced).
    pub fn poll_action(&mut self) -> Option<Action> {
        let action = self.machine.poll_action()?;
        if let (Some(ring), Action::Persist(batch)) = (&mut self.ring, &action) {
            let start = ring.schedule.geometry().address(batch.segment, batch.offset);
            ring.schedule.submitted(start, start + batch.bytes.len() as u64, batch.tickets.last().map(|ticket| ticket.0));
            ring.submitted.insert(batch.id, (start, batch.segment));
        }
        match &action {
            Action::Persist(batch) | Action::Write(batch) => self.record(|numbering| numbering.formed(batch)),
            Action::Ack(tickets) => self.record(|numbering| numbering.ack(*tickets)),
            Action::Fail { tickets, error } => self.record(|numbering| numbering.fail(*tickets, *error)),
            Action::Sync { .. } => {}
        }
        Some(action)
    }

    /// The whole segments that may be removed now, oldest first, if any (one removal at
    /// a time: the next is named after [`Session::handle_removed`]).
    pub fn poll_removal(&mut self) -> Option<Vec<u64>> {
        if self.removal != Removal::Due {
            return None;
        }
        let segments = self.retention.removable(self.rollover.segment(), self.rollover.current_is_closed());
        if segments.is_empty() {
            self.removal = Removal::Idle;
            return None;
        }
        self.removal = Removal::Running;
        Some(segments)
    }

    /// Gives a batch buffer back after the driver has used it.
    pub fn recycle_buffer(&mut self, bytes: Vec<u8>) {
        self.machine.recycle_buffer(bytes);
    }

    /// Turns the queueing of trace events on or off (off drops what is queued).
    pub fn set_tracing(&mut self, on: bool) {
        match (on, self.events.is_some()) {
            (true, false) => self.events = Some(VecDeque::new()),
            (false, true) => self.events = None,
            _ => {}
        }
    }

    /// The next trace event made, oldest first.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.as_mut()?.pop_front()
    }

    fn record(&mut self, make: impl FnOnce(&WriteNumbering) -> Event) {
        if let Some(events) = &mut self.events {
            events.push_back(make(&self.numbering));
        }
    }

    fn removal_due(&mut self) {
        if self.removal != Removal::Running {
            self.removal = Removal::Due;
        }
    }

    fn input(&mut self, now: Nanos) {
        self.now = self.now.max(now);
        self.retry_removal();
    }

    fn retry_removal(&mut self) {
        if self.removal == Removal::RetryAfterInput {
            self.removal = Removal::Due;
        }
    }
}

#[cfg(test)]
mod tests;
