//! The recovery scan: RECOVER_SCAN from Part 7 of the teaching page.
//!
//! After a crash the engine does not know how much of its log reached the media. It finds
//! out by reading: every record describes itself (a checksum, a length, a type), so the
//! scan walks the log record by record and keeps each one whose description holds. The
//! first record that fails a check marks the end of what can be trusted, because anything
//! after a bad record may be half-written, left over from an earlier use of the file, or
//! written in an order the device did not preserve. The scan then reports three things:
//! the records it accepted, where and why it stopped, and the next sequence number the
//! engine should hand out (the last good seq + 1).
//!
//! ## The checks, in order, for the tiny store's records
//!
//! For each segment, from offset 0:
//!
//! 1. **Header.** Read the 7 header bytes. No bytes left at all means the data ran out at
//!    a record boundary ([`StopReason::End`]). Fewer than 7 bytes that are all zero, or 7
//!    bytes that are all zero, are the zero-filled tail of a segment that was never written
//!    this far ([`StopReason::Zero`]). Fewer than 7 bytes with anything non-zero among
//!    them are a torn header ([`StopReason::Short`]).
//! 2. **Length.** A tiny-store payload holds at least a seq (8 bytes), an op byte and two
//!    one-byte lengths, so a stored length under 11 cannot have been written by the
//!    encoder ([`StopReason::BadLength`]). Fewer payload bytes than the length promises
//!    is a record cut short ([`StopReason::Short`]).
//! 3. **Checksum.** The CRC32C over the type byte and the payload must equal the stored
//!    one ([`StopReason::Checksum`]). This is the check that catches Part 7's case 1,
//!    where record 24 has its header and the start of its payload, then zeros.
//! 4. **Type.** The tiny store writes whole records only (FULL = 1); any other type under
//!    a valid checksum is a fragment it cannot have written ([`StopReason::BadFragment`]).
//!    A payload that passes its checksum but whose inner lengths do not add up is reported
//!    as [`StopReason::BadLength`].
//! 5. **Already flushed?** A record whose seq is at most `flushed_through_seq` is already
//!    in a flushed file: it is reported (with `already_flushed`) but not applied again.
//!    This is what makes running the scan twice harmless.
//! 6. **Accept**, and move on by 7 + length bytes.
//!
//! ## One segment, or a list of them
//!
//! The page's pseudocode says that a stop ends the whole replay, not just the segment.
//! Taken literally, the zero-filled tail of the first segment would end the replay before
//! the second segment is read, yet every sealed segment ends that way (segments are
//! created zero-filled and a segment switch happens between batches). walab therefore
//! draws the line between a *clean* end and a *damaged* one:
//!
//! - [`StopReason::End`] and [`StopReason::Zero`] end only the current segment: it was
//!   written up to here and no further. The scan goes on to the next segment, and records
//!   a [`ScanCheck::SegmentEnd`]. If this was the last segment, it is the final stop.
//! - Every other reason (short, checksum, bad length, bad fragment, old record) ends the
//!   whole replay at once: later segments are not read, because records after a damaged
//!   one cannot be trusted. That is the page's rule.
//!
//! [`TinyScan::stop`] is always the final stop: the first damaged record, or else the
//! clean end of the last segment. Because a zero header is where the log *was never
//! written*, a zero-filled hole in the middle of a segment also ends that segment: the
//! scan never peeks past zeros to see whether something follows.
//!
//! Every check is also recorded as data ([`ScanCheck`]), in the order it was made, so that
//! the browser can replay the scan one step at a time and show the stored and computed
//! checksums side by side.

use crate::checksum::crc32c;
use crate::codec::tiny::{self, TinyRecord, HEADER_BYTES, TYPE_FULL};

/// Why a scan stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
pub enum StopReason {
    /// The data ran out exactly at a record boundary.
    End,
    /// An all-zero header (or an all-zero remnant shorter than a header): the end of what
    /// was ever written, as in a zero-filled segment.
    Zero,
    /// A header or payload cut short by the end of the data: a torn write.
    Short,
    /// The stored checksum does not match the bytes.
    Checksum,
    /// A length the format cannot have written (too small, too large, crossing a block,
    /// or a checksummed payload whose inner lengths do not add up).
    BadLength,
    /// A fragment type out of order, or a type the format does not know.
    BadFragment,
    /// A record left over from an earlier use of the file (RocksDB's recyclable format
    /// with another log number, or a stream frame at the wrong offset).
    OldRecord,
}

impl StopReason {
    /// True for the two reasons that mean "nothing more was written": `End` and `Zero`.
    pub fn is_clean(self) -> bool {
        matches!(self, StopReason::End | StopReason::Zero)
    }

    /// The name used in `walab inspect --json`'s stop line.
    pub fn name(self) -> &'static str {
        match self {
            StopReason::End => "end",
            StopReason::Zero => "zero",
            StopReason::Short => "short",
            StopReason::Checksum => "checksum",
            StopReason::BadLength => "bad-length",
            StopReason::BadFragment => "bad-fragment",
            StopReason::OldRecord => "old-record",
        }
    }
}

/// Where and why a scan stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ScanStop {
    pub reason: StopReason,
    /// Index into the list of segments given to the scan.
    pub segment: usize,
    /// Byte offset in that segment of the record (or header, or trailer) that stopped it.
    pub offset: u64,
}

/// One check the scan made, in order. Every variant names the segment (an index into the
/// input list) and the byte offset in it where the check looked.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(tag = "check", rename_all = "snake_case"))]
pub enum ScanCheck {
    /// The scan starts reading a segment of `bytes` bytes.
    SegmentStart { segment: usize, bytes: u64 },
    /// Fewer than a header's bytes are left; `all_zero` tells a zero-filled remnant from a
    /// torn header.
    HeaderShort { segment: usize, offset: u64, available: u64, all_zero: bool },
    /// A header whose bytes are all zero.
    HeaderZero { segment: usize, offset: u64, header_bytes: u64 },
    /// A header read and split into its fields. `log_number` is present for RocksDB's
    /// recyclable records, `frame_offset` for the stream WAL's frames.
    Header {
        segment: usize,
        offset: u64,
        header_bytes: u64,
        stored_checksum: u32,
        length: u64,
        record_type: u8,
        log_number: Option<u32>,
        frame_offset: Option<u64>,
    },
    /// The bytes at the end of a 32 KiB block too few to hold a header, which the writer
    /// fills with zeros and the reader skips (LevelDB/RocksDB only).
    BlockTrailer { segment: usize, offset: u64, bytes: u64, all_zero: bool },
    /// Is the stored length one the format can write?
    LengthBound { segment: usize, offset: u64, length: u64, min: u64, max: u64, ok: bool },
    /// Are all `length` payload bytes there?
    PayloadPresent { segment: usize, offset: u64, length: u64, available: u64, ok: bool },
    /// The stored checksum against the one computed over the bytes.
    Checksum { segment: usize, offset: u64, stored: u32, computed: u32, ok: bool },
    /// A recyclable record's log number against the log being read.
    LogNumber { segment: usize, offset: u64, expected: u32, found: u32, ok: bool },
    /// A stream frame's offset field against where the previous frame ended.
    FrameOffset { segment: usize, offset: u64, expected: u64, found: u64, ok: bool },
    /// The record type, and whether it may come here (FULL/FIRST outside a fragmented
    /// record, MIDDLE/LAST inside one).
    Fragment { segment: usize, offset: u64, record_type: u8, in_fragmented_record: bool, ok: bool },
    /// The payload parsed (or not: `problem` says why).
    Payload { segment: usize, offset: u64, ok: bool, problem: Option<String> },
    /// The record's seq is already in a flushed file: it is skipped, not applied.
    AlreadyFlushed { segment: usize, offset: u64, seq: u64, flushed_through_seq: u64 },
    /// The record is accepted. For a fragmented record, `offset` is its first fragment's.
    Accept { segment: usize, offset: u64, len: u64, seq: Option<u64> },
    /// The segment ended cleanly (end of data or zeros); the scan moves to the next one.
    SegmentEnd { segment: usize, offset: u64, reason: StopReason },
    /// The final stop.
    Stop { stop: ScanStop },
}

/// A tiny-store record the scan accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct AcceptedTiny {
    pub segment: usize,
    /// Byte offset of the record's header in its segment.
    pub offset: u64,
    /// Whole-record bytes, header included.
    pub len: u64,
    pub record: TinyRecord,
    /// True when `record.seq <= flushed_through_seq`: reported, not applied.
    pub already_flushed: bool,
}

/// The result of [`scan_tiny`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct TinyScan {
    /// Every accepted record, flushed ones included, in log order.
    pub records: Vec<AcceptedTiny>,
    /// The final stop (see the module docs for clean ends between segments).
    pub stop: ScanStop,
    /// The last accepted seq + 1, and never less than `flushed_through_seq + 1`.
    pub next_seq: u64,
    /// Every check, in order.
    pub checks: Vec<ScanCheck>,
}

impl TinyScan {
    /// The records to apply: accepted and not already flushed.
    pub fn applied(&self) -> impl Iterator<Item = &AcceptedTiny> {
        self.records.iter().filter(|accepted| !accepted.already_flushed)
    }
}

/// RECOVER_SCAN's rule between segments, the same for every format: read each segment
/// with `scan_segment`, oldest first; a clean end ([`StopReason::is_clean`]: the data ran
/// out, or zeros) leads into the next segment, and any other stop ends the whole replay.
/// Records the segment start and end checks and the final stop, and returns that stop.
pub(crate) fn scan_segments<S>(
    scan: &mut S,
    checks: fn(&mut S) -> &mut Vec<ScanCheck>,
    segment_lens: &[u64],
    mut scan_segment: impl FnMut(&mut S, usize) -> ScanStop,
) -> ScanStop {
    let mut stop = ScanStop { reason: StopReason::End, segment: 0, offset: 0 };
    for (segment, &bytes) in segment_lens.iter().enumerate() {
        checks(scan).push(ScanCheck::SegmentStart { segment, bytes });
        stop = scan_segment(scan, segment);
        if stop.reason.is_clean() && segment + 1 < segment_lens.len() {
            checks(scan).push(ScanCheck::SegmentEnd { segment, offset: stop.offset, reason: stop.reason });
            continue;
        }
        break;
    }
    checks(scan).push(ScanCheck::Stop { stop });
    stop
}

/// The first check every record format makes at `at`: is a whole header there, and is
/// it anything but zeros? Returns the header's bytes, or why the reading of this segment
/// stops there: [`StopReason::End`] when the bytes ran out exactly at `at`,
/// [`StopReason::Zero`] for an all-zero header or tail (a zero-filled segment's unwritten
/// part), [`StopReason::Short`] for a few bytes that are not all zero (a torn header).
/// The check it made is pushed onto `checks`.
pub(crate) fn read_header<'a>(
    checks: &mut Vec<ScanCheck>,
    segment: usize,
    rest: &'a [u8],
    at: u64,
    header_bytes: usize,
) -> Result<&'a [u8], StopReason> {
    if rest.is_empty() {
        return Err(StopReason::End);
    }
    if rest.len() < header_bytes {
        let all_zero = rest.iter().all(|&b| b == 0);
        checks.push(ScanCheck::HeaderShort { segment, offset: at, available: rest.len() as u64, all_zero });
        return Err(if all_zero { StopReason::Zero } else { StopReason::Short });
    }
    let header = &rest[..header_bytes];
    if header.iter().all(|&b| b == 0) {
        checks.push(ScanCheck::HeaderZero { segment, offset: at, header_bytes: header_bytes as u64 });
        return Err(StopReason::Zero);
    }
    Ok(header)
}

/// The smallest payload the tiny encoder writes: seq (8), op (1), two one-byte lengths.
pub const TINY_PAYLOAD_BYTES_MIN: u64 = 11;

/// RECOVER_SCAN over the tiny store's segments, oldest first. See the module docs for
/// every check and for how a clean end of one segment leads into the next.
pub fn scan_tiny(segments: &[&[u8]], flushed_through_seq: u64) -> TinyScan {
    let mut scan = TinyScan {
        records: Vec::new(),
        stop: ScanStop { reason: StopReason::End, segment: 0, offset: 0 },
        next_seq: flushed_through_seq.saturating_add(1),
        checks: Vec::new(),
    };
    let lens: Vec<u64> = segments.iter().map(|bytes| bytes.len() as u64).collect();
    scan.stop = scan_segments(&mut scan, |scan| &mut scan.checks, &lens, |scan, segment| {
        scan_tiny_segment(segment, segments[segment], flushed_through_seq, scan)
    });
    scan
}

/// Scans one segment, appending to `scan`; returns where this segment's reading ended.
fn scan_tiny_segment(segment: usize, bytes: &[u8], flushed_through_seq: u64, scan: &mut TinyScan) -> ScanStop {
    let mut offset: usize = 0;
    // Bounded by the segment: every accepted record moves `offset` forward by at least
    // HEADER_BYTES + TINY_PAYLOAD_BYTES_MIN bytes.
    loop {
        let at = offset as u64;
        let stop = |reason| ScanStop { reason, segment, offset: at };
        let rest = &bytes[offset..];
        let header = match read_header(&mut scan.checks, segment, rest, at, HEADER_BYTES) {
            Ok(header) => header,
            Err(reason) => return stop(reason),
        };
        let stored_checksum = u32::from_le_bytes([header[0], header[1], header[2], header[3]]);
        let length = u16::from_le_bytes([header[4], header[5]]) as usize;
        let record_type = header[6];
        scan.checks.push(ScanCheck::Header {
            segment,
            offset: at,
            header_bytes: HEADER_BYTES as u64,
            stored_checksum,
            length: length as u64,
            record_type,
            log_number: None,
            frame_offset: None,
        });
        let length_ok = length as u64 >= TINY_PAYLOAD_BYTES_MIN;
        scan.checks.push(ScanCheck::LengthBound {
            segment,
            offset: at,
            length: length as u64,
            min: TINY_PAYLOAD_BYTES_MIN,
            max: u64::from(u16::MAX),
            ok: length_ok,
        });
        if !length_ok {
            return stop(StopReason::BadLength);
        }
        let available = rest.len() - HEADER_BYTES;
        let present = available >= length;
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
        let payload = &rest[HEADER_BYTES..HEADER_BYTES + length];
        let computed = crc32c(&[&[record_type], payload]);
        let checksum_ok = computed == stored_checksum;
        scan.checks.push(ScanCheck::Checksum { segment, offset: at, stored: stored_checksum, computed, ok: checksum_ok });
        if !checksum_ok {
            return stop(StopReason::Checksum);
        }
        let type_ok = record_type == TYPE_FULL;
        scan.checks.push(ScanCheck::Fragment { segment, offset: at, record_type, in_fragmented_record: false, ok: type_ok });
        if !type_ok {
            return stop(StopReason::BadFragment);
        }
        let record = match tiny::decode_payload(payload) {
            Ok(record) => {
                scan.checks.push(ScanCheck::Payload { segment, offset: at, ok: true, problem: None });
                record
            }
            Err(problem) => {
                scan.checks.push(ScanCheck::Payload {
                    segment,
                    offset: at,
                    ok: false,
                    problem: Some(format!("{problem:?}").to_ascii_lowercase()),
                });
                return stop(StopReason::BadLength);
            }
        };
        let len = (HEADER_BYTES + length) as u64;
        let already_flushed = record.seq <= flushed_through_seq;
        if already_flushed {
            scan.checks.push(ScanCheck::AlreadyFlushed { segment, offset: at, seq: record.seq, flushed_through_seq });
        }
        scan.checks.push(ScanCheck::Accept { segment, offset: at, len, seq: Some(record.seq) });
        scan.next_seq = scan.next_seq.max(record.seq.saturating_add(1));
        scan.records.push(AcceptedTiny { segment, offset: at, len, record, already_flushed });
        offset += HEADER_BYTES + length;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tiny_store::WRITES;

    /// A zero-filled segment holding these writes' records, `segment_bytes` long.
    fn segment(ids: std::ops::RangeInclusive<u64>, segment_bytes: usize) -> Vec<u8> {
        let mut bytes = Vec::new();
        for id in ids {
            bytes.extend(crate::tiny_store::write_by_id(id).unwrap().record());
        }
        assert!(bytes.len() <= segment_bytes);
        bytes.resize(segment_bytes, 0);
        bytes
    }

    fn seqs(scan: &TinyScan) -> Vec<u64> {
        scan.records.iter().map(|accepted| accepted.record.seq).collect()
    }

    #[test]
    fn wal1_scans_to_its_zero_tail() {
        let wal1 = segment(1..=4, 256);
        let scan = scan_tiny(&[&wal1], 0);
        assert_eq!(seqs(&scan), [1, 2, 3, 4]);
        let offsets: Vec<u64> = scan.records.iter().map(|accepted| accepted.offset).collect();
        assert_eq!(offsets, [0, 29, 56, 85]);
        assert_eq!(scan.stop, ScanStop { reason: StopReason::Zero, segment: 0, offset: 114 });
        assert_eq!(scan.next_seq, 5);
        assert_eq!(scan.records[0].record.key, WRITES[0].key.as_bytes());
    }

    #[test]
    fn exact_end_is_end() {
        let wal1 = segment(1..=4, 114);
        let scan = scan_tiny(&[&wal1], 0);
        assert_eq!(scan.stop, ScanStop { reason: StopReason::End, segment: 0, offset: 114 });
    }

    #[test]
    fn clean_ends_lead_into_the_next_segment() {
        let wal5 = segment(17..=20, 256);
        let wal6 = segment(21..=24, 256);
        let scan = scan_tiny(&[&wal5, &wal6], 18);
        assert_eq!(seqs(&scan), [17, 18, 19, 20, 21, 22, 23, 24]);
        assert!(scan.records[1].already_flushed);
        assert!(!scan.records[2].already_flushed);
        assert_eq!(scan.applied().count(), 6);
        assert_eq!(scan.stop, ScanStop { reason: StopReason::Zero, segment: 1, offset: 109 });
        assert_eq!(scan.next_seq, 25);
        let wal5_end = wal5.iter().rposition(|&b| b != 0).unwrap() as u64 + 1;
        assert!(scan.checks.contains(&ScanCheck::SegmentEnd { segment: 0, offset: wal5_end, reason: StopReason::Zero }));
    }

    #[test]
    fn part7_case1_stops_at_record_24_with_a_checksum_mismatch() {
        // Units 1 and 2 (bytes 32..96) reached the media, unit 3 (96..128) did not: record
        // 24 (82..109) keeps its header and its first 7 payload bytes, then zeros.
        let written = segment(21..=24, 128);
        let mut on_media = written.clone();
        on_media[96..128].fill(0);
        let scan = scan_tiny(&[&on_media], 20);
        assert_eq!(seqs(&scan), [21, 22, 23]);
        assert_eq!(scan.stop, ScanStop { reason: StopReason::Checksum, segment: 0, offset: 82 });
        assert_eq!(scan.next_seq, 24);
        let mismatch = scan.checks.iter().find(|check| matches!(check, ScanCheck::Checksum { ok: false, .. }));
        assert!(mismatch.is_some());
    }

    #[test]
    fn a_torn_segment_ends_the_whole_replay() {
        let mut wal5 = segment(17..=20, 256);
        wal5[40] ^= 1;
        let wal6 = segment(21..=24, 256);
        let scan = scan_tiny(&[&wal5, &wal6], 0);
        assert_eq!(seqs(&scan), [17]);
        assert_eq!(scan.stop.segment, 0);
        assert_eq!(scan.stop.reason, StopReason::Checksum);
        assert!(!scan.checks.iter().any(|check| matches!(check, ScanCheck::SegmentStart { segment: 1, .. })));
    }

    #[test]
    fn already_flushed_records_are_reported_and_skipped() {
        let wal1 = segment(1..=4, 114);
        let scan = scan_tiny(&[&wal1], 4);
        assert_eq!(scan.records.len(), 4);
        assert!(scan.records.iter().all(|accepted| accepted.already_flushed));
        assert_eq!(scan.applied().count(), 0);
        assert_eq!(scan.next_seq, 5);
        let skips = scan.checks.iter().filter(|check| matches!(check, ScanCheck::AlreadyFlushed { .. })).count();
        assert_eq!(skips, 4);
    }

    #[test]
    fn short_header_and_payload() {
        let wal1 = segment(1..=2, 56);
        let scan = scan_tiny(&[&wal1[..33]], 0);
        assert_eq!(scan.stop, ScanStop { reason: StopReason::Short, segment: 0, offset: 29 });
        let scan = scan_tiny(&[&wal1[..40]], 0);
        assert_eq!(scan.stop, ScanStop { reason: StopReason::Short, segment: 0, offset: 29 });
        let mut zero_tail = wal1[..29].to_vec();
        zero_tail.extend([0; 5]);
        assert_eq!(scan_tiny(&[&zero_tail], 0).stop.reason, StopReason::Zero);
    }

    #[test]
    fn bad_length_and_bad_fragment() {
        let mut record = WRITES[0].record();
        record[4] = 3;
        record[5] = 0;
        assert_eq!(scan_tiny(&[&record], 0).stop.reason, StopReason::BadLength);
        // A FIRST-type record with a valid checksum: the tiny store never writes one.
        let mut record = WRITES[0].record();
        record[6] = 2;
        let crc = crc32c(&[&record[6..]]);
        record[..4].copy_from_slice(&crc.to_le_bytes());
        assert_eq!(scan_tiny(&[&record], 0).stop.reason, StopReason::BadFragment);
    }

    #[test]
    fn checks_are_in_order_for_one_record() {
        let record = WRITES[0].record();
        let scan = scan_tiny(&[&record], 0);
        let kinds: Vec<&str> = scan
            .checks
            .iter()
            .map(|check| match check {
                ScanCheck::SegmentStart { .. } => "segment_start",
                ScanCheck::Header { .. } => "header",
                ScanCheck::LengthBound { .. } => "length_bound",
                ScanCheck::PayloadPresent { .. } => "payload_present",
                ScanCheck::Checksum { .. } => "checksum",
                ScanCheck::Fragment { .. } => "fragment",
                ScanCheck::Payload { .. } => "payload",
                ScanCheck::Accept { .. } => "accept",
                ScanCheck::Stop { .. } => "stop",
                _ => "other",
            })
            .collect();
        assert_eq!(
            kinds,
            ["segment_start", "header", "length_bound", "payload_present", "checksum", "fragment", "payload", "accept", "stop"]
        );
    }

    #[cfg(feature = "serde")]
    #[test]
    fn checks_serialize_for_the_browser() {
        let mut record = WRITES[0].record();
        record[20] ^= 1;
        let scan = scan_tiny(&[&record], 0);
        let lines: Vec<String> = scan.checks.iter().map(|check| serde_json::to_string(check).unwrap()).collect();
        expect_test::expect![[r#"
            {"check":"segment_start","segment":0,"bytes":29}
            {"check":"header","segment":0,"offset":0,"header_bytes":7,"stored_checksum":291183855,"length":22,"record_type":1,"log_number":null,"frame_offset":null}
            {"check":"length_bound","segment":0,"offset":0,"length":22,"min":11,"max":65535,"ok":true}
            {"check":"payload_present","segment":0,"offset":0,"length":22,"available":22,"ok":true}
            {"check":"checksum","segment":0,"offset":0,"stored":291183855,"computed":3848653479,"ok":false}
            {"check":"stop","stop":{"reason":"checksum","segment":0,"offset":0}}"#]]
        .assert_eq(&lines.join("\n"));
    }

    #[test]
    fn no_segments_is_an_empty_end() {
        let scan = scan_tiny(&[], 7);
        assert_eq!(scan.stop, ScanStop { reason: StopReason::End, segment: 0, offset: 0 });
        assert_eq!(scan.next_seq, 8);
        assert!(scan.records.is_empty());
    }
}
