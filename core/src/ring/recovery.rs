//! Recovery of the ring: the chain of rows from the trim offset to the first gap, where
//! a writer resumes, what the start-up does to each slot table, and when the URL's ring
//! replaces the stored one.
//!
//! # Follow the chain, stop at the first gap
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

use core::fmt;

use super::row::{decode_row, RowError, SlotRow};
use super::RingGeometry;
use crate::codec::tiny::TinyRecord;

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

/// A row's place without its body: what the chain is followed by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowPlace {
    pub slot: u64,
    pub start_offset: u64,
    pub end_offset: u64,
}

impl RowPlace {
    pub fn of(row: &SlotRow) -> RowPlace {
        RowPlace { slot: row.slot, start_offset: row.start_offset, end_offset: row.end_offset }
    }
}

/// The chain as the rows' places alone give it ([`plan_chain`]): the rows to check, in
/// order, where it ends, and the rows whose last seq the chain continues after.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainPlan {
    /// The rows on the chain, oldest first, as indices into the places planned over:
    /// each is checked ([`ChainWalk::row`]) in this order.
    pub rows: Vec<usize>,
    pub head: u64,
    pub stop: ChainStop,
    /// The rows that end exactly at the trim offset and start before it: the largest
    /// last seq among those that decode is [`ChainRecovery::seq_before_trim`].
    pub before_trim: Vec<RowPlace>,
}

/// Follows the chain from `trim_offset` over the rows' places (see the module docs);
/// which row comes next never depends on a row's bytes, so the bytes can be read and
/// checked afterwards, a few rows at a time ([`ChainWalk`]).
pub fn plan_chain(geometry: &RingGeometry, trim_offset: u64, places: &[RowPlace]) -> ChainPlan {
    let mut by_start = std::collections::BTreeMap::new();
    for (index, row) in places.iter().enumerate() {
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
    let before_trim =
        places.iter().filter(|row| row.end_offset == trim_offset && row.start_offset < trim_offset).copied().collect();
    let mut rows = Vec::new();
    let mut at = trim_offset;
    // Bounded by the rows: each step consumes one and moves `at` forward.
    for _ in 0..=places.len() {
        let next_generation_start = geometry.generation_start(geometry.generation(at) + 1);
        let index = match by_start.get(&at) {
            Some(&(index, _)) => index,
            None if !at.is_multiple_of(geometry.segment_bytes) => match by_start.get(&next_generation_start) {
                Some(&(index, _)) => index,
                None => break,
            },
            None => break,
        };
        rows.push(index);
        at = places[index].end_offset;
    }
    let rows_beyond = places.iter().filter(|row| row.start_offset >= at).count();
    let stop = if rows_beyond == 0 { ChainStop::End { at } } else { ChainStop::Gap { at, rows_beyond } };
    ChainPlan { rows, head: at, stop, before_trim }
}

/// The last seq of the rows that end at the trim offset ([`ChainPlan::before_trim`]),
/// from those that decode.
pub fn seq_before_trim(rows: &[SlotRow]) -> Option<u64> {
    rows.iter().filter_map(|row| decode_row(row).ok()).filter_map(|records| records.last().map(|r| r.seq)).max()
}

/// One row of the chain as recovery accepted it, without its records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeptRow {
    pub slot: u64,
    pub start_offset: u64,
    pub end_offset: u64,
    pub records: usize,
    pub last_seq: Option<u64>,
}

/// [`recover_chain`] a row at a time: feed [`ChainWalk::row`] the bodies of
/// [`ChainPlan::rows`] in order; each row's records go to the visitor once the row
/// passes every check, and the first failed check is the answer [`recover_chain`] gives.
#[derive(Clone, Debug)]
pub struct ChainWalk {
    geometry: RingGeometry,
    claimed_epoch: u64,
    epoch_before: u64,
    seq_before: u64,
    kept: Vec<KeptRow>,
}

/// [`ChainRecovery`] without the records: what a [`ChainWalk`] ends with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainSummary {
    pub rows: Vec<KeptRow>,
    pub head: u64,
    pub stop: ChainStop,
    pub seq_before_trim: Option<u64>,
}

impl ChainWalk {
    /// `claimed_epoch` is the newest epoch on the node row; no row may carry a newer one.
    pub fn new(geometry: &RingGeometry, claimed_epoch: u64, seq_before_trim: Option<u64>) -> ChainWalk {
        ChainWalk {
            geometry: *geometry,
            claimed_epoch,
            epoch_before: 0,
            seq_before: seq_before_trim.unwrap_or(0),
            kept: Vec::new(),
        }
    }

    /// Checks the chain's next row (see the module docs) and hands its records to
    /// `visit` in order once it passes.
    pub fn row(&mut self, row: &SlotRow, visit: &mut dyn FnMut(TinyRecord)) -> Result<(), ChainError> {
        let geometry = &self.geometry;
        let expected = geometry.slot(geometry.generation(row.start_offset));
        if row.slot != expected {
            return Err(ChainError::WrongSlot { slot: row.slot, start_offset: row.start_offset, expected });
        }
        let records = decode_row(row)
            .map_err(|error| ChainError::Row { slot: row.slot, start_offset: row.start_offset, error })?;
        if row.epoch < self.epoch_before {
            return Err(ChainError::EpochWentBack { start_offset: row.start_offset, epoch: row.epoch, before: self.epoch_before });
        }
        if row.epoch > self.claimed_epoch {
            return Err(ChainError::EpochFromTheFuture {
                start_offset: row.start_offset,
                epoch: row.epoch,
                claimed: self.claimed_epoch,
            });
        }
        self.epoch_before = row.epoch;
        for record in &records {
            if record.seq <= self.seq_before {
                return Err(ChainError::SeqWentBack { start_offset: row.start_offset, seq: record.seq, before: self.seq_before });
            }
            self.seq_before = record.seq;
        }
        let last_seq = records.last().map(|record| record.seq);
        self.kept.push(KeptRow {
            slot: row.slot,
            start_offset: row.start_offset,
            end_offset: row.end_offset,
            records: records.len(),
            last_seq,
        });
        records.into_iter().for_each(&mut *visit);
        Ok(())
    }

    /// The chain once every row of `plan` passed.
    pub fn finish(self, plan: &ChainPlan, seq_before_trim: Option<u64>) -> ChainSummary {
        ChainSummary { rows: self.kept, head: plan.head, stop: plan.stop, seq_before_trim }
    }
}

impl ChainSummary {
    /// The seq the next append gets.
    pub fn next_seq(&self) -> u64 {
        self.rows.iter().rev().find_map(|row| row.last_seq).or(self.seq_before_trim).map_or(1, |seq| seq + 1)
    }

    /// True when the chain holds no record (the WAL is drained).
    pub fn is_drained(&self) -> bool {
        self.rows.iter().all(|row| row.records == 0)
    }

    /// Where appends resume, and what the confirmations map starts with.
    pub fn resume_point(&self, geometry: &RingGeometry, trim_offset: u64) -> ResumePoint {
        // A row without records confirms up to the last record before it.
        let mut last = None;
        let rows: Vec<(u64, u64, Option<u64>)> = self
            .rows
            .iter()
            .map(|row| {
                last = row.last_seq.or(last);
                (row.start_offset, row.end_offset, last)
            })
            .collect();
        resume_point(&rows, self.head, geometry, trim_offset)
    }
}

/// Follows the chain of rows from `trim_offset`; see the module docs. `claimed_epoch` is
/// the newest epoch on the node row; no row may carry a newer one. Keeps every record:
/// [`plan_chain`] and a [`ChainWalk`] over rows all in memory.
pub fn recover_chain(
    geometry: &RingGeometry,
    trim_offset: u64,
    claimed_epoch: u64,
    rows: &[SlotRow],
) -> Result<ChainRecovery, ChainError> {
    let places: Vec<RowPlace> = rows.iter().map(RowPlace::of).collect();
    let plan = plan_chain(geometry, trim_offset, &places);
    let seq_before_trim = seq_before_trim(
        &rows.iter().filter(|row| row.end_offset == trim_offset && row.start_offset < trim_offset).cloned().collect::<Vec<_>>(),
    );
    let mut walk = ChainWalk::new(geometry, claimed_epoch, seq_before_trim);
    let mut records = Vec::new();
    for &index in &plan.rows {
        walk.row(&rows[index], &mut |record| records.push(record))?;
    }
    let summary = walk.finish(&plan, seq_before_trim);
    Ok(ChainRecovery {
        records,
        rows: summary.rows.iter().map(|row| (row.slot, row.start_offset, row.end_offset, row.records)).collect(),
        head: summary.head,
        stop: summary.stop,
        seq_before_trim,
    })
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
        let mut rows = Vec::with_capacity(self.rows.len());
        for &(_, start, end, count) in &self.rows {
            record_index += count;
            rows.push((start, end, self.records[..record_index].last().map(|record| record.seq)));
        }
        resume_point(&rows, self.head, geometry, trim_offset)
    }
}

/// Where appends resume after a chain of `rows` (start, end, the last seq of the chain
/// up to and with the row) ending at `head`.
fn resume_point(rows: &[(u64, u64, Option<u64>)], head: u64, geometry: &RingGeometry, trim_offset: u64) -> ResumePoint {
    let confirmations = rows.iter().filter_map(|&(_, end, last_seq)| last_seq.map(|seq| (seq, end))).collect();
    let head_generation = geometry.generation(head);
    let first_generation = geometry.first_kept_generation(trim_offset.min(head));
    let segments = (first_generation..=head_generation)
        .map(|generation| {
            let last = rows
                .iter()
                .filter(|(start, _, _)| geometry.generation(*start) == generation)
                .filter_map(|(_, _, last_seq)| *last_seq)
                .next_back();
            (generation, last)
        })
        .collect();
    ResumePoint { confirmations, segments, segment: head_generation, segment_bytes: head - geometry.generation_start(head_generation) }
}
