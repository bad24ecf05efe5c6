//! Reads: durable records from an offset, stitched from wherever they are, and waiting
//! for more.
//!
//! A stream's records below its tail are in one of three places, and a read takes them
//! piece by piece in order until it holds enough bytes or reaches the tail:
//!
//! ```text
//!   0            fork offset          committed end          tail
//!   | the source's  |  committed objects  |   the log cache     |
//!   | records (a fork's inheritance)      |   (durable records) |
//! ```
//!
//! A fork's records below its fork offset are its source's, read from the source (which
//! may itself be a fork) and never past the fork offset, so appends to the source after
//! the fork never show. Below the log cache a read fetches the object holding the
//! record (no object cache). Only acknowledged records are ever returned: the tail is
//! the log cache's durable end, read once at the start of the read.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use walab_core::stream_store::log_cache::ReadError;
use walab_core::stream_store::object;
use walab_core::stream_store::offset::{Offset, ReadFrom};

use super::store::{Store, StoreError};
use super::stream::{Status, Stream};

/// The most data bytes one read returns (at least one record, however large). Large
/// enough that clients which take one catch-up answer as the whole stream (the
/// TypeScript client with `live: false` does) see every record of a stream of a few
/// megabytes; a response shares the records' bytes rather than copying them.
pub const READ_BYTES_MAX: usize = 16 << 20;

/// A read's answer: the records' bodies from `from` to `next`, and the stream's tail and
/// closure when the read began.
#[derive(Clone, Debug)]
pub struct ReadAnswer {
    pub bodies: Vec<Arc<[u8]>>,
    pub from: Offset,
    pub next: Offset,
    pub tail: Offset,
    /// The stream is closed (durably).
    pub closed: bool,
}

impl ReadAnswer {
    /// Everything there was is in the answer.
    pub fn up_to_date(&self) -> bool {
        self.next == self.tail
    }

    /// The answer reaches the end of a closed stream.
    pub fn at_end_of_stream(&self) -> bool {
        self.closed && self.up_to_date()
    }

    pub fn is_empty(&self) -> bool {
        self.bodies.is_empty()
    }
}

/// How a wait for more ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Waited {
    /// Records past the offset are durable.
    More,
    /// The stream closed with nothing past the offset.
    Closed,
    Timeout,
    /// The stream went away.
    Gone,
}

type Piece = Vec<(Offset, Arc<[u8]>)>;

fn read_error(error: ReadError) -> StoreError {
    match error {
        ReadError::PastEnd { .. } | ReadError::NotABoundary { .. } => StoreError::BadRequest(error.to_string()),
        ReadError::BelowCache { .. } => StoreError::Internal(format!("records lost track of: {error}")),
    }
}

impl Store {
    /// Where a read from `from` starts.
    pub fn start_of(&self, stream: &Stream, from: ReadFrom) -> Offset {
        match from {
            ReadFrom::Start => Offset::START,
            ReadFrom::Now => stream.lock().tail(),
            ReadFrom::At(offset) => offset,
        }
    }

    /// The durable records of `stream` from `from`, until about `bytes_max` bytes (at
    /// least one record when there is one past `from`).
    pub async fn read(&self, stream: &Arc<Stream>, from: Offset, bytes_max: usize) -> Result<ReadAnswer, StoreError> {
        let (tail, closed) = {
            let state = stream.lock();
            if state.status == Status::Removed {
                return Err(StoreError::NotFound);
            }
            (state.tail(), state.closed_durably())
        };
        if from.index > tail.index || (from.index == tail.index && from != tail) {
            return Err(StoreError::BadRequest(format!("offset {from} is past the stream's tail {tail}")));
        }
        let mut at = from;
        let mut bodies = Vec::new();
        let mut bytes = 0;
        while at.index < tail.index && (bodies.is_empty() || bytes < bytes_max) {
            let piece = self.piece(stream, at, tail, bytes_max.saturating_sub(bytes).max(1)).await?;
            if piece.is_empty() {
                return Err(StoreError::Internal(format!("stream {}: no record at {at}, below its tail {tail}", stream.id)));
            }
            for (start, body) in piece {
                if start != at {
                    return Err(StoreError::Internal(format!("stream {}: a record at {start} where {at} was expected", stream.id)));
                }
                at = Offset::new(at.index + 1, at.bytes + body.len() as u64);
                bytes += body.len();
                bodies.push(body);
            }
        }
        Ok(ReadAnswer { bodies, from, next: at, tail, closed })
    }

    /// Records from `at`, from one place (the source, one object, or the log cache), none
    /// ending past `limit`.
    fn piece<'a>(
        &'a self,
        stream: &'a Arc<Stream>,
        at: Offset,
        limit: Offset,
        bytes_max: usize,
    ) -> Pin<Box<dyn Future<Output = Result<Piece, StoreError>> + Send + 'a>> {
        Box::pin(async move {
            if let Some(fork) = &stream.fork {
                if at.index < fork.at.index {
                    return self.piece(&fork.source, at, limit.min(fork.at), bytes_max).await;
                }
            }
            let (start, end, id) = {
                let state = stream.lock();
                if at.index >= state.log.start().index {
                    let records = state.log.read(at, bytes_max).map_err(read_error)?;
                    return Ok(records.into_iter().take_while(|r| r.end().index <= limit.index).map(|r| (r.start, r.body)).collect());
                }
                let holding = state.runs.partition_point(|&(_, end, _)| end.index <= at.index);
                match state.runs.get(holding) {
                    Some(&run) if run.0.index <= at.index => run,
                    _ => {
                        return Err(StoreError::Internal(format!(
                            "stream {}: no committed object holds record {} (the log cache starts at {})",
                            stream.id,
                            at.index,
                            state.log.start()
                        )))
                    }
                }
            };
            let bytes = self.objects.get(id).await.map_err(StoreError::ObjectStore)?;
            let runs = object::decode(&bytes)
                .map_err(|error| StoreError::ObjectStore(format!("{}: object {id}: {error}", self.objects.name())))?;
            let Some(run) = runs.into_iter().find(|run| run.stream == stream.id && run.start == start && run.end() == end) else {
                return Err(StoreError::ObjectStore(format!(
                    "{}: object {id} has no run of stream {} from {start} to {end}",
                    self.objects.name(),
                    stream.id
                )));
            };
            let mut position = run.start;
            let mut piece = Vec::new();
            let mut taken = 0;
            for body in run.bodies {
                let next = Offset::new(position.index + 1, position.bytes + body.len() as u64);
                if position.index >= at.index {
                    if position.index == at.index && position != at {
                        return Err(read_error(ReadError::NotABoundary { from: at }));
                    }
                    if next.index > limit.index || (!piece.is_empty() && taken >= bytes_max) {
                        break;
                    }
                    taken += body.len();
                    piece.push((position, body));
                }
                position = next;
            }
            Ok(piece)
        })
    }

    /// Waits until records past `after` are durable, the stream closes, it goes away, or
    /// `deadline` passes.
    pub async fn wait(&self, stream: &Stream, after: Offset, deadline: tokio::time::Instant) -> Waited {
        let mut wake = stream.wake.subscribe();
        loop {
            {
                let state = stream.lock();
                if matches!(state.status, Status::Removed | Status::SoftDeleted) {
                    return Waited::Gone;
                }
                if state.tail().index > after.index {
                    return Waited::More;
                }
                if state.closed_durably() {
                    return Waited::Closed;
                }
            }
            tokio::select! {
                changed = wake.changed() => if changed.is_err() { return Waited::Gone },
                _ = tokio::time::sleep_until(deadline) => return Waited::Timeout,
            }
        }
    }
}
