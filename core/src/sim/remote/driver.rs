//! The event loop: a simulated object store or Postgres under the group-commit machine.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};
use std::convert::Infallible;
use std::ops::ControlFlow;

use super::{
    BatchOutcome, BatchRow, Load, RecordRow, RemoteBackend, RemoteError, RemoteRun, RemoteSetup,
    TakeoverReport, TrimRow, OWNER_EPOCH, RECORD_KEY_BYTES,
};
use crate::codec::stream::encode_frame_records;
use crate::codec::tiny;
use crate::codec::Op;
use crate::group_commit::{Action, AppendError, SyncError};
use crate::remote::layout::{plan_chain, Registration, WalObject};
use crate::ring::{self, SlotRow};
use crate::rng::Rng;
use crate::group_commit::BatchId;
use crate::session::retention::NextSeq;
use crate::session::ring::{Admission, RingWait};
use crate::session::rollover::SegmentRule;
use crate::session::{Layout, Refusal, Resume, Session};
use crate::sim::clock::{self, earliest, End, InstantBound, Simulation};
use crate::time::Nanos;

mod finish;
mod takeover;

/// Instants one run visits at most: a record's arrival, and per batch its landing, fence
/// read, acknowledgement, trim and window, with room to spare at [`super::RECORDS_MAX`].
pub const INSTANTS: InstantBound = InstantBound { name: "remote instants", instants_max: 20_000_000 };

/// Runs the setup to its end: every record appended, every request answered.
pub fn run(setup: &RemoteSetup) -> Result<RemoteRun, RemoteError> {
    setup.validate()?;
    let mut driver = Driver::new(setup);
    match clock::run(&mut driver, INSTANTS) {
        Ok(End::Quiet { .. }) => Ok(driver.finish()),
        Ok(End::Stopped { stop, .. }) => match stop {},
        Err(exceeded) => Err(RemoteError::Bound(exceeded)),
    }
}

enum Appended {
    Yes,
    /// Refused for now (backpressure): offered again after the next acknowledgement.
    Later,
    /// Refused for good: the log has failed.
    Never,
}

/// A request to the store, in flight.
struct Request {
    batch: usize,
    done_at: Nanos,
    failed: bool,
    /// Postgres: the row commits at `done_at` but the answer is lost; a retry follows.
    answer_lost: bool,
    /// Postgres: this is the retry, which finds the row and compares it.
    compare: bool,
}

/// Node B's takeover, one request at a time. S3: the conditional PUT of the
/// registration, its read-back, the LIST, and the PUT that records B's session.
/// Postgres: the fenced `UPDATE` of the node row to epoch + 1, then the recovery scan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ClaimStage {
    Claim,
    ReadBack,
    List,
    Session,
    EpochBump,
    RecoveryScan,
}

struct Claim {
    stage: ClaimStage,
    done_at: Nanos,
}

struct Driver<'a> {
    setup: &'a RemoteSetup,
    /// The log: the machine, and the segments records go to (a Postgres generation).
    session: Session,
    latency_rng: Rng,
    /// The fence reads (S3) and node B's requests draw from their own generator, so the
    /// PUTs' and INSERTs' draws stay those of a run without them.
    control_rng: Rng,
    /// S3: fence reads in flight, `(answered at, batch index)`.
    checks: Vec<(Nanos, usize)>,
    claim: Option<Claim>,
    /// S3: what node B's LIST found, kept until its session is recorded.
    pending_session: Option<(Option<u64>, u64, u64)>,
    now: Nanos,
    records: Vec<RecordRow>,
    /// Ticket t's record is `ticket_record[t - 1]`.
    ticket_record: Vec<u64>,
    record_writer: Vec<u64>,
    batches: Vec<BatchRow>,
    index_of_batch: BTreeMap<u64, usize>,
    batch_tickets: Vec<(u64, u64)>,
    /// Postgres: each batch's row body (the INSERT and the retry's comparison need it).
    batch_bodies: Vec<Vec<u8>>,
    requests: Vec<Request>,
    /// What the requests that landed at this instant will report, `(batch index, result)`.
    landed: Vec<(usize, Result<(), SyncError>)>,
    pending: VecDeque<usize>,
    next_put: u64,
    puts: u64,
    fence_checks: u64,
    records_acked: u64,
    next_acked_batch: usize,
    // Who appends.
    arrivals: Vec<Nanos>,
    next_arrival: usize,
    writers_ready: BinaryHeap<Reverse<(Nanos, u64)>>,
    paused: VecDeque<u64>,
    retry_paused: bool,
    value: Vec<u8>,
    fenced_batches: Vec<u64>,
    // The object store.
    registration: Registration,
    objects: Vec<(WalObject, usize)>,
    next_offset: u64,
    // Postgres.
    /// Postgres: the end of the last acknowledged batch, and the seq of its last record.
    acked_end: u64,
    acked_seq: u64,
    rows: Vec<(SlotRow, usize)>,
    trims: Vec<TrimRow>,
    last_trim_tick: Nanos,
    // The takeover.
    takeover: Option<TakeoverReport>,
    claim_requested: bool,
}

impl<'a> Driver<'a> {
    fn new(setup: &'a RemoteSetup) -> Driver<'a> {
        let (layout, first_segment) = match setup.backend {
            RemoteBackend::S3 => (Layout::segments(SegmentRule::ONE_SEGMENT, NextSeq::InLog), 1),
            // The ring's generations, from 0, as the native backend resumes them. The
            // simulated upload confirms only every `trim_every`: nothing to pace.
            RemoteBackend::Postgres => (Layout::ring(setup.ring, Nanos::ZERO), 0),
        };
        let session =
            Session::new(setup.machine_config(), layout, Resume::fresh(first_segment)).expect("the setup was validated");
        let arrivals = setup
            .arrivals()
            .map(|arrivals| arrivals.instants().collect())
            .unwrap_or_default();
        let mut writers_ready = BinaryHeap::new();
        if let Load::Writers { writers } = setup.load {
            for writer in 0..writers.min(setup.count) {
                writers_ready.push(Reverse((Nanos::ZERO, writer)));
            }
        }
        // Node A has taken the node over at epoch 5 and recorded its session from 0.
        let mut registration = Registration::unclaimed();
        registration.epoch = OWNER_EPOCH - 1;
        let registration = registration
            .claimed_by("node-a")
            .expect("epoch fits")
            .with_session(None, 0, 1);
        Driver {
            setup,
            session,
            latency_rng: Rng::new(setup.seed ^ 0x5eed_1a7e_0000_0000),
            control_rng: Rng::new(setup.seed ^ 0x000f_e2ce_0ead_0000),
            checks: Vec::new(),
            claim: None,
            pending_session: None,
            now: Nanos::ZERO,
            records: Vec::with_capacity(setup.count as usize),
            ticket_record: Vec::with_capacity(setup.count as usize),
            record_writer: Vec::new(),
            batches: Vec::new(),
            index_of_batch: BTreeMap::new(),
            batch_tickets: Vec::new(),
            batch_bodies: Vec::new(),
            requests: Vec::new(),
            landed: Vec::new(),
            pending: VecDeque::new(),
            next_put: 1,
            puts: 0,
            fence_checks: 0,
            records_acked: 0,
            next_acked_batch: 0,
            arrivals,
            next_arrival: 0,
            writers_ready,
            paused: VecDeque::new(),
            retry_paused: false,
            value: vec![0x5a; value_bytes(setup.record_bytes)],
            fenced_batches: Vec::new(),
            registration,
            objects: Vec::new(),
            next_offset: 0,
            acked_end: 0,
            acked_seq: 0,
            rows: Vec::new(),
            trims: Vec::new(),
            last_trim_tick: Nanos::ZERO,
            takeover: None,
            claim_requested: false,
        }
    }

    /// Postgres: the next instant the upload confirms something new, if it will.
    fn next_trim(&self) -> Option<Nanos> {
        // After a claim, A's trim (guarded by its epoch) changes nothing.
        if self.setup.backend != RemoteBackend::Postgres
            || self.acked_end <= self.trim_offset()
            || self.claim_requested
        {
            return None;
        }
        let every = self.setup.trim_every.0;
        let mut tick = Nanos((self.last_trim_tick.0 / every + 1) * every).max(self.now);
        if let Some((from, until)) = self.setup.upload_stall {
            if tick >= from && tick < until {
                if until == Nanos::MAX {
                    return None;
                }
                tick = until;
            }
        }
        Some(tick)
    }

    fn new_record(&mut self, now: Nanos, writer: Option<u64>) -> u64 {
        let record = self.records.len() as u64 + 1;
        self.records.push(RecordRow {
            record,
            arrived: Some(now),
            acked: None,
            batch: None,
        });
        if let Some(writer) = writer {
            self.record_writer.resize(record as usize, u64::MAX);
            self.record_writer[record as usize - 1] = writer;
        }
        record
    }

    /// Offers the waiting records to the machine, oldest first, until one is refused.
    fn offer_paused(&mut self, now: Nanos) {
        // Bounded by the queue: each pass accepts or stops.
        while let Some(&record) = self.paused.front() {
            match self.append(now, record) {
                Appended::Yes | Appended::Never => {
                    self.paused.pop_front();
                }
                Appended::Later => break,
            }
        }
    }

    fn append(&mut self, now: Nanos, record: u64) -> Appended {
        let seq = self.session.next_seq();
        let key = format!("{:0w$}", record % 100_000_000, w = RECORD_KEY_BYTES);
        let bytes = tiny::encode(seq, Op::Put, key.as_bytes(), &self.value);
        match self.session.handle_append(now, &bytes) {
            Ok(appended) => {
                assert_eq!(appended.ticket.0, seq, "a record's seq is its ticket");
                self.ticket_record.push(record);
                Appended::Yes
            }
            Err(Refusal::Machine(AppendError::Backpressure { .. } | AppendError::TooManyWaiters)) => Appended::Later,
            // The log failed (a failed PUT, a fence): this record is never acknowledged.
            Err(_) => Appended::Never,
        }
    }

    fn drain(&mut self, now: Nanos) {
        while let Some(action) = self.session.poll_action() {
            match action {
                Action::Persist(batch) => self.persist(now, batch),
                Action::Ack(tickets) => {
                    for ticket in tickets.iter() {
                        let record = self.ticket_record[ticket.0 as usize - 1];
                        self.records[record as usize - 1].acked = Some(now);
                        self.records_acked += 1;
                        if let Some(&writer) = self.record_writer.get(record as usize - 1) {
                            self.writers_ready.push(Reverse((now, writer)));
                        }
                    }
                    while let Some(&(_, end)) = self.batch_tickets.get(self.next_acked_batch) {
                        if end > tickets.end().0 {
                            break;
                        }
                        let batch = &mut self.batches[self.next_acked_batch];
                        batch.acked = Some(now);
                        self.acked_end = batch.end_offset;
                        self.acked_seq = tickets.end().0 - 1;
                        self.next_acked_batch += 1;
                    }
                    self.retry_paused = true;
                }
                // Their writers learn the outcome is unknown; closed-loop writers stop.
                Action::Fail { .. } => {}
                Action::Write(_) | Action::Sync { .. } => {
                    unreachable!("the remote WALs acknowledge only after a persist")
                }
            }
        }
    }

    fn persist(&mut self, now: Nanos, batch: crate::group_commit::Batch) {
        let index = self.batches.len();
        let first_record = self.ticket_record[batch.tickets.first.0 as usize - 1];
        for ticket in batch.tickets.iter() {
            let record = self.ticket_record[ticket.0 as usize - 1];
            self.records[record as usize - 1].batch = Some(batch.id.0);
        }
        let (first_offset, end_offset, generation) = match self.setup.backend {
            RemoteBackend::S3 => {
                let frame_bytes = encode_frame_records(self.next_offset, batch.records()).len() as u64;
                let start = self.next_offset;
                self.next_offset += frame_bytes;
                (start, self.next_offset, None)
            }
            RemoteBackend::Postgres => {
                let start = self.setup.ring.address(batch.segment, batch.offset);
                (start, start + batch.bytes.len() as u64, Some(batch.segment))
            }
        };
        self.batches.push(BatchRow {
            records: batch.tickets.count,
            first_record,
            first_offset,
            end_offset,
            generation,
            slot: generation.map(|g| self.setup.ring.slot(g)),
            ..BatchRow::formed(batch.id.0, now)
        });
        self.index_of_batch.insert(batch.id.0, index);
        self.batch_tickets
            .push((batch.tickets.first.0, batch.tickets.end().0));
        match self.setup.backend {
            RemoteBackend::S3 => {
                self.batch_bodies.push(Vec::new());
                self.session.recycle_buffer(batch.bytes);
                self.send(now, index);
            }
            RemoteBackend::Postgres => {
                self.batch_bodies.push(ring::encode_row_body(first_offset, OWNER_EPOCH, batch.records()));
                self.session.recycle_buffer(batch.bytes);
                self.pending.push_back(index);
            }
        }
    }

    /// Sends batch `index`'s PUT or INSERT now.
    fn send(&mut self, now: Nanos, index: usize) {
        let put = self.next_put;
        self.next_put += 1;
        self.puts += 1;
        let latency = self.latency_of(put);
        let fails = self.setup.fail_put == Some(put);
        let batch = &mut self.batches[index];
        batch.sent = Some(now);
        batch.request = Some(put);
        let (failed, answer_lost) = match self.setup.backend {
            RemoteBackend::S3 => (fails, false),
            RemoteBackend::Postgres => (false, fails),
        };
        self.requests.push(Request {
            batch: index,
            done_at: now + latency,
            failed,
            answer_lost,
            compare: false,
        });
    }

    fn latency_of(&mut self, put: u64) -> Nanos {
        let drawn = self.setup.latency.draw(&mut self.latency_rng);
        self.setup
            .slow_puts
            .iter()
            .find(|(k, _)| *k == put)
            .map_or(drawn, |&(_, slow)| slow)
    }

    /// Postgres: the ring's trim offset (every byte below it trimmed).
    fn trim_offset(&self) -> u64 {
        self.session.ring_trim_offset().unwrap_or(0)
    }

    /// Postgres: sends every waiting batch the session admits, fails those it fails
    /// (an earlier batch failed: they are never inserted), and notes why the rest wait.
    fn start_pending(&mut self, now: Nanos) {
        let mut still = VecDeque::new();
        // Bounded by the queue: each batch is asked once.
        while let Some(index) = self.pending.pop_front() {
            let id = BatchId(self.batches[index].batch);
            match self.session.ring_admission(id).expect("a batch of the ring") {
                Admission::Insert => self.send(now, index),
                Admission::Fail(error) => {
                    self.session.handle_persisted(now, id, Err(error)).expect("the batch is in flight");
                }
                Admission::Wait(wait) => {
                    let batch = &mut self.batches[index];
                    if batch.waited != Some(RingWait::Slot) {
                        batch.waited = Some(wait);
                    }
                    still.push_back(index);
                }
            }
        }
        self.pending = still;
    }

    /// A request finishes: what it stored, and the result the machine will hear.
    fn land_request(&mut self, request: Request, now: Nanos) -> Option<(usize, Result<(), SyncError>)> {
        let index = request.batch;
        self.batches[index].answered = Some(now);
        let batch = self.batches[index].clone();
        match self.setup.backend {
            RemoteBackend::S3 => {
                if request.failed {
                    return Some((index, Err(SyncError::Unavailable)));
                }
                let object = WalObject {
                    epoch: batch.epoch,
                    start: batch.first_offset,
                    end: batch.end_offset,
                };
                self.objects.push((object, index));
                self.batches[index].stored = Some(now);
                Some((index, Ok(())))
            }
            RemoteBackend::Postgres => {
                let fenced = self
                    .setup
                    .takeover_at
                    .is_some_and(|t| batch.sent.is_some_and(|sent| sent >= t));
                if fenced {
                    // INSERT ... SELECT ... WHERE epoch = 5 FOR SHARE found no row: nothing written.
                    self.batches[index].outcome = Some(BatchOutcome::Fenced);
                    self.fenced_batches.push(batch.batch);
                    return Some((index, Err(SyncError::Fenced)));
                }
                let body = self.batch_bodies[index].clone();
                if request.compare {
                    // The retry finds a row at its offset and compares it with the batch.
                    let stored = self
                        .rows
                        .iter()
                        .find(|(row, _)| row.start_offset == batch.first_offset);
                    let matches = stored.is_some_and(|(row, _)| row.body == body);
                    return Some((
                        index,
                        if matches {
                            Ok(())
                        } else {
                            Err(SyncError::Mismatch)
                        },
                    ));
                }
                let slot = batch.slot.expect("a ring batch");
                let row = SlotRow {
                    slot,
                    start_offset: batch.first_offset,
                    end_offset: batch.end_offset,
                    epoch: batch.epoch,
                    body,
                };
                self.rows.push((row, index));
                self.batches[index].stored = Some(now);
                if request.answer_lost {
                    // The commit happened, its answer did not arrive: retry against the same table.
                    self.batches[index].retried = true;
                    self.puts += 1;
                    let latency = self.setup.latency.draw(&mut self.latency_rng);
                    self.requests.push(Request {
                        batch: index,
                        done_at: now + latency,
                        failed: false,
                        answer_lost: false,
                        compare: true,
                    });
                    return None;
                }
                Some((index, Ok(())))
            }
        }
    }

    /// Postgres: the upload confirms every acknowledged record; the session names the
    /// trim, whose released slots are truncated at once.
    fn trim(&mut self, now: Nanos) {
        self.last_trim_tick = now;
        self.session.confirm_consumer(self.acked_seq);
        let Some(trim) = self.session.poll_trim() else { return };
        let geometry = self.setup.ring;
        let truncated_slots: Vec<u64> = trim.released.clone().map(|generation| geometry.slot(generation)).collect();
        // Bounded by the rows kept: each is checked once.
        self.rows.retain(|(row, _)| !trim.released.contains(&geometry.generation(row.start_offset)));
        self.session.handle_trimmed(now, trim.to, Ok(()));
        self.trims.push(TrimRow { at: now, trim_offset: trim.to, truncated_slots });
    }
}

/// The run on the shared loop. At each instant: the requests that finish land (objects
/// stored, rows committed) and the takeover moves (on S3 each of node B's requests as it
/// is answered, so B's LIST sees what landed at its instant); then the machine hears the
/// results, a stored object only once the fence read after its PUT answers (a read
/// answered now sees a claim answered now), and the upload confirms what was
/// acknowledged; then records arrive; then the window's timeout; then the machine's
/// actions.
impl Simulation for Driver<'_> {
    type Stop = Infallible;

    /// Open-loop arrivals, closed-loop writers ready again, and records refused for now
    /// that an acknowledgement at this instant lets the machine take.
    fn next_arrival(&self) -> Option<Nanos> {
        let retry = (self.retry_paused && !self.paused.is_empty()).then_some(self.now);
        let ready = self.writers_ready.peek().map(|Reverse((t, _))| *t);
        earliest(earliest(self.arrivals.get(self.next_arrival).copied(), ready), retry)
    }

    /// Requests answered by the store, B's claim and its next request.
    fn next_landing(&self) -> Option<Nanos> {
        let requests = self.requests.iter().map(|r| r.done_at).min();
        let claim = self.claim.as_ref().map(|claim| claim.done_at);
        let takeover = if self.takeover.is_none() && !self.claim_requested && self.claim.is_none() {
            self.setup.takeover_at.filter(|&t| t >= self.now)
        } else {
            None
        };
        earliest(earliest(requests, claim), takeover)
    }

    /// Fence reads answered, and the upload's next confirmation.
    fn next_completion(&self) -> Option<Nanos> {
        earliest(self.checks.iter().map(|&(at, _)| at).min(), self.next_trim())
    }

    fn next_timeout(&self) -> Option<Nanos> {
        self.session.poll_timeout()
    }

    fn begin(&mut self, now: Nanos) -> ControlFlow<Infallible> {
        assert!(now >= self.now, "simulated time never goes back");
        self.now = now;
        ControlFlow::Continue(())
    }

    fn land(&mut self, now: Nanos) -> ControlFlow<Infallible> {
        let mut finished = Vec::new();
        let mut index = 0;
        while index < self.requests.len() {
            if self.requests[index].done_at == now {
                finished.push(self.requests.swap_remove(index));
            } else {
                index += 1;
            }
        }
        crate::sort::sort_by_key(&mut finished, |request| request.batch);
        for request in finished {
            if let Some(result) = self.land_request(request, now) {
                self.landed.push(result);
            }
        }
        self.take_over(now);
        ControlFlow::Continue(())
    }

    fn complete(&mut self, now: Nanos) -> ControlFlow<Infallible> {
        // S3: a stored object is reported only after a fence read (a HEAD of the
        // registration) answers, when the run reads the fence; reads answered now see the
        // registration as it is now, after any claim answered at this instant. Without
        // fence reads (the lease) it is reported as its PUT returns.
        let mut heard = Vec::new();
        let mut landed = std::mem::take(&mut self.landed);
        for (batch, result) in landed.drain(..) {
            match (self.setup.backend, result) {
                (RemoteBackend::S3, Ok(())) if self.setup.reads_fence() => {
                    self.fence_checks += 1;
                    let answered = now + self.setup.latency.draw(&mut self.control_rng);
                    self.checks.push((answered, batch));
                }
                (_, result) => heard.push((batch, result)),
            }
        }
        self.landed = landed;
        let mut index = 0;
        while index < self.checks.len() {
            if self.checks[index].0 == now {
                let (_, batch) = self.checks.swap_remove(index);
                self.batches[batch].checked = Some(now);
                let result = if self.registration.epoch == OWNER_EPOCH {
                    Ok(())
                } else {
                    self.fenced_batches.push(self.batches[batch].batch);
                    Err(SyncError::Fenced)
                };
                heard.push((batch, result));
            } else {
                index += 1;
            }
        }
        crate::sort::sort_by_key(&mut heard, |(batch, _)| *batch);
        for (batch, result) in heard {
            let id = crate::group_commit::BatchId(self.batches[batch].batch);
            self.session
                .handle_persisted(now, id, result)
                .expect("the batch is in flight");
        }
        // The upload confirms what was acknowledged; released slots are truncated.
        if self.next_trim() == Some(now) {
            self.trim(now);
        }
        self.start_pending(now);
        ControlFlow::Continue(())
    }

    /// Refused records wait in arrival order, so record numbers and tickets keep the
    /// same order.
    fn arrive(&mut self, now: Nanos) -> ControlFlow<Infallible> {
        if self.retry_paused {
            self.retry_paused = false;
            self.offer_paused(now);
        }
        while self.arrivals.get(self.next_arrival) == Some(&now) {
            self.next_arrival += 1;
            let record = self.new_record(now, None);
            self.paused.push_back(record);
            self.offer_paused(now);
        }
        while let Some(&Reverse((t, writer))) = self.writers_ready.peek() {
            if t != now {
                break;
            }
            self.writers_ready.pop();
            if (self.records.len() as u64) < self.setup.count {
                let record = self.new_record(now, Some(writer));
                self.paused.push_back(record);
                self.offer_paused(now);
            }
        }
        ControlFlow::Continue(())
    }

    /// A batch window that closes now.
    fn time_out(&mut self, now: Nanos) {
        self.session.handle_timeout(now);
    }

    fn act(&mut self, now: Nanos) -> ControlFlow<Infallible> {
        self.drain(now);
        self.start_pending(now);
        ControlFlow::Continue(())
    }
}

/// The value length that makes a tiny record with an 8-byte key `record_bytes` long.
fn value_bytes(record_bytes: u32) -> usize {
    let target = record_bytes as usize;
    (0..target)
        .rev()
        .find(|&value| tiny::record_len(RECORD_KEY_BYTES, value) <= target)
        .unwrap_or(0)
}
