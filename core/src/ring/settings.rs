//! What a `--wal postgres://...` URL sets besides the connection: the ring's geometry,
//! the commit path's batch interval and limits, `synchronous_commit`, each checked
//! against the ring's constraints ([`PgWalSettings::validate`]); how the URL is taken
//! apart ([`split_wal_url`]), its byte sizes and durations read; and the slot tables'
//! names.

use core::fmt;

use super::{RingGeometry, BATCH_BYTES_MAX_DEFAULT, BATCH_BYTES_MAX_LIMIT, BATCH_INTERVAL_DEFAULT, BATCH_INTERVAL_MAX, IDENTIFIER_BYTES_MAX, INFLIGHT_MAX_DEFAULT, INFLIGHT_MAX_LIMIT, SEGMENTS_MAX, SEGMENTS_MIN, SEGMENT_BYTES_MAX, UNFLUSHED_BYTES_MAX_DEFAULT};
use crate::checksum::crc32;
use crate::time::Nanos;

/// `synchronous_commit` on the WAL's connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum SynchronousCommit {
    /// Flushed to the primary's disk (and to a synchronous standby's, if named).
    On,
    /// Written (not flushed) on the synchronous standby.
    RemoteWrite,
    /// Replayed on the synchronous standby: visible there.
    RemoteApply,
    /// Flushed on the primary only, whatever the standbys.
    Local,
}

impl SynchronousCommit {
    /// The value as Postgres spells it.
    pub fn as_sql(&self) -> &'static str {
        match self {
            SynchronousCommit::On => "on",
            SynchronousCommit::RemoteWrite => "remote_write",
            SynchronousCommit::RemoteApply => "remote_apply",
            SynchronousCommit::Local => "local",
        }
    }

    fn parse(text: &str) -> Option<SynchronousCommit> {
        Some(match text {
            "on" => SynchronousCommit::On,
            "remote_write" => SynchronousCommit::RemoteWrite,
            "remote_apply" => SynchronousCommit::RemoteApply,
            "local" => SynchronousCommit::Local,
            _ => return None,
        })
    }
}

/// Everything the `--wal postgres://...` URL can set besides the connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct PgWalSettings {
    /// `allow_unsafe=true`: start even with `fsync = off` (with a warning).
    pub allow_unsafe: bool,
    /// `segments` and `segment_bytes`.
    pub geometry: RingGeometry,
    /// `batch_interval`: how long records gather before a batch is inserted.
    pub batch_interval: Nanos,
    /// `max_bytes_in_batch`: the size that closes a batch early.
    pub batch_bytes_max: u64,
    /// `inflight`: batches inserted at once, each in its own transaction.
    pub inflight_max: usize,
    /// `max_unflushed_bytes`: bytes appended but not yet durable before appends wait.
    pub unflushed_bytes_max: u64,
    /// `synchronous_commit`.
    pub synchronous_commit: SynchronousCommit,
}

impl Default for PgWalSettings {
    fn default() -> PgWalSettings {
        PgWalSettings {
            allow_unsafe: false,
            geometry: RingGeometry::default(),
            batch_interval: BATCH_INTERVAL_DEFAULT,
            batch_bytes_max: BATCH_BYTES_MAX_DEFAULT,
            inflight_max: INFLIGHT_MAX_DEFAULT,
            unflushed_bytes_max: UNFLUSHED_BYTES_MAX_DEFAULT,
            synchronous_commit: SynchronousCommit::On,
        }
    }
}

/// A setting, or a combination of settings, the ring cannot work with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SettingsError {
    SegmentsTooFew { segments: u64 },
    SegmentsTooMany { segments: u64 },
    SegmentBytesBelowBatch { segment_bytes: u64, batch_bytes_max: u64 },
    SegmentBytesTooLarge { segment_bytes: u64 },
    CapacityNotAboveUnflushed { capacity_bytes: u64, unflushed_bytes_max: u64 },
    BatchBytesZero,
    BatchBytesTooLarge { batch_bytes_max: u64 },
    InflightZero,
    InflightTooMany { inflight_max: usize },
    UnflushedBelowBatch { unflushed_bytes_max: u64, batch_bytes_max: u64 },
    IntervalZero,
    IntervalTooLong { batch_interval: Nanos },
}

impl fmt::Display for SettingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            SettingsError::SegmentsTooFew { segments } => {
                write!(f, "segments={segments}: the ring needs at least {SEGMENTS_MIN} slots")
            }
            SettingsError::SegmentsTooMany { segments } => {
                write!(f, "segments={segments}: walab allows at most {SEGMENTS_MAX} slot tables")
            }
            SettingsError::SegmentBytesBelowBatch { segment_bytes, batch_bytes_max } => write!(
                f,
                "segment_bytes={segment_bytes} is below max_bytes_in_batch={batch_bytes_max}: a segment must hold a whole batch"
            ),
            SettingsError::SegmentBytesTooLarge { segment_bytes } => {
                write!(f, "segment_bytes={segment_bytes} is above the 4 GiB limit ({SEGMENT_BYTES_MAX})")
            }
            SettingsError::CapacityNotAboveUnflushed { capacity_bytes, unflushed_bytes_max } => write!(
                f,
                "the ring's capacity (segments - 1) x segment_bytes = {capacity_bytes} must exceed max_unflushed_bytes={unflushed_bytes_max}"
            ),
            SettingsError::BatchBytesZero => f.write_str("max_bytes_in_batch must be at least 1"),
            SettingsError::BatchBytesTooLarge { batch_bytes_max } => {
                write!(f, "max_bytes_in_batch={batch_bytes_max} is above walab's {BATCH_BYTES_MAX_LIMIT}")
            }
            SettingsError::InflightZero => f.write_str("inflight must be at least 1"),
            SettingsError::InflightTooMany { inflight_max } => {
                write!(f, "inflight={inflight_max} is above walab's {INFLIGHT_MAX_LIMIT} (one connection each)")
            }
            SettingsError::UnflushedBelowBatch { unflushed_bytes_max, batch_bytes_max } => write!(
                f,
                "max_unflushed_bytes={unflushed_bytes_max} is below max_bytes_in_batch={batch_bytes_max}"
            ),
            SettingsError::IntervalZero => f.write_str("batch_interval must be longer than zero"),
            SettingsError::IntervalTooLong { batch_interval } => {
                write!(f, "batch_interval={} ns is above walab's 10 s", batch_interval.0)
            }
        }
    }
}

impl RingGeometry {
    /// The seed's constraints on the ring, given the commit path's batch and unflushed
    /// limits.
    pub fn validate(&self, batch_bytes_max: u64, unflushed_bytes_max: u64) -> Result<(), SettingsError> {
        if self.segments < SEGMENTS_MIN {
            return Err(SettingsError::SegmentsTooFew { segments: self.segments });
        }
        if self.segments > SEGMENTS_MAX {
            return Err(SettingsError::SegmentsTooMany { segments: self.segments });
        }
        if self.segment_bytes < batch_bytes_max {
            return Err(SettingsError::SegmentBytesBelowBatch { segment_bytes: self.segment_bytes, batch_bytes_max });
        }
        if self.segment_bytes > SEGMENT_BYTES_MAX {
            return Err(SettingsError::SegmentBytesTooLarge { segment_bytes: self.segment_bytes });
        }
        let capacity_bytes = self.capacity_bytes();
        if capacity_bytes <= unflushed_bytes_max {
            return Err(SettingsError::CapacityNotAboveUnflushed { capacity_bytes, unflushed_bytes_max });
        }
        Ok(())
    }
}

impl PgWalSettings {
    /// Checks every setting and the ring's constraints.
    pub fn validate(&self) -> Result<(), SettingsError> {
        if self.batch_bytes_max == 0 {
            return Err(SettingsError::BatchBytesZero);
        }
        if self.batch_bytes_max > BATCH_BYTES_MAX_LIMIT {
            return Err(SettingsError::BatchBytesTooLarge { batch_bytes_max: self.batch_bytes_max });
        }
        if self.inflight_max == 0 {
            return Err(SettingsError::InflightZero);
        }
        if self.inflight_max > INFLIGHT_MAX_LIMIT {
            return Err(SettingsError::InflightTooMany { inflight_max: self.inflight_max });
        }
        if self.unflushed_bytes_max < self.batch_bytes_max {
            return Err(SettingsError::UnflushedBelowBatch {
                unflushed_bytes_max: self.unflushed_bytes_max,
                batch_bytes_max: self.batch_bytes_max,
            });
        }
        if self.batch_interval == Nanos::ZERO {
            return Err(SettingsError::IntervalZero);
        }
        if self.batch_interval > BATCH_INTERVAL_MAX {
            return Err(SettingsError::IntervalTooLong { batch_interval: self.batch_interval });
        }
        self.geometry.validate(self.batch_bytes_max, self.unflushed_bytes_max)
    }
}

/// The walab options a `--wal` URL may carry, snake_case as the object store's are
/// (`inflight` is `--inflight`'s name too, `synchronous_commit` Postgres's own).
pub const WALAB_OPTIONS: [&str; 8] = [
    "allow_unsafe",
    "segments",
    "segment_bytes",
    "batch_interval",
    "max_bytes_in_batch",
    "inflight",
    "max_unflushed_bytes",
    "synchronous_commit",
];

/// The earlier camelCase spellings, still taken (URLs in scripts and notes have them)
/// but not listed: each with the option it names.
pub const WALAB_OPTION_ALIASES: [(&str, &str); 7] = [
    ("allowUnsafe", "allow_unsafe"),
    ("segmentBytes", "segment_bytes"),
    ("batchInterval", "batch_interval"),
    ("maxBytesInBatch", "max_bytes_in_batch"),
    ("maxInflight", "inflight"),
    ("maxUnflushedBytes", "max_unflushed_bytes"),
    ("synchronousCommit", "synchronous_commit"),
];

/// The option a query name spells (itself, or the one an alias stands for), if walab's.
pub fn walab_option(name: &str) -> Option<&'static str> {
    WALAB_OPTIONS
        .iter()
        .copied()
        .find(|option| *option == name)
        .or_else(|| WALAB_OPTION_ALIASES.iter().find(|(alias, _)| *alias == name).map(|(_, option)| *option))
}

/// The query options the native Postgres client library understands; they stay in
/// the URL it is given.
pub const CLIENT_OPTIONS: [&str; 19] = [
    "user",
    "password",
    "dbname",
    "options",
    "application_name",
    "sslmode",
    "sslnegotiation",
    "host",
    "hostaddr",
    "port",
    "connect_timeout",
    "tcp_user_timeout",
    "keepalives",
    "keepalives_idle",
    "keepalives_interval",
    "keepalives_retries",
    "target_session_attrs",
    "channel_binding",
    "load_balance_hosts",
];

/// Why a `--wal` URL was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UrlError {
    /// Not `postgres://` or `postgresql://`.
    NotPostgres,
    /// A query option neither walab nor the Postgres client knows.
    UnknownOption { name: String },
    /// An option without `=value`.
    MissingValue { name: String },
    /// The same walab option twice.
    Repeated { name: String },
    /// A value that does not parse.
    BadValue { name: String, value: String, expected: &'static str },
    /// The values parse but do not fit together.
    Settings(SettingsError),
}

impl fmt::Display for UrlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UrlError::NotPostgres => f.write_str("not a postgres:// or postgresql:// URL"),
            UrlError::UnknownOption { name } => write!(
                f,
                "unknown option {name:?}; walab takes {} and the Postgres client's own ({})",
                WALAB_OPTIONS.join(", "),
                CLIENT_OPTIONS.join(", ")
            ),
            UrlError::MissingValue { name } => write!(f, "option {name:?} has no value (write {name}=...)"),
            UrlError::Repeated { name } => write!(f, "option {name:?} is given twice"),
            UrlError::BadValue { name, value, expected } => write!(f, "{name}={value}: expected {expected}"),
            UrlError::Settings(error) => error.fmt(f),
        }
    }
}

/// A `--wal` URL taken apart: what to give the Postgres client, and walab's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitUrl {
    /// The URL with walab's options removed.
    pub connect_url: String,
    pub settings: PgWalSettings,
    /// True when the URL names `segments` or `segment_bytes`: only then does it ask for a
    /// ring other than the stored one.
    pub geometry_given: bool,
}

/// Takes walab's options out of a `postgres://` URL, refusing any option that neither
/// walab nor the client knows, and validates the settings.
pub fn split_wal_url(url: &str) -> Result<SplitUrl, UrlError> {
    if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
        return Err(UrlError::NotPostgres);
    }
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, query),
        None => (url, ""),
    };
    let mut settings = PgWalSettings::default();
    let mut kept: Vec<&str> = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for pair in query.split('&').filter(|pair| !pair.is_empty()) {
        let (name, value) = match pair.split_once('=') {
            Some((name, value)) => (name, value),
            None => return Err(UrlError::MissingValue { name: pair.to_string() }),
        };
        if CLIENT_OPTIONS.contains(&name) {
            kept.push(pair);
            continue;
        }
        let Some(option) = walab_option(name) else {
            return Err(UrlError::UnknownOption { name: name.to_string() });
        };
        if seen.contains(&option) {
            return Err(UrlError::Repeated { name: option.to_string() });
        }
        seen.push(option);
        let bad = |expected| UrlError::BadValue { name: name.to_string(), value: value.to_string(), expected };
        match option {
            "allow_unsafe" => {
                settings.allow_unsafe = match value {
                    "true" => true,
                    "false" => false,
                    _ => return Err(bad("true or false")),
                }
            }
            "segments" => settings.geometry.segments = value.parse().map_err(|_| bad("a whole number"))?,
            "segment_bytes" => settings.geometry.segment_bytes = parse_bytes(value).ok_or_else(|| bad(BYTES))?,
            "batch_interval" => settings.batch_interval = parse_duration(value).ok_or_else(|| bad(DURATION))?,
            "max_bytes_in_batch" => settings.batch_bytes_max = parse_bytes(value).ok_or_else(|| bad(BYTES))?,
            "inflight" => settings.inflight_max = value.parse().map_err(|_| bad("a whole number"))?,
            "max_unflushed_bytes" => settings.unflushed_bytes_max = parse_bytes(value).ok_or_else(|| bad(BYTES))?,
            "synchronous_commit" => {
                settings.synchronous_commit =
                    SynchronousCommit::parse(value).ok_or_else(|| bad("on, remote_write, remote_apply or local"))?
            }
            _ => unreachable!("every walab option has an arm"),
        }
    }
    settings.validate().map_err(UrlError::Settings)?;
    let connect_url = if kept.is_empty() { base.to_string() } else { format!("{base}?{}", kept.join("&")) };
    let geometry_given = seen.iter().any(|name| *name == "segments" || *name == "segment_bytes");
    Ok(SplitUrl { connect_url, settings, geometry_given })
}

const BYTES: &str = "bytes, optionally with KiB, MiB or GiB (64MiB)";
const DURATION: &str = "a duration with ns, us, ms or s (1ms); a bare number is milliseconds";

/// `4096`, `64KiB`, `64MiB`, `1GiB`.
pub fn parse_bytes(text: &str) -> Option<u64> {
    let (digits, scale) = if let Some(d) = text.strip_suffix("KiB") {
        (d, 1u64 << 10)
    } else if let Some(d) = text.strip_suffix("MiB") {
        (d, 1 << 20)
    } else if let Some(d) = text.strip_suffix("GiB") {
        (d, 1 << 30)
    } else {
        (text, 1)
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<u64>().ok()?.checked_mul(scale)
}

/// `250us`, `1ms`, `2s`, `1500ns`, or a bare (possibly fractional) number of milliseconds.
pub fn parse_duration(text: &str) -> Option<Nanos> {
    let whole = |digits: &str, scale: u64| -> Option<Nanos> {
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        digits.parse::<u64>().ok()?.checked_mul(scale).map(Nanos)
    };
    if let Some(d) = text.strip_suffix("ns") {
        whole(d, 1)
    } else if let Some(d) = text.strip_suffix("us") {
        whole(d, 1_000)
    } else if let Some(d) = text.strip_suffix("ms") {
        Nanos::parse_millis(d)
    } else if let Some(d) = text.strip_suffix('s') {
        whole(d, 1_000_000_000)
    } else {
        Nanos::parse_millis(text)
    }
}

/// The cluster part of a slot table's name: CRC32 (IEEE) of the cluster id, 8 lowercase
/// hex digits.
pub fn cluster_tag(cluster: &str) -> String {
    format!("{:08x}", crc32(cluster.as_bytes()))
}

/// Why a slot table name cannot be formed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NameError {
    /// Node ids go into table names: ASCII lowercase letters, digits and `_` only.
    BadNode { node: String },
    /// The name would pass Postgres's 63-byte identifier limit and be cut.
    TooLong { name: String },
}

impl fmt::Display for NameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NameError::BadNode { node } => write!(
                f,
                "node id {node:?} cannot name a slot table: use lowercase letters, digits and '_' only"
            ),
            NameError::TooLong { name } => write!(
                f,
                "slot table name {name} is longer than Postgres's {IDENTIFIER_BYTES_MAX}-byte identifiers"
            ),
        }
    }
}

/// The prefix of every table the Postgres WAL makes: `walab_` (`walab_node` and the slot
/// tables `walab_{crc32(cluster)}_{node}_{slot}`). Clusters made before the tables took
/// walab's name used `pico_wal_`; a start-up that finds its cluster only in the earlier
/// node table keeps that prefix for it ([`TablePrefix::for_cluster`]) and says so, so
/// such a log opens as it was and is never copied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TablePrefix {
    Walab,
    /// `pico_wal_`, of clusters made before the rename.
    Earlier,
}

impl TablePrefix {
    pub const fn text(self) -> &'static str {
        match self {
            TablePrefix::Walab => "walab_",
            TablePrefix::Earlier => "pico_wal_",
        }
    }

    /// The table of nodes: one row per (cluster, node).
    pub const fn node_table(self) -> &'static str {
        match self {
            TablePrefix::Walab => "walab_node",
            TablePrefix::Earlier => "pico_wal_node",
        }
    }

    /// The prefix a cluster's log uses, from whether its node row is in `walab_node` and
    /// whether it is in the earlier `pico_wal_node`: the earlier one only when the
    /// cluster is there and not in walab's (a new cluster takes walab's).
    pub const fn for_cluster(in_walab_node: bool, in_earlier_node: bool) -> TablePrefix {
        if !in_walab_node && in_earlier_node {
            TablePrefix::Earlier
        } else {
            TablePrefix::Walab
        }
    }
}

/// `{prefix}{crc32(cluster)}_{node}_{slot}`, checked to be a plain Postgres identifier.
pub fn slot_table_name(prefix: TablePrefix, cluster: &str, node: &str, slot: u64) -> Result<String, NameError> {
    let plain = !node.is_empty() && node.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if !plain {
        return Err(NameError::BadNode { node: node.to_string() });
    }
    let name = format!("{}{}_{}_{}", prefix.text(), cluster_tag(cluster), node, slot);
    if name.len() > IDENTIFIER_BYTES_MAX {
        return Err(NameError::TooLong { name });
    }
    Ok(name)
}
