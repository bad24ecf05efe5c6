//! The Postgres WAL's ring of slot tables, as pure arithmetic and checks.
//!
//! # Why a ring of tables
//!
//! The stream store can keep its WAL in a Postgres database: every batch of records is
//! one row, written by one `INSERT` whose `COMMIT` is the batch's sync. Rows must also
//! go away again once the records they hold have been applied elsewhere (uploaded to
//! data objects), and deleting rows one by one is the expensive part of a table: dead
//! tuples, vacuum, bloat. `TRUNCATE` is cheap, but it empties a whole table. So the WAL
//! spreads its rows over a small, fixed set of tables, the *slots*, and always empties a
//! slot as a whole.
//!
//! The log's byte addresses (the offsets) are cut into *segments* of `segment_bytes`. The
//! segment an offset falls in is its *generation*, `offset / segment_bytes`, and
//! generation `g` lives in slot `g % segments`. A slot holds one generation at a time:
//! with 8 slots, generation 8 goes where generation 0 was, and may only go there once
//! generation 0 has been *trimmed* (every record in it confirmed by the consumer) and its
//! slot truncated. So the ring holds at most `segments` generations, one of which is
//! always being filled; the head can run at most `(segments - 1) x segment_bytes` ahead
//! of the oldest kept byte before appends wait. That product is the ring's *capacity*,
//! and it must exceed `maxUnflushedBytes` (the bytes appended but not yet durable that
//! the commit path lets pile up), so that a full commit pipeline always fits into the
//! ring at once.
//!
//! ```text
//!   offsets:  |  gen 0  |  gen 1  |  gen 2  |  gen 3  |  gen 4  |  gen 5  | ...
//!                  ^ trim offset                 ^ head
//!   slots (4): slot 0 = gen 0 (kept: the trim offset is inside it)
//!              slot 1 = gen 1, slot 2 = gen 2, slot 3 = gen 3 (being filled)
//!   gen 4 wants slot 0: it waits until the trim offset passes the end of gen 0.
//! ```
//!
//! # Offsets, and where a batch goes
//!
//! The native driver decides segments the way it does for files: a record that would
//! run past the end of the current segment starts the next one, so a batch never
//! straddles two generations and its offsets are `generation x segment_bytes + offset
//! in segment` ([`RingGeometry::address`]). The bytes counted are the records' own; the
//! frame around them costs nothing in the address space. A generation therefore usually
//! ends with a little slack, and the first batch of generation `g + 1` starts exactly at
//! [`RingGeometry::generation_start`]`(g + 1)`.
//!
//! # A row
//!
//! A row is `(start_offset, end_offset, epoch, body)`. The body is the stream WAL's frame
//! ([`crate::codec::stream`]): header (frame offset = `start_offset`, length, CRC32 over
//! the body), then the frame's records. The first frame record is the *batch header*,
//! the writer's epoch as 8 bytes little-endian, so that recovery can check the row's
//! `epoch` column against what the writer framed; the others are the batch's
//! tiny-store records, one frame record each ([`encode_row_body`], [`decode_row`]).
//!
//! # Recovery: follow the chain, stop at the first gap
//!
//! [`recover_chain`] starts at the trim offset and looks for the row that starts exactly
//! there, then for the row that starts where that one ends, and so on. When no row
//! starts where the last one ended, the only other place the log can continue is the
//! start of the next generation (the slack at a generation's end). The writer makes that
//! jump safe: it inserts the first batch of a generation only after every earlier batch
//! has committed (a pipeline drain once per segment), so a row at a generation's start
//! proves that nothing before it is missing. Anything else is a gap, and the chain stops
//! there. Rows left beyond the stop were never acknowledged (an acknowledgement needs
//! every earlier batch durable) and the writer deletes them before appending.
//!
//! Every row on the chain must pass every check ([`RowError`]): frame header, length,
//! CRC32, the batch header's epoch equal to the row's, each tiny record's own CRC32C, the
//! offsets adding up, seqs rising, epochs never falling. A row in Postgres is written
//! atomically, so unlike a torn file tail a failed check is corruption, reported as
//! such ([`ChainError`]), never skipped.
//!
//! # Names, settings, start-up, timelines
//!
//! The slot tables are `pico_wal_{cluster}_{node}_{slot}`, where `{cluster}` is the
//! CRC32 (IEEE) of the cluster id in 8 lowercase hex digits ([`slot_table_name`]). The
//! settings ride in the `--wal` URL's query and are taken out before the rest goes to
//! the Postgres client ([`split_wal_url`]). [`startup_checks`] and [`timeline_verdict`]
//! decide what the server's state means, [`clean_up_plan`] and [`ring_change`] what the
//! start-up does to the tables, [`ChainRecovery::resume_point`] where appends resume; the
//! native backend only asks the questions and runs the statements. When a batch may be
//! inserted, what a failure fails and how far confirmations trim is the log session's
//! ([`crate::session::ring`]).

use core::fmt;
use core::ops::Range;

use crate::checksum::{crc32, crc32c};
use crate::codec::stream::{decode_body, encode_frame_records, BodyError, FRAME_HEADER_BYTES};
use crate::codec::tiny::{self, PayloadError, TinyRecord};
use crate::time::Nanos;

/// The table of nodes: one row per (cluster, node).
pub const NODE_TABLE: &str = "pico_wal_node";
/// Postgres silently cuts identifiers longer than this, so longer names are refused.
pub const IDENTIFIER_BYTES_MAX: usize = 63;

/// Default number of slot tables.
pub const SEGMENTS_DEFAULT: u64 = 8;
/// The fewest slots: one being filled and one being trimmed.
pub const SEGMENTS_MIN: u64 = 2;
/// walab's bound on slot tables (the seed names none; tables are not free).
pub const SEGMENTS_MAX: u64 = 1024;
/// Default segment size: 64 MiB.
pub const SEGMENT_BYTES_DEFAULT: u64 = 64 << 20;
/// Largest segment: 4 GiB.
pub const SEGMENT_BYTES_MAX: u64 = 4 << 30;
/// Default batch interval: 1 ms.
pub const BATCH_INTERVAL_DEFAULT: Nanos = Nanos(1_000_000);
/// walab's bound on the batch interval: 10 s.
pub const BATCH_INTERVAL_MAX: Nanos = Nanos(10_000_000_000);
/// Default size that closes a batch early: 1 MiB.
pub const BATCH_BYTES_MAX_DEFAULT: u64 = 1 << 20;
/// walab's bound on a batch: 32 MiB, so a framed batch stays well inside the frame's
/// 64 MiB body limit.
pub const BATCH_BYTES_MAX_LIMIT: u64 = 32 << 20;
/// Default batches inserted at once, each on its own connection.
pub const INFLIGHT_MAX_DEFAULT: usize = 4;
/// walab's bound on concurrent inserts (each holds a connection).
pub const INFLIGHT_MAX_LIMIT: usize = 64;
/// Default bytes appended but not yet durable before appends wait: 128 MiB.
pub const UNFLUSHED_BYTES_MAX_DEFAULT: u64 = 128 << 20;
/// Bytes of the batch header record (the writer's epoch, u64 LE).
pub const BATCH_HEADER_BYTES: usize = 8;

/// The shape of the ring: how many slots, how many bytes per generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct RingGeometry {
    pub segments: u64,
    pub segment_bytes: u64,
}

impl Default for RingGeometry {
    fn default() -> RingGeometry {
        RingGeometry { segments: SEGMENTS_DEFAULT, segment_bytes: SEGMENT_BYTES_DEFAULT }
    }
}

/// What a slot holds, for drawing the ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum SlotState {
    /// Nothing: never used, or truncated.
    Free,
    /// A generation the consumer has not finished with.
    Kept { generation: u64 },
    /// The generation the head is filling.
    Head { generation: u64 },
}

impl RingGeometry {
    /// The generation (segment number) an offset falls in.
    pub fn generation(&self, offset: u64) -> u64 {
        offset / self.segment_bytes
    }

    /// The first offset of a generation.
    pub fn generation_start(&self, generation: u64) -> u64 {
        generation.saturating_mul(self.segment_bytes)
    }

    /// The slot a generation lives in.
    pub fn slot(&self, generation: u64) -> u64 {
        generation % self.segments
    }

    /// The offset of byte `offset_in_segment` of segment `generation`.
    pub fn address(&self, generation: u64, offset_in_segment: u64) -> u64 {
        self.generation_start(generation) + offset_in_segment
    }

    /// How far the head may run ahead of the oldest kept byte: `(segments - 1) x
    /// segment_bytes`.
    pub fn capacity_bytes(&self) -> u64 {
        (self.segments - 1).saturating_mul(self.segment_bytes)
    }

    /// The oldest generation the ring still keeps when the consumer has confirmed every
    /// byte below `trim_offset`: the generation of the last trimmed byte. A generation is
    /// released (its slot truncated) only once the trim offset has *passed* its end, so
    /// the row that ends at the trim offset stays, and with it the last seq handed out.
    pub fn first_kept_generation(&self, trim_offset: u64) -> u64 {
        if trim_offset == 0 {
            0
        } else {
            self.generation(trim_offset - 1)
        }
    }

    /// May a batch of `generation` be inserted, given the trim offset whose released
    /// slots have all been truncated? Its slot must not hold an older kept generation.
    pub fn may_write(&self, generation: u64, trim_offset: u64) -> bool {
        generation < self.first_kept_generation(trim_offset).saturating_add(self.segments)
    }

    /// The generations released when the trim offset moves from `old` to `new`: their
    /// slots are truncated in the same transaction that records `new`.
    pub fn released(&self, old_trim_offset: u64, new_trim_offset: u64) -> Range<u64> {
        let from = self.first_kept_generation(old_trim_offset);
        let to = self.first_kept_generation(new_trim_offset).max(from);
        from..to
    }

    /// What each slot holds, slot by slot, when the oldest kept byte is `trim_offset` and
    /// appends continue at `head`.
    pub fn slots(&self, trim_offset: u64, head: u64) -> Vec<SlotState> {
        let slots = usize::try_from(self.segments).unwrap_or(usize::MAX).min(SEGMENTS_MAX as usize);
        let mut states = vec![SlotState::Free; slots];
        let first = self.first_kept_generation(trim_offset);
        let head_generation = self.generation(head);
        let mut generation = first;
        // Bounded by the ring: at most `segments` generations are kept.
        while generation <= head_generation && generation < first + self.segments {
            let state = if generation == head_generation {
                SlotState::Head { generation }
            } else {
                SlotState::Kept { generation }
            };
            states[self.slot(generation) as usize] = state;
            generation += 1;
        }
        states
    }
}

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
    /// `allowUnsafe=true`: start even with `fsync = off` (with a warning).
    pub allow_unsafe: bool,
    /// `segments` and `segmentBytes`.
    pub geometry: RingGeometry,
    /// `batchInterval`: how long records gather before a batch is inserted.
    pub batch_interval: Nanos,
    /// `maxBytesInBatch`: the size that closes a batch early.
    pub batch_bytes_max: u64,
    /// `maxInflight`: batches inserted at once, each in its own transaction.
    pub inflight_max: usize,
    /// `maxUnflushedBytes`: bytes appended but not yet durable before appends wait.
    pub unflushed_bytes_max: u64,
    /// `synchronousCommit`.
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
                "segmentBytes={segment_bytes} is below maxBytesInBatch={batch_bytes_max}: a segment must hold a whole batch"
            ),
            SettingsError::SegmentBytesTooLarge { segment_bytes } => {
                write!(f, "segmentBytes={segment_bytes} is above the 4 GiB limit ({SEGMENT_BYTES_MAX})")
            }
            SettingsError::CapacityNotAboveUnflushed { capacity_bytes, unflushed_bytes_max } => write!(
                f,
                "the ring's capacity (segments - 1) x segmentBytes = {capacity_bytes} must exceed maxUnflushedBytes={unflushed_bytes_max}"
            ),
            SettingsError::BatchBytesZero => f.write_str("maxBytesInBatch must be at least 1"),
            SettingsError::BatchBytesTooLarge { batch_bytes_max } => {
                write!(f, "maxBytesInBatch={batch_bytes_max} is above walab's {BATCH_BYTES_MAX_LIMIT}")
            }
            SettingsError::InflightZero => f.write_str("maxInflight must be at least 1"),
            SettingsError::InflightTooMany { inflight_max } => {
                write!(f, "maxInflight={inflight_max} is above walab's {INFLIGHT_MAX_LIMIT} (one connection each)")
            }
            SettingsError::UnflushedBelowBatch { unflushed_bytes_max, batch_bytes_max } => write!(
                f,
                "maxUnflushedBytes={unflushed_bytes_max} is below maxBytesInBatch={batch_bytes_max}"
            ),
            SettingsError::IntervalZero => f.write_str("batchInterval must be longer than zero"),
            SettingsError::IntervalTooLong { batch_interval } => {
                write!(f, "batchInterval={} ns is above walab's 10 s", batch_interval.0)
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

/// The walab options a `--wal` URL may carry, in the seed's spelling.
pub const WALAB_OPTIONS: [&str; 8] = [
    "allowUnsafe",
    "segments",
    "segmentBytes",
    "batchInterval",
    "maxBytesInBatch",
    "maxInflight",
    "maxUnflushedBytes",
    "synchronousCommit",
];

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
    /// True when the URL names `segments` or `segmentBytes`: only then does it ask for a
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
        if !WALAB_OPTIONS.contains(&name) {
            return Err(UrlError::UnknownOption { name: name.to_string() });
        }
        if seen.contains(&name) {
            return Err(UrlError::Repeated { name: name.to_string() });
        }
        seen.push(name);
        let bad = |expected| UrlError::BadValue { name: name.to_string(), value: value.to_string(), expected };
        match name {
            "allowUnsafe" => {
                settings.allow_unsafe = match value {
                    "true" => true,
                    "false" => false,
                    _ => return Err(bad("true or false")),
                }
            }
            "segments" => settings.geometry.segments = value.parse().map_err(|_| bad("a whole number"))?,
            "segmentBytes" => settings.geometry.segment_bytes = parse_bytes(value).ok_or_else(|| bad(BYTES))?,
            "batchInterval" => settings.batch_interval = parse_duration(value).ok_or_else(|| bad(DURATION))?,
            "maxBytesInBatch" => settings.batch_bytes_max = parse_bytes(value).ok_or_else(|| bad(BYTES))?,
            "maxInflight" => settings.inflight_max = value.parse().map_err(|_| bad("a whole number"))?,
            "maxUnflushedBytes" => settings.unflushed_bytes_max = parse_bytes(value).ok_or_else(|| bad(BYTES))?,
            "synchronousCommit" => {
                settings.synchronous_commit =
                    SynchronousCommit::parse(value).ok_or_else(|| bad("on, remote_write, remote_apply or local"))?
            }
            _ => unreachable!("every walab option has an arm"),
        }
    }
    settings.validate().map_err(UrlError::Settings)?;
    let connect_url = if kept.is_empty() { base.to_string() } else { format!("{base}?{}", kept.join("&")) };
    let geometry_given = seen.iter().any(|name| *name == "segments" || *name == "segmentBytes");
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

/// `pico_wal_{crc32(cluster)}_{node}_{slot}`, checked to be a plain Postgres identifier.
pub fn slot_table_name(cluster: &str, node: &str, slot: u64) -> Result<String, NameError> {
    let plain = !node.is_empty() && node.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if !plain {
        return Err(NameError::BadNode { node: node.to_string() });
    }
    let name = format!("pico_wal_{}_{}_{}", cluster_tag(cluster), node, slot);
    if name.len() > IDENTIFIER_BYTES_MAX {
        return Err(NameError::TooLong { name });
    }
    Ok(name)
}

/// Why a row's body is not what its writer framed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RowError {
    /// Fewer bytes than a frame header.
    HeaderShort { bytes: usize },
    /// The frame's offset field is not the row's start offset.
    OffsetMismatch { row: u64, frame: u64 },
    /// The frame's length field is not the bytes after the header.
    LengthMismatch { header: u64, actual: u64 },
    /// The CRC32 over the body does not match.
    Checksum { stored: u32, computed: u32 },
    /// The body's record list does not parse.
    Body(BodyError),
    /// The first frame record is not an 8-byte batch header.
    NoBatchHeader,
    /// The row's epoch column differs from the epoch its writer framed.
    EpochMismatch { row: u64, frame: u64 },
    /// A frame record is not one whole tiny record.
    RecordLength { record: usize },
    /// A tiny record's own CRC32C does not match.
    RecordChecksum { record: usize },
    /// A tiny record's payload does not parse.
    RecordPayload { record: usize, error: PayloadError },
    /// `end_offset - start_offset` is not the bytes of the records.
    EndMismatch { row_end: u64, records_end: u64 },
}

impl fmt::Display for RowError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RowError::HeaderShort { bytes } => write!(f, "body of {bytes} bytes is shorter than a frame header"),
            RowError::OffsetMismatch { row, frame } => {
                write!(f, "frame offset {frame} differs from the row's start offset {row}")
            }
            RowError::LengthMismatch { header, actual } => {
                write!(f, "frame length {header} differs from the {actual} body bytes present")
            }
            RowError::Checksum { stored, computed } => {
                write!(f, "checksum mismatch: stored {stored:08x}, computed {computed:08x}")
            }
            RowError::Body(error) => error.fmt(f),
            RowError::NoBatchHeader => f.write_str("the frame has no 8-byte batch header (epoch)"),
            RowError::EpochMismatch { row, frame } => {
                write!(f, "row epoch {row} differs from the epoch {frame} in its frame")
            }
            RowError::RecordLength { record } => write!(f, "frame record {record} is not one whole tiny record"),
            RowError::RecordChecksum { record } => write!(f, "tiny record {record} fails its crc32c"),
            RowError::RecordPayload { record, error } => write!(f, "tiny record {record}: payload {error:?}"),
            RowError::EndMismatch { row_end, records_end } => {
                write!(f, "end offset {row_end} differs from start + record bytes = {records_end}")
            }
        }
    }
}

/// The body of the row for a batch: the stream frame at `start_offset` holding the batch
/// header (`epoch`) and each of the batch's tiny records, as the group-commit machine
/// hands them out ([`Batch::records`](crate::group_commit::Batch::records)).
pub fn encode_row_body<'a>(start_offset: u64, epoch: u64, records: impl Iterator<Item = &'a [u8]> + Clone) -> Vec<u8> {
    let header = epoch.to_le_bytes();
    let header: &[u8] = &header;
    encode_frame_records(start_offset, core::iter::once(header).chain(records.map(|record| -> &[u8] { record })))
}

/// True when `record` is exactly one tiny record by its length field.
fn is_one_tiny_record(record: &[u8]) -> bool {
    record.len() >= tiny::HEADER_BYTES
        && record.len() == tiny::HEADER_BYTES + usize::from(u16::from_le_bytes([record[4], record[5]]))
}

/// A row as read back from a slot table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlotRow {
    pub slot: u64,
    pub start_offset: u64,
    pub end_offset: u64,
    pub epoch: u64,
    pub body: Vec<u8>,
}

/// Checks a row against its frame and returns its records.
pub fn decode_row(row: &SlotRow) -> Result<Vec<TinyRecord>, RowError> {
    let body = &row.body;
    if body.len() < FRAME_HEADER_BYTES {
        return Err(RowError::HeaderShort { bytes: body.len() });
    }
    let frame_offset = u64::from_le_bytes(body[..8].try_into().expect("eight bytes"));
    let length = u64::from(u32::from_le_bytes(body[8..12].try_into().expect("four bytes")));
    let stored = u32::from_le_bytes(body[12..16].try_into().expect("four bytes"));
    if frame_offset != row.start_offset {
        return Err(RowError::OffsetMismatch { row: row.start_offset, frame: frame_offset });
    }
    let payload = &body[FRAME_HEADER_BYTES..];
    if length != payload.len() as u64 {
        return Err(RowError::LengthMismatch { header: length, actual: payload.len() as u64 });
    }
    let computed = crc32(payload);
    if computed != stored {
        return Err(RowError::Checksum { stored, computed });
    }
    let mut frame_records = decode_body(payload).map_err(RowError::Body)?.into_iter();
    let header = frame_records.next().filter(|h| h.len() == BATCH_HEADER_BYTES).ok_or(RowError::NoBatchHeader)?;
    let frame_epoch = u64::from_le_bytes(header[..].try_into().expect("eight bytes"));
    if frame_epoch != row.epoch {
        return Err(RowError::EpochMismatch { row: row.epoch, frame: frame_epoch });
    }
    let mut records = Vec::new();
    let mut bytes = 0u64;
    for (index, record) in frame_records.enumerate() {
        if !is_one_tiny_record(&record) {
            return Err(RowError::RecordLength { record: index });
        }
        let stored = u32::from_le_bytes(record[..4].try_into().expect("four bytes"));
        if crc32c(&[&record[6..]]) != stored {
            return Err(RowError::RecordChecksum { record: index });
        }
        let decoded = tiny::decode_payload(&record[tiny::HEADER_BYTES..])
            .map_err(|error| RowError::RecordPayload { record: index, error })?;
        bytes += record.len() as u64;
        records.push(decoded);
    }
    let records_end = row.start_offset + bytes;
    if records_end != row.end_offset {
        return Err(RowError::EndMismatch { row_end: row.end_offset, records_end });
    }
    Ok(records)
}

/// Why the chain holds something that must not be there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChainError {
    /// A row on the chain fails a check.
    Row { slot: u64, start_offset: u64, error: RowError },
    /// A row on the chain is in a slot its generation does not map to.
    WrongSlot { slot: u64, start_offset: u64, expected: u64 },
    /// A row's epoch is below an earlier row's: written by a writer already fenced.
    EpochWentBack { start_offset: u64, epoch: u64, before: u64 },
    /// A row's epoch is above the newest claimed epoch.
    EpochFromTheFuture { start_offset: u64, epoch: u64, claimed: u64 },
    /// A record's seq does not rise above the previous one.
    SeqWentBack { start_offset: u64, seq: u64, before: u64 },
}

impl fmt::Display for ChainError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChainError::Row { slot, start_offset, error } => {
                write!(f, "slot {slot}, row at offset {start_offset}: {error}")
            }
            ChainError::WrongSlot { slot, start_offset, expected } => {
                write!(f, "row at offset {start_offset} is in slot {slot}, its generation maps to slot {expected}")
            }
            ChainError::EpochWentBack { start_offset, epoch, before } => {
                write!(f, "row at offset {start_offset} has epoch {epoch}, below the earlier {before}")
            }
            ChainError::EpochFromTheFuture { start_offset, epoch, claimed } => {
                write!(f, "row at offset {start_offset} has epoch {epoch}, above the claimed {claimed}")
            }
            ChainError::SeqWentBack { start_offset, seq, before } => {
                write!(f, "row at offset {start_offset} holds seq {seq}, not above the earlier {before}")
            }
        }
    }
}

/// How the chain ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum ChainStop {
    /// No row starts where the last ended, nor at the next generation's start, and no
    /// row lies beyond: the clean end of the log.
    End { at: u64 },
    /// The same, but rows lie beyond `at`: batches that committed after a gap, never
    /// acknowledged. The writer deletes them.
    Gap { at: u64, rows_beyond: usize },
}

/// What [`recover_chain`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainRecovery {
    /// The records of every row on the chain, in order.
    pub records: Vec<TinyRecord>,
    /// The rows on the chain: (slot, start offset, end offset, records).
    pub rows: Vec<(u64, u64, u64, usize)>,
    /// Where appends continue.
    pub head: u64,
    pub stop: ChainStop,
    /// The last seq of the row that ends at the trim offset, if it is still there: the
    /// seq to continue after when the chain itself is empty.
    pub seq_before_trim: Option<u64>,
}

impl ChainRecovery {
    /// The seq the next append gets.
    pub fn next_seq(&self) -> u64 {
        self.records.last().map(|r| r.seq).or(self.seq_before_trim).map_or(1, |seq| seq + 1)
    }
}

/// Follows the chain of rows from `trim_offset`; see the module docs. `claimed_epoch` is
/// the newest epoch on the node row; no row may carry a newer one.
pub fn recover_chain(
    geometry: &RingGeometry,
    trim_offset: u64,
    claimed_epoch: u64,
    rows: &[SlotRow],
) -> Result<ChainRecovery, ChainError> {
    let mut by_start = std::collections::BTreeMap::new();
    for (index, row) in rows.iter().enumerate() {
        // Two rows at one offset can only be in different slots; prefer the one whose
        // generation maps to its slot, which is the only one the writer could have made.
        let fits = row.slot == geometry.slot(geometry.generation(row.start_offset));
        match by_start.get(&row.start_offset) {
            Some(&(_, true)) => {}
            _ => {
                by_start.insert(row.start_offset, (index, fits));
            }
        }
    }
    let seq_before_trim = rows
        .iter()
        .filter(|row| row.end_offset == trim_offset && row.start_offset < trim_offset)
        .filter_map(|row| decode_row(row).ok())
        .filter_map(|records| records.last().map(|r| r.seq))
        .max();
    let mut recovery =
        ChainRecovery { records: Vec::new(), rows: Vec::new(), head: trim_offset, stop: ChainStop::End { at: trim_offset }, seq_before_trim };
    let mut at = trim_offset;
    let mut epoch_before = 0u64;
    let mut seq_before = seq_before_trim.unwrap_or(0);
    // Bounded by the rows: each step consumes one and moves `at` forward.
    for _ in 0..=rows.len() {
        let next_generation_start = geometry.generation_start(geometry.generation(at) + 1);
        let index = match by_start.get(&at) {
            Some(&(index, _)) => index,
            None if !at.is_multiple_of(geometry.segment_bytes) => match by_start.get(&next_generation_start) {
                Some(&(index, _)) => index,
                None => break,
            },
            None => break,
        };
        let row = &rows[index];
        let expected = geometry.slot(geometry.generation(row.start_offset));
        if row.slot != expected {
            return Err(ChainError::WrongSlot { slot: row.slot, start_offset: row.start_offset, expected });
        }
        let records = decode_row(row)
            .map_err(|error| ChainError::Row { slot: row.slot, start_offset: row.start_offset, error })?;
        if row.epoch < epoch_before {
            return Err(ChainError::EpochWentBack { start_offset: row.start_offset, epoch: row.epoch, before: epoch_before });
        }
        if row.epoch > claimed_epoch {
            return Err(ChainError::EpochFromTheFuture {
                start_offset: row.start_offset,
                epoch: row.epoch,
                claimed: claimed_epoch,
            });
        }
        epoch_before = row.epoch;
        for record in &records {
            if record.seq <= seq_before {
                return Err(ChainError::SeqWentBack { start_offset: row.start_offset, seq: record.seq, before: seq_before });
            }
            seq_before = record.seq;
        }
        recovery.rows.push((row.slot, row.start_offset, row.end_offset, records.len()));
        recovery.records.extend(records);
        at = row.end_offset;
    }
    recovery.head = at;
    let rows_beyond = rows.iter().filter(|row| row.start_offset >= at).count();
    recovery.stop = if rows_beyond == 0 { ChainStop::End { at } } else { ChainStop::Gap { at, rows_beyond } };
    Ok(recovery)
}

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
                "the server runs with fsync = off, so a commit is not durable; add allowUnsafe=true to the URL to start anyway"
            }
        })
    }
}

/// What the WAL warns about at start, but starts anyway.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartupWarning {
    /// `fsync = off` with `allowUnsafe=true`.
    FsyncOffAllowed,
    /// No synchronous standby: losing the primary host loses what was not replicated.
    NoSynchronousStandby,
}

impl fmt::Display for StartupWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StartupWarning::FsyncOffAllowed => {
                "fsync = off (allowed by allowUnsafe=true): a crash of the server can lose acknowledged records"
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
    /// The database was restored from a backup: records after the backup point are gone.
    Lower { recorded: u32, current: u32 },
    /// A standby was promoted, and a synchronous standby had every acknowledged commit.
    HigherSynchronous { recorded: u32, current: u32 },
    /// A standby was promoted without a synchronous standby: records acknowledged after
    /// its last replayed commit are lost.
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
                "timeline {current} is below the {recorded} recorded at the last start: the database was restored from a backup, and records after the backup point are gone"
            ),
            TimelineVerdict::HigherSynchronous { recorded, current } => write!(
                f,
                "timeline {current} is above the {recorded} recorded at the last start: a standby was promoted; with a synchronous standby nothing acknowledged is lost"
            ),
            TimelineVerdict::HigherAsynchronous { recorded, current } => write!(
                f,
                "timeline {current} is above the {recorded} recorded at the last start and synchronous_standby_names is empty: a standby was promoted, and records acknowledged after its last replayed commit are lost"
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

/// What the writer does to one slot table at start-up, under the fence, once the chain
/// is known ([`clean_up_plan`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotCleanUp {
    /// The slot keeps a generation the log still holds: its rows at or beyond the
    /// chain's head were never acknowledged and are deleted.
    DeleteFrom { head: u64 },
    /// The slot keeps nothing (its generations were released, or never written): it is
    /// truncated.
    Truncate,
}

/// The start-up clean-up, one entry per slot: the slots of the generations from the
/// trim offset's to the head's keep their rows before `head`, every other slot is
/// emptied.
pub fn clean_up_plan(geometry: &RingGeometry, trim_offset: u64, head: u64) -> Vec<SlotCleanUp> {
    let first = geometry.first_kept_generation(trim_offset);
    let last = geometry.generation(head).max(first);
    // Past `segments` generations every slot is kept: the walk stops there.
    let kept_generations = (last - first).saturating_add(1).min(geometry.segments);
    let mut plan = vec![SlotCleanUp::Truncate; usize::try_from(geometry.segments).unwrap_or(usize::MAX)];
    for generation in first..first + kept_generations {
        plan[geometry.slot(generation) as usize] = SlotCleanUp::DeleteFrom { head };
    }
    plan
}

/// Whether the ring the URL asks for replaces the stored one at this start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RingChange {
    /// The URL names no ring, or the stored one.
    Unchanged,
    /// The WAL is drained (nothing to replay): the stored ring's tables are dropped and
    /// the requested ring's are created.
    Apply,
    /// Records are still to be replayed: the stored ring stays until a drained start.
    Deferred,
}

/// The ring decision at start-up: a ring named in the URL (`given`) that differs from
/// the stored one applies only when the WAL is `drained`.
pub fn ring_change(stored: &RingGeometry, requested: &RingGeometry, given: bool, drained: bool) -> RingChange {
    if !given || requested == stored {
        RingChange::Unchanged
    } else if drained {
        RingChange::Apply
    } else {
        RingChange::Deferred
    }
}

/// The timeline in the first 8 hex digits of a WAL file's name (`pg_walfile_name`).
pub fn parse_timeline(hex: &str) -> Option<u32> {
    u32::from_str_radix(hex, 16).ok()
}

/// Where a writer resumes after [`recover_chain`], in a ring of `geometry`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResumePoint {
    /// (last seq, end offset) of each row on the chain, oldest first: what confirmations
    /// are mapped with ([`crate::session::ring::RingSchedule::new`]).
    pub confirmations: std::collections::VecDeque<(u64, u64)>,
    /// Every generation from the trim offset's to the head's, with the last seq of the
    /// rows on the chain in it (none when the chain has no row there).
    pub segments: Vec<(u64, Option<u64>)>,
    /// The head's generation and the bytes already in it.
    pub segment: u64,
    pub segment_bytes: u64,
}

impl ChainRecovery {
    /// Where appends resume, and what the confirmations map starts with.
    pub fn resume_point(&self, geometry: &RingGeometry, trim_offset: u64) -> ResumePoint {
        let mut record_index = 0usize;
        let mut last_seqs = Vec::with_capacity(self.rows.len());
        for &(_, _, _, count) in &self.rows {
            record_index += count;
            last_seqs.push(self.records[..record_index].last().map(|record| record.seq));
        }
        let confirmations = self
            .rows
            .iter()
            .zip(&last_seqs)
            .filter_map(|(&(_, _, end, _), last_seq)| last_seq.map(|seq| (seq, end)))
            .collect();
        let head_generation = geometry.generation(self.head);
        let first_generation = geometry.first_kept_generation(trim_offset.min(self.head));
        let segments = (first_generation..=head_generation)
            .map(|generation| {
                let last = self
                    .rows
                    .iter()
                    .zip(&last_seqs)
                    .filter(|((_, start, _, _), _)| geometry.generation(*start) == generation)
                    .filter_map(|(_, last_seq)| *last_seq)
                    .next_back();
                (generation, last)
            })
            .collect();
        ResumePoint {
            confirmations,
            segments,
            segment: head_generation,
            segment_bytes: self.head - geometry.generation_start(head_generation),
        }
    }
}

/// A row's offsets end, epoch and body, for [`judge_stored_row`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowAt<'a> {
    pub end: u64,
    pub epoch: u64,
    pub body: &'a [u8],
}

/// What the row already at a batch's offset means when the batch's fenced insert
/// inserted nothing ([`judge_stored_row`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoredRowVerdict {
    /// The same end, epoch and bytes: an earlier attempt of this insert committed.
    Committed,
    /// A row of another epoch: a newer writer owns the log.
    Fenced,
    /// The same epoch with other bytes or another end: corruption, never success.
    Mismatch,
}

/// A lost reply says nothing about whether the `COMMIT` happened, so a retried insert
/// that finds a row at its offset compares it with its own batch (`ours`).
pub fn judge_stored_row(ours: &RowAt<'_>, stored: &RowAt<'_>) -> StoredRowVerdict {
    if stored == ours {
        StoredRowVerdict::Committed
    } else if stored.epoch != ours.epoch {
        StoredRowVerdict::Fenced
    } else {
        StoredRowVerdict::Mismatch
    }
}

#[cfg(test)]
mod tests;
