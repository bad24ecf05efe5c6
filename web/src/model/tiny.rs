//! The tiny store on the core's simulated device.
//!
//! One run without a power cut gives the timeline to play; when the instructor has
//! chosen a cut, a second run stops there and the device's post-crash image (the units
//! a seed lets reach the media, as `walab sim power-cut --seed` does) is recovered. For
//! a view of the recovery scan its checks are appended to the timeline after the cut, so the
//! player walks from the power failure into recovery one check at a time.

use walab_core::device::Image;
use walab_core::scan::ScanCheck;
use walab_core::sim::tiny::{self, CdcReader, CrashState, LogSyncFault, SegmentGates, SyncErrorHandling, TinyRun, TinySetup};
use walab_core::time::Nanos;

use super::captions::{caption_at, trace_captions, trace_ideas};
use super::commit::core_policy;
use super::captions::id_runs;
use super::fates::{arrived_before, fates, with_fate, Fate};
use super::trace_view::TraceSpans;
use super::Timeline;
use crate::url_state::{Fault, Handling, LabParams, PolicyKind};

/// Display time given to one recovery check when the player walks through the scan.
pub const RECOVERY_STEP: Nanos = Nanos::from_micros(100);

/// What the power cut left and what recovery found.
#[derive(Debug)]
pub struct CutOutcome {
    pub at: Nanos,
    pub run: TinyRun,
    pub spans: TraceSpans,
    pub crash: CrashState,
    pub image: Image,
    /// Every write that arrived before the cut, with its fate in `crash`.
    pub fates: Vec<(u64, Fate)>,
    /// Every legal post-crash state, when few enough to list.
    pub all_states: Option<Vec<CrashState>>,
}

impl CutOutcome {
    /// The segment bytes the scan read, with their names (the segments still existing).
    pub fn segment_bytes(&self, name: &str) -> Option<&[u8]> {
        self.image.file(name)
    }
}

/// One durability mode's result at the cut (the modes' comparison).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModeAtCut {
    pub policy: PolicyKind,
    pub acknowledged: Vec<u64>,
    pub lost_acknowledged: Vec<u64>,
    /// Every write that arrived before the cut, with its fate in the worst state.
    pub fates: Vec<(u64, Fate)>,
}

/// Which of the tiny store's extra runs a view draws (each costs runs of the core), and
/// where it opens. The view that asks is chosen in `crate::parts`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TinyShows {
    /// Every durability mode at the same cut.
    pub modes_at_cut: bool,
    /// The failed sync's other handling, and what a restart reads through the page cache.
    pub failed_sync_paths: bool,
    /// The recovery scan after the cut, check by check, every post-crash state, and the
    /// cuts worth opening on.
    pub recovery_scan: bool,
    /// Opens as the last write is told OK (every segment created, the first past their
    /// gates) instead of at the failed sync or just before the power cut.
    pub opens_on_last_ack: bool,
}

#[derive(Debug)]
pub struct TinyModel {
    pub shows: TinyShows,
    pub full: Result<(TinyRun, TraceSpans), String>,
    pub cut: Option<Result<CutOutcome, String>>,
    /// Every mode cut at Part 6's lesson instant, 13.5 ms (`TinyShows::modes_at_cut`).
    pub modes: Vec<(PolicyKind, Result<ModeAtCut, String>)>,
    /// What a process restarting without a reboot reads through the page cache.
    pub through_page_cache: Option<Vec<u64>>,
    /// E1: the other handling of the failed sync, to draw both paths.
    pub other_path: Option<Result<super::failed_sync_view::OtherPath, String>>,
    /// The cuts worth opening on (a torn record, a sync that finished first).
    pub named_cuts: Vec<super::torn::NamedCut>,
    /// Part 3: the cuts that lose acknowledged writes (on the wrong path, none on the right).
    pub loss_window: Option<super::failed_sync_view::LossWindow>,
    /// The captions, made on first use (the player asks every frame while playing).
    captions_cache: std::cell::OnceCell<(Vec<Nanos>, Vec<String>)>,
}

/// The tiny store's setup for the parameters.
pub fn setup_for(params: &LabParams, policy: PolicyKind) -> TinySetup {
    let mut setup = TinySetup::new(core_policy(policy, params.window));
    // The sync-latency knob slows (or speeds) the log's syncs; the tiny store's own
    // figures are for its 1.0 ms.
    setup.log_sync_latency = params.sync_latency;
    // The atomic unit decides what a cut tears (32 bytes in the tiny store's figures).
    setup.unit_bytes = params.unit_bytes as usize;
    match params.fault {
        Fault::None => {}
        Fault::LogSync => {
            let handling = match params.handling {
                Handling::Right => SyncErrorHandling::FailStop,
                Handling::Wrong => SyncErrorHandling::RetryAndCarryOn,
            };
            setup.log_sync_fault = Some(LogSyncFault { batch: params.eio_batch, handling });
        }
        Fault::FlushSync => setup.flush_sync_fault = Some(11),
    }
    if let Some(seq) = params.cdc_confirmed_seq {
        setup.readers.push(CdcReader { name: "cdc".into(), confirmed_seq: seq });
    }
    setup
}

impl TinyModel {
    pub fn build(params: &LabParams, shows: TinyShows) -> TinyModel {
        let setup = setup_for(params, params.policy);
        let full = tiny::run(&setup).map_err(|error| error.to_string()).map(|run| {
            let spans = TraceSpans::from_trace(&run.trace);
            (run, spans)
        });
        let cut = params.cut.map(|at| cut_outcome(&setup, at, params.seed, shows.recovery_scan));
        let modes = if shows.modes_at_cut {
            // Part 6's lesson: always its own instant, whatever the student's own cut.
            let at = walab_core::tiny_store::POWER_CUT;
            // The teaching page's four: the two that sync before OK and the two fast ones.
            [PolicyKind::Group, PolicyKind::PerWrite, PolicyKind::NoSync, PolicyKind::Periodic]
                .into_iter()
                .map(|mode| (mode, mode_at_cut(params, mode, at)))
                .collect()
        } else {
            Vec::new()
        };
        let through_page_cache = match (&cut, shows.failed_sync_paths) {
            (Some(Ok(outcome)), true) => Some(outcome.run.recover_through_page_cache().recovered),
            _ => None,
        };
        let other_path = if shows.failed_sync_paths { super::failed_sync_view::other_path_runs(&setup, params.cut, params.seed) } else { None };
        let named_cuts = if shows.recovery_scan {
            let at = walab_core::tiny_store::POWER_CUT;
            tiny::run(&setup.clone().with_power_cut(at)).map(|run| super::torn::named_cuts(&run, at)).unwrap_or_default()
        } else {
            Vec::new()
        };
        let loss_window = match (&full, shows.failed_sync_paths) {
            (Ok((run, _)), true) => super::failed_sync_view::loss_window(&setup, run, params.seed),
            _ => None,
        };
        TinyModel { shows, full, cut, modes, through_page_cache, other_path, named_cuts, loss_window, captions_cache: std::cell::OnceCell::new() }
    }

    pub fn timeline(&self) -> Timeline {
        let Ok((_, spans)) = &self.full else { return Timeline::empty() };
        match &self.cut {
            Some(Ok(outcome)) if self.shows.recovery_scan => {
                let mut marks: Vec<Nanos> = spans.marks().into_iter().filter(|mark| *mark <= outcome.at).collect();
                marks.push(outcome.at);
                let checks = outcome.crash.recovery.scan.checks.len() as u64;
                marks.extend((1..=checks).map(|step| Nanos(outcome.at.0 + RECOVERY_STEP.0 * step)));
                let end = Nanos(outcome.at.0 + RECOVERY_STEP.0 * checks);
                Timeline { marks, end }
            }
            Some(Ok(outcome)) => {
                let mut marks: Vec<Nanos> = spans.marks().into_iter().filter(|mark| *mark <= outcome.at).collect();
                marks.push(outcome.at);
                Timeline { marks, end: outcome.at }
            }
            _ => Timeline { marks: spans.marks(), end: spans.end },
        }
    }

    /// The trace the player walks: the cut run's when there is a cut, else the full run's.
    pub fn trace(&self) -> Option<&walab_core::trace::Trace> {
        match (&self.cut, &self.full) {
            (Some(Ok(outcome)), _) => Some(&outcome.run.trace),
            (_, Ok((run, _))) => Some(&run.trace),
            _ => None,
        }
    }

    /// One caption per step of [`TinyModel::timeline`] (its marks sorted, without
    /// repeats, as the player keeps them). The cut's caption says what recovery found
    /// only once `revealed`; the recovery scan's steps tell each check.
    pub fn captions(&self, revealed: bool) -> (Vec<Nanos>, Vec<String>) {
        let mut marks = self.timeline().marks;
        walab_core::sort::sort(&mut marks);
        marks.dedup();
        let Some(trace) = self.trace() else { return (marks, Vec::new()) };
        let mut captions = trace_captions(trace, &marks);
        // Each step says its one idea first, in plain words, then what happened in detail.
        for (caption, idea) in captions.iter_mut().zip(trace_ideas(trace, &marks)) {
            if let Some(idea) = idea {
                *caption = format!("{idea}\n{caption}");
            }
        }
        if let Some(Ok(outcome)) = &self.cut {
            let checks = &outcome.crash.recovery.scan.checks;
            let segments = &outcome.crash.recovery.segments;
            for (index, mark) in marks.iter().enumerate() {
                if *mark == outcome.at {
                    captions[index] = cut_caption(outcome, revealed);
                } else if *mark > outcome.at {
                    let step = ((mark.0 - outcome.at.0) / RECOVERY_STEP.0) as usize;
                    if let Some(check) = step.checked_sub(1).and_then(|step| checks.get(step)) {
                        captions[index] = format!("{}\nRecovery, check {step} of {}: {}.", check_idea(check), checks.len(), describe_check(check, segments));
                    }
                }
            }
        }
        (marks, captions)
    }

    /// The caption at the playhead.
    pub fn caption_now(&self, now: Nanos, revealed: bool) -> String {
        let (marks, captions) = self.captions_cache.get_or_init(|| self.captions(false));
        if let (true, Some(Ok(outcome))) = (revealed, &self.cut) {
            if marks.partition_point(|mark| *mark <= now).checked_sub(1).is_some_and(|index| marks[index] == outcome.at) {
                return cut_caption(outcome, true);
            }
        }
        caption_at(captions, marks, now, "Before the first write: every file is empty and nothing is in flight. Step or play to start.")
    }

    /// The spans to draw: the cut run's when there is a cut, else the full run's.
    pub fn spans(&self) -> Option<&TraceSpans> {
        match (&self.cut, &self.full) {
            (Some(Ok(outcome)), _) => Some(&outcome.spans),
            (_, Ok((_, spans))) => Some(spans),
            _ => None,
        }
    }

    /// How many recovery checks have run at the playhead.
    pub fn checks_done(&self, now: Nanos) -> usize {
        match &self.cut {
            Some(Ok(outcome)) if now > outcome.at => ((now.0 - outcome.at.0) / RECOVERY_STEP.0) as usize,
            _ => 0,
        }
    }

    /// The segments' gates at the playhead.
    pub fn gates_at(&self, now: Nanos) -> Vec<SegmentGates> {
        match &self.full {
            Ok((run, _)) => run.gates_at(now),
            Err(_) => Vec::new(),
        }
    }
}

/// The model a link opens, with the runs its chapter asks for (tests read like links).
#[cfg(test)]
pub fn for_link(query: &str) -> TinyModel {
    let params = crate::url_state::parse_query(query).0;
    TinyModel::build(&params, crate::parts::choice::tiny_shows(params.part))
}

fn cut_outcome(setup: &TinySetup, at: Nanos, seed: u64, list_states: bool) -> Result<CutOutcome, String> {
    let run = tiny::run(&setup.clone().with_power_cut(at)).map_err(|error| error.to_string())?;
    let crash = run.sample_post_crash(seed);
    let (_, image) = run.device.sample_power_cut(seed);
    let all_states = if list_states { run.post_crash_states() } else { None };
    let spans = TraceSpans::from_trace(&run.trace);
    let fates = fates(&arrived_before(&run.trace, at), &crash);
    Ok(CutOutcome { at, run, spans, crash, image, fates, all_states })
}

/// "1 write had", "3 writes had".
fn had(acknowledged: usize) -> String {
    format!("{} had", crate::format::count(acknowledged, "write"))
}

/// The power cut's step, in words; what recovery found is told only once revealed.
pub fn cut_caption(outcome: &CutOutcome, revealed: bool) -> String {
    let at = crate::url_state::format_millis(outcome.at);
    let acknowledged = outcome.crash.acknowledged.len();
    if !revealed {
        return format!("The power fails at {at} ms: only what reached the disk survives. {} been told OK: how many will recovery find?\n\
            The page cache and the drive's cache are gone; only what reached the media remains. Predict, then reveal.", had(acknowledged));
    }
    let lost = with_fate(&outcome.fates, Fate::Lost);
    let without_ok = with_fate(&outcome.fates, Fate::SurvivedWithoutOk);
    let idea = if lost.is_empty() {
        format!("The power fails at {at} ms, and every write told OK survives.")
    } else {
        format!("The power fails at {at} ms, and {} told OK {} lost: {} only in memory.", crate::format::count(lost.len(), "write"),
            if lost.len() == 1 { "is" } else { "are" }, if lost.len() == 1 { "it was" } else { "they were" })
    };
    let mut text = format!("{idea}\n{at} ms: the power fails. Of the {} told OK, {} survive", crate::format::count(acknowledged, "write"), outcome.crash.survived.len());
    if lost.is_empty() {
        text.push_str(" and none is lost");
    } else {
        text.push_str(&format!(" and {} {} lost ({})", lost.len(), if lost.len() == 1 { "is" } else { "are" }, id_runs(&lost)));
    }
    if !without_ok.is_empty() {
        text.push_str(&format!("; {} survived without ever being told OK", id_runs(&without_ok)));
    }
    text.push('.');
    text
}

fn mode_at_cut(params: &LabParams, mode: PolicyKind, at: Nanos) -> Result<ModeAtCut, String> {
    let setup = setup_for(params, mode).with_power_cut(at);
    let run = tiny::run(&setup).map_err(|error| error.to_string())?;
    // The worst legal outcome: the state that loses the most acknowledged writes and,
    // among those, keeps the fewest writes (the in-flight units that did not land).
    let worst = match run.post_crash_states() {
        Some(states) => states.into_iter().min_by_key(|state| (std::cmp::Reverse(state.lost_acknowledged.len()), state.recovery.recovered.len())),
        None => None,
    }
    .unwrap_or_else(|| run.sample_post_crash(params.seed));
    let fates = fates(&arrived_before(&run.trace, at), &worst);
    Ok(ModeAtCut { policy: mode, acknowledged: worst.acknowledged, lost_acknowledged: worst.lost_acknowledged, fates })
}

/// A scan check's one idea, in plain words (the step's headline).
fn check_idea(check: &ScanCheck) -> &'static str {
    match check {
        ScanCheck::SegmentStart { .. } => "Recovery opens the next log file and reads it from its start.",
        ScanCheck::Accept { .. } => "Recovery reads a whole record back: it counts.",
        ScanCheck::Checksum { ok: false, .. } => "This record's checksum does not match its bytes: part of it never reached the disk (a torn write).",
        ScanCheck::Checksum { ok: true, .. } => "The record's checksum matches its bytes: it is whole.",
        ScanCheck::HeaderZero { .. } | ScanCheck::HeaderShort { .. } => "Recovery finds only zeros: nothing was written here.",
        ScanCheck::PayloadPresent { ok: false, .. } | ScanCheck::LengthBound { ok: false, .. } => "This record is cut short: part of it never reached the disk.",
        ScanCheck::Stop { .. } => "Recovery stops here: the log is what came before this point.",
        ScanCheck::AlreadyFlushed { .. } => "This record is already in a flushed file: recovery skips it.",
        ScanCheck::SegmentEnd { .. } => "This log file ends cleanly; recovery moves to the next.",
        _ => "Recovery checks the next record.",
    }
}

/// A scan check in words, for the step list.
pub fn describe_check(check: &ScanCheck, segments: &[String]) -> String {
    let name = |segment: &usize| segments.get(*segment).cloned().unwrap_or_else(|| format!("segment {segment}"));
    match check {
        ScanCheck::SegmentStart { segment, bytes } => format!("open {} ({bytes} bytes)", name(segment)),
        ScanCheck::HeaderShort { segment, offset, available, all_zero } => {
            format!("{}@{offset}: only {available} bytes left{}", name(segment), if *all_zero { ", all zero" } else { "" })
        }
        ScanCheck::HeaderZero { segment, offset, .. } => format!("{}@{offset}: header is all zeros: nothing was written here", name(segment)),
        ScanCheck::Header { segment, offset, stored_checksum, length, record_type, .. } => {
            format!("{}@{offset}: header: crc {stored_checksum:08x}, length {length}, type {record_type}", name(segment))
        }
        ScanCheck::LengthBound { segment, offset, length, min, max, ok } => {
            format!("{}@{offset}: length {length} within {min}..{max}? {}", name(segment), yes_no(*ok))
        }
        ScanCheck::PayloadPresent { segment, offset, length, available, ok } => {
            format!("{}@{offset}: {length} payload bytes present ({available} left)? {}", name(segment), yes_no(*ok))
        }
        ScanCheck::Checksum { segment, offset, stored, computed, ok } => {
            format!("{}@{offset}: checksum stored {stored:08x}, computed {computed:08x}: {}", name(segment), if *ok { "match" } else { "MISMATCH" })
        }
        ScanCheck::Fragment { segment, offset, record_type, ok, .. } => {
            format!("{}@{offset}: record type {record_type} allowed here? {}", name(segment), yes_no(*ok))
        }
        ScanCheck::Payload { segment, offset, ok, problem } => {
            format!("{}@{offset}: payload parses? {}{}", name(segment), yes_no(*ok), problem.as_ref().map(|p| format!(" ({p})")).unwrap_or_default())
        }
        ScanCheck::AlreadyFlushed { segment, offset, seq, flushed_through_seq } => {
            format!("{}@{offset}: seq {seq} is already in a flushed file (through {flushed_through_seq}): skip", name(segment))
        }
        ScanCheck::Accept { segment, offset, len, seq } => {
            format!("{}@{offset}: accept{} ({len} bytes)", name(segment), seq.map(|seq| format!(" seq {seq}")).unwrap_or_default())
        }
        ScanCheck::SegmentEnd { segment, offset, reason } => format!("{}@{offset}: clean end ({}), next segment", name(segment), reason.name()),
        ScanCheck::Stop { stop } => format!("stop: {} at {}@{}", stop.reason.name(), name(&stop.segment), stop.offset),
        ScanCheck::BlockTrailer { segment, offset, bytes, .. } => format!("{}@{offset}: {bytes} trailer bytes at a block's end: skip", name(segment)),
        ScanCheck::LogNumber { segment, offset, expected, found, ok } => {
            format!("{}@{offset}: log number {found}, expected {expected}? {}", name(segment), yes_no(*ok))
        }
        ScanCheck::FrameOffset { segment, offset, expected, found, ok } => {
            format!("{}@{offset}: frame offset {found}, expected {expected}? {}", name(segment), yes_no(*ok))
        }
    }
}

fn yes_no(ok: bool) -> &'static str {
    if ok {
        "yes"
    } else {
        "NO"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn part_6_at_13_5_ms_matches_the_modes_table() {
        let model = crate::model::tiny::for_link("part=6&cut=13.5");
        let summary: Vec<(PolicyKind, usize, usize)> = model
            .modes
            .iter()
            .map(|(policy, mode)| {
                let mode = mode.as_ref().unwrap();
                (*policy, mode.acknowledged.len(), mode.lost_acknowledged.len())
            })
            .collect();
        // Read back from the core's runs: group commit acknowledged 22 and lost none, sync
        // per write 13 and none, the two fast modes all 24 and lost four.
        assert_eq!(
            summary,
            vec![(PolicyKind::Group, 22, 0), (PolicyKind::PerWrite, 13, 0), (PolicyKind::NoSync, 24, 4), (PolicyKind::Periodic, 24, 4)]
        );
    }

    #[test]
    fn part_6_no_sync_at_13_5_ms_loses_21_to_24_and_keeps_1_to_20() {
        let model = crate::model::tiny::for_link("part=6&policy=no-sync&cut=13.5");
        let outcome = model.cut.as_ref().unwrap().as_ref().unwrap();
        assert_eq!(with_fate(&outcome.fates, Fate::Lost), (21..=24).collect::<Vec<u64>>());
        assert_eq!(with_fate(&outcome.fates, Fate::Survived), (1..=20).collect::<Vec<u64>>());
        let (_, no_sync) = model.modes.iter().find(|(policy, _)| *policy == PolicyKind::NoSync).unwrap();
        assert_eq!(with_fate(&no_sync.as_ref().unwrap().fates, Fate::Lost), (21..=24).collect::<Vec<u64>>());
        assert!(cut_caption(outcome, true).contains("4 are lost (21-24)"), "{}", cut_caption(outcome, true));
        assert!(!cut_caption(outcome, false).contains("lost"));
    }

    #[test]
    fn captions_follow_the_player_and_differ_step_to_step() {
        for query in ["part=3&fault=e1&handling=wrong&cut=11.5", "part=6&cut=13.5", "part=7&cut=13.5", "part=8&cdc=10", "part=3&fault=e2"] {
            let model = crate::model::tiny::for_link(query);
            let (marks, captions) = model.captions(true);
            assert_eq!(marks.len(), captions.len(), "{query}");
            for pair in captions.windows(2) {
                assert_ne!(pair[0], pair[1], "{query}");
            }
            assert!(captions.iter().all(|caption| !caption.contains("nothing new") && !caption.contains(" {")), "{query}: {captions:#?}");
        }
    }

    #[test]
    fn part_7_appends_the_scan_to_the_timeline() {
        let model = crate::model::tiny::for_link("part=7&cut=13.5");
        let outcome = model.cut.as_ref().unwrap().as_ref().unwrap();
        let timeline = model.timeline();
        let checks = outcome.crash.recovery.scan.checks.len();
        assert_eq!(timeline.end, Nanos(outcome.at.0 + RECOVERY_STEP.0 * checks as u64));
        assert_eq!(model.checks_done(timeline.end), checks);
        assert_eq!(model.checks_done(outcome.at), 0);
        let segments = &outcome.crash.recovery.segments;
        assert!(outcome.crash.recovery.scan.checks.iter().all(|check| !describe_check(check, segments).is_empty()));
    }

    #[test]
    fn unit_512_in_the_url_reaches_the_device_and_stops_the_tear() {
        let torn = |query: &str| {
            let model = crate::model::tiny::for_link(query);
            let outcome = model.cut.unwrap().unwrap();
            let states = outcome.all_states.unwrap();
            (outcome.run.device.unit_bytes(), states.iter().any(|state| state.recovery.stop.reason == walab_core::scan::StopReason::Checksum))
        };
        assert_eq!(torn("part=7&cut=13.5"), (32, true));
        assert_eq!(torn("part=7&cut=13.5&unit=512"), (512, false));
        assert_eq!(torn("part=7&cut=13.5&unit=4096"), (4096, false));
    }

    #[test]
    fn part_8_gates_follow_the_manifest() {
        let model = crate::model::tiny::for_link("part=8&cdc=10");
        let end = model.timeline().end;
        let gates = model.gates_at(end);
        assert_eq!(gates.len(), 6);
        assert!(gates.iter().all(|gate| !gate.readers_done || gate.segment <= 2));
    }
}
