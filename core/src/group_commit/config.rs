//! The machine's settings: the commit policy (and the names the CLI, the page and traces
//! share for it), the bounds, pipelining and the cohort hold, checked before a machine
//! is made.

use std::fmt;

use crate::time::Nanos;

/// When writers are acknowledged, and what gathers them into batches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case", tag = "policy"))]
pub enum Policy {
    /// One persist per record, acknowledged after it.
    PerWrite,
    /// Leader/follower group commit: a batch forms whenever a persist slot is free.
    Group,
    /// A batch closes `window` after its first record or at `batch_bytes_max`.
    Window { window: Nanos },
    /// Acknowledge once the bytes are handed to the OS; never sync.
    NoSync,
    /// Acknowledge once handed to the OS; sync in the background every `interval`.
    Periodic { interval: Nanos },
}

impl Policy {
    /// True when a writer is acknowledged only after its record is durable.
    pub fn syncs_before_ack(&self) -> bool {
        matches!(self, Policy::PerWrite | Policy::Group | Policy::Window { .. })
    }

    /// Which policy this is, without its setting.
    pub fn kind(&self) -> PolicyKind {
        match self {
            Policy::PerWrite => PolicyKind::PerWrite,
            Policy::Group => PolicyKind::Group,
            Policy::Window { .. } => PolicyKind::Window,
            Policy::NoSync => PolicyKind::NoSync,
            Policy::Periodic { .. } => PolicyKind::Periodic,
        }
    }
}

/// A [`Policy`] without its setting (the window, the interval): the one vocabulary the
/// CLI's `--policy`, the page's `policy=` and a trace's `policy` share.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PolicyKind {
    PerWrite,
    Group,
    Window,
    NoSync,
    Periodic,
}

impl PolicyKind {
    /// Every policy, in the order the CLI lists them.
    pub const ALL: [PolicyKind; 5] =
        [PolicyKind::Group, PolicyKind::PerWrite, PolicyKind::Window, PolicyKind::NoSync, PolicyKind::Periodic];

    /// The name a flag, a URL and a trace use.
    pub fn name(self) -> &'static str {
        match self {
            PolicyKind::PerWrite => "per-write",
            PolicyKind::Group => "group",
            PolicyKind::Window => "window",
            PolicyKind::NoSync => "no-sync",
            PolicyKind::Periodic => "periodic",
        }
    }

    /// The name a reader sees in a table or on the page.
    pub fn label(self) -> &'static str {
        match self {
            PolicyKind::PerWrite => "sync per write",
            PolicyKind::Group => "group commit",
            PolicyKind::Window => "window",
            PolicyKind::NoSync => "no sync before OK",
            PolicyKind::Periodic => "periodic sync",
        }
    }

    pub fn from_name(name: &str) -> Option<PolicyKind> {
        PolicyKind::ALL.into_iter().find(|kind| kind.name() == name)
    }
}

/// The machine's settings. [`Config::file`] gives the machine's defaults (the teaching
/// page's file); what each storage gets instead is chosen in
/// [`crate::session::preset`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Config {
    pub policy: Policy,
    /// Batches persisting at the same time (1 for a file, 4 for S3 and Postgres).
    pub inflight_max: usize,
    /// A batch closes rather than grow past this many bytes.
    pub batch_bytes_max: usize,
    /// Bytes appended but not yet durable; an append that would exceed it is refused.
    /// Applies to the policies that sync before acknowledging.
    pub unflushed_bytes_max: usize,
    /// Appends waiting for their acknowledgement; one more is refused.
    pub waiters_max: usize,
    /// [`Policy::Group`] with a batch already persisting: the next one starts only once
    /// it holds this many records (or is closed full). With none persisting a batch
    /// starts at once, whatever it holds. 0 (the default): start whenever a slot is
    /// free. An object store charges per request, so its WAL pipelines only batches worth
    /// a request of their own: at low concurrency it then keeps one upload in flight
    /// and lets the next batch gather, at high concurrency it fills every slot.
    #[cfg_attr(feature = "serde", serde(default))]
    pub pipeline_min_records: u64,
    /// [`Policy::Group`] with batches persisting: the next one starts beside them only
    /// once it holds this percent of the records they carry together (and
    /// [`Config::pipeline_min_records`]). The load decides a batch's size: when many
    /// writers wait, a persist carries them instead of a slot's worth, so closed-loop
    /// writers share fewer, larger batches rather than one per slot, and the requests per
    /// record fall as the load grows. A lone batch still starts at once, and a batch
    /// closed full (`batch_bytes_max`) does not wait. 0 (the default): only
    /// `pipeline_min_records` counts.
    #[cfg_attr(feature = "serde", serde(default, skip_serializing_if = "super::schedule::is_zero"))]
    pub pipeline_running_percent: u32,
    /// [`Policy::Group`] with batches persisting: the next one starts beside them only
    /// once it holds this percent of the records that arrived while the last persist to
    /// complete was running, that is a round trip's worth at the arrival rate that
    /// persist measured ([`schedule::RoundTrip`]). At 100 a batch beside running ones is
    /// worth a persist of its own when it has gathered for about a round trip: under a
    /// steady load one persist is in flight and the next starts as it ends, so a record
    /// waits at most about one extra round trip and the persists per second stay near one
    /// per round trip however many writers wait; a persist that runs long (or a burst of
    /// arrivals) lets the next start beside it, so the wait stays bounded. A lone batch
    /// still starts at once, and a batch closed full does not wait. 0 (the default): off.
    #[cfg_attr(feature = "serde", serde(default, skip_serializing_if = "super::schedule::is_zero"))]
    pub pipeline_round_trip_percent: u32,
    /// Whether the driver can persist a batch on its own thread, blocking until it is
    /// durable (a local file's `fdatasync`). The machine then marks the batches for
    /// which that costs nothing as [`Batch::inline`] ([`schedule::persists_inline`]);
    /// every other batch is persisted off the driver's thread. False for storage that
    /// answers asynchronously (an object store, a database).
    #[cfg_attr(feature = "serde", serde(default, skip_serializing_if = "super::schedule::is_false"))]
    pub inline_persists: bool,
    /// [`Policy::Window`] only: a batch that can start at once does not wait out its
    /// window. Whenever a persist slot is free the open batch starts, as
    /// [`Policy::Group`]'s would (with [`Config::pipeline_min_records`] beside running
    /// ones); the window bounds a batch's gathering only while every slot is busy. The
    /// Postgres WAL's `batch_interval`: a window is worth waiting for when the inserts
    /// are backed up, not when a connection sits idle.
    #[cfg_attr(feature = "serde", serde(default, skip_serializing_if = "super::schedule::is_false"))]
    pub window_only_when_busy: bool,
    /// Merge the writers' cohorts ([`schedule::CohortHold`]): when an acknowledgement
    /// answers k writers and fewer than k / 2 records wait behind it, the batch that would
    /// start next waits, even with a slot free, until k more records have been appended
    /// or for at most this percent of the answered persist's duration, whichever comes
    /// first. Closed-loop writers otherwise
    /// split into cohorts that take turns: a batch starts the instant a sync ends, before
    /// the writers it just answered have appended again, so each of them waits out the
    /// sync then running and then its own. 0 (the default): off.
    #[cfg_attr(feature = "serde", serde(default, skip_serializing_if = "super::schedule::is_zero"))]
    pub cohort_hold_percent: u32,
}

impl Config {
    /// The machine's defaults, a local log file: one sync at a time, 1 MiB batches,
    /// 128 MiB unflushed, no pipelining, no cohort hold.
    pub const fn file(policy: Policy) -> Config {
        Config {
            policy,
            inflight_max: 1,
            batch_bytes_max: 1 << 20,
            unflushed_bytes_max: 128 << 20,
            waiters_max: 1 << 20,
            pipeline_min_records: 0,
            pipeline_running_percent: 0,
            pipeline_round_trip_percent: 0,
            inline_persists: false,
            window_only_when_busy: false,
            cohort_hold_percent: 0,
        }
    }

    /// Checks every setting; a machine is only built from a valid config.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.inflight_max == 0 {
            return Err(ConfigError::InflightMaxZero);
        }
        if self.batch_bytes_max == 0 {
            return Err(ConfigError::BatchBytesMaxZero);
        }
        if self.unflushed_bytes_max < self.batch_bytes_max {
            return Err(ConfigError::UnflushedBelowBatch);
        }
        if self.waiters_max == 0 {
            return Err(ConfigError::WaitersMaxZero);
        }
        match self.policy {
            Policy::Window { window } if window == Nanos::ZERO => Err(ConfigError::WindowZero),
            Policy::Periodic { interval } if interval == Nanos::ZERO => Err(ConfigError::IntervalZero),
            _ => Ok(()),
        }
    }
}

/// A setting that makes no sense.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigError {
    InflightMaxZero,
    BatchBytesMaxZero,
    UnflushedBelowBatch,
    WaitersMaxZero,
    WindowZero,
    IntervalZero,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ConfigError::InflightMaxZero => "inflight_max must be at least 1",
            ConfigError::BatchBytesMaxZero => "batch_bytes_max must be at least 1",
            ConfigError::UnflushedBelowBatch => "unflushed_bytes_max must be at least batch_bytes_max",
            ConfigError::WaitersMaxZero => "waiters_max must be at least 1",
            ConfigError::WindowZero => "the window must be longer than zero",
            ConfigError::IntervalZero => "the sync interval must be longer than zero",
        })
    }
}

impl std::error::Error for ConfigError {}
