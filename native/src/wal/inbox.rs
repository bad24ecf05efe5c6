//! What reaches the driver thread: the one channel every writer, backend and handle
//! sends into ([`Event`]), the answer an append gets back ([`Reply`], [`ReplyTo`]), and
//! the handle a backend completes a persist with ([`Completion`]).
//!
//! These types are the seam's vocabulary and import nothing of the WAL but its error,
//! so the driver, the writers, the handle and the backends all depend on this module
//! and none of them on each other's insides.

use std::sync::mpsc::Sender;

use walab_core::group_commit::{BatchId, SyncError};
use walab_core::session::retention::ReaderId;

use super::error::WalError;

/// One input of the driver.
pub(crate) enum Event {
    /// A framed record whose seq and CRC the driver fills in (see
    /// [`super::frame_unsequenced`]), with its key's length for the trace.
    Append { record: Vec<u8>, key_bytes: usize, reply: ReplyTo },
    /// A persist returned, with the batch's buffer for reuse.
    Persisted { batch: BatchId, result: Result<(), SyncError>, buffer: Vec<u8> },
    /// A ring's trim to `to` returned.
    Trimmed { to: u64, result: Result<(), SyncError> },
    ConfirmConsumer { seq: u64 },
    RegisterReader { name: String, seq: u64, reply: Sender<ReaderId> },
    ConfirmReader { reader: ReaderId, seq: u64 },
    Shutdown,
}

/// The driver's answer to an append, with the record's buffer handed back for reuse.
pub(crate) type Reply = (Result<u64, WalError>, Vec<u8>);

/// Where the driver sends an append's answer: a blocked writer thread's channel, or an
/// async writer's oneshot (whose send only queues the task on its runtime: no system
/// call per writer when a batch of a thousand is acknowledged).
pub(crate) enum ReplyTo {
    Thread(Sender<Reply>),
    Task(tokio::sync::oneshot::Sender<Reply>),
}

impl ReplyTo {
    pub(crate) fn send(self, reply: Reply) {
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

/// Tells the driver that a persist has returned. Cheap to move into another thread or task.
pub struct Completion {
    pub(crate) batch: BatchId,
    pub(crate) events: Sender<Event>,
}

impl Completion {
    /// Reports the persist's outcome, handing back the batch's buffer for reuse.
    pub fn complete(self, result: Result<(), SyncError>, buffer: Vec<u8>) {
        // A closed driver no longer cares; nothing to do then.
        let _ = self.events.send(Event::Persisted { batch: self.batch, result, buffer });
    }
}

/// Tells the driver that a ring's trim has returned (see [`super::Backend::trim_ring`]).
pub struct TrimDone {
    pub(crate) to: u64,
    pub(crate) events: Sender<Event>,
}

impl TrimDone {
    /// Reports the trim's outcome: done, or refused (a fence).
    pub fn complete(self, result: Result<(), SyncError>) {
        let _ = self.events.send(Event::Trimmed { to: self.to, result });
    }
}
