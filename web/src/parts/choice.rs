//! What each Part runs: the one place a Part's number chooses a view model, the runs it
//! asks for and the Part a dropped file opens. `crate::model` knows no Part; it is asked
//! for runs by what they show.

use std::rc::Rc;

use walab_core::sim::remote::RemoteBackend;

use crate::model::commit::{CommitModel, CommitShows};
use crate::model::dropped::{Dropped, DroppedKind, MeasuredLatency};
use crate::model::journey::JourneyModel;
use crate::model::recap::Topic;
use crate::model::redo_quorum_budget::{BudgetModel, QuorumModel, RedoModel};
use crate::model::remote::RemoteModel;
use crate::model::tiny::{TinyModel, TinyShows};
use crate::model::{Model, ModelRef};
use crate::url_state::LabParams;

/// The Part that plays a commit trace and takes a measured latency: group commit.
pub const COMMIT_PART: u8 = 5;
/// The WAL with no local disk on an object store.
pub const OBJECT_STORE_PART: u8 = 13;
/// The WAL in Postgres.
pub const POSTGRES_PART: u8 = 14;

/// The remote backend a Part runs, if it runs one.
pub fn remote_backend(part: u8) -> Option<RemoteBackend> {
    match part {
        OBJECT_STORE_PART => Some(RemoteBackend::S3),
        POSTGRES_PART => Some(RemoteBackend::Postgres),
        _ => None,
    }
}

/// Whether a Part takes dropped files in its own chapter (the page's footer offers the
/// drop zone everywhere else).
pub fn drops_in_chapter(part: u8) -> bool {
    part == COMMIT_PART || remote_backend(part).is_some()
}

/// The Part that plays a dropped file of this kind.
pub fn part_of_dropped(kind: DroppedKind) -> u8 {
    match kind {
        DroppedKind::CommitTrace | DroppedKind::Latency => COMMIT_PART,
        DroppedKind::Remote(RemoteBackend::S3) => OBJECT_STORE_PART,
        DroppedKind::Remote(RemoteBackend::Postgres) => POSTGRES_PART,
    }
}

/// The Part a recap stop opens.
pub fn part_of_topic(topic: Topic) -> u8 {
    match topic {
        Topic::SyncsPerSecond => 0,
        Topic::Chain => 1,
        Topic::OneSync => 2,
        Topic::FailedSync => 3,
        Topic::RecordHeader => 4,
        Topic::GroupCommit => COMMIT_PART,
        Topic::PowerCut => 6,
        Topic::TornTail => 7,
        Topic::Retention => 8,
        Topic::Redo => 9,
        Topic::Quorum => 10,
        Topic::AwsBudget => 11,
        Topic::ObjectStore => OBJECT_STORE_PART,
        Topic::Postgres => POSTGRES_PART,
    }
}

/// The commit runs a Part draws: Part 0 compares the policies, Part 5 sweeps the load.
pub fn commit_shows(part: u8) -> CommitShows {
    CommitShows { policy_comparison: part == 0, load_sweep: part == COMMIT_PART }
}

/// The tiny store's runs a Part draws: Part 3 both handlings of the failed sync, Part 6
/// every mode at the cut, Part 7 the recovery scan, Part 8 opens on its last OK.
pub fn tiny_shows(part: u8) -> TinyShows {
    TinyShows { failed_sync_paths: part == 3, modes_at_cut: part == 6, recovery_scan: part == 7, opens_on_last_ack: part == 8 }
}

/// Runs the core for the Part and parameters; while a trace file is loaded, the Part
/// that plays it draws the file instead (group commit a commit trace, the remote Part of
/// its backend a trace of `walab sim remote`).
pub fn build(params: &LabParams, dropped: Option<&Dropped>, latency: Option<&Rc<MeasuredLatency>>) -> ModelRef {
    match dropped {
        Some(Dropped::Commit(trace)) if params.part == COMMIT_PART => {
            return ModelRef(Rc::new(Model::Dropped(trace.clone())));
        }
        Some(Dropped::Remote(remote)) if remote_backend(params.part) == Some(remote.backend()) => {
            return ModelRef(Rc::new(Model::Remote(RemoteModel::from_trace(&params.remote, params.seed, remote.clone()))));
        }
        _ => {}
    }
    let model = match params.part {
        4 => Model::Append,
        0 | COMMIT_PART => Model::Commit(CommitModel::build(params, latency.cloned(), commit_shows(params.part))),
        2 => Model::Journey(JourneyModel::build(params)),
        3 | 6 | 7 | 8 => Model::Tiny(TinyModel::build(params, tiny_shows(params.part))),
        9 => Model::Redo(RedoModel::build(params)),
        10 => Model::Quorum(QuorumModel::build(params)),
        11 | 12 => Model::Budget(BudgetModel::build(params, params.part == 12)),
        part => match remote_backend(part) {
            Some(backend) => Model::Remote(RemoteModel::build(backend, &params.remote, params.seed)),
            None => Model::Still,
        },
    };
    ModelRef(Rc::new(model))
}
