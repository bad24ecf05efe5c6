//! The failed sync's drawing: the failed sync inside the machine. The failing batch's segment unit
//! by unit in the page cache and on the media (pages marked clean though never written),
//! the flushed file F11 and the manifest edit that would make it count, and, after a
//! power cut, what a process restarting through the page cache reads against what the
//! disk holds. E1 is drawn on both paths at once: fail-stop and retry-and-carry-on.

use walab_core::sim::tiny::{self, TinyRun, TinySetup};
use walab_core::time::Nanos;
use walab_core::trace::{Event, StateAt, Trace, UnitState};

/// One unit of a segment: what the page cache holds and what the media holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheUnit {
    /// Nothing written into it yet.
    Empty,
    /// New bytes in the page cache, not yet handed to a sync.
    Dirty,
    /// In a running sync.
    Syncing,
    /// Written back: the cache and the media agree.
    Clean,
    /// The failed write-back marked it clean: the cache has the bytes, the media does not.
    MarkedClean,
}

impl CacheUnit {
    pub fn class(self) -> &'static str {
        match self {
            CacheUnit::Empty => "empty",
            CacheUnit::Dirty => "dirty",
            CacheUnit::Syncing => "syncing",
            CacheUnit::Clean => "clean",
            CacheUnit::MarkedClean => "marked-clean",
        }
    }

    pub fn words(self) -> &'static str {
        match self {
            CacheUnit::Empty => "empty",
            CacheUnit::Dirty => "dirty",
            CacheUnit::Syncing => "being synced",
            CacheUnit::Clean => "clean",
            CacheUnit::MarkedClean => "marked clean, NOT on the media",
        }
    }

    /// Whether the media holds the unit's new bytes.
    pub fn on_media(self) -> bool {
        self == CacheUnit::Clean
    }

    #[cfg(test)]
    pub const ALL: [CacheUnit; 5] = [CacheUnit::Empty, CacheUnit::Dirty, CacheUnit::Syncing, CacheUnit::Clean, CacheUnit::MarkedClean];
}

/// Where the flushed file stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlushStage {
    NotStarted,
    Writing,
    Syncing,
    Failed,
    /// Synced; its manifest edit written but not yet durable.
    EditWritten,
    /// The edit is durable: the file counts and the segment may go.
    Counts,
}

impl FlushStage {
    pub fn class(self) -> &'static str {
        match self {
            FlushStage::NotStarted => "not-started",
            FlushStage::Writing => "writing",
            FlushStage::Syncing => "syncing",
            FlushStage::Failed => "failed",
            FlushStage::EditWritten => "edit-written",
            FlushStage::Counts => "counts",
        }
    }
}

/// The writers a path's panel has room for (one row of boxes).
pub const WRITERS_DRAWN_MAX: usize = 4;

/// A write of the failing batch and what its writer was told.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchWrite {
    pub id: u64,
    pub told: &'static str,
}

/// One path (one handling of the error) at the playhead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathAt {
    pub name: &'static str,
    pub segment: String,
    pub units: Vec<CacheUnit>,
    pub batch: Option<u64>,
    pub batch_writes: Vec<BatchWrite>,
    /// The failing batch's sync: "running", "failed", "retried", "retry returned OK".
    pub sync_story: String,
    pub flush_name: String,
    pub flush: FlushStage,
    /// Manifest edits durable so far.
    pub edits_durable: Vec<u64>,
    pub segment_exists: bool,
    /// After a cut: the segment's writes recovered reading through the page cache, and
    /// from the media.
    pub reads_cache: Option<Vec<u64>>,
    pub reads_disk: Option<Vec<u64>>,
}

/// The failing batch: its id, segment and writes (from the trace).
fn failing_batch(trace: &Trace, batch: u64) -> Option<(u64, u64, u64)> {
    trace.events.iter().find_map(|event| match &event.event {
        Event::BatchFormed { batch: each, segment, first_write, writes, .. } if *each == batch => Some((*segment, *first_write, *writes)),
        _ => None,
    })
}

fn unit_at(state: &StateAt, file: usize, unit: usize, written: bool) -> CacheUnit {
    match state.files.get(file).and_then(|file| file.units.get(unit)) {
        Some(UnitState::Dirty) => CacheUnit::Dirty,
        Some(UnitState::Syncing) => CacheUnit::Syncing,
        Some(UnitState::Dropped) => CacheUnit::MarkedClean,
        _ if written => CacheUnit::Clean,
        _ => CacheUnit::Empty,
    }
}

/// One path at `now`. `segment` is the log segment drawn (the failing batch's, or the
/// one the flushed file would let go); `table` the flushed file's number.
pub fn path_at(name: &'static str, run: &TinyRun, now: Nanos, batch: Option<u64>, segment: u64, table: u64) -> PathAt {
    let trace = &run.trace;
    let state = trace.state_at(now);
    let through = trace.events_through(now);
    let segment_name = format!("wal-{segment}");
    let file = trace.file_index(&segment_name).map(|index| index as usize);
    let extent = trace.events[..through]
        .iter()
        .filter_map(|event| match &event.event {
            Event::BatchFormed { segment: each, offset, bytes, .. } if *each == segment => Some(offset + bytes),
            _ => None,
        })
        .max()
        .unwrap_or(0) as usize;
    let unit_bytes = run.device.unit_bytes().max(1);
    let units = file
        .map(|file| (0..tiny::SEGMENT_BYTES.div_ceil(unit_bytes)).map(|unit| unit_at(&state, file, unit, unit * unit_bytes < extent)).collect())
        .unwrap_or_default();
    let batch_info = batch.and_then(|batch| failing_batch(trace, batch));
    // The batch's writes, then the writes queued behind it while they wait or once the
    // failure reached them too (fail-stop tells every waiter), as the caption counts them.
    let told_of = |id: u64| match state.writes.get((id - 1) as usize) {
        Some(walab_core::trace::WriteState::Acked) => "OK",
        Some(walab_core::trace::WriteState::Failed) => "\"unknown\"",
        Some(walab_core::trace::WriteState::InBatch { .. }) => "syncing",
        Some(walab_core::trace::WriteState::Queued) => "queued",
        Some(walab_core::trace::WriteState::Refused) => "refused",
        _ => "not yet",
    };
    let batch_writes = batch_info
        .map(|(_, first, count)| {
            let behind = (first + count..).take_while(|id| matches!(told_of(*id), "queued" | "\"unknown\"")).take(WRITERS_DRAWN_MAX.saturating_sub(count as usize)).count() as u64;
            (first..first + count + behind).map(|id| BatchWrite { id, told: told_of(id) }).collect()
        })
        .unwrap_or_default();
    // The failing batch's syncs, in order: (ok, ended).
    let mut sync_ids: Vec<u64> = Vec::new();
    let mut story: Vec<String> = Vec::new();
    for event in &trace.events[..through] {
        match &event.event {
            Event::SyncStart { sync, batch: Some(each), .. } if Some(*each) == batch => {
                sync_ids.push(*sync);
                story.push(if sync_ids.len() == 1 { "fdatasync running".into() } else { "retried fdatasync running".into() });
            }
            Event::SyncEnd { sync, ok, .. } if sync_ids.contains(sync) => {
                story.push(match (*ok, sync_ids.len()) {
                    (false, _) => "fdatasync returned EIO".into(),
                    (true, 1) => "fdatasync returned OK".into(),
                    (true, _) => "the retry returned OK, having written nothing".into(),
                });
            }
            _ => {}
        }
    }
    let table_file = trace.file_index(&format!("F{table}"));
    let mut flush = FlushStage::NotStarted;
    let mut edits_durable = Vec::new();
    let mut table_edit = None;
    for event in &trace.events[..through] {
        match &event.event {
            Event::FlushStart { file, .. } if Some(*file) == table_file => flush = FlushStage::Writing,
            Event::SyncStart { file, .. } if Some(*file) == table_file => flush = FlushStage::Syncing,
            Event::SyncEnd { file, ok: false, .. } if Some(*file) == table_file => flush = FlushStage::Failed,
            Event::ManifestEdit { edit, table: file, .. } if Some(*file) == table_file => {
                flush = FlushStage::EditWritten;
                table_edit = Some(*edit);
            }
            Event::ManifestDurable { edit } => {
                edits_durable.push(*edit);
                if table_edit == Some(*edit) {
                    flush = FlushStage::Counts;
                }
            }
            _ => {}
        }
    }
    let segment_exists = file.is_some_and(|file| state.files.get(file).is_some_and(|at| at.exists));
    PathAt {
        name,
        segment: segment_name,
        units,
        batch,
        batch_writes,
        sync_story: story.last().cloned().unwrap_or_else(|| "not started".into()),
        flush_name: format!("F{table}"),
        flush,
        edits_durable,
        segment_exists,
        reads_cache: None,
        reads_disk: None,
    }
}

/// The same setup with the other handling of a failed log sync.
pub fn other_path(setup: &TinySetup) -> Option<TinySetup> {
    let mut other = setup.clone();
    let fault = other.log_sync_fault.as_mut()?;
    fault.handling = match fault.handling {
        tiny::SyncErrorHandling::FailStop => tiny::SyncErrorHandling::RetryAndCarryOn,
        tiny::SyncErrorHandling::RetryAndCarryOn => tiny::SyncErrorHandling::FailStop,
    };
    Some(other)
}

/// The writes of segment `segment` among `ids`.
pub fn of_segment(ids: &[u64], segment: u64) -> Vec<u64> {
    ids.iter().copied().filter(|id| (id - 1) / 4 + 1 == segment).collect()
}

/// Both paths (E1) or the one run (E2, no fault) at the playhead, right path first.
pub fn paths_at(model: &super::tiny::TinyModel, params: &crate::url_state::LabParams, now: Nanos, revealed: bool) -> Vec<PathAt> {
    use crate::url_state::{Fault, Handling};
    let Ok((full, _)) = &model.full else { return Vec::new() };
    let (batch, segment) = match params.fault {
        Fault::LogSync => {
            let segment = failing_batch(&full.trace, params.eio_batch).map_or(5, |(segment, _, _)| segment);
            (Some(params.eio_batch), segment)
        }
        Fault::FlushSync | Fault::None => (None, 5),
    };
    let table = segment + walab_core::tiny_store::FIRST_FILE_NUMBER - 1;
    let cut = model.cut.as_ref().and_then(|cut| cut.as_ref().ok());
    let t = cut.map_or(now, |outcome| now.min(outcome.at));
    let shown = |at: Nanos| revealed && now >= at;
    let this_name = match (params.fault, params.handling) {
        (Fault::LogSync, Handling::Right) => "right",
        (Fault::LogSync, Handling::Wrong) => "wrong",
        (Fault::FlushSync, _) => "e2",
        (Fault::None, _) => "no-fault",
    };
    let mut this = path_at(this_name, cut.map_or(full, |outcome| &outcome.run), t, batch, segment, table);
    if let Some(outcome) = cut.filter(|outcome| shown(outcome.at)) {
        this.reads_disk = Some(of_segment(&outcome.crash.recovery.recovered, segment));
        this.reads_cache = model.through_page_cache.as_ref().map(|ids| of_segment(ids, segment));
    }
    let mut paths = vec![this];
    if let Some(Ok(other)) = &model.other_path {
        let other_name = if this_name == "right" { "wrong" } else { "right" };
        let mut path = path_at(other_name, other.cut.as_ref().map_or(&other.full, |(run, _, _)| run), t, batch, segment, table);
        if let (Some((_, disk, cache)), Some(outcome)) = (&other.cut, cut.filter(|outcome| shown(outcome.at))) {
            let _ = outcome;
            path.reads_disk = Some(of_segment(disk, segment));
            path.reads_cache = Some(of_segment(cache, segment));
        }
        paths.push(path);
    }
    walab_core::sort::sort_by_key(&mut paths, |path| path.name != "right");
    paths
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::tiny::setup_for;
    use crate::url_state::parse_query;

    #[test]
    fn e1_wrong_path_marks_b11_clean_acks_it_and_the_page_cache_lies() {
        let params = parse_query("part=3&fault=e1&handling=wrong&cut=12.5").0;
        let model = crate::model::tiny::for_link("part=3&fault=e1&handling=wrong&cut=12.5");
        let outcome = model.cut.as_ref().unwrap().as_ref().unwrap();
        let (segment, first, count) = failing_batch(&outcome.run.trace, 11).unwrap();
        assert_eq!((segment, first, count), (5, 18, 3), "B11 carries writes 18-20 into wal-5");
        let wrong = path_at("wrong", &outcome.run, outcome.at, Some(11), segment, 11);
        assert!(wrong.units.contains(&CacheUnit::MarkedClean), "{:?}", wrong.units);
        assert!(wrong.batch_writes.iter().all(|write| write.told == "OK"), "{:?}", wrong.batch_writes);
        let cache = of_segment(model.through_page_cache.as_ref().unwrap(), segment);
        let disk = of_segment(&outcome.crash.recovery.recovered, segment);
        assert!(cache.len() > disk.len());
        let right_setup = other_path(&setup_for(&params, params.policy)).unwrap();
        let right_run = tiny::run(&right_setup.with_power_cut(outcome.at)).unwrap();
        let right = path_at("right", &right_run, outcome.at, Some(11), segment, 11);
        assert!(right.batch_writes.iter().all(|write| write.told == "\"unknown\""), "{:?}", right.batch_writes);
        assert_eq!(right.sync_story, "fdatasync returned EIO");
        assert_eq!(wrong.sync_story, "the retry returned OK, having written nothing");
    }

    #[test]
    fn e1_is_drawn_on_both_paths_and_the_reads_wait_for_the_reveal() {
        let params = parse_query("part=3&fault=e1&handling=wrong&cut=12.5").0;
        let model = crate::model::tiny::for_link("part=3&fault=e1&handling=wrong&cut=12.5");
        let at = Nanos::from_micros(12_500);
        let paths = paths_at(&model, &params, at, false);
        assert_eq!(paths.iter().map(|path| path.name).collect::<Vec<_>>(), ["right", "wrong"]);
        assert!(paths.iter().all(|path| path.reads_cache.is_none()));
        let paths = paths_at(&model, &params, at, true);
        assert_eq!(paths[1].reads_cache.as_deref(), Some(&[17, 18, 19, 20][..]));
        assert_eq!(paths[1].reads_disk.as_deref(), Some(&[17][..]));
        assert_eq!(paths[1].flush, FlushStage::Syncing, "F11 races the power");
    }

    #[test]
    fn e2_keeps_wal_5_and_writes_no_edit_9() {
        let model = crate::model::tiny::for_link("part=3&fault=e2");
        let (run, _) = model.full.as_ref().unwrap();
        let path = path_at("e2", run, run.ended_at, None, 5, 11);
        assert_eq!(path.flush, FlushStage::Failed);
        assert!(!path.edits_durable.contains(&9), "{:?}", path.edits_durable);
        assert!(path.segment_exists);
    }
}

/// The other handling's runs (E1 only): the whole run, and the cut run with what its
/// recovery found on the media and through the page cache.
#[derive(Debug)]
pub struct OtherPath {
    pub full: TinyRun,
    pub cut: Option<(TinyRun, Vec<u64>, Vec<u64>)>,
}

/// The cuts that lose acknowledged writes on this run, found by the core: a cut between
/// two of the run's events (after the failed sync) is tried at their midpoint, sampled with
/// `seed`; the first stretch of such cuts that loses writes told OK, between the events
/// `after` and `before`, and the writes it loses.
#[derive(Clone, Debug, PartialEq)]
pub struct LossWindow {
    pub after: Nanos,
    pub before: Nanos,
    pub lost: Vec<u64>,
}

impl LossWindow {
    /// The cut to suggest: the middle of the stretch, on a tenth of a millisecond.
    pub fn suggested(&self) -> Nanos {
        let middle = (self.after.0 + self.before.0) / 2;
        let rounded = (middle + 50_000) / 100_000 * 100_000;
        Nanos(if rounded > self.after.0 && rounded < self.before.0 { rounded } else { middle })
    }
}

pub fn loss_window(setup: &TinySetup, full: &TinyRun, seed: u64) -> Option<LossWindow> {
    let spans = super::trace_view::TraceSpans::from_trace(&full.trace);
    let failed_at = spans.batches.iter().filter(|batch| !batch.ok).filter_map(|batch| batch.end).min()?;
    let mut marks: Vec<Nanos> = spans.marks().into_iter().filter(|mark| *mark >= failed_at).collect();
    walab_core::sort::sort(&mut marks);
    marks.dedup();
    let mut window: Option<LossWindow> = None;
    for pair in marks.windows(2) {
        let at = Nanos((pair[0].0 + pair[1].0) / 2);
        let lost = tiny::run(&setup.clone().with_power_cut(at)).ok()?.sample_post_crash(seed).lost_acknowledged;
        match (&mut window, lost.is_empty()) {
            (None, false) => window = Some(LossWindow { after: pair[0], before: pair[1], lost }),
            (Some(window), false) => window.before = pair[1],
            (Some(_), true) => break,
            (None, true) => {}
        }
    }
    window
}

pub fn other_path_runs(setup: &TinySetup, cut: Option<Nanos>, seed: u64) -> Option<Result<OtherPath, String>> {
    let other = other_path(setup)?;
    Some((|| {
        let full = tiny::run(&other).map_err(|error| error.to_string())?;
        let cut = match cut {
            Some(at) => {
                let run = tiny::run(&other.clone().with_power_cut(at)).map_err(|error| error.to_string())?;
                let disk = run.sample_post_crash(seed).recovery.recovered;
                let cache = run.recover_through_page_cache().recovered;
                Some((run, disk, cache))
            }
            None => None,
        };
        Ok(OtherPath { full, cut })
    })())
}
