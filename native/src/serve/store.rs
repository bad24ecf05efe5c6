//! [`Store`]: the streams, their producers and log caches, over one open [`Wal`].

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use tokio::sync::{watch, Semaphore};
use walab_core::codec::tiny;
use walab_core::stream_store::log_cache::{CachedRecord, ReadError, StreamLog};
use walab_core::stream_store::meta::{MetaState, ObjectEntry};
use walab_core::stream_store::object::{self, Run, StoredRecord};
use walab_core::stream_store::producers::{ProducerTable, Verdict};
use walab_core::stream_store::record::{AppendRecord, ProducerStamp, RecordError, VALUE_BYTES_MAX};
use walab_core::stream_store::upload::SealPolicy;
use walab_core::stream_store::{check_name, NameError};
use walab_core::time::Nanos;

use super::objects::Objects;
use crate::wal::live::LiveTrace;
use crate::wal::{AsyncWriter, Recovered, Wal, WalError};

/// The most streams one store holds; an append that would create one more is refused.
pub const STREAMS_MAX: usize = 100_000;

/// The most record bytes submitted to the WAL and not yet acknowledged. Appends past it
/// wait before they are given an offset, so the group-commit machine's own bounds (its
/// unflushed bytes and waiters), which would refuse a record whose offset is already
/// fixed, are never reached.
pub const INFLIGHT_BYTES_MAX: usize = 64 << 20;

/// The most records in one batch append.
pub const BATCH_RECORDS_MAX: usize = 1000;

/// An acknowledged append.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Appended {
    /// The (first) record's offset; a batch's records follow it.
    pub offset: u64,
    /// Records appended (1 for a single append).
    pub count: u64,
    /// Seqs appended already: `offset` is what the first of them got the first time.
    pub duplicate: bool,
}

/// Why an append was not acknowledged.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AppendError {
    /// A stream or producer name that is not `[A-Za-z0-9._-]{1,128}`.
    #[error("{what} {name:?} {error}")]
    BadName { what: &'static str, name: String, error: NameError },
    #[error("{0}")]
    BadRecord(RecordError),
    /// A batch that is empty, too long, or whose seqs would pass the last one.
    #[error("batch: {0}")]
    BadBatch(String),
    #[error("producer {producer} epoch {epoch} is fenced: the current epoch is {current}")]
    StaleEpoch { producer: String, epoch: u64, current: u64 },
    #[error("producer {producer} seq {seq} is not the next one: expected seq {expected}")]
    SeqGap { producer: String, seq: u64, expected: u64 },
    #[error("stream {stream} already has {max} producers", max = walab_core::stream_store::producers::PRODUCERS_PER_STREAM_MAX)]
    TooManyProducers { stream: String },
    #[error("the store already holds {STREAMS_MAX} streams")]
    TooManyStreams,
    /// The WAL failed while this record was submitted: it may or may not be there.
    #[error("the WAL failed, this record may or may not be durable: {0}")]
    Unknown(String),
    /// The WAL failed earlier; nothing was submitted.
    #[error("appends stopped after a WAL failure ({0}); restart the server")]
    Stopped(String),
}

/// Why a read was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReadFailure {
    #[error("stream name {0:?} {1}")]
    BadStream(String, NameError),
    #[error("stream {0} has no records")]
    NoSuchStream(String),
    #[error("{0}")]
    Range(ReadError),
    /// A committed object could not be read.
    #[error("{0}")]
    Object(String),
}

/// A read's answer: durable records from `from`, the next offset to read, the end.
#[derive(Clone, Debug)]
pub struct ReadAnswer {
    pub records: Vec<CachedRecord>,
    pub next: u64,
    pub end: u64,
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
}

/// One stream's positions, for `GET /streams`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct StreamSummary {
    pub stream: String,
    /// Records below are durable.
    pub end: u64,
    /// Records below are in committed objects.
    pub committed: u64,
}

struct StreamState {
    log: StreamLog,
    producers: ProducerTable,
    committed: u64,
    /// `(start, end, object id)` of the committed runs, by start: they tile `0..committed`.
    runs: Vec<(u64, u64, u64)>,
}

impl StreamState {
    fn empty() -> StreamState {
        StreamState { log: StreamLog::starting_at(0), producers: ProducerTable::default(), committed: 0, runs: Vec::new() }
    }
}

/// What the upload counts a record as (its value and room for its fields).
fn pending_bytes_of(value: &[u8]) -> i64 {
    value.len() as i64 + 32
}

type Stream = Arc<Mutex<StreamState>>;

/// The stream store over one WAL.
pub struct Store {
    streams: Mutex<BTreeMap<String, Stream>>,
    writer: AsyncWriter,
    /// The WAL seq the next submitted record gets, held across the submission: the driver
    /// numbers records in the order they reach it, so the store knows each record's seq
    /// before it is acknowledged (and checks it after).
    next_wal_seq: Mutex<u64>,
    objects: Arc<Objects>,
    /// Durable record bytes above the committed ends (may dip below 0 for a moment: an
    /// acknowledgement can be counted after its record was uploaded).
    pending_bytes: AtomicI64,
    /// Since when bytes have been pending (nanoseconds since `started`).
    pending_since: Mutex<Option<Nanos>>,
    started: Instant,
    inflight_bytes: Arc<Semaphore>,
    /// Set once, by the first failed append; from then on appends are refused.
    failure: OnceLock<String>,
    /// Bumped at every acknowledgement and at the failure, for the duplicates waiting
    /// until the first copy of their record is durable.
    progress: watch::Sender<u64>,
    wal: Wal,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Store {
    /// Rebuilds the streams from what the WAL's recovery found: every record goes back to
    /// its stream's log cache at its offset, durable, and into the producers' table.
    ///
    /// The metadata's committed ends come first: a WAL record below its stream's committed
    /// end is already in an object (the WAL was not trimmed that far yet) and is skipped.
    pub fn recover(wal: Wal, recovered: Recovered, meta: &MetaState, objects: Arc<Objects>) -> Result<Store, String> {
        let mut streams: BTreeMap<String, StreamState> = BTreeMap::new();
        for (name, committed) in meta.streams() {
            streams.insert(
                name.to_string(),
                StreamState {
                    log: StreamLog::starting_at(committed.committed),
                    producers: meta.producers(name).cloned().unwrap_or_default(),
                    committed: committed.committed,
                    runs: committed.runs.clone(),
                },
            );
        }
        let mut pending_bytes = 0;
        for record in &recovered.records {
            let append = AppendRecord::decode(&record.key, &record.value)
                .map_err(|error| format!("{}: WAL record {}: {error}", wal.name(), record.seq))?;
            let state = streams.entry(append.stream.clone()).or_insert_with(StreamState::empty);
            if append.offset < state.committed {
                continue;
            }
            if append.offset != state.log.end() {
                return Err(format!(
                    "{}: WAL record {}: stream {} offset {}, expected offset {}",
                    wal.name(),
                    record.seq,
                    append.stream,
                    append.offset,
                    state.log.end()
                ));
            }
            if let Some(producer) = &append.producer {
                state.producers.record(&producer.id, producer.epoch, producer.seq, append.offset);
            }
            pending_bytes += pending_bytes_of(&append.value);
            state.log.push(CachedRecord {
                offset: append.offset,
                producer: append.producer,
                value: append.value,
                wal_seq: record.seq,
            });
            state.log.mark_durable(append.offset, record.seq);
        }
        let streams = streams.into_iter().map(|(name, state)| (name, Arc::new(Mutex::new(state)))).collect();
        Ok(Store {
            streams: Mutex::new(streams),
            writer: wal.async_writer(),
            next_wal_seq: Mutex::new(recovered.next_seq),
            objects,
            pending_bytes: AtomicI64::new(pending_bytes),
            pending_since: Mutex::new((pending_bytes > 0).then_some(Nanos(0))),
            started: Instant::now(),
            inflight_bytes: Arc::new(Semaphore::new(INFLIGHT_BYTES_MAX)),
            failure: OnceLock::new(),
            progress: watch::Sender::new(0),
            wal,
        })
    }

    /// The WAL's name in messages.
    pub fn wal_name(&self) -> &str {
        self.wal.name()
    }

    fn stream(&self, name: &str) -> Option<Stream> {
        lock(&self.streams).get(name).cloned()
    }

    fn stream_or_create(&self, name: &str) -> Result<Stream, AppendError> {
        let mut streams = lock(&self.streams);
        if let Some(stream) = streams.get(name) {
            return Ok(Arc::clone(stream));
        }
        if streams.len() >= STREAMS_MAX {
            return Err(AppendError::TooManyStreams);
        }
        let stream = Arc::new(Mutex::new(StreamState::empty()));
        streams.insert(name.to_string(), Arc::clone(&stream));
        Ok(stream)
    }

    /// Records the first failure; every later append is refused.
    fn fail(&self, error: &WalError) -> String {
        let message = self.failure.get_or_init(|| error.to_string()).clone();
        self.progress.send_modify(|n| *n += 1);
        message
    }

    /// Appends `value` to `stream` and answers once it is durable.
    pub async fn append(
        &self,
        stream: &str,
        producer: Option<ProducerStamp>,
        value: Vec<u8>,
    ) -> Result<Appended, AppendError> {
        self.append_batch(stream, producer, vec![value]).await
    }

    /// Appends `values` to `stream` as one batch at consecutive offsets and answers once
    /// every one is durable. With a producer, its seq names the first record and record
    /// `i` takes seq `seq + i`; the batch passes the producer check as a whole
    /// ([`ProducerTable::check_batch`]): a retry of seqs all appended already is answered
    /// as a duplicate with the offsets they got, any other overlap or a gap is refused.
    pub async fn append_batch(
        &self,
        stream: &str,
        producer: Option<ProducerStamp>,
        values: Vec<Vec<u8>>,
    ) -> Result<Appended, AppendError> {
        let count = values.len() as u64;
        if values.is_empty() || values.len() > BATCH_RECORDS_MAX {
            return Err(AppendError::BadBatch(format!("{count} records: a batch holds 1 to {BATCH_RECORDS_MAX}")));
        }
        if let Some(stamp) = &producer {
            if stamp.seq.checked_add(count - 1).is_none() {
                return Err(AppendError::BadBatch(format!("seq {} plus {count} records is past the last seq", stamp.seq)));
            }
        }
        let bad_record = |error: RecordError, producer: &Option<ProducerStamp>| match error {
            RecordError::BadStream(error) => AppendError::BadName { what: "stream name", name: stream.to_string(), error },
            RecordError::BadProducer(error) => AppendError::BadName {
                what: "producer id",
                name: producer.as_ref().map_or(String::new(), |p| p.id.clone()),
                error,
            },
            other => AppendError::BadRecord(other),
        };
        // The names once, then every value's size.
        let mut record = AppendRecord { stream: stream.to_string(), offset: 0, producer, value: Vec::new() };
        record.check().map_err(|error| bad_record(error, &record.producer))?;
        let mut value_bytes = 0;
        let mut cost = 0;
        for value in &values {
            if value.len() > VALUE_BYTES_MAX {
                return Err(AppendError::BadRecord(RecordError::ValueTooLarge { bytes: value.len() }));
            }
            value_bytes += pending_bytes_of(value);
            cost += tiny::record_len(record.stream.len(), value.len() + 160);
        }
        if let Some(message) = self.failure.get() {
            return Err(AppendError::Stopped(message.clone()));
        }
        let _permit = Arc::clone(&self.inflight_bytes)
            .acquire_many_owned(cost.min(INFLIGHT_BYTES_MAX) as u32)
            .await
            .expect("the semaphore is never closed");
        let handle = self.stream_or_create(stream)?;
        // The guard never lives across an await: the block ends before any.
        let submitted = 'locked: {
            let mut state = lock(&handle);
            if let Some(message) = self.failure.get() {
                return Err(AppendError::Stopped(message.clone()));
            }
            if let Some(stamp) = &record.producer {
                match state.producers.check_batch(&stamp.id, stamp.epoch, stamp.seq, count) {
                    Verdict::Fresh => {}
                    Verdict::Duplicate { offset } => break 'locked Err(offset),
                    Verdict::StaleEpoch { current } => {
                        return Err(AppendError::StaleEpoch { producer: stamp.id.clone(), epoch: stamp.epoch, current })
                    }
                    Verdict::SeqGap { expected } => {
                        return Err(AppendError::SeqGap { producer: stamp.id.clone(), seq: stamp.seq, expected })
                    }
                    Verdict::TooManyProducers => return Err(AppendError::TooManyProducers { stream: record.stream }),
                }
            }
            let first_offset = state.log.end();
            let first_seq = record.producer.as_ref().map(|stamp| stamp.seq);
            let mut pending = Vec::with_capacity(values.len());
            let mut bytes = Vec::with_capacity(values.iter().map(Vec::len).max().unwrap_or(0) + 32);
            let mut next_wal_seq = lock(&self.next_wal_seq);
            let first_wal_seq = *next_wal_seq;
            for (index, value) in values.into_iter().enumerate() {
                record.offset = first_offset + index as u64;
                if let (Some(stamp), Some(first_seq)) = (&mut record.producer, first_seq) {
                    stamp.seq = first_seq + index as u64;
                }
                record.value = value;
                record.encode_value(&mut bytes);
                match self.writer.submit(record.key(), &bytes) {
                    Ok(answer) => pending.push(answer),
                    // Records of this batch already submitted may be written: their
                    // offsets are fixed and the rest would be a gap, so the store stops.
                    Err(error) if index > 0 => {
                        *next_wal_seq += index as u64;
                        return Err(AppendError::Unknown(self.fail(&error)));
                    }
                    Err(error) => return Err(AppendError::Stopped(self.fail(&error))),
                }
                if let Some(stamp) = &record.producer {
                    state.producers.record(&stamp.id, stamp.epoch, stamp.seq, record.offset);
                }
                let wal_seq = first_wal_seq + index as u64;
                let value = std::mem::take(&mut record.value);
                state.log.push(CachedRecord { offset: record.offset, producer: record.producer.clone(), value, wal_seq });
            }
            *next_wal_seq += count;
            Ok((first_offset, first_wal_seq, pending))
        };
        let (first_offset, first_wal_seq, pending) = match submitted {
            Ok(submitted) => submitted,
            Err(duplicate_of) => return self.duplicate(&handle, duplicate_of, count).await,
        };
        for (index, answer) in pending.into_iter().enumerate() {
            let expected_wal_seq = first_wal_seq + index as u64;
            match answer.durable().await {
                Ok(wal_seq) if wal_seq != expected_wal_seq => {
                    let error = WalError::Refused(format!("the WAL gave seq {wal_seq} to the record expecting {expected_wal_seq}"));
                    return Err(AppendError::Unknown(self.fail(&error)));
                }
                Ok(_) => {}
                // Any failure after the submission leaves the record's fate unknown, and
                // the stream's later offsets cannot be trusted to follow without a gap:
                // stop.
                Err(error) => return Err(AppendError::Unknown(self.fail(&error))),
            }
        }
        let last_offset = first_offset + count - 1;
        lock(&handle).log.mark_durable(last_offset, first_wal_seq + count - 1);
        if self.pending_bytes.fetch_add(value_bytes, Ordering::AcqRel) <= 0 {
            let now = self.now();
            lock(&self.pending_since).get_or_insert(now);
        }
        // Only duplicates waiting for their first copy listen. One that subscribed before
        // the `mark_durable` above took the stream's lock is counted here; one that
        // subscribes later finds the records durable under that lock.
        if self.progress.receiver_count() > 0 {
            self.progress.send_modify(|n| *n += 1);
        }
        Ok(Appended { offset: first_offset, count, duplicate: false })
    }

    /// A duplicate is answered once the first copy is durable (it may still be in flight):
    /// `count` records from `offset`.
    async fn duplicate(&self, handle: &Stream, offset: u64, count: u64) -> Result<Appended, AppendError> {
        let mut progress = self.progress.subscribe();
        loop {
            if lock(handle).log.durable_end() >= offset + count {
                return Ok(Appended { offset, count, duplicate: true });
            }
            if let Some(message) = self.failure.get() {
                return Err(AppendError::Unknown(message.clone()));
            }
            if progress.changed().await.is_err() {
                return Err(AppendError::Unknown("the store is shutting down".to_string()));
            }
        }
    }

    /// Up to `max` durable records of `stream` from `from`: from the log cache, or, below
    /// it, from the one committed object holding `from` (the answer then ends with that
    /// object's run; `next` says where to go on).
    pub async fn read(&self, stream: &str, from: u64, max: usize) -> Result<ReadAnswer, ReadFailure> {
        check_name(stream).map_err(|error| ReadFailure::BadStream(stream.to_string(), error))?;
        let handle = self.stream(stream).ok_or_else(|| ReadFailure::NoSuchStream(stream.to_string()))?;
        let (run, end) = {
            let state = lock(&handle);
            let end = state.log.durable_end();
            if from >= state.log.start() {
                let records: Vec<CachedRecord> = state.log.read(from, max).map_err(ReadFailure::Range)?.cloned().collect();
                let next = from + records.len() as u64;
                return Ok(ReadAnswer { records, next, end });
            }
            let at = state.runs.partition_point(|&(_, run_end, _)| run_end <= from);
            match state.runs.get(at) {
                Some(&run) if run.0 <= from => (run, end),
                _ => {
                    return Err(ReadFailure::Range(ReadError::BelowCache { from, start: state.log.start() }));
                }
            }
        };
        let (start, run_end, id) = run;
        let bytes = self.objects.get(id).await.map_err(ReadFailure::Object)?;
        let runs = object::decode(&bytes).map_err(|error| ReadFailure::Object(format!("{}: object {id}: {error}", self.objects.name())))?;
        let Some(found) = runs.into_iter().find(|r| r.stream == stream && r.start == start && r.end() == run_end) else {
            return Err(ReadFailure::Object(format!("{}: object {id} has no run {stream}@{start}..{run_end}", self.objects.name())));
        };
        let skip = (from - start) as usize;
        let take = max.min(walab_core::stream_store::log_cache::READ_RECORDS_MAX);
        let records: Vec<CachedRecord> = found
            .records
            .into_iter()
            .enumerate()
            .skip(skip)
            .take(take)
            .map(|(index, stored)| CachedRecord {
                offset: start + index as u64,
                producer: stored.producer,
                value: stored.value,
                wal_seq: 0,
            })
            .collect();
        let next = from + records.len() as u64;
        Ok(ReadAnswer { records, next, end })
    }

    fn now(&self) -> Nanos {
        Nanos(self.started.elapsed().as_nanos() as u64)
    }

    /// Whether the upload task should seal a block now.
    pub fn upload_due(&self, policy: &SealPolicy) -> bool {
        let pending = self.pending_bytes.load(Ordering::Acquire).max(0) as usize;
        policy.due(pending, *lock(&self.pending_since), self.now())
    }

    /// The durable records above every stream's committed end, in stream-name order,
    /// copied until about `bytes_max` record bytes (at least one record).
    pub fn pending_runs(&self, bytes_max: usize) -> Vec<Run> {
        let streams: Vec<(String, Stream)> =
            lock(&self.streams).iter().map(|(name, stream)| (name.clone(), Arc::clone(stream))).collect();
        let mut runs = Vec::new();
        let mut bytes = 0;
        for (name, handle) in streams {
            if bytes >= bytes_max {
                break;
            }
            let state = lock(&handle);
            let records = state.log.durable_from(state.committed);
            let mut run = Run { stream: name, start: state.committed, records: Vec::new() };
            for record in records {
                if bytes >= bytes_max {
                    break;
                }
                bytes += record.value.len() + 32;
                run.records.push(StoredRecord { producer: record.producer.clone(), value: record.value.clone() });
            }
            if !run.records.is_empty() {
                runs.push(run);
            }
        }
        runs
    }

    /// A commit is durable: advance the streams, drop what it covers from the log cache,
    /// and confirm the WAL below the oldest record not yet committed.
    pub fn committed(&self, objects: &[ObjectEntry]) {
        let mut dropped = 0;
        for object in objects {
            for run in &object.runs {
                let Some(handle) = self.stream(&run.stream) else { continue };
                let mut state = lock(&handle);
                assert_eq!(state.committed, run.start, "a commit continues its stream");
                state.runs.push((run.start, run.end, object.id));
                state.committed = run.end;
                dropped += state.log.drop_below(run.end);
            }
        }
        let left = self.pending_bytes.fetch_sub(dropped as i64, Ordering::AcqRel) - dropped as i64;
        *lock(&self.pending_since) = (left > 0).then(|| self.now());
        self.wal.confirm_consumer(self.trim_through());
    }

    /// The WAL seq through which every record is committed.
    fn trim_through(&self) -> u64 {
        // Read first: a record submitted after this gets a larger seq.
        let next = *lock(&self.next_wal_seq);
        let streams: Vec<Stream> = lock(&self.streams).values().cloned().collect();
        let mut through = next.saturating_sub(1);
        for handle in streams {
            if let Some(first) = lock(&handle).log.first() {
                through = through.min(first.wal_seq.saturating_sub(1));
            }
        }
        through
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
        }
    }

    /// One stream's positions.
    pub fn summary(&self, stream: &str) -> Result<StreamSummary, ReadFailure> {
        check_name(stream).map_err(|error| ReadFailure::BadStream(stream.to_string(), error))?;
        let handle = self.stream(stream).ok_or_else(|| ReadFailure::NoSuchStream(stream.to_string()))?;
        let state = lock(&handle);
        Ok(StreamSummary { stream: stream.to_string(), end: state.log.durable_end(), committed: state.committed })
    }

    /// Every stream with a durable record, by name.
    pub fn summaries(&self) -> Vec<StreamSummary> {
        let streams: Vec<(String, Stream)> =
            lock(&self.streams).iter().map(|(name, stream)| (name.clone(), Arc::clone(stream))).collect();
        streams
            .into_iter()
            .filter_map(|(stream, handle)| {
                let state = lock(&handle);
                let end = state.log.durable_end();
                (end > 0).then(|| StreamSummary { stream, end, committed: state.committed })
            })
            .collect()
    }
}

