//! The objects committed records live in after the WAL: runs of consecutive records of
//! one or more streams, with an index in front.
//!
//! A stream-set object holds the runs of many streams (one upload for a whole sealed
//! block); a stream object holds one run of one stream, split out when the run is large,
//! so that reading one busy stream does not fetch everybody else's records. Both have
//! the same layout:
//!
//! ```text
//! "WSO1" | runs u32 | index: per run [ stream name | start u64 | records u32 ]
//!        | records: per record [ flags u8 | (producer id | epoch u64 | seq u64) | len u32 | value ]
//!        | CRC32C u32 over everything before it
//! ```
//!
//! A run's records have the offsets `start`, `start + 1`, ...: offsets are not stored
//! per record, so a run is gapless by construction.

use super::bytes::{name_bytes, put_name, put_u32, put_u64, DecodeError, Reader};
use super::record::ProducerStamp;
use crate::checksum::crc32c;

const MAGIC: &[u8; 4] = b"WSO1";
const FLAG_PRODUCER: u8 = 1;

/// One record in an object (its offset is its run's start plus its place in the run).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredRecord {
    pub producer: Option<ProducerStamp>,
    pub value: Vec<u8>,
}

/// Consecutive records of one stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Run {
    pub stream: String,
    pub start: u64,
    pub records: Vec<StoredRecord>,
}

impl Run {
    /// One past the last offset.
    pub fn end(&self) -> u64 {
        self.start + self.records.len() as u64
    }

    /// Bytes the run's records take in an object.
    pub fn record_bytes(&self) -> usize {
        self.records.iter().map(record_bytes).sum()
    }
}

fn record_bytes(record: &StoredRecord) -> usize {
    1 + record.producer.as_ref().map_or(0, |p| name_bytes(&p.id) + 16) + 4 + record.value.len()
}

/// Lays out an object holding `runs` (each non-empty, names checked).
pub fn encode(runs: &[Run]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + runs.iter().map(|r| name_bytes(&r.stream) + 12 + r.record_bytes()).sum::<usize>() + 4);
    out.extend_from_slice(MAGIC);
    put_u32(&mut out, runs.len() as u32);
    for run in runs {
        assert!(!run.records.is_empty(), "an object holds no empty run");
        put_name(&mut out, &run.stream);
        put_u64(&mut out, run.start);
        put_u32(&mut out, run.records.len() as u32);
    }
    for record in runs.iter().flat_map(|run| &run.records) {
        match &record.producer {
            Some(stamp) => {
                out.push(FLAG_PRODUCER);
                put_name(&mut out, &stamp.id);
                put_u64(&mut out, stamp.epoch);
                put_u64(&mut out, stamp.seq);
            }
            None => out.push(0),
        }
        put_u32(&mut out, record.value.len() as u32);
        out.extend_from_slice(&record.value);
    }
    let crc = crc32c(&[&out]);
    put_u32(&mut out, crc);
    out
}

/// Reads an object back; any damage is an error, never a shorter answer.
pub fn decode(bytes: &[u8]) -> Result<Vec<Run>, DecodeError> {
    if bytes.len() < MAGIC.len() + 8 {
        return Err(DecodeError::Truncated);
    }
    let (body, crc) = bytes.split_at(bytes.len() - 4);
    if crc32c(&[body]).to_le_bytes() != crc {
        return Err(DecodeError::Checksum);
    }
    let mut reader = Reader { rest: body };
    if reader.take(4)? != MAGIC {
        return Err(DecodeError::Unknown { what: "object magic", value: 0 });
    }
    let run_count = reader.count(2 + 12)?;
    let mut runs = Vec::with_capacity(run_count);
    let mut counts = Vec::with_capacity(run_count);
    for _ in 0..run_count {
        let stream = reader.name()?;
        let start = reader.u64()?;
        let count = reader.u32()? as usize;
        if count == 0 {
            return Err(DecodeError::Inconsistent("an empty run"));
        }
        runs.push(Run { stream, start, records: Vec::new() });
        counts.push(count);
    }
    for (run, count) in runs.iter_mut().zip(counts) {
        if count.saturating_mul(5) > reader.rest.len() {
            return Err(DecodeError::Truncated);
        }
        run.records.reserve(count);
        for _ in 0..count {
            let producer = match reader.u8()? {
                0 => None,
                FLAG_PRODUCER => Some(ProducerStamp { id: reader.name()?, epoch: reader.u64()?, seq: reader.u64()? }),
                other => return Err(DecodeError::Unknown { what: "record flags", value: u64::from(other) }),
            };
            let len = reader.u32()? as usize;
            let value = reader.take(len)?.to_vec();
            run.records.push(StoredRecord { producer, value });
        }
    }
    reader.finish()?;
    Ok(runs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs() -> Vec<Run> {
        vec![
            Run {
                stream: "a".into(),
                start: 3,
                records: vec![
                    StoredRecord { producer: None, value: b"x".to_vec() },
                    StoredRecord { producer: Some(ProducerStamp { id: "p".into(), epoch: 1, seq: 2 }), value: vec![] },
                ],
            },
            Run { stream: "b".into(), start: 0, records: vec![StoredRecord { producer: None, value: b"yz".to_vec() }] },
        ]
    }

    #[test]
    fn a_stream_set_object_golden() {
        let bytes = encode(&runs());
        let body: &[u8] = &[
            b'W', b'S', b'O', b'1', 2, 0, 0, 0, // magic, two runs
            1, b'a', 3, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, // run a: start 3, 2 records
            1, b'b', 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, // run b: start 0, 1 record
            0, 1, 0, 0, 0, b'x', // a@3: anonymous, "x"
            1, 1, b'p', 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // a@4: p epoch 1 seq 2, empty
            0, 2, 0, 0, 0, b'y', b'z', // b@0
        ];
        assert_eq!(&bytes[..bytes.len() - 4], body);
        assert_eq!(bytes[bytes.len() - 4..], crc32c(&[body]).to_le_bytes());
        assert_eq!(decode(&bytes), Ok(runs()));
        assert_eq!(runs()[0].end(), 5);
    }

    #[test]
    fn damage_is_refused() {
        let bytes = encode(&runs());
        let mut flipped = bytes.clone();
        flipped[30] ^= 1;
        assert_eq!(decode(&flipped), Err(DecodeError::Checksum));
        assert_eq!(decode(&bytes[..bytes.len() - 1]), Err(DecodeError::Checksum));
        assert_eq!(decode(&bytes[..5]), Err(DecodeError::Truncated));
    }
}
