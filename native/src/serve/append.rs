//! Appends (`POST`) and creates (`PUT`): a request becomes one WAL record of its stream
//! (cut in fragments when large) and is answered once it is durable.
//!
//! ```text
//!  POST              stream's lock                                   WAL driver
//!  ── checks ──▶ index = end; submit(fragments) ──Event::Append──▶ group commit, persist
//!                push to the log cache (not yet readable)
//!  ◀── 200/204 ── mark durable, wake readers ◀──── Ok(wal seq) ◀──── ack in order
//! ```
//!
//! The stream's lock covers the checks (closed, content type, producer, `Stream-Seq`),
//! the index assignment and the submission to the WAL driver (a channel send); the
//! request then waits for durability outside it, so requests pipelined on one stream
//! join the same group commit. Because a stream's records are submitted in index order
//! and the WAL acknowledges in submission order, an acknowledged request means every
//! earlier request of that stream is durable too: reads return records up to the
//! highest acknowledged end and never more.
//!
//! A `PUT` that creates a stream writes its initial record (its body, a fork's
//! inherited prefix, a close) to the WAL first, under the new stream's number, and then
//! the stream itself to the metadata log; it is answered once both are durable. A crash
//! between the two leaves a WAL record of a number nothing names, which recovery skips:
//! the stream and its first record exist together or not at all.
//!
//! # Failure
//!
//! A failed persist fails its batch and every later one, and a record whose answer is a
//! failure may or may not be in the WAL: the request gets `503` with
//! `"outcome": "unknown"`, and the store takes no more appends until it is restarted
//! (recovery then says what the WAL holds). A record index already handed to a record
//! that was never written would leave a gap, which is why the store stops instead of
//! going on.

use std::sync::Arc;

use walab_core::stream_store::expiry::Expiry;
use walab_core::stream_store::log_cache::{CachedClose, CachedRecord};
use walab_core::stream_store::meta::MetaCommand;
use walab_core::stream_store::offset::Offset;
use walab_core::stream_store::producers::Verdict;
use walab_core::stream_store::record::{AppendRecord, ProducerStamp};
use walab_core::stream_store::upload::pending_bytes_of;
use walab_core::stream_store::StreamId;

use super::body::{concat, json_prefix, json_record, media_type, same_media_type, DEFAULT_CONTENT_TYPE};
use super::store::{lock, now_unix_ms, Store, StoreError};
use super::stream::{Fork, Status, Stream};
use crate::wal::{PendingAppend, WalError};

/// A `POST`.
#[derive(Clone, Debug, Default)]
pub struct AppendRequest {
    /// The request's `Content-Type`, if it had one (needed with a body).
    pub content_type: Option<String>,
    pub body: Vec<u8>,
    pub producer: Option<ProducerStamp>,
    pub stream_seq: Option<String>,
    /// `Stream-Closed: true`.
    pub close: bool,
}

/// What an accepted `POST` did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Appended {
    /// The stream's tail after it.
    pub tail: Offset,
    pub closed: bool,
    /// Appended before: nothing was written.
    pub duplicate: bool,
    /// A producer's epoch and the seq to answer with (its own, or for a duplicate the
    /// highest accepted).
    pub producer: Option<(u64, u64)>,
    /// Data was appended (a producer's fresh append answers `200`, anything else `204`).
    pub data: bool,
}

/// A `PUT`'s fork headers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForkRequest {
    pub source: String,
    pub offset: Option<Offset>,
    pub sub_offset: Option<u64>,
}

/// A `PUT`.
#[derive(Clone, Debug, Default)]
pub struct CreateRequest {
    pub content_type: Option<String>,
    pub expiry: Expiry,
    pub close: bool,
    pub fork: Option<ForkRequest>,
    pub body: Vec<u8>,
}

/// What a `PUT` found or made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Created {
    /// Made now (`201`), or there already with this configuration (`200`).
    pub new: bool,
    pub tail: Offset,
    pub closed: bool,
    pub content_type: String,
}

/// What a `POST`'s checks decided.
enum Decision {
    Submitted { submitted: Submitted, producer: Option<(u64, u64)>, data: bool },
    /// Appended before: answer once every request up to number `request` is durable.
    Duplicate { request: u64, producer: Option<(u64, u64)> },
}

/// A request's record, submitted: its answers and what to mark once they come.
struct Submitted {
    answers: Vec<PendingAppend>,
    first_wal_seq: u64,
    /// The stream's end when it was submitted: durable once it is.
    end: Offset,
    /// Its number among the stream's requests.
    request: u64,
    pending_bytes: usize,
}

impl Store {
    /// Submits `record` for `stream`, whose lock the caller holds as `state`, and updates
    /// the state as if it were durable already (but for the durable marks).
    fn submit(&self, state: &mut super::stream::StreamState, record: AppendRecord) -> Result<Submitted, StoreError> {
        let parts = record.fragment_count();
        let mut answers = Vec::with_capacity(parts);
        let key = record.key();
        let mut value = Vec::with_capacity(record.body.len().min(64_000) + 600);
        let first_wal_seq = {
            let mut next_wal_seq = lock(&self.next_wal_seq);
            let first = *next_wal_seq;
            for part in 0..parts {
                record.encode_fragment(part, &mut value);
                match self.writer.submit(key.as_bytes(), &value) {
                    Ok(answer) => answers.push(answer),
                    // Fragments already submitted may be written: the request's outcome
                    // is unknown, and the store stops.
                    Err(error) if part > 0 => {
                        *next_wal_seq += part as u64;
                        return Err(StoreError::Unknown(self.fail(&error)));
                    }
                    Err(error) => return Err(StoreError::Stopped(self.fail(&error))),
                }
            }
            *next_wal_seq += parts as u64;
            first
        };
        if let Some(producer) = &record.producer {
            state.producers.record(&producer.id, producer.epoch, producer.seq);
        }
        if record.stream_seq.is_some() {
            state.stream_seq = record.stream_seq.clone();
        }
        if record.closes {
            state.closed = true;
            state.closed_by = record.producer.clone();
        }
        let pending_bytes = pending_bytes_of(record.body.len());
        if record.body.is_empty() {
            state.log.push_close(CachedClose { producer: record.producer, wal_seq: first_wal_seq, durable: false });
        } else {
            let start = state.log.end();
            state.log.push(CachedRecord {
                start,
                body: record.body.into(),
                producer: record.producer,
                stream_seq: record.stream_seq,
                closes: record.closes,
                wal_seq: first_wal_seq,
            });
        }
        state.submitted += 1;
        Ok(Submitted { answers, first_wal_seq, end: state.log.end(), request: state.submitted, pending_bytes })
    }

    /// Waits for a submitted request's answers and marks it durable.
    async fn made_durable(&self, stream: &Stream, submitted: Submitted) -> Result<(), StoreError> {
        for (index, answer) in submitted.answers.into_iter().enumerate() {
            let expected = submitted.first_wal_seq + index as u64;
            match answer.durable().await {
                Ok(seq) if seq != expected => {
                    let error = WalError::Refused(format!("the WAL gave seq {seq} to the record expecting {expected}"));
                    return Err(StoreError::Unknown(self.fail(&error)));
                }
                Ok(_) => {}
                // Any failure after the submission leaves the request's fate unknown, and
                // the stream's later records cannot be trusted to follow without a gap:
                // stop.
                Err(error) => return Err(StoreError::Unknown(self.fail(&error))),
            }
        }
        {
            let mut state = stream.lock();
            state.log.mark_durable(submitted.end);
            state.durable = state.durable.max(submitted.request);
            if state.durable == state.submitted && state.log.close().is_some_and(|close| !close.durable) {
                state.log.mark_close_durable();
            }
        }
        self.count_pending(submitted.pending_bytes);
        stream.wake_readers();
        Ok(())
    }

    /// Waits until every request of `stream` up to number `request` is durable (a
    /// duplicate's first copy may still be in flight).
    async fn durable_through(&self, stream: &Stream, request: u64) -> Result<(), StoreError> {
        let mut wake = stream.wake.subscribe();
        loop {
            if stream.lock().durable >= request {
                return Ok(());
            }
            if let Some(failure) = self.failure() {
                return Err(StoreError::Unknown(failure.to_string()));
            }
            if wake.changed().await.is_err() {
                return Err(StoreError::Unknown("the store is shutting down".into()));
            }
        }
    }

    /// `POST`: appends a record (or closes the stream) and answers once it is durable.
    pub async fn append(&self, name: &str, mut request: AppendRequest) -> Result<Appended, StoreError> {
        let stream = self.find(name, true).await?;
        if let Some(failure) = self.failure() {
            return Err(StoreError::Stopped(failure.to_string()));
        }
        let has_body = !request.body.is_empty();
        let type_matches = !has_body || request.content_type.as_deref().is_some_and(|t| same_media_type(t, &stream.content_type));
        // The body as a record, before any lock: JSON is parsed here.
        let body = match (has_body, stream.json) {
            (false, _) => Ok(Vec::new()),
            (true, true) => json_record(&request.body, false).map(|record| record.map(|(bytes, _)| bytes).unwrap_or_default()),
            (true, false) => Ok(std::mem::take(&mut request.body)),
        };
        let cost = pending_bytes_of(body.as_ref().map_or(0, Vec::len)) + 600;
        let _permit = Arc::clone(&self.inflight_bytes)
            .acquire_many_owned(cost.min(super::store::INFLIGHT_BYTES_MAX) as u32)
            .await
            .expect("the semaphore is never closed");
        match self.decide(&stream, &request, body, type_matches)? {
            Decision::Submitted { submitted, producer, data } => {
                let tail = submitted.end;
                self.made_durable(&stream, submitted).await?;
                Ok(Appended { tail, closed: request.close, duplicate: false, producer, data })
            }
            Decision::Duplicate { request: number, producer } => {
                self.durable_through(&stream, number).await?;
                let (tail, closed) = {
                    let state = stream.lock();
                    (state.tail(), state.closed_durably())
                };
                Ok(Appended { tail, closed, duplicate: true, producer, data: false })
            }
        }
    }

    /// A `POST`'s checks, in the protocol's order (closed, content type, producer,
    /// `Stream-Seq`), and its submission, under the stream's lock.
    fn decide(
        &self,
        stream: &Stream,
        request: &AppendRequest,
        body: Result<Vec<u8>, super::body::JsonError>,
        type_matches: bool,
    ) -> Result<Decision, StoreError> {
        let mut state = stream.lock();
        if state.status != Status::Live {
            return Err(if state.status == Status::SoftDeleted { StoreError::Gone } else { StoreError::NotFound });
        }
        let has_body = match &body {
            Ok(body) => !body.is_empty(),
            Err(_) => true,
        };
        if state.closed {
            // The request that closed it, again: a duplicate. A plain close again: fine.
            let same_producer = state.closed_by.is_some() && state.closed_by == request.producer;
            if same_producer || (!has_body && request.close && request.producer.is_none()) {
                let producer = request.producer.as_ref().map(|p| (p.epoch, p.seq));
                return Ok(Decision::Duplicate { request: state.submitted, producer });
            }
            return Err(StoreError::Closed { tail: state.log.end() });
        }
        if !type_matches {
            return Err(StoreError::Conflict(format!(
                "the stream's content type is {}, not {}",
                stream.content_type,
                request.content_type.as_deref().unwrap_or("none")
            )));
        }
        let body = body.map_err(|error| StoreError::BadRequest(error.to_string()))?;
        let mut producer = None;
        if let Some(stamp) = &request.producer {
            match state.producers.check(&stamp.id, stamp.epoch, stamp.seq) {
                Verdict::Fresh => producer = Some((stamp.epoch, stamp.seq)),
                Verdict::Duplicate { last_seq } => {
                    return Ok(Decision::Duplicate { request: state.submitted, producer: Some((stamp.epoch, last_seq)) })
                }
                Verdict::StaleEpoch { current } => return Err(StoreError::StaleEpoch { epoch: stamp.epoch, current }),
                Verdict::NewEpochNotAtZero { seq } => {
                    return Err(StoreError::BadRequest(format!("producer epoch {} is new: its first seq must be 0, not {seq}", stamp.epoch)))
                }
                Verdict::SeqGap { expected, received } => return Err(StoreError::SeqGap { expected, received }),
                Verdict::TooManyProducers => {
                    return Err(StoreError::Full(format!(
                        "the stream already remembers {} producers",
                        walab_core::stream_store::producers::PRODUCERS_PER_STREAM_MAX
                    )))
                }
            }
        }
        if let (Some(seq), Some(last)) = (&request.stream_seq, &state.stream_seq) {
            if seq.as_bytes() <= last.as_bytes() {
                return Err(StoreError::Conflict(format!("Stream-Seq {seq:?} is not after the last one, {last:?}")));
            }
        }
        if body.is_empty() && !request.close {
            return Err(StoreError::BadRequest("an append needs a body (or Stream-Closed: true)".into()));
        }
        if state.log.end().after(body.len() as u64).is_none() {
            return Err(StoreError::TooLarge("the stream has reached the largest offset a token can carry".into()));
        }
        let data = !body.is_empty();
        let record = AppendRecord {
            stream: stream.id,
            index: state.log.end().index,
            producer: request.producer.clone(),
            stream_seq: request.stream_seq.clone(),
            closes: request.close,
            body,
        };
        let submitted = self.submit(&mut state, record)?;
        Ok(Decision::Submitted { submitted, producer, data })
    }

    /// `PUT`: creates the stream (or finds it there with the same configuration).
    pub async fn create(&self, name: &str, request: CreateRequest) -> Result<Created, StoreError> {
        loop {
            let Some(existing) = self.named(name) else { break };
            match self.compare(&existing, &request).await? {
                Some(created) => return Ok(created),
                // Gone meanwhile: make it anew.
                None => continue,
            }
        }
        if let Some(failure) = self.failure().or(self.meta.failed()) {
            return Err(StoreError::Stopped(failure.to_string()));
        }
        let now = now_unix_ms();
        let (fork, content_type, expiry, prefix) = match &request.fork {
            Some(fork) => self.resolve_fork(fork, &request).await?,
            None => (None, request.content_type.clone().unwrap_or_else(|| DEFAULT_CONTENT_TYPE.to_string()), request.expiry, Vec::new()),
        };
        let json = media_type(&content_type) == super::body::JSON_MEDIA_TYPE;
        let body = match json && !request.body.is_empty() {
            true => json_record(&request.body, true).map_err(|error| StoreError::BadRequest(error.to_string()))?.map(|(bytes, _)| bytes).unwrap_or_default(),
            false => request.body,
        };
        let initial = concat(json, &prefix, &body);
        let id: StreamId = self.next_stream_id();
        let base = fork.as_ref().map_or(Offset::START, |fork: &Fork| fork.at);
        let config = walab_core::stream_store::meta::StreamConfig {
            name: name.to_string(),
            content_type: content_type.clone(),
            expiry,
            fork: fork.as_ref().map(|fork| walab_core::stream_store::meta::ForkBase { source: fork.source.id, at: fork.at, sub_offset: fork.sub_offset }),
        };
        let stream = Arc::new(Stream::new(id, &config, fork, base, Status::Creating, now));
        let lifecycle = stream.lifecycle.try_lock().expect("a new stream's lock is free");
        if let Err(existing) = self.insert_creating(Arc::clone(&stream))? {
            drop(lifecycle);
            // Someone created it meanwhile: compare with theirs.
            return match self.compare(&existing, &CreateRequest { body: Vec::new(), ..request }).await? {
                Some(created) => Ok(created),
                None => Err(StoreError::Conflict("the stream was deleted while it was being created; try again".into())),
            };
        }
        if !initial.is_empty() || request.close {
            let submitted = {
                let mut state = stream.lock();
                let record = AppendRecord { stream: id, index: base.index, producer: None, stream_seq: None, closes: request.close, body: initial };
                self.submit(&mut state, record)
            };
            let made = match submitted {
                Ok(submitted) => self.made_durable(&stream, submitted).await,
                Err(error) => Err(error),
            };
            if let Err(error) = made {
                self.abandon(&stream);
                return Err(error);
            }
        }
        if let Err(error) = self.meta.append(MetaCommand::Create { id, config }).await {
            self.abandon(&stream);
            return Err(StoreError::Unknown(error));
        }
        let (tail, closed) = {
            let mut state = stream.lock();
            state.status = Status::Live;
            (state.tail(), state.closed_durably())
        };
        drop(lifecycle);
        Ok(Created { new: true, tail, closed, content_type })
    }

    /// An existing stream against a `PUT`: `Some` when they match (`200`), a conflict when
    /// they do not, `None` when the stream went away meanwhile.
    async fn compare(&self, existing: &Arc<Stream>, request: &CreateRequest) -> Result<Option<Created>, StoreError> {
        // A creation or a delete in progress finishes first.
        drop(existing.lifecycle.lock().await);
        if self.expire_if_due(existing).await {
            return Ok(None);
        }
        let asked_source = request.fork.as_ref().and_then(|fork| self.named(&fork.source));
        let state = existing.lock();
        match state.status {
            Status::Removed => return Ok(None),
            Status::SoftDeleted => {
                return Err(StoreError::Conflict("a deleted stream that forks still read has this name".into()));
            }
            Status::Creating | Status::Live => {}
        }
        let requested_type = request
            .content_type
            .clone()
            .or_else(|| existing.fork.as_ref().map(|fork| fork.source.content_type.clone()))
            .unwrap_or_else(|| DEFAULT_CONTENT_TYPE.to_string());
        let mut differences = Vec::new();
        if media_type(&requested_type) != media_type(&existing.content_type) {
            differences.push(format!("content type {} (the stream's is {})", requested_type, existing.content_type));
        }
        let requested_expiry = match &existing.fork {
            Some(fork) => Expiry::of_fork(fork.source.expiry, request.expiry),
            None => request.expiry,
        };
        if requested_expiry != existing.expiry {
            differences.push("its TTL or expiry time".to_string());
        }
        if request.close != state.closed {
            differences.push(if state.closed { "the stream is closed".into() } else { "the stream is open".to_string() });
        }
        match (&request.fork, &existing.fork) {
            (None, None) => {}
            (Some(asked), Some(fork)) => {
                let same_source = asked_source.is_some_and(|source| Arc::ptr_eq(&source, &fork.source));
                let same_offset = asked.offset.is_none_or(|offset| offset == fork.at);
                if !same_source || !same_offset || asked.sub_offset.unwrap_or(0) != fork.sub_offset {
                    differences.push("its fork source or offset".into());
                }
            }
            (Some(_), None) => differences.push("the stream is not a fork".into()),
            (None, Some(_)) => differences.push("the stream is a fork".into()),
        }
        if !differences.is_empty() {
            return Err(StoreError::Conflict(format!("the stream exists with another configuration: {}", differences.join(", "))));
        }
        Ok(Some(Created { new: false, tail: state.tail(), closed: state.closed_durably(), content_type: existing.content_type.clone() }))
    }

    /// A `PUT`'s fork: its source (live), content type, expiry and the inherited prefix
    /// of the record at the fork offset (with a sub-offset).
    async fn resolve_fork(&self, asked: &ForkRequest, request: &CreateRequest) -> Result<(Option<Fork>, String, Expiry, Vec<u8>), StoreError> {
        let source = match self.find(&asked.source, false).await {
            Ok(source) => source,
            Err(StoreError::Gone) => return Err(StoreError::Conflict("the fork's source is deleted (forks still read it)".into())),
            Err(StoreError::NotFound) => return Err(StoreError::NotFound),
            Err(other) => return Err(other),
        };
        let content_type = match &request.content_type {
            Some(asked_type) if media_type(asked_type) != media_type(&source.content_type) => {
                return Err(StoreError::Conflict(format!(
                    "the fork's content type {asked_type} is not its source's, {}",
                    source.content_type
                )))
            }
            Some(asked_type) => asked_type.clone(),
            None => source.content_type.clone(),
        };
        let tail = source.lock().tail();
        let at = asked.offset.unwrap_or(tail);
        if at.index > tail.index || (at.index == tail.index && at != tail) {
            return Err(StoreError::BadRequest(format!("the fork offset {at} is past its source's tail {tail}")));
        }
        // The offset must be where one of the source's records starts.
        if at != tail {
            self.read(&source, at, 1).await.map_err(|error| match error {
                StoreError::BadRequest(message) => StoreError::BadRequest(format!("the fork offset: {message}")),
                other => other,
            })?;
        }
        let sub_offset = asked.sub_offset.unwrap_or(0);
        let prefix = if sub_offset == 0 {
            Vec::new()
        } else {
            if at == tail {
                return Err(StoreError::BadRequest(format!(
                    "Stream-Fork-Sub-Offset {sub_offset} is past the source's tail (no record at the fork offset)"
                )));
            }
            let record = self.read(&source, at, 1).await?;
            let body = record.bodies.first().cloned().unwrap_or_default();
            if source.json {
                json_prefix(&body, sub_offset).map_err(|count| {
                    StoreError::BadRequest(format!("Stream-Fork-Sub-Offset {sub_offset} is past the record's {count} messages"))
                })?
            } else {
                if sub_offset > body.len() as u64 {
                    return Err(StoreError::BadRequest(format!(
                        "Stream-Fork-Sub-Offset {sub_offset} is past the record's {} bytes",
                        body.len()
                    )));
                }
                body[..sub_offset as usize].to_vec()
            }
        };
        let expiry = Expiry::of_fork(source.expiry, request.expiry);
        Ok((Some(Fork { source, at, sub_offset }), content_type, expiry, prefix))
    }
}
