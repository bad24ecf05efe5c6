//! What an event costs, computed from a run: the stream store's durability table and the
//! Postgres timeline table, as something to trigger at a chosen instant.

use super::{RemoteBackend, RemoteRun};
use crate::remote::layout::{plan_chain, Session, WalObject};
use crate::ring::{self, Severity, TimelineVerdict};
use crate::time::Nanos;

/// A Postgres WAL's standby, if it has one (assumed in another zone).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Standby {
    None,
    /// Replays the primary's commits `lag` late.
    Asynchronous {
        lag: Nanos,
    },
    /// Named in `synchronous_standby_names`: a commit returns once the standby has it.
    Synchronous,
}

/// Something that goes wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WalEvent {
    /// The node running the stream store crashes or restarts.
    NodeCrash,
    /// The Postgres server crashes and restarts on the same disk (`fsync = on`).
    PostgresCrash,
    /// The Postgres primary's host is lost; a standby (if any) is promoted.
    PrimaryHostLost,
    /// A whole availability zone is lost.
    ZoneLost,
}

/// What an event did to the records acknowledged before it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventLoss {
    /// False when the event does not apply to the backend (a Postgres crash for S3).
    pub applicable: bool,
    pub acked: u64,
    /// Acknowledged records that recovery does not bring back, by number.
    pub lost: Vec<u64>,
}

/// The records acknowledged by `at` that survive `event` at `at`, and those that do not.
/// `single_zone_bucket`: the object store keeps the WAL in one zone (S3 Express One Zone).
pub fn event_loss(
    run: &RemoteRun,
    event: WalEvent,
    at: Nanos,
    standby: Standby,
    single_zone_bucket: bool,
) -> EventLoss {
    let acked: Vec<u64> = run.acked_by(at).map(|record| record.record).collect();
    let applicable = match (run.backend, event) {
        (RemoteBackend::S3, WalEvent::PostgresCrash | WalEvent::PrimaryHostLost) => false,
        _ => true,
    };
    if !applicable {
        return EventLoss {
            applicable,
            acked: acked.len() as u64,
            lost: Vec::new(),
        };
    }
    let kept = match run.backend {
        RemoteBackend::S3 => {
            if event == WalEvent::ZoneLost && single_zone_bucket {
                Vec::new()
            } else {
                s3_recovered(run, at)
            }
        }
        RemoteBackend::Postgres => {
            let survives = |committed: Nanos| match (event, standby) {
                (WalEvent::NodeCrash | WalEvent::PostgresCrash, _) => true,
                (WalEvent::PrimaryHostLost | WalEvent::ZoneLost, Standby::Synchronous) => true,
                (WalEvent::PrimaryHostLost | WalEvent::ZoneLost, Standby::Asynchronous { lag }) => {
                    committed + lag <= at
                }
                (WalEvent::PrimaryHostLost | WalEvent::ZoneLost, Standby::None) => false,
            };
            postgres_kept(run, at, survives)
        }
    };
    let lost = acked
        .iter()
        .copied()
        .filter(|record| kept.binary_search(record).is_err())
        .collect();
    EventLoss {
        applicable,
        acked: acked.len() as u64,
        lost,
    }
}

/// Node A's log as a new owner would recover it at `at`: a LIST of what is stored, planned
/// by the same `plan_chain` the native backend runs.
fn s3_recovered(run: &RemoteRun, at: Nanos) -> Vec<u64> {
    let listed: Vec<WalObject> = run
        .stored_by(at)
        .map(|batch| WalObject {
            epoch: batch.epoch,
            start: batch.first_offset,
            end: batch.end_offset,
        })
        .collect();
    let sessions = [Session {
        epoch: super::OWNER_EPOCH,
        start_offset: 0,
        first_seq: 1,
    }];
    let plan = plan_chain(&listed, &sessions);
    let mut records: Vec<u64> = plan
        .chain
        .iter()
        .filter_map(|object| {
            run.batches
                .iter()
                .find(|batch| batch.first_offset == object.start && batch.epoch == object.epoch)
        })
        .flat_map(|batch| batch.first_record..batch.first_record + batch.records)
        .collect();
    crate::sort::sort(&mut records);
    records
}

/// The records a Postgres WAL still has after an event at `at`: everything already
/// uploaded below the trim offset, then the committed rows that `survives` keeps, in log
/// order up to the first that it does not (the chain stops at the first gap).
fn postgres_kept(run: &RemoteRun, at: Nanos, survives: impl Fn(Nanos) -> bool) -> Vec<u64> {
    let trim_offset = trim_offset_at(run, at);
    let mut records = Vec::new();
    for batch in &run.batches {
        let committed = batch.stored.filter(|&stored| stored <= at);
        let uploaded = batch.end_offset <= trim_offset;
        if !(uploaded || committed.is_some_and(&survives)) {
            break;
        }
        records.extend(batch.first_record..batch.first_record + batch.records);
    }
    crate::sort::sort(&mut records);
    records
}

/// How far the upload had trimmed the ring by `at`: every record below it is in data objects.
fn trim_offset_at(run: &RemoteRun, at: Nanos) -> u64 {
    run.trims
        .iter()
        .filter(|trim| trim.at <= at)
        .map(|trim| trim.trim_offset)
        .max()
        .unwrap_or(0)
}

/// The Postgres timeline at a restart, against the one recorded at the last start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimelineCase {
    /// A normal restart.
    Equal,
    /// The database was restored from a backup taken at `backup_at`.
    Lower { backup_at: Nanos },
    /// A synchronous standby was promoted.
    HigherSynchronous,
    /// An asynchronous standby `lag` behind was promoted.
    HigherAsynchronous { lag: Nanos },
}

/// What a restart at `at` finds.
///
/// The counts tell one story, true at every instant: of the `acked` records,
/// `past_database` are not in the restarted database's rows (committed after the backup
/// point, or after the promoted standby's last replayed commit); `past_database_uploaded`
/// of those were already in data objects below the trim offset, so recovery reads them from
/// there; the rest of them are `lost`, together with any record the database still holds
/// but that sits past the first gap the scan stops at (`lost_past_gap`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RestartOutcome {
    pub verdict: TimelineVerdict,
    pub severity: Severity,
    pub acked: u64,
    pub past_database: u64,
    pub past_database_uploaded: u64,
    pub lost_past_gap: u64,
    pub lost: Vec<u64>,
}

/// The timeline verdict ([`ring::timeline_verdict`], the native backend's) and the
/// acknowledged records the restarted database no longer holds.
pub fn restart_after(run: &RemoteRun, case: TimelineCase, at: Nanos) -> RestartOutcome {
    const RECORDED: u32 = 2;
    let (current, synchronous) = match case {
        TimelineCase::Equal => (RECORDED, false),
        TimelineCase::Lower { .. } => (RECORDED - 1, false),
        TimelineCase::HigherSynchronous => (RECORDED + 1, true),
        TimelineCase::HigherAsynchronous { .. } => (RECORDED + 1, false),
    };
    let verdict = ring::timeline_verdict(Some(RECORDED), current, synchronous);
    let survives = |committed: Nanos| match case {
        TimelineCase::Equal | TimelineCase::HigherSynchronous => true,
        TimelineCase::Lower { backup_at } => committed <= backup_at,
        TimelineCase::HigherAsynchronous { lag } => committed + lag <= at,
    };
    let kept = postgres_kept(run, at, survives);
    let trim_offset = trim_offset_at(run, at);
    let (mut acked, mut past_database, mut past_database_uploaded, mut lost_past_gap) = (0, 0, 0, 0);
    let mut lost = Vec::new();
    for record in run.acked_by(at) {
        acked += 1;
        let number = record.record;
        let batch = record
            .batch
            .and_then(|n| run.batches.iter().find(|b| b.batch == n));
        let in_database = batch.is_some_and(|b| b.stored.is_some_and(|s| s <= at && survives(s)));
        let uploaded = batch.is_some_and(|b| b.end_offset <= trim_offset);
        let recovered = kept.binary_search(&number).is_ok();
        if !in_database {
            past_database += 1;
            past_database_uploaded += u64::from(uploaded && recovered);
        } else if !recovered {
            lost_past_gap += 1;
        }
        if !recovered {
            lost.push(number);
        }
    }
    debug_assert_eq!(
        lost.len() as u64,
        past_database - past_database_uploaded + lost_past_gap
    );
    RestartOutcome {
        severity: verdict.severity(),
        verdict,
        acked,
        past_database,
        past_database_uploaded,
        lost_past_gap,
        lost,
    }
}
