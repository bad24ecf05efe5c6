//! The writers' side: [`Writer`] (a thread) and [`AsyncWriter`] (a task) append one
//! record and wait for the driver's answer.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use walab_core::codec::tiny;

use super::error::WalError;
use super::inbox::{Event, Reply, ReplyTo};
use super::os::{tuned, yield_to_a_waking_thread, Tuning};

/// Frames a put as a tiny-store record with seq and CRC left zero, into `out` (cleared
/// first); the driver seals it ([`seal_record`]) once the machine has given it its ticket.
pub fn frame_unsequenced(out: &mut Vec<u8>, key: &[u8], value: &[u8]) -> Result<(), WalError> {
    tiny::encode_unsequenced_put(out, key, value).map_err(|error| WalError::Refused(error.to_string()))
}

/// Writes `seq` into a record made by [`frame_unsequenced`] and seals it with its CRC32C.
pub fn seal_record(record: &mut [u8], seq: u64) {
    tiny::seal(record, seq)
}

/// One writer's handle: append and wait for the acknowledgement.
pub struct Writer {
    pub(super) events: Sender<Event>,
    pub(super) driver_gone: Arc<AtomicBool>,
    /// Writers waiting for an answer now (shared by every writer of the log).
    pub(super) waiting_writers: Arc<AtomicUsize>,
    pub(super) reply_tx: Sender<Reply>,
    pub(super) reply_rx: Receiver<Reply>,
    pub(super) buffer: Vec<u8>,
    /// The last persist's duration (ns), as the driver measured it.
    pub(super) last_persist_ns: Arc<AtomicU64>,
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
    pub(super) events: Sender<Event>,
    pub(super) buffer: Vec<u8>,
    /// Writers waiting for an answer now (shared by every writer of the log).
    pub(super) waiting_writers: Arc<AtomicUsize>,
    /// The last persist's duration (ns), as the driver measured it.
    pub(super) last_persist_ns: Arc<AtomicU64>,
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
                    // already enters the kernel (it polls its I/O driver), and a
                    // `sched_yield` on top made the lone task slower (BENCHMARKS.md).
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
    /// Sends one put to the driver now and returns its pending answer, for a caller that
    /// must fix the order of its appends under a lock and wait outside it (the stream
    /// store: offsets are assigned and records submitted under the stream's lock). Appends
    /// submitted one after another reach the WAL in that order. The record cannot be
    /// withdrawn once submitted: dropping the [`PendingAppend`] only stops listening.
    pub fn submit(&self, key: &[u8], value: &[u8]) -> Result<PendingAppend, WalError> {
        let mut record = Vec::new();
        frame_unsequenced(&mut record, key, value)?;
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.events
            .send(Event::Append { record, key_bytes: key.len(), reply: ReplyTo::Task(reply) })
            .map_err(|_| WalError::Closed)?;
        Ok(PendingAppend { answer })
    }
}

/// The answer to an append made by [`AsyncWriter::submit`].
pub struct PendingAppend {
    answer: tokio::sync::oneshot::Receiver<Reply>,
}

impl PendingAppend {
    /// Resolves once the record is durable (`Ok(seq)`) or its outcome is unknown
    /// (`Err(WalError::Failed)`). The driver answers every append it took, also on its
    /// way out; a driver that died drops the sender, which ends the wait with `Closed`.
    pub async fn durable(self) -> Result<u64, WalError> {
        match self.answer.await {
            Ok((result, _buffer)) => result,
            Err(_) => Err(WalError::Closed),
        }
    }
}


/// Whether the last persist took at most [`LONE_WRITER_POLL`], so that a lone writer's
/// poll is likely to catch its answer.
fn storage_answers_within_the_poll(last_persist_ns: &AtomicU64) -> bool {
    tuned(Tuning::WriterPoll) && last_persist_ns.load(Ordering::Relaxed) <= LONE_WRITER_POLL.as_nanos() as u64
}

/// How long a lone writer polls for its answer before it sleeps.
const LONE_WRITER_POLL: Duration = Duration::from_micros(500);

/// Whether this machine has more than one core (polling on one core only delays the
/// thread being waited for).
static MULTI_CORE: std::sync::LazyLock<bool> =
    std::sync::LazyLock::new(|| std::thread::available_parallelism().is_ok_and(|n| n.get() > 1));

/// How often a waiting writer checks that the driver is still there.
const DRIVER_CHECK_INTERVAL: Duration = Duration::from_millis(100);

