//! Parts 3, 6, 7 and 8: the tiny store on the core's simulated device.
//!
//! One run without a power cut gives the timeline to play; when the instructor has
//! chosen a cut, a second run stops there and the device's post-crash image (the units
//! a seed lets reach the media, as `walab sim power-cut --seed` does) is recovered. For
//! Part 7 the recovery scan's checks are appended to the timeline after the cut, so the
//! player walks from the power failure into recovery one check at a time.

use walab_core::device::Image;
use walab_core::scan::ScanCheck;
use walab_core::sim::tiny::{self, CdcReader, CrashState, LogSyncFault, SegmentGates, SyncErrorHandling, TinyRun, TinySetup};
use walab_core::time::Nanos;

use super::commit::core_policy;
use super::trace_view::TraceSpans;
use super::Timeline;
use crate::url_state::{Fault, Handling, LabParams, Policy};

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
    /// Every legal post-crash state, when few enough to list.
    pub all_states: Option<Vec<CrashState>>,
}

impl CutOutcome {
    /// The segment bytes the scan read, with their names (the segments still existing).
    pub fn segment_bytes(&self, name: &str) -> Option<&[u8]> {
        self.image.file(name)
    }
}

/// One durability mode's result at the cut (Part 6's comparison).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModeAtCut {
    pub policy: Policy,
    pub acknowledged: Vec<u64>,
    pub lost_acknowledged: Vec<u64>,
}

#[derive(Debug)]
pub struct TinyBench {
    pub part: u8,
    pub full: Result<(TinyRun, TraceSpans), String>,
    pub cut: Option<Result<CutOutcome, String>>,
    /// Part 6: every mode at the same cut.
    pub modes: Vec<(Policy, Result<ModeAtCut, String>)>,
    /// Part 3: what a process restarting without a reboot reads through the page cache.
    pub through_page_cache: Option<Vec<u64>>,
}

/// The setup a Part runs.
pub fn setup_for(params: &LabParams, policy: Policy) -> TinySetup {
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

impl TinyBench {
    pub fn build(params: &LabParams) -> TinyBench {
        let setup = setup_for(params, params.policy);
        let full = tiny::run(&setup).map_err(|error| error.to_string()).map(|run| {
            let spans = TraceSpans::from_trace(&run.trace);
            (run, spans)
        });
        let cut = params.cut.map(|at| cut_outcome(&setup, at, params.seed, params.part == 7));
        let modes = if params.part == 6 {
            let at = params.cut.unwrap_or(walab_core::tiny_store::POWER_CUT);
            [Policy::GroupCommit, Policy::SyncPerWrite, Policy::NoSync, Policy::Window]
                .into_iter()
                .map(|mode| (mode, mode_at_cut(params, mode, at)))
                .collect()
        } else {
            Vec::new()
        };
        let through_page_cache = match (&cut, params.part) {
            (Some(Ok(outcome)), 3) => Some(outcome.run.recover_through_page_cache().recovered),
            _ => None,
        };
        TinyBench { part: params.part, full, cut, modes, through_page_cache }
    }

    pub fn timeline(&self) -> Timeline {
        let Ok((_, spans)) = &self.full else { return Timeline::empty() };
        match &self.cut {
            Some(Ok(outcome)) if self.part == 7 => {
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

    /// The spans to draw: the cut run's when there is a cut, else the full run's.
    pub fn spans(&self) -> Option<&TraceSpans> {
        match (&self.cut, &self.full) {
            (Some(Ok(outcome)), _) => Some(&outcome.spans),
            (_, Ok((_, spans))) => Some(spans),
            _ => None,
        }
    }

    /// Part 7: how many recovery checks have run at the playhead.
    pub fn checks_done(&self, now: Nanos) -> usize {
        match &self.cut {
            Some(Ok(outcome)) if now > outcome.at => ((now.0 - outcome.at.0) / RECOVERY_STEP.0) as usize,
            _ => 0,
        }
    }

    /// Part 8: the segments' gates at the playhead.
    pub fn gates_at(&self, now: Nanos) -> Vec<SegmentGates> {
        match &self.full {
            Ok((run, _)) => run.gates_at(now),
            Err(_) => Vec::new(),
        }
    }
}

fn cut_outcome(setup: &TinySetup, at: Nanos, seed: u64, list_states: bool) -> Result<CutOutcome, String> {
    let run = tiny::run(&setup.clone().with_power_cut(at)).map_err(|error| error.to_string())?;
    let crash = run.sample_post_crash(seed);
    let (_, image) = run.device.sample_power_cut(seed);
    let all_states = if list_states { run.post_crash_states() } else { None };
    let spans = TraceSpans::from_trace(&run.trace);
    Ok(CutOutcome { at, run, spans, crash, image, all_states })
}

fn mode_at_cut(params: &LabParams, mode: Policy, at: Nanos) -> Result<ModeAtCut, String> {
    let setup = setup_for(params, mode).with_power_cut(at);
    let run = tiny::run(&setup).map_err(|error| error.to_string())?;
    // The worst legal outcome: the state that loses the most acknowledged writes.
    let worst = match run.post_crash_states() {
        Some(states) => states.into_iter().max_by_key(|state| state.lost_acknowledged.len()),
        None => None,
    }
    .unwrap_or_else(|| run.sample_post_crash(params.seed));
    Ok(ModeAtCut { policy: mode, acknowledged: worst.acknowledged, lost_acknowledged: worst.lost_acknowledged })
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
        other => format!("{other:?}"),
    }
}

fn yes_no(ok: bool) -> &'static str {
    if ok {
        "yes"
    } else {
        "NO"
    }
}

/// The core policy name the CLI's `--policy` takes for a page policy.
pub fn cli_policy(policy: Policy) -> &'static str {
    walab_core::sim::commit::policy_name(&core_policy(policy, Nanos::from_millis(2)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::url_state::parse_query;

    #[test]
    fn part_6_at_13_5_ms_matches_the_modes_table() {
        let bench = TinyBench::build(&parse_query("part=6&cut=13.5").0);
        let summary: Vec<(Policy, usize, usize)> = bench
            .modes
            .iter()
            .map(|(policy, mode)| {
                let mode = mode.as_ref().unwrap();
                (*policy, mode.acknowledged.len(), mode.lost_acknowledged.len())
            })
            .collect();
        let group = summary.iter().find(|row| row.0 == Policy::GroupCommit).unwrap();
        let per_write = summary.iter().find(|row| row.0 == Policy::SyncPerWrite).unwrap();
        let no_sync = summary.iter().find(|row| row.0 == Policy::NoSync).unwrap();
        // Read back from the core's runs: group commit loses nothing, the no-sync mode
        // acknowledged more than it kept.
        assert_eq!(group.2, 0);
        assert_eq!(per_write.2, 0);
        assert!(no_sync.1 > group.1);
        assert!(no_sync.2 > 0);
    }

    #[test]
    fn part_7_appends_the_scan_to_the_timeline() {
        let bench = TinyBench::build(&parse_query("part=7&cut=13.5").0);
        let outcome = bench.cut.as_ref().unwrap().as_ref().unwrap();
        let timeline = bench.timeline();
        let checks = outcome.crash.recovery.scan.checks.len();
        assert_eq!(timeline.end, Nanos(outcome.at.0 + RECOVERY_STEP.0 * checks as u64));
        assert_eq!(bench.checks_done(timeline.end), checks);
        assert_eq!(bench.checks_done(outcome.at), 0);
        let segments = &outcome.crash.recovery.segments;
        assert!(outcome.crash.recovery.scan.checks.iter().all(|check| !describe_check(check, segments).is_empty()));
    }

    #[test]
    fn unit_512_in_the_url_reaches_the_device_and_stops_the_tear() {
        let torn = |query: &str| {
            let bench = TinyBench::build(&parse_query(query).0);
            let outcome = bench.cut.unwrap().unwrap();
            let states = outcome.all_states.unwrap();
            (outcome.run.device.unit_bytes(), states.iter().any(|state| state.recovery.stop.reason == walab_core::scan::StopReason::Checksum))
        };
        assert_eq!(torn("part=7&cut=13.5"), (32, true));
        assert_eq!(torn("part=7&cut=13.5&unit=512"), (512, false));
        assert_eq!(torn("part=7&cut=13.5&unit=4096"), (4096, false));
    }

    #[test]
    fn part_8_gates_follow_the_manifest() {
        let bench = TinyBench::build(&parse_query("part=8&cdc=10").0);
        let end = bench.timeline().end;
        let gates = bench.gates_at(end);
        assert_eq!(gates.len(), 6);
        assert!(gates.iter().all(|gate| !gate.readers_done || gate.segment <= 2));
    }
}
