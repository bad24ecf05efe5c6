//! Group commit run by the core's simulator (and the arithmetic of syncs per second).
//!
//! Three runs feed the chapter: the tiny store's 24 writes under the chosen policy (drawn
//! from its [`Trace`](walab_core::trace::Trace)), a steady load at the chosen rate (evenly
//! spaced or random arrivals, drawn from its per-write and per-batch records because it
//! has thousands of writes), and a sweep of loads for the charts.

use walab_core::group_commit::{Config, Policy as CorePolicy};
use walab_core::sim::commit::{self, Arrivals, BatchRecord, CommitSetup, Keep, Summary, WriteRecord};
use walab_core::time::Nanos;

use std::rc::Rc;

use super::dropped::MeasuredLatency;
use crate::format::{are, count};
use super::trace_view::TraceSpans;
use super::Timeline;
use crate::url_state::{LabParams, PolicyKind, Scenario};

/// Bytes per write in the steady-load runs (the teaching page's "about 100 bytes").
pub const STEADY_RECORD_BYTES: u32 = 100;
/// A steady run lasts this many sync latencies...
pub const STEADY_SYNCS: u64 = 20;
/// ... within these bounds on its number of writes.
pub const STEADY_WRITES_MIN: u64 = 24;
pub const STEADY_WRITES_MAX: u64 = 20_000;
/// The loads the charts sweep, in writes per second.
pub const SWEEP_LOADS: [u64; 11] = [100, 250, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000];
/// Writes per sweep point, at most.
pub const SWEEP_WRITES_MAX: u64 = 4_000;

/// The core's policy for the page's.
pub fn core_policy(policy: PolicyKind, window: Nanos) -> CorePolicy {
    match policy {
        PolicyKind::Group => CorePolicy::Group,
        PolicyKind::PerWrite => CorePolicy::PerWrite,
        PolicyKind::Window if window > Nanos::ZERO => CorePolicy::Window { window },
        PolicyKind::Window => CorePolicy::Group,
        PolicyKind::NoSync => CorePolicy::NoSync,
        // Not offered on the page (`PAGE_POLICIES`); the command line's default interval.
        PolicyKind::Periodic => CorePolicy::Periodic { interval: Nanos::from_millis(1000) },
    }
}

/// The tiny store's run.
#[derive(Debug)]
pub struct TinyCommit {
    pub spans: TraceSpans,
    pub summary: Summary,
    /// The run's trace, for the figure's state and the captions.
    pub trace: walab_core::trace::Trace,
}

/// A steady-load run.
#[derive(Debug)]
pub struct SteadyCommit {
    pub rate_per_s: u64,
    pub writes: Vec<WriteRecord>,
    pub batches: Vec<BatchRecord>,
    pub summary: Summary,
    /// The run without its first sync (the warm-up) and its last (the drain).
    pub steady_state: Option<SteadyWindow>,
    pub end: Nanos,
}

/// A steady run's numbers over its middle syncs: the first sync carries the lone first
/// write (nothing queued yet) and the last only what was left when arrivals stopped, so
/// both are left out, and what remains is the load's steady state. Each counted sync owns
/// the time from its start to the next sync's start, so at a load the log keeps up with,
/// syncs a second times writes per sync is the load (at 100,000 writes/s and L = 1 ms,
/// 1,000 x 100.0; at 100 writes/s, 100 x 1.0).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SteadyWindow {
    /// Batch ids of the first and last sync counted.
    pub first_batch: u64,
    pub last_batch: u64,
    pub syncs: u64,
    pub syncs_per_s: f64,
    pub writes_per_sync: f64,
    pub bytes_per_sync: f64,
    /// Little's law over the window: the counted writes' total wait / the window's span.
    pub in_flight_mean: f64,
    pub wait_mean: Nanos,
    pub wait_max: Nanos,
}

/// The steady state of a run: its batches but the first and the last (which must have
/// ended), and the writes those batches carried.
pub fn steady_window(writes: &[WriteRecord], batches: &[BatchRecord]) -> Option<SteadyWindow> {
    if batches.len() < 3 {
        return None;
    }
    let counted = &batches[1..batches.len() - 1];
    counted.last()?.end?;
    let from = counted.first()?.start;
    let to = batches[batches.len() - 1].start;
    let span = to.0.saturating_sub(from.0);
    if span == 0 {
        return None;
    }
    let (first_batch, last_batch) = (counted.first()?.id, counted.last()?.id);
    let carried = writes.iter().filter(|write| write.batch.is_some_and(|batch| batch >= first_batch && batch <= last_batch));
    let (mut count, mut wait_total, mut wait_max) = (0u64, 0u64, Nanos::ZERO);
    for write in carried {
        if let Some(wait) = write.wait() {
            count += 1;
            wait_total += wait.0;
            wait_max = wait_max.max(wait);
        }
    }
    let syncs = counted.len() as u64;
    Some(SteadyWindow {
        first_batch,
        last_batch,
        syncs,
        syncs_per_s: syncs as f64 * 1e9 / span as f64,
        writes_per_sync: counted.iter().map(|batch| batch.writes).sum::<u64>() as f64 / syncs as f64,
        bytes_per_sync: counted.iter().map(|batch| batch.bytes).sum::<u64>() as f64 / syncs as f64,
        in_flight_mean: wait_total as f64 / span as f64,
        wait_mean: Nanos(wait_total / count.max(1)),
        wait_max,
    })
}

/// Where the steady run stands at an instant.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SteadyAt {
    pub arrived: usize,
    pub acked: usize,
    pub in_flight: usize,
    pub syncs_started: usize,
    /// The batch whose sync is running, if any: (writes, bytes).
    pub running_batch: Option<(u64, u64)>,
    pub wait_mean_ms: f64,
}

impl SteadyCommit {
    pub fn at(&self, t: Nanos) -> SteadyAt {
        let arrived = self.writes.partition_point(|write| write.arrival <= t);
        let mut acked = 0usize;
        let mut wait_total = 0u64;
        for write in &self.writes[..arrived] {
            if let Some(ack) = write.ack.filter(|ack| *ack <= t) {
                acked += 1;
                wait_total += (ack - write.arrival).0;
            }
        }
        let syncs_started = self.batches.partition_point(|batch| batch.start <= t);
        let running_batch = self.batches[..syncs_started]
            .iter()
            .rev()
            .find(|batch| batch.end.is_none_or(|end| end > t))
            .map(|batch| (batch.writes, batch.bytes));
        SteadyAt {
            arrived,
            acked,
            in_flight: arrived - acked,
            syncs_started,
            running_batch,
            wait_mean_ms: if acked == 0 { 0.0 } else { wait_total as f64 / acked as f64 / 1e6 },
        }
    }

    /// How many batches carried n writes, for n = 1 ..= the largest batch.
    /// How many batches had each size, as at most [`SIZE_BINS_MAX`] bars: one per size when
    /// there are few sizes, else ranges of a round width ("100-109"), so a run whose every
    /// batch has a size of its own still shows where its sizes lie.
    pub fn batch_size_counts(&self) -> Vec<(String, u64)> {
        let sizes = || self.batches.iter().map(|batch| batch.writes);
        let (Some(smallest), Some(largest)) = (sizes().min(), sizes().max()) else { return Vec::new() };
        let width = [1u64, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1_000, 10_000, 100_000, u64::MAX]
            .into_iter()
            .find(|width| (largest / width - smallest / width) < SIZE_BINS_MAX)
            .unwrap_or(u64::MAX);
        // Every bar from the smallest size's to the largest's, empty ones too, so a gap in
        // the sizes shows as one.
        let first = smallest / width;
        let mut bins: Vec<(u64, u64)> = (first..=largest / width).map(|bin| (bin.saturating_mul(width), 0)).collect();
        for size in sizes() {
            bins[(size / width - first) as usize].1 += 1;
        }
        bins.into_iter()
            .map(|(from, count)| match width {
                1 => (from.to_string(), count),
                _ => (format!("{from}-{}", from.saturating_add(width - 1).min(largest)), count),
            })
            .collect()
    }
}

/// The most bars the batch-size chart draws.
pub const SIZE_BINS_MAX: u64 = 10;

/// The queue and the running sync at an instant of a steady run, as the queue-and-leader
/// figure draws them.
#[derive(Clone, Debug, PartialEq)]
pub struct SteadyQueueAt {
    pub t: Nanos,
    pub arrived: usize,
    pub acked: usize,
    /// Writes that arrived, are not acknowledged, and no leader has taken yet.
    pub queued: u64,
    /// The batch whose sync is running at `t` (its leader is its first write).
    pub syncing: Option<BatchRecord>,
}

impl SteadyCommit {
    pub fn queue_at(&self, t: Nanos) -> SteadyQueueAt {
        let arrived = self.writes.partition_point(|write| write.arrival <= t);
        let started = self.batches.partition_point(|batch| batch.start <= t);
        // Leaders take the queue in order, so every batch up to the last started one is taken.
        let last_taken = started.checked_sub(1).map(|index| self.batches[index].id);
        let waiting = |write: &&WriteRecord| write.ack.is_none_or(|ack| ack > t);
        let queued = self.writes[..arrived].iter().filter(waiting).filter(|write| write.batch.is_none_or(|batch| last_taken.is_none_or(|last| batch > last))).count();
        let acked = self.writes[..arrived].iter().filter(|write| write.ack.is_some_and(|ack| ack <= t)).count();
        let syncing = self.batches[..started].iter().rev().find(|batch| batch.end.is_none_or(|end| end > t)).copied();
        SteadyQueueAt { t, arrived, acked, queued: queued as u64, syncing }
    }
}

/// The caption of a steady run's step (a sync starting at `t`), from its records.
pub fn steady_caption(steady: &SteadyCommit, t: Nanos) -> String {
    let at = steady.at(t);
    let started: Vec<&BatchRecord> = steady.batches.iter().filter(|batch| batch.start == t).collect();
    let ms = crate::url_state::format_millis(t);
    match started.as_slice() {
        [] => format!("{ms} ms: {} arrived, {} acknowledged, {} waiting.", count(at.arrived, "write"), at.acked, at.in_flight),
        [batch, ..] if batch.writes == 1 => format!(
            "{ms} ms: B{} starts: write {} finds nothing queued and syncs alone; {} {} in flight.",
            batch.id, batch.first_write, count(at.in_flight, "write"), are(at.in_flight)
        ),
        [batch, ..] => format!(
            "{ms} ms: B{} starts: its leader takes the {} that queued during the previous sync ({}) and syncs them once; {} {} in flight.",
            batch.id, count(batch.writes, "write"), count(batch.bytes, "byte"), count(at.in_flight, "write"), are(at.in_flight)
        ),
    }
}

/// One point of the load sweep.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SweepPoint {
    pub policy: PolicyKind,
    pub rate_per_s: u64,
    pub wait_mean_ms: f64,
    pub wait_max_ms: f64,
    pub syncs_per_s: f64,
    pub batch_mean: f64,
}

#[derive(Debug)]
pub struct CommitModel {
    pub scenario: Scenario,
    pub policy: PolicyKind,
    pub sync_latency: Nanos,
    pub tiny: Result<TinyCommit, String>,
    pub steady: Result<SteadyCommit, String>,
    /// The runs against load: run on first use, after the first render, since the
    /// charts sit below the fold (`sweep()`).
    sweep: std::cell::OnceCell<Vec<SweepPoint>>,
    sweep_inputs: Option<(LabParams, Option<Rc<MeasuredLatency>>)>,
    /// The same steady load under the other policies (the policy comparison).
    pub steady_by_policy: Vec<(PolicyKind, Result<PolicySteady, String>)>,
    /// The measured latency the steady runs and the sweep used, if one was loaded.
    pub latency: Option<Rc<MeasuredLatency>>,
    /// Sync per write's queue (writes waiting for their OK) at every sync
    /// latency of the steady run: (instant, writes in flight).
    pub per_write_queue: Vec<(Nanos, u64)>,
    /// The tie rule on a run of its own.
    pub tie_example: Option<walab_core::trace::Trace>,
    /// Write 1's stations (with the policy comparison).
    pub write_path: Vec<super::write_path::PathStep>,
    pub shows: CommitShows,
}

/// Which of the commit model's runs a view draws: each costs runs of the core, so a view
/// asks only for its own. The view that asks is chosen in `crate::parts`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CommitShows {
    /// The steady load under every policy, sync per write's queue, and write 1's
    /// stations; the timeline is write 1's path.
    pub policy_comparison: bool,
    /// The runs against load and the tie rule's run; the tiny scenario draws no steady run.
    pub load_sweep: bool,
}

/// Does a policy keep up with the load, judged from the same run's numbers that its row
/// shows: its worst wait stays within what the policy itself adds (one sync in flight
/// and one of its own, 2 L, plus the window if any). A queue that grows shows up as a
/// worst wait that grows with the run instead.
pub fn keeps_up(summary: &Summary, sync_latency: Nanos, window: Nanos) -> bool {
    summary.failed == 0 && summary.acked == summary.writes && summary.wait_max.0 <= 2 * sync_latency.0 + window.0
}

/// Writes in flight (arrived, not yet told OK) at each instant of `at`.
pub fn in_flight_at(writes: &[WriteRecord], at: &[Nanos]) -> Vec<(Nanos, u64)> {
    at.iter()
        .map(|t| {
            let count = writes.iter().filter(|write| write.arrival <= *t && write.ack.is_none_or(|ack| ack > *t)).count();
            (*t, count as u64)
        })
        .collect()
}

impl CommitModel {
    pub fn build(params: &LabParams, latency: Option<Rc<MeasuredLatency>>, shows: CommitShows) -> CommitModel {
        let policy = core_policy(params.policy, params.window);
        let tiny = run_tiny(policy);
        let measured = latency.as_deref();
        // Only the runs the view shows: the load sweep's tiny scenario draws no steady run,
        // and only the policy comparison runs the steady load under every policy.
        let steady = if shows.load_sweep && params.scenario == Scenario::Tiny {
            Err("the steady run is drawn only in the steady and random scenarios".to_string())
        } else {
            run_steady(params, policy, measured)
        };
        let steady_by_policy = if shows.policy_comparison {
            [PolicyKind::PerWrite, PolicyKind::Group, PolicyKind::Window]
                .into_iter()
                .map(|page_policy| {
                    let summary = run_steady_summary(params, core_policy(page_policy, params.window), measured);
                    (page_policy, summary)
                })
                .collect()
        } else {
            Vec::new()
        };
        let sweep_inputs = shows.load_sweep.then(|| (params.clone(), latency.clone()));
        let per_write_queue = if shows.policy_comparison {
            let keep = Keep { writes: true, batches: false, trace: false };
            let setup = steady_setup(params, CorePolicy::PerWrite, keep, measured);
            let arrivals = steady_arrivals(params, params.load_per_second, STEADY_WRITES_MAX);
            match commit::run(&setup, &arrivals) {
                Ok(run) => {
                    let samples: Vec<Nanos> = (0..=STEADY_SYNCS).map(|k| Nanos(params.sync_latency.0 * k)).collect();
                    in_flight_at(&run.writes, &samples)
                }
                Err(_) => Vec::new(),
            }
        } else {
            Vec::new()
        };
        CommitModel {
            scenario: params.scenario,
            policy: params.policy,
            sync_latency: params.sync_latency,
            tiny,
            steady,
            sweep: std::cell::OnceCell::new(),
            sweep_inputs,
            steady_by_policy,
            latency,
            per_write_queue,
            tie_example: if shows.load_sweep { super::group_steps::tie_example().ok() } else { None },
            write_path: if shows.policy_comparison { super::write_path::path(params) } else { Vec::new() },
            shows,
        }
    }

    /// The runs against load (the load charts), run the first time they are asked for.
    pub fn sweep(&self) -> &[SweepPoint] {
        self.sweep.get_or_init(|| match &self.sweep_inputs {
            Some((params, latency)) => sweep(params, latency.as_deref()),
            None => Vec::new(),
        })
    }

    pub fn timeline(&self) -> Timeline {
        if self.shows.policy_comparison {
            return super::write_path::timeline();
        }
        match (self.scenario, &self.tiny, &self.steady) {
            (Scenario::Tiny, Ok(tiny), _) => Timeline { marks: tiny.spans.marks(), end: tiny.spans.end },
            (Scenario::Steady | Scenario::Random, _, Ok(steady)) => {
                Timeline { marks: steady.batches.iter().map(|batch| batch.start).collect(), end: steady.end }
            }
            _ => Timeline::empty(),
        }
    }
}

fn run_tiny(policy: CorePolicy) -> Result<TinyCommit, String> {
    let (setup, arrivals) = commit::tiny_store_setup(Config::file(policy));
    let run = commit::run(&setup, &arrivals).map_err(|error| error.to_string())?;
    let trace = run.trace.as_ref().ok_or("the simulator kept no trace")?;
    Ok(TinyCommit { spans: TraceSpans::from_trace(trace), summary: run.summary, trace: trace.clone() })
}

fn steady_arrivals(params: &LabParams, rate_per_s: u64, writes_max: u64) -> Arrivals {
    let span = params.sync_latency.0.saturating_mul(STEADY_SYNCS);
    let count = (u128::from(rate_per_s) * u128::from(span) / 1_000_000_000) as u64;
    let count = count.clamp(STEADY_WRITES_MIN, writes_max);
    match params.scenario {
        Scenario::Random => Arrivals::Poisson { rate_per_s, count, seed: params.seed },
        _ => Arrivals::Even { rate_per_s, count },
    }
}

fn steady_setup(params: &LabParams, policy: CorePolicy, keep: Keep, measured: Option<&MeasuredLatency>) -> CommitSetup {
    let mut setup = CommitSetup {
        record_bytes: STEADY_RECORD_BYTES,
        seed: params.seed,
        keep,
        ..CommitSetup::new(Config::file(policy), params.sync_latency)
    };
    if let Some(measured) = measured {
        setup.sync_latency = measured.model.clone();
    }
    setup
}

fn run_steady(params: &LabParams, policy: CorePolicy, measured: Option<&MeasuredLatency>) -> Result<SteadyCommit, String> {
    let keep = Keep { writes: true, batches: true, trace: false };
    let setup = steady_setup(params, policy, keep, measured);
    let arrivals = steady_arrivals(params, params.load_per_second, STEADY_WRITES_MAX);
    let run = commit::run(&setup, &arrivals).map_err(|error| error.to_string())?;
    let end = run
        .writes
        .iter()
        .filter_map(|write| write.ack.or(write.durable))
        .chain(run.batches.iter().filter_map(|batch| batch.end))
        .max()
        .unwrap_or(Nanos::ZERO);
    let steady_state = steady_window(&run.writes, &run.batches);
    Ok(SteadyCommit { rate_per_s: params.load_per_second, writes: run.writes, batches: run.batches, summary: run.summary, steady_state, end })
}

/// One policy's steady run, for the policy comparison's table: the whole run and its steady state.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PolicySteady {
    pub summary: Summary,
    /// `None` when the run has too few syncs to leave out its first and last.
    pub steady: Option<SteadyWindow>,
}

fn run_steady_summary(params: &LabParams, policy: CorePolicy, measured: Option<&MeasuredLatency>) -> Result<PolicySteady, String> {
    let keep = Keep { writes: true, batches: true, trace: false };
    let setup = steady_setup(params, policy, keep, measured);
    let arrivals = steady_arrivals(params, params.load_per_second, STEADY_WRITES_MAX);
    let run = commit::run(&setup, &arrivals).map_err(|error| error.to_string())?;
    Ok(PolicySteady { summary: run.summary, steady: steady_window(&run.writes, &run.batches) })
}

/// Mean wait and syncs a second against load, for the three sync-first policies. Sync
/// per write is left out above 1 / L, where its queue grows without bound and a mean
/// wait only measures how long the run lasted.
fn sweep(params: &LabParams, measured: Option<&MeasuredLatency>) -> Vec<SweepPoint> {
    let ceiling_per_s = 1e9 / params.sync_latency.0.max(1) as f64;
    let mut points = Vec::new();
    for page_policy in [PolicyKind::PerWrite, PolicyKind::Group, PolicyKind::Window] {
        for rate in SWEEP_LOADS {
            if page_policy == PolicyKind::PerWrite && rate as f64 >= ceiling_per_s {
                continue;
            }
            let setup = steady_setup(params, core_policy(page_policy, params.window), Keep::SUMMARY, measured);
            let arrivals = steady_arrivals(params, rate, SWEEP_WRITES_MAX);
            if let Ok(run) = commit::run(&setup, &arrivals) {
                let summary = run.summary;
                points.push(SweepPoint {
                    policy: page_policy,
                    rate_per_s: rate,
                    wait_mean_ms: summary.wait_mean().as_millis_f64(),
                    wait_max_ms: summary.wait_max.as_millis_f64(),
                    syncs_per_s: summary.syncs_per_s(),
                    batch_mean: summary.batch_mean(),
                });
            }
        }
    }
    points
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::url_state::parse_query;

    const LOAD_SWEEP: CommitShows = CommitShows { policy_comparison: false, load_sweep: true };
    const POLICY_COMPARISON: CommitShows = CommitShows { policy_comparison: true, load_sweep: false };

    #[test]
    fn the_tiny_store_under_group_commit_takes_14_syncs() {
        let model = CommitModel::build(&parse_query("").0, None, LOAD_SWEEP);
        let tiny = model.tiny.as_ref().unwrap();
        assert_eq!(tiny.summary.syncs, tiny.spans.batches.len() as u64);
        let batch_11 = tiny.spans.batches.iter().find(|batch| batch.id == 11).unwrap();
        assert_eq!((batch_11.first_write, batch_11.writes), (18, 3));
        // Every write is acknowledged when its batch's sync ends.
        for write in &tiny.spans.writes {
            let batch = tiny.spans.batches.iter().find(|batch| (batch.first_write..batch.first_write + batch.writes).contains(&write.id)).unwrap();
            assert_eq!(write.ack, batch.end);
        }
    }

    #[test]
    fn phases_follow_the_trace() {
        use super::super::trace_view::Phase;
        let model = CommitModel::build(&parse_query("").0, None, LOAD_SWEEP);
        let spans = &model.tiny.as_ref().unwrap().spans;
        let write_4 = 3;
        assert_eq!(spans.phase_at(write_4, Nanos::from_micros(1_000)), Phase::NotYet);
        assert_eq!(spans.phase_at(write_4, Nanos::from_micros(1_500)), Phase::Queued);
        let ack = spans.writes[write_4].ack.unwrap();
        assert_eq!(spans.phase_at(write_4, ack), Phase::Acked);
    }

    #[test]
    fn steady_load_batches_grow_to_about_rate_times_latency() {
        let model = CommitModel::build(&parse_query("scenario=steady").0, None, LOAD_SWEEP);
        let steady = model.steady.as_ref().unwrap();
        let summary = steady.summary;
        let batch_mean = summary.batch_mean();
        assert!(batch_mean > 80.0 && batch_mean < 120.0, "batch mean {batch_mean}");
        let half = steady.at(Nanos(steady.end.0 / 2));
        assert!(half.in_flight > 0);
        assert!(half.acked > 0);
        assert!(!steady.batch_size_counts().is_empty());
    }

    #[test]
    fn batch_sizes_are_drawn_as_at_most_ten_bars_that_count_every_batch() {
        for query in ["scenario=random&policy=window", "scenario=random", "scenario=steady&load=1000"] {
            let model = CommitModel::build(&parse_query(query).0, None, LOAD_SWEEP);
            let steady = model.steady.as_ref().unwrap();
            let bars = steady.batch_size_counts();
            assert!(!bars.is_empty() && bars.len() as u64 <= SIZE_BINS_MAX, "{query}: {bars:?}");
            assert_eq!(bars.iter().map(|(_, count)| count).sum::<u64>(), steady.batches.len() as u64, "{query}");
        }
        let random = CommitModel::build(&parse_query("scenario=random&policy=window").0, None, LOAD_SWEEP);
        let bars = random.steady.as_ref().unwrap().batch_size_counts();
        assert!(bars.iter().any(|(_, count)| *count > 1), "random arrivals' sizes fall into shared ranges: {bars:?}");
        assert!(bars.iter().all(|(label, _)| label.contains('-')), "{bars:?}");
        let steady = CommitModel::build(&parse_query("scenario=steady&load=1000").0, None, LOAD_SWEEP);
        assert_eq!(steady.steady.as_ref().unwrap().batch_size_counts()[0].0, "1", "one write a batch at 1,000/s");
    }

    #[test]
    fn the_steady_state_at_100k_writes_a_second_is_the_pages_figure() {
        let model = CommitModel::build(&parse_query("scenario=steady&load=100000").0, None, LOAD_SWEEP);
        let steady = model.steady.as_ref().unwrap();
        let window = steady.steady_state.unwrap();
        assert_eq!(format!("{:.0}", window.syncs_per_s), "1000");
        assert_eq!(format!("{:.1}", window.writes_per_sync), "100.0");
        assert_eq!(format!("{:.0}", window.bytes_per_sync), "10000");
        assert_eq!(format!("{:.0}", window.in_flight_mean), "150");
        assert_eq!(format!("{:.2}", window.wait_mean.as_millis_f64()), "1.50");
        assert_eq!(format!("{:.1}", window.wait_max.as_millis_f64()), "2.0");
        // The whole run, warm-up included, is what the page showed before.
        assert!(steady.summary.batch_mean() < 99.0);
    }

    #[test]
    fn the_policy_comparisons_verdicts_agree_with_their_rows() {
        let at = |load: u64| {
            let model = CommitModel::build(&parse_query(&format!("load={load}")).0, None, POLICY_COMPARISON);
            let (_, summary) = model.steady_by_policy.iter().find(|(policy, _)| *policy == PolicyKind::PerWrite).unwrap();
            let summary = summary.as_ref().unwrap().summary;
            (keeps_up(&summary, model.sync_latency, Nanos::ZERO), summary.wait_mean(), model.per_write_queue)
        };
        let (ok, wait, queue) = at(1_000);
        assert!(ok, "1,000 writes/s at L = 1 ms: each waits {wait:?}");
        assert_eq!(wait, Nanos::from_millis(1));
        assert!(queue.iter().all(|(_, waiting)| *waiting <= 1), "{queue:?}");
        let (ok, _, queue) = at(5_000);
        assert!(!ok);
        assert!(queue.last().unwrap().1 > queue[queue.len() / 2].1, "the queue grows: {queue:?}");
    }

    #[test]
    fn the_policy_comparisons_rows_add_up_in_the_steady_state() {
        let row = |load: u64, policy: PolicyKind| {
            let model = CommitModel::build(&parse_query(&format!("load={load}")).0, None, POLICY_COMPARISON);
            let (_, run) = model.steady_by_policy.iter().find(|(each, _)| *each == policy).unwrap();
            let steady = run.as_ref().unwrap().steady.unwrap();
            (format!("{:.0}", steady.syncs_per_s), format!("{:.1}", steady.writes_per_sync))
        };
        assert_eq!(row(100_000, PolicyKind::Group), ("1000".to_string(), "100.0".to_string()));
        assert_eq!(row(100_000, PolicyKind::Window), ("500".to_string(), "200.0".to_string()));
        assert_eq!(row(100, PolicyKind::PerWrite), ("100".to_string(), "1.0".to_string()));
    }

    #[test]
    fn the_sweep_leaves_sync_per_write_out_above_its_ceiling() {
        let model = CommitModel::build(&parse_query("").0, None, LOAD_SWEEP);
        assert!(model
            .sweep()
            .iter()
            .filter(|point| point.policy == PolicyKind::PerWrite)
            .all(|point| point.rate_per_s < 1_000));
        let group: Vec<&SweepPoint> = model.sweep().iter().filter(|point| point.policy == PolicyKind::Group).collect();
        assert_eq!(group.len(), SWEEP_LOADS.len());
    }
}
