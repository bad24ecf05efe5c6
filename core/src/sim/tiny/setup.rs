//! A tiny-store run's settings: the policy, each sync's latency, the CDC readers, the
//! faults (a log sync's EIO and how the driver handles it, a flushed file's), the power
//! cut and the device's atomic unit.

use crate::group_commit::Policy;
use crate::time::Nanos;
use crate::tiny_store::{self, UNIT_BYTES};

/// A change-data-capture reader and the seq it has confirmed (it is stuck there).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CdcReader {
    pub name: String,
    pub confirmed_seq: u64,
}

/// What the log's driver does when a sync fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncErrorHandling {
    /// Fail the waiters, stop taking writes, recover (the right path).
    FailStop,
    /// Retry the sync and carry on (the wrong path: the retry "succeeds").
    RetryAndCarryOn,
}

impl SyncErrorHandling {
    pub const ALL: [SyncErrorHandling; 2] = [SyncErrorHandling::FailStop, SyncErrorHandling::RetryAndCarryOn];

    /// The name `walab sim power-cut --on-sync-error` takes.
    pub fn name(self) -> &'static str {
        match self {
            SyncErrorHandling::FailStop => "fail-stop",
            SyncErrorHandling::RetryAndCarryOn => "retry",
        }
    }

    pub fn from_name(name: &str) -> Option<SyncErrorHandling> {
        SyncErrorHandling::ALL.into_iter().find(|handling| handling.name() == name)
    }
}

/// One log batch's sync returns EIO (branch E1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogSyncFault {
    /// The batch, B1 = 1.
    pub batch: u64,
    pub handling: SyncErrorHandling,
}

/// A tiny-store run's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TinySetup {
    pub policy: Policy,
    pub log_sync_latency: Nanos,
    pub flush_sync_latency: Nanos,
    pub manifest_sync_latency: Nanos,
    pub readers: Vec<CdcReader>,
    pub log_sync_fault: Option<LogSyncFault>,
    /// The flushed file (by number, 11 = F11) whose sync fails (branch E2).
    pub flush_sync_fault: Option<u64>,
    /// The power fails at this instant; the run stops there.
    pub power_cut: Option<Nanos>,
    /// The device's atomic unit: what a power cut during a sync can tear apart (each
    /// unit lands whole or not at all). [`UNIT_BYTES`] (32) in every figure; 512 or
    /// 4096 for real drives, where one unit covers a whole segment of the tiny store.
    pub unit_bytes: usize,
}

impl TinySetup {
    /// The tiny store's settings: every sync takes 1.0 ms, 32-byte units, no readers, no
    /// faults.
    pub fn new(policy: Policy) -> TinySetup {
        TinySetup {
            policy,
            log_sync_latency: tiny_store::SYNC_LATENCY,
            flush_sync_latency: tiny_store::SYNC_LATENCY,
            manifest_sync_latency: tiny_store::SYNC_LATENCY,
            readers: Vec::new(),
            log_sync_fault: None,
            flush_sync_fault: None,
            power_cut: None,
            unit_bytes: UNIT_BYTES,
        }
    }

    pub fn with_unit_bytes(mut self, unit_bytes: usize) -> TinySetup {
        self.unit_bytes = unit_bytes;
        self
    }

    pub fn with_power_cut(mut self, at: Nanos) -> TinySetup {
        self.power_cut = Some(at);
        self
    }
}

/// A run could not start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TinySetupError {
    Config(crate::group_commit::ConfigError),
    LatencyZero,
    UnitZero,
    UnitTooLarge,
}

impl core::fmt::Display for TinySetupError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            TinySetupError::Config(error) => error.fmt(f),
            TinySetupError::LatencyZero => f.write_str("the sync latency must be longer than zero"),
            TinySetupError::UnitZero => f.write_str("the atomic unit must be at least one byte"),
            TinySetupError::UnitTooLarge => f.write_str("the atomic unit must fit in 32 bits"),
        }
    }
}

impl std::error::Error for TinySetupError {}
