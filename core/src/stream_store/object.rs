//! The objects committed records live in after the WAL: runs of consecutive records of
//! one or more streams, with an index in front.
//!
//! A stream-set object holds the runs of many streams (one upload for a whole sealed
//! block); a stream object holds one run of one stream, split out when the run is large,
//! so that reading one busy stream does not fetch everybody else's records. Both have
//! the same layout:
//!
//! ```text
//! "WSO2" | runs u32 | index: per run [ stream u64 | start index u64 | start bytes u64 | records u32 ]
//!        | records: per record [ len u32 | body ]
//!        | CRC32C u32 over everything before it
//! ```
//!
//! A run's records have the indexes `start`, `start + 1`, ... and follow one another in
//! bytes: positions are not stored per record, so a run is gapless by construction.
//! Who sent a record (its producer, its `Stream-Seq`) is not kept here: the commit that
//! names the object carries the producers' state at the run's end instead.

use std::sync::Arc;

use super::bytes::{put_u32, put_u64, DecodeError, Reader};
use super::offset::Offset;
use super::StreamId;
use crate::checksum::crc32c;

const MAGIC: &[u8; 4] = b"WSO2";
/// Bytes of one run's entry in the index.
const RUN_INDEX_BYTES: usize = 8 + 8 + 8 + 4;

/// Consecutive records of one stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Run {
    pub stream: StreamId,
    pub start: Offset,
    pub bodies: Vec<Arc<[u8]>>,
}

impl Run {
    /// The position after the last record.
    pub fn end(&self) -> Offset {
        Offset { index: self.start.index + self.bodies.len() as u64, bytes: self.start.bytes + self.body_bytes() as u64 }
    }

    /// Body bytes of the run's records.
    pub fn body_bytes(&self) -> usize {
        self.bodies.iter().map(|body| body.len()).sum()
    }

    /// Bytes the run's records take in an object.
    pub fn record_bytes(&self) -> usize {
        self.bodies.iter().map(|body| 4 + body.len()).sum()
    }

    /// The record at `index` and its position, if the run holds it.
    pub fn record_at(&self, index: u64) -> Option<(Offset, &Arc<[u8]>)> {
        let skip = index.checked_sub(self.start.index)? as usize;
        let body = self.bodies.get(skip)?;
        let bytes: usize = self.bodies[..skip].iter().map(|body| body.len()).sum();
        Some((Offset { index, bytes: self.start.bytes + bytes as u64 }, body))
    }
}

/// Lays out an object holding `runs` (each non-empty).
pub fn encode(runs: &[Run]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + runs.iter().map(|r| RUN_INDEX_BYTES + r.record_bytes()).sum::<usize>() + 4);
    out.extend_from_slice(MAGIC);
    put_u32(&mut out, runs.len() as u32);
    for run in runs {
        assert!(!run.bodies.is_empty(), "an object holds no empty run");
        put_u64(&mut out, run.stream.0);
        put_u64(&mut out, run.start.index);
        put_u64(&mut out, run.start.bytes);
        put_u32(&mut out, run.bodies.len() as u32);
    }
    for body in runs.iter().flat_map(|run| &run.bodies) {
        put_u32(&mut out, body.len() as u32);
        out.extend_from_slice(body);
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
    let run_count = reader.count(RUN_INDEX_BYTES)?;
    let mut runs = Vec::with_capacity(run_count);
    let mut counts = Vec::with_capacity(run_count);
    for _ in 0..run_count {
        let stream = StreamId(reader.u64()?);
        let start = Offset { index: reader.u64()?, bytes: reader.u64()? };
        let count = reader.u32()? as usize;
        if count == 0 {
            return Err(DecodeError::Inconsistent("an empty run"));
        }
        runs.push(Run { stream, start, bodies: Vec::new() });
        counts.push(count);
    }
    for (run, count) in runs.iter_mut().zip(counts) {
        if count.saturating_mul(4) > reader.rest.len() {
            return Err(DecodeError::Truncated);
        }
        run.bodies.reserve(count);
        for _ in 0..count {
            let len = reader.u32()? as usize;
            run.bodies.push(reader.take(len)?.into());
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
            Run { stream: StreamId(4), start: Offset::new(3, 10), bodies: vec![b"x"[..].into(), b"abc"[..].into()] },
            Run { stream: StreamId(9), start: Offset::START, bodies: vec![b"yz"[..].into()] },
        ]
    }

    #[test]
    fn a_stream_set_object_golden() {
        let bytes = encode(&runs());
        let body: &[u8] = &[
            b'W', b'S', b'O', b'2', 2, 0, 0, 0, // magic, two runs
            4, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, // stream 4 at (3, 10), 2 records
            9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, // stream 9 at (0, 0), 1 record
            1, 0, 0, 0, b'x', // 4@3
            3, 0, 0, 0, b'a', b'b', b'c', // 4@4
            2, 0, 0, 0, b'y', b'z', // 9@0
        ];
        assert_eq!(&bytes[..bytes.len() - 4], body);
        assert_eq!(bytes[bytes.len() - 4..], crc32c(&[body]).to_le_bytes());
        assert_eq!(decode(&bytes), Ok(runs()));
        assert_eq!(runs()[0].end(), Offset::new(5, 14));
        assert_eq!(runs()[0].record_at(4).map(|(at, body)| (at, body.to_vec())), Some((Offset::new(4, 11), b"abc".to_vec())));
        assert_eq!(runs()[0].record_at(5), None);
        assert_eq!(runs()[0].record_at(2), None);
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
