//! The view models: the core's runs turned into the values a figure draws.
//!
//! This is the layer between the core and the components. When the Part or a parameter
//! changes, the reducer asks `crate::parts::choice` which model the Part runs; the
//! model runs the core for the current parameters and keeps the result as plain values
//! (a trace, batch spans, chart samples). The components draw those values at the
//! player's instant; no component computes an outcome itself, and nothing here touches
//! the browser, so it is all tested natively. Nothing here knows a Part's number: a view
//! asks for runs by what they show (`CommitShows`, `TinyShows`).

use std::rc::Rc;

use walab_core::time::Nanos;

pub mod append;
pub mod captions;
pub mod chain;
pub mod commit;
pub mod dropped;
pub mod failed_sync_view;
pub mod fates;
pub mod group_steps;
pub mod journey;
pub mod live;
pub mod moments;
pub mod pages_view;
pub mod quorum_view;
pub mod recap;
pub mod redo_quorum_budget;
pub mod remote;
pub mod remote_trace;
pub mod remote_upload;
pub mod segments;
pub mod tiny;
pub mod torn;
pub mod trace_reader;
pub mod trace_summary;
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

/// A view's computed model.
#[derive(Debug)]
pub enum Model {
    /// Text-only views and views whose model needs no run.
    Still,
    /// The append procedure's steps.
    Append,
    /// Group commit over the tiny store or a steady load.
    Commit(commit::CommitModel),
    /// wal-1's first writes, event by event.
    Journey(Result<journey::JourneyModel, String>),
    /// The tiny store on the simulated device.
    Tiny(tiny::TinyModel),
    Redo(redo_quorum_budget::RedoModel),
    Quorum(redo_quorum_budget::QuorumModel),
    Budget(redo_quorum_budget::BudgetModel),
    /// The stream store's WAL on S3 and in Postgres.
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
