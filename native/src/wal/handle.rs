//! [`Wal`]: an open log, the handle that starts the driver and hands out writers.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use walab_core::codec::tiny::TinyRecord;
use walab_core::group_commit::{Config, Policy};
use walab_core::session::retention::{NextSeq, ReaderId};
use walab_core::session::rollover::SegmentRule;
use walab_core::session::{Layout, Resume, RingResume, Session};
use walab_core::trace::Trace;

use super::backend::{Backend, Recovered};
use super::driver::{Driver, DriverResult};
use super::error::WalError;
use super::inbox::Event;
use super::live::LiveTrace;
use super::stats::WalStats;
use super::trace::{TraceRecorder, Tracer};
use super::writer::{AsyncWriter, Writer};

/// How a WAL is opened.
#[derive(Clone, Copy, Debug, Default)]
pub struct WalOptions {
    /// Another policy than the backend's (everything else is the backend's, from its
    /// preset: [`Backend::machine_config`]). Tests set [`Policy::NoSync`] here to build
    /// the deliberately broken WAL that acknowledges before it syncs; the crash tests
    /// choose theirs.
    pub policy: Option<Policy>,
    /// Record the driver's trace (arrivals, batches, persists, acks) for `--trace`, in
    /// the core's trace format, keeping at most this many events.
    pub trace_events_max: Option<usize>,
}

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
    live: Option<Arc<LiveTrace>>,
}

impl Wal {
    /// Recovers the backend's log and starts the driver. Returns the WAL and the records
    /// recovery found.
    pub fn open(backend: Box<dyn Backend>, options: WalOptions) -> Result<(Wal, Recovered), WalError> {
        Wal::open_live(backend, options, None)
    }

    /// [`Wal::open`], with the driver's events also sent to a live feed.
    pub fn open_live(backend: Box<dyn Backend>, options: WalOptions, live: Option<Arc<LiveTrace>>) -> Result<(Wal, Recovered), WalError> {
        let mut records = Vec::new();
        let (wal, mut recovered) = Wal::open_streaming(backend, options, live, &mut |record| records.push(record))?;
        recovered.records = records;
        Ok((wal, recovered))
    }

    /// [`Wal::open_live`], every recovered record handed to `visit` in seq order as
    /// recovery finds it, instead of kept in [`Recovered::records`] (left empty): a log of
    /// any size is recovered holding one segment ([`Backend::recover_streaming`]). A
    /// record may reach `visit` before opening fails on a corrupt log.
    pub fn open_streaming(
        mut backend: Box<dyn Backend>,
        options: WalOptions,
        live: Option<Arc<LiveTrace>>,
        visit: &mut dyn FnMut(TinyRecord),
    ) -> Result<(Wal, Recovered), WalError> {
        let name = backend.describe();
        let sync_cpus = backend.sync_cpus();
        let recovered = backend.recover_streaming(visit)?;
        let preset = backend.machine_config();
        let machine_config = Config { policy: options.policy.unwrap_or(preset.policy), ..preset };
        if let Some(live) = &live {
            live.set_wal(machine_config.policy.kind().name(), &name);
        }
        let segment_bytes_max = backend.segment_bytes_max();
        let (layout, ring) = match &recovered.ring {
            Some((ring, resume)) => (Layout::ring(ring.geometry, ring.trim_pause), resume.clone()),
            None => (Layout::segments(SegmentRule::Bytes { segment_bytes: segment_bytes_max }, NextSeq::InLog), RingResume::default()),
        };
        let resume = Resume {
            next_seq: recovered.next_seq,
            lsn: recovered.lsn,
            segment: recovered.segment,
            segment_bytes: recovered.segment_bytes,
            segment_records: 0,
            kept: recovered.kept(),
            ring,
        };
        let session =
            Session::new(machine_config, layout, resume).map_err(|error| WalError::Open(format!("{name}: {error}")))?;
        let (events_tx, events_rx) = mpsc::channel();
        let stats = Arc::new(Mutex::new(WalStats::default()));
        let driver_gone = Arc::new(AtomicBool::new(false));
        let last_persist_ns = Arc::new(AtomicU64::new(0));
        let recorder = options.trace_events_max.map(|events_max| {
            TraceRecorder::new("native-file", machine_config.policy.kind().name(), segment_bytes_max, events_max)
        });
        let driver = Driver {
            driver_gone: Arc::clone(&driver_gone),
            last_persist_ns: Arc::clone(&last_persist_ns),
            session,
            backend,
            events_tx: events_tx.clone(),
            events_rx,
            waiting: VecDeque::new(),
            started: Instant::now(),
            persist_started: BTreeMap::new(),
            confirmed_seq: 0,
            ring_pending: VecDeque::new(),
            ring_waits_slot: Vec::new(),
            stats: Arc::clone(&stats),
            tracer: Tracer { recorder, live: live.clone() },
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
                live,
            },
            recovered,
        ))
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The live feed the driver sends its events to, if it was opened with one.
    pub fn live(&self) -> Option<&Arc<LiveTrace>> {
        self.live.as_ref()
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

    /// Registers a reader positioned after `seq`; the log keeps what it has not confirmed.
    pub fn register_reader(&self, name: &str, seq: u64) -> Result<ReaderId, WalError> {
        let (reply, answer) = mpsc::channel();
        self.events
            .send(Event::RegisterReader { name: name.to_string(), seq, reply })
            .map_err(|_| WalError::Closed)?;
        answer.recv().map_err(|_| WalError::Closed)
    }

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

impl Drop for Wal {
    fn drop(&mut self) {
        self.shutdown();
    }
}

