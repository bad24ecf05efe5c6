//! `walab bench`'s writers: closed-loop appenders, as OS threads or as tokio tasks,
//! each appending, waiting for its acknowledgement and appending again, holding off
//! while a raw turn runs (`--against-raw-ms`), each keeping its own latency histogram.

use super::*;

/// A writer's next move (see `WriterLoop::next_step`).
pub(super) enum Step {
    Stop,
    Pause,
    Append,
}

/// How often a paused writer looks at `stop` (it is woken as soon as `go` is set).
const PAUSE_CHECK: Duration = Duration::from_millis(10);

/// How the bench's writers run.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WriterKind {
    /// One OS thread per writer, blocked in each append.
    Threads,
    /// One tokio task per writer on a two-thread runtime: how a server with a thousand
    /// concurrent requests appends, and what a small machine can run a thousand of
    /// (a thousand threads measure the scheduler more than the log).
    Tasks,
}

/// Worker threads of the runtime that runs the writer tasks.
pub const TASK_RUNTIME_THREADS: usize = 2;

pub(super) enum Handles {
    Threads(Vec<std::thread::JoinHandle<Histogram>>),
    Tasks(tokio::runtime::Runtime, Vec<tokio::task::JoinHandle<Histogram>>),
}

/// What every writer of a run shares.
#[derive(Clone)]
pub(super) struct WriterShared {
    pub(super) stop: Arc<AtomicBool>,
    /// False while a raw turn runs (`--against-raw-ms`): writers hold off.
    pub(super) go: Arc<AtomicBool>,
    /// Appends issued and not yet answered.
    pub(super) inflight: Arc<AtomicUsize>,
    pub(super) newest_acked: Arc<AtomicU64>,
    pub(super) failure: Arc<std::sync::Mutex<Option<String>>>,
    /// Where paused writers sleep until `go` is set again.
    pub(super) turnstile: Arc<Turnstile>,
}

/// Wakes writers paused for a raw turn. They sleep, not poll: 64 thread writers looking
/// at `go` every 200 us were 320,000 wake-ups a second, and the raw turn's syncs ran at
/// half their speed beside them.
#[derive(Default)]
pub(super) struct Turnstile {
    pub(super) lock: std::sync::Mutex<()>,
    pub(super) changed: std::sync::Condvar,
    pub(super) notify: tokio::sync::Notify,
}

impl Turnstile {
    /// Sets `go` and wakes every paused writer.
    pub(super) fn open(&self, go: &AtomicBool) {
        // Stored before the lock is taken: a writer that checked `go` under the lock
        // and found it false is already waiting when the notification comes.
        go.store(true, Ordering::Release);
        drop(self.lock.lock().unwrap_or_else(|p| p.into_inner()));
        self.changed.notify_all();
        self.notify.notify_waiters();
    }

    /// A thread writer's pause: sleeps until `go` (or `stop`, looked at every 10 ms).
    pub(super) fn wait_blocking(&self, go: &AtomicBool, stop: &AtomicBool) {
        let mut guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        while !go.load(Ordering::Acquire) && !stop.load(Ordering::Relaxed) {
            guard = self.changed.wait_timeout(guard, PAUSE_CHECK).unwrap_or_else(|p| p.into_inner()).0;
        }
    }

    /// A task writer's pause.
    pub(super) async fn wait(&self, go: &AtomicBool, stop: &AtomicBool) {
        while !stop.load(Ordering::Relaxed) {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if go.load(Ordering::Acquire) {
                return;
            }
            let _ = tokio::time::timeout(PAUSE_CHECK, notified).await;
        }
    }
}

/// One writer's closed loop, whether it runs as a thread or as a task: a unique key per
/// append, the latency of each acknowledgement, the first failure stopping the run.
pub(super) struct WriterLoop {
    pub(super) prefix: String,
    pub(super) n: u64,
    pub(super) key: String,
    pub(super) value: Vec<u8>,
    pub(super) histogram: Histogram,
    /// Latencies (ns) not yet put into `histogram`: a thousand writers' histograms are
    /// 32 MB, and one scattered increment per append missed the cache (8% of the
    /// process's CPU at 1,024 S3 writers, perf); a run of similar latencies lands on the
    /// same few lines. (`newest_acked` still moves with every acknowledgement: the
    /// consumer trims by it, and a small ring waits for that.)
    pub(super) pending: Vec<u64>,
    pub(super) shared: WriterShared,
}

/// Latencies a writer keeps before putting them into its histogram.
pub(super) const PENDING_LATENCIES_MAX: usize = 64;

impl WriterLoop {
    pub(super) fn new(prefix: String, value: Vec<u8>, shared: WriterShared) -> WriterLoop {
        WriterLoop {
            prefix,
            n: 0,
            key: String::new(),
            value,
            histogram: Histogram::new(),
            pending: Vec::with_capacity(PENDING_LATENCIES_MAX),
            shared,
        }
    }

    /// What to do next: stop, hold off (a raw turn runs; look again in a moment), or
    /// append `key`, counted in `inflight` until [`WriterLoop::finish`]. The count goes up
    /// before `go` is read, so the bench's wait for `inflight == 0` after clearing `go`
    /// never misses an append that saw `go` set.
    pub(super) fn next_step(&mut self) -> Step {
        if self.shared.stop.load(Ordering::Relaxed) {
            return Step::Stop;
        }
        self.shared.inflight.fetch_add(1, Ordering::AcqRel);
        if !self.shared.go.load(Ordering::Acquire) {
            self.shared.inflight.fetch_sub(1, Ordering::AcqRel);
            return Step::Pause;
        }
        self.key.clear();
        self.key.push_str(&self.prefix);
        self.key.push_str(&self.n.to_string());
        self.n += 1;
        Step::Append
    }

    pub(super) fn finish(&mut self, begin: Instant, result: Result<u64, crate::wal::WalError>) {
        self.shared.inflight.fetch_sub(1, Ordering::AcqRel);
        match result {
            Ok(seq) => {
                self.pending.push(begin.elapsed().as_nanos() as u64);
                if self.pending.len() == PENDING_LATENCIES_MAX {
                    self.flush();
                }
                self.shared.newest_acked.fetch_max(seq, Ordering::Relaxed);
            }
            Err(error) => {
                self.shared.failure.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(error.to_string());
                self.shared.stop.store(true, Ordering::Relaxed);
            }
        }
    }

    pub(super) fn flush(&mut self) {
        for latency in self.pending.drain(..) {
            self.histogram.record(latency);
        }
    }

    /// The writer's latencies, once it has stopped.
    pub(super) fn into_histogram(mut self) -> Histogram {
        self.flush();
        self.histogram
    }
}

/// Starts `writers` closed-loop writers, as threads or as tasks.
pub(super) fn spawn_writers(args: &Args, run: &BenchRun, writers: usize, run_id: &str) -> Result<Handles, CliError> {
    let value = vec![b'v'; args.record_bytes];
    let loops = (0..writers).map(|w| WriterLoop::new(format!("{run_id}-{writers}w-{w}-"), value.clone(), run.shared.clone()));
    Ok(match args.writer_kind {
        WriterKind::Threads => Handles::Threads(
            loops
                .map(|mut job| {
                    let mut writer = run.wal.writer();
                    std::thread::spawn(move || {
                        loop {
                            match job.next_step() {
                                Step::Stop => break,
                                Step::Pause => {
                                    job.shared.turnstile.wait_blocking(&job.shared.go, &job.shared.stop);
                                    continue;
                                }
                                Step::Append => {}
                            }
                            let begin = Instant::now();
                            let result = writer.append(job.key.as_bytes(), &job.value);
                            job.finish(begin, result);
                        }
                        job.into_histogram()
                    })
                })
                .collect(),
        ),
        WriterKind::Tasks => {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(TASK_RUNTIME_THREADS)
                .enable_time()
                .thread_name("bench-writer")
                .build()
                .map_err(|error| CliError::failed(format!("bench: cannot start the writers' runtime: {error}")))?;
            let tasks = loops
                .map(|mut job| {
                    let mut writer = run.wal.async_writer();
                    runtime.spawn(async move {
                        loop {
                            match job.next_step() {
                                Step::Stop => break,
                                Step::Pause => {
                                    let shared = job.shared.clone();
                                    shared.turnstile.wait(&shared.go, &shared.stop).await;
                                    continue;
                                }
                                Step::Append => {}
                            }
                            let begin = Instant::now();
                            let result = writer.append(job.key.as_bytes(), &job.value).await;
                            job.finish(begin, result);
                        }
                        job.into_histogram()
                    })
                })
                .collect();
            Handles::Tasks(runtime, tasks)
        }
    })
}

/// Waits for every writer (they have been told to stop) and merges their latencies.
pub(super) fn join_writers(handles: Handles) -> Histogram {
    let mut histogram = Histogram::new();
    match handles {
        Handles::Threads(threads) => {
            for handle in threads {
                if let Ok(h) = handle.join() {
                    histogram.merge(&h);
                }
            }
        }
        Handles::Tasks(runtime, tasks) => {
            for task in tasks {
                if let Ok(h) = runtime.block_on(task) {
                    histogram.merge(&h);
                }
            }
        }
    }
    histogram
}
