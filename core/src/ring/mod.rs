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
//! and it must exceed `max_unflushed_bytes` (the bytes appended but not yet durable that
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
//! The log session cuts segments the way it does for files ([`crate::session::rollover`]):
//! a record that would run past the end of the current segment starts the next one, so
//! a batch never
//! straddles two generations and its offsets are `generation x segment_bytes + offset
//! in segment` ([`RingGeometry::address`]). The bytes counted are the records' own; the
//! frame around them costs nothing in the address space. A generation therefore usually
//! ends with a little slack, and the first batch of generation `g + 1` starts exactly at
//! [`RingGeometry::generation_start`]`(g + 1)`.
//!
//! # The parts
//!
//! - [`row`]: a row, its frame and its checks; [`recovery`]: the chain from the trim
//!   offset, where a writer resumes, the start-up's clean-up and ring change;
//!   [`settings`]: the URL's settings and the tables' names; [`startup`]: the server's
//!   state and the timeline, judged.
//!
//! The slot tables are `walab_{cluster}_{node}_{slot}`, where `{cluster}` is the CRC32
//! (IEEE) of the cluster id in 8 lowercase hex digits ([`slot_table_name`]); a cluster
//! made before the tables took walab's name keeps `pico_wal_` ([`TablePrefix`]). The
//! settings ride in the `--wal` URL's query and are taken out before the rest goes to
//! the Postgres client ([`split_wal_url`]). [`startup_checks`] and [`timeline_verdict`]
//! decide what the server's state means, [`clean_up_plan`] and [`ring_change`] what the
//! start-up does to the tables, [`ChainRecovery::resume_point`] where appends resume; the
//! native backend only asks the questions and runs the statements. When a batch may be
//! inserted, what a failure fails and how far confirmations trim is the log session's
//! ([`crate::session::ring`]).

use core::ops::Range;

use crate::time::Nanos;

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

pub mod recovery;
pub mod row;
pub mod settings;
pub mod startup;

pub use self::recovery::{
    clean_up_plan, plan_chain, recover_chain, ring_change, seq_before_trim, ChainError, ChainPlan, ChainRecovery, ChainStop,
    ChainSummary, ChainWalk, KeptRow, ResumePoint, RingChange, RowPlace, SlotCleanUp,
};
pub use self::row::{decode_row, encode_row_body, judge_stored_row, RowAt, RowError, SlotRow, StoredRowVerdict};
pub use self::settings::{
    cluster_tag, parse_bytes, parse_duration, slot_table_name, split_wal_url, NameError, PgWalSettings, SettingsError,
    SplitUrl, SynchronousCommit, TablePrefix, UrlError, walab_option, CLIENT_OPTIONS, WALAB_OPTIONS, WALAB_OPTION_ALIASES,
};
pub use self::startup::{
    parse_timeline, startup_checks, timeline_verdict, ServerState, Severity, StartupRefusal, StartupWarning,
    TimelineVerdict,
};

#[cfg(test)]
mod tests;
