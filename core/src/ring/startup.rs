//! The start-up verdicts: what the server's state means (a standby, `fsync = off`, a
//! synchronous standby) and what the database timeline means against the one recorded at
//! the last start.

use core::fmt;

/// How the server's state at start-up is judged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerState {
    /// `pg_is_in_recovery()`.
    pub in_recovery: bool,
    /// `fsync` is on.
    pub fsync: bool,
    /// `synchronous_standby_names`, as the server reports it.
    pub synchronous_standby_names: String,
}

/// Why the WAL refuses to start on this server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartupRefusal {
    /// The server is a standby (or still recovering): it cannot take writes, and a WAL
    /// that did would fork the database's history.
    InRecovery,
    /// `fsync = off`: a commit is not durable, so an acknowledgement would be a lie.
    FsyncOff,
}

impl fmt::Display for StartupRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StartupRefusal::InRecovery => "the server is in recovery (pg_is_in_recovery() is true): a standby cannot hold the WAL",
            StartupRefusal::FsyncOff => {
                "the server runs with fsync = off, so a commit is not durable; add allow_unsafe=true to the URL to start anyway"
            }
        })
    }
}

/// What the WAL warns about at start, but starts anyway.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartupWarning {
    /// `fsync = off` with `allow_unsafe=true`.
    FsyncOffAllowed,
    /// No synchronous standby: losing the primary host loses what was not replicated.
    NoSynchronousStandby,
}

impl fmt::Display for StartupWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StartupWarning::FsyncOffAllowed => {
                "fsync = off (allowed by allow_unsafe=true): a crash of the server can lose acknowledged records"
            }
            StartupWarning::NoSynchronousStandby => {
                "synchronous_standby_names is empty: records acknowledged but not yet replicated are lost with the primary's host"
            }
        })
    }
}

/// The seed's start-up checks.
pub fn startup_checks(state: &ServerState, allow_unsafe: bool) -> Result<Vec<StartupWarning>, StartupRefusal> {
    if state.in_recovery {
        return Err(StartupRefusal::InRecovery);
    }
    let mut warnings = Vec::new();
    if !state.fsync {
        if !allow_unsafe {
            return Err(StartupRefusal::FsyncOff);
        }
        warnings.push(StartupWarning::FsyncOffAllowed);
    }
    if state.synchronous_standby_names.trim().is_empty() {
        warnings.push(StartupWarning::NoSynchronousStandby);
    }
    Ok(warnings)
}

/// How loudly a start-up finding is logged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    Info,
    Warning,
    Error,
}

/// The database timeline now, against the one recorded at the last start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum TimelineVerdict {
    /// No start recorded one yet.
    FirstStart { current: u32 },
    /// A normal restart.
    Equal { current: u32 },
    /// The database was restored from a backup: its rows committed after the backup point
    /// are gone (records the upload had already taken to data objects are still there).
    Lower { recorded: u32, current: u32 },
    /// A standby was promoted, and a synchronous standby had every acknowledged commit.
    HigherSynchronous { recorded: u32, current: u32 },
    /// A standby was promoted without a synchronous standby: rows committed after its
    /// last replayed commit are not on it.
    HigherAsynchronous { recorded: u32, current: u32 },
}

impl TimelineVerdict {
    pub fn severity(&self) -> Severity {
        match self {
            TimelineVerdict::FirstStart { .. } | TimelineVerdict::Equal { .. } => Severity::Info,
            TimelineVerdict::HigherSynchronous { .. } => Severity::Info,
            TimelineVerdict::Lower { .. } => Severity::Warning,
            TimelineVerdict::HigherAsynchronous { .. } => Severity::Error,
        }
    }

    /// True when there is something to log.
    pub fn is_notable(&self) -> bool {
        !matches!(self, TimelineVerdict::FirstStart { .. } | TimelineVerdict::Equal { .. })
    }
}

impl fmt::Display for TimelineVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            TimelineVerdict::FirstStart { current } => write!(f, "timeline {current} recorded at the first start"),
            TimelineVerdict::Equal { current } => write!(f, "timeline {current}, as at the last start"),
            TimelineVerdict::Lower { recorded, current } => write!(
                f,
                "timeline {current} is below the {recorded} recorded at the last start: the database was restored from a backup, and its rows committed after the backup point are gone"
            ),
            TimelineVerdict::HigherSynchronous { recorded, current } => write!(
                f,
                "timeline {current} is above the {recorded} recorded at the last start: a standby was promoted; with a synchronous standby nothing acknowledged is lost"
            ),
            TimelineVerdict::HigherAsynchronous { recorded, current } => write!(
                f,
                "timeline {current} is above the {recorded} recorded at the last start and synchronous_standby_names is empty: a standby was promoted, and rows committed after its last replayed commit are not on it"
            ),
        }
    }
}

/// The seed's timeline table.
pub fn timeline_verdict(recorded: Option<u32>, current: u32, synchronous_standby: bool) -> TimelineVerdict {
    match recorded {
        None => TimelineVerdict::FirstStart { current },
        Some(recorded) if recorded == current => TimelineVerdict::Equal { current },
        Some(recorded) if current < recorded => TimelineVerdict::Lower { recorded, current },
        Some(recorded) if synchronous_standby => TimelineVerdict::HigherSynchronous { recorded, current },
        Some(recorded) => TimelineVerdict::HigherAsynchronous { recorded, current },
    }
}

/// The timeline in the first 8 hex digits of a WAL file's name (`pg_walfile_name`).
pub fn parse_timeline(hex: &str) -> Option<u32> {
    u32::from_str_radix(hex, 16).ok()
}
