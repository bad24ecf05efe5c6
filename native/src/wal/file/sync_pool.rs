//! Several syncs of one file log in flight at once (`--inflight N`, the default for
//! `file://`).
//!
//! # Why
//!
//! With one sync at a time, the disk idles between two of them: the driver must take
//! the sync's answer, tell its writers OK, seal the records that arrived meanwhile,
//! write them and only then sync again. That gap is 10-40 us on a small machine, and
//! against a 150 us overwrite sync it leaves a tenth of the disk's sync rate unused. So
//! the file backend writes each batch on the driver thread (`pwrite`, into the page
//! cache, in log order) and hands the `fdatasync` to one of `N` sync threads. While one
//! batch syncs, the next one is written and its sync issued beside it. The group-commit
//! machine does what it does for S3 and Postgres: at most `inflight_max = N` batches in
//! flight, a batch runs beside another only once it holds
//! [`walab_core::group_commit::Config::pipeline_min_records`] records, and
//! acknowledgements are released in log order, whatever order the syncs return in.
//!
//! # Why it is safe
//!
//! - `fdatasync` makes durable every page of the file that was dirty, or under
//!   write-back, when it was called, so a sync issued after batch *k + 1* was written
//!   covers it (and batch *k* too). Each batch is acknowledged only after *its own*
//!   sync returned, and after every earlier batch was acknowledged.
//! - A failed sync fails its batch and every later one (the machine's fail-stop), even
//!   one whose own sync already returned OK: after a write-back error the kernel marks
//!   the lost pages clean, so a later sync that "succeeds" proves nothing.
//! - The error must reach the sync of the batch whose pages were lost. Linux reports a
//!   write-back error once per *open file description* (`errseq_t`), to whichever sync
//!   of that description comes next. Two threads syncing through one description (or a
//!   `dup` of it) could see the error go to the other one, which might be syncing a
//!   *later* batch, while the earlier batch's sync returns 0. So every sync thread syncs
//!   through an open of its own ([`SyncHandles`]), made when the segment becomes the
//!   one appended to, before any batch is written to it: every error after that
//!   reaches every handle. And since a handle, once it has told one sync, tells no
//!   other, the first failure is also recorded beside the handles, before the failed
//!   handle is reused: every later sync of the segment reports it. Tests drive the pool
//!   over [`super::fault_fs::FaultFs`], which models `errseq_t` per open, and the
//!   power-loss crash test runs with sync threads.
//!
//! # When not
//!
//! A batch smaller than the pipelining threshold is synced inline by the driver when no
//! pooled sync is in flight: a lone writer then crosses no extra thread hop (see
//! [`super::FileBackend`]).

use std::collections::VecDeque;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use walab_core::group_commit::SyncError;

use super::fs::{WalFile, WalFs};
use crate::wal::{sync_error_of, Completion};

/// One segment's handles for the sync threads: separate opens of the file, one per
/// thread, made before the first batch is written to the segment.
pub struct SyncHandles {
    free: Mutex<Vec<Box<dyn WalFile>>>,
    /// Set once a sync of this segment has failed: every later sync of it reports the
    /// failure too (see `run`).
    failed: AtomicBool,
}

impl SyncHandles {
    /// Opens `path` `count` times.
    pub fn open(fs: &dyn WalFs, path: &Path, count: usize) -> io::Result<Arc<SyncHandles>> {
        let mut free = Vec::with_capacity(count);
        for _ in 0..count {
            free.push(fs.open_write(path)?);
        }
        Ok(Arc::new(SyncHandles { free: Mutex::new(free), failed: AtomicBool::new(false) }))
    }

    fn take(&self) -> Option<Box<dyn WalFile>> {
        self.free.lock().unwrap_or_else(|p| p.into_inner()).pop()
    }

    fn give_back(&self, file: Box<dyn WalFile>) {
        self.free.lock().unwrap_or_else(|p| p.into_inner()).push(file);
    }
}

struct Job {
    handles: Arc<SyncHandles>,
    done: Completion,
    buffer: Vec<u8>,
}

#[derive(Default)]
struct Queue {
    jobs: VecDeque<Job>,
    closed: bool,
}

#[derive(Default)]
struct Shared {
    queue: Mutex<Queue>,
    ready: Condvar,
    /// Syncs handed over and not yet completed.
    in_flight: AtomicUsize,
}

/// `N` threads that each run one `fdatasync` at a time.
pub struct SyncPool {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

impl SyncPool {
    /// Starts `threads` sync threads (at least one), on `cpus` if given (see
    /// [`super::affinity`]).
    pub fn new(threads: usize, cpus: Option<Vec<usize>>) -> io::Result<SyncPool> {
        let shared = Arc::new(Shared::default());
        let mut pool = SyncPool { shared: Arc::clone(&shared), threads: Vec::with_capacity(threads) };
        for index in 0..threads.max(1) {
            let shared = Arc::clone(&shared);
            let cpus = cpus.clone();
            let handle = std::thread::Builder::new().name(format!("wal-sync-{index}")).spawn(move || {
                if let Some(cpus) = cpus {
                    super::affinity::pin_current_thread(&cpus);
                }
                crate::wal::os::short_time_slice();
                run(&shared)
            })?;
            pool.threads.push(handle);
        }
        Ok(pool)
    }

    /// How many syncs may run at once.
    pub fn threads(&self) -> usize {
        self.threads.len()
    }

    /// Syncs handed over whose completion has not been sent yet.
    pub fn in_flight(&self) -> usize {
        self.shared.in_flight.load(Ordering::Acquire)
    }

    /// Syncs the segment behind `handles` on a free thread; `done` is completed with the
    /// outcome and `buffer` (the batch's bytes, handed back for reuse). The caller keeps
    /// at most [`SyncPool::threads`] syncs in flight (the machine's `inflight_max`).
    pub fn submit(&self, handles: Arc<SyncHandles>, done: Completion, buffer: Vec<u8>) {
        self.shared.in_flight.fetch_add(1, Ordering::AcqRel);
        let mut queue = self.shared.queue.lock().unwrap_or_else(|p| p.into_inner());
        queue.jobs.push_back(Job { handles, done, buffer });
        drop(queue);
        self.shared.ready.notify_one();
    }
}

fn run(shared: &Shared) {
    loop {
        let job = {
            let mut queue = shared.queue.lock().unwrap_or_else(|p| p.into_inner());
            loop {
                if let Some(job) = queue.jobs.pop_front() {
                    break job;
                }
                if queue.closed {
                    return;
                }
                queue = shared.ready.wait(queue).unwrap_or_else(|p| p.into_inner());
            }
        };
        let result = match job.handles.take() {
            Some(mut file) => {
                let mut result = file.sync_data().map_err(|error| sync_error_of(&error));
                // A handle reports an error once. Had this sync's handle already told
                // another sync of it (and been given back), this sync would "succeed"
                // over pages the error left unwritten. So a failure is recorded before
                // the handle is given back, and a success counts only if none was.
                if result.is_err() {
                    job.handles.failed.store(true, Ordering::Release);
                } else if job.handles.failed.load(Ordering::Acquire) {
                    result = Err(SyncError::Io);
                }
                job.handles.give_back(file);
                result
            }
            // More syncs than handles: a caller bug, reported as a failed persist.
            None => Err(SyncError::Unavailable),
        };
        // Counted down before the driver hears of it, so the driver never sees a
        // finished batch while the pool still counts it.
        shared.in_flight.fetch_sub(1, Ordering::AcqRel);
        job.done.complete(result, job.buffer);
    }
}

impl Drop for SyncPool {
    fn drop(&mut self) {
        // Every queued sync still runs and completes; then the threads end.
        self.shared.queue.lock().unwrap_or_else(|p| p.into_inner()).closed = true;
        self.shared.ready.notify_all();
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};
    use std::sync::mpsc;
    use std::time::Duration;

    use walab_core::group_commit::{BatchId, SyncError};

    use super::super::fault_fs::FaultFs;
    use super::super::fs::WalFs;
    use crate::wal::inbox::Event;
    use crate::wal::Completion;
    use super::{SyncHandles, SyncPool};

    /// Submits one sync and waits for its outcome.
    fn sync_once(pool: &SyncPool, handles: &std::sync::Arc<SyncHandles>, batch: u64) -> Result<(), SyncError> {
        let (events, outcomes) = mpsc::channel();
        pool.submit(std::sync::Arc::clone(handles), Completion { batch: BatchId(batch), events }, Vec::new());
        match outcomes.recv_timeout(Duration::from_secs(20)).expect("the sync thread answers") {
            Event::Persisted { batch: done, result, .. } => {
                assert_eq!(done, BatchId(batch));
                result
            }
            _ => panic!("a sync thread sends only completions"),
        }
    }

    fn segment(fs: &FaultFs) -> PathBuf {
        fs.create_dir_all(Path::new("/log")).unwrap();
        let path = PathBuf::from("/log/wal-1.log");
        fs.create_new(&path).unwrap();
        fs.sync_dir(Path::new("/log")).unwrap();
        path
    }

    #[test]
    fn after_one_sync_of_a_segment_fails_every_later_one_does_even_through_the_handle_that_was_told() {
        let fs = FaultFs::new(512);
        let path = segment(&fs);
        let pool = SyncPool::new(2, None).unwrap();
        let handles = SyncHandles::open(&fs, &path, 2).unwrap();
        let mut writer = fs.open_write(&path).unwrap();
        writer.write_at(0, b"batch one").unwrap();
        assert_eq!(sync_once(&pool, &handles, 1), Ok(()));
        // Batch two's pages are lost by a failed write-back; the failed sync takes the
        // error from its handle and gives the handle back.
        writer.write_at(9, b"batch two").unwrap();
        fs.fail_sync_of(&path, 1).unwrap();
        assert_eq!(sync_once(&pool, &handles, 2), Err(SyncError::Io));
        assert_eq!(fs.read_from_device(&path).unwrap(), b"batch one", "the failed sync wrote nothing");
        // The next sync may get the very handle that was told, which on its own would
        // report success over the lost bytes. It must fail, every time.
        writer.write_at(18, b"batch three").unwrap();
        for batch in 3..6 {
            assert_eq!(sync_once(&pool, &handles, batch), Err(SyncError::Io), "sync of batch {batch}");
        }
    }

    #[test]
    fn two_syncs_run_at_once_and_each_completes() {
        let fs = FaultFs::new(512);
        let path = segment(&fs);
        let pool = SyncPool::new(2, None).unwrap();
        let handles = SyncHandles::open(&fs, &path, 2).unwrap();
        fs.close_sync_gate_of(&path).unwrap();
        let (events, outcomes) = mpsc::channel();
        for batch in 1..=2 {
            let done = Completion { batch: BatchId(batch), events: events.clone() };
            pool.submit(std::sync::Arc::clone(&handles), done, Vec::new());
        }
        let started = std::time::Instant::now();
        while fs.syncs_at_gate() < 2 {
            assert!(started.elapsed() < Duration::from_secs(20), "two syncs never ran at once");
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(pool.in_flight(), 2);
        fs.open_sync_gate();
        let mut done: Vec<u64> = (0..2)
            .map(|_| match outcomes.recv_timeout(Duration::from_secs(20)).unwrap() {
                Event::Persisted { batch, result, .. } => {
                    assert_eq!(result, Ok(()));
                    batch.0
                }
                _ => panic!("a sync thread sends only completions"),
            })
            .collect();
        done.sort_unstable();
        assert_eq!(done, vec![1, 2]);
        assert_eq!(pool.in_flight(), 0);
    }
}
