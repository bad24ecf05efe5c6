//! What each storage gets from the group-commit machine unless a user says otherwise.
//!
//! The machine has one set of settings ([`Config`]); which values suit a log depends on
//! what persists it. They are chosen here, once per storage, and every driver (the native
//! WAL's backends, the simulators of those backends) asks for them here:
//!
//! - [`Storage::SimulatedFile`]: the teaching page's file. One sync at a time, no
//!   pipelining, no cohort hold: the figures of Part 5 are group commit in its plainest
//!   form.
//! - [`Storage::LocalFile`]: the native file WAL. Its driver may block in `fdatasync`
//!   itself, so the machine marks the batches it syncs inline ([`Config::inline_persists`]);
//!   with sync threads started (`--inflight 2` and more) a batch starts beside a running
//!   sync only once it holds [`LOCAL_FILE_PIPELINE_MIN_RECORDS`], and the cohort hold is
//!   on ([`LOCAL_FILE_COHORT_HOLD_PERCENT`]). The in-flight count is the sync threads the
//!   backend actually started, never a wish, so the inline marks and the backend agree.
//! - [`Storage::ObjectStore`]: one PUT per batch, [`OBJECT_STORE_INFLIGHT`] uploads in
//!   flight, a batch beside another only once it holds [`OBJECT_STORE_PIPELINE_MIN_RECORDS`]
//!   (a PUT is billed per request, and costs a round trip whatever it carries), and the
//!   cohort hold at [`OBJECT_STORE_COHORT_HOLD_PERCENT`]. Behind `walab serve` a batch
//!   also gathers for [`OBJECT_STORE_BEHIND_HTTP_PIPELINE_ROUND_TRIP_PERCENT`] of a round
//!   trip (the server asks for it as a [`Tuning`]; the preset, `walab bench` and the
//!   simulators keep it off).
//! - [`Storage::PostgresRing`]: the URL's settings (`batch_interval` as a window that is
//!   waited out only while every connection is busy, `max_bytes_in_batch`, `inflight`,
//!   `max_unflushed_bytes`), no cohort hold unless asked for.
//!
//! [`Tuning`] is what a user may change on top (`--inflight`, `--cohort-hold`, the
//! object store's `pipeline_min=`, `--pipeline-running`, `--pipeline-round-trip`,
//! `--per-write`), applied in [`Storage::config`] and nowhere else.
//!
//! Why each number is what it is:
//!
//! - A lone file writer's record syncs inline, with no thread hop, and a second sync
//!   starts only for a batch worth a sync of its own: two records.
//! - The file WAL's hold lasts at most one sync: a hold that runs out costs the waiting
//!   writers no more than the extra sync the cohort split it undoes would have. Half a
//!   sync was too short on a busy two-core machine (BENCHMARKS.md, the file WAL's cohorts).
//! - On an object store one upload in flight lets the next batch gather at low
//!   concurrency, and at high concurrency every slot fills; the hold of a tenth of a
//!   round trip turns 64 writers' two batches of 32 beside each other into one PUT
//!   (BENCHMARKS.md, the S3 WAL's cohort hold).

use crate::group_commit::{Config, Policy};
use crate::ring::PgWalSettings;

/// The native file WAL: the fewest records a group batch needs to start syncing beside
/// a running sync, and the size below which a batch after a batch as small is synced
/// inline ([`crate::group_commit::schedule::persists_inline`]).
pub const LOCAL_FILE_PIPELINE_MIN_RECORDS: u64 = 2;

/// The native file WAL's cohort hold: at most this percent of the sync that answered
/// the writers it waits for.
pub const LOCAL_FILE_COHORT_HOLD_PERCENT: u32 = 100;

/// The native file WAL's bytes per segment (and the object-store WAL's per trim unit)
/// unless `--segment-bytes` says otherwise: big enough that switches are rare, small
/// enough that the zero-fill of the next segment finishes in the background.
pub const LOCAL_SEGMENT_BYTES: u64 = 16 << 20;

/// The native file WAL's syncs at once unless `--inflight` says otherwise: one, every
/// batch synced inline on the driver. With the cohort hold every writer rides one sync,
/// so a second would have nothing to overlap, and a sync on the driver saves the two
/// thread hops a sync thread costs each batch.
pub const LOCAL_FILE_INFLIGHT: usize = 1;

/// The object-store WAL: the fewest records a batch needs to be uploaded beside another
/// upload (with none in flight a batch goes at once, whatever it holds).
pub const OBJECT_STORE_PIPELINE_MIN_RECORDS: u64 = 32;

/// The object-store WAL's uploads in flight.
pub const OBJECT_STORE_INFLIGHT: usize = 4;

/// The object-store WAL's cohort hold: after an upload answers k writers with fewer
/// than k / 2 records waiting, the next batch waits for them for at most this percent of
/// that upload's round trip.
pub const OBJECT_STORE_COHORT_HOLD_PERCENT: u32 = 10;

/// The object-store WAL behind `walab serve`: a batch is worth an upload once it has
/// gathered for one and a half round trips ([`Config::pipeline_round_trip_percent`],
/// [`crate::group_commit::schedule::pipeline_min`]). Behind HTTP the writers an upload
/// answered come back spread over the server's work for each of them (tens of
/// milliseconds for 1,024 on two cores), longer than the cohort hold, so with only
/// [`OBJECT_STORE_PIPELINE_MIN_RECORDS`] every free slot sent whoever had come back: four
/// uploads in flight at 1,024 producers, 0.0048 requests per message against s2-lite's
/// 0.0020 (a PUT every 50 ms). At 100 (a round trip's worth) one upload is in flight and
/// the PUTs per second are one per round trip, near s2-lite's cost per message only
/// because walab answers more messages a second; at 150 they fall to two per three round
/// trips (0.0017 at 1,024 producers, quiet), a record waits at most half a round trip
/// more, and the hold that goes with it merges 64 producers into one PUT per round trip
/// where 100 let them split into cohorts taking turns (p50 69 ms against 35 to 37);
/// 200 took the p99 at 1,024 producers within 5% of s2-lite's (BENCHMARKS.md). The bare
/// WAL's writers (`walab bench`, the simulator) append again at once and the cohort hold
/// already merges them, so the preset itself leaves it off.
pub const OBJECT_STORE_BEHIND_HTTP_PIPELINE_ROUND_TRIP_PERCENT: u32 = 150;

/// The Postgres WAL's cohort hold: off (its window already gathers the writers).
pub const POSTGRES_COHORT_HOLD_PERCENT: u32 = 0;

/// The Postgres ring's trims are at least this far apart while no batch waits for its
/// slot ([`crate::session::RingLayout::trim_pause`]). A trim's `UPDATE` of the node row
/// waits for every insert holding the row `FOR SHARE` and holds back the next inserts
/// until its own commit is flushed, so each trim costs the appenders about one commit's
/// latency; a few a second keep a busy consumer's cost small (at 20 ms apart it was
/// measurable at 64 appenders: BENCHMARKS.md). A full ring trims at once.
pub const POSTGRES_TRIM_PAUSE: crate::time::Nanos = crate::time::Nanos(250_000_000);

/// The storages a log session runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Storage {
    /// The teaching page's simulated file (and the tiny store's log).
    SimulatedFile,
    /// The native file WAL, with the sync threads its backend started (0 or 1: none).
    LocalFile { sync_threads: usize },
    /// An object store: one PUT per batch.
    ObjectStore,
    /// A Postgres ring of slot tables, with the settings of its URL.
    PostgresRing(PgWalSettings),
}

/// What a user may set on top of a storage's preset; `None` keeps the preset's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tuning {
    /// The policy (`--per-write` for the object store; a test's deliberately unsafe
    /// no-sync log).
    pub policy: Option<Policy>,
    /// Batches persisting at once (`--inflight`). Not for [`Storage::LocalFile`], whose
    /// count is its sync threads, nor [`Storage::PostgresRing`], whose is its URL's
    /// `inflight`.
    pub inflight_max: Option<usize>,
    /// `--cohort-hold`: percent of the answered persist (0: off).
    pub cohort_hold_percent: Option<u32>,
    /// Records a batch holds before it starts beside a running one (`pipeline_min=`).
    pub pipeline_min_records: Option<u64>,
    /// `--pipeline-running`: percent of the running batches' records a batch holds
    /// before it starts beside them (0: off).
    pub pipeline_running_percent: Option<u32>,
    /// `--pipeline-round-trip`: percent of a round trip a batch gathers for (0: off;
    /// `walab serve` on an object store:
    /// [`OBJECT_STORE_BEHIND_HTTP_PIPELINE_ROUND_TRIP_PERCENT`]).
    pub pipeline_round_trip_percent: Option<u32>,
}

impl Tuning {
    /// Only the policy.
    pub fn policy(policy: Policy) -> Tuning {
        Tuning { policy: Some(policy), ..Tuning::default() }
    }
}

impl Storage {
    /// The storage's preset with `tuning` applied.
    pub fn config(&self, tuning: &Tuning) -> Config {
        let preset = self.preset(tuning.policy);
        let inflight_max = match self {
            Storage::SimulatedFile | Storage::ObjectStore => tuning.inflight_max.unwrap_or(preset.inflight_max),
            Storage::LocalFile { .. } | Storage::PostgresRing(_) => preset.inflight_max,
        };
        Config {
            inflight_max,
            cohort_hold_percent: tuning.cohort_hold_percent.unwrap_or(preset.cohort_hold_percent),
            pipeline_min_records: tuning.pipeline_min_records.unwrap_or(preset.pipeline_min_records),
            pipeline_running_percent: tuning.pipeline_running_percent.unwrap_or(preset.pipeline_running_percent),
            pipeline_round_trip_percent: tuning.pipeline_round_trip_percent.unwrap_or(preset.pipeline_round_trip_percent),
            ..preset
        }
    }

    fn preset(&self, policy: Option<Policy>) -> Config {
        let policy_or = |default: Policy| policy.unwrap_or(default);
        match *self {
            Storage::SimulatedFile => Config::file(policy_or(Policy::Group)),
            Storage::LocalFile { sync_threads } => {
                let syncs = sync_threads.max(1);
                Config {
                    inflight_max: syncs,
                    pipeline_min_records: if syncs > 1 { LOCAL_FILE_PIPELINE_MIN_RECORDS } else { 0 },
                    inline_persists: true,
                    cohort_hold_percent: LOCAL_FILE_COHORT_HOLD_PERCENT,
                    ..Config::file(policy_or(Policy::Group))
                }
            }
            Storage::ObjectStore => Config {
                inflight_max: OBJECT_STORE_INFLIGHT,
                pipeline_min_records: OBJECT_STORE_PIPELINE_MIN_RECORDS,
                cohort_hold_percent: OBJECT_STORE_COHORT_HOLD_PERCENT,
                ..Config::file(policy_or(Policy::Group))
            },
            Storage::PostgresRing(settings) => Config {
                inflight_max: settings.inflight_max,
                batch_bytes_max: settings.batch_bytes_max as usize,
                unflushed_bytes_max: settings.unflushed_bytes_max as usize,
                // A batch that can start at once (a connection is idle) does not wait out
                // the window: it is worth waiting for only while the inserts are backed up.
                window_only_when_busy: true,
                cohort_hold_percent: POSTGRES_COHORT_HOLD_PERCENT,
                ..Config::file(policy_or(Policy::Window { window: settings.batch_interval }))
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_native_storages_hold_for_cohorts() {
        for sync_threads in [0, 1, 2] {
            let config = Storage::LocalFile { sync_threads }.config(&Tuning::default());
            assert_eq!(config.cohort_hold_percent, LOCAL_FILE_COHORT_HOLD_PERCENT);
            assert!(config.inline_persists);
        }
        assert_eq!(Storage::SimulatedFile.config(&Tuning::default()).cohort_hold_percent, 0, "the page's figures");
        assert_eq!(Storage::ObjectStore.config(&Tuning::default()).cohort_hold_percent, OBJECT_STORE_COHORT_HOLD_PERCENT);
        let postgres = Storage::PostgresRing(PgWalSettings::default()).config(&Tuning::default());
        assert_eq!(postgres.cohort_hold_percent, 0);
        assert_eq!(postgres.policy, Policy::Window { window: PgWalSettings::default().batch_interval });
    }

    #[test]
    fn the_file_wal_runs_as_many_syncs_as_it_has_threads_whatever_is_asked() {
        let asked = Tuning { inflight_max: Some(8), ..Tuning::default() };
        assert_eq!(Storage::LocalFile { sync_threads: 1 }.config(&asked).inflight_max, 1);
        let threads = Storage::LocalFile { sync_threads: 2 }.config(&asked);
        assert_eq!((threads.inflight_max, threads.pipeline_min_records), (2, LOCAL_FILE_PIPELINE_MIN_RECORDS));
    }

    #[test]
    fn a_tuning_replaces_only_what_it_names() {
        let tuning = Tuning { inflight_max: Some(16), cohort_hold_percent: Some(0), ..Tuning::policy(Policy::PerWrite) };
        let config = Storage::ObjectStore.config(&tuning);
        assert_eq!(config.policy, Policy::PerWrite);
        assert_eq!((config.inflight_max, config.cohort_hold_percent), (16, 0));
        assert_eq!(config.pipeline_min_records, OBJECT_STORE_PIPELINE_MIN_RECORDS);
    }
}
