//! Group commit as a sans-IO state machine.
//!
//! # Why group commit exists
//!
//! A record is durable only after a sync (an `fdatasync`, a stored PUT, a committed
//! INSERT) has returned, and a sync costs a fixed latency L no matter how many bytes it
//! carries. A log that syncs once per write can therefore acknowledge at most 1 / L
//! writes a second: a thousand a second at L = 1 ms, however fast the rest of the engine
//! is. But one sync makes durable *every* byte written before it, so writers can share
//! it. Group commit is the bookkeeping that lets them: while one sync runs, the writers
//! that arrive queue up; when it returns, the next "leader" takes the whole queue as one
//! batch, writes it in one go and syncs once. Nobody waits on purpose, no timer is
//! needed, and at high load the batches grow by themselves until each sync carries about
//! `rate x L` writes. A writer waits for the rest of the sync in progress (0 to L) plus
//! its own (L): between L and 2L.
//!
//! # Why it is a state machine with no I/O
//!
//! The same decisions must be made in the browser's simulation (a simulated disk, a
//! simulated clock) and in the native binary (a real file, a real S3 bucket, a real
//! Postgres). So this module makes the decisions and performs nothing. Following the
//! style of `quinn-proto` and `str0m`, [`GroupCommit`] takes *inputs* (an append, a
//! timeout, the completion of a persist) with the current time passed in, and hands out
//! *actions* (persist this batch, acknowledge these writers, fail these writers) for a
//! driver to carry out. It never reads a clock and never blocks.
//!
//! # The contract for drivers
//!
//! A driver owns the storage and the clock and loops like this:
//!
//! 1. Feed every input that happened at instant `now`:
//!    - a writer's record: [`GroupCommit::handle_append`]`(now, segment, bytes)`, which
//!      returns the writer's [`Ticket`] (keep it: acknowledgements name tickets) or a
//!      typed refusal ([`AppendError`]: backpressure, too many waiters, failed log);
//!    - a finished persist: [`GroupCommit::handle_persisted`]`(now, batch, result)`;
//!    - the deadline from [`GroupCommit::poll_timeout`] passing:
//!      [`GroupCommit::handle_timeout`]`(now)`.
//! 2. Drain [`GroupCommit::poll_action`] until it returns `None`, and perform each
//!    [`Action`]:
//!    - [`Action::Persist`]: write the batch's bytes at `offset` of log segment `segment`
//!      and make them durable; when that has *returned*, call `handle_persisted` with
//!      the batch's id. The batch carries where each record ends
//!      ([`Batch::records`]), so a storage that frames records one by one (an object,
//!      a row, a LevelDB group) never parses the bytes to find them. What "persisted" means is the backend's business: for a file it
//!      is `pwrite` + `fdatasync` both returned; for S3 the PUT of the batch's object
//!      returned 200; for Postgres the `COMMIT` of the batch's INSERT returned.
//!    - [`Action::Write`]: hand the bytes to the OS (page cache) without syncing; no
//!      completion is expected. Only the acknowledge-before-sync policies emit it.
//!    - [`Action::Sync`]: make everything written so far to `segment` durable (the
//!      periodic policy's background sync); report with `handle_persisted`.
//!    - [`Action::Ack`]: tell these writers OK. Only now may they apply their change
//!      and make it visible.
//!    - [`Action::Fail`]: tell these writers their outcome is *unknown* (Part 3 of the
//!      teaching page: the bytes may or may not be on the disk).
//! 3. Sleep until the next input or until [`GroupCommit::poll_timeout`].
//!
//! A simulator feeds *all* inputs that share an instant before polling; that is what
//! makes the page's tie rule hold (below). A real driver has no exact ties and may poll
//! after every input.
//!
//! # Policies
//!
//! - [`Policy::PerWrite`]: each record is its own batch. The ceiling is 1 / L writes a
//!   second, and beyond it the queue grows without limit.
//! - [`Policy::Group`]: the page's `GROUP_COMMIT_WRITE`, leader and followers. A batch
//!   is formed whenever a persist slot is free, from everything queued (with
//!   [`Config::pipeline_min_records`], a batch that would run beside others waits
//!   until it holds that many records). **Tie rule:** a
//!   record that arrives at the very instant a persist completes is *not* covered by it
//!   (its bytes were not written when that persist began) and joins the batch the next
//!   leader forms at that same instant. Because batches are formed when the driver
//!   polls, not when an input arrives, that holds whatever order the driver feeds the
//!   simultaneous inputs in.
//! - [`Policy::Window`]: wait on purpose. The window opens when the first record reaches
//!   an empty batch and closes `window` later or as soon as the batch holds
//!   `batch_bytes_max` bytes, whichever comes first. A record arriving exactly as the
//!   window closes opens the next window. With `inflight_max > 1` this is also the
//!   stream WAL's "batch interval + max bytes per batch" for S3 and Postgres.
//! - [`Policy::NoSync`]: acknowledge as soon as the bytes are handed to the OS; the
//!   OS writes them back whenever it likes. A power loss can take everything not yet
//!   written back.
//! - [`Policy::Periodic`]: acknowledge on write, and sync every `interval` in the
//!   background (InnoDB's `innodb_flush_log_at_trx_commit = 2`, PostgreSQL's
//!   `synchronous_commit = off`). A power loss can take up to about one interval. The
//!   timer sleeps while nothing is waiting to be synced; the next append wakes it.
//!
//! # Pipelining and ordered acknowledgements
//!
//! The teaching page's local file has one persist in flight at a time
//! (`inflight_max = 1`, [`Config::file`]): the next batch gathers while a sync runs.
//! With `inflight_max > 1` (the native file WAL's sync threads, an object store's
//! concurrent PUTs, a database's connections) the next batch is written and persisted
//! beside the running one, so the storage does not idle while the driver acknowledges
//! and writes between persists; which batch a driver may persist on its own thread is
//! decided in [`schedule`], and what each storage gets in [`crate::session::preset`].
//! Batches can then *complete* out of order, but acknowledgements are released strictly
//! in submission order: a batch is acknowledged only when it and every batch before it
//! are durable, because a reader of the log must never see a hole.
//!
//! # Failure is fatal
//!
//! A failed persist (EIO from `fdatasync`, a failed PUT, a failed COMMIT) is never
//! retried here. Linux may already have marked the pages clean, so a retried sync
//! "succeeds" without writing anything (Part 3, "fsyncgate"). The machine fails the
//! batch's writers *and every later one* (their bytes follow a hole), refuses further
//! appends with [`AppendError::Failed`], and stays that way until the driver recovers
//! from what is on the storage and builds a new machine ([`GroupCommit::resume`]).
//! Batches submitted *before* the failed one may still complete and be acknowledged:
//! they do not depend on it.
//!
//! # Segments
//!
//! Every record names the log segment it belongs to. A batch never crosses a segment
//! boundary: a record for a different segment closes the open batch first, so a segment
//! switch always falls between batches and each persist touches exactly one file.
//!
//! # Bounds
//!
//! Every queue has a named bound. At most `inflight_max` batches persist at once; at
//! most `waiters_max` appends wait for their acknowledgement; the bytes appended but not
//! yet durable never exceed `unflushed_bytes_max` (an append that would pass it is
//! refused with [`AppendError::Backpressure`] and may be retried once acknowledgements
//! have freed room); a batch never exceeds `batch_bytes_max` (a single record larger than
//! that travels alone).

mod acks;
mod batch;
mod config;
mod error;
pub mod schedule;

pub use self::batch::{Action, Batch, BatchId, Ticket, Tickets};
pub use self::config::{Config, ConfigError, Policy, PolicyKind};
pub use self::error::{AppendError, CompletionError, SyncError};

use std::collections::VecDeque;

use crate::time::Nanos;

/// A batch being gathered or waiting for a persist slot.
#[derive(Debug)]
struct Gathering {
    segment: u64,
    offset: u64,
    lsn_start: u64,
    tickets: Tickets,
    bytes: Vec<u8>,
    /// Where each record ends in `bytes` (see [`Batch::record_ends`]).
    record_ends: Vec<usize>,
    /// When the window closes (window policy only).
    deadline: Option<Nanos>,
    /// When its first record arrived.
    opened: Nanos,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum InflightState {
    Running,
    Done,
    /// At or after a failed batch: its writers were failed; its completion is ignored.
    AbandonedRunning,
    AbandonedDone,
}

/// A persist or sync handed to the driver and not yet released.
#[derive(Clone, Copy, Debug)]
struct Inflight {
    id: BatchId,
    tickets: Tickets,
    lsn_end: u64,
    state: InflightState,
    /// The latest instant the machine had been given when the batch was handed out.
    submitted: Nanos,
    /// The ticket the next append would get when the batch was handed out: the appends
    /// from it on arrived while the batch was persisting ([`schedule::pipeline_min`]).
    next_ticket_then: Ticket,
}

/// Counters a driver or a trace may show.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Counters {
    /// Persists (batches) and periodic syncs handed out.
    pub persists: u64,
    /// Writers acknowledged.
    pub acked: u64,
    /// Writers failed.
    pub failed: u64,
    /// Appends refused.
    pub refused: u64,
}

/// The group-commit state machine. See the module docs for the driver's contract.
#[derive(Debug)]
pub struct GroupCommit {
    config: Config,
    /// The batch being gathered (records keep arriving into it).
    open: Option<Gathering>,
    /// Closed batches waiting for a persist slot, oldest first. Bounded by
    /// `unflushed_bytes_max` (every byte in them counts as unflushed).
    closed: VecDeque<Gathering>,
    /// Batches handed out and not yet released, in submission order; at most
    /// `inflight_max` of them are `Running`.
    inflight: VecDeque<Inflight>,
    running: usize,
    /// Actions decided but not yet polled (acks and fails), bounded by the batches that
    /// can produce them: at most `inflight_max + 2`.
    ready: VecDeque<Action>,
    next_ticket: Ticket,
    next_batch: u64,
    /// Tickets below this are acknowledged or failed.
    settled_ticket: Ticket,
    /// Log positions: appended >= written >= durable.
    appended_lsn: u64,
    written_lsn: u64,
    durable_lsn: u64,
    /// The segment of the last append and the bytes appended to it so far.
    segment: u64,
    segment_bytes: u64,
    /// Periodic policy: next background sync, and the segments written since the last.
    next_periodic: Option<Nanos>,
    /// Periodic policy: the log position the last background sync was asked to reach.
    sync_requested_lsn: u64,
    unsynced_segments: Option<(u64, u64)>,
    failed: Option<SyncError>,
    /// The first ticket failed so far; every later ticket was failed too.
    failed_from: Option<Ticket>,
    counters: Counters,
    /// Emptied buffers kept for reuse, so a long run allocates little.
    spare_buffers: Vec<Vec<u8>>,
    /// Records in the batch submitted last (see [`schedule::persists_inline`]).
    last_batch_records: u64,
    /// The latest instant any input carried (a batch's submission time; the machine
    /// reads no clock).
    last_now: Nanos,
    /// The cohort hold in force, if any ([`Config::cohort_hold_percent`]).
    hold: Option<schedule::CohortHold>,
    /// What the persists that returned measured ([`Config::pipeline_round_trip_percent`]).
    round_trip: schedule::RoundTrip,
}

/// The earlier of two optional instants.
fn earliest(a: Option<Nanos>, b: Option<Nanos>) -> Option<Nanos> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// How many emptied batch buffers are kept for reuse.
const SPARE_BUFFERS_MAX: usize = 8;
/// The most record ends a new batch reserves room for up front (it grows past it).
const RECORD_ENDS_CAPACITY_MAX: u64 = 4096;

impl GroupCommit {
    /// A fresh log: tickets from 1, log position 0, segment 1.
    pub fn new(config: Config) -> Result<GroupCommit, ConfigError> {
        GroupCommit::resume(config, Ticket(1), 0, 1, 0)
    }

    /// A log reopened after recovery: the next ticket, the log position and the segment
    /// (with the bytes already in it) where appending continues.
    pub fn resume(
        config: Config,
        next_ticket: Ticket,
        lsn: u64,
        segment: u64,
        segment_bytes: u64,
    ) -> Result<GroupCommit, ConfigError> {
        config.validate()?;
        Ok(GroupCommit {
            config,
            open: None,
            closed: VecDeque::new(),
            inflight: VecDeque::with_capacity(config.inflight_max),
            running: 0,
            ready: VecDeque::new(),
            next_ticket,
            next_batch: 1,
            settled_ticket: next_ticket,
            appended_lsn: lsn,
            written_lsn: lsn,
            durable_lsn: lsn,
            segment,
            segment_bytes,
            next_periodic: None,
            sync_requested_lsn: lsn,
            unsynced_segments: None,
            failed: None,
            failed_from: None,
            counters: Counters::default(),
            spare_buffers: Vec::new(),
            last_batch_records: 0,
            last_now: Nanos::ZERO,
            hold: None,
            round_trip: schedule::RoundTrip::default(),
        })
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Offers one writer's record for `segment`. Returns the writer's ticket.
    pub fn handle_append(&mut self, now: Nanos, segment: u64, record: &[u8]) -> Result<Ticket, AppendError> {
        self.last_now = self.last_now.max(now);
        if let Err(error) = self.admit(segment, record.len()) {
            self.counters.refused += 1;
            return Err(error);
        }
        // A record arriving exactly as the window closes opens the next window.
        self.close_expired_window(now);
        if segment != self.segment {
            self.close_open();
            self.segment = segment;
            self.segment_bytes = 0;
        }
        let fits = match &self.open {
            Some(open) => open.bytes.len() + record.len() <= self.config.batch_bytes_max,
            None => true,
        };
        if !fits {
            self.close_open();
        }
        let ticket = self.next_ticket;
        self.next_ticket = Ticket(ticket.0 + 1);
        if self.open.is_none() {
            let deadline = match self.config.policy {
                Policy::Window { window } => Some(now + window),
                _ => None,
            };
            let bytes = self.spare_buffers.pop().unwrap_or_default();
            // One allocation per batch, sized like the last one, never one per record.
            let record_ends = Vec::with_capacity(self.last_batch_records.clamp(1, RECORD_ENDS_CAPACITY_MAX) as usize);
            self.open = Some(Gathering {
                segment,
                offset: self.segment_bytes,
                lsn_start: self.appended_lsn,
                tickets: Tickets::empty_at(ticket),
                bytes,
                record_ends,
                deadline,
                opened: now,
            });
        }
        let open = self.open.as_mut().expect("an open batch was just ensured");
        open.bytes.extend_from_slice(record);
        open.record_ends.push(open.bytes.len());
        open.tickets.count += 1;
        self.appended_lsn += record.len() as u64;
        self.segment_bytes += record.len() as u64;
        let full = open.bytes.len() >= self.config.batch_bytes_max;
        if full || self.config.policy == Policy::PerWrite {
            self.close_open();
        }
        if let Policy::Periodic { interval } = self.config.policy {
            if self.next_periodic.is_none() {
                self.next_periodic = Some(now + interval);
            }
        }
        if let Some(hold) = &mut self.hold {
            if hold.count_append() || hold.expired(now) {
                self.hold = None;
            }
        }
        Ok(ticket)
    }

    fn admit(&self, segment: u64, record_bytes: usize) -> Result<(), AppendError> {
        if let Some(error) = self.failed {
            return Err(AppendError::Failed(error));
        }
        if record_bytes == 0 {
            return Err(AppendError::EmptyRecord);
        }
        if segment < self.segment {
            return Err(AppendError::SegmentWentBack { current: self.segment, given: segment });
        }
        if (self.next_ticket.0 - self.settled_ticket.0) as usize >= self.config.waiters_max {
            return Err(AppendError::TooManyWaiters);
        }
        if self.config.policy.syncs_before_ack() {
            if record_bytes > self.config.unflushed_bytes_max {
                return Err(AppendError::RecordTooLarge { record_bytes });
            }
            let unflushed_bytes = self.unflushed_bytes();
            if unflushed_bytes + record_bytes > self.config.unflushed_bytes_max {
                return Err(AppendError::Backpressure { unflushed_bytes, record_bytes });
            }
        }
        Ok(())
    }

    /// Reports that the persist or sync `batch` has returned, successfully or not.
    pub fn handle_persisted(
        &mut self,
        now: Nanos,
        batch: BatchId,
        result: Result<(), SyncError>,
    ) -> Result<(), CompletionError> {
        self.last_now = self.last_now.max(now);
        let index = self
            .inflight
            .iter()
            .position(|entry| {
                entry.id == batch
                    && matches!(entry.state, InflightState::Running | InflightState::AbandonedRunning)
            })
            .ok_or(CompletionError::UnknownBatch(batch))?;
        self.running -= 1;
        let persisted_in = now.saturating_sub(self.inflight[index].submitted);
        self.round_trip.measure(self.next_ticket.0 - self.inflight[index].next_ticket_then.0, persisted_in);
        if self.inflight[index].state == InflightState::AbandonedRunning {
            self.inflight[index].state = InflightState::AbandonedDone;
            self.release_in_order(now, persisted_in);
            return Ok(());
        }
        match result {
            Ok(()) => self.inflight[index].state = InflightState::Done,
            Err(error) => {
                // This batch and every later one are abandoned; batches before it do
                // not depend on it and may still be acknowledged.
                for entry in self.inflight.iter_mut().skip(index) {
                    entry.state = match entry.state {
                        InflightState::Running => InflightState::AbandonedRunning,
                        InflightState::Done | InflightState::AbandonedDone => InflightState::AbandonedDone,
                        InflightState::AbandonedRunning => InflightState::AbandonedRunning,
                    };
                }
                self.inflight[index].state = InflightState::AbandonedDone;
                let failed_from = self.inflight[index].tickets.first;
                self.fail_from(failed_from, error);
            }
        }
        self.release_in_order(now, persisted_in);
        Ok(())
    }

    /// Reports that the time from [`GroupCommit::poll_timeout`] has come.
    pub fn handle_timeout(&mut self, now: Nanos) {
        self.last_now = self.last_now.max(now);
        if self.hold.is_some_and(|hold| hold.expired(now)) {
            self.hold = None;
        }
        self.close_expired_window(now);
        if let (Policy::Periodic { interval }, Some(due)) = (self.config.policy, self.next_periodic) {
            if now >= due {
                let unsynced = self.appended_lsn > self.sync_requested_lsn;
                if self.failed.is_some() || !unsynced {
                    // Nothing new since the last sync was asked for: the timer sleeps until
                    // the next append arms it again, so an idle log costs no ticks.
                    self.next_periodic = None;
                    return;
                }
                self.next_periodic = Some(now + interval);
                if self.running < self.config.inflight_max {
                    // Write out what was appended before syncing it.
                    self.flush_unsynced_writes();
                    let id = self.take_batch_id();
                    let (first_segment, last_segment) =
                        self.unsynced_segments.take().unwrap_or((self.segment, self.segment));
                    let lsn_end = self.written_lsn;
                    self.sync_requested_lsn = lsn_end;
                    self.push_inflight(id, Tickets::empty_at(self.next_ticket), lsn_end);
                    self.ready.push_back(Action::Sync { batch: id, first_segment, last_segment, lsn_end });
                }
            }
        }
    }

    /// The next instant at which [`GroupCommit::handle_timeout`] must be called.
    pub fn poll_timeout(&self) -> Option<Nanos> {
        if self.failed.is_some() {
            return None;
        }
        let window = self.open.as_ref().and_then(|open| open.deadline);
        // A hold matters only to a batch that is gathering.
        let hold = self.hold.filter(|_| self.open.is_some()).map(|hold| hold.until);
        earliest(earliest(window, self.next_periodic), hold)
    }

    /// The next thing the driver must do, if any.
    pub fn poll_action(&mut self) -> Option<Action> {
        if let Some(action) = self.ready.pop_front() {
            return Some(action);
        }
        if self.failed.is_some() {
            return None;
        }
        if !self.config.policy.syncs_before_ack() {
            return self.poll_write_and_ack();
        }
        if self.running >= self.config.inflight_max {
            return None;
        }
        let starts_when_a_slot_is_free = match self.config.policy {
            Policy::Group => true,
            Policy::Window { .. } => self.config.window_only_when_busy,
            _ => false,
        };
        let gathering = match self.closed.pop_front() {
            Some(batch) => batch,
            None if starts_when_a_slot_is_free => {
                let open = self.open.as_ref()?;
                if self.running > 0 && open.tickets.count < self.pipeline_min() {
                    // Not worth a persist of its own yet: it gathers while the running
                    // ones finish, and goes when it is big enough or none is left.
                    return None;
                }
                if self.hold.is_some() {
                    // The writers just answered are about to append: they ride this
                    // batch's sync rather than wait out the next one.
                    return None;
                }
                self.open.take()?
            }
            None => return None,
        };
        Some(Action::Persist(self.submit(gathering)))
    }

    /// The records a batch needs to start beside the running persists
    /// ([`schedule::pipeline_min`]).
    fn pipeline_min(&self) -> u64 {
        let running_records = || {
            self.inflight
                .iter()
                .filter(|inflight| inflight.state == InflightState::Running)
                .map(|inflight| inflight.tickets.count)
                .sum()
        };
        schedule::pipeline_min(&self.config, running_records, &self.round_trip)
    }

    /// No-sync and periodic: the open batch goes to the OS and is acknowledged at once.
    fn poll_write_and_ack(&mut self) -> Option<Action> {
        let (write, ack) = self.write_and_ack()?;
        self.ready.push_back(ack);
        Some(write)
    }

    fn write_and_ack(&mut self) -> Option<(Action, Action)> {
        let gathering = match self.closed.pop_front() {
            Some(batch) => batch,
            None => self.open.take()?,
        };
        let batch = self.make_batch(gathering);
        self.written_lsn = batch.lsn_end();
        self.unsynced_segments = Some(match self.unsynced_segments {
            None => (batch.segment, batch.segment),
            Some((first, _)) => (first, batch.segment),
        });
        self.settle(batch.tickets);
        self.counters.acked += batch.tickets.count;
        let tickets = batch.tickets;
        Some((Action::Write(batch), Action::Ack(tickets)))
    }

    fn flush_unsynced_writes(&mut self) {
        while let Some((write, ack)) = self.write_and_ack() {
            self.ready.push_back(write);
            self.ready.push_back(ack);
        }
    }

    /// Gives a batch buffer back after the driver has used it, so it can be reused.
    pub fn recycle_buffer(&mut self, mut bytes: Vec<u8>) {
        if self.spare_buffers.len() < SPARE_BUFFERS_MAX {
            bytes.clear();
            self.spare_buffers.push(bytes);
        }
    }

    fn submit(&mut self, gathering: Gathering) -> Batch {
        let mut batch = self.make_batch(gathering);
        batch.inline = schedule::persists_inline(&self.config, self.running, batch.tickets.count, self.last_batch_records);
        self.last_batch_records = batch.tickets.count;
        assert!(batch.lsn_start == self.written_lsn, "batches are written in log order");
        self.written_lsn = batch.lsn_end();
        assert!(self.durable_lsn <= self.written_lsn, "durable_lsn <= written_lsn");
        self.push_inflight(batch.id, batch.tickets, batch.lsn_end());
        batch
    }


    fn make_batch(&mut self, gathering: Gathering) -> Batch {
        let id = self.take_batch_id();
        Batch {
            id,
            segment: gathering.segment,
            offset: gathering.offset,
            lsn_start: gathering.lsn_start,
            tickets: gathering.tickets,
            bytes: gathering.bytes,
            record_ends: gathering.record_ends,
            inline: false,
        }
    }

    fn take_batch_id(&mut self) -> BatchId {
        let id = BatchId(self.next_batch);
        self.next_batch += 1;
        id
    }

    fn close_open(&mut self) {
        if let Some(open) = self.open.take() {
            self.closed.push_back(open);
        }
    }

    fn close_expired_window(&mut self, now: Nanos) {
        let expired = matches!(&self.open, Some(Gathering { deadline: Some(deadline), .. }) if now >= *deadline);
        if expired {
            self.close_open();
        }
    }

    /// Bytes appended and not yet durable.
    pub fn unflushed_bytes(&self) -> usize {
        (self.appended_lsn - self.durable_lsn) as usize
    }

    /// Log position after the last appended byte.
    pub fn appended_lsn(&self) -> u64 {
        self.appended_lsn
    }

    /// Log position after the last byte handed to the driver.
    pub fn written_lsn(&self) -> u64 {
        self.written_lsn
    }

    /// Log position below which every byte is durable.
    pub fn durable_lsn(&self) -> u64 {
        self.durable_lsn
    }

    /// The ticket the next append will get.
    pub fn next_ticket(&self) -> Ticket {
        self.next_ticket
    }

    /// Persists and syncs handed out and not yet returned.
    pub fn running(&self) -> usize {
        self.running
    }

    /// The error that stopped the log, if one did.
    pub fn failed(&self) -> Option<SyncError> {
        self.failed
    }

    pub fn counters(&self) -> Counters {
        self.counters
    }
}

#[cfg(test)]
mod tests;
