//! Recovery of the tiny store from an image of its media (or of its page cache): the
//! manifest, the flushed tables it lists, the log scanned from the flushed point; and a
//! run's post-crash states, what each recovers and what acknowledged write it loses.

use super::*;
use crate::trace::TraceScanStop;

/// Where recovery's log scan stopped, with the segment named.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct RecoveryStop {
    pub reason: StopReason,
    /// `wal-6`; `None` when no segment was left to scan.
    pub segment: Option<String>,
    pub offset: u64,
}

/// What recovery read back from an image of the media (or of the page cache).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recovery {
    pub manifest: Vec<ManifestEdit>,
    pub flushed_through: u64,
    /// Seqs found in the flushed files the manifest lists.
    pub table_seqs: Vec<u64>,
    /// The log segments that still exist, oldest first.
    pub segments: Vec<String>,
    pub scan: TinyScan,
    /// Every write id recovered (from the flushed files or the log), sorted.
    pub recovered: Vec<u64>,
    pub stop: RecoveryStop,
}

impl Recovery {
    /// The seqs the log scan accepted in one segment (flushed or not).
    pub fn scanned_in(&self, segment: &str) -> Vec<u64> {
        let Some(index) = self.segments.iter().position(|name| name == segment) else {
            return Vec::new();
        };
        self.scan.records.iter().filter(|record| record.segment == index).map(|record| record.record.seq).collect()
    }
}

/// Recovers the tiny store from an image: reads the manifest, the flushed files it lists,
/// then scans the log segments that remain, skipping what is already flushed.
pub fn recover(image: &Image) -> Recovery {
    let mut manifest = Vec::new();
    if let Some(bytes) = image.file("MANIFEST") {
        // Bounded by the manifest's size: one record per 16 bytes.
        for record in bytes.chunks(MANIFEST_RECORD_BYTES) {
            match ManifestEdit::decode(record) {
                Some(edit) => manifest.push(edit),
                None => break,
            }
        }
    }
    let mut table_seqs = Vec::new();
    let mut flushed_through = 0;
    for edit in &manifest {
        if let Some(bytes) = image.file(&format!("F{}", edit.table)) {
            let scan = scan_tiny(&[bytes], 0);
            table_seqs.extend(scan.records.iter().map(|record| record.record.seq));
            flushed_through = flushed_through.max(edit.flushed_through);
        }
    }
    let mut segments = Vec::new();
    let mut segment_bytes: Vec<&[u8]> = Vec::new();
    for (name, bytes) in &image.files {
        if let (true, Some(bytes)) = (name.starts_with("wal-"), bytes) {
            segments.push(name.clone());
            segment_bytes.push(bytes);
        }
    }
    let scan = scan_tiny(&segment_bytes, flushed_through);
    let mut recovered: Vec<u64> = table_seqs.clone();
    recovered.extend(scan.applied().map(|record| record.record.seq));
    crate::sort::sort(&mut recovered);
    recovered.dedup();
    crate::sort::sort(&mut table_seqs);
    let stop = RecoveryStop {
        reason: scan.stop.reason,
        segment: segments.get(scan.stop.segment).cloned(),
        offset: scan.stop.offset,
    };
    Recovery { manifest, flushed_through, table_seqs, segments, scan, recovered, stop }
}

/// One legal state of the media after the power cut, and what it means.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CrashState {
    /// The uncertain units that reached the media: (file name, unit).
    pub kept_units: Vec<(String, u32)>,
    pub recovery: Recovery,
    /// Acknowledged before the cut.
    pub acknowledged: Vec<u64>,
    /// Acknowledged and recovered.
    pub survived: Vec<u64>,
    /// Acknowledged and not recovered: a broken promise.
    pub lost_acknowledged: Vec<u64>,
}

impl TinyRun {
    /// Writes acknowledged before the run stopped.
    pub fn acknowledged(&self) -> Vec<u64> {
        ids_where(&self.acked_at, |at| at.is_some())
    }

    /// Writes failed (told "unknown").
    pub fn failed(&self) -> Vec<u64> {
        ids_where(&self.failed_at, |at| at.is_some())
    }

    fn crash_state(&self, kept: Vec<UnitRef>, image: &Image) -> CrashState {
        let recovery = recover(image);
        let acknowledged = self.acknowledged();
        let survived: Vec<u64> = acknowledged.iter().copied().filter(|id| recovery.recovered.contains(id)).collect();
        let lost_acknowledged = acknowledged.iter().copied().filter(|id| !recovery.recovered.contains(id)).collect();
        let kept_units = kept
            .iter()
            .map(|unit| (self.device.name(FileId(unit.file)).to_string(), unit.unit))
            .collect();
        CrashState { kept_units, recovery, acknowledged, survived, lost_acknowledged }
    }

    /// Every legal post-crash state (each subset of the running syncs' units), or `None`
    /// if there are too many to list.
    pub fn post_crash_states(&self) -> Option<Vec<CrashState>> {
        let states = self.device.enumerate_power_cuts()?;
        Some(states.into_iter().map(|(kept, image)| self.crash_state(kept, &image)).collect())
    }

    /// One post-crash state, drawn with a seed.
    pub fn sample_post_crash(&self, seed: u64) -> CrashState {
        let (kept, image) = self.device.sample_power_cut(seed);
        self.crash_state(kept, &image)
    }

    /// Recovery by a process that restarts without a reboot and reads through the page
    /// cache (Part 3's "go deeper").
    pub fn recover_through_page_cache(&self) -> Recovery {
        recover(&self.device.cache_image())
    }

    /// The deletion gates of every segment at instant `t` (Part 8), as the log session
    /// judges them ([`Gates::of`]), with each segment's last write the MemTable's.
    pub fn gates_at(&self, t: Nanos) -> Vec<SegmentGates> {
        let flushed_through = self
            .manifest_durable
            .iter()
            .filter(|(at, _)| *at <= t)
            .map(|(_, edit)| edit.flushed_through)
            .max()
            .unwrap_or(0);
        (1..=SEGMENTS)
            .map(|segment| {
                let last_seq = segment * MEMTABLE_WRITES as u64;
                let index = (segment - 1) as usize;
                let created = self.segment_created_at[index].is_some_and(|at| at <= t);
                let deleted = self.segment_deleted_at[index].is_some_and(|at| at <= t);
                let readers = self.setup.readers.iter().map(|reader| reader.confirmed_seq);
                let gates = Gates::of(Some(last_seq), flushed_through, readers);
                SegmentGates { segment, flushed: gates.consumer, readers_done: gates.readers, exists: created && !deleted }
            })
            .collect()
    }

    /// When write `id` was acknowledged.
    pub fn ack_of(&self, id: u64) -> Option<Nanos> {
        self.acked_at.get((id - 1) as usize).copied().flatten()
    }
}

fn ids_where(per_write: &[Option<Nanos>], keep: impl Fn(&Option<Nanos>) -> bool) -> Vec<u64> {
    per_write.iter().enumerate().filter(|(_, at)| keep(at)).map(|(index, _)| index as u64 + 1).collect()
}

/// The recovery's stop as the trace records it.
pub fn trace_stop(trace: &Trace, stop: &RecoveryStop) -> TraceScanStop {
    TraceScanStop {
        reason: stop.reason.name().to_string(),
        file: stop.segment.as_deref().and_then(|name| trace.file_index(name)),
        offset: stop.offset,
    }
}

/// Appends a crash state's recovery to the run's trace, at the power cut.
pub fn record_recovery(run: &mut TinyRun, state: &CrashState) {
    let stop = trace_stop(&run.trace, &state.recovery.stop);
    let at = run.ended_at;
    run.trace.push(at, Event::Recovery {
        acknowledged: state.acknowledged.clone(),
        recovered: state.recovery.recovered.clone(),
        lost_acknowledged: state.lost_acknowledged.clone(),
        stop,
    });
}
