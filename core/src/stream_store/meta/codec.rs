//! The metadata log's codec: each command as one WAL record (a tag, then its fields),
//! the state as a snapshot's bytes, and what one entry adds to an encoded commit (so the
//! seal can keep a commit within one record).

use super::*;

impl MetaState {
    /// The state's encoding: what the snapshot parts carry, cut in pieces.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        put_option_text16(&mut out, self.wal.as_deref());
        put_u64(&mut out, self.next_object_id);
        put_u32(&mut out, self.reserved.len() as u32);
        for id in &self.reserved {
            put_u64(&mut out, *id);
        }
        put_u32(&mut out, self.objects.len() as u32);
        for id in self.objects.keys() {
            put_u64(&mut out, *id);
        }
        put_u64(&mut out, self.next_stream_id);
        put_u32(&mut out, self.streams.len() as u32);
        for (id, stream) in &self.streams {
            put_u64(&mut out, id.0);
            put_config(&mut out, &stream.config);
            out.push(u8::from(stream.soft_deleted));
            put_offset(&mut out, stream.committed);
            put_u32(&mut out, stream.runs.len() as u32);
            for &(start, end, object) in &stream.runs {
                put_offset(&mut out, start);
                put_offset(&mut out, end);
                put_u64(&mut out, object);
            }
            put_tail(&mut out, stream.closed, stream.closed_by.as_ref(), stream.stream_seq.as_deref());
            put_u32(&mut out, stream.producers.len() as u32);
            for (producer, state) in stream.producers.iter() {
                put_bytes8(&mut out, producer.as_bytes());
                put_u64(&mut out, state.epoch);
                put_u64(&mut out, state.last_seq);
            }
        }
        out
    }

    /// Reads a state's encoding, and refuses one whose parts contradict each other (ids
    /// past the next free one, an id both reserved and committed, runs that do not tile
    /// their stream from its base or name an object that is not committed, a name twice,
    /// a fork of a stream that is not there).
    pub fn decode(bytes: &[u8]) -> Result<MetaState, DecodeError> {
        let mut reader = Reader { rest: bytes };
        let mut state = MetaState { wal: option_text16(&mut reader)?, next_object_id: reader.u64()?, ..MetaState::default() };
        for _ in 0..reader.count(8)? {
            state.reserved.insert(reader.u64()?);
        }
        for _ in 0..reader.count(8)? {
            state.objects.insert(reader.u64()?, 0);
        }
        state.next_stream_id = reader.u64()?;
        for _ in 0..reader.count(8 + 4)? {
            let id = StreamId(reader.u64()?);
            let config = config(&mut reader)?;
            let soft_deleted = boolean(&mut reader)?;
            let committed = offset(&mut reader)?;
            let mut runs = Vec::new();
            for _ in 0..reader.count(40)? {
                runs.push((offset(&mut reader)?, offset(&mut reader)?, reader.u64()?));
            }
            let (closed, closed_by, stream_seq) = tail(&mut reader)?;
            let mut producers = ProducerTable::default();
            for _ in 0..reader.count(1 + 16)? {
                let producer = reader.text8(check_producer_id)?;
                let producer_state = ProducerState { epoch: reader.u64()?, last_seq: reader.u64()? };
                if producers.get(&producer).is_some() {
                    return Err(DecodeError::Inconsistent("a producer twice in one stream's table"));
                }
                producers.restore(&producer, producer_state);
            }
            let mut end = config.fork.map_or(Offset::START, |fork| fork.at);
            for &(start, run_end, object) in &runs {
                let Some(live) = state.objects.get_mut(&object) else {
                    return Err(DecodeError::Inconsistent("a run in an object that is not committed"));
                };
                if start != end || run_end.index <= start.index || run_end.bytes < start.bytes {
                    return Err(DecodeError::Inconsistent("a stream's runs do not tile it from its base"));
                }
                *live += 1;
                end = run_end;
            }
            if end != committed {
                return Err(DecodeError::Inconsistent("a stream's runs do not end at its committed end"));
            }
            if id.0 >= state.next_stream_id {
                return Err(DecodeError::Inconsistent("a stream number at or past the next free one"));
            }
            if state.names.insert(config.name.clone(), id).is_some() {
                return Err(DecodeError::Inconsistent("two streams with one name"));
            }
            let stream = StreamMeta { config, soft_deleted, forks: 0, committed, runs, closed, closed_by, stream_seq, producers };
            state.streams.insert(id, stream);
        }
        reader.finish()?;
        let sources: Vec<StreamId> = state.streams.values().filter_map(|s| s.config.fork.map(|f| f.source)).collect();
        for source in sources {
            match state.streams.get_mut(&source) {
                Some(stream) => stream.forks += 1,
                None => return Err(DecodeError::Inconsistent("a fork of a stream that is not there")),
            }
        }
        if state.streams.values().any(|s| s.soft_deleted && s.forks == 0) {
            return Err(DecodeError::Inconsistent("a soft-deleted stream no fork reads"));
        }
        let past_next = |id: &u64| *id >= state.next_object_id;
        if state.reserved.iter().any(past_next) || state.objects.keys().any(past_next) {
            return Err(DecodeError::Inconsistent("an object id at or past the next free id"));
        }
        if state.reserved.iter().any(|id| state.objects.contains_key(id)) {
            return Err(DecodeError::Inconsistent("an object id both reserved and committed"));
        }
        Ok(state)
    }
}

fn put_offset(out: &mut Vec<u8>, offset: Offset) {
    put_u64(out, offset.index);
    put_u64(out, offset.bytes);
}

fn offset(reader: &mut Reader<'_>) -> Result<Offset, DecodeError> {
    Ok(Offset { index: reader.u64()?, bytes: reader.u64()? })
}

fn boolean(reader: &mut Reader<'_>) -> Result<bool, DecodeError> {
    match reader.u8()? {
        0 => Ok(false),
        1 => Ok(true),
        other => Err(DecodeError::Unknown { what: "flag", value: u64::from(other) }),
    }
}

fn put_option_text16(out: &mut Vec<u8>, text: Option<&str>) {
    match text {
        Some(text) => {
            out.push(1);
            put_bytes16(out, text.as_bytes());
        }
        None => out.push(0),
    }
}

fn any_text(_: &str) -> Result<(), NameError> {
    Ok(())
}

fn option_text16(reader: &mut Reader<'_>) -> Result<Option<String>, DecodeError> {
    Ok(if boolean(reader)? { Some(reader.text16(any_text)?) } else { None })
}

fn check_content_type(text: &str) -> Result<(), NameError> {
    if text.len() > CONTENT_TYPE_BYTES_MAX {
        return Err(NameError::TooLong { bytes: text.len(), max: CONTENT_TYPE_BYTES_MAX });
    }
    Ok(())
}

const EXPIRY_NEVER: u8 = 0;
const EXPIRY_TTL: u8 = 1;
const EXPIRY_AT: u8 = 2;

fn put_config(out: &mut Vec<u8>, config: &StreamConfig) {
    put_bytes16(out, config.name.as_bytes());
    put_bytes8(out, config.content_type.as_bytes());
    match config.expiry {
        Expiry::Never => out.push(EXPIRY_NEVER),
        Expiry::Ttl { seconds } => {
            out.push(EXPIRY_TTL);
            put_u64(out, seconds);
        }
        Expiry::At { unix_ms } => {
            out.push(EXPIRY_AT);
            put_u64(out, unix_ms);
        }
    }
    match &config.fork {
        Some(fork) => {
            out.push(1);
            put_u64(out, fork.source.0);
            put_offset(out, fork.at);
            put_u64(out, fork.sub_offset);
        }
        None => out.push(0),
    }
}

fn config(reader: &mut Reader<'_>) -> Result<StreamConfig, DecodeError> {
    let name = reader.text16(check_stream_name)?;
    let content_type = reader.text8(check_content_type)?;
    let expiry = match reader.u8()? {
        EXPIRY_NEVER => Expiry::Never,
        EXPIRY_TTL => Expiry::Ttl { seconds: reader.u64()? },
        EXPIRY_AT => Expiry::At { unix_ms: reader.u64()? },
        other => return Err(DecodeError::Unknown { what: "expiry", value: u64::from(other) }),
    };
    let fork = if boolean(reader)? {
        Some(ForkBase { source: StreamId(reader.u64()?), at: offset(reader)?, sub_offset: reader.u64()? })
    } else {
        None
    };
    Ok(StreamConfig { name, content_type, expiry, fork })
}

fn put_stamp(out: &mut Vec<u8>, stamp: Option<&ProducerStamp>) {
    match stamp {
        Some(stamp) => {
            out.push(1);
            put_bytes8(out, stamp.id.as_bytes());
            put_u64(out, stamp.epoch);
            put_u64(out, stamp.seq);
        }
        None => out.push(0),
    }
}

fn stamp(reader: &mut Reader<'_>) -> Result<Option<ProducerStamp>, DecodeError> {
    Ok(if boolean(reader)? {
        Some(ProducerStamp { id: reader.text8(check_producer_id)?, epoch: reader.u64()?, seq: reader.u64()? })
    } else {
        None
    })
}

/// Closure, the closing producer request and the last `Stream-Seq`.
fn put_tail(out: &mut Vec<u8>, closed: bool, closed_by: Option<&ProducerStamp>, stream_seq: Option<&str>) {
    out.push(u8::from(closed));
    put_stamp(out, closed_by);
    match stream_seq {
        Some(seq) => {
            out.push(1);
            put_bytes8(out, seq.as_bytes());
        }
        None => out.push(0),
    }
}

type Tail = (bool, Option<ProducerStamp>, Option<String>);

fn tail(reader: &mut Reader<'_>) -> Result<Tail, DecodeError> {
    let closed = boolean(reader)?;
    let closed_by = stamp(reader)?;
    let stream_seq = if boolean(reader)? { Some(reader.text8(any_text)?) } else { None };
    Ok((closed, closed_by, stream_seq))
}

const TAG_SNAPSHOT: u8 = 16;
const TAG_BIND: u8 = 17;
pub(super) const TAG_RESERVE: u8 = 18;
pub(super) const TAG_COMMIT: u8 = 19;
pub(super) const TAG_EXPIRE: u8 = 20;
const TAG_CREATE: u8 = 21;
const TAG_DELETE: u8 = 22;
const TAG_FORGET: u8 = 23;
const TAG_COMPACT: u8 = 24;
/// Tags below this were written by `walab serve` before it spoke the Durable Streams
/// protocol (streams by name, no configuration); their logs are not read.
const TAG_FIRST: u8 = 16;

/// Bytes of an encoded commit's fixed fields.
pub const COMMIT_FIXED_BYTES: usize = 1 + 4 + 4;
/// Bytes one object entry adds to an encoded commit, runs aside.
pub const OBJECT_ENTRY_BYTES: usize = 8 + 4;
/// Bytes one run entry adds to an encoded commit.
pub const RUN_ENTRY_BYTES: usize = 8 + 16 + 16;

impl StreamEnd {
    /// Bytes this entry adds to an encoded commit.
    pub fn encoded_bytes(&self) -> usize {
        let stamp = |stamp: Option<&ProducerStamp>| 1 + stamp.map_or(0, |s| 1 + s.id.len() + 16);
        8 + 16
            + 1
            + stamp(self.closed_by.as_ref())
            + 1
            + self.stream_seq.as_ref().map_or(0, |seq| 1 + seq.len())
            + 4
            + self.producers.iter().map(|(id, _)| producer_entry_bytes(id)).sum::<usize>()
    }
}

/// Bytes one producer's state adds to a stream end.
pub fn producer_entry_bytes(producer: &str) -> usize {
    1 + producer.len() + 16
}

impl MetaCommand {
    /// Lays the command out as one metadata record.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            MetaCommand::Bind { wal } => {
                out.push(TAG_BIND);
                put_bytes16(&mut out, wal.as_bytes());
            }
            MetaCommand::Reserve { first, count } => {
                out.push(TAG_RESERVE);
                put_u64(&mut out, *first);
                put_u32(&mut out, *count);
            }
            MetaCommand::Commit { objects, ends } => {
                out.push(TAG_COMMIT);
                put_u32(&mut out, objects.len() as u32);
                for object in objects {
                    put_u64(&mut out, object.id);
                    put_u32(&mut out, object.runs.len() as u32);
                    for run in &object.runs {
                        put_u64(&mut out, run.stream.0);
                        put_offset(&mut out, run.start);
                        put_offset(&mut out, run.end);
                    }
                }
                put_u32(&mut out, ends.len() as u32);
                for end in ends {
                    put_u64(&mut out, end.stream.0);
                    put_offset(&mut out, end.end);
                    put_tail(&mut out, end.closed, end.closed_by.as_ref(), end.stream_seq.as_deref());
                    put_u32(&mut out, end.producers.len() as u32);
                    for (producer, state) in &end.producers {
                        put_bytes8(&mut out, producer.as_bytes());
                        put_u64(&mut out, state.epoch);
                        put_u64(&mut out, state.last_seq);
                    }
                }
            }
            MetaCommand::Expire { ids } | MetaCommand::Forget { ids } => {
                out.push(if matches!(self, MetaCommand::Expire { .. }) { TAG_EXPIRE } else { TAG_FORGET });
                put_u32(&mut out, ids.len() as u32);
                for id in ids {
                    put_u64(&mut out, *id);
                }
            }
            MetaCommand::Create { id, config } => {
                out.push(TAG_CREATE);
                put_u64(&mut out, id.0);
                put_config(&mut out, config);
            }
            MetaCommand::Delete { id } => {
                out.push(TAG_DELETE);
                put_u64(&mut out, id.0);
            }
            MetaCommand::Compact { id, runs } => {
                out.push(TAG_COMPACT);
                put_u64(&mut out, *id);
                put_u32(&mut out, runs.len() as u32);
                for run in runs {
                    put_u64(&mut out, run.stream.0);
                    put_offset(&mut out, run.start);
                    put_offset(&mut out, run.end);
                }
            }
            MetaCommand::Snapshot { part, parts, bytes } => {
                out.push(TAG_SNAPSHOT);
                put_u32(&mut out, *part);
                put_u32(&mut out, *parts);
                put_u32(&mut out, bytes.len() as u32);
                out.extend_from_slice(bytes);
            }
        }
        out
    }

    /// Reads one metadata record.
    pub fn decode(bytes: &[u8]) -> Result<MetaCommand, DecodeError> {
        let mut reader = Reader { rest: bytes };
        let command = match reader.u8()? {
            TAG_BIND => MetaCommand::Bind { wal: reader.text16(any_text)? },
            TAG_RESERVE => MetaCommand::Reserve { first: reader.u64()?, count: reader.u32()? },
            TAG_COMMIT => {
                let object_count = reader.count(OBJECT_ENTRY_BYTES)?;
                let mut objects = Vec::with_capacity(object_count);
                for _ in 0..object_count {
                    let id = reader.u64()?;
                    let run_count = reader.count(RUN_ENTRY_BYTES)?;
                    let mut runs = Vec::with_capacity(run_count);
                    for _ in 0..run_count {
                        runs.push(RunEntry { stream: StreamId(reader.u64()?), start: offset(&mut reader)?, end: offset(&mut reader)? });
                    }
                    objects.push(ObjectEntry { id, runs });
                }
                let end_count = reader.count(8 + 16 + 3 + 4)?;
                let mut ends = Vec::with_capacity(end_count);
                for _ in 0..end_count {
                    let stream = StreamId(reader.u64()?);
                    let end = offset(&mut reader)?;
                    let (closed, closed_by, stream_seq) = tail(&mut reader)?;
                    let mut producers = Vec::new();
                    for _ in 0..reader.count(1 + 16)? {
                        let producer = reader.text8(check_producer_id)?;
                        producers.push((producer, ProducerState { epoch: reader.u64()?, last_seq: reader.u64()? }));
                    }
                    ends.push(StreamEnd { stream, end, closed, closed_by, stream_seq, producers });
                }
                MetaCommand::Commit { objects, ends }
            }
            tag @ (TAG_EXPIRE | TAG_FORGET) => {
                let count = reader.count(8)?;
                let ids = (0..count).map(|_| reader.u64()).collect::<Result<Vec<u64>, DecodeError>>()?;
                if tag == TAG_EXPIRE {
                    MetaCommand::Expire { ids }
                } else {
                    MetaCommand::Forget { ids }
                }
            }
            TAG_CREATE => MetaCommand::Create { id: StreamId(reader.u64()?), config: config(&mut reader)? },
            TAG_DELETE => MetaCommand::Delete { id: StreamId(reader.u64()?) },
            TAG_COMPACT => {
                let id = reader.u64()?;
                let count = reader.count(RUN_ENTRY_BYTES)?;
                let mut runs = Vec::with_capacity(count);
                for _ in 0..count {
                    runs.push(RunEntry { stream: StreamId(reader.u64()?), start: offset(&mut reader)?, end: offset(&mut reader)? });
                }
                MetaCommand::Compact { id, runs }
            }
            TAG_SNAPSHOT => {
                let (part, parts) = (reader.u32()?, reader.u32()?);
                if part >= parts {
                    return Err(DecodeError::Inconsistent("a snapshot part past its count of parts"));
                }
                let len = reader.count(1)?;
                MetaCommand::Snapshot { part, parts, bytes: reader.take(len)?.to_vec() }
            }
            old if old < TAG_FIRST => {
                return Err(DecodeError::Unknown {
                    what: "metadata command of a walab serve from before the Durable Streams protocol (start on a new --wal and --meta)",
                    value: u64::from(old),
                })
            }
            other => return Err(DecodeError::Unknown { what: "metadata command", value: u64::from(other) }),
        };
        reader.finish()?;
        Ok(command)
    }
}
