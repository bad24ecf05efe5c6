//! The page engine's redo, the quorum, and the AWS budget, each
//! computed by the core's models for the current parameters.

use walab_core::budget::{self, Budget, BudgetInput};
use walab_core::pages::branch_b::{self, BranchB, CutPoint};
use walab_core::pages::engine::{PageEvent, PowerBudget};
use walab_core::pages::sqlite_wal::{self, WalEvent};
use walab_core::pages::page::PageGeometry;
use walab_core::quorum::{self, BranchR, QuorumSetup, SurvivalRow, WriteBudget};
use walab_core::time::Nanos;

use super::trace_view::TraceSpans;
use super::Timeline;
use crate::url_state::LabParams;

/// Display time of one page event when the player walks the run and its recovery.
pub const PAGE_STEP: Nanos = Nanos::from_millis(1);
/// Branch B's tiny pages: 64 bytes of 32-byte sectors (as `walab sim redo` defaults).
pub const PAGE_BYTES: usize = 64;
pub const SECTOR_BYTES: usize = 32;


#[derive(Debug)]
pub struct RedoModel {
    pub branch: Result<BranchB, String>,
    /// SQLite's WAL mode on the same writes: the run to the cut, then its recovery.
    pub sqlite: Result<Vec<WalEvent>, String>,
    /// The run's events, then recovery's, in order.
    pub events: Vec<PageEvent>,
    /// Index of the first recovery event in `events`.
    pub recovery_from: usize,
}

impl RedoModel {
    pub fn build(params: &LabParams) -> RedoModel {
        let branch = PageGeometry::new(PAGE_BYTES, SECTOR_BYTES)
            .map_err(|error| error.to_string())
            .and_then(|geometry| {
                branch_b::run(geometry, params.protection, CutPoint::PAGE).map_err(|error| error.to_string())
            });
        let (events, recovery_from) = match &branch {
            Ok(branch) => {
                let mut events = branch.crash.events.clone();
                let from = events.len();
                events.extend(branch.recovery.events.iter().cloned());
                (events, from)
            }
            Err(_) => (Vec::new(), 0),
        };
        let sqlite = sqlite_wal::crash(PageGeometry::TINY, branch_b::LAST_WRITE, None).map_err(|error| error.to_string()).map(|mut crash| {
            let (recovery, _) = sqlite_wal::recover(&mut crash.media, &mut PowerBudget::unlimited());
            crash.events.extend(recovery);
            crash.events
        });
        RedoModel { branch, sqlite, events, recovery_from }
    }

    /// One caption per step: "Step 3 of 20: ...".
    #[cfg(test)]
    pub fn captions(&self) -> Vec<String> {
        (0..self.events.len()).map(|index| self.caption(index)).collect()
    }

    /// The caption of step `index` (from 0).
    pub fn caption(&self, index: usize) -> String {
        let phase = if index < self.recovery_from { "the run" } else { "recovery" };
        match self.events.get(index) {
            Some(event) => format!("Step {} of {} ({phase}): {}.{}", index + 1, self.events.len(), describe_page_event(event),
                if index + 1 == self.events.len() { self.lost_words() } else { String::new() }),
            None => String::new(),
        }
    }

    /// What recovery could not give back, said at its last step: each page it left unlike
    /// the page before the cut, with what that page held then and holds now.
    fn lost_words(&self) -> String {
        let Ok(branch) = &self.branch else { return String::new() };
        branch.crash.expected.iter().filter_map(|(page_no, before)| {
            let after = match branch.pages_after.get(page_no) {
                Some(Ok(after)) if after == before => return None,
                Some(Ok(after)) => after.describe_entries(),
                _ => "nothing readable".to_string(),
            };
            Some(format!(" P{} is lost: before the cut it held {}; now it holds only {after}. Its torn copy could not be read, and the log since the redo point does not hold the rest.",
                page_no.0, before.describe_entries()))
        }).collect()
    }

    /// The caption at the playhead.
    pub fn caption_now(&self, now: Nanos) -> String {
        match self.events_done(now).checked_sub(1) {
            Some(index) => self.caption(index),
            None => "Before the first write: both pages are empty, in memory and on the data file. Step to begin.".to_string(),
        }
    }

    pub fn timeline(&self) -> Timeline {
        let marks: Vec<Nanos> = (1..=self.events.len() as u64).map(|step| Nanos(PAGE_STEP.0 * step)).collect();
        Timeline { end: marks.last().copied().unwrap_or(Nanos::ZERO), marks }
    }

    /// How many events have happened at the playhead.
    pub fn events_done(&self, now: Nanos) -> usize {
        ((now.0 / PAGE_STEP.0) as usize).min(self.events.len())
    }
}

/// One line of the page log, in words.
pub fn describe_page_event(event: &PageEvent) -> String {
    match event {
        PageEvent::Write { lsn, page_no, op, key, value, image_bytes, page_lsn, entries_after, .. } => format!(
            "write {lsn}: {} {key}{} on P{} (pageLSN {page_lsn}){}: {entries_after}",
            match op {
                walab_core::codec::Op::Put => "put",
                walab_core::codec::Op::Del => "del",
            },
            if value.is_empty() { String::new() } else { format!(" {value}") },
            page_no.0,
            if *image_bytes > 0 { ", with a full-page image" } else { "" }
        ),
        PageEvent::DoublewriteWrite { page_no, slot, sectors_written, sectors_total, .. } => {
            format!("P{} to doublewrite slot {slot}: {sectors_written} of {sectors_total} sectors", page_no.0)
        }
        PageEvent::PageWrite { page_no, page_lsn, sectors_written, sectors_total } => format!(
            "write-back of P{} (pageLSN {page_lsn}): {sectors_written} of {sectors_total} sectors{}",
            page_no.0,
            if sectors_written < sectors_total { ": TORN" } else { "" }
        ),
        PageEvent::Checkpoint { redo_lsn } => format!("checkpoint: redo will start at LSN {redo_lsn}"),
        PageEvent::PowerCut => "the power fails".to_string(),
        PageEvent::RecoveryStart { redo_lsn, records } => format!("recovery starts at LSN {redo_lsn}: {} to replay", crate::format::count(*records, "record")),
        PageEvent::DoublewriteRestore { page_no, slot, .. } => format!("P{} is torn: copied back from doublewrite slot {slot}", page_no.0),
        PageEvent::Redo(step) => format!(
            "REDO record {} on P{}: the page is {}; REDO {} → pageLSN {}: {}",
            step.lsn,
            step.page_no.0,
            super::pages_view::read_words(step.read),
            super::pages_view::action_words(step.action),
            step.page_lsn_after,
            step.entries_after
        ),
        PageEvent::Damaged { page_no } => format!("P{} is damaged: nothing could restore it", page_no.0),
        PageEvent::RecoveryDone { redo_lsn } => format!("recovery done: redo point now {redo_lsn}"),
    }
}

#[derive(Debug)]
pub struct QuorumModel {
    pub setup: QuorumSetup,
    pub branch: Result<BranchR, String>,
    pub spans: Option<TraceSpans>,
    pub write_23: Option<WriteBudget>,
    pub survival: Vec<SurvivalRow>,
    /// The trace's file names (for the lanes' labels).
    pub files: Vec<String>,
    /// The player's marks (sorted, without repeats) and a caption for each.
    pub captions: (Vec<Nanos>, Vec<String>),
}

/// Branch R forks after this write.
pub const FORK_AFTER_WRITE: u64 = 20;

impl QuorumModel {
    pub fn build(params: &LabParams) -> QuorumModel {
        let mut setup = QuorumSetup { w: usize::from(params.quorum_w), ..QuorumSetup::branch_r() };
        // A lost follower never answers: the longest leg a setup takes, never waited for
        // while W replicas are left.
        let mut lost = 0;
        for (index, leg) in setup.legs.iter_mut().enumerate().skip(1) {
            if params.lost_followers & (1 << index) != 0 {
                *leg = quorum::LEG_MAX;
                lost += 1;
            }
        }
        let left = setup.legs.len() - lost;
        let branch = if left < setup.w {
            Err(format!("W = {} needs {} replicas and only {left} {} left: no batch can commit, so every write after the fork waits for ever (a real leader stops taking writes)",
                setup.w, setup.w, crate::format::are(left)))
        } else {
            quorum::branch_r(&setup, FORK_AFTER_WRITE).map_err(|error| error.to_string())
        };
        let trace = branch.as_ref().ok().map(|branch| branch.trace());
        let spans = trace.as_ref().map(TraceSpans::from_trace);
        let mut write_23 = branch.as_ref().ok().and_then(|branch| branch.budget(23));
        if let Some(budget) = &mut write_23 {
            budget.naive_sum = Nanos(budget.naive_sum.0 - quorum::LEG_MAX.0 * lost as u64);
        }
        let survival = quorum::survival_table(&quorum::page_policies());
        let files = trace.as_ref().map(|trace| trace.files.iter().map(|file| file.name.clone()).collect()).unwrap_or_default();
        let mut marks = spans.as_ref().map(TraceSpans::marks).unwrap_or_default();
        // The fork is a step of its own: the moment the view opens on.
        marks.extend(branch.as_ref().ok().map(|branch| branch.fork_at));
        walab_core::sort::sort(&mut marks);
        marks.dedup();
        let captions = match (&branch, &trace) {
            (Ok(branch), Some(trace)) => super::captions::trace_captions(trace, &marks)
                .iter()
                .zip(&marks)
                .map(|(caption, mark)| super::quorum_view::quorum_caption(branch, *mark, caption))
                .collect(),
            _ => Vec::new(),
        };
        QuorumModel { setup, branch, spans, write_23, survival, files, captions: (marks, captions) }
    }

    /// The caption at the playhead.
    pub fn caption_now(&self, now: Nanos) -> String {
        super::captions::caption_at(&self.captions.1, &self.captions.0, now, "Before the first write: one leader, A, and two followers, B and C, each in its own zone.")
    }

    /// The steps from the fork on: before it the run is group commit's single disk, which the
    /// lanes still draw but the player does not step through again.
    pub fn timeline(&self) -> Timeline {
        match &self.spans {
            Some(spans) => {
                let fork = self.fork_at().unwrap_or(Nanos::ZERO);
                Timeline { marks: self.captions.0.iter().copied().filter(|mark| *mark >= fork).collect(), end: spans.end }
            }
            None => Timeline::empty(),
        }
    }

    /// When the log forks onto the replicas: the moment the view opens on.
    pub fn fork_at(&self) -> Option<Nanos> {
        self.branch.as_ref().ok().map(|branch| branch.fork_at)
    }
}

#[derive(Debug)]
pub struct BudgetModel {
    pub budget: Result<Budget, String>,
    /// The recap's path of an OK, when asked for (empty otherwise).
    pub recap: Vec<super::recap::Stop>,
}

impl BudgetModel {
    pub fn build(params: &LabParams, with_recap: bool) -> BudgetModel {
        let input = BudgetInput::at_load(params.load_per_second, params.sync_latency);
        let budget = budget::compute(input).map_err(|error| error.to_string());
        let recap = if with_recap { super::recap::stops(budget.as_ref().ok()) } else { Vec::new() };
        BudgetModel { budget, recap }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::url_state::parse_query;

    #[test]
    fn redo_walks_the_run_then_recovery() {
        let model = RedoModel::build(&parse_query("").0);
        let branch = model.branch.as_ref().unwrap();
        assert!(branch.recovered_everything());
        assert!(model.recovery_from > 0 && model.recovery_from < model.events.len());
        assert_eq!(model.events_done(model.timeline().end), model.events.len());
        assert!(model.events.iter().all(|event| !describe_page_event(event).is_empty()));
        let captions = model.captions();
        for pair in captions.windows(2) {
            assert_ne!(pair[0], pair[1]);
        }
        for caption in &captions {
            for debug in ["Intact {", "InstallImage", "RebuildFromEmpty", "InBuffer", "Some(", "PageNo("] {
                assert!(!caption.contains(debug), "{caption}");
            }
        }
        let sqlite = model.sqlite.as_ref().unwrap();
        assert!(sqlite.iter().any(|event| matches!(event, WalEvent::CheckpointCopy { .. })));
        assert!(matches!(sqlite.last(), Some(WalEvent::RecoveryDone)));
    }

    #[test]
    fn redo_shows_the_final_pages_only_when_it_reaches_them() {
        use super::super::pages_view::{pages_at, Phase};
        let model = RedoModel::build(&parse_query("").0);
        let branch = model.branch.as_ref().unwrap();
        let last_redo = model.events.iter().rposition(|event| matches!(event, PageEvent::Redo(_))).unwrap();
        let finals = |done: usize| pages_at(&model.events, done, &branch.crash.expected, 2).buffer.iter().filter(|page| page.final_page).count();
        for done in 0..=last_redo {
            assert!(finals(done) < 2, "step {done}: both final pages already shown");
        }
        assert_eq!(finals(last_redo + 1), 2);
        let end = pages_at(&model.events, model.events.len(), &branch.crash.expected, 2);
        assert_eq!(end.phase, Phase::Done);
        assert!(end.disk.iter().all(|page| !page.torn()));
        let at_cut = pages_at(&model.events, model.recovery_from, &branch.crash.expected, 2);
        assert!(at_cut.buffer.is_empty());
        assert!(at_cut.disk.iter().any(|page| page.torn()), "{:?}", at_cut.disk);

    }

    #[test]
    fn without_protection_a_page_is_damaged() {
        let model = RedoModel::build(&parse_query("protection=none").0);
        let branch = model.branch.as_ref().unwrap();
        assert!(!branch.recovered_everything());
        // The last step says which page is lost and what it lost, from the run's own pages.
        let last = model.caption(model.events.len() - 1);
        let (lost, before) = branch.crash.expected.iter().find(|(page_no, page)| branch.pages_after.get(page_no).and_then(|after| after.as_ref().ok()) != Some(page)).unwrap();
        assert!(last.contains(&format!("P{} is lost", lost.0)), "{last}");
        assert!(last.contains(&before.describe_entries()), "{last}");
        let kept = RedoModel::build(&parse_query("").0);
        assert!(!kept.caption(kept.events.len() - 1).contains("lost"));
    }

    #[test]
    fn the_quorum_model_draws_the_branch_as_lanes() {
        let model = QuorumModel::build(&parse_query("").0);
        let spans = model.spans.as_ref().unwrap();
        assert!(!spans.batches.is_empty());
        let budget = model.write_23.as_ref().unwrap();
        assert_eq!(budget.total, budget.waited_for_batch_in_flight + budget.own_batch);
        assert!(budget.naive_sum > budget.total);
        let (marks, captions) = &model.captions;
        assert_eq!(marks.len(), captions.len());
        for pair in captions.windows(2) {
            assert_ne!(pair[0], pair[1]);
        }
        assert!(captions.iter().any(|caption| caption.contains("12.40 ms: B12 commits on B's ack, the 2nd fastest (W = 2): 1.4 ms, not the 8.4 ms its legs add up to; write 21 is told OK")), "{captions:#?}");
        assert!(captions.iter().any(|caption| caption.contains("B14 takes writes 23-24; A syncs it locally (1.0 ms) while sending it to B and C, whose acks take 1.4 ms and 6.0 ms")), "{captions:#?}");
        let fork = model.branch.as_ref().unwrap().fork_at;
        for (mark, caption) in marks.iter().zip(captions) {
            if *mark >= fork {
                for single_disk in ["fdatasync", "page cache", "wal-6", "Raft mode", "waits for A"] {
                    assert!(!caption.contains(single_disk), "{caption}");
                }
            }
        }
        let timeline = model.timeline();
        assert_eq!(timeline.marks.first(), Some(&fork), "the steps start at the fork");
        assert!(timeline.marks.len() <= 15, "{} steps after the fork", timeline.marks.len());
        assert!(model.caption_now(fork).contains("the log forks after write 20"), "{}", model.caption_now(fork));
        let w1 = QuorumModel::build(&parse_query("w=1").0);
        assert!(w1.captions.1.iter().any(|caption| caption.contains("commits on A's local sync, the 1st fastest (W = 1): 1.0 ms")), "{:#?}", w1.captions.1);
    }

    #[test]
    fn a_lost_follower_is_never_waited_for_and_two_lost_stop_the_commits() {
        let lost_b = QuorumModel::build(&parse_query("lost=b").0);
        let branch = lost_b.branch.as_ref().unwrap();
        assert_eq!(branch.setup.batch_latency(), Nanos::from_millis(6), "C's ack is the 2nd fastest left");
        let budget = lost_b.write_23.as_ref().unwrap();
        assert_eq!(budget.naive_sum, budget.waited_for_batch_in_flight + Nanos::from_micros(7_000), "the sum adds the legs that answer");
        let both = QuorumModel::build(&parse_query("lost=b,c").0);
        assert!(both.branch.unwrap_err().contains("no batch can commit"));
        assert!(QuorumModel::build(&parse_query("lost=b,c&w=1").0).branch.is_ok(), "W = 1: A alone commits");
    }

    #[test]
    fn the_budget_follows_the_load() {
        let low = BudgetModel::build(&parse_query("load=1000").0, false).budget.unwrap();
        let high = BudgetModel::build(&parse_query("").0, false).budget.unwrap();
        assert!(high.shared.iops >= low.shared.iops);
    }
}
