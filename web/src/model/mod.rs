//! What each Part's model plays, computed from the core's runs.
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
pub mod redo_quorum_budget;
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

/// The instants at which a model's picture changes, and where its run ends.
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

/// A Part's computed model.
#[derive(Debug)]
pub enum Model {
    /// Text-only Parts and Parts whose model needs no run.
    Still,
    /// Part 4's append steps.
    Append,
    /// Part 5: group commit over the tiny store or a steady load.
    Commit(commit::CommitModel),
    /// Part 2: wal-1's first writes, event by event.
    Journey(Result<journey::JourneyModel, String>),
    /// Parts 3, 6, 7, 8: the tiny store on the simulated device.
    Tiny(tiny::TinyModel),
    Redo(redo_quorum_budget::RedoModel),
    Quorum(redo_quorum_budget::QuorumModel),
    Budget(redo_quorum_budget::BudgetModel),
    /// Parts 13 and 14: the stream store's WAL on S3 and in Postgres.
    Remote(remote::RemoteModel),
    /// A trace file dropped onto the page.
    Dropped(Rc<dropped::DroppedTrace>),
}

impl Model {
    pub fn timeline(&self) -> Timeline {
        match self {
            Model::Still => Timeline::empty(),
            Model::Append => append::timeline(),
            Model::Commit(model) => model.timeline(),
            Model::Journey(Ok(model)) => model.timeline(),
            Model::Journey(Err(_)) => Timeline::empty(),
            Model::Tiny(model) => model.timeline(),
            Model::Redo(model) => model.timeline(),
            Model::Quorum(model) => model.timeline(),
            Model::Budget(_) => Timeline::empty(),
            Model::Remote(model) => model.timeline(),
            Model::Dropped(trace) => trace.timeline(),
        }
    }
}

/// A shared, immutable model. Two handles are equal when they are the same run, so
/// re-rendering a component with the same model costs nothing.
#[derive(Clone, Debug)]
pub struct ModelRef(pub Rc<Model>);

impl PartialEq for ModelRef {
    fn eq(&self, other: &Self) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }
}

impl Default for ModelRef {
    fn default() -> Self {
        ModelRef(Rc::new(Model::Still))
    }
}

/// Runs the core for the Part and parameters; while a trace file is loaded, the Part
/// that plays it draws the file instead (Part 5 a commit trace, Part 13 or 14 a trace of
/// `walab sim remote` on its backend).
pub fn build(
    params: &LabParams,
    dropped: Option<&dropped::Dropped>,
    latency: Option<&Rc<dropped::MeasuredLatency>>,
) -> ModelRef {
    match dropped {
        Some(dropped::Dropped::Commit(trace)) if params.part == 5 => {
            return ModelRef(Rc::new(Model::Dropped(trace.clone())));
        }
        Some(dropped::Dropped::Remote(remote)) if params.part == remote.part() => {
            return ModelRef(Rc::new(Model::Remote(remote::RemoteModel::from_trace(&params.remote, params.seed, remote.clone()))));
        }
        _ => {}
    }
    let model = match params.part {
        4 => Model::Append,
        0 | 5 => Model::Commit(commit::CommitModel::build(params, latency.cloned())),
        2 => Model::Journey(journey::JourneyModel::build(params)),
        3 | 6 | 7 | 8 => Model::Tiny(tiny::TinyModel::build(params)),
        9 => Model::Redo(redo_quorum_budget::RedoModel::build(params)),
        10 => Model::Quorum(redo_quorum_budget::QuorumModel::build(params)),
        11 | 12 => Model::Budget(redo_quorum_budget::BudgetModel::build(params)),
        remote::OBJECT_STORE_PART | remote::POSTGRES_PART => {
            Model::Remote(remote::RemoteModel::build(params.part, &params.remote, params.seed))
        }
        _ => Model::Still,
    };
    ModelRef(Rc::new(model))
}
