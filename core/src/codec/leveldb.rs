//! The LevelDB / RocksDB log format, byte for byte.
//!
//! The file is a sequence of 32 KiB blocks. Each block holds physical records, each with a
//! header and a fragment of a logical record:
//!
//! ```text
//! legacy header (7 bytes):      masked CRC32C u32 LE | length u16 LE | type u8
//! recyclable header (11 bytes): masked CRC32C u32 LE | length u16 LE | type u8 | log number u32 LE
//! ```
//!
//! - The CRC32C covers the type byte, the log number (recyclable headers only) and the
//!   fragment's bytes, and is stored *masked* ([`crate::checksum::mask_crc32c`]).
//! - A logical record that fits in what is left of the block is one FULL fragment. A
//!   longer one is cut into FIRST, MIDDLE ..., LAST fragments, one per block; a fragment
//!   never crosses a block boundary, so a reader can always resynchronize at the next
//!   block.
//! - When fewer bytes than a header are left in a block, the writer fills them with zeros
//!   (the *trailer*) and starts the next fragment at the next block. With exactly a
//!   header's bytes left, it writes a FIRST fragment with no data.
//! - Types 1 to 4 are FULL, FIRST, MIDDLE, LAST with the legacy header; 5 to 8 the same
//!   with RocksDB's recyclable header. RocksDB writes the recyclable header when it reuses
//!   old log files instead of creating new ones (`recycle_log_file_num > 0`). A reused
//!   file still holds the old log's records past the new tail, each with a valid checksum;
//!   the log number in every header is what lets the reader tell them apart. A record
//!   carrying another log number is the end of the new log ([`StopReason::OldRecord`]).
//!
//! Each logical record is a [`WriteBatch`](super::write_batch). RocksDB has a few more
//! record types that walab does not decode; the scan stops at them with
//! [`StopReason::BadFragment`] and the type in its check. The one met in practice is
//! type 9, which a RocksDB opened with `wal_compression` writes first: everything after
//! it is compressed (zstd).
//!
//! A recycled file's old tail usually does not line up with the new records: the new log
//! ends somewhere inside an old record, and the reader meets bytes that look like a torn
//! record (a bad type, length or checksum). Only when the new log happens to end exactly
//! where an old record starts does the reader meet an intact record with a valid
//! checksum, and only the log number tells it apart. Both cases are in the fixtures
//! (`core/tests/fixtures/rocksdb-7.8-recycled*`). RocksDB 7.8's own recovery, in the one
//! mode that allows recycling, never returns on the second one: it stops at the old
//! record without consuming it, then tries it again.
//!
//! ## The scan
//!
//! [`scan_log`] is RECOVER_SCAN for this format, with the same stop reasons and the same
//! rule between segments as the tiny store's ([`crate::scan`]). Its checks, in order:
//!
//! 1. At a block's end, fewer bytes than a header are the trailer: skipped (the real
//!    readers ignore their contents too; the check records whether they were zero).
//! 2. No bytes left: [`StopReason::End`]. Fewer than 7 bytes, or 7 zero bytes:
//!    [`StopReason::Zero`] when they are all zero, else [`StopReason::Short`].
//! 3. The type: 1-4 (and 5-8 when reading RocksDB) are known; anything else is
//!    [`StopReason::BadFragment`]. A recyclable header needs 11 bytes (else `Short`).
//! 4. The log number of a recyclable header must be the log's (when none is given, the
//!    first record's number is taken as the log's). A legacy record after recyclable ones
//!    in the same file also comes from the file's earlier life. Both: `OldRecord`. RocksDB
//!    makes this check before the length and checksum, and so does walab.
//! 5. The fragment must end inside its block ([`StopReason::BadLength`]) and inside the
//!    data ([`StopReason::Short`]).
//! 6. The masked CRC32C must match ([`StopReason::Checksum`]).
//! 7. The fragment order: FULL or FIRST outside a fragmented record, MIDDLE or LAST inside
//!    one ([`StopReason::BadFragment`]).
//! 8. A completed logical record must decode as a WriteBatch; one that passes its
//!    checksums but does not is reported as [`StopReason::BadLength`] with the batch
//!    error in the check.
//! 9. Already flushed (the batch's last seq at most `flushed_through_seq`), then accept.
//!
//! A clean end (end of data, zeros) reached in the middle of a fragmented record is not
//! clean: the record was torn, so the scan reports [`StopReason::Short`]. Whenever the
//! scan stops inside a fragmented record, the stop's offset is that record's first
//! fragment: the log is cut there.

use super::write_batch::{decode_batch, encode_batch, WriteBatch};
use crate::checksum::{crc32c, mask_crc32c, unmask_crc32c};
use crate::scan::{CheckLog, CheckSink, ScanCheck, ScanEnd, ScanStop, SegmentWalk, StopReason};

/// Bytes in a block.
pub const BLOCK_BYTES: usize = 32 * 1024;
/// Bytes in a legacy header.
pub const LEGACY_HEADER_BYTES: usize = 7;
/// Bytes in a recyclable header.
pub const RECYCLABLE_HEADER_BYTES: usize = 11;

pub const TYPE_ZERO: u8 = 0;
pub const TYPE_FULL: u8 = 1;
pub const TYPE_FIRST: u8 = 2;
pub const TYPE_MIDDLE: u8 = 3;
pub const TYPE_LAST: u8 = 4;
pub const TYPE_RECYCLABLE_FULL: u8 = 5;
pub const TYPE_RECYCLABLE_FIRST: u8 = 6;
pub const TYPE_RECYCLABLE_MIDDLE: u8 = 7;
pub const TYPE_RECYCLABLE_LAST: u8 = 8;

/// Which header the writer uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum HeaderKind {
    /// 7 bytes, types 1-4: LevelDB, and RocksDB without recycling.
    Legacy,
    /// 11 bytes, types 5-8, carrying the low 32 bits of the log number.
    Recyclable { log_number: u32 },
}

impl HeaderKind {
    pub fn header_bytes(self) -> usize {
        match self {
            HeaderKind::Legacy => LEGACY_HEADER_BYTES,
            HeaderKind::Recyclable { .. } => RECYCLABLE_HEADER_BYTES,
        }
    }
}

/// A fragment's position in its logical record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fragment {
    Full,
    First,
    Middle,
    Last,
}

impl Fragment {
    /// The type byte for this fragment under `kind`'s header.
    pub fn record_type(self, kind: HeaderKind) -> u8 {
        let legacy = match self {
            Fragment::Full => TYPE_FULL,
            Fragment::First => TYPE_FIRST,
            Fragment::Middle => TYPE_MIDDLE,
            Fragment::Last => TYPE_LAST,
        };
        match kind {
            HeaderKind::Legacy => legacy,
            HeaderKind::Recyclable { .. } => legacy + 4,
        }
    }

    /// The fragment and header size a type byte stands for; `None` for types the format
    /// does not define.
    pub fn from_type(record_type: u8) -> Option<(Fragment, usize)> {
        let fragment = match record_type {
            TYPE_FULL | TYPE_RECYCLABLE_FULL => Fragment::Full,
            TYPE_FIRST | TYPE_RECYCLABLE_FIRST => Fragment::First,
            TYPE_MIDDLE | TYPE_RECYCLABLE_MIDDLE => Fragment::Middle,
            TYPE_LAST | TYPE_RECYCLABLE_LAST => Fragment::Last,
            _ => return None,
        };
        let header = if record_type >= TYPE_RECYCLABLE_FULL { RECYCLABLE_HEADER_BYTES } else { LEGACY_HEADER_BYTES };
        Some((fragment, header))
    }
}

/// The log writer: LevelDB's `log::Writer` and RocksDB's, as a pure byte producer.
///
/// `add_record` returns nothing and appends to an in-memory buffer; a driver writes
/// [`LogWriter::bytes`] to a file at [`LogWriter::start_offset`]. A writer for a file
/// that already holds records ([`LogWriter::resume`]) keeps only the new bytes, so a
/// long-lived log never sits in memory.
#[derive(Clone, Debug)]
pub struct LogWriter {
    kind: HeaderKind,
    /// The file offset of `bytes[0]`.
    start_offset: u64,
    bytes: Vec<u8>,
}

impl LogWriter {
    /// A writer for an empty log.
    pub fn new(kind: HeaderKind) -> LogWriter {
        LogWriter::resume(kind, 0, Vec::new())
    }

    /// A writer whose next record goes at `offset` of a file written by this format up to
    /// there; `buffer` (cleared) holds the new bytes, so a caller can reuse one.
    pub fn resume(kind: HeaderKind, offset: u64, mut buffer: Vec<u8>) -> LogWriter {
        buffer.clear();
        LogWriter { kind, start_offset: offset, bytes: buffer }
    }

    /// The file offset of the first byte of [`LogWriter::bytes`].
    pub fn start_offset(&self) -> u64 {
        self.start_offset
    }

    /// The file offset just past the last byte written.
    pub fn end_offset(&self) -> u64 {
        self.start_offset + self.bytes.len() as u64
    }

    fn block_left(&self) -> usize {
        BLOCK_BYTES - (self.end_offset() % BLOCK_BYTES as u64) as usize
    }

    /// Appends one logical record, fragmenting it across blocks as the real writers do.
    pub fn add_record(&mut self, payload: &[u8]) {
        let header_bytes = self.kind.header_bytes();
        let mut rest = payload;
        let mut begin = true;
        // Bounded: each pass writes a fragment of at least one byte, except a zero-byte
        // FIRST fragment, which can only happen once (at a block's end), or a trailer.
        loop {
            let block_left = self.block_left();
            if block_left < header_bytes {
                self.bytes.resize(self.bytes.len() + block_left, 0);
                continue;
            }
            let room = block_left - header_bytes;
            let fragment_bytes = rest.len().min(room);
            let end = fragment_bytes == rest.len();
            let fragment = match (begin, end) {
                (true, true) => Fragment::Full,
                (true, false) => Fragment::First,
                (false, false) => Fragment::Middle,
                (false, true) => Fragment::Last,
            };
            let (now, later) = rest.split_at(fragment_bytes);
            self.emit(fragment, now);
            rest = later;
            begin = false;
            if end {
                break;
            }
        }
    }

    fn emit(&mut self, fragment: Fragment, data: &[u8]) {
        let record_type = fragment.record_type(self.kind);
        let length = u16::try_from(data.len()).expect("a fragment fits in a block");
        let crc = match self.kind {
            HeaderKind::Legacy => crc32c(&[&[record_type], data]),
            HeaderKind::Recyclable { log_number } => crc32c(&[&[record_type], &log_number.to_le_bytes(), data]),
        };
        self.bytes.extend_from_slice(&mask_crc32c(crc).to_le_bytes());
        self.bytes.extend_from_slice(&length.to_le_bytes());
        self.bytes.push(record_type);
        if let HeaderKind::Recyclable { log_number } = self.kind {
            self.bytes.extend_from_slice(&log_number.to_le_bytes());
        }
        self.bytes.extend_from_slice(data);
    }

    /// Appends one batch.
    pub fn add_batch(&mut self, batch: &WriteBatch) {
        self.add_record(&encode_batch(batch));
    }

    /// Everything written so far (since [`LogWriter::resume`]'s offset).
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }
}

/// Which reader to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum LogFormat {
    /// LevelDB: legacy headers only; types 5-8 are unknown.
    LevelDb,
    /// RocksDB: legacy and recyclable headers.
    RocksDb,
}

/// One log file to scan. `log_number` is the number the file's recyclable records must
/// carry (RocksDB's `000010.log` is log 10); `None` takes the first record's.
#[derive(Clone, Copy, Debug)]
pub struct LogSegment<'a> {
    pub bytes: &'a [u8],
    pub log_number: Option<u32>,
}

/// A logical record the scan accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct AcceptedBatch {
    pub segment: usize,
    /// Byte offset of the record's first fragment header.
    pub offset: u64,
    /// Bytes from that header to the end of the last fragment (trailers and the headers
    /// of later fragments included).
    pub len: u64,
    /// How many physical fragments it was cut into.
    pub fragments: u32,
    /// True when it came with recyclable headers.
    pub recyclable: bool,
    pub batch: WriteBatch,
    /// True when the batch's last seq is at most `flushed_through_seq`.
    pub already_flushed: bool,
}

/// The result of [`scan_log`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct LogScan {
    pub records: Vec<AcceptedBatch>,
    pub stop: ScanStop,
    /// The last accepted batch's `seq + count`, never less than `flushed_through_seq + 1`.
    pub next_seq: u64,
    pub checks: Vec<ScanCheck>,
}

/// The decoder alone: every logical record's payload up to the first failed check, and
/// the stop. The scan without the batch decoding, for callers with their own payloads.
pub fn read_records(format: LogFormat, segment: LogSegment<'_>) -> (Vec<(u64, Vec<u8>)>, ScanStop) {
    let mut out = Vec::new();
    let mut checks = CheckLog::dropping();
    let stop = scan_segment(format, 0, segment, &mut checks, &mut |offset, _len, _fragments, _recyclable, payload, _checks| {
        out.push((offset, payload));
        Ok(())
    });
    (out, stop)
}

/// RECOVER_SCAN over LevelDB or RocksDB log files, fed one file at a time, oldest first,
/// each accepted batch handed to a visitor as it is found. [`scan_log`] is this scan with
/// its batches collected.
#[derive(Clone, Debug)]
pub struct LogScanner {
    format: LogFormat,
    walk: SegmentWalk,
    checks: CheckLog,
    flushed_through_seq: u64,
    next_seq: u64,
}

impl LogScanner {
    pub fn new(format: LogFormat, flushed_through_seq: u64, checks: CheckLog) -> LogScanner {
        LogScanner {
            format,
            walk: SegmentWalk::default(),
            checks,
            flushed_through_seq,
            next_seq: flushed_through_seq.saturating_add(1),
        }
    }

    /// Scans the next file, handing `visit` each batch it accepts, in log order. Returns
    /// whether later files are still read (false once a damaged record ended the replay).
    pub fn segment(&mut self, segment: LogSegment<'_>, mut visit: impl FnMut(AcceptedBatch)) -> bool {
        let Some(index) = self.walk.begin(&mut self.checks, segment.bytes.len() as u64) else { return false };
        let (flushed_through_seq, next_seq) = (self.flushed_through_seq, &mut self.next_seq);
        let stop = scan_segment(
            self.format,
            index,
            segment,
            &mut self.checks,
            &mut |offset, len, fragments, recyclable, payload, checks| {
                let batch = match decode_batch(&payload) {
                    Ok(batch) => batch,
                    Err(error) => {
                        checks.push(ScanCheck::Payload {
                            segment: index,
                            offset,
                            ok: false,
                            problem: Some(error.to_string()),
                        });
                        return Err(StopReason::BadLength);
                    }
                };
                checks.push(ScanCheck::Payload { segment: index, offset, ok: true, problem: None });
                let already_flushed = batch.last_seq() <= flushed_through_seq;
                if already_flushed {
                    checks.push(ScanCheck::AlreadyFlushed {
                        segment: index,
                        offset,
                        seq: batch.last_seq(),
                        flushed_through_seq,
                    });
                }
                checks.push(ScanCheck::Accept { segment: index, offset, len, seq: Some(batch.seq) });
                *next_seq = (*next_seq).max(batch.next_seq());
                visit(AcceptedBatch { segment: index, offset, len, fragments, recyclable, batch, already_flushed });
                Ok(())
            },
        );
        self.walk.end(stop)
    }

    /// The final stop, the next seq and the checks kept.
    pub fn finish(mut self) -> ScanEnd {
        let stop = self.walk.finish(&mut self.checks);
        ScanEnd { stop, next_seq: self.next_seq, checks: self.checks.into_vec() }
    }
}

/// RECOVER_SCAN over LevelDB or RocksDB log files, oldest first, every batch and every
/// check collected: [`LogScanner`] with a list as its visitor. See the module docs.
pub fn scan_log(format: LogFormat, segments: &[LogSegment<'_>], flushed_through_seq: u64) -> LogScan {
    let mut scanner = LogScanner::new(format, flushed_through_seq, CheckLog::keeping());
    let mut records = Vec::new();
    for &segment in segments {
        if !scanner.segment(segment, |accepted| records.push(accepted)) {
            break;
        }
    }
    let ScanEnd { stop, next_seq, checks } = scanner.finish();
    LogScan { records, stop, next_seq, checks }
}

/// A logical record being assembled from fragments.
struct Partial {
    offset: u64,
    fragments: u32,
    payload: Vec<u8>,
}

type OnRecord<'c> = dyn FnMut(u64, u64, u32, bool, Vec<u8>, &mut CheckLog) -> Result<(), StopReason> + 'c;

/// One physical record whose header, length and checksum checked out.
#[derive(Clone, Copy)]
struct Piece<'a> {
    fragment: Fragment,
    recyclable: bool,
    data: &'a [u8],
}

/// The scan of one file in progress: where it is, and what the records so far say about
/// the file (its header kind, its log number, a fragmented record in progress).
struct SegmentScan<'a, 'c> {
    format: LogFormat,
    segment: usize,
    bytes: &'a [u8],
    offset: usize,
    expected_log_number: Option<u32>,
    /// Set by the first record: is this file written with recyclable headers?
    file_recyclable: Option<bool>,
    partial: Option<Partial>,
    checks: &'c mut CheckLog,
}

/// Scans one file; calls `on_record(offset, len, fragments, recyclable, payload, checks)`
/// for every complete logical record, which may refuse it with a stop reason.
fn scan_segment(
    format: LogFormat,
    segment: usize,
    input: LogSegment<'_>,
    checks: &mut CheckLog,
    on_record: &mut OnRecord<'_>,
) -> ScanStop {
    let mut scan = SegmentScan {
        format,
        segment,
        bytes: input.bytes,
        offset: 0,
        expected_log_number: input.log_number,
        file_recyclable: None,
        partial: None,
        checks,
    };
    // Bounded by the file: every pass moves `offset` forward by at least one byte (a
    // trailer) or a header, or returns.
    loop {
        if scan.skip_trailer() {
            continue;
        }
        let at = scan.offset as u64;
        let piece = match scan.next_piece(at) {
            Ok(piece) => piece,
            Err(reason) => return scan.stop_at(at, reason),
        };
        if let Some(record) = scan.assemble(at, piece) {
            let len = scan.offset as u64 - record.offset;
            if let Err(reason) =
                on_record(record.offset, len, record.fragments, piece.recyclable, record.payload, scan.checks)
            {
                return ScanStop { reason, segment, offset: record.offset };
            }
        }
    }
}

impl<'a> SegmentScan<'a, '_> {
    /// Where to cut if the scan stops at `at`: the start of a fragmented record in
    /// progress, which a clean end leaves torn.
    fn stop_at(&self, at: u64, reason: StopReason) -> ScanStop {
        let reason = match (&self.partial, reason.is_clean()) {
            (Some(_), true) => StopReason::Short,
            _ => reason,
        };
        ScanStop { reason, segment: self.segment, offset: self.partial.as_ref().map_or(at, |partial| partial.offset) }
    }

    /// Check 1: fewer bytes than a header at a block's end are its trailer, skipped.
    fn skip_trailer(&mut self) -> bool {
        let block_left = BLOCK_BYTES - self.offset % BLOCK_BYTES;
        let rest = &self.bytes[self.offset..];
        let trailer_under =
            if self.file_recyclable == Some(true) { RECYCLABLE_HEADER_BYTES } else { LEGACY_HEADER_BYTES };
        if block_left >= trailer_under || rest.is_empty() {
            return false;
        }
        let trailer = &rest[..block_left.min(rest.len())];
        self.checks.push(ScanCheck::BlockTrailer {
            segment: self.segment,
            offset: self.offset as u64,
            bytes: trailer.len() as u64,
            all_zero: trailer.iter().all(|&b| b == 0),
        });
        self.offset += trailer.len();
        true
    }

    /// Checks 2 to 7 on the physical record at `at`; moves past it when it passes.
    fn next_piece(&mut self, at: u64) -> Result<Piece<'a>, StopReason> {
        let bytes: &'a [u8] = self.bytes;
        let rest = &bytes[self.offset..];
        crate::scan::read_header(self.checks, self.segment, rest, at, LEGACY_HEADER_BYTES)?;
        let record_type = rest[6];
        let (fragment, header_bytes) = self.known_type(rest, at, record_type)?;
        let stored_checksum = u32::from_le_bytes(rest[..4].try_into().expect("four bytes"));
        let length = usize::from(u16::from_le_bytes([rest[4], rest[5]]));
        let recyclable = header_bytes == RECYCLABLE_HEADER_BYTES;
        let log_number = recyclable.then(|| u32::from_le_bytes(rest[7..11].try_into().expect("four bytes")));
        self.checks.push(ScanCheck::Header {
            segment: self.segment,
            offset: at,
            header_bytes: header_bytes as u64,
            stored_checksum,
            length: length as u64,
            record_type,
            log_number,
            frame_offset: None,
        });
        self.check_header_kind(at, record_type, recyclable)?;
        self.check_log_number(at, log_number)?;
        self.check_length(at, rest, header_bytes, length)?;
        let data = &rest[header_bytes..header_bytes + length];
        self.check_checksum(at, record_type, log_number, stored_checksum, data)?;
        self.check_order(at, record_type, fragment)?;
        self.file_recyclable = Some(recyclable);
        self.offset += header_bytes + length;
        Ok(Piece { fragment, recyclable, data })
    }

    fn fragment_check(&mut self, at: u64, record_type: u8, ok: bool) {
        self.checks.push(ScanCheck::Fragment {
            segment: self.segment,
            offset: at,
            record_type,
            in_fragmented_record: self.partial.is_some(),
            ok,
        });
    }

    /// Check 3: a type the format defines, with all of its header present.
    fn known_type(&mut self, rest: &[u8], at: u64, record_type: u8) -> Result<(Fragment, usize), StopReason> {
        let known = Fragment::from_type(record_type)
            .filter(|&(_, header)| self.format == LogFormat::RocksDb || header == LEGACY_HEADER_BYTES);
        let Some((fragment, header_bytes)) = known else {
            self.fragment_check(at, record_type, false);
            return Err(StopReason::BadFragment);
        };
        if rest.len() < header_bytes {
            self.checks.push(ScanCheck::HeaderShort {
                segment: self.segment,
                offset: at,
                available: rest.len() as u64,
                all_zero: false,
            });
            return Err(StopReason::Short);
        }
        Ok((fragment, header_bytes))
    }

    /// Check 4, first half: a file is written with one header kind; a legacy record after
    /// recyclable ones is the file's earlier life showing through.
    fn check_header_kind(&mut self, at: u64, record_type: u8, recyclable: bool) -> Result<(), StopReason> {
        let refusal = match (self.file_recyclable, recyclable) {
            (Some(true), false) => StopReason::OldRecord,
            (Some(false), true) => StopReason::BadFragment,
            _ => return Ok(()),
        };
        self.fragment_check(at, record_type, false);
        Err(refusal)
    }

    /// Check 4, second half: a recyclable record carries the log's number.
    fn check_log_number(&mut self, at: u64, log_number: Option<u32>) -> Result<(), StopReason> {
        let Some(found) = log_number else { return Ok(()) };
        let expected = *self.expected_log_number.get_or_insert(found);
        let ok = expected == found;
        self.checks.push(ScanCheck::LogNumber { segment: self.segment, offset: at, expected, found, ok });
        if ok {
            Ok(())
        } else {
            Err(StopReason::OldRecord)
        }
    }

    /// Check 5: the fragment ends inside its block and inside the data.
    fn check_length(&mut self, at: u64, rest: &[u8], header_bytes: usize, length: usize) -> Result<(), StopReason> {
        let room = BLOCK_BYTES - self.offset % BLOCK_BYTES - header_bytes;
        let fits_block = length <= room;
        self.checks.push(ScanCheck::LengthBound {
            segment: self.segment,
            offset: at,
            length: length as u64,
            min: 0,
            max: room as u64,
            ok: fits_block,
        });
        if !fits_block {
            return Err(StopReason::BadLength);
        }
        let available = rest.len() - header_bytes;
        let present = length <= available;
        self.checks.push(ScanCheck::PayloadPresent {
            segment: self.segment,
            offset: at,
            length: length as u64,
            available: available as u64,
            ok: present,
        });
        if present {
            Ok(())
        } else {
            Err(StopReason::Short)
        }
    }

    /// Check 6: the masked CRC32C over the type, the log number and the data.
    fn check_checksum(
        &mut self,
        at: u64,
        record_type: u8,
        log_number: Option<u32>,
        stored: u32,
        data: &[u8],
    ) -> Result<(), StopReason> {
        let computed = match log_number {
            None => crc32c(&[&[record_type], data]),
            Some(number) => crc32c(&[&[record_type], &number.to_le_bytes(), data]),
        };
        let ok = unmask_crc32c(stored) == computed;
        self.checks.push(ScanCheck::Checksum {
            segment: self.segment,
            offset: at,
            stored,
            computed: mask_crc32c(computed),
            ok,
        });
        if ok {
            Ok(())
        } else {
            Err(StopReason::Checksum)
        }
    }

    /// Check 7: FULL or FIRST outside a fragmented record, MIDDLE or LAST inside one.
    fn check_order(&mut self, at: u64, record_type: u8, fragment: Fragment) -> Result<(), StopReason> {
        let ok = matches!(
            (&self.partial, fragment),
            (None, Fragment::Full | Fragment::First) | (Some(_), Fragment::Middle | Fragment::Last)
        );
        self.fragment_check(at, record_type, ok);
        if ok {
            Ok(())
        } else {
            Err(StopReason::BadFragment)
        }
    }

    /// Adds a checked piece to the record in progress; the record, once complete.
    fn assemble(&mut self, at: u64, piece: Piece<'_>) -> Option<Partial> {
        match piece.fragment {
            Fragment::Full => Some(Partial { offset: at, fragments: 1, payload: piece.data.to_vec() }),
            Fragment::First => {
                self.partial = Some(Partial { offset: at, fragments: 1, payload: piece.data.to_vec() });
                None
            }
            Fragment::Middle | Fragment::Last => {
                let in_progress = self.partial.as_mut().expect("order checked above");
                in_progress.fragments += 1;
                in_progress.payload.extend_from_slice(piece.data);
                if piece.fragment == Fragment::Last {
                    self.partial.take()
                } else {
                    None
                }
            }
        }
    }
}


#[cfg(test)]
mod tests;
