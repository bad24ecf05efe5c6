//! The segments' drawing: the log's segment files at the playhead, each with its two deletion
//! gates, and the change-data-capture reader's confirmed position pinning files.

use walab_core::sim::tiny::{SegmentGates, TinyRun};
use walab_core::time::Nanos;
use walab_core::tiny_store::{FIRST_FILE_NUMBER, MEMTABLE_WRITES};

/// What a segment file is at an instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileStatus {
    NotCreated,
    /// Exists; at least one gate is closed.
    Kept,
    /// Both gates open: the store deletes it at once.
    Deleted,
}

impl FileStatus {
    pub fn class(self) -> &'static str {
        match self {
            FileStatus::NotCreated => "not-created",
            FileStatus::Kept => "kept",
            FileStatus::Deleted => "deleted",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentFile {
    pub name: String,
    pub first_seq: u64,
    pub last_seq: u64,
    pub status: FileStatus,
    /// Gate 1: the flushed file holding its records, once the durable manifest lists it.
    pub flushed_into: Option<String>,
    /// Gate 2: every reader has confirmed past its last record.
    pub readers_done: bool,
    /// Pinned by the reader alone (flushed, but the reader has not confirmed past it).
    pub pinned: bool,
    pub deleted_at: Option<Nanos>,
}

/// The segment files at `now`.
pub fn segment_files(run: &TinyRun, now: Nanos) -> Vec<SegmentFile> {
    let gates: Vec<SegmentGates> = run.gates_at(now);
    gates
        .iter()
        .map(|gate| {
            let index = (gate.segment - 1) as usize;
            let deleted_at = run.segment_deleted_at.get(index).copied().flatten().filter(|at| *at <= now);
            let status = if deleted_at.is_some() {
                FileStatus::Deleted
            } else if gate.exists {
                FileStatus::Kept
            } else {
                FileStatus::NotCreated
            };
            let last_seq = gate.segment * MEMTABLE_WRITES as u64;
            SegmentFile {
                name: format!("wal-{}", gate.segment),
                first_seq: last_seq + 1 - MEMTABLE_WRITES as u64,
                last_seq,
                status,
                flushed_into: gate.flushed.then(|| format!("F{}", FIRST_FILE_NUMBER + gate.segment - 1)),
                readers_done: gate.readers_done,
                pinned: gate.exists && gate.flushed && !gate.readers_done,
                deleted_at,
            }
        })
        .collect()
}

/// The files that exist and must stay.
pub fn kept(files: &[SegmentFile]) -> usize {
    files.iter().filter(|file| file.status == FileStatus::Kept).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files_at_end(query: &str) -> Vec<SegmentFile> {
        let model = crate::model::tiny::for_link(query);
        let (run, _) = model.full.as_ref().unwrap();
        segment_files(run, model.timeline().end)
    }

    #[test]
    fn a_reader_at_seq_10_keeps_four_segments_and_pins_the_flushed_ones() {
        let files = files_at_end("part=8&cdc=10");
        assert_eq!(kept(&files), 4);
        let status: Vec<FileStatus> = files.iter().map(|file| file.status).collect();
        assert_eq!(status[..2], [FileStatus::Deleted, FileStatus::Deleted]);
        assert!(files[2].pinned && files[2].flushed_into.as_deref() == Some("F9"), "{:?}", files[2]);
        let without = files_at_end("part=8&cdc=none");
        assert!(kept(&without) < 4);
    }

    #[test]
    fn before_any_flush_nothing_is_deleted() {
        let model = crate::model::tiny::for_link("part=8");
        let (run, _) = model.full.as_ref().unwrap();
        let files = segment_files(run, Nanos::from_millis(1));
        assert!(files.iter().all(|file| file.status != FileStatus::Deleted && file.flushed_into.is_none()));
        assert_eq!(files[0].status, FileStatus::Kept);
    }
}
