//! The remote chapters' URL parameters (all named `r...`, so every view is a link): read
//! from and written to the link, and turned into the core's setup for the remote
//! simulator with the same run as a `walab sim remote` command line. A leaf under the URL
//! layer (`url_state.rs`): it imports the core and `format` only.

use walab_core::ring::RingGeometry;
use walab_core::sim::remote::{LatencyProfile, Load, RemoteBackend, RemoteSetup, Standby, TimelineCase, WalEvent};
use walab_core::sim::SyncLatency;
use walab_core::time::Nanos;

use crate::format::format_millis;

/// How long a request takes in the lab's runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RemoteLatency {
    Profile(LatencyProfile),
    Fixed(Nanos),
}

/// The chapters' parameters, as the URL carries them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteParams {
    /// `rwriters=N` (closed loop) or `rrate=R` (open loop, `rpoisson=1`).
    pub load: Load,
    pub count: u64,
    pub inflight: usize,
    /// `rlat=s3-standard|s3-express|postgres|MS`; `None`: the backend's own profile.
    pub latency: Option<RemoteLatency>,
    /// `rslow=K:MS`.
    pub slow_put: Option<(u64, Nanos)>,
    /// `rfail=K`.
    pub fail_put: Option<u64>,
    /// `rtake=MS`.
    pub takeover_at: Option<Nanos>,
    /// `rstall=FROM:UNTIL` (UNTIL empty: for good).
    pub stall: Option<(Nanos, Nanos)>,
    /// `rseg=N`: slot tables in the lab's small ring.
    pub segments: u64,
    /// `rev=node|pg|host|zone`, `rstandby=none|async|sync`, `rzone=1` (a one-zone bucket).
    pub event: WalEvent,
    pub standby: Standby,
    pub one_zone_bucket: bool,
    /// `rtl=equal|lower|higher-sync|higher-async`.
    pub timeline: TimelineCase,
    /// `rupcrash=K`: the upload task crashes between block K's upload and its commit.
    pub upload_crash: Option<u64>,
    /// The Postgres server at the WAL's start: `rrecovery=1` (`pg_is_in_recovery()`),
    /// `rfsync=off`, `runsafe=1` (`allow_unsafe=true` in the URL), `rssn=empty`
    /// (`synchronous_standby_names`; a higher timeline's case in `rtl` says it already).
    pub server: ServerToggles,
}

/// What the Postgres server says at the WAL's start, as the student sets it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ServerToggles {
    pub in_recovery: bool,
    pub fsync_off: bool,
    pub allow_unsafe: bool,
    pub standby_names_empty: bool,
}

/// The lab's ring: small, so a run fills it (the seed's default holds 448 MiB).
pub const LAB_SEGMENT_BYTES: u64 = 4096;
/// The lag of an asynchronous standby, and the backup point of a restore, in the lab.
pub const STANDBY_LAG: Nanos = Nanos::from_millis(10);
pub const BACKUP_AT: Nanos = Nanos::from_millis(20);

impl Default for RemoteParams {
    fn default() -> RemoteParams {
        RemoteParams {
            load: Load::Rate { rate_per_s: 20_000, poisson: false },
            count: 600,
            inflight: 4,
            latency: None,
            slow_put: None,
            fail_put: None,
            takeover_at: None,
            stall: None,
            segments: 4,
            event: WalEvent::NodeCrash,
            standby: Standby::None,
            one_zone_bucket: false,
            timeline: TimelineCase::Equal,
            upload_crash: None,
            server: ServerToggles::default(),
        }
    }
}

/// The URL parameters the chapters read.
pub const REMOTE_PARAMS: [&str; 20] = [
    "rwriters", "rrate", "rpoisson", "rcount", "rinflight", "rlat", "rslow", "rfail", "rtake", "rstall", "rseg", "rev",
    "rstandby", "rzone", "rtl", "rupcrash", "rrecovery", "rfsync", "runsafe", "rssn",
];

fn millis(text: &str, max_ms: u64) -> Result<Nanos, String> {
    let nanos = Nanos::parse_millis(text).ok_or("not a number of milliseconds (like 25 or 1.5)")?;
    if nanos > Nanos::from_millis(max_ms) {
        return Err(format!("out of range; give 0 to {max_ms} ms"));
    }
    Ok(nanos)
}

fn flag(text: &str, yes: &str, no: &str) -> Result<bool, String> {
    match text {
        _ if text == yes => Ok(true),
        _ if text == no => Ok(false),
        _ => Err(format!("give {yes} or {no}")),
    }
}

fn number(text: &str, min: u64, max: u64, what: &str) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(value) if (min..=max).contains(&value) => Ok(value),
        _ => Err(format!("not {what}; give {min} to {max}")),
    }
}

impl RemoteParams {
    /// True for the parameters this struct reads.
    pub fn takes(name: &str) -> bool {
        REMOTE_PARAMS.contains(&name)
    }

    /// Reads one parameter.
    pub fn parse(&mut self, name: &str, value: &str) -> Result<(), String> {
        match name {
            "rwriters" => self.load = Load::Writers { writers: number(value, 1, 4096, "a number of writers")? },
            "rrate" => {
                let poisson = matches!(self.load, Load::Rate { poisson: true, .. });
                self.load = Load::Rate { rate_per_s: number(value, 1, 1_000_000, "records a second")?, poisson };
            }
            "rpoisson" => match (&mut self.load, value) {
                (Load::Rate { poisson, .. }, "1") => *poisson = true,
                (Load::Rate { poisson, .. }, "0") => *poisson = false,
                _ => return Err("give 1 or 0, with rrate".into()),
            },
            "rcount" => self.count = number(value, 1, 5_000, "a number of records")?,
            "rinflight" => self.inflight = number(value, 1, 16, "uploads in flight")? as usize,
            "rlat" => {
                self.latency = Some(match LatencyProfile::parse(value) {
                    Some(profile) => RemoteLatency::Profile(profile),
                    None => {
                        let fixed = millis(value, 1_000)?;
                        if fixed == Nanos::ZERO {
                            return Err("a request takes more than 0 ms".into());
                        }
                        RemoteLatency::Fixed(fixed)
                    }
                })
            }
            "rslow" => {
                let (put, slow) = value.split_once(':').ok_or("not K:MS (like 3:200)")?;
                let slow = millis(slow, 10_000)?;
                if slow == Nanos::ZERO {
                    return Err("a slow PUT takes more than 0 ms".into());
                }
                self.slow_put = Some((number(put, 1, 10_000, "a PUT number")?, slow));
            }
            "rfail" => self.fail_put = Some(number(value, 1, 10_000, "a PUT number")?),
            "rtake" => self.takeover_at = Some(millis(value, 10_000)?),
            "rstall" => {
                let (from, until) = value.split_once(':').ok_or("not FROM:UNTIL (like 0:300, or 0: for good)")?;
                let from = millis(from, 10_000)?;
                let until = if until.is_empty() { Nanos::MAX } else { millis(until, 10_000)? };
                if until <= from {
                    return Err("UNTIL must come after FROM".into());
                }
                self.stall = Some((from, until));
            }
            "rseg" => self.segments = number(value, 2, 16, "a number of slots")?,
            "rev" => {
                self.event = match value {
                    "node" => WalEvent::NodeCrash,
                    "pg" => WalEvent::PostgresCrash,
                    "host" => WalEvent::PrimaryHostLost,
                    "zone" => WalEvent::ZoneLost,
                    _ => return Err("not an event; use node, pg, host or zone".into()),
                }
            }
            "rstandby" => {
                self.standby = match value {
                    "none" => Standby::None,
                    "async" => Standby::Asynchronous { lag: STANDBY_LAG },
                    "sync" => Standby::Synchronous,
                    _ => return Err("not a standby; use none, async or sync".into()),
                }
            }
            "rzone" => self.one_zone_bucket = flag(value, "1", "0")?,
            "rtl" => {
                self.timeline = match value {
                    "equal" => TimelineCase::Equal,
                    "lower" => TimelineCase::Lower { backup_at: BACKUP_AT },
                    "higher-sync" => TimelineCase::HigherSynchronous,
                    "higher-async" => TimelineCase::HigherAsynchronous { lag: STANDBY_LAG },
                    _ => return Err("not a timeline case; use equal, lower, higher-sync or higher-async".into()),
                }
            }
            "rupcrash" => self.upload_crash = Some(number(value, 1, 100, "a block number")?),
            "rrecovery" => self.server.in_recovery = flag(value, "1", "0")?,
            "runsafe" => self.server.allow_unsafe = flag(value, "1", "0")?,
            "rfsync" => self.server.fsync_off = flag(value, "off", "on")?,
            "rssn" => self.server.standby_names_empty = flag(value, "empty", "set")?,
            _ => return Err("not a remote parameter".into()),
        }
        Ok(())
    }

    /// The parameters that differ from the defaults, for the link.
    pub fn to_pairs(&self) -> Vec<String> {
        let defaults = RemoteParams::default();
        let mut pairs = Vec::new();
        if self.load != defaults.load {
            match self.load {
                Load::Writers { writers } => pairs.push(format!("rwriters={writers}")),
                Load::Rate { rate_per_s, poisson } => {
                    pairs.push(format!("rrate={rate_per_s}"));
                    if poisson {
                        pairs.push("rpoisson=1".into());
                    }
                }
            }
        }
        if self.count != defaults.count {
            pairs.push(format!("rcount={}", self.count));
        }
        if self.inflight != defaults.inflight {
            pairs.push(format!("rinflight={}", self.inflight));
        }
        match self.latency {
            Some(RemoteLatency::Profile(profile)) => pairs.push(format!("rlat={}", profile.name())),
            Some(RemoteLatency::Fixed(fixed)) => pairs.push(format!("rlat={}", format_millis(fixed))),
            None => {}
        }
        if let Some((put, slow)) = self.slow_put {
            pairs.push(format!("rslow={put}:{}", format_millis(slow)));
        }
        if let Some(put) = self.fail_put {
            pairs.push(format!("rfail={put}"));
        }
        if let Some(at) = self.takeover_at {
            pairs.push(format!("rtake={}", format_millis(at)));
        }
        if let Some((from, until)) = self.stall {
            let until = if until == Nanos::MAX { String::new() } else { format_millis(until) };
            pairs.push(format!("rstall={}:{until}", format_millis(from)));
        }
        if self.segments != defaults.segments {
            pairs.push(format!("rseg={}", self.segments));
        }
        if self.event != defaults.event {
            pairs.push(format!("rev={}", event_name(self.event)));
        }
        if self.standby != defaults.standby {
            pairs.push(format!("rstandby={}", standby_name(self.standby)));
        }
        if self.one_zone_bucket {
            pairs.push("rzone=1".into());
        }
        if self.timeline != defaults.timeline {
            pairs.push(format!("rtl={}", timeline_name(self.timeline)));
        }
        if let Some(block) = self.upload_crash {
            pairs.push(format!("rupcrash={block}"));
        }
        if self.server.in_recovery {
            pairs.push("rrecovery=1".into());
        }
        if self.server.fsync_off {
            pairs.push("rfsync=off".into());
        }
        if self.server.allow_unsafe {
            pairs.push("runsafe=1".into());
        }
        let higher = matches!(self.timeline, TimelineCase::HigherSynchronous | TimelineCase::HigherAsynchronous { .. });
        if self.server.standby_names_empty && !higher {
            pairs.push("rssn=empty".into());
        }
        pairs
    }

    /// Whether `synchronous_standby_names` is set: a higher timeline's case says so
    /// itself (a synchronous standby promoted, or an asynchronous one); otherwise `rssn`.
    pub fn synchronous_standby_set(&self) -> bool {
        match self.timeline {
            TimelineCase::HigherSynchronous => true,
            TimelineCase::HigherAsynchronous { .. } => false,
            _ => !self.server.standby_names_empty,
        }
    }

    /// Sets `synchronous_standby_names`, keeping a higher timeline's case in step.
    pub fn set_synchronous_standby(&mut self, set: bool) {
        self.server.standby_names_empty = !set;
        if matches!(self.timeline, TimelineCase::HigherSynchronous | TimelineCase::HigherAsynchronous { .. }) {
            self.timeline = if set { TimelineCase::HigherSynchronous } else { TimelineCase::HigherAsynchronous { lag: STANDBY_LAG } };
        }
    }

    /// Sets the timeline (`equal`, `lower` or `higher`); a higher one is promoted from a
    /// synchronous standby exactly when `synchronous_standby_names` is set.
    pub fn set_timeline(&mut self, which: &str) {
        let synchronous = self.synchronous_standby_set();
        self.server.standby_names_empty = !synchronous;
        self.timeline = match which {
            "lower" => TimelineCase::Lower { backup_at: BACKUP_AT },
            "higher" if synchronous => TimelineCase::HigherSynchronous,
            "higher" => TimelineCase::HigherAsynchronous { lag: STANDBY_LAG },
            _ => TimelineCase::Equal,
        };
    }

    /// The core's setup for a backend, and the same run as a `walab` command line.
    pub fn setup(&self, backend: RemoteBackend, seed: u64) -> (RemoteSetup, String) {
        let mut setup = RemoteSetup::new(backend, self.load, self.count);
        let mut cli = format!("walab sim remote --backend {}", backend.name());
        match self.load {
            Load::Writers { writers } => cli.push_str(&format!(" --writers {writers}")),
            Load::Rate { rate_per_s, poisson } => {
                cli.push_str(&format!(" --rate {rate_per_s}"));
                if poisson {
                    cli.push_str(" --poisson");
                }
            }
        }
        cli.push_str(&format!(" --count {} --seed {seed} --inflight {}", self.count, self.inflight));
        setup.seed = seed;
        setup.inflight_max = self.inflight;
        let latency = self.latency.unwrap_or(RemoteLatency::Profile(LatencyProfile::default_for(backend)));
        match latency {
            RemoteLatency::Profile(profile) => {
                setup.latency = profile.latency();
                cli.push_str(&format!(" --profile {}", profile.name()));
            }
            RemoteLatency::Fixed(fixed) => {
                setup.latency = SyncLatency::fixed(fixed);
                cli.push_str(&format!(" --put-ms {}", format_millis(fixed)));
            }
        }
        if let Some((put, slow)) = self.slow_put {
            setup.slow_puts.push((put, slow));
            cli.push_str(&format!(" --slow-put {put}:{}", format_millis(slow)));
        }
        if let Some(put) = self.fail_put {
            setup.fail_put = Some(put);
            cli.push_str(&format!(" --fail-put {put}"));
        }
        if let Some(at) = self.takeover_at {
            setup.takeover_at = Some(at);
            cli.push_str(&format!(" --takeover-at-ms {}", format_millis(at)));
        }
        if backend == RemoteBackend::S3 {
            // walab serve's fence: a batch is acknowledged as its PUT returns.
            setup.fence_read = false;
            cli.push_str(" --fence lease");
        }
        if backend == RemoteBackend::Postgres {
            setup.ring = RingGeometry { segments: self.segments, segment_bytes: LAB_SEGMENT_BYTES };
            cli.push_str(&format!(" --segments {} --segment-bytes {LAB_SEGMENT_BYTES}", self.segments));
            if let Some((from, until)) = self.stall {
                setup.upload_stall = Some((from, until));
                let until = if until == Nanos::MAX { String::new() } else { format_millis(until) };
                cli.push_str(&format!(" --stall-upload-ms {}:{until}", format_millis(from)));
            }
        }
        if backend == RemoteBackend::S3 {
            cli.push_str(" --upload");
            if let Some(block) = self.upload_crash {
                cli.push_str(&format!(" --upload-crash-before-commit {block}"));
            }
        }
        cli.push_str(" --json");
        (setup, cli)
    }
}

pub fn event_name(event: WalEvent) -> &'static str {
    match event {
        WalEvent::NodeCrash => "node",
        WalEvent::PostgresCrash => "pg",
        WalEvent::PrimaryHostLost => "host",
        WalEvent::ZoneLost => "zone",
    }
}

pub fn standby_name(standby: Standby) -> &'static str {
    match standby {
        Standby::None => "none",
        Standby::Asynchronous { .. } => "async",
        Standby::Synchronous => "sync",
    }
}

pub fn timeline_name(case: TimelineCase) -> &'static str {
    match case {
        TimelineCase::Equal => "equal",
        TimelineCase::Lower { .. } => "lower",
        TimelineCase::HigherSynchronous => "higher-sync",
        TimelineCase::HigherAsynchronous { .. } => "higher-async",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_round_trip_through_the_link() {
        let mut params = RemoteParams::default();
        for (name, value) in [("rrate", "5000"), ("rpoisson", "1"), ("rslow", "3:200"), ("rtake", "60"), ("rlat", "25"), ("rstall", "0:"), ("rev", "host"), ("rstandby", "async"), ("rtl", "higher-async")] {
            params.parse(name, value).unwrap();
        }
        let mut again = RemoteParams::default();
        for pair in params.to_pairs() {
            let (name, value) = pair.split_once('=').unwrap();
            again.parse(name, value).unwrap();
        }
        assert_eq!(again, params);
        assert!(RemoteParams::default().parse("rslow", "3").unwrap_err().contains("K:MS"));
        assert!(RemoteParams::default().parse("rseg", "1").is_err());
    }
}
