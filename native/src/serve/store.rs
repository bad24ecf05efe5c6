//! [`Store`]: the streams over one open [`Wal`], the metadata log and the objects; how
//! they are rebuilt at start, looked up, deleted and expired, and what the uploader
//! takes from them. Appends and creates are in [`super::append`], reads in
//! [`super::read`].

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio::sync::Semaphore;
use walab_core::codec::tiny::TinyRecord;
use walab_core::rng::Rng;
use walab_core::stream_store::cycle::confirm_through;
use walab_core::stream_store::expiry::Expiry;
use walab_core::stream_store::log_cache::{CachedClose, CachedRecord};
use walab_core::stream_store::meta::{Applied, MetaCommand, StreamEnd};
use walab_core::stream_store::offset::Offset;
use walab_core::stream_store::record::{Assembler, Fragment};
use walab_core::stream_store::upload::{pending_bytes_of, Block, Pending, SealPolicy};
use walab_core::stream_store::StreamId;
use walab_core::time::Nanos;

use super::meta_log::MetaLog;
use super::objects::Objects;
use super::stream::{Fork, Status, Stream};
use crate::wal::live::LiveTrace;
use crate::wal::{AsyncWriter, Recovered, Wal, WalError};

/// The most streams one store holds (live and soft-deleted); a create past it is refused.
pub const STREAMS_MAX: usize = 100_000;

/// The most record bytes submitted to the WAL and not yet acknowledged. Appends past it
/// wait before they are given a place, so the group-commit machine's own bounds (its
/// unflushed bytes and waiters), which would refuse a record whose place is already
/// fixed, are never reached.
pub const INFLIGHT_BYTES_MAX: usize = 64 << 20;

/// The most bytes in one request's body (a `POST`'s or a `PUT`'s); more is `413`.
pub const REQUEST_BODY_BYTES_MAX: usize = 4 << 20;

/// How much of a body over [`REQUEST_BODY_BYTES_MAX`] is read and dropped before the `413`
/// is sent, so that the client has finished sending and reads it; past this the connection
/// is closed.
pub const REQUEST_BODY_DRAIN_MAX: usize = 64 << 20;

/// How often the expiry sweep looks for streams whose TTL or expiry time passed.
pub const EXPIRY_SWEEP_EVERY: Duration = Duration::from_millis(200);

/// Why a request was not carried out, as the protocol tells it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    #[error("no such stream")]
    NotFound,
    /// Soft-deleted: forks still read it.
    #[error("the stream is deleted (forks still read it)")]
    Gone,
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    Conflict(String),
    /// An append to a closed stream.
    #[error("the stream is closed")]
    Closed { tail: Offset },
    #[error("producer epoch {epoch} is fenced: the current epoch is {current}")]
    StaleEpoch { epoch: u64, current: u64 },
    #[error("producer seq {received} is not the next one: expected seq {expected}")]
    SeqGap { expected: u64, received: u64 },
    #[error("{0}")]
    TooLarge(String),
    /// A limit of this server (streams, producers per stream).
    #[error("{0}")]
    Full(String),
    /// The WAL or the metadata log failed while this request was in it: it may or may
    /// not be durable.
    #[error("the WAL failed, this request may or may not be durable: {0}")]
    Unknown(String),
    /// The WAL or the metadata log failed earlier; nothing was submitted.
    #[error("appends stopped after a failure ({0}); restart the server")]
    Stopped(String),
    /// A committed object could not be read: the object store's trouble.
    #[error("{0}")]
    ObjectStore(String),
    /// Records the store has lost track of: its bug.
    #[error("{0}")]
    Internal(String),
}

/// The server's counters since start, for `GET /stats` (what `walab bench --http` reports
/// per record).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct StoreStats {
    /// The WAL's URL-like name (`file://...`, `s3://...`, `postgres://...`).
    pub wal: String,
    /// Batches the WAL persisted (an fdatasync for a file, one PUT for S3, one INSERT for
    /// Postgres) and records it acknowledged.
    pub wal_persists: u64,
    pub wal_acked: u64,
    /// Objects uploaded.
    pub object_puts: u64,
    /// Streams held (live and soft-deleted).
    pub streams: usize,
    /// The metadata state's size: committed objects (garbage not yet deleted included)
    /// and the runs of records they hold.
    pub meta_objects: usize,
    pub meta_runs: usize,
}

#[derive(Default)]
struct Streams {
    by_name: HashMap<String, Arc<Stream>>,
    by_id: BTreeMap<StreamId, Arc<Stream>>,
}

/// The stream store.
pub struct Store {
    streams: Mutex<Streams>,
    pub(super) meta: Arc<MetaLog>,
    pub(super) writer: AsyncWriter,
    /// The WAL seq the next submitted record gets, held across the submission: the driver
    /// numbers records in the order they reach it, so the store knows each record's seq
    /// before it is acknowledged (and checks it after).
    pub(super) next_wal_seq: Mutex<u64>,
    next_stream_id: AtomicU64,
    pub(super) objects: Arc<Objects>,
    /// Durable record bytes above the committed ends (may dip below 0 for a moment: an
    /// acknowledgement can be counted after its record was uploaded).
    pending_bytes: AtomicI64,
    /// Since when bytes have been pending (nanoseconds since `started`).
    pending_since: Mutex<Option<Nanos>>,
    started: Instant,
    pub(super) inflight_bytes: Arc<Semaphore>,
    /// Set once, by the first failed append; from then on appends are refused.
    failure: OnceLock<String>,
    /// Draws for the cursors' jitter.
    rng: Mutex<Rng>,
    wal: Wal,
}

pub(super) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Milliseconds since 1970 on this machine's clock.
pub fn now_unix_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |elapsed| elapsed.as_millis() as u64)
}

/// What the store found at start, for its first words.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Found {
    pub streams: usize,
    /// WAL records replayed into the streams' log caches.
    pub replayed: u64,
    /// WAL records of streams that no longer exist (deleted, or whose creation never
    /// became durable).
    pub skipped: u64,
    /// Requests cut short by a crash (some fragments durable, never answered): dropped.
    pub dropped: u64,
}

impl Store {
    /// Rebuilds the streams from the metadata log's state and what the WAL's recovery
    /// found: every record above its stream's committed end goes back to its log cache,
    /// durable, and into its producers' table.
    pub fn recover(wal: Wal, recovered: Recovered, meta: Arc<MetaLog>, objects: Arc<Objects>) -> Result<(Store, Found), String> {
        let mut replay = Replay::new(&meta, wal.name().to_string())?;
        for record in &recovered.records {
            replay.record(record);
        }
        Store::replayed(wal, recovered.next_seq, replay, meta, objects)
    }

    /// [`Store::recover`] from a [`Replay`] the WAL's records were handed to as its
    /// recovery found them ([`Wal::open_streaming`]); `next_seq` is the WAL's.
    pub fn replayed(wal: Wal, next_seq: u64, replay: Replay, meta: Arc<MetaLog>, objects: Arc<Objects>) -> Result<(Store, Found), String> {
        let Replay { by_id, next_stream_id, mut found, assembler, pending_bytes, error, .. } = replay;
        if let Some(error) = error {
            return Err(error);
        }
        found.dropped = assembler.finish();
        let mut streams = Streams::default();
        for (id, stream) in by_id {
            if stream.lock().status == Status::Live || stream.lock().status == Status::SoftDeleted {
                streams.by_name.insert(stream.name.clone(), Arc::clone(&stream));
            }
            streams.by_id.insert(id, stream);
        }
        let seed = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |elapsed| elapsed.as_nanos() as u64);
        let store = Store {
            streams: Mutex::new(streams),
            meta,
            writer: wal.async_writer(),
            next_wal_seq: Mutex::new(next_seq),
            next_stream_id: AtomicU64::new(next_stream_id),
            objects,
            pending_bytes: AtomicI64::new(pending_bytes),
            pending_since: Mutex::new((pending_bytes > 0).then_some(Nanos(0))),
            started: Instant::now(),
            inflight_bytes: Arc::new(Semaphore::new(INFLIGHT_BYTES_MAX)),
            failure: OnceLock::new(),
            rng: Mutex::new(Rng::new(seed)),
            wal,
        };
        Ok((store, found))
    }

    /// The WAL's name in messages.
    pub fn wal_name(&self) -> &str {
        self.wal.name()
    }

    /// A random draw (for the cursors' jitter).
    pub fn random(&self) -> u64 {
        lock(&self.rng).next_u64()
    }

    /// The stream named `name` as clients see it: live, or `Gone` while soft-deleted,
    /// `NotFound` when there is none (or it just expired). A stream being created is
    /// waited for. `touch` counts the request as a read or write for a sliding TTL.
    pub async fn find(&self, name: &str, touch: bool) -> Result<Arc<Stream>, StoreError> {
        for _ in 0..8 {
            let stream = lock(&self.streams).by_name.get(name).cloned().ok_or(StoreError::NotFound)?;
            // One look under the lock: the status, and for a stream that can expire
            // whether it has (a sliding TTL's clock restarts here when `touch`).
            let (status, expired) = {
                let mut state = stream.lock();
                let expired = match stream.expiry {
                    Expiry::Never => false,
                    expiry => {
                        let now = now_unix_ms();
                        let expired = expiry.passed(state.last_access_ms, now);
                        if touch && !expired {
                            state.last_access_ms = now;
                        }
                        expired
                    }
                };
                (state.status, expired)
            };
            match status {
                Status::Creating => {
                    // The creator holds the lifecycle lock until it knows the outcome.
                    drop(stream.lifecycle.lock().await);
                    continue;
                }
                Status::Removed => continue,
                Status::SoftDeleted => return Err(StoreError::Gone),
                Status::Live => {}
            }
            if expired && self.expire_if_due(&stream).await {
                continue;
            }
            return Ok(stream);
        }
        Err(StoreError::NotFound)
    }

    /// The stream with this name in any state but removed (a fork's source, for a
    /// comparison).
    pub(super) fn named(&self, name: &str) -> Option<Arc<Stream>> {
        lock(&self.streams).by_name.get(name).cloned()
    }

    /// Puts a new stream in place as [`Status::Creating`], unless the name is taken:
    /// then the stream that has it.
    pub(super) fn insert_creating(&self, stream: Arc<Stream>) -> Result<Result<(), Arc<Stream>>, StoreError> {
        let mut streams = lock(&self.streams);
        if let Some(existing) = streams.by_name.get(&stream.name) {
            return Ok(Err(Arc::clone(existing)));
        }
        if streams.by_id.len() >= STREAMS_MAX {
            return Err(StoreError::Full(format!("the store already holds {STREAMS_MAX} streams")));
        }
        streams.by_name.insert(stream.name.clone(), Arc::clone(&stream));
        streams.by_id.insert(stream.id, stream);
        Ok(Ok(()))
    }

    /// A number for a new stream, never given before.
    pub(super) fn next_stream_id(&self) -> StreamId {
        StreamId(self.next_stream_id.fetch_add(1, Ordering::AcqRel))
    }

    /// Forgets a stream that is gone: its name (if still its own), its cached records.
    fn forget(&self, stream: &Arc<Stream>) {
        {
            let mut streams = lock(&self.streams);
            if streams.by_name.get(&stream.name).is_some_and(|s| Arc::ptr_eq(s, stream)) {
                streams.by_name.remove(&stream.name);
            }
            streams.by_id.remove(&stream.id);
        }
        let dropped: usize = {
            let mut state = stream.lock();
            state.status = Status::Removed;
            let bytes = state.log.durable_records().map(|r| pending_bytes_of(r.body.len())).sum();
            state.log = walab_core::stream_store::log_cache::StreamLog::starting_at(state.log.start());
            bytes
        };
        self.pending_bytes.fetch_sub(dropped as i64, Ordering::AcqRel);
        stream.wake_readers();
    }

    /// A creation that did not become durable: the stream goes away again.
    pub(super) fn abandon(&self, stream: &Arc<Stream>) {
        self.forget(stream);
    }

    /// Mirrors what a delete did to the streams.
    fn mirror(&self, applied: &Applied) {
        for id in &applied.removed {
            let stream = lock(&self.streams).by_id.get(id).cloned();
            if let Some(stream) = stream {
                self.forget(&stream);
            }
        }
        if let Some(id) = applied.soft_deleted {
            let stream = lock(&self.streams).by_id.get(&id).cloned();
            if let Some(stream) = stream {
                stream.lock().status = Status::SoftDeleted;
                stream.wake_readers();
            }
        }
    }

    /// `DELETE`: removes the stream, or soft-deletes it while forks read it.
    pub async fn delete(&self, name: &str) -> Result<(), StoreError> {
        let stream = lock(&self.streams).by_name.get(name).cloned().ok_or(StoreError::NotFound)?;
        let _lifecycle = stream.lifecycle.lock().await;
        let status = stream.lock().status;
        match status {
            Status::Removed | Status::Creating => Err(StoreError::NotFound),
            Status::SoftDeleted => Err(StoreError::Gone),
            Status::Live => self.delete_locked(&stream).await,
        }
    }

    /// Deletes a live stream whose lifecycle lock the caller holds.
    async fn delete_locked(&self, stream: &Arc<Stream>) -> Result<(), StoreError> {
        if let Some(failure) = self.meta.failed() {
            return Err(StoreError::Stopped(failure.to_string()));
        }
        let applied = self.meta.append(MetaCommand::Delete { id: stream.id }).await.map_err(StoreError::Unknown)?;
        self.mirror(&applied);
        Ok(())
    }

    /// Deletes `stream` if its TTL or expiry time has passed; whether it did.
    pub(super) async fn expire_if_due(&self, stream: &Arc<Stream>) -> bool {
        let due = |stream: &Stream| {
            let state = stream.lock();
            state.status == Status::Live && stream.expiry.passed(state.last_access_ms, now_unix_ms())
        };
        if !due(stream) {
            return false;
        }
        let _lifecycle = stream.lifecycle.lock().await;
        if !due(stream) {
            return stream.lock().status != Status::Live;
        }
        match self.delete_locked(stream).await {
            Ok(()) => true,
            Err(error) => {
                eprintln!("walab serve: stream {}: expired, but its delete failed: {error}", stream.id);
                false
            }
        }
    }

    /// Deletes every stream whose TTL or expiry time has passed.
    pub async fn sweep_expired(&self) {
        let candidates: Vec<Arc<Stream>> = lock(&self.streams)
            .by_id
            .values()
            .filter(|stream| stream.expiry != Expiry::Never)
            .cloned()
            .collect();
        for stream in candidates {
            self.expire_if_due(&stream).await;
        }
    }

    /// Records the first failure; every later append is refused.
    pub(super) fn fail(&self, error: &WalError) -> String {
        let message = self.failure.get_or_init(|| error.to_string()).clone();
        let streams: Vec<Arc<Stream>> = lock(&self.streams).by_id.values().cloned().collect();
        for stream in streams {
            stream.wake_readers();
        }
        message
    }

    /// The first failure, if there was one.
    pub(super) fn failure(&self) -> Option<&str> {
        self.failure.get().map(String::as_str)
    }

    /// Counts record bytes that became durable, for the upload's schedule.
    pub(super) fn count_pending(&self, bytes: usize) {
        if self.pending_bytes.fetch_add(bytes as i64, Ordering::AcqRel) <= 0 {
            let now = self.now();
            lock(&self.pending_since).get_or_insert(now);
        }
    }

    fn now(&self) -> Nanos {
        Nanos(self.started.elapsed().as_nanos() as u64)
    }

    /// Whether the upload task should seal a block now.
    pub fn upload_due(&self, policy: &SealPolicy) -> bool {
        let pending = self.pending_bytes.load(Ordering::Acquire).max(0) as usize;
        policy.due(pending, *lock(&self.pending_since), self.now())
    }

    /// The durable records above every stream's committed end, by stream number, copied
    /// until about `bytes_max` record bytes (at least one record), and durable closes.
    pub fn pending(&self, bytes_max: usize) -> Vec<Pending> {
        let streams: Vec<Arc<Stream>> = lock(&self.streams).by_id.values().cloned().collect();
        let mut pending = Vec::new();
        let mut bytes = 0;
        for stream in streams {
            if bytes >= bytes_max {
                break;
            }
            let state = stream.lock();
            if !matches!(state.status, Status::Live | Status::SoftDeleted) {
                continue;
            }
            let mut records = Vec::new();
            for record in state.log.durable_records() {
                if bytes >= bytes_max {
                    break;
                }
                bytes += pending_bytes_of(record.body.len());
                records.push(record.clone());
            }
            let all = records.len() == state.log.len();
            let close = match state.log.close() {
                Some(close) if close.durable && all => Some(close.producer.clone()),
                _ => None,
            };
            if !records.is_empty() || close.is_some() {
                pending.push(Pending { stream: stream.id, start: state.log.start(), records, close });
            }
        }
        pending
    }

    /// A commit is durable: advance the streams, drop what it covers from the log cache,
    /// and confirm the WAL below the oldest request not yet committed.
    pub fn committed(&self, block: &Block, ids: &[u64]) {
        let mut dropped = 0;
        for (runs, &id) in block.objects.iter().zip(ids) {
            for run in runs {
                let Some(stream) = lock(&self.streams).by_id.get(&run.stream).cloned() else { continue };
                stream.lock().runs.push((run.start, run.end(), id));
            }
        }
        for end in &block.ends {
            let Some(stream) = lock(&self.streams).by_id.get(&end.stream).cloned() else { continue };
            let mut state = stream.lock();
            let with_close = end.closed && state.log.close().is_some();
            let StreamEnd { end: through, .. } = end;
            let (records, bytes) = state.log.drop_below(*through, with_close);
            dropped += records * pending_bytes_of(0) + bytes;
            if with_close {
                dropped += pending_bytes_of(0);
            }
        }
        let dropped = dropped as i64;
        let left = self.pending_bytes.fetch_sub(dropped, Ordering::AcqRel) - dropped;
        *lock(&self.pending_since) = (left > 0).then(|| self.now());
        self.wal.confirm_consumer(self.trim_through());
    }

    /// A compaction is durable: object `id` holds these runs, each in the place of the
    /// runs it covers.
    pub fn compacted(&self, runs: &[walab_core::stream_store::meta::RunEntry], id: u64) {
        for run in runs {
            let Some(stream) = lock(&self.streams).by_id.get(&run.stream).cloned() else { continue };
            let mut state = stream.lock();
            let first = state.runs.iter().position(|&(start, _, _)| start == run.start);
            let last = state.runs.iter().position(|&(_, end, _)| end == run.end);
            if let (Some(first), Some(last)) = (first, last) {
                state.runs.splice(first..=last, [(run.start, run.end, id)]);
            }
        }
    }

    /// The WAL seq through which every request is committed.
    fn trim_through(&self) -> u64 {
        // Read first: a record submitted after this gets a larger seq.
        let next = *lock(&self.next_wal_seq);
        let streams: Vec<Arc<Stream>> = lock(&self.streams).by_id.values().cloned().collect();
        confirm_through(next, streams.iter().filter_map(|stream| stream.lock().log.first_wal_seq()))
    }

    /// The live trace the WAL and the upload send to, if the WAL was opened with one.
    pub fn live(&self) -> Option<&Arc<LiveTrace>> {
        self.wal.live()
    }

    /// The counters since start.
    pub fn stats(&self) -> StoreStats {
        let wal = self.wal.stats();
        StoreStats {
            wal: self.wal.name().to_string(),
            wal_persists: wal.persists_ok,
            wal_acked: wal.acked,
            object_puts: self.objects.puts(),
            streams: lock(&self.streams).by_id.len(),
            meta_objects: self.meta.with_state(|state| state.objects().count()),
            meta_runs: self.meta.with_state(|state| state.streams().map(|(_, stream)| stream.runs.len()).sum()),
        }
    }
}

/// The WAL's records replayed into the streams one at a time, as recovery hands them
/// over: the streams from the metadata log, then each record above its stream's
/// committed end into its log cache. The first bad record's error is kept and ends the
/// replay ([`Store::replayed`] returns it).
pub struct Replay {
    wal_name: String,
    by_id: BTreeMap<StreamId, Arc<Stream>>,
    closed_in_meta: HashSet<StreamId>,
    next_stream_id: u64,
    found: Found,
    assembler: Assembler,
    first_seqs: HashMap<StreamId, u64>,
    pending_bytes: i64,
    error: Option<String>,
}

impl Replay {
    /// The streams the metadata log holds, ready for the WAL's records (`wal_name` in
    /// messages).
    pub fn new(meta: &MetaLog, wal_name: String) -> Result<Replay, String> {
        let (by_id, closed_in_meta, next_stream_id) = streams_of(meta)?;
        let found = Found { streams: by_id.len(), ..Found::default() };
        Ok(Replay {
            wal_name,
            by_id,
            closed_in_meta,
            next_stream_id,
            found,
            assembler: Assembler::default(),
            first_seqs: HashMap::new(),
            pending_bytes: 0,
            error: None,
        })
    }

    /// Replays the WAL's next record (in seq order).
    pub fn record(&mut self, record: &TinyRecord) {
        if self.error.is_none() {
            if let Err(error) = self.replay(record) {
                self.error = Some(error);
            }
        }
    }

    fn replay(&mut self, record: &TinyRecord) -> Result<(), String> {
        let at = |error: &dyn std::fmt::Display| format!("{}: WAL record {}: {error}", self.wal_name, record.seq);
        let fragment = Fragment::decode(&record.key, &record.value).map_err(|error| at(&error))?;
        self.next_stream_id = self.next_stream_id.max(fragment.stream.0 + 1);
        let Some(stream) = self.by_id.get(&fragment.stream) else {
            self.found.skipped += 1;
            return Ok(());
        };
        // Committed already: below the committed end, or anything of a stream the
        // metadata says is closed (nothing follows a close).
        if self.closed_in_meta.contains(&fragment.stream) || fragment.index < stream.lock().log.start().index {
            return Ok(());
        }
        if fragment.head.is_some() {
            self.first_seqs.insert(fragment.stream, record.seq);
        }
        let Some(append) = self.assembler.push(fragment).map_err(|error| at(&error))? else { return Ok(()) };
        let wal_seq = self.first_seqs.get(&append.stream).copied().unwrap_or(record.seq);
        let mut state = stream.lock();
        let end = state.log.end();
        if append.index != end.index || state.closed {
            return Err(at(&format!(
                "stream {} record {} does not follow its stream's records (expected record {}{})",
                append.stream,
                append.index,
                end.index,
                if state.closed { ", and the stream is closed" } else { "" }
            )));
        }
        if let Some(producer) = &append.producer {
            state.producers.record(&producer.id, producer.epoch, producer.seq);
        }
        if append.stream_seq.is_some() {
            state.stream_seq = append.stream_seq.clone();
        }
        self.pending_bytes += pending_bytes_of(append.body.len()) as i64;
        if append.body.is_empty() {
            state.log.push_close(CachedClose { producer: append.producer.clone(), wal_seq, durable: true });
        } else {
            state.log.push(CachedRecord {
                start: end,
                body: append.body.into(),
                producer: append.producer.clone(),
                stream_seq: append.stream_seq,
                closes: append.closes,
                wal_seq,
            });
            let through = state.log.end();
            state.log.mark_durable(through);
        }
        if append.closes {
            state.closed = true;
            state.closed_by = append.producer;
        }
        state.submitted += 1;
        state.durable += 1;
        self.found.replayed += 1;
        Ok(())
    }
}

/// The streams the metadata log names, each at its committed end with its producers and
/// closure, the ones it says are closed, and the next stream number.
fn streams_of(meta: &MetaLog) -> Result<(BTreeMap<StreamId, Arc<Stream>>, HashSet<StreamId>, u64), String> {
    let now = now_unix_ms();
    let mut by_id: BTreeMap<StreamId, Arc<Stream>> = BTreeMap::new();
    let mut closed_in_meta = HashSet::new();
    let next_stream_id = meta.with_state(|state| -> Result<u64, String> {
        // By number: a fork's source was created before it, so it is there already.
        for (id, stream_meta) in state.streams() {
            let fork = match stream_meta.config.fork {
                Some(base) => {
                    let source = by_id.get(&base.source).cloned().ok_or_else(|| {
                        format!("{}: stream {id} is a fork of stream {}, which is not there", meta.name(), base.source)
                    })?;
                    Some(Fork { source, at: base.at, sub_offset: base.sub_offset })
                }
                None => None,
            };
            let status = if stream_meta.soft_deleted { Status::SoftDeleted } else { Status::Live };
            let stream = Stream::new(id, &stream_meta.config, fork, stream_meta.committed, status, now);
            {
                let mut state = stream.lock();
                state.runs = stream_meta.runs.clone();
                state.producers = stream_meta.producers.clone();
                state.stream_seq = stream_meta.stream_seq.clone();
                state.closed = stream_meta.closed;
                state.closed_by = stream_meta.closed_by.clone();
            }
            if stream_meta.closed {
                closed_in_meta.insert(id);
            }
            by_id.insert(id, Arc::new(stream));
        }
        Ok(state.next_stream_id())
    })?;
    Ok((by_id, closed_in_meta, next_stream_id))
}
