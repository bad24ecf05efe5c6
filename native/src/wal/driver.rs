//! The driver thread: owns the core's log session, feeds it appends, completions and
//! confirmations, and carries out its actions on the [`Backend`]. It decides nothing:
//! which segment a record goes to, what a batch holds, whether it syncs inline, who
//! hears OK and which segments go are the session's.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use walab_core::codec::tiny;
use walab_core::group_commit::{AppendError, BatchId, SyncError, Ticket};
use walab_core::group_commit::Batch;
use walab_core::session::ring::{Admission, RingWait};
use walab_core::session::{Action, Refusal, Session};
use walab_core::time::Nanos;
use walab_core::trace::Trace;

use super::backend::Backend;
use super::error::WalError;
use super::inbox::{Completion, Event, Reply, ReplyTo, TrimDone};
use super::os::{pin_current_thread, precise_timers, short_time_slice, tuned, yield_to_a_waking_thread, Tuning};
use super::stats::WalStats;
use super::trace::Tracer;
use super::writer::seal_record;

pub(super) struct DriverResult {
    pub(super) trace: Option<Trace>,
}

/// The fewest answers the driver hands to its answering thread rather than sending
/// them itself before a sync (see `Driver::deliver_answers`).
const ANSWERER_BATCH_MIN: usize = 8;

/// How long an idle driver polls for the next append before it sleeps (see
/// `Driver::spin_for_event`).
const IDLE_SPIN: Duration = Duration::from_micros(50);

/// However the driver ends (shutdown, or a panic unwinding out of a backend), no writer
/// is left waiting forever: every waiter and every append still in the channel is told
/// the log is closed. None of them was acknowledged, so their outcome is unknown, as
/// with any failure.
impl Drop for Driver {
    fn drop(&mut self) {
        self.driver_gone.store(true, Ordering::Release);
        // Answers already decided (a panic mid-round) still go out as decided.
        for (reply, answer) in self.outbox.drain(..) {
            reply.send(answer);
        }
        for (_, reply, buffer) in self.waiting.drain(..) {
            reply.send((Err(WalError::Closed), buffer));
        }
        while let Ok(event) = self.events_rx.try_recv() {
            if let Event::Append { record, reply, .. } = event {
                reply.send((Err(WalError::Closed), record));
            }
        }
    }
}

pub(super) struct Driver {
    /// Shared with the writers: see [`super::Wal`]'s `last_persist_ns`.
    pub(super) last_persist_ns: Arc<AtomicU64>,
    pub(super) session: Session,
    pub(super) backend: Box<dyn Backend>,
    pub(super) events_tx: Sender<Event>,
    pub(super) events_rx: Receiver<Event>,
    /// Writers waiting for their acknowledgement, in ticket order.
    pub(super) waiting: VecDeque<(Ticket, ReplyTo, Vec<u8>)>,
    pub(super) started: Instant,
    /// When each running persist was issued.
    pub(super) persist_started: BTreeMap<BatchId, Instant>,
    /// The last confirmed position sent to the live feed.
    pub(super) confirmed_seq: u64,
    /// A ring's batches the session has not admitted yet, in submission order.
    pub(super) ring_pending: VecDeque<Batch>,
    /// Those of them already counted as waiting for their slot.
    pub(super) ring_waits_slot: Vec<u64>,
    pub(super) stats: Arc<Mutex<WalStats>>,
    pub(super) tracer: Tracer,
    pub(super) shutting_down: bool,
    /// Whether an idle driver may poll before sleeping (more than one core).
    pub(super) spin: bool,
    /// When a persist completed in the current round (see [`WalStats::handoffs`]).
    pub(super) last_completion: Option<Instant>,
    /// Answers decided in this round, not yet sent.
    pub(super) outbox: Vec<(ReplyTo, Reply)>,
    /// The thread that sends large batches' answers while the driver syncs.
    pub(super) answerer: Option<Sender<Vec<(ReplyTo, Reply)>>>,
    /// Set when this driver goes away; see [`super::Writer::append`].
    pub(super) driver_gone: Arc<AtomicBool>,
}

impl Driver {
    fn now(&self) -> Nanos {
        Nanos(self.started.elapsed().as_nanos() as u64)
    }

    /// Hands the events the session made to the trace and the live feed.
    fn trace_session_events(&mut self) {
        while let Some(event) = self.session.poll_event() {
            let at = self.now();
            self.tracer.event(at, event);
        }
    }

    pub(super) fn run(mut self, pin_to: Option<Vec<usize>>) -> DriverResult {
        precise_timers();
        short_time_slice();
        if let Some(cpus) = &pin_to {
            // The driver syncs inline (a lone writer's batches): where the device's
            // completions land, like the backend's sync threads.
            pin_current_thread(cpus);
        }
        loop {
            // Wait for the next input, or for the session's deadline.
            let first = match self.spin_for_event() {
                Some(event) => event,
                None => self.wait_for_event(),
            };
            let first = match first {
                Ok(event) => event,
                Err(()) => break,
            };
            if let Some(event) = first {
                self.handle(event);
            }
            // Everything else that has already arrived joins the same round.
            while let Ok(event) = self.events_rx.try_recv() {
                self.handle(event);
            }
            let now = self.now();
            self.session.set_tracing(self.tracer.on());
            if self.session.poll_timeout().is_some_and(|deadline| deadline <= now) {
                self.session.handle_timeout(now);
            }
            self.admit_ring_batches();
            self.perform_actions();
            self.last_completion = None;
            self.pass_on_confirmation();
            self.remove_segments();
            self.trim_ring();
            if self.shutting_down && self.waiting.is_empty() && self.session.machine().running() == 0 {
                break;
            }
        }
        // Anyone still waiting (the channel closed under them) learns the log is closed.
        for (_, reply, buffer) in self.waiting.drain(..) {
            reply.send((Err(WalError::Closed), buffer));
        }
        DriverResult { trace: self.tracer.finish() }
    }

    /// When the log is idle (every append answered, nothing in flight) the writers just
    /// told OK are about to append again: polling the channel for a few microseconds
    /// catches that append without the driver falling asleep and being woken, which
    /// on a small machine costs as much again as the hop itself. Never while writers
    /// wait (they need the cores more), and never on a single core.
    fn spin_for_event(&mut self) -> Option<Result<Option<Event>, ()>> {
        let busy = !self.waiting.is_empty() || self.session.machine().running() != 0;
        if !self.spin || !tuned(Tuning::IdleSpin) || busy || self.shutting_down {
            return None;
        }
        let started = Instant::now();
        while started.elapsed() < IDLE_SPIN {
            match self.events_rx.try_recv() {
                Ok(event) => return Some(Ok(Some(event))),
                Err(mpsc::TryRecvError::Disconnected) => return Some(Err(())),
                // Yield, not spin: were the driver woken on this core it would wait for
                // the end of this thread's time slice (see `yield_to_a_waking_thread`).
                Err(mpsc::TryRecvError::Empty) => yield_to_a_waking_thread(),
            }
        }
        None
    }

    /// Blocks for the next input, or until the session's deadline (`Ok(None)`).
    /// `Err` once every sender is gone.
    fn wait_for_event(&mut self) -> Result<Option<Event>, ()> {
        match self.session.poll_timeout() {
            Some(deadline) => {
                let now = self.now();
                let wait = Duration::from_nanos(deadline.0.saturating_sub(now.0));
                match self.events_rx.recv_timeout(wait) {
                    Ok(event) => Ok(Some(event)),
                    Err(RecvTimeoutError::Timeout) => Ok(None),
                    Err(RecvTimeoutError::Disconnected) => Err(()),
                }
            }
            None => self.events_rx.recv().map(Some).map_err(|_| ()),
        }
    }

    fn handle(&mut self, event: Event) {
        // Events are made only while someone records them; a listener may join any time.
        self.session.set_tracing(self.tracer.on());
        match event {
            Event::Append { record, key_bytes, reply } => self.append(record, key_bytes, reply),
            Event::Persisted { batch, result, buffer } => self.persisted(batch, result, buffer),
            Event::Trimmed { to, result } => {
                let now = self.now();
                if result.is_ok() {
                    self.stats.lock().unwrap_or_else(|p| p.into_inner()).ring_trims += 1;
                }
                self.session.handle_trimmed(now, to, result);
            }
            Event::ConfirmConsumer { seq } => self.session.confirm_consumer(seq),
            Event::RegisterReader { name, seq, reply } => {
                let _ = reply.send(self.session.register_reader(&name, seq));
                self.trace_session_events();
            }
            Event::ConfirmReader { reader, seq } => {
                self.session.confirm_reader(reader, seq);
                self.trace_session_events();
            }
            Event::Shutdown => self.shutting_down = true,
        }
    }

    fn persisted(&mut self, batch: BatchId, result: Result<(), SyncError>, buffer: Vec<u8>) {
        let now = self.now();
        let elapsed = self.persist_started.remove(&batch).map(|t| t.elapsed().as_nanos() as u64).unwrap_or(0);
        self.last_persist_ns.store(elapsed, Ordering::Relaxed);
        {
            let mut stats = self.stats.lock().unwrap_or_else(|p| p.into_inner());
            stats.persist_ns_total += elapsed;
            match result {
                Ok(()) => stats.persists_ok += 1,
                Err(_) => stats.persists_failed += 1,
            }
        }
        self.tracer.persist_ended(now, batch, result);
        self.last_completion = Some(Instant::now());
        self.session.recycle_buffer(buffer);
        // An unknown batch would be a driver bug; the machine reports it as data.
        let known = self.session.handle_persisted(now, batch, result);
        debug_assert!(known.is_ok(), "completion for a batch the machine never issued");
    }

    fn append(&mut self, mut record: Vec<u8>, key_bytes: usize, reply: ReplyTo) {
        if self.shutting_down {
            reply.send((Err(WalError::Closed), record));
            return;
        }
        let seq = self.session.next_seq();
        seal_record(&mut record, seq);
        let now = self.now();
        match self.session.handle_append(now, &record) {
            Ok(appended) => {
                assert_eq!(appended.ticket.0, seq, "a record's seq is its ticket");
                if self.tracer.recorder.is_some() {
                    let key = &record[tiny::put_key_range(key_bytes)];
                    self.tracer.arrival(now, &appended, record.len() as u64, key);
                }
                self.trace_session_events();
                self.waiting.push_back((appended.ticket, reply, record));
            }
            Err(Refusal::Machine(AppendError::Failed(error))) => reply.send((Err(WalError::Failed(error)), record)),
            Err(other) => reply.send((Err(WalError::Refused(other.to_string())), record)),
        }
    }

    /// Performs the session's actions. With a backend that returns from `persist` at
    /// once (an I/O thread, a runtime), persists are issued first and acknowledgements
    /// delivered after, so the next sync runs while the previous batch's writers are
    /// being woken. With one that blocks in `persist` (a batch marked inline), the
    /// answers go first: otherwise a batch's writers would wait out the next sync too.
    /// Acks and fails keep their order among themselves, which is all the machine's
    /// ordering promise needs.
    fn perform_actions(&mut self) {
        let (mut answers, mut others): (Vec<Action>, Vec<Action>) = (Vec::new(), Vec::new());
        while let Some(action) = self.session.poll_action() {
            if matches!(action, Action::Ack(_) | Action::Fail { .. }) {
                answers.push(action);
            } else {
                others.push(action);
            }
        }
        self.trace_session_events();
        let sync_follows = others.iter().any(|action| matches!(action, Action::Persist(batch) if batch.inline));
        if sync_follows {
            for action in answers {
                self.perform(action);
            }
            self.deliver_answers(sync_follows);
            for action in others {
                self.perform(action);
            }
        } else {
            for action in others.into_iter().chain(answers) {
                self.perform(action);
            }
            self.deliver_answers(false);
        }
    }

    /// Sends the answers the session decided. When the driver is about to block in a
    /// sync, a large batch's answers go to the answering thread instead, so that waking
    /// its writers (a wake-up each, which under load can cost microseconds apiece and
    /// get the driver preempted) overlaps the sync instead of delaying it. A few answers
    /// are sent at once: the extra hop would cost a lone writer more than it saves.
    fn deliver_answers(&mut self, sync_follows: bool) {
        if self.outbox.is_empty() {
            return;
        }
        if sync_follows && self.outbox.len() >= ANSWERER_BATCH_MIN && tuned(Tuning::Answerer) {
            let answers = std::mem::take(&mut self.outbox);
            match self.answerer() {
                Some(answerer) => match answerer.send(answers) {
                    Ok(()) => return,
                    Err(mpsc::SendError(answers)) => self.outbox = answers,
                },
                None => self.outbox = answers,
            }
        }
        for (reply, answer) in self.outbox.drain(..) {
            reply.send(answer);
        }
    }

    /// The answering thread, started the first time it is needed (`None` if it cannot be).
    fn answerer(&mut self) -> Option<&Sender<Vec<(ReplyTo, Reply)>>> {
        if self.answerer.is_none() {
            let (sender, inbox) = mpsc::channel::<Vec<(ReplyTo, Reply)>>();
            // It ends once the driver (the only sender) is gone and the inbox is empty,
            // so every answer handed to it is delivered.
            let spawned = std::thread::Builder::new().name("wal-answer".to_string()).spawn(move || {
                short_time_slice();
                for answers in inbox {
                    for (reply, answer) in answers {
                        reply.send(answer);
                    }
                }
            });
            if spawned.is_ok() {
                self.answerer = Some(sender);
            }
        }
        self.answerer.as_ref()
    }

    fn perform(&mut self, action: Action) {
        let now = self.now();
        match action {
            Action::Persist(batch) if self.session.ring_admission(batch.id).is_some() => {
                // A ring's batch goes in only once the session admits it.
                self.ring_pending.push_back(batch);
                self.admit_ring_batches();
            }
            Action::Persist(batch) => {
                self.tracer.persist_started(now, &batch);
                let started = Instant::now();
                if let Some(completed) = self.last_completion.take() {
                    let mut stats = self.stats.lock().unwrap_or_else(|p| p.into_inner());
                    stats.handoffs += 1;
                    stats.handoff_ns_total += (started - completed).as_nanos() as u64;
                }
                self.persist_started.insert(batch.id, started);
                let done = Completion { batch: batch.id, events: self.events_tx.clone() };
                self.backend.persist(batch, done);
            }
            Action::Write(batch) => {
                // The unsafe policies: a failed write here is noticed by nobody,
                // which is exactly what makes them unsafe.
                let _ = self.backend.write_unsynced(&batch);
                self.session.recycle_buffer(batch.bytes);
            }
            Action::Sync { batch, .. } => {
                // Only the periodic policy asks for a bare sync; the native WALs do not
                // offer it, so report it done without durability claims.
                let _ = self.session.handle_persisted(now, batch, Err(SyncError::Unavailable));
            }
            Action::Ack(tickets) => {
                self.stats.lock().unwrap_or_else(|p| p.into_inner()).acked += tickets.count;
                for _ in 0..tickets.count {
                    let (ticket, reply, buffer) = self.waiting.pop_front().expect("an acknowledged ticket has a waiter");
                    assert!(tickets.contains(ticket), "acknowledgements arrive in ticket order");
                    self.outbox.push((reply, (Ok(ticket.0), buffer)));
                }
            }
            Action::Fail { tickets, error } => {
                self.stats.lock().unwrap_or_else(|p| p.into_inner()).failed += tickets.count;
                // With several batches in flight, batches submitted before the
                // failed one may still be acknowledged *after* this failure, so the
                // failed run is a suffix of the waiters, not always their front.
                let from = self.waiting.partition_point(|(ticket, _, _)| *ticket < tickets.first);
                let failed: Vec<_> = self.waiting.drain(from..).collect();
                assert_eq!(failed.len() as u64, tickets.count, "every failed ticket has a waiter");
                for (ticket, reply, buffer) in failed {
                    assert!(tickets.contains(ticket), "failures cover the waiters from their first ticket on");
                    self.outbox.push((reply, (Err(WalError::Failed(error)), buffer)));
                }
            }
        }
    }

    /// Removes the segments the session says every consumer and reader is done with.
    fn remove_segments(&mut self) {
        let Some(segments) = self.session.poll_removal() else { return };
        // A failed remove loses nothing: the segments stay, and the session names them
        // again after the next input.
        let removed = self.backend.remove_segments(&segments).is_ok();
        self.session.handle_removed(&segments, removed);
        if removed {
            self.stats.lock().unwrap_or_else(|p| p.into_inner()).segments_removed += segments.len() as u64;
            let now = self.now();
            self.tracer.removed(now, &segments);
        }
    }

    /// Tells the live feed how far every consumer and reader has confirmed, when that
    /// moved.
    fn pass_on_confirmation(&mut self) {
        let confirmed = self.session.confirmed();
        if confirmed > self.confirmed_seq {
            self.confirmed_seq = confirmed;
            self.tracer.confirmed(confirmed);
        }
    }

    /// A ring's waiting batches, asked again: inserted once admitted, failed (never
    /// inserted) once an earlier batch failed, kept while they wait for a slot or for
    /// the batches before them.
    fn admit_ring_batches(&mut self) {
        let mut still = VecDeque::new();
        // Bounded by the queue: each batch is asked once.
        while let Some(batch) = self.ring_pending.pop_front() {
            match self.session.ring_admission(batch.id).expect("a batch of the ring") {
                Admission::Insert => {
                    let now = self.now();
                    self.tracer.persist_started(now, &batch);
                    self.persist_started.insert(batch.id, Instant::now());
                    let done = Completion { batch: batch.id, events: self.events_tx.clone() };
                    self.backend.persist(batch, done);
                }
                Admission::Fail(error) => {
                    let now = self.now();
                    let known = self.session.handle_persisted(now, batch.id, Err(error));
                    debug_assert!(known.is_ok(), "a pending batch is in flight");
                    self.session.recycle_buffer(batch.bytes);
                }
                Admission::Wait(wait) => {
                    if wait == RingWait::Slot && !self.ring_waits_slot.contains(&batch.id.0) {
                        self.ring_waits_slot.push(batch.id.0);
                        let waits = {
                            let mut stats = self.stats.lock().unwrap_or_else(|p| p.into_inner());
                            stats.ring_waits += 1;
                            stats.ring_waits
                        };
                        if waits == 1 {
                            eprintln!(
                                "walab: {}: the ring is full: generation {} waits for its slot to be trimmed (only a consumer trims; load and dump never do)",
                                self.backend.describe(),
                                batch.segment
                            );
                        }
                    }
                    still.push_back(batch);
                }
            }
        }
        self.ring_pending = still;
        self.ring_waits_slot.retain(|id| self.ring_pending.iter().any(|batch| batch.id.0 == *id));
    }

    /// Hands a ring's trim to the backend when the session names one.
    fn trim_ring(&mut self) {
        if let Some(trim) = self.session.poll_trim() {
            let done = TrimDone { to: trim.to, events: self.events_tx.clone() };
            self.backend.trim_ring(trim, done);
        }
    }
}
