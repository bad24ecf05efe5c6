//! A WAL with no local disk, simulated: the stream store's log in an object store (one
//! PUT per batch) or in Postgres (one committed INSERT per batch, in a ring of slot
//! tables), driven by the same decisions the native backends make.
//!
//! # What is real and what is simulated
//!
//! Every decision comes from the code the native `walab` runs:
//!
//! - which records form a batch, how many batches are in flight (`inflight_max`), when a
//!   writer is acknowledged (in submission order), which segment a record goes to: a
//!   [`crate::session::Session`] around the group-commit machine, with the storage's
//!   preset ([`crate::session::preset`]: the object store's group commit with its
//!   pipelining threshold and cohort hold, or the Postgres ring's batch interval);
//! - where a batch's object goes and which objects recovery keeps after a takeover: the
//!   keys, the registration and [`crate::remote::layout::plan_chain`];
//! - which slot table a batch goes to, when it must wait for its slot, what the trim
//!   releases, what recovery reads back, the timeline verdict: [`crate::ring`].
//!
//! What is simulated is only what the network and the servers do: how long a request
//! takes (a fixed latency, a named [`LatencyProfile`], or a measured distribution), and
//! the faults a student or a test injects at chosen requests: a slow PUT, a failed PUT
//! (on Postgres: an INSERT whose answer is lost, retried and compared), a takeover by a
//! second node at a chosen instant, and a stalled upload that stops the trim so the
//! Postgres ring fills.
//!
//! # The model's simplifications
//!
//! - The object store is strongly consistent (S3, R2, GCS and MinIO are): an object is
//!   listed from the instant its PUT returns.
//! - Every request takes its own draw of the request latency: a PUT, the fence read
//!   after it (the native backend's HEAD of the registration; a batch is reported stored
//!   only when it answers, and it sees the registration as it is at that answer), and
//!   node B's takeover on the object store, which is four requests one after another:
//!   the conditional PUT that claims the registration (epoch + 1), its read-back, the
//!   LIST (which sees every object stored by its answer) and the PUT that records B's
//!   session. The fence reads and B's requests draw from their own generator, so the
//!   PUTs' draws do not depend on them. On Postgres B's takeover is two requests: the
//!   claim, whose `UPDATE` of the node row waits for the inserts that hold the row `FOR
//!   SHARE` (those running at `takeover_at`) and then takes its draw, and the recovery
//!   scan of the ring after it; every insert A starts after `takeover_at` finds no row
//!   with its epoch and writes nothing.
//!   Node B appends nothing in the run; what matters is what it recovers.
//! - The background upload of sealed blocks to data objects bounds the write path only
//!   on Postgres, where it is simulated as confirming the records acknowledged so far
//!   every `trim_every`, which moves the trim offset and truncates released slots; a
//!   stall stops it. On the object store it never holds an append back, so [`upload`]
//!   runs it after the WAL's run, sealing blocks with the stream store's own seal.
//!
//! # Determinism
//!
//! Latency draws and Poisson arrivals come from one seeded [`crate::rng::Rng`] each, and
//! the run is [`crate::sim::clock`]'s loop, which feeds the inputs of one instant in a
//! fixed order (requests landing and the takeover, then what the machine hears and the
//! trim, then arrivals, then the window's timeout), so a setup and a seed give the same
//! run on every target.

mod driver;
mod outcomes;
mod trace;
pub mod upload;

pub use driver::run;
pub use trace::{from_trace, to_trace, FromTraceError};
pub use outcomes::{
    event_loss, restart_after, EventLoss, RestartOutcome, Standby, TimelineCase, WalEvent,
};

use crate::group_commit::{Config, Policy};
use crate::remote::layout::{Ignored, WalObject};
use crate::ring::{self, PgWalSettings, RingGeometry};
use crate::session::preset::{Storage, Tuning};
use crate::sim::commit::Arrivals;
use crate::sim::SyncLatency;
use crate::time::Nanos;

/// Where the WAL lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
pub enum RemoteBackend {
    /// One object per batch, its key carrying the writer's epoch.
    S3,
    /// One row per batch in the ring of slot tables, fenced per insert.
    Postgres,
}

impl RemoteBackend {
    pub fn name(&self) -> &'static str {
        match self {
            RemoteBackend::S3 => "s3",
            RemoteBackend::Postgres => "postgres",
        }
    }

    pub fn parse(text: &str) -> Option<RemoteBackend> {
        match text {
            "s3" => Some(RemoteBackend::S3),
            "postgres" => Some(RemoteBackend::Postgres),
            _ => None,
        }
    }
}

/// Request latencies to choose from, by name. The numbers are ranges a draw is uniform
/// in, from these sources: S3 Standard "tens of milliseconds" per round trip (the stream
/// store's documentation); S3 Express One Zone "consistent single-digit millisecond"
/// request latency, "up to 10x faster than S3 Standard" (AWS, "Optimizing S3 Express One
/// Zone performance", docs.aws.amazon.com/AmazonS3/latest/userguide/s3-express-performance.html);
/// a Postgres commit "a millisecond or two" (the stream store's documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LatencyProfile {
    /// 20 to 40 ms.
    S3Standard,
    /// 2 to 8 ms.
    S3Express,
    /// 1 to 2 ms.
    Postgres,
}

impl LatencyProfile {
    pub const ALL: [LatencyProfile; 3] = [
        LatencyProfile::S3Standard,
        LatencyProfile::S3Express,
        LatencyProfile::Postgres,
    ];

    pub fn name(&self) -> &'static str {
        match self {
            LatencyProfile::S3Standard => "s3-standard",
            LatencyProfile::S3Express => "s3-express",
            LatencyProfile::Postgres => "postgres",
        }
    }

    pub fn parse(text: &str) -> Option<LatencyProfile> {
        LatencyProfile::ALL
            .into_iter()
            .find(|profile| profile.name() == text)
    }

    pub fn latency(&self) -> SyncLatency {
        let (min, max) = match self {
            LatencyProfile::S3Standard => (20, 40),
            LatencyProfile::S3Express => (2, 8),
            LatencyProfile::Postgres => (1, 2),
        };
        SyncLatency::Uniform {
            min: Nanos::from_millis(min),
            max: Nanos::from_millis(max),
        }
    }

    /// The profile a backend runs with when none is chosen.
    pub fn default_for(backend: RemoteBackend) -> LatencyProfile {
        match backend {
            RemoteBackend::S3 => LatencyProfile::S3Standard,
            RemoteBackend::Postgres => LatencyProfile::Postgres,
        }
    }
}

/// S3 Standard's published price per 1,000 PUT, COPY, POST or LIST requests in
/// us-east-1, in millionths of a dollar: $0.005 (aws.amazon.com/s3/pricing/).
pub const S3_STANDARD_PUT_MICRODOLLARS_PER_1000: u64 = 5_000;

/// Dollars the PUTs of a million appends cost at `puts_per_record`.
pub fn put_bill_per_million_appends(puts_per_record: f64) -> f64 {
    puts_per_record * 1_000_000.0 / 1000.0 * S3_STANDARD_PUT_MICRODOLLARS_PER_1000 as f64
        / 1_000_000.0
}

/// Who appends, and when.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Load {
    /// Closed loop: each writer appends its next record once its last is acknowledged.
    Writers { writers: u64 },
    /// Open loop: records arrive at `rate_per_s`, evenly spaced or as a Poisson process.
    Rate { rate_per_s: u64, poisson: bool },
}

/// The first epoch of the run's owner (node A). A takeover claims the next one.
pub const OWNER_EPOCH: u64 = 5;
/// Bytes of a record's key (the rest of `record_bytes` is value and framing).
pub const RECORD_KEY_BYTES: usize = 8;
/// Records one run simulates at most.
pub const RECORDS_MAX: u64 = 1_000_000;
/// Closed-loop writers at most.
pub const WRITERS_MAX: u64 = 100_000;
/// The smallest and largest record.
pub const RECORD_BYTES_MIN: u32 = 32;
pub const RECORD_BYTES_MAX: u32 = 60_000;

/// One run's parameters. [`RemoteSetup::new`] gives the defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteSetup {
    pub backend: RemoteBackend,
    pub load: Load,
    /// Records to append.
    pub count: u64,
    /// Seeds the latency draws and Poisson arrivals.
    pub seed: u64,
    /// Batches in flight at once (`inflight`).
    pub inflight_max: usize,
    /// `None` on S3: group commit, as the native backend runs it. On Postgres the batch
    /// interval (`batch_interval`, 1 ms by default).
    pub batch_interval: Option<Nanos>,
    pub latency: SyncLatency,
    /// Every record's size in bytes (a tiny-store record with an 8-byte key).
    pub record_bytes: u32,
    /// PUT (or INSERT) number k, from 1, takes this long instead of a draw.
    pub slow_puts: Vec<(u64, Nanos)>,
    /// PUT number k fails (on Postgres: its answer is lost; it is retried and compared).
    pub fail_put: Option<u64>,
    /// Node B claims the node at this instant.
    pub takeover_at: Option<Nanos>,
    /// The Postgres ring.
    pub ring: RingGeometry,
    /// The Postgres WAL's background upload confirms what was acknowledged this often.
    pub trim_every: Nanos,
    /// The upload stalls from `.0` until `.1` (no trims in between).
    pub upload_stall: Option<(Nanos, Nanos)>,
    /// S3: node A reads the registration after every PUT and reports the batch stored
    /// only when that read answers (`fence=read`, a second round trip per batch). Off, a
    /// batch is reported stored when its PUT returns, as under `walab serve`'s lease
    /// (`fence=lease`, renewed in the background, off the acknowledgement path). The
    /// lease's other half, a new owner waiting it out before it lists, is not simulated,
    /// so a run with a takeover reads the fence whatever this says.
    pub fence_read: bool,
}

impl RemoteSetup {
    pub fn new(backend: RemoteBackend, load: Load, count: u64) -> RemoteSetup {
        RemoteSetup {
            backend,
            load,
            count,
            seed: 1,
            inflight_max: ring::INFLIGHT_MAX_DEFAULT,
            batch_interval: match backend {
                RemoteBackend::S3 => None,
                RemoteBackend::Postgres => Some(ring::BATCH_INTERVAL_DEFAULT),
            },
            latency: LatencyProfile::default_for(backend).latency(),
            record_bytes: 110,
            slow_puts: Vec::new(),
            fail_put: None,
            takeover_at: None,
            ring: RingGeometry::default(),
            trim_every: Nanos::from_millis(50),
            upload_stall: None,
            fence_read: true,
        }
    }

    /// Whether node A reads the fence after each PUT in this run: asked for, or a takeover
    /// is in it ([`RemoteSetup::fence_read`]).
    pub fn reads_fence(&self) -> bool {
        self.fence_read || self.takeover_at.is_some()
    }

    /// The group-commit machine's settings: the storage's preset
    /// ([`crate::session::preset`]), as the native backend runs it.
    pub fn machine_config(&self) -> Config {
        match self.backend {
            RemoteBackend::S3 => {
                let policy = self.batch_interval.map_or(Policy::Group, |window| Policy::Window { window });
                let tuning = Tuning { policy: Some(policy), inflight_max: Some(self.inflight_max), ..Tuning::default() };
                Storage::ObjectStore.config(&tuning)
            }
            RemoteBackend::Postgres => {
                let tuning = Tuning { policy: self.batch_interval.is_none().then_some(Policy::Group), ..Tuning::default() };
                Storage::PostgresRing(self.postgres_settings()).config(&tuning)
            }
        }
    }

    /// The Postgres URL's settings this run stands for. A batch never exceeds half a
    /// segment (the default 1 MiB in a 64 MiB one), and the bytes in flight must fit the
    /// ring (its capacity exceeds `max_unflushed_bytes`): a small ring gets small batches.
    pub fn postgres_settings(&self) -> PgWalSettings {
        let defaults = PgWalSettings::default();
        let batch_bytes_max = defaults.batch_bytes_max.min((self.ring.segment_bytes / 2).max(1));
        let unflushed_bytes_max = defaults
            .unflushed_bytes_max
            .min(self.ring.capacity_bytes().saturating_sub(1))
            .max(batch_bytes_max);
        PgWalSettings {
            geometry: self.ring,
            batch_interval: self.batch_interval.unwrap_or(defaults.batch_interval),
            batch_bytes_max,
            inflight_max: self.inflight_max,
            unflushed_bytes_max,
            ..defaults
        }
    }

    pub fn validate(&self) -> Result<(), RemoteError> {
        if self.count == 0 {
            return Err(RemoteError::CountZero);
        }
        if self.count > RECORDS_MAX {
            return Err(RemoteError::CountTooLarge { count: self.count });
        }
        match self.load {
            Load::Writers { writers } if writers == 0 || writers > WRITERS_MAX => {
                return Err(RemoteError::Writers { writers })
            }
            Load::Rate { rate_per_s: 0, .. } => return Err(RemoteError::RateZero),
            _ => {}
        }
        if self.inflight_max == 0 || self.inflight_max > ring::INFLIGHT_MAX_LIMIT {
            return Err(RemoteError::Inflight {
                inflight_max: self.inflight_max,
            });
        }
        if matches!(self.batch_interval, Some(interval) if interval == Nanos::ZERO || interval > ring::BATCH_INTERVAL_MAX)
        {
            return Err(RemoteError::BatchInterval);
        }
        if !self.latency.is_positive() {
            return Err(RemoteError::LatencyZero);
        }
        if !(RECORD_BYTES_MIN..=RECORD_BYTES_MAX).contains(&self.record_bytes) {
            return Err(RemoteError::RecordBytes {
                record_bytes: self.record_bytes,
            });
        }
        if self
            .slow_puts
            .iter()
            .any(|&(put, latency)| put == 0 || latency == Nanos::ZERO)
            || self.fail_put == Some(0)
        {
            return Err(RemoteError::PutNumberZero);
        }
        if self.backend == RemoteBackend::Postgres {
            let config = self.machine_config();
            self.ring
                .validate(
                    config.batch_bytes_max as u64,
                    config.unflushed_bytes_max as u64,
                )
                .map_err(|error| RemoteError::Ring(error.to_string()))?;
            if u64::from(self.record_bytes) > self.ring.segment_bytes {
                return Err(RemoteError::Ring(format!(
                    "a record of {} bytes does not fit a segment of {} bytes",
                    self.record_bytes, self.ring.segment_bytes
                )));
            }
            if self.trim_every == Nanos::ZERO {
                return Err(RemoteError::TrimEveryZero);
            }
        }
        self.machine_config()
            .validate()
            .map_err(|error| RemoteError::Ring(error.to_string()))?;
        Ok(())
    }

    fn arrivals(&self) -> Option<Arrivals> {
        match self.load {
            Load::Writers { .. } => None,
            Load::Rate {
                rate_per_s,
                poisson: false,
            } => Some(Arrivals::Even {
                rate_per_s,
                count: self.count,
            }),
            Load::Rate {
                rate_per_s,
                poisson: true,
            } => Some(Arrivals::Poisson {
                rate_per_s,
                count: self.count,
                seed: self.seed,
            }),
        }
    }
}

/// Why a setup cannot run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RemoteError {
    CountZero,
    CountTooLarge { count: u64 },
    Writers { writers: u64 },
    RateZero,
    Inflight { inflight_max: usize },
    BatchInterval,
    LatencyZero,
    RecordBytes { record_bytes: u32 },
    PutNumberZero,
    TrimEveryZero,
    Ring(String),
    /// The run needed more instants than its bound (a bug in the simulator, never an
    /// input problem: the bound counts the inputs a run can have).
    Bound(crate::sim::clock::BoundExceeded),
}

impl core::fmt::Display for RemoteError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            RemoteError::CountZero => {
                f.write_str("no records to append (the count must be at least 1)")
            }
            RemoteError::CountTooLarge { count } => write!(
                f,
                "{count} records is more than a run takes ({RECORDS_MAX})"
            ),
            RemoteError::Writers { writers } => {
                write!(f, "{writers} writers: give 1 to {WRITERS_MAX}")
            }
            RemoteError::RateZero => f.write_str("the rate must be at least 1 record per second"),
            RemoteError::Inflight { inflight_max } => {
                write!(
                    f,
                    "{inflight_max} batches in flight: give 1 to {}",
                    ring::INFLIGHT_MAX_LIMIT
                )
            }
            RemoteError::BatchInterval => {
                f.write_str("the batch interval must be above 0 and at most 10 s")
            }
            RemoteError::LatencyZero => f.write_str("a request latency of zero"),
            RemoteError::RecordBytes { record_bytes } => {
                write!(f, "records of {record_bytes} bytes: give {RECORD_BYTES_MIN} to {RECORD_BYTES_MAX}")
            }
            RemoteError::PutNumberZero => {
                f.write_str("PUTs are numbered from 1, and a slow PUT takes more than 0 ms")
            }
            RemoteError::TrimEveryZero => f.write_str("the upload interval must be above 0"),
            RemoteError::Ring(text) => write!(f, "ring: {text}"),
            RemoteError::Bound(exceeded) => write!(f, "{exceeded}"),
        }
    }
}

impl std::error::Error for RemoteError {}

/// What became of a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
pub enum BatchOutcome {
    /// Stored, and its records acknowledged.
    Acked,
    /// Stored, but its records were never acknowledged (a batch before it failed, or the
    /// check after it found the node taken over): a straggler.
    StoredNotAcked,
    /// The request failed: nothing stored.
    Failed,
    /// Postgres: the insert found no node row with its epoch and wrote nothing.
    Fenced,
}

/// Why a Postgres batch waited before its INSERT (the session's ring admission).
pub use crate::session::ring::RingWait;

/// One batch: one PUT (or one INSERT, two when retried).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct BatchRow {
    /// 1, 2, 3 ... in submission order (read from older JSON as `bulk`).
    #[cfg_attr(feature = "serde", serde(alias = "bulk"))]
    pub batch: u64,
    pub epoch: u64,
    pub records: u64,
    /// The first record's number (records are numbered from 1 in append order).
    pub first_record: u64,
    /// WAL addresses: the object's (S3) or the row's (Postgres) first byte, and just past it.
    pub first_offset: u64,
    pub end_offset: u64,
    /// Postgres: the generation and its slot table.
    pub generation: Option<u64>,
    pub slot: Option<u64>,
    /// The group-commit machine handed the batch out.
    pub formed: Nanos,
    /// The request went out (later than `formed` when a Postgres batch waited).
    pub sent: Option<Nanos>,
    /// The object was stored or the row committed.
    pub stored: Option<Nanos>,
    pub acked: Option<Nanos>,
    pub outcome: Option<BatchOutcome>,
    /// The request's answer came back (stored, failed or fenced).
    pub answered: Option<Nanos>,
    /// The request's number (PUT k, INSERT k).
    pub request: Option<u64>,
    pub waited: Option<RingWait>,
    /// Postgres: the first answer was lost and the retry found the row and compared it.
    pub retried: bool,
    /// S3: the fence read after the PUT answered (the batch is reported stored from then).
    pub checked: Option<Nanos>,
}

impl BatchRow {
    /// A batch the machine just handed out at `formed`: nothing sent, stored or answered
    /// yet. Its place in the log and its records are the caller's to fill in.
    pub fn formed(batch: u64, formed: Nanos) -> BatchRow {
        BatchRow {
            batch,
            epoch: OWNER_EPOCH,
            records: 0,
            first_record: 0,
            first_offset: 0,
            end_offset: 0,
            generation: None,
            slot: None,
            formed,
            sent: None,
            stored: None,
            acked: None,
            outcome: None,
            answered: None,
            request: None,
            waited: None,
            retried: false,
            checked: None,
        }
    }
}

/// One record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct RecordRow {
    pub record: u64,
    pub arrived: Option<Nanos>,
    pub acked: Option<Nanos>,
    #[cfg_attr(feature = "serde", serde(alias = "bulk"))]
    pub batch: Option<u64>,
}

/// A trim of the Postgres ring.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct TrimRow {
    pub at: Nanos,
    pub trim_offset: u64,
    /// Slots truncated by this trim.
    pub truncated_slots: Vec<u64>,
}

/// What the takeover did.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct TakeoverReport {
    pub at: Nanos,
    /// When B's claim took effect: S3, the answer of its conditional PUT of the
    /// registration; Postgres, the answer of its `UPDATE` of the node row, which waited
    /// for the inserts holding the row.
    pub claimed_at: Nanos,
    /// When B's recovery read answered: S3, its LIST (what it recovered is what was
    /// stored by then); Postgres, its scan of the ring.
    pub listed_at: Nanos,
    pub old_epoch: u64,
    pub new_epoch: u64,
    /// Records node A acknowledged.
    pub acked_by_old: u64,
    /// Records node B's recovery replays, once every straggler has landed.
    pub recovered_by_new: u64,
    /// A's objects that recovery ignores (S3); 0 on Postgres, whose fence is inside the insert.
    pub stragglers_ignored: u64,
    /// Where B's own session starts (the end of what it recovered).
    pub new_session_start: u64,
    /// The batches of A whose check or insert found the new epoch: A is fenced at the first.
    #[cfg_attr(feature = "serde", serde(alias = "fenced_bulks"))]
    pub fenced_batches: Vec<u64>,
    /// S3: every object recovery left out, and why.
    pub ignored: Vec<(WalObject, Ignored)>,
    /// Records B recovered, by number (on Postgres with those already uploaded below the
    /// trim offset: in data objects, nothing to replay, nothing lost).
    pub recovered_records: Vec<u64>,
    pub already_uploaded: u64,
}

/// A whole run. `Eq`, so that a shared run (`Rc`) compares by its address first.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct RemoteRun {
    pub backend: RemoteBackend,
    #[cfg_attr(feature = "serde", serde(alias = "bulks"))]
    pub batches: Vec<BatchRow>,
    pub records: Vec<RecordRow>,
    /// Requests that wrote to the log: PUTs, or INSERTs with their retries.
    pub puts: u64,
    /// S3: the registration checks after uploads.
    pub fence_checks: u64,
    pub records_acked: u64,
    pub takeover: Option<TakeoverReport>,
    pub trims: Vec<TrimRow>,
    pub ring: RingGeometry,
    /// The instant of the last event.
    pub end: Nanos,
}

impl RemoteRun {
    /// PUTs (or INSERTs) per acknowledged record; `None` when nothing was acknowledged.
    pub fn puts_per_record(&self) -> Option<f64> {
        (self.records_acked > 0).then(|| self.puts as f64 / self.records_acked as f64)
    }

    /// The batches stored at `t`, acknowledged or not.
    pub fn stored_by(&self, t: Nanos) -> impl Iterator<Item = &BatchRow> {
        self.batches
            .iter()
            .filter(move |batch| batch.stored.is_some_and(|stored| stored <= t))
    }

    /// The records acknowledged by `t`.
    pub fn acked_by(&self, t: Nanos) -> impl Iterator<Item = &RecordRow> {
        self.records
            .iter()
            .filter(move |record| record.acked.is_some_and(|acked| acked <= t))
    }
}
