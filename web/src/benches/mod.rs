//! What each Part's bench plays, computed from the core's runs.
//!
//! This is the layer between the core and the components. When the Part or a parameter
//! changes, the reducer calls [`build`], which runs the core for the current parameters
//! and keeps the result as plain values (a trace, batch spans, chart samples). The
//! components draw those values at the player's instant; no component computes an
//! outcome itself, and nothing here touches the browser, so it is all tested natively.

use std::rc::Rc;

use walab_core::time::Nanos;

use crate::url_state::LabParams;

pub mod append;
pub mod captions;
pub mod chain;
pub mod commit;
pub mod dropped;
pub mod trace_reader;
pub mod trace_summary;
pub mod failed_sync_view;
pub mod fates;
pub mod group_steps;
pub mod journey;
pub mod live;
pub mod models;
pub mod moments;
#[cfg(test)]
mod never_panics;
pub mod pages_view;
pub mod quorum_view;
pub mod recap;
pub mod remote;
pub mod remote_trace;
pub mod remote_upload;
pub mod segments;
pub mod tiny;
pub mod torn;
pub mod trace_view;
pub mod write_path;

/// The instants at which a bench's picture changes, and where its run ends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Timeline {
    pub marks: Vec<Nanos>,
    pub end: Nanos,
}

impl Timeline {
    pub fn empty() -> Timeline {
        Timeline { marks: Vec::new(), end: Nanos::ZERO }
    }
}

/// A Part's computed bench.
#[derive(Debug)]
pub enum Bench {
    /// Text-only Parts and Parts whose bench needs no run.
    Still,
    /// Part 4's append steps.
    Append,
    /// Part 5: group commit over the tiny store or a steady load.
    Commit(commit::CommitBench),
    /// Part 2: wal-1's first writes, event by event.
    Journey(Result<journey::JourneyBench, String>),
    /// Parts 3, 6, 7, 8: the tiny store on the simulated device.
    Tiny(tiny::TinyBench),
    Redo(models::RedoBench),
    Quorum(models::QuorumBench),
    Budget(models::BudgetBench),
    /// Parts 13 and 14: the stream store's WAL on S3 and in Postgres.
    Remote(remote::RemoteBench),
    /// A trace file dropped onto the page.
    Dropped(Rc<dropped::DroppedTrace>),
}

impl Bench {
    pub fn timeline(&self) -> Timeline {
        match self {
            Bench::Still => Timeline::empty(),
            Bench::Append => append::timeline(),
            Bench::Commit(bench) => bench.timeline(),
            Bench::Journey(Ok(bench)) => bench.timeline(),
            Bench::Journey(Err(_)) => Timeline::empty(),
            Bench::Tiny(bench) => bench.timeline(),
            Bench::Redo(bench) => bench.timeline(),
            Bench::Quorum(bench) => bench.timeline(),
            Bench::Budget(_) => Timeline::empty(),
            Bench::Remote(bench) => bench.timeline(),
            Bench::Dropped(trace) => trace.timeline(),
        }
    }
}

/// A shared, immutable bench. Two handles are equal when they are the same run, so
/// re-rendering a component with the same bench costs nothing.
#[derive(Clone, Debug)]
pub struct BenchRef(pub Rc<Bench>);

impl PartialEq for BenchRef {
    fn eq(&self, other: &Self) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }
}

impl Default for BenchRef {
    fn default() -> Self {
        BenchRef(Rc::new(Bench::Still))
    }
}

/// Runs the core for the Part and parameters; while a trace file is loaded, the Part
/// that plays it draws the file instead (Part 5 a commit trace, Part 13 or 14 a trace of
/// `walab sim remote` on its backend).
pub fn build(
    params: &LabParams,
    dropped: Option<&dropped::Dropped>,
    latency: Option<&Rc<dropped::MeasuredLatency>>,
) -> BenchRef {
    match dropped {
        Some(dropped::Dropped::Commit(trace)) if params.part == 5 => {
            return BenchRef(Rc::new(Bench::Dropped(trace.clone())));
        }
        Some(dropped::Dropped::Remote(remote)) if params.part == remote.part() => {
            return BenchRef(Rc::new(Bench::Remote(remote::RemoteBench::from_trace(&params.remote, params.seed, remote.clone()))));
        }
        _ => {}
    }
    let bench = match params.part {
        4 => Bench::Append,
        0 | 5 => Bench::Commit(commit::CommitBench::build(params, latency.cloned())),
        2 => Bench::Journey(journey::JourneyBench::build(params)),
        3 | 6 | 7 | 8 => Bench::Tiny(tiny::TinyBench::build(params)),
        9 => Bench::Redo(models::RedoBench::build(params)),
        10 => Bench::Quorum(models::QuorumBench::build(params)),
        11 | 12 => Bench::Budget(models::BudgetBench::build(params)),
        remote::OBJECT_STORE_PART | remote::POSTGRES_PART => {
            Bench::Remote(remote::RemoteBench::build(params.part, &params.remote, params.seed))
        }
        _ => Bench::Still,
    };
    BenchRef(Rc::new(bench))
}
