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
//! Every check can also be recorded as data ([`ScanCheck`]), in the order it was made, so
//! that the browser can replay the scan one step at a time and show the stored and
//! computed checksums side by side; recovery drops them ([`CheckLog`]).
//!
//! ## Streaming
//!
//! [`TinyScanner`] is the scan: fed one segment at a time, it hands each accepted record
//! to a visitor and keeps nothing but where it is, so a recovery of a log of any size
//! holds one segment. [`scan_tiny`] is that scanner with its records and checks collected
//! into a [`TinyScan`], for logs small enough to draw.

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

/// Where a scan's checks go. The page's recovery figures and `walab inspect` draw every
/// check, so they keep them ([`CheckLog::keeping`]); recovery needs only the records and
/// the stop, and a log of millions of records would hold several checks per record, so
/// it drops them ([`CheckLog::dropping`]). The scan makes the same checks either way.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckLog {
    kept: Option<Vec<ScanCheck>>,
}

impl CheckLog {
    /// Every check kept, in order.
    pub fn keeping() -> CheckLog {
        CheckLog { kept: Some(Vec::new()) }
    }

    /// Checks made and dropped.
    pub fn dropping() -> CheckLog {
        CheckLog { kept: None }
    }

    /// The checks kept (none when dropping).
    pub fn into_vec(self) -> Vec<ScanCheck> {
        self.kept.unwrap_or_default()
    }
}

/// Something a scan records its checks in: a [`CheckLog`], or a plain list.
pub trait CheckSink {
    fn push(&mut self, check: ScanCheck);
}

impl CheckSink for CheckLog {
    #[inline]
    fn push(&mut self, check: ScanCheck) {
        if let Some(kept) = &mut self.kept {
            kept.push(check);
        }
    }
}

impl CheckSink for Vec<ScanCheck> {
    #[inline]
    fn push(&mut self, check: ScanCheck) {
        Vec::push(self, check);
    }
}

/// RECOVER_SCAN's rule between segments, the same for every format, fed one segment at a
/// time, oldest first: a clean end ([`StopReason::is_clean`]: the data ran out, or zeros)
/// leads into the next segment, and any other stop ends the whole replay. A caller
/// [`begin`](SegmentWalk::begin)s each segment, reads it, and [`end`](SegmentWalk::end)s
/// it with where its reading stopped; [`finish`](SegmentWalk::finish) gives the final stop.
/// The segment start and end checks and the final stop are recorded here: a clean end's
/// [`ScanCheck::SegmentEnd`] once the next segment begins, so that the last segment's
/// clean end is only the final stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentWalk {
    /// Segments begun so far: the index the next one gets.
    begun: usize,
    /// Where the last segment's reading stopped.
    stop: ScanStop,
}

impl Default for SegmentWalk {
    fn default() -> SegmentWalk {
        SegmentWalk { begun: 0, stop: ScanStop { reason: StopReason::End, segment: 0, offset: 0 } }
    }
}

impl SegmentWalk {
    /// Begins the next segment, of `bytes` bytes: its index, or `None` once a damaged
    /// record has ended the replay (later segments are not read).
    pub fn begin(&mut self, checks: &mut impl CheckSink, bytes: u64) -> Option<usize> {
        if self.ended() {
            return None;
        }
        let segment = self.begun;
        if segment > 0 {
            checks.push(ScanCheck::SegmentEnd { segment: segment - 1, offset: self.stop.offset, reason: self.stop.reason });
        }
        checks.push(ScanCheck::SegmentStart { segment, bytes });
        self.begun += 1;
        Some(segment)
    }

    /// Where the segment begun last stopped; returns whether the next one is read.
    pub fn end(&mut self, stop: ScanStop) -> bool {
        self.stop = stop;
        !self.ended()
    }

    /// A damaged record ended the replay.
    pub fn ended(&self) -> bool {
        self.begun > 0 && !self.stop.reason.is_clean()
    }

    /// The final stop (recorded as [`ScanCheck::Stop`]): the first damaged record, or
    /// else the clean end of the last segment.
    pub fn finish(&self, checks: &mut impl CheckSink) -> ScanStop {
        checks.push(ScanCheck::Stop { stop: self.stop });
        self.stop
    }
}

/// [`SegmentWalk`] over segments all at hand: reads each with `scan_segment`, oldest
/// first, and returns the final stop.
pub(crate) fn scan_segments<S, C: CheckSink>(
    scan: &mut S,
    checks: fn(&mut S) -> &mut C,
    segment_lens: &[u64],
    mut scan_segment: impl FnMut(&mut S, usize) -> ScanStop,
) -> ScanStop {
    let mut walk = SegmentWalk::default();
    for &bytes in segment_lens {
        let Some(segment) = walk.begin(checks(scan), bytes) else { break };
        let stop = scan_segment(scan, segment);
        walk.end(stop);
    }
    walk.finish(checks(scan))
}

/// The first check every record format makes at `at`: is a whole header there, and is
/// it anything but zeros? Returns the header's bytes, or why the reading of this segment
/// stops there: [`StopReason::End`] when the bytes ran out exactly at `at`,
/// [`StopReason::Zero`] for an all-zero header or tail (a zero-filled segment's unwritten
/// part), [`StopReason::Short`] for a few bytes that are not all zero (a torn header).
/// The check it made is pushed onto `checks`.
pub(crate) fn read_header<'a>(
    checks: &mut impl CheckSink,
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

/// What a scan found besides its records: the final stop, the next seq, and the checks
/// kept (none if they were dropped).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScanEnd {
    pub stop: ScanStop,
    /// The last accepted seq + 1, and never less than `flushed_through_seq + 1`.
    pub next_seq: u64,
    pub checks: Vec<ScanCheck>,
}

/// RECOVER_SCAN over the tiny store's segments, fed one segment at a time, oldest first,
/// each accepted record handed to a visitor as it is found: the scan holds no record and
/// no segment but the one it reads. [`scan_tiny`] is this scan with its records collected.
#[derive(Clone, Debug)]
pub struct TinyScanner {
    walk: SegmentWalk,
    checks: CheckLog,
    flushed_through_seq: u64,
    next_seq: u64,
}

impl TinyScanner {
    pub fn new(flushed_through_seq: u64, checks: CheckLog) -> TinyScanner {
        TinyScanner {
            walk: SegmentWalk::default(),
            checks,
            flushed_through_seq,
            next_seq: flushed_through_seq.saturating_add(1),
        }
    }

    /// Scans the next segment, handing `visit` each record it accepts, in log order.
    /// Returns whether later segments are still read (false once a damaged record ended
    /// the replay; a segment fed after that is not read).
    pub fn segment(&mut self, bytes: &[u8], mut visit: impl FnMut(AcceptedTiny)) -> bool {
        let Some(segment) = self.walk.begin(&mut self.checks, bytes.len() as u64) else { return false };
        let stop = scan_tiny_segment(segment, bytes, self.flushed_through_seq, &mut self.checks, &mut self.next_seq, &mut visit);
        self.walk.end(stop)
    }

    /// The final stop, the next seq and the checks kept.
    pub fn finish(mut self) -> ScanEnd {
        let stop = self.walk.finish(&mut self.checks);
        ScanEnd { stop, next_seq: self.next_seq, checks: self.checks.into_vec() }
    }
}

/// RECOVER_SCAN over the tiny store's segments, oldest first, every record and every
/// check collected (the page's figures): [`TinyScanner`] with a list as its visitor. See
/// the module docs for every check and for how a clean end of one segment leads into the
/// next.
pub fn scan_tiny(segments: &[&[u8]], flushed_through_seq: u64) -> TinyScan {
    let mut scanner = TinyScanner::new(flushed_through_seq, CheckLog::keeping());
    let mut records = Vec::new();
    for bytes in segments {
        if !scanner.segment(bytes, |accepted| records.push(accepted)) {
            break;
        }
    }
    let ScanEnd { stop, next_seq, checks } = scanner.finish();
    TinyScan { records, stop, next_seq, checks }
}

/// Scans one segment, handing each accepted record to `visit`; returns where this
/// segment's reading ended.
fn scan_tiny_segment(
    segment: usize,
    bytes: &[u8],
    flushed_through_seq: u64,
    checks: &mut CheckLog,
    next_seq: &mut u64,
    visit: &mut impl FnMut(AcceptedTiny),
) -> ScanStop {
    let mut offset: usize = 0;
    // Bounded by the segment: every accepted record moves `offset` forward by at least
    // HEADER_BYTES + TINY_PAYLOAD_BYTES_MIN bytes.
    loop {
        let at = offset as u64;
        let stop = |reason| ScanStop { reason, segment, offset: at };
        let rest = &bytes[offset..];
        let header = match read_header(checks, segment, rest, at, HEADER_BYTES) {
            Ok(header) => header,
            Err(reason) => return stop(reason),
        };
        let stored_checksum = u32::from_le_bytes([header[0], header[1], header[2], header[3]]);
        let length = u16::from_le_bytes([header[4], header[5]]) as usize;
        let record_type = header[6];
        checks.push(ScanCheck::Header {
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
        checks.push(ScanCheck::LengthBound {
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
        checks.push(ScanCheck::PayloadPresent {
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
        checks.push(ScanCheck::Checksum { segment, offset: at, stored: stored_checksum, computed, ok: checksum_ok });
        if !checksum_ok {
            return stop(StopReason::Checksum);
        }
        let type_ok = record_type == TYPE_FULL;
        checks.push(ScanCheck::Fragment { segment, offset: at, record_type, in_fragmented_record: false, ok: type_ok });
        if !type_ok {
            return stop(StopReason::BadFragment);
        }
        let record = match tiny::decode_payload(payload) {
            Ok(record) => {
                checks.push(ScanCheck::Payload { segment, offset: at, ok: true, problem: None });
                record
            }
            Err(problem) => {
                checks.push(ScanCheck::Payload {
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
            checks.push(ScanCheck::AlreadyFlushed { segment, offset: at, seq: record.seq, flushed_through_seq });
        }
        checks.push(ScanCheck::Accept { segment, offset: at, len, seq: Some(record.seq) });
        *next_seq = (*next_seq).max(record.seq.saturating_add(1));
        visit(AcceptedTiny { segment, offset: at, len, record, already_flushed });
        offset += HEADER_BYTES + length;
    }
}

#[cfg(test)]
mod tests;
