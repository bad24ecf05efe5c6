//! One stream in memory: what it was created with, and its state behind its lock.
//!
//! The configuration (content type, expiry, fork base) never changes after creation,
//! so it sits outside the lock. The state (the log cache, the committed runs, the
//! producers, the closure) changes under [`Stream::state`], which is held only for
//! checks and in-memory updates, never across an await. Creating and deleting a stream
//! take its [`Stream::lifecycle`] lock (a tokio mutex, held across the metadata log's
//! write), so a request that finds a stream being created waits for the outcome
//! instead of seeing half of it.
//!
//! Readers waiting for more (long-poll, SSE) subscribe to [`Stream::wake`], which is
//! bumped whenever the durable end moves, the stream closes, or it goes away.

use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::watch;
use walab_core::stream_store::expiry::Expiry;
use walab_core::stream_store::log_cache::StreamLog;
use walab_core::stream_store::meta::{ForkBase, StreamConfig};
use walab_core::stream_store::offset::Offset;
use walab_core::stream_store::producers::ProducerTable;
use walab_core::stream_store::record::ProducerStamp;
use walab_core::stream_store::StreamId;

use super::body::{media_type, JSON_MEDIA_TYPE};

/// Where a stream is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Its `PUT` is being made durable; nothing else may touch it yet.
    Creating,
    Live,
    /// Deleted while forks read it: `410` to clients, readable by its forks.
    SoftDeleted,
    /// Gone (deleted, expired, or its creation failed).
    Removed,
}

/// A fork's source and where it branches off.
pub struct Fork {
    pub source: Arc<Stream>,
    pub at: Offset,
    pub sub_offset: u64,
}

/// One stream.
pub struct Stream {
    pub id: StreamId,
    pub name: String,
    /// As the creating `PUT` gave it (returned on every read).
    pub content_type: String,
    /// `application/json`: messages, read back as one JSON array.
    pub json: bool,
    pub expiry: Expiry,
    pub fork: Option<Fork>,
    pub(super) lifecycle: tokio::sync::Mutex<()>,
    pub(super) state: Mutex<StreamState>,
    pub(super) wake: watch::Sender<u64>,
}

/// A stream's changing state.
pub struct StreamState {
    pub status: Status,
    /// Its own records above the committed end.
    pub log: StreamLog,
    /// `(start, end, object id)` of its committed runs, by start.
    pub runs: Vec<(Offset, Offset, u64)>,
    pub producers: ProducerTable,
    pub stream_seq: Option<String>,
    /// A close was submitted: appends are refused from then on.
    pub closed: bool,
    pub closed_by: Option<ProducerStamp>,
    /// Requests submitted to the WAL, and how many of them are known durable (a
    /// duplicate waits until every request before it is).
    pub submitted: u64,
    pub durable: u64,
    /// The last read or write, for a sliding TTL (milliseconds since 1970).
    pub last_access_ms: u64,
}

impl StreamState {
    /// The stream is closed and its closing request is durable: what readers see.
    pub fn closed_durably(&self) -> bool {
        self.closed && self.durable == self.submitted
    }

    /// Readable records end here.
    pub fn tail(&self) -> Offset {
        self.log.durable()
    }
}

impl Stream {
    /// A stream with `config`, whose own records start at `committed` (its base when
    /// nothing is committed), in `status`.
    pub fn new(id: StreamId, config: &StreamConfig, fork: Option<Fork>, committed: Offset, status: Status, now_ms: u64) -> Stream {
        let state = StreamState {
            status,
            log: StreamLog::starting_at(committed),
            runs: Vec::new(),
            producers: ProducerTable::default(),
            stream_seq: None,
            closed: false,
            closed_by: None,
            submitted: 0,
            durable: 0,
            last_access_ms: now_ms,
        };
        Stream {
            id,
            name: config.name.clone(),
            content_type: config.content_type.clone(),
            json: media_type(&config.content_type) == JSON_MEDIA_TYPE,
            expiry: config.expiry,
            fork,
            lifecycle: tokio::sync::Mutex::new(()),
            state: Mutex::new(state),
            wake: watch::Sender::new(0),
        }
    }

    pub fn lock(&self) -> MutexGuard<'_, StreamState> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Wakes the readers waiting for more.
    pub fn wake_readers(&self) {
        if self.wake.receiver_count() > 0 {
            self.wake.send_modify(|n| *n += 1);
        }
    }

    /// Where its own records start: 0, or its fork's offset.
    pub fn base(&self) -> Offset {
        self.fork.as_ref().map_or(Offset::START, |fork| fork.at)
    }

    /// The configuration as the metadata log holds it.
    pub fn config(&self) -> StreamConfig {
        StreamConfig {
            name: self.name.clone(),
            content_type: self.content_type.clone(),
            expiry: self.expiry,
            fork: self.fork.as_ref().map(|fork| ForkBase { source: fork.source.id, at: fork.at, sub_offset: fork.sub_offset }),
        }
    }
}
