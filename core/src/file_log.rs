//! The file WAL's recovery decisions over its segment files, given what the scan found.
//!
//! The native file backend reads the segments from the device one at a time and feeds
//! each to the recovery scan for its format ([`crate::scan::TinyScanner`] or
//! [`crate::codec::leveldb::LogScanner`]); [`plan_recovery`] then decides, from the files'
//! sizes, where their last non-zero byte is and a summary of the records accepted in
//! each ([`SegmentFound`]: first and last seq, where the last one ends), what the log is
//! and what opening it must repair:
//!
//! - A scan that stopped on damage (a torn or corrupt record) in the last segment with
//!   bytes is a torn tail: nothing acknowledged can be in it (acknowledgement waits for
//!   the sync). The bytes from the last good record to the last non-zero byte are cut
//!   ([`TornTail`]), so that a record appended there later cannot be followed by a stale
//!   one that happens to line up. Damage with bytes in a *later* segment is corruption
//!   ([`Corruption`]): the log is refused.
//! - Appends resume in the segment where the scan stopped on damage, or else in the last
//!   segment with records, right after its last good record; in a new segment when that
//!   one has another size (written with another `--segment-bytes`), or when the format
//!   cannot resume mid-segment (LevelDB's writer starts each open in a fresh one).
//! - Segments after the resume point hold nothing acknowledged and are removed, except a
//!   full-size, all-zero segment right after it: a spare prepared before the crash, kept.
//!   An empty segment of the wrong size at the resume point (a crash during its
//!   zero-fill) is removed and made again.

use core::fmt;

use crate::scan::{ScanStop, StopReason};

/// One segment file as recovery read it, oldest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentFile {
    /// The segment's number (its file name).
    pub number: u64,
    /// The file's length.
    pub bytes: u64,
    /// Offset just past its last non-zero byte (0 for an all-zero file).
    pub dirty_end: u64,
}

/// A record the scan accepted: its segment (index into the files), and the bytes it
/// took. A LevelDB group's writes share one offset and length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FoundRecord {
    pub segment: usize,
    pub offset: u64,
    pub len: u64,
    pub seq: u64,
}

/// What the scan accepted in one segment file, summarized as the plan needs it: a
/// recovery adds each record as the scan hands it over and keeps none of them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SegmentFound {
    pub first_seq: Option<u64>,
    pub last_seq: Option<u64>,
    /// Offset just past its last accepted record (0 with none).
    pub end: u64,
    /// Record bytes (a LevelDB group counted once).
    pub bytes: u64,
    /// The last record's offset: the writes of one group share it.
    last_offset: Option<u64>,
}

impl SegmentFound {
    /// Adds a record the scan accepted in this segment (in log order).
    pub fn add(&mut self, offset: u64, len: u64, seq: u64) {
        if self.last_offset != Some(offset) {
            self.bytes += len;
        }
        self.last_offset = Some(offset);
        self.first_seq.get_or_insert(seq);
        self.last_seq = Some(seq);
        self.end = self.end.max(offset + len);
    }

    /// The summaries of `files` segment files holding `found` (in log order).
    pub fn summarize(files: usize, found: &[FoundRecord]) -> Vec<SegmentFound> {
        let mut summaries = vec![SegmentFound::default(); files];
        for record in found {
            summaries[record.segment].add(record.offset, record.len, record.seq);
        }
        summaries
    }
}

/// How the backend lays segments out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentLayout {
    /// The size every segment file is created at.
    pub file_bytes: u64,
    /// The format appends in a fresh segment after every open (LevelDB's).
    pub fresh_segment_on_open: bool,
}

/// Bytes to overwrite with zeros: a torn tail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TornTail {
    pub segment: u64,
    pub from: u64,
    pub to: u64,
    /// Where the scan stopped, and why.
    pub reason: StopReason,
}

/// Damage followed by records in a later segment: the log is corrupt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Corruption {
    pub segment: u64,
    pub offset: u64,
    pub reason: StopReason,
}

impl fmt::Display for Corruption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {}, and later segments hold records", stop_words(self.reason), self.offset)
    }
}

/// What opening the log finds and must do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecoveryPlan {
    /// Record bytes in the kept segments (a LevelDB group counted once).
    pub lsn: u64,
    /// The seq the next append gets.
    pub next_seq: u64,
    /// The segment appends go to, and the bytes already used in it.
    pub segment: u64,
    pub segment_bytes: u64,
    pub torn_tail: Option<TornTail>,
    /// Segments to remove (past the resume point), oldest first.
    pub remove: Vec<u64>,
    /// A spare prepared before the crash, kept as the next segment.
    pub spare: Option<u64>,
    /// Every kept segment with the seq of its last record, the append segment last.
    pub segments: Vec<(u64, Option<u64>)>,
}

/// Decides what the log is and what opening it repairs (see the module docs).
/// `found` holds one summary per file; `stop` is where the scan over `files` ended.
pub fn plan_recovery(
    files: &[SegmentFile],
    found: &[SegmentFound],
    stop: ScanStop,
    layout: SegmentLayout,
) -> Result<RecoveryPlan, Corruption> {
    assert_eq!(files.len(), found.len(), "one summary per segment file");
    let last_seq: Vec<Option<u64>> = found.iter().map(|segment| segment.last_seq).collect();
    let lsn = found.iter().map(|segment| segment.bytes).sum();
    let damaged = !stop.reason.is_clean() && !files.is_empty();
    if damaged && files[stop.segment + 1..].iter().any(|file| file.dirty_end > 0) {
        return Err(Corruption { segment: files[stop.segment].number, offset: stop.offset, reason: stop.reason });
    }
    let resume_index = if damaged { Some(stop.segment) } else { last_seq.iter().rposition(Option::is_some) };
    let mut remove_from = resume_index.map_or(0, |index| index + 1);
    let mut torn_tail = None;
    let (segment, segment_bytes) = match resume_index {
        None => (files.last().map_or(1, |last| last.number + 1), 0),
        Some(index) => {
            let file = files[index];
            let resume_offset = found[index].end;
            if file.dirty_end > resume_offset {
                torn_tail =
                    Some(TornTail { segment: file.number, from: resume_offset, to: file.dirty_end, reason: stop.reason });
            }
            let full_size = file.bytes == layout.file_bytes;
            if full_size && layout.fresh_segment_on_open && resume_offset > 0 {
                (file.number + 1, 0)
            } else if full_size {
                (file.number, resume_offset)
            } else if last_seq[index].is_some() {
                // Written with another segment size: kept, appends go to a new one.
                (file.number + 1, 0)
            } else {
                // Empty and of the wrong size (a crash during its zero-fill): made again.
                remove_from = index;
                (file.number, 0)
            }
        }
    };
    let spare = files
        .iter()
        .enumerate()
        .find(|(_, file)| file.number == segment + 1)
        .filter(|(index, file)| *index >= remove_from && file.bytes == layout.file_bytes && file.dirty_end == 0)
        .map(|(_, file)| file.number);
    let remove = files[remove_from.min(files.len())..]
        .iter()
        .map(|file| file.number)
        .filter(|&number| Some(number) != spare)
        .collect();
    let mut segments: Vec<(u64, Option<u64>)> =
        files[..remove_from.min(files.len())].iter().zip(&last_seq).map(|(file, &last)| (file.number, last)).collect();
    if segments.last().is_none_or(|(number, _)| *number != segment) {
        segments.push((segment, None));
    }
    let next_seq = last_seq.iter().rev().find_map(|&last| last).map_or(1, |seq| seq + 1);
    Ok(RecoveryPlan { lsn, next_seq, segment, segment_bytes, torn_tail, remove, spare, segments })
}

/// The scan's stop reason in words.
pub fn stop_words(reason: StopReason) -> &'static str {
    match reason {
        StopReason::End | StopReason::Zero => "end of log",
        StopReason::Short => "torn record (cut short)",
        StopReason::Checksum => "checksum mismatch",
        StopReason::BadLength => "bad record length",
        StopReason::BadFragment => "bad record type",
        StopReason::OldRecord => "record from an earlier use of the file",
    }
}

#[cfg(test)]
mod tests;
