//! The WAL front-end: concurrent writers, the core's group-commit machine, a backend.
//!
//! # The shape
//!
//! ```text
//!  writer threads            driver thread (one per open WAL)               backend
//!  Writer::append ──Event::Append──▶ encode record (seq = ticket)
//!        ▲                           GroupCommit::handle_append ─┐
//!        │                           poll_action():              │
//!        │                             Persist(batch) ───────────┼──▶ persist(batch, Completion)
//!        │                                                       │      file: pwrite + fdatasync
//!        │                           Event::Persisted ◀──────────┼──── Completion::complete(result)
//!        │                           GroupCommit::handle_persisted
//!        └────── reply Ok(seq) ◀──── Ack(tickets) / Fail(tickets)
//! ```
//!
//! Every decision (what goes in a batch, when a batch may start, which writers may be
//! told OK, what happens after a failed persist) is made by
//! [`walab_core::group_commit::GroupCommit`], the same machine the browser's simulator
//! runs. This module is only its *driver*: it reads the clock, turns the machine's
//! actions into calls on a [`Backend`], and turns the backend's completions and the
//! writers' appends back into inputs. There is no second group-commit implementation
//! here, and none in any backend.
//!
//! # The backend seam
//!
//! A [`Backend`] knows how to recover what its storage durably holds and how to persist
//! one batch. Persisting is *completion-based*: [`Backend::persist`] receives the batch
//! and a [`Completion`], and calls [`Completion::complete`] when the storage has said
//! the bytes are durable (or that it failed). When it calls it does not matter:
//!
//! - the file backend writes each batch on the driver thread (`pwrite`, into the page
//!   cache, in log order) and syncs it one of two ways, which
//!   [`Backend::blocks_in_persist`] tells the driver before each persist:
//!   - *inline*, for a lone writer (a one-record batch after a one-record batch, no other
//!     sync in flight): `persist` blocks in `fdatasync` and completes before it returns.
//!     The driver answers the finished batch's writers *before* it syncs the next batch,
//!     and the appends that arrive during a sync queue in the channel. Between an append
//!     and its OK a lone writer crosses two thread hops (to the driver and back); an
//!     idle driver polls its channel for a few microseconds before it sleeps, and a lone
//!     writer polls for its answer, so neither hop usually costs a wake-up. A batch of
//!     many thread writers is answered by a thread of its own (`wal-answer`) while the
//!     driver syncs the next one: waking dozens of threads one by one would otherwise
//!     leave the disk idle.
//!   - *on a sync thread* ([`sync_pool`]), for every other batch: `persist` hands the
//!     `fdatasync` over and returns, and the machine (`inflight_max = 2`) lets the next
//!     batch be written and synced beside it, so the disk does not wait for the driver's
//!     work between two syncs.
//!
//!   With `--io-thread` the file backend runs on an I/O thread of its own instead
//!   ([`io_thread::OnThread`]), one sync at a time, and the driver issues each persist
//!   *before* it delivers the previous batch's acknowledgements.
//! - an S3 or Postgres backend owns a small tokio runtime, spawns the PUT or INSERT on
//!   it and completes from the task when the request returns, so several batches can be
//!   in flight (`inflight_max = 4`) while the driver keeps feeding the machine. The
//!   machine releases acknowledgements in submission order whatever order the
//!   completions arrive in.
//!
//! So the driver is runtime-agnostic (a plain thread and a channel) and async backends
//! bring their own runtime. A [`Writer`] (a thread) blocks on a reply channel of its own;
//! an [`AsyncWriter`] (a task) awaits a oneshot, so acknowledging a batch only queues
//! its tasks on their runtime, with no system call per writer: that is what lets a
//! thousand appenders share two cores. `load`, `dump`,
//! `bench` and `crash-test` use only [`Wal`] and [`Writer`], so a new backend gets all
//! four commands by implementing [`Backend`] and adding its URL scheme to [`url`].
//!
//! # Adding a backend (S3, Postgres)
//!
//! 1. Implement [`Backend`]: `recover` returns every durable record in seq order and
//!    `next_seq` (the machine resumes its tickets there); `segment_bytes_max` is
//!    `u64::MAX` unless the storage has segments; `persist` owns the batch, sends it
//!    (one PUT, one INSERT) and calls [`Completion::complete`] from wherever the answer
//!    arrives; `machine_config` returns `Config::remote(..)` for several batches in
//!    flight; `remove_segments` is trim. A batch's bytes are tiny-store records
//!    back to back; a remote backend wraps them in its own frame (the stream WAL frame).
//! 2. Add a [`url::WalUrl`] variant and its arm in [`url::WalArgs::backend`].
//!
//! `load`, `dump`, `bench` and `crash-test --kills` then work unchanged, and the
//! machine keeps acknowledgements in submission order whatever order completions
//! arrive in.
//!
//! # Records and sequence numbers
//!
//! Records use the tiny store's format ([`walab_core::codec::tiny`]): one record per
//! append, CRC32C over type and payload, the payload carrying seq, key and value. A
//! record's seq *is* its group-commit ticket: the machine is resumed after recovery with
//! `next_ticket = last recovered seq + 1`, and tickets are handed out in append order,
//! so seq order, ticket order, log order and acknowledgement order are all the same.
//!
//! # Failure
//!
//! A failed persist is fatal, as Part 3 of the teaching page demands: the machine fails
//! that batch's writers and every later one, and refuses every further append. The
//! [`Wal`] stays failed; the caller reopens it, which recovers from what the storage
//! holds (for files: read past the page cache, see [`fs`]).
//!
//! # Trim
//!
//! A consumer confirms the seq through which it has applied the log
//! ([`Wal::confirm_consumer`]) and readers register and confirm their own positions
//! ([`Wal::register_reader`], [`Wal::confirm_reader`]). A segment is removed only when
//! every record in it is at or below the consumer's position *and* every registered
//! reader's, and a newer segment holds records (so the next seq is never forgotten).
//! `load` and `dump` never confirm anything, so they never trim.

pub mod affinity;
pub mod fault_fs;
pub mod file;
pub mod fs;
pub mod io_thread;
pub mod leveldb_segment;
pub mod postgres;
pub mod s3;
pub mod sync_pool;
pub mod trace;
pub mod url;

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use walab_core::checksum::crc32c;
use walab_core::codec::tiny::{self, TinyRecord};
use walab_core::codec::varint::{put_varint, varint_len};
use walab_core::group_commit::{self, Action, AppendError, Batch, BatchId, GroupCommit, Policy, SyncError, Ticket};
use walab_core::time::Nanos;
use walab_core::trace::Trace;

use self::trace::TraceRecorder;

/// Why the WAL could not do what was asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WalError {
    /// The storage could not be opened, read or prepared: `subject: what`.
    Open(String),
    /// The log on the storage is damaged beyond a torn tail.
    Corrupt(String),
    /// A persist failed: this append's outcome is unknown, and the WAL takes no more
    /// appends until it is reopened.
    Failed(SyncError),
    /// The machine refused the append (backpressure, a record too large, ...).
    Refused(String),
    /// The WAL was closed.
    Closed,
}

impl fmt::Display for WalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WalError::Open(message) | WalError::Corrupt(message) => f.write_str(message),
            WalError::Failed(error) => write!(f, "persist failed, outcome unknown, log stopped: {error}"),
            WalError::Refused(message) => write!(f, "append refused: {message}"),
            WalError::Closed => f.write_str("the log is closed"),
        }
    }
}

impl std::error::Error for WalError {}

/// Caps glibc's malloc arenas at two, before a command starts its writer threads.
///
/// glibc gives threads their own allocation arenas (up to eight per core), and memory a
/// thread frees into its arena is rarely handed back. With 64 writer threads and a
/// driver that frees what writers allocated, a long run's resident memory then creeps
/// up for a minute before it levels off; with two arenas it stays flat from the first
/// second (measured with `walab bench --seconds 60`). No-op on other C libraries.
pub fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; called before the threads start.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
}

/// Lets the calling thread's timed waits end when asked. Linux stretches a thread's
/// timeouts by up to its timer slack, 50 us by default, to coalesce wake-ups; the driver's
/// only timeout is the machine's batch window, and a 200 us window then closed about 280 us
/// after its first record (measured on the Postgres WAL with `--trace`), 230 us with one
/// microsecond of slack. No-op elsewhere.
fn precise_timers() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_TIMERSLACK only sets this thread's timer slack.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0 as libc::c_ulong, 0 as libc::c_ulong, 0 as libc::c_ulong);
    }
}

/// Hands memory freed after recovery (the segment images, the scan) back to the
/// operating system, so a long run's resident set is the running WAL's, not the
/// recovery's. No-op on other C libraries.
fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free heap memory to the kernel.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Makes the calling thread `SCHED_BATCH` (Linux): its wake-ups never preempt a running
/// thread. The answering thread is woken by the driver just before the driver syncs; as
/// an ordinary thread it could take the driver's core at that moment and hold back the
/// sync it was about to issue. As a batch thread it runs once the driver blocks in the
/// sync, which is when its work is free. Lowering a thread's own policy needs no
/// privilege; where it fails, nothing changes.
fn yield_to_the_driver() {
    #[cfg(target_os = "linux")]
    // SAFETY: sched_setscheduler with pid 0 changes only the calling thread's policy.
    unsafe {
        let param = libc::sched_param { sched_priority: 0 };
        libc::sched_setscheduler(0, libc::SCHED_BATCH, &param);
    }
}

/// Maps an I/O error from a persist to the machine's failure kinds.
pub fn sync_error_of(error: &std::io::Error) -> SyncError {
    match error.raw_os_error() {
        Some(libc::ENOSPC) | Some(libc::EDQUOT) => SyncError::NoSpace,
        _ => SyncError::Io,
    }
}

/// What a backend found on its storage when the WAL was opened.
#[derive(Clone, Debug, Default)]
pub struct Recovered {
    /// Every durable record, in seq order.
    pub records: Vec<TinyRecord>,
    /// The seq the next append gets (last recovered seq + 1, or 1 for an empty log).
    pub next_seq: u64,
    /// Log position (record bytes since the log began, as far as the kept segments tell).
    pub lsn: u64,
    /// The segment appends continue in, and the bytes already used in it.
    pub segment: u64,
    pub segment_bytes: u64,
    /// For every kept segment, oldest first: its number and the seq of its last record
    /// (`None` when it holds none).
    pub segments: Vec<(u64, Option<u64>)>,
    /// A one-line note about what recovery repaired, if anything (a cut torn tail).
    pub repaired: Option<String>,
}

/// Tells the driver that a persist has returned. Cheap to move into another thread or task.
pub struct Completion {
    batch: BatchId,
    events: Sender<Event>,
}

impl Completion {
    /// Reports the persist's outcome, handing back the batch's buffer for reuse.
    pub fn complete(self, result: Result<(), SyncError>, buffer: Vec<u8>) {
        // A closed driver no longer cares; nothing to do then.
        let _ = self.events.send(Event::Persisted { batch: self.batch, result, buffer });
    }
}

/// One storage behind the WAL. See the module docs for the contract.
pub trait Backend: Send + 'static {
    /// The log's name in messages (`file:///data/wal/default/0`).
    fn describe(&self) -> String;
    /// Reads what the storage durably holds, repairs a torn tail, and gets ready to
    /// append. Called once, before anything else.
    fn recover(&mut self) -> Result<Recovered, WalError>;
    /// The most bytes a segment holds; the driver starts segment `n + 1` before a record
    /// would pass it. Backends without segments return `u64::MAX`.
    fn segment_bytes_max(&self) -> u64;
    /// Writes the batch at `batch.offset` of `batch.segment` and makes it durable; calls
    /// `done.complete` once it has (or has failed), inline or later.
    fn persist(&mut self, batch: Batch, done: Completion);
    /// Hands the batch to the storage *without* making it durable. Only the policies
    /// that acknowledge before syncing use it (the deliberately unsafe ones).
    fn write_unsynced(&mut self, batch: &Batch) -> Result<(), SyncError>;
    /// Removes these whole segments (all older than the segment being appended to).
    fn remove_segments(&mut self, segments: &[u64]) -> Result<(), WalError>;
    /// The group-commit settings this storage wants: one sync at a time for a local
    /// file (the default); an object store or database returns
    /// `Config::remote(Policy::Group)` (or a `Window` policy) for several batches in flight.
    fn machine_config(&self) -> group_commit::Config {
        group_commit::Config::file(Policy::Group)
    }
    /// Every consumer and reader has confirmed the records through `seq`. Called before
    /// [`Backend::remove_segments`] whenever that position moves; a backend that trims
    /// finer than whole segments (the Postgres WAL's trim offset) uses it, the others
    /// ignore it.
    fn confirmed(&mut self, _seq: u64) {}
    /// Whether `persist(batch)` would block until the storage has answered (and complete
    /// before it returns). The driver then delivers earlier answers before it persists; a
    /// backend that only starts the persist returns false (the default).
    fn blocks_in_persist(&self, _batch: &Batch) -> bool {
        false
    }
    /// The CPUs the driver should run on, because it syncs (see [`affinity`]); `None`
    /// (the default) leaves it wherever Linux puts it.
    fn sync_cpus(&self) -> Option<Vec<usize>> {
        None
    }
}

/// How a WAL is opened.
#[derive(Clone, Copy, Debug, Default)]
pub struct WalOptions {
    /// The machine's settings; `None` takes the backend's own
    /// ([`Backend::machine_config`]). Tests set [`Policy::NoSync`] here to build the
    /// deliberately broken WAL that acknowledges before it syncs.
    pub machine: Option<group_commit::Config>,
    /// Record the driver's trace (arrivals, batches, persists, acks) for `--trace`, in
    /// the core's trace format, keeping at most this many events.
    pub trace_events_max: Option<usize>,
}

/// Counters the driver keeps while it runs.
#[derive(Clone, Debug, Default)]
pub struct WalStats {
    /// Batches persisted successfully (one fdatasync each for files).
    pub persists_ok: u64,
    pub persists_failed: u64,
    /// Records acknowledged and failed.
    pub acked: u64,
    pub failed: u64,
    /// Sum of persist durations, issue to completion, in nanoseconds.
    pub persist_ns_total: u64,
    /// Hand-offs: a persist that started in the same round in which the previous one
    /// completed (records were waiting for it), and the time between that completion
    /// and this start, summed: the driver's own cost between two back-to-back syncs.
    pub handoffs: u64,
    pub handoff_ns_total: u64,
    /// Segments removed by trim.
    pub segments_removed: u64,
}

#[cfg_attr(not(test), allow(dead_code))]
enum Event {
    /// A framed record whose seq and CRC the driver fills in (see [`frame_unsequenced`]).
    Append { record: Vec<u8>, key_bytes: usize, reply: ReplyTo },
    Persisted { batch: BatchId, result: Result<(), SyncError>, buffer: Vec<u8> },
    ConfirmConsumer { seq: u64 },
    RegisterReader { name: String, seq: u64, reply: Sender<ReaderId> },
    ConfirmReader { reader: ReaderId, seq: u64 },
    Shutdown,
}

/// A registered reader (a replica, a backup shipper, a CDC client) that pins the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ReaderId(pub u64);

/// An open WAL. Dropping it shuts the driver down after in-flight batches finish.
pub struct Wal {
    events: Sender<Event>,
    /// Writers (threads and tasks) waiting for an answer (see `Writer::poll_for_reply`).
    waiting_writers: Arc<AtomicUsize>,
    /// The last persist's duration in nanoseconds: lone writers poll only while it is
    /// short (see `Writer::poll_for_reply`).
    last_persist_ns: Arc<AtomicU64>,
    /// Set by the driver as it goes away, normally or by a panic (see [`Writer::append`]).
    driver_gone: Arc<AtomicBool>,
    driver: Option<JoinHandle<DriverResult>>,
    stats: Arc<Mutex<WalStats>>,
    name: String,
    /// Where the driver runs, if it was pinned ([`Backend::sync_cpus`]).
    sync_cpus: Option<Vec<usize>>,
}

struct DriverResult {
    trace: Option<Trace>,
}

/// The driver's answer to an append, with the record's buffer handed back for reuse.
type Reply = (Result<u64, WalError>, Vec<u8>);

/// Where the driver sends an append's answer: a blocked writer thread's channel, or an
/// async writer's oneshot (whose send only queues the task on its runtime: no system
/// call per writer when a batch of a thousand is acknowledged).
enum ReplyTo {
    Thread(Sender<Reply>),
    Task(tokio::sync::oneshot::Sender<Reply>),
}

impl ReplyTo {
    fn send(self, reply: Reply) {
        // A writer that went away (an async append that was dropped) no longer cares.
        match self {
            ReplyTo::Thread(sender) => {
                let _ = sender.send(reply);
            }
            ReplyTo::Task(sender) => {
                let _ = sender.send(reply);
            }
        }
    }
}

/// Offset of the seq inside a tiny-store record (after the 7-byte header).
const SEQ_OFFSET: usize = tiny::HEADER_BYTES;

/// Frames a put as a tiny-store record with seq and CRC left zero, into `out` (cleared
/// first). The driver fills both in once the machine has given the record its ticket,
/// so the writer can build the bytes in its own reusable buffer: a steady run
/// allocates nothing per append.
pub fn frame_unsequenced(out: &mut Vec<u8>, key: &[u8], value: &[u8]) -> Result<(), WalError> {
    let payload_bytes = tiny::payload_len(key.len(), value.len());
    let length = u16::try_from(payload_bytes).map_err(|_| {
        WalError::Refused(format!("record payload of {payload_bytes} bytes exceeds the format's 65,535"))
    })?;
    out.clear();
    out.extend_from_slice(&[0, 0, 0, 0]);
    out.extend_from_slice(&length.to_le_bytes());
    out.push(tiny::TYPE_FULL);
    out.extend_from_slice(&[0; 8]);
    out.push(tiny::OP_PUT);
    put_varint(out, key.len() as u64);
    out.extend_from_slice(key);
    put_varint(out, value.len() as u64);
    out.extend_from_slice(value);
    debug_assert_eq!(out.len(), tiny::HEADER_BYTES + payload_bytes);
    Ok(())
}

/// Writes `seq` into a record made by [`frame_unsequenced`] and seals it with its CRC32C
/// (over the type byte and the payload, as the tiny format defines it).
pub fn seal_record(record: &mut [u8], seq: u64) {
    record[SEQ_OFFSET..SEQ_OFFSET + 8].copy_from_slice(&seq.to_le_bytes());
    let crc = crc32c(&[&[tiny::TYPE_FULL], &record[tiny::HEADER_BYTES..]]);
    record[..4].copy_from_slice(&crc.to_le_bytes());
}

/// One writer's handle: append and wait for the acknowledgement.
pub struct Writer {
    events: Sender<Event>,
    driver_gone: Arc<AtomicBool>,
    /// Writers waiting for an answer now (shared by every writer of the log).
    waiting_writers: Arc<AtomicUsize>,
    reply_tx: Sender<Reply>,
    reply_rx: Receiver<Reply>,
    buffer: Vec<u8>,
    /// The last persist's duration (ns), as the driver measured it.
    last_persist_ns: Arc<AtomicU64>,
}

impl Writer {
    /// Appends one put and blocks until it is durable (`Ok(seq)`) or its outcome is
    /// unknown (`Err(WalError::Failed)`).
    pub fn append(&mut self, key: &[u8], value: &[u8]) -> Result<u64, WalError> {
        let mut record = std::mem::take(&mut self.buffer);
        frame_unsequenced(&mut record, key, value)?;
        self.events
            .send(Event::Append { record, key_bytes: key.len(), reply: ReplyTo::Thread(self.reply_tx.clone()) })
            .map_err(|_| WalError::Closed)?;
        let alone = self.waiting_writers.fetch_add(1, Ordering::AcqRel) == 0;
        let reply = self.poll_for_reply(alone && storage_answers_within_the_poll(&self.last_persist_ns));
        let answer = match reply {
            Some(reply) => Ok(reply),
            None => self.wait_for_reply(),
        };
        self.waiting_writers.fetch_sub(1, Ordering::AcqRel);
        let (result, buffer) = answer?;
        self.buffer = buffer;
        result
    }

    /// A lone thread writer (no other writer waiting) polls for its answer for up to
    /// [`LONE_WRITER_POLL`] before it sleeps. Its answer comes one sync after its
    /// append; asleep, it would then pay a wake-up on top of the sync, which for a lone
    /// writer on a fast disk is a tenth of the sync again. The spin costs a core that has
    /// nothing else to do (the driver is blocked in the sync); with company, writers
    /// sleep at once, since they would only take cores from each other. While the
    /// storage takes longer than the poll to persist (a stalled disk, an S3 PUT), no
    /// writer polls. (The persist's own duration decides, not the writer's round trip:
    /// a writer that stopped polling would pay a wake-up, its round trip would grow past
    /// the poll, and it would never poll again.)
    fn poll_for_reply(&mut self, alone: bool) -> Option<Reply> {
        if !alone || !*MULTI_CORE {
            return None;
        }
        let started = Instant::now();
        while started.elapsed() < LONE_WRITER_POLL {
            match self.reply_rx.try_recv() {
                Ok(reply) => return Some(reply),
                // Yield, not spin: were the driver woken on this core it would wait for
                // the end of this thread's time slice (see `yield_to_a_waking_thread`).
                Err(mpsc::TryRecvError::Empty) => yield_to_a_waking_thread(),
                Err(mpsc::TryRecvError::Disconnected) => return None,
            }
            if self.waiting_writers.load(Ordering::Acquire) > 1 {
                return None;
            }
        }
        None
    }

    /// Waits for the driver's answer. Each writer holds a sender of its own reply
    /// channel, so a driver that died (a panic in a backend, say) would never close it:
    /// the wait also watches `driver_gone`, which the driver sets on its way out *before*
    /// it answers every append still queued. An append it never saw gets `Closed`.
    fn wait_for_reply(&mut self) -> Result<Reply, WalError> {
        loop {
            match self.reply_rx.recv_timeout(DRIVER_CHECK_INTERVAL) {
                Ok(reply) => return Ok(reply),
                Err(RecvTimeoutError::Disconnected) => return Err(WalError::Closed),
                Err(RecvTimeoutError::Timeout) => {
                    if self.driver_gone.load(Ordering::Acquire) {
                        // The driver answered whatever it saw before it went.
                        return self.reply_rx.recv_timeout(DRIVER_CHECK_INTERVAL).map_err(|_| WalError::Closed);
                    }
                }
            }
        }
    }
}

/// One async writer's handle, for writers that are tasks rather than threads (a
/// thousand appenders on a few cores). The same records, order and promises as
/// [`Writer`]; only the wait differs.
pub struct AsyncWriter {
    events: Sender<Event>,
    buffer: Vec<u8>,
    /// Writers waiting for an answer now (shared by every writer of the log).
    waiting_writers: Arc<AtomicUsize>,
    /// The last persist's duration (ns), as the driver measured it.
    last_persist_ns: Arc<AtomicU64>,
}

/// Counts a writer as waiting until dropped (also when an async append is abandoned).
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    /// Counts one more waiting writer; says whether it is the only one.
    fn start(count: &'a AtomicUsize) -> (Waiting<'a>, bool) {
        let alone = count.fetch_add(1, Ordering::AcqRel) == 0;
        (Waiting(count), alone)
    }

    fn alone(&self) -> bool {
        self.0.load(Ordering::Acquire) <= 1
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl AsyncWriter {
    /// Appends one put and resolves once it is durable (`Ok(seq)`) or its outcome is
    /// unknown (`Err(WalError::Failed)`). Dropping the future after the first poll does
    /// not withdraw the record: it may still be written and acknowledged to nobody.
    pub async fn append(&mut self, key: &[u8], value: &[u8]) -> Result<u64, WalError> {
        let mut record = std::mem::take(&mut self.buffer);
        frame_unsequenced(&mut record, key, value)?;
        let (reply, mut answer) = tokio::sync::oneshot::channel();
        self.events
            .send(Event::Append { record, key_bytes: key.len(), reply: ReplyTo::Task(reply) })
            .map_err(|_| WalError::Closed)?;
        let sent = Instant::now();
        let (waiting, alone) = Waiting::start(&self.waiting_writers);
        let mut polled = None;
        if alone && *MULTI_CORE && storage_answers_within_the_poll(&self.last_persist_ns) {
            // The lone writer's poll (see `Writer::poll_for_reply`), as a task: it yields
            // between looks, so its worker stays awake and the driver's answer needs no
            // wake-up, and other tasks still run.
            while sent.elapsed() < LONE_WRITER_POLL && waiting.alone() {
                match answer.try_recv() {
                    Ok(reply) => {
                        polled = Some(reply);
                        break;
                    }
                    // Only the runtime's yield: each round trip through its scheduler
                    // already enters the kernel (it polls its I/O driver). A
                    // `sched_yield` on top made the lone task slower, not faster:
                    // WAL p50 / raw p50 1.06-1.12 with it, 0.99-1.04 without
                    // (`walab bench --writers 1 --against-raw-ms 250`, alternating).
                    Err(tokio::sync::oneshot::error::TryRecvError::Empty) => tokio::task::yield_now().await,
                    Err(tokio::sync::oneshot::error::TryRecvError::Closed) => break,
                }
            }
        }
        // The driver answers every append it took, also on its way out (see its Drop);
        // a driver that died drops the sender, which ends this wait too.
        let answered = match polled {
            Some(reply) => Ok(reply),
            None => answer.await.map_err(|_| WalError::Closed),
        };
        drop(waiting);
        let (result, buffer) = answered?;
        self.buffer = buffer;
        result
    }
}

/// The fewest answers the driver hands to its answering thread rather than sending
/// them itself before a sync (see `Driver::deliver_answers`).
const ANSWERER_BATCH_MIN: usize = 8;

/// How long an idle driver polls for the next append before it sleeps (see
/// `Driver::spin_for_event`).
const IDLE_SPIN: Duration = Duration::from_micros(50);

/// One look of a poll loop: gives the core to any thread waiting for it. A poll that
/// only spins keeps its core until its time slice ends, and Linux's scheduler (EEVDF)
/// does not always preempt it for a thread it wakes there: a driver woken from its sync
/// on the core where a lone writer polled waited out the whole 500 us poll (traced with
/// `bench --trace`: 575 us between one sync's end and the next one's start, against 5 us).
fn yield_to_a_waking_thread() {
    std::thread::yield_now();
}

/// Whether the last persist took at most [`LONE_WRITER_POLL`], so that a lone writer's
/// poll is likely to catch its answer.
fn storage_answers_within_the_poll(last_persist_ns: &AtomicU64) -> bool {
    last_persist_ns.load(Ordering::Relaxed) <= LONE_WRITER_POLL.as_nanos() as u64
}

/// How long a lone writer polls for its answer before it sleeps.
const LONE_WRITER_POLL: Duration = Duration::from_micros(500);

/// Whether this machine has more than one core (polling on one core only delays the
/// thread being waited for).
static MULTI_CORE: std::sync::LazyLock<bool> =
    std::sync::LazyLock::new(|| std::thread::available_parallelism().is_ok_and(|n| n.get() > 1));

/// How often a waiting writer checks that the driver is still there.
const DRIVER_CHECK_INTERVAL: Duration = Duration::from_millis(100);

impl Wal {
    /// Recovers the backend's log and starts the driver. Returns the WAL and the records
    /// recovery found.
    pub fn open(mut backend: Box<dyn Backend>, options: WalOptions) -> Result<(Wal, Recovered), WalError> {
        let name = backend.describe();
        let sync_cpus = backend.sync_cpus();
        let recovered = backend.recover()?;
        release_free_memory();
        let machine_config = options.machine.unwrap_or_else(|| backend.machine_config());
        let machine = GroupCommit::resume(
            machine_config,
            Ticket(recovered.next_seq),
            recovered.lsn,
            recovered.segment,
            recovered.segment_bytes,
        )
        .map_err(|error| WalError::Open(format!("{name}: {error}")))?;
        let (events_tx, events_rx) = mpsc::channel();
        let stats = Arc::new(Mutex::new(WalStats::default()));
        let mut segment_last_seq = BTreeMap::new();
        for &(segment, last) in &recovered.segments {
            segment_last_seq.insert(segment, last);
        }
        segment_last_seq.entry(recovered.segment).or_insert(None);
        let recovered_segment_bytes_max = backend.segment_bytes_max();
        let driver_gone = Arc::new(AtomicBool::new(false));
        let last_persist_ns = Arc::new(AtomicU64::new(0));
        let driver = Driver {
            driver_gone: Arc::clone(&driver_gone),
            last_persist_ns: Arc::clone(&last_persist_ns),
            machine,
            backend,
            events_tx: events_tx.clone(),
            events_rx,
            waiting: VecDeque::new(),
            started: Instant::now(),
            segment: recovered.segment,
            segment_bytes: recovered.segment_bytes,
            segment_last_seq,
            persist_started: BTreeMap::new(),
            consumer_seq: 0,
            confirmed_seq: 0,
            readers: BTreeMap::new(),
            next_reader: 1,
            stats: Arc::clone(&stats),
            trace: options.trace_events_max.map(|events_max| {
                let policy = walab_core::sim::commit::policy_name(&machine_config.policy);
                TraceRecorder::new("native-file", policy, recovered.next_seq, recovered_segment_bytes_max, events_max)
            }),
            shutting_down: false,
            spin: std::thread::available_parallelism().is_ok_and(|n| n.get() > 1),
            last_completion: None,
            outbox: Vec::new(),
            answerer: None,
        };
        let pin_to = sync_cpus.clone();
        let handle = std::thread::Builder::new()
            .name("wal-driver".to_string())
            .spawn(move || driver.run(pin_to))
            .map_err(|error| WalError::Open(format!("{name}: cannot start the driver thread: {error}")))?;
        Ok((
            Wal {
                events: events_tx,
                waiting_writers: Arc::default(),
                last_persist_ns,
                driver_gone,
                driver: Some(handle),
                stats,
                name,
                sync_cpus,
            },
            recovered,
        ))
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The CPUs the driver (and the backend's sync threads) run on, if pinned.
    pub fn sync_cpus(&self) -> Option<&[usize]> {
        self.sync_cpus.as_deref()
    }

    /// A new writer handle (one per writer thread).
    pub fn writer(&self) -> Writer {
        let (reply_tx, reply_rx) = mpsc::channel();
        Writer {
            events: self.events.clone(),
            driver_gone: Arc::clone(&self.driver_gone),
            waiting_writers: Arc::clone(&self.waiting_writers),
            reply_tx,
            reply_rx,
            buffer: Vec::new(),
            last_persist_ns: Arc::clone(&self.last_persist_ns),
        }
    }

    /// A new async writer handle (one per writer task).
    pub fn async_writer(&self) -> AsyncWriter {
        AsyncWriter {
            events: self.events.clone(),
            buffer: Vec::new(),
            waiting_writers: Arc::clone(&self.waiting_writers),
            last_persist_ns: Arc::clone(&self.last_persist_ns),
        }
    }

    /// The consumer has applied everything through `seq`.
    pub fn confirm_consumer(&self, seq: u64) {
        let _ = self.events.send(Event::ConfirmConsumer { seq });
    }

    #[cfg_attr(not(test), allow(dead_code))] // bench plays only the consumer today
    /// Registers a reader positioned after `seq`; the log keeps what it has not confirmed.
    pub fn register_reader(&self, name: &str, seq: u64) -> Result<ReaderId, WalError> {
        let (reply, answer) = mpsc::channel();
        self.events
            .send(Event::RegisterReader { name: name.to_string(), seq, reply })
            .map_err(|_| WalError::Closed)?;
        answer.recv().map_err(|_| WalError::Closed)
    }

    #[cfg_attr(not(test), allow(dead_code))]
    /// A reader has read everything through `seq`.
    pub fn confirm_reader(&self, reader: ReaderId, seq: u64) {
        let _ = self.events.send(Event::ConfirmReader { reader, seq });
    }

    /// A snapshot of the driver's counters.
    pub fn stats(&self) -> WalStats {
        self.stats.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Waits for in-flight batches, stops the driver, and returns its trace (`None`
    /// unless tracing was on).
    pub fn close(mut self) -> Option<Trace> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> Option<Trace> {
        let _ = self.events.send(Event::Shutdown);
        self.driver.take().and_then(|handle| handle.join().ok()).and_then(|result| result.trace)
    }
}

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

impl Drop for Wal {
    fn drop(&mut self) {
        self.shutdown();
    }
}

struct Driver {
    /// Shared with the writers: see [`Wal::last_persist_ns`].
    last_persist_ns: Arc<AtomicU64>,
    machine: GroupCommit,
    backend: Box<dyn Backend>,
    events_tx: Sender<Event>,
    events_rx: Receiver<Event>,
    /// Writers waiting for their acknowledgement, in ticket order.
    waiting: VecDeque<(Ticket, ReplyTo, Vec<u8>)>,
    started: Instant,
    /// The segment appends go to, and the bytes appended to it.
    segment: u64,
    segment_bytes: u64,
    /// Every kept segment's last seq (None while empty).
    segment_last_seq: BTreeMap<u64, Option<u64>>,
    /// When each running persist was issued.
    persist_started: BTreeMap<BatchId, Instant>,
    consumer_seq: u64,
    /// The last position passed to [`Backend::confirmed`].
    confirmed_seq: u64,
    readers: BTreeMap<ReaderId, (String, u64)>,
    next_reader: u64,
    stats: Arc<Mutex<WalStats>>,
    trace: Option<TraceRecorder>,
    shutting_down: bool,
    /// Whether an idle driver may poll before sleeping (more than one core).
    spin: bool,
    /// When a persist completed in the current round (see [`WalStats::handoffs`]).
    last_completion: Option<Instant>,
    /// Answers decided in this round, not yet sent.
    outbox: Vec<(ReplyTo, Reply)>,
    /// The thread that sends large batches' answers while the driver syncs.
    answerer: Option<Sender<Vec<(ReplyTo, Reply)>>>,
    /// Set when this driver goes away; see [`Writer::append`].
    driver_gone: Arc<AtomicBool>,
}

impl Driver {
    fn now(&self) -> Nanos {
        Nanos(self.started.elapsed().as_nanos() as u64)
    }

    /// Records into the trace, if one is kept.
    fn record(&mut self, f: impl FnOnce(&mut TraceRecorder, Nanos)) {
        let now = self.now();
        if let Some(trace) = &mut self.trace {
            f(trace, now);
        }
    }

    fn run(mut self, pin_to: Option<Vec<usize>>) -> DriverResult {
        precise_timers();
        if let Some(cpus) = &pin_to {
            // The driver syncs inline (a lone writer's batches): where the device's
            // completions land, like the sync threads (see `affinity`).
            affinity::pin_current_thread(cpus);
        }
        loop {
            // Wait for the next input, or for the machine's deadline.
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
            if self.machine.poll_timeout().is_some_and(|deadline| deadline <= now) {
                self.machine.handle_timeout(now);
            }
            self.perform_actions();
            self.last_completion = None;
            self.trim();
            if self.shutting_down && self.waiting.is_empty() && self.machine.running() == 0 {
                break;
            }
        }
        // Anyone still waiting (the channel closed under them) learns the log is closed.
        for (_, reply, buffer) in self.waiting.drain(..) {
            reply.send((Err(WalError::Closed), buffer));
        }
        DriverResult { trace: self.trace.take().map(TraceRecorder::finish) }
    }

    /// When the log is idle (every append answered, nothing in flight) the writers just
    /// told OK are about to append again: polling the channel for a few microseconds
    /// catches that append without the driver falling asleep and being woken, which
    /// on a small machine costs as much again as the hop itself. Never while writers
    /// wait (they need the cores more), and never on a single core.
    fn spin_for_event(&mut self) -> Option<Result<Option<Event>, ()>> {
        if !self.spin || !self.waiting.is_empty() || self.machine.running() != 0 || self.shutting_down {
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

    /// Blocks for the next input, or until the machine's deadline (`Ok(None)`).
    /// `Err` once every sender is gone.
    fn wait_for_event(&mut self) -> Result<Option<Event>, ()> {
        match self.machine.poll_timeout() {
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
        match event {
            Event::Append { record, key_bytes, reply } => self.append(record, key_bytes, reply),
            Event::Persisted { batch, result, buffer } => {
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
                self.record(|trace, at| trace.persist_end(at, batch, result));
                self.last_completion = Some(Instant::now());
                self.machine.recycle_buffer(buffer);
                // An unknown batch would be a driver bug; the machine reports it as data.
                let known = self.machine.handle_persisted(now, batch, result);
                debug_assert!(known.is_ok(), "completion for a batch the machine never issued");
            }
            Event::ConfirmConsumer { seq } => self.consumer_seq = self.consumer_seq.max(seq),
            Event::RegisterReader { name, seq, reply } => {
                let id = ReaderId(self.next_reader);
                self.next_reader += 1;
                self.readers.insert(id, (name, seq));
                let _ = reply.send(id);
            }
            Event::ConfirmReader { reader, seq } => {
                if let Some(entry) = self.readers.get_mut(&reader) {
                    entry.1 = entry.1.max(seq);
                    let name = entry.0.clone();
                    self.record(|trace, at| trace.reader_confirmed(at, &name, seq));
                }
            }
            Event::Shutdown => self.shutting_down = true,
        }
    }

    fn append(&mut self, mut record: Vec<u8>, key_bytes: usize, reply: ReplyTo) {
        if self.shutting_down {
            reply.send((Err(WalError::Closed), record));
            return;
        }
        let record_bytes = record.len() as u64;
        if record_bytes > self.backend.segment_bytes_max() {
            let refusal = WalError::Refused(format!(
                "record of {record_bytes} bytes exceeds the segment size {}",
                self.backend.segment_bytes_max()
            ));
            reply.send((Err(refusal), record));
            return;
        }
        let seq = self.machine.next_ticket().0;
        seal_record(&mut record, seq);
        let (segment, segment_bytes) = if self.segment_bytes + record_bytes > self.backend.segment_bytes_max() {
            (self.segment + 1, 0)
        } else {
            (self.segment, self.segment_bytes)
        };
        let now = self.now();
        match self.machine.handle_append(now, segment, &record) {
            Ok(ticket) => {
                assert_eq!(ticket.0, seq, "a record's seq is its ticket");
                self.segment = segment;
                self.segment_bytes = segment_bytes + record_bytes;
                self.segment_last_seq.entry(segment).or_insert(None);
                if self.trace.is_some() {
                    let key_start = SEQ_OFFSET + 8 + 1 + varint_len(key_bytes as u64);
                    let key = record[key_start..key_start + key_bytes].to_vec();
                    self.record(|trace, at| trace.arrive(at, seq, segment, record_bytes, &key));
                }
                self.waiting.push_back((ticket, reply, record));
            }
            Err(AppendError::Failed(error)) => {
                reply.send((Err(WalError::Failed(error)), record));
            }
            Err(other) => {
                reply.send((Err(WalError::Refused(other.to_string())), record));
            }
        }
    }

    /// Performs the machine's actions. With a backend that returns from `persist` at
    /// once (an I/O thread, a runtime), persists are issued first and acknowledgements
    /// delivered after, so the next sync runs while the previous batch's writers are
    /// being woken. With one that blocks in `persist` (the inline file backend), the
    /// answers go first: otherwise a batch's writers would wait out the next sync too.
    /// Acks and fails keep their order among themselves, which is all the machine's
    /// ordering promise needs.
    fn perform_actions(&mut self) {
        let (mut answers, mut others): (Vec<Action>, Vec<Action>) = (Vec::new(), Vec::new());
        while let Some(action) = self.machine.poll_action() {
            if matches!(action, Action::Ack(_) | Action::Fail { .. }) {
                answers.push(action);
            } else {
                others.push(action);
            }
        }
        let sync_follows =
            others.iter().any(|action| matches!(action, Action::Persist(batch) if self.backend.blocks_in_persist(batch)));
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

    /// Sends the answers the machine decided. When the driver is about to block in a
    /// sync, a large batch's answers go to the answering thread instead, so that waking
    /// its writers (a wake-up each, which under load can cost microseconds apiece and
    /// get the driver preempted) overlaps the sync instead of delaying it. A few answers
    /// are sent at once: the extra hop would cost a lone writer more than it saves.
    fn deliver_answers(&mut self, sync_follows: bool) {
        if self.outbox.is_empty() {
            return;
        }
        if sync_follows && self.outbox.len() >= ANSWERER_BATCH_MIN {
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
                yield_to_the_driver();
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
        {
            let now = self.now();
            match action {
                Action::Persist(batch) => {
                    self.record(|trace, at| trace.persist_start(at, &batch));
                    if let Some(last) = batch.tickets.last() {
                        self.segment_last_seq.insert(batch.segment, Some(last.0));
                    }
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
                    if let Some(last) = batch.tickets.last() {
                        self.segment_last_seq.insert(batch.segment, Some(last.0));
                    }
                    // The unsafe policies: a failed write here is noticed by nobody,
                    // which is exactly what makes them unsafe.
                    let _ = self.backend.write_unsynced(&batch);
                    self.machine.recycle_buffer(batch.bytes);
                }
                Action::Sync { batch, .. } => {
                    // Only the periodic policy asks for a bare sync; the file WAL does
                    // not offer it, so report it done without durability claims.
                    let _ = self.machine.handle_persisted(now, batch, Err(SyncError::Unavailable));
                }
                Action::Ack(tickets) => {
                    self.record(|trace, at| trace.ack(at, tickets));
                    self.stats.lock().unwrap_or_else(|p| p.into_inner()).acked += tickets.count;
                    for _ in 0..tickets.count {
                        let (ticket, reply, buffer) =
                            self.waiting.pop_front().expect("an acknowledged ticket has a waiter");
                        assert!(tickets.contains(ticket), "acknowledgements arrive in ticket order");
                        self.outbox.push((reply, (Ok(ticket.0), buffer)));
                    }
                }
                Action::Fail { tickets, error } => {
                    self.record(|trace, at| trace.fail(at, tickets, error));
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
    }

    /// Removes the segments every consumer and reader is done with.
    fn trim(&mut self) {
        let confirmed = self.readers.values().map(|(_, seq)| *seq).fold(self.consumer_seq, u64::min);
        if confirmed == 0 {
            return;
        }
        if confirmed > self.confirmed_seq {
            self.confirmed_seq = confirmed;
            self.backend.confirmed(confirmed);
        }
        let newest_with_records = self.segment_last_seq.iter().rev().find(|(_, last)| last.is_some()).map(|(s, _)| *s);
        let Some(newest_with_records) = newest_with_records else { return };
        let removable: Vec<u64> = self
            .segment_last_seq
            .iter()
            .take_while(|(segment, _)| **segment < newest_with_records && **segment < self.segment)
            .take_while(|(_, last)| last.is_none_or(|last| last <= confirmed))
            .map(|(segment, _)| *segment)
            .collect();
        if removable.is_empty() {
            return;
        }
        match self.backend.remove_segments(&removable) {
            Ok(()) => {
                for segment in &removable {
                    self.segment_last_seq.remove(segment);
                }
                self.stats.lock().unwrap_or_else(|p| p.into_inner()).segments_removed += removable.len() as u64;
                self.record(|trace, at| {
                    for &segment in &removable {
                        trace.delete(at, segment);
                    }
                });
            }
            Err(_) => {
                // A failed remove loses nothing: the segment stays and is retried at the
                // next trim.
            }
        }
    }
}

#[cfg(test)]
mod tests;
