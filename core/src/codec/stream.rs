//! The stream store's WAL frame: a header with the offset, the length and a CRC32 over
//! the body, then the batch of records.
//!
//! The stream store sends one batch per write to its WAL (one object PUT, or one row
//! INSERT), and both backends store the batch in the same frame. The seed gives the
//! frame's fields but not their widths; walab fixes them so:
//!
//! ```text
//! +----------------------+------------------+--------------------+------------------------+
//! | frame offset u64 LE  | body length u32  | CRC32 (IEEE) u32 LE| body                   |
//! | WAL byte address of  | LE, bytes of the | over the body only | count u32 LE, then     |
//! | this frame's start   | body             |                    | count x (LEB128 len,   |
//! |                      |                  |                    | record bytes)          |
//! +----------------------+------------------+--------------------+------------------------+
//!  0                      8                  12                   16
//! ```
//!
//! Offsets are positions in the WAL's address space, which runs on across objects, slot
//! tables and segments: a frame at `frame_offset` covers `frame_offset ..
//! frame_offset + 16 + length`, and the next frame starts where it ends. That gives the
//! scan a check the CRC alone cannot: a frame whose offset field is not where the last
//! one ended was not written next. It is left from an earlier trip around the ring of
//! slots, or something in between is missing (the Postgres backend's "stop at the first
//! gap"). This is the same idea as RocksDB's log number in a recycled file, or the log
//! address in each PostgreSQL WAL page header, and walab reports it the same way:
//! [`StopReason::OldRecord`].
//!
//! The CRC covers the body only, so a damaged header shows up through the other checks:
//! a wrong offset (old record), a length beyond the data (short) or beyond
//! [`FRAME_BODY_BYTES_MAX`] (bad length), or a body that no longer matches its CRC.
//!
//! ## The scan's checks, in order
//! header (16 bytes; none left = end, fewer or all zero = zero or short); length within
//! 4 ..= [`FRAME_BODY_BYTES_MAX`]; frame offset where the previous frame ended (the first
//! frame's is taken as given unless the caller knows where the log starts); all body
//! bytes present; CRC32; the body parses (count and record lengths add up, else bad
//! length); frames that end at or below the committed offset are already in data objects
//! and are reported but skipped; accept. Clean ends lead into the next segment, exactly as
//! in [`crate::scan`].

use super::varint::{get_varint, put_varint};
use crate::checksum::crc32;
use crate::scan::{ScanCheck, ScanStop, StopReason};

/// Bytes in a frame header.
pub const FRAME_HEADER_BYTES: usize = 16;
/// The smallest body: a record count.
pub const FRAME_BODY_BYTES_MIN: u64 = 4;
/// The largest body walab accepts: one default segment (64 MiB). The stream store closes
/// a batch at `max_bytes_in_batch` (1 MiB), and a segment must hold at least one batch.
pub const FRAME_BODY_BYTES_MAX: u64 = 64 * 1024 * 1024;

/// A frame's batch.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct StreamFrame {
    /// The WAL address of the frame's first header byte.
    pub frame_offset: u64,
    pub records: Vec<Vec<u8>>,
}

impl StreamFrame {
    /// Body bytes when encoded.
    pub fn body_len(&self) -> usize {
        4 + self
            .records
            .iter()
            .map(|record| super::varint::varint_len(record.len() as u64) + record.len())
            .sum::<usize>()
    }

    /// The WAL address just past the frame: where the next frame starts.
    pub fn end_offset(&self) -> u64 {
        self.frame_offset + (FRAME_HEADER_BYTES + self.body_len()) as u64
    }
}

/// Frames a batch. Panics if the body exceeds [`FRAME_BODY_BYTES_MAX`] (callers close a
/// batch well before, at `max_bytes_in_batch`).
pub fn encode_frame(frame: &StreamFrame) -> Vec<u8> {
    let records: Vec<&[u8]> = frame.records.iter().map(Vec::as_slice).collect();
    encode_frame_slices(frame.frame_offset, &records)
}

/// [`encode_frame`] for records borrowed from elsewhere: the frame is the only copy made.
/// Panics as [`encode_frame`] does.
pub fn encode_frame_slices(frame_offset: u64, records: &[&[u8]]) -> Vec<u8> {
    encode_frame_records(frame_offset, records.iter().copied())
}

/// [`encode_frame_slices`] for records handed out one by one (a group-commit batch's
/// [`records`](crate::group_commit::Batch::records)): read twice, once to size the body.
pub fn encode_frame_records<'a, I>(frame_offset: u64, records: I) -> Vec<u8>
where
    I: Iterator<Item = &'a [u8]> + Clone,
{
    let (count, body_len) = records.clone().fold((0usize, 4usize), |(count, bytes), record| {
        (count + 1, bytes + super::varint::varint_len(record.len() as u64) + record.len())
    });
    let count = u32::try_from(count).expect("record count fits in u32");
    assert!(body_len as u64 <= FRAME_BODY_BYTES_MAX, "frame body over {FRAME_BODY_BYTES_MAX} bytes");
    let mut out = Vec::with_capacity(FRAME_HEADER_BYTES + body_len);
    out.extend_from_slice(&frame_offset.to_le_bytes());
    out.extend_from_slice(&(body_len as u32).to_le_bytes());
    out.extend_from_slice(&[0; 4]); // the CRC, once the body is in place
    out.extend_from_slice(&count.to_le_bytes());
    for record in records {
        put_varint(&mut out, record.len() as u64);
        out.extend_from_slice(record);
    }
    debug_assert_eq!(out.len(), FRAME_HEADER_BYTES + body_len);
    let crc = crc32(&out[FRAME_HEADER_BYTES..]);
    out[12..16].copy_from_slice(&crc.to_le_bytes());
    out
}

/// Appends frames one after another, keeping each frame's offset where the last ended.
#[derive(Clone, Debug)]
pub struct StreamWriter {
    next_offset: u64,
    bytes: Vec<u8>,
}

impl StreamWriter {
    /// A writer whose first frame starts at WAL address `start_offset`.
    pub fn new(start_offset: u64) -> StreamWriter {
        StreamWriter { next_offset: start_offset, bytes: Vec::new() }
    }

    /// Frames these records as one batch.
    pub fn add_batch(&mut self, records: Vec<Vec<u8>>) {
        let frame = StreamFrame { frame_offset: self.next_offset, records };
        self.next_offset = frame.end_offset();
        self.bytes.extend(encode_frame(&frame));
    }

    pub fn next_offset(&self) -> u64 {
        self.next_offset
    }

    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }
}

/// Why a body (CRC already verified) did not parse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyError {
    TooSmall,
    Truncated { record: u32 },
    BadVarint { record: u32 },
    TrailingBytes { bytes: usize },
}

impl core::fmt::Display for BodyError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            BodyError::TooSmall => write!(f, "frame body shorter than its record count"),
            BodyError::Truncated { record } => write!(f, "frame record {record} runs past the body"),
            BodyError::BadVarint { record } => write!(f, "frame record {record} has an overflowing length"),
            BodyError::TrailingBytes { bytes } => write!(f, "{bytes} bytes left after the frame's records"),
        }
    }
}

/// Parses a body into its records.
pub fn decode_body(body: &[u8]) -> Result<Vec<Vec<u8>>, BodyError> {
    if body.len() < 4 {
        return Err(BodyError::TooSmall);
    }
    let count = u32::from_le_bytes(body[..4].try_into().expect("four bytes"));
    let mut rest = &body[4..];
    let mut records = Vec::new();
    // Bounded by `count` and by the body: each record consumes at least its length byte.
    for record in 0..count {
        let (len, used) = get_varint(rest).map_err(|error| match error {
            super::varint::VarintError::Truncated => BodyError::Truncated { record },
            super::varint::VarintError::Overflow => BodyError::BadVarint { record },
        })?;
        let tail = &rest[used..];
        let len = usize::try_from(len).ok().filter(|&len| len <= tail.len());
        let len = len.ok_or(BodyError::Truncated { record })?;
        records.push(tail[..len].to_vec());
        rest = &tail[len..];
    }
    if !rest.is_empty() {
        return Err(BodyError::TrailingBytes { bytes: rest.len() });
    }
    Ok(records)
}

/// A frame the scan accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct AcceptedFrame {
    pub segment: usize,
    /// Byte offset of the frame in its segment (not its WAL address: see `frame`).
    pub offset: u64,
    /// Header and body bytes.
    pub len: u64,
    pub frame: StreamFrame,
    /// True when the frame ends at or below the committed offset.
    pub already_committed: bool,
}

/// The result of [`scan_stream`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct StreamScan {
    pub frames: Vec<AcceptedFrame>,
    pub stop: ScanStop,
    /// The WAL address after the last accepted frame: where appends resume. `None` when
    /// no frame was accepted and no start was given.
    pub next_offset: Option<u64>,
    pub checks: Vec<ScanCheck>,
}

/// RECOVER_SCAN over stream WAL segments (objects or slot-table bodies), oldest first.
/// `start_offset` is the WAL address the first frame must carry, if known;
/// `committed_offset` is how far data objects already cover.
pub fn scan_stream(segments: &[&[u8]], start_offset: Option<u64>, committed_offset: u64) -> StreamScan {
    let mut scan = StreamScan {
        frames: Vec::new(),
        stop: ScanStop { reason: StopReason::End, segment: 0, offset: 0 },
        next_offset: start_offset,
        checks: Vec::new(),
    };
    let lens: Vec<u64> = segments.iter().map(|bytes| bytes.len() as u64).collect();
    scan.stop = crate::scan::scan_segments(&mut scan, |scan| &mut scan.checks, &lens, |scan, segment| {
        scan_stream_segment(segment, segments[segment], committed_offset, scan)
    });
    scan
}

fn scan_stream_segment(segment: usize, bytes: &[u8], committed_offset: u64, scan: &mut StreamScan) -> ScanStop {
    let mut offset: usize = 0;
    // Bounded by the segment: each accepted frame moves at least 20 bytes on.
    loop {
        let at = offset as u64;
        let stop = |reason| ScanStop { reason, segment, offset: at };
        let rest = &bytes[offset..];
        let header = match crate::scan::read_header(&mut scan.checks, segment, rest, at, FRAME_HEADER_BYTES) {
            Ok(header) => header,
            Err(reason) => return stop(reason),
        };
        let frame_offset = u64::from_le_bytes(header[..8].try_into().expect("eight bytes"));
        let length = u64::from(u32::from_le_bytes(header[8..12].try_into().expect("four bytes")));
        let stored = u32::from_le_bytes(header[12..16].try_into().expect("four bytes"));
        scan.checks.push(ScanCheck::Header {
            segment,
            offset: at,
            header_bytes: FRAME_HEADER_BYTES as u64,
            stored_checksum: stored,
            length,
            record_type: 0,
            log_number: None,
            frame_offset: Some(frame_offset),
        });
        let length_ok = (FRAME_BODY_BYTES_MIN..=FRAME_BODY_BYTES_MAX).contains(&length);
        scan.checks.push(ScanCheck::LengthBound {
            segment,
            offset: at,
            length,
            min: FRAME_BODY_BYTES_MIN,
            max: FRAME_BODY_BYTES_MAX,
            ok: length_ok,
        });
        if !length_ok {
            return stop(StopReason::BadLength);
        }
        let expected = *scan.next_offset.get_or_insert(frame_offset);
        let offset_ok = expected == frame_offset;
        scan.checks.push(ScanCheck::FrameOffset { segment, offset: at, expected, found: frame_offset, ok: offset_ok });
        if !offset_ok {
            return stop(StopReason::OldRecord);
        }
        let length = length as usize;
        let available = rest.len() - FRAME_HEADER_BYTES;
        let present = length <= available;
        scan.checks.push(ScanCheck::PayloadPresent {
            segment,
            offset: at,
            length: length as u64,
            available: available as u64,
            ok: present,
        });
        if !present {
            return stop(StopReason::Short);
        }
        let body = &rest[FRAME_HEADER_BYTES..FRAME_HEADER_BYTES + length];
        let computed = crc32(body);
        let checksum_ok = computed == stored;
        scan.checks.push(ScanCheck::Checksum { segment, offset: at, stored, computed, ok: checksum_ok });
        if !checksum_ok {
            return stop(StopReason::Checksum);
        }
        let records = match decode_body(body) {
            Ok(records) => {
                scan.checks.push(ScanCheck::Payload { segment, offset: at, ok: true, problem: None });
                records
            }
            Err(error) => {
                scan.checks.push(ScanCheck::Payload { segment, offset: at, ok: false, problem: Some(error.to_string()) });
                return stop(StopReason::BadLength);
            }
        };
        let len = (FRAME_HEADER_BYTES + length) as u64;
        let Some(end_offset) = frame_offset.checked_add(len) else {
            // An offset so close to 2^64 that the frame's end cannot be named.
            return stop(StopReason::BadLength);
        };
        let already_committed = end_offset <= committed_offset;
        if already_committed {
            scan.checks.push(ScanCheck::AlreadyFlushed {
                segment,
                offset: at,
                seq: frame_offset,
                flushed_through_seq: committed_offset,
            });
        }
        scan.checks.push(ScanCheck::Accept { segment, offset: at, len, seq: None });
        scan.next_offset = Some(end_offset);
        scan.frames.push(AcceptedFrame {
            segment,
            offset: at,
            len,
            frame: StreamFrame { frame_offset, records },
            already_committed,
        });
        offset += FRAME_HEADER_BYTES + length;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_frame() {
        let frame = StreamFrame { frame_offset: 4096, records: vec![b"ab".to_vec(), b"c".to_vec()] };
        let bytes = encode_frame(&frame);
        let body = [2, 0, 0, 0, 2, b'a', b'b', 1, b'c'];
        let mut expected = 4096u64.to_le_bytes().to_vec();
        expected.extend(9u32.to_le_bytes());
        expected.extend(crc32(&body).to_le_bytes());
        expected.extend(body);
        assert_eq!(bytes, expected);
        assert_eq!(frame.end_offset(), 4096 + 25);
    }

    #[test]
    fn frames_chain_and_scan_back() {
        let mut writer = StreamWriter::new(1000);
        writer.add_batch(vec![b"one".to_vec()]);
        writer.add_batch(vec![b"two".to_vec(), b"three".to_vec()]);
        let bytes = writer.bytes().to_vec();
        let scan = scan_stream(&[&bytes], Some(1000), 0);
        assert_eq!(scan.frames.len(), 2);
        assert_eq!(scan.frames[1].frame.frame_offset, 1000 + 24);
        assert_eq!(scan.frames[1].frame.records, [b"two".to_vec(), b"three".to_vec()]);
        assert_eq!(scan.next_offset, Some(writer.next_offset()));
        assert_eq!(scan.stop, ScanStop { reason: StopReason::End, segment: 0, offset: bytes.len() as u64 });
    }

    #[test]
    fn a_frame_at_the_wrong_offset_is_old() {
        let mut old = StreamWriter::new(0);
        for _ in 0..4 {
            old.add_batch(vec![b"old-old-old".to_vec()]);
        }
        let mut new = StreamWriter::new(1 << 20);
        new.add_batch(vec![b"new-new-new".to_vec()]);
        let mut slot = old.into_bytes();
        let new_len = new.bytes().len();
        slot[..new_len].copy_from_slice(new.bytes());
        let scan = scan_stream(&[&slot], None, 0);
        assert_eq!(scan.frames.len(), 1);
        assert_eq!(scan.stop, ScanStop { reason: StopReason::OldRecord, segment: 0, offset: new_len as u64 });
    }

    #[test]
    fn damage_and_committed_frames() {
        let mut writer = StreamWriter::new(0);
        writer.add_batch(vec![b"one".to_vec()]);
        writer.add_batch(vec![b"two".to_vec()]);
        let mut bytes = writer.into_bytes();
        let scan = scan_stream(&[&bytes], Some(0), 24);
        assert!(scan.frames[0].already_committed);
        assert!(!scan.frames[1].already_committed);
        bytes[40] ^= 1;
        let scan = scan_stream(&[&bytes], Some(0), 0);
        assert_eq!(scan.stop, ScanStop { reason: StopReason::Checksum, segment: 0, offset: 24 });
        let scan = scan_stream(&[&bytes[..30]], Some(0), 0);
        assert_eq!(scan.stop, ScanStop { reason: StopReason::Short, segment: 0, offset: 24 });
    }
}
