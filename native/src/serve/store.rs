//! [`Store`]: the streams, their producers and log caches, over one open [`Wal`].

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

use tokio::sync::{watch, Semaphore};
use walab_core::codec::tiny;
use walab_core::stream_store::log_cache::{CachedRecord, ReadError, StreamLog};
use walab_core::stream_store::producers::{ProducerTable, Verdict};
use walab_core::stream_store::record::{AppendRecord, ProducerStamp, RecordError};
use walab_core::stream_store::{check_name, NameError};

use crate::wal::{AsyncWriter, Recovered, Wal, WalError};

/// The most streams one store holds; an append that would create one more is refused.
pub const STREAMS_MAX: usize = 100_000;

/// The most record bytes submitted to the WAL and not yet acknowledged. Appends past it
/// wait before they are given an offset, so the group-commit machine's own bounds (its
/// unflushed bytes and waiters), which would refuse a record whose offset is already
/// fixed, are never reached.
pub const INFLIGHT_BYTES_MAX: usize = 64 << 20;

/// An acknowledged append.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Appended {
    pub offset: u64,
    /// The producer's last seq again: `offset` is what it got the first time.
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
}

/// A read's answer: durable records from `from`, the next offset to read, the end.
#[derive(Clone, Debug)]
pub struct ReadAnswer {
    pub records: Vec<CachedRecord>,
    pub next: u64,
    pub end: u64,
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
}

type Stream = Arc<Mutex<StreamState>>;

/// The stream store over one WAL.
pub struct Store {
    streams: Mutex<BTreeMap<String, Stream>>,
    writer: AsyncWriter,
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
    pub fn recover(wal: Wal, recovered: Recovered) -> Result<Store, String> {
        let mut streams: BTreeMap<String, StreamState> = BTreeMap::new();
        for record in &recovered.records {
            let append = AppendRecord::decode(&record.key, &record.value)
                .map_err(|error| format!("{}: WAL record {}: {error}", wal.name(), record.seq))?;
            let state = streams.entry(append.stream.clone()).or_insert_with(|| StreamState {
                log: StreamLog::starting_at(0),
                producers: ProducerTable::default(),
                committed: 0,
            });
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
        let stream = Arc::new(Mutex::new(StreamState {
            log: StreamLog::starting_at(0),
            producers: ProducerTable::default(),
            committed: 0,
        }));
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
        let mut record = AppendRecord { stream: stream.to_string(), offset: 0, producer, value };
        record.check().map_err(|error| match error {
            RecordError::BadStream(error) => AppendError::BadName { what: "stream name", name: stream.to_string(), error },
            RecordError::BadProducer(error) => AppendError::BadName {
                what: "producer id",
                name: record.producer.as_ref().map_or(String::new(), |p| p.id.clone()),
                error,
            },
            other => AppendError::BadRecord(other),
        })?;
        if let Some(message) = self.failure.get() {
            return Err(AppendError::Stopped(message.clone()));
        }
        let cost = tiny::record_len(record.stream.len(), record.value.len() + 160).min(INFLIGHT_BYTES_MAX);
        let _permit = Arc::clone(&self.inflight_bytes)
            .acquire_many_owned(cost as u32)
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
                match state.producers.check(&stamp.id, stamp.epoch, stamp.seq) {
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
            record.offset = state.log.end();
            let mut bytes = Vec::with_capacity(record.value.len() + 32);
            record.encode_value(&mut bytes);
            let pending = match self.writer.submit(record.key(), &bytes) {
                Ok(pending) => pending,
                Err(error) => return Err(AppendError::Stopped(self.fail(&error))),
            };
            if let Some(stamp) = &record.producer {
                state.producers.record(&stamp.id, stamp.epoch, stamp.seq, record.offset);
            }
            let offset = record.offset;
            state.log.push(CachedRecord { offset, producer: record.producer, value: record.value, wal_seq: 0 });
            Ok((offset, pending))
        };
        let (offset, pending) = match submitted {
            Ok(submitted) => submitted,
            Err(duplicate_of) => return self.duplicate(&handle, duplicate_of).await,
        };
        match pending.durable().await {
            Ok(wal_seq) => {
                lock(&handle).log.mark_durable(offset, wal_seq);
                self.progress.send_modify(|n| *n += 1);
                Ok(Appended { offset, duplicate: false })
            }
            // Any failure after the submission leaves the record's fate unknown, and the
            // stream's later offsets cannot be trusted to follow without a gap: stop.
            Err(error) => Err(AppendError::Unknown(self.fail(&error))),
        }
    }

    /// A duplicate is answered once the first copy is durable (it may still be in flight).
    async fn duplicate(&self, handle: &Stream, offset: u64) -> Result<Appended, AppendError> {
        let mut progress = self.progress.subscribe();
        loop {
            if lock(handle).log.durable_end() > offset {
                return Ok(Appended { offset, duplicate: true });
            }
            if let Some(message) = self.failure.get() {
                return Err(AppendError::Unknown(message.clone()));
            }
            if progress.changed().await.is_err() {
                return Err(AppendError::Unknown("the store is shutting down".to_string()));
            }
        }
    }

    /// Up to `max` durable records of `stream` from `from`.
    pub fn read(&self, stream: &str, from: u64, max: usize) -> Result<ReadAnswer, ReadFailure> {
        check_name(stream).map_err(|error| ReadFailure::BadStream(stream.to_string(), error))?;
        let handle = self.stream(stream).ok_or_else(|| ReadFailure::NoSuchStream(stream.to_string()))?;
        let state = lock(&handle);
        let records: Vec<CachedRecord> = state.log.read(from, max).map_err(ReadFailure::Range)?.cloned().collect();
        let next = from + records.len() as u64;
        Ok(ReadAnswer { records, next, end: state.log.durable_end() })
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

