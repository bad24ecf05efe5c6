//! The moments worth talking about in a run, and where a run ends.
//!
//! The player steps from mark to mark, and a run of the tiny store has about fifty of
//! them: every arrival, every sync's start and end. In front of a class an instructor
//! wants the few that change the story: a batch forming (its sync starts), a sync that
//! fails, the power cut, the scan's stop. Those are the *notable* marks, and the
//! presenter's `n` key jumps from one to the next. A model with no notion of its own
//! (the append's steps, REDO's) gets none, and `n` steps like the arrow key.
//!
//! [`run_end`] says where a view's run ends without a power cut: a cut must fall inside
//! it, so a cut past the end is refused with that range instead of drawing off the chart.

use walab_core::time::Nanos;
use walab_core::trace::{Event, Trace};

use super::trace_view::TraceSpans;
use super::{append, Model};

/// The notable instants of a model, sorted, without duplicates.
pub fn notable_marks(model: &Model) -> Vec<Nanos> {
    let mut marks = match model {
        Model::Tiny(tiny) => {
            let mut marks = tiny.spans().map(span_moments).unwrap_or_default();
            marks.extend(tiny.trace().map(failed_syncs).unwrap_or_default());
            if let Some(Ok(outcome)) = &tiny.cut {
                marks.retain(|mark| *mark <= outcome.at);
                marks.push(outcome.at);
                // A view of the recovery scan plays it after the cut: its stop is worth a word.
                let timeline = tiny.timeline();
                if timeline.end > outcome.at {
                    marks.push(timeline.end);
                }
            }
            marks
        }
        Model::Commit(commit) => match &commit.tiny {
            Ok(tiny) if commit.scenario == crate::url_state::Scenario::Tiny => span_moments(&tiny.spans),
            _ => Vec::new(),
        },
        Model::Dropped(trace) => span_moments(&trace.spans),
        _ => Vec::new(),
    };
    walab_core::sort::sort(&mut marks);
    marks.dedup();
    marks
}

/// A batch's sync starting, a failed sync ending, the power failing.
fn span_moments(spans: &TraceSpans) -> Vec<Nanos> {
    let mut marks: Vec<Nanos> = spans.batches.iter().map(|batch| batch.start).collect();
    marks.extend(spans.batches.iter().filter(|batch| !batch.ok).filter_map(|batch| batch.end));
    // The writers told "outcome unknown" when a sync fails.
    marks.extend(spans.writes.iter().filter_map(|write| write.failed));
    marks.extend(spans.power_cut);
    marks
}

/// Every instant a sync returned an error. A batch whose failed sync is retried spans
/// the failure and the retry, so its end is the retry's; the failure itself is the moment
/// the story turns on.
fn failed_syncs(trace: &Trace) -> Vec<Nanos> {
    trace.events.iter().filter(|event| matches!(event.event, Event::SyncEnd { ok: false, .. })).map(|event| event.at).collect()
}

/// Where a figure opens when its link names no moment: a moment with something to look
/// at, not an empty run at t = 0. Write 1's path opens at its first station, the journey on write 1 in the
/// page cache; the tiny store on its failed sync, else just before the power cut (B14's sync
/// running), or as its last write is told OK when the view asks; group commit as its
/// largest batch forms; the quorum as the log forks onto the replicas. `None`: the start.
pub fn opening(model: &Model) -> Option<Nanos> {
    match model {
        // Write 1's record has just been copied into the page cache: its units are dirty,
        // and nothing is on the media yet.
        Model::Journey(Ok(journey)) => journey.opening(),
        // Write 1 at its first station, the client: step 1 of the path.
        Model::Commit(model) if !model.write_path.is_empty() => Some(super::write_path::opening()),
        // As the last write is told OK, when every segment has been created and the first
        // ones have passed their gates.
        Model::Tiny(tiny) if tiny.shows.opens_on_last_ack => {
            tiny.full.as_ref().ok().and_then(|(_, spans)| spans.writes.iter().filter_map(|write| write.ack).max())
        }
        Model::Tiny(tiny) => {
            let trace = tiny.trace()?;
            let failed = failed_syncs(trace).into_iter().next();
            let end = tiny.full.as_ref().ok().map(|(_, spans)| spans.end)?;
            Some(failed.unwrap_or(walab_core::tiny_store::POWER_CUT).min(end))
        }
        Model::Quorum(quorum) => quorum.fork_at(),
        // The power cut has just torn P1's write-back: the page on disk is half old, half
        // new, and recovery is about to start from the redo point.
        Model::Redo(redo) if !redo.events.is_empty() => Some(Nanos(super::redo_quorum_budget::PAGE_STEP.0 * redo.recovery_from as u64)),
        // The remote WALs: batches held back behind a slow one, or the ring waiting.
        Model::Remote(remote) => remote.opening(),
        // A dropped recording opens in its busiest moment, the lanes zoomed there.
        Model::Dropped(trace) => trace.opening(),
        Model::Commit(commit) => match &commit.tiny {
            Ok(tiny) if commit.scenario == crate::url_state::Scenario::Tiny => {
                // The first of the largest batches, a moment after its sync started: the
                // queue has just become a batch and the next writers queue behind it.
                let largest = tiny.spans.batches.iter().map(|batch| batch.writes).max()?;
                let batch = tiny.spans.batches.iter().find(|batch| batch.writes == largest)?;
                let during = batch.end.map_or(batch.start, |end| Nanos(batch.start.0 + (end.0 - batch.start.0) / 2));
                Some(during)
            }
            Ok(_) => None,
            Err(_) => None,
        }
        .or_else(|| commit.steady.as_ref().ok().map(|steady| Nanos(steady.end.0 / 2))),
        _ => None,
    }
}

/// Where the view's run ends when the power stays on; `None` for a model without a
/// timeline of instants a cut could fall in.
pub fn run_end(model: &Model) -> Option<Nanos> {
    match model {
        Model::Tiny(tiny) => tiny.full.as_ref().ok().map(|(_, spans)| spans.end),
        Model::Append => Some(append::timeline().end),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tiny_store_has_a_moment_per_batch_and_one_for_the_cut() {
        let model = Model::Tiny(crate::model::tiny::for_link("part=6"));
        let Model::Tiny(tiny) = &model else { unreachable!() };
        let batches = tiny.spans().unwrap().batches.len();
        let marks = notable_marks(&model);
        assert!(marks.len() >= 14 && marks.len() <= batches, "{} notable of {batches} batches", marks.len());
        assert!(marks.len() < tiny.timeline().marks.len() / 2, "far fewer than the steps");
        let cut = Nanos(13_500_000);
        let model = Model::Tiny(crate::model::tiny::for_link("part=6&cut=13.5"));
        let marks = notable_marks(&model);
        assert_eq!(marks.last(), Some(&cut), "the cut is the last moment of a cut run");
    }

    #[test]
    fn a_failed_sync_is_a_moment() {
        let model = Model::Tiny(crate::model::tiny::for_link("part=3&fault=e1"));
        let Model::Tiny(tiny) = &model else { unreachable!() };
        let failed = tiny.spans().unwrap().writes.iter().find_map(|write| write.failed).expect("B11's writers are failed");
        assert!(notable_marks(&model).contains(&failed));
    }

    #[test]
    fn a_failed_sync_that_is_retried_is_a_moment() {
        // E1 the wrong way: B11's fdatasync fails at 11.00 ms and the retry ends at 12.00.
        let model = Model::Tiny(crate::model::tiny::for_link("part=3&fault=e1&handling=wrong"));
        let marks = notable_marks(&model);
        for ms in [10, 11, 12] {
            assert!(marks.contains(&Nanos::from_millis(ms)), "{ms} ms in {marks:?}");
        }
    }

    #[test]
    fn the_tiny_store_runs_about_fourteen_milliseconds() {
        let model = Model::Tiny(crate::model::tiny::for_link("part=6"));
        let end = run_end(&model).unwrap();
        assert!(end > Nanos::from_millis(13) && end < Nanos::from_millis(20), "{end:?}");
        assert_eq!(run_end(&Model::Append), Some(Nanos::from_millis(7)));
    }
}
