//! Part 5 (and Part 0's arithmetic): group commit run by the core's simulator.
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
use super::trace_view::TraceSpans;
use super::Timeline;
use crate::url_state::{LabParams, Policy, Scenario};

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
pub fn core_policy(policy: Policy, window: Nanos) -> CorePolicy {
    match policy {
        Policy::GroupCommit => CorePolicy::Group,
        Policy::SyncPerWrite => CorePolicy::PerWrite,
        Policy::Window if window > Nanos::ZERO => CorePolicy::Window { window },
        Policy::Window => CorePolicy::Group,
        Policy::NoSync => CorePolicy::NoSync,
    }
}

/// The tiny store's run.
#[derive(Debug)]
pub struct TinyCommit {
    pub spans: TraceSpans,
    pub summary: Summary,
}

/// A steady-load run.
#[derive(Debug)]
pub struct SteadyCommit {
    pub rate_per_s: u64,
    pub writes: Vec<WriteRecord>,
    pub batches: Vec<BatchRecord>,
    pub summary: Summary,
    pub end: Nanos,
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
    pub fn batch_size_counts(&self) -> Vec<(u64, u64)> {
        let largest = self.batches.iter().map(|batch| batch.writes).max().unwrap_or(0);
        (1..=largest)
            .map(|size| (size, self.batches.iter().filter(|batch| batch.writes == size).count() as u64))
            .filter(|(_, count)| *count > 0)
            .collect()
    }
}

/// One point of the load sweep.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SweepPoint {
    pub policy: Policy,
    pub rate_per_s: u64,
    pub wait_mean_ms: f64,
    pub wait_max_ms: f64,
    pub syncs_per_s: f64,
    pub batch_mean: f64,
}

#[derive(Debug)]
pub struct CommitBench {
    pub scenario: Scenario,
    pub policy: Policy,
    pub sync_latency: Nanos,
    pub tiny: Result<TinyCommit, String>,
    pub steady: Result<SteadyCommit, String>,
    pub sweep: Vec<SweepPoint>,
    /// The same steady load under the other policies (for Part 0's comparison).
    pub steady_by_policy: Vec<(Policy, Result<Summary, String>)>,
    /// The measured latency the steady runs and the sweep used, if one was loaded.
    pub latency: Option<Rc<MeasuredLatency>>,
}

impl CommitBench {
    pub fn build(params: &LabParams, latency: Option<Rc<MeasuredLatency>>) -> CommitBench {
        let policy = core_policy(params.policy, params.window);
        let tiny = run_tiny(policy);
        let measured = latency.as_deref();
        let steady = run_steady(params, policy, measured);
        let steady_by_policy = [Policy::SyncPerWrite, Policy::GroupCommit, Policy::Window]
            .into_iter()
            .map(|page_policy| {
                let summary = run_steady_summary(params, core_policy(page_policy, params.window), measured);
                (page_policy, summary)
            })
            .collect();
        let sweep = if params.part == 5 { sweep(params, measured) } else { Vec::new() };
        CommitBench {
            scenario: params.scenario,
            policy: params.policy,
            sync_latency: params.sync_latency,
            tiny,
            steady,
            sweep,
            steady_by_policy,
            latency,
        }
    }

    pub fn timeline(&self) -> Timeline {
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
    Ok(TinyCommit { spans: TraceSpans::from_trace(trace), summary: run.summary })
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
    Ok(SteadyCommit { rate_per_s: params.load_per_second, writes: run.writes, batches: run.batches, summary: run.summary, end })
}

fn run_steady_summary(params: &LabParams, policy: CorePolicy, measured: Option<&MeasuredLatency>) -> Result<Summary, String> {
    let setup = steady_setup(params, policy, Keep::SUMMARY, measured);
    let arrivals = steady_arrivals(params, params.load_per_second, STEADY_WRITES_MAX);
    commit::run(&setup, &arrivals).map(|run| run.summary).map_err(|error| error.to_string())
}

/// Mean wait and syncs a second against load, for the three sync-first policies. Sync
/// per write is left out above 1 / L, where its queue grows without bound and a mean
/// wait only measures how long the run lasted.
fn sweep(params: &LabParams, measured: Option<&MeasuredLatency>) -> Vec<SweepPoint> {
    let ceiling_per_s = 1e9 / params.sync_latency.0.max(1) as f64;
    let mut points = Vec::new();
    for page_policy in [Policy::SyncPerWrite, Policy::GroupCommit, Policy::Window] {
        for rate in SWEEP_LOADS {
            if page_policy == Policy::SyncPerWrite && rate as f64 >= ceiling_per_s {
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

    #[test]
    fn the_tiny_store_under_group_commit_takes_14_syncs() {
        let bench = CommitBench::build(&parse_query("part=5").0, None);
        let tiny = bench.tiny.as_ref().unwrap();
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
        let bench = CommitBench::build(&parse_query("part=5").0, None);
        let spans = &bench.tiny.as_ref().unwrap().spans;
        let write_4 = 3;
        assert_eq!(spans.phase_at(write_4, Nanos::from_micros(1_000)), Phase::NotYet);
        assert_eq!(spans.phase_at(write_4, Nanos::from_micros(1_500)), Phase::Queued);
        let ack = spans.writes[write_4].ack.unwrap();
        assert_eq!(spans.phase_at(write_4, ack), Phase::Acked);
    }

    #[test]
    fn steady_load_batches_grow_to_about_rate_times_latency() {
        let bench = CommitBench::build(&parse_query("part=5&scenario=steady").0, None);
        let steady = bench.steady.as_ref().unwrap();
        let summary = steady.summary;
        let batch_mean = summary.batch_mean();
        assert!(batch_mean > 80.0 && batch_mean < 120.0, "batch mean {batch_mean}");
        let half = steady.at(Nanos(steady.end.0 / 2));
        assert!(half.in_flight > 0);
        assert!(half.acked > 0);
        assert!(!steady.batch_size_counts().is_empty());
    }

    #[test]
    fn the_sweep_leaves_sync_per_write_out_above_its_ceiling() {
        let bench = CommitBench::build(&parse_query("part=5").0, None);
        assert!(bench
            .sweep
            .iter()
            .filter(|point| point.policy == Policy::SyncPerWrite)
            .all(|point| point.rate_per_s < 1_000));
        let group: Vec<&SweepPoint> = bench.sweep.iter().filter(|point| point.policy == Policy::GroupCommit).collect();
        assert_eq!(group.len(), SWEEP_LOADS.len());
    }
}
