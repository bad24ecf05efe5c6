//! A backend on its own I/O thread, so the driver never blocks in a sync (`--io-thread`;
//! by default the file backend syncs inline on the driver thread).
//!
//! The file backend's calls block: `pwrite` and `fdatasync` return when the device has
//! answered. Run on the driver thread, that would serialize two things group commit
//! wants to overlap: the sync of batch *n + 1* and the work of telling batch *n*'s
//! writers OK (a wake-up per writer, which on a small machine costs as much as a fast
//! sync). [`OnThread`] moves a blocking backend onto a thread of its own: `persist`
//! hands the batch over and returns at once, the I/O thread completes it, and the driver
//! spends the sync waking the previous batch's writers. Every other call (recovery,
//! trim, unsynced writes) waits for its answer. There is still one batch in flight at a
//! time: that is the machine's `inflight_max = 1`, not this thread's business.

use std::sync::mpsc::{self, Sender};
use std::thread::JoinHandle;

use walab_core::group_commit::{Batch, SyncError};

use crate::wal::{Backend, Completion, Recovered, WalError};

enum Job {
    Recover(Sender<Result<Recovered, WalError>>),
    Persist(Batch, Completion),
    WriteUnsynced(Batch, Sender<Result<(), SyncError>>),
    Remove(Vec<u64>, Sender<Result<(), WalError>>),
}

/// A blocking backend driven from its own thread.
pub struct OnThread {
    jobs: Option<Sender<Job>>,
    thread: Option<JoinHandle<()>>,
    name: String,
    segment_bytes_max: u64,
    machine_config: walab_core::group_commit::Config,
    /// Where the I/O thread runs (the inner backend's choice).
    sync_cpus: Option<Vec<usize>>,
}

impl OnThread {
    /// Starts the I/O thread that owns `inner`.
    pub fn new(mut inner: Box<dyn Backend>) -> Result<OnThread, WalError> {
        let name = inner.describe();
        let segment_bytes_max = inner.segment_bytes_max();
        let machine_config = inner.machine_config();
        let sync_cpus = inner.sync_cpus();
        let pin_to = sync_cpus.clone();
        let (jobs, inbox) = mpsc::channel::<Job>();
        let thread = std::thread::Builder::new()
            .name("wal-io".to_string())
            .spawn(move || {
                if let Some(cpus) = pin_to {
                    super::affinity::pin_current_thread(&cpus);
                }
                for job in inbox {
                    match job {
                        Job::Recover(answer) => {
                            let _ = answer.send(inner.recover());
                        }
                        Job::Persist(batch, done) => inner.persist(batch, done),
                        Job::WriteUnsynced(batch, answer) => {
                            let _ = answer.send(inner.write_unsynced(&batch));
                        }
                        Job::Remove(segments, answer) => {
                            let _ = answer.send(inner.remove_segments(&segments));
                        }
                    }
                }
            })
            .map_err(|error| WalError::Open(format!("{name}: cannot start the i/o thread: {error}")))?;
        Ok(OnThread { jobs: Some(jobs), thread: Some(thread), name, segment_bytes_max, machine_config, sync_cpus })
    }

    fn send(&self, job: Job) -> bool {
        self.jobs.as_ref().is_some_and(|jobs| jobs.send(job).is_ok())
    }
}

impl Backend for OnThread {
    fn describe(&self) -> String {
        self.name.clone()
    }

    fn recover(&mut self) -> Result<Recovered, WalError> {
        let (answer, result) = mpsc::channel();
        if !self.send(Job::Recover(answer)) {
            return Err(WalError::Open(format!("{}: the i/o thread is gone", self.name)));
        }
        result.recv().unwrap_or_else(|_| Err(WalError::Open(format!("{}: the i/o thread is gone", self.name))))
    }

    fn segment_bytes_max(&self) -> u64 {
        self.segment_bytes_max
    }

    fn machine_config(&self) -> walab_core::group_commit::Config {
        self.machine_config
    }

    fn sync_cpus(&self) -> Option<Vec<usize>> {
        self.sync_cpus.clone()
    }

    fn persist(&mut self, batch: Batch, done: Completion) {
        let Some(jobs) = &self.jobs else {
            done.complete(Err(SyncError::Unavailable), batch.bytes);
            return;
        };
        if let Err(mpsc::SendError(Job::Persist(batch, done))) = jobs.send(Job::Persist(batch, done)) {
            // The thread died (a panic in the backend): the persist did not happen.
            done.complete(Err(SyncError::Unavailable), batch.bytes);
        }
    }

    fn write_unsynced(&mut self, batch: &Batch) -> Result<(), SyncError> {
        let (answer, result) = mpsc::channel();
        if !self.send(Job::WriteUnsynced(batch.clone(), answer)) {
            return Err(SyncError::Unavailable);
        }
        result.recv().unwrap_or(Err(SyncError::Unavailable))
    }

    fn remove_segments(&mut self, segments: &[u64]) -> Result<(), WalError> {
        let (answer, result) = mpsc::channel();
        if !self.send(Job::Remove(segments.to_vec(), answer)) {
            return Err(WalError::Open(format!("{}: the i/o thread is gone", self.name)));
        }
        result.recv().unwrap_or_else(|_| Err(WalError::Open(format!("{}: the i/o thread is gone", self.name))))
    }
}

impl Drop for OnThread {
    fn drop(&mut self) {
        // Closing the channel ends the thread after its last job; the inner backend
        // (and its lock on the log) is released when it ends.
        self.jobs.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
