//! The object-store WAL's recovery after the reads: which objects count, what is left
//! out, and when the log must be refused.
//!
//! [`plan_chain`](super::layout::plan_chain) decides from the LIST alone which objects
//! may form the log. The backend then reads them, and [`ChainWalk`] checks each one's
//! bytes ([`decode_object`]) in order, as they arrive (a backend holds a few objects, not
//! the log), and decides what the reads mean ([`walk_chain`] is the same over bodies all
//! read):
//!
//! - The walk stops at the first damaged object. A PUT is all or nothing, so damage is
//!   never a torn write: if anything valid lies past the damaged object, something that
//!   may have been acknowledged is out of reach, and recovery refuses
//!   ([`OutOfReach`]). A damaged object at the very end is left out.
//! - After a gap, objects of the same session are a pipeline's unacknowledged tail (a
//!   later upload stored, an earlier one not): left out. A *later* session's object past
//!   the gap was recovered, and maybe acknowledged, by someone who saw past it: refused.
//! - The new session starts where the chain ends, with the seq after its last record.
//! - Everything left out of an older epoch than the claimer's is garbage, deleted once
//!   the new session is recorded. A reader that claimed nothing deletes nothing.

use core::fmt;

use super::layout::{ChainPlan, ChainStop, Ignored, Session, WalObject};
use crate::codec::stream::scan_stream;
use crate::codec::tiny::TinyRecord;
use crate::scan::{scan_tiny, StopReason};

/// Why an object failed its check at recovery.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ObjectDamage {
    /// The frame scan stopped before the object's end (checksum, length, offset, ...).
    Frame(StopReason),
    /// The object holds more or less than one frame ending at the key's `end`.
    Size { expected: u64, found: u64 },
    /// A record inside failed its own check.
    Record(StopReason),
    /// A record's seq is not one more than the previous record's.
    SeqOrder { expected: u64, found: u64 },
}

impl fmt::Display for ObjectDamage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ObjectDamage::Frame(reason) => write!(f, "frame stops with {}", reason.name()),
            ObjectDamage::Size { expected, found } => write!(f, "{found} bytes of frame, the key says {expected}"),
            ObjectDamage::Record(reason) => write!(f, "a record inside stops with {}", reason.name()),
            ObjectDamage::SeqOrder { expected, found } => write!(f, "record seq {found} where {expected} was next"),
        }
    }
}

impl std::error::Error for ObjectDamage {}

/// Checks one object's bytes against its name and decodes its records: one stream frame
/// starting at the key's `start` and ending at its `end`, holding whole tiny records
/// whose seqs rise by one. `expected_seq` is the seq the first record must carry (`None`
/// for the first object of the log).
pub fn decode_object(object: &WalObject, bytes: &[u8], expected_seq: Option<u64>) -> Result<Vec<TinyRecord>, ObjectDamage> {
    let scan = scan_stream(&[bytes], Some(object.start), 0);
    if scan.frames.len() != 1 || !scan.stop.reason.is_clean() {
        return Err(ObjectDamage::Frame(if scan.stop.reason.is_clean() { StopReason::BadLength } else { scan.stop.reason }));
    }
    let found = bytes.len() as u64;
    if scan.next_offset != Some(object.end) || found != object.bytes() {
        return Err(ObjectDamage::Size { expected: object.bytes(), found });
    }
    let joined: Vec<u8> = scan.frames[0].frame.records.concat();
    let records = scan_tiny(&[&joined], 0);
    if records.stop.reason != StopReason::End || records.records.len() != scan.frames[0].frame.records.len() {
        return Err(ObjectDamage::Record(if records.stop.reason == StopReason::End {
            StopReason::BadLength
        } else {
            records.stop.reason
        }));
    }
    let mut expected = expected_seq;
    let mut out = Vec::with_capacity(records.records.len());
    for accepted in records.records {
        if let Some(expected) = expected {
            if accepted.record.seq != expected {
                return Err(ObjectDamage::SeqOrder { expected, found: accepted.record.seq });
            }
        }
        expected = Some(accepted.record.seq + 1);
        out.push(accepted.record);
    }
    Ok(out)
}

/// Where the readable log ended, when that is not simply its last object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WalkStop {
    /// This object failed its check.
    Damaged { object: WalObject, damage: ObjectDamage },
    /// No valid object starts at `offset`.
    Gap { offset: u64 },
    /// The chain ended, yet a valid object lies beyond it.
    EarlyEnd,
}

/// Recovery must refuse: past where the log stops, `beyond` may hold acknowledged records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutOfReach {
    pub stop: WalkStop,
    pub beyond: WalObject,
}

/// What recovery left out of a log it accepts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LeftOut {
    /// The last object failed its check.
    LastObject { object: WalObject, damage: ObjectDamage },
    /// No object starts at `offset`; `objects` later ones (never acknowledged) are dropped.
    AfterGap { offset: u64, objects: usize },
}

/// The log as recovery accepts it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Walked {
    /// The objects that form the log, oldest first, with their records.
    pub chain: Vec<(WalObject, Vec<TinyRecord>)>,
    /// Where the new session starts, and its first seq.
    pub start_offset: u64,
    pub next_seq: u64,
    pub left_out: Option<LeftOut>,
    /// Objects to delete once the new session is recorded, in key order.
    pub garbage: Vec<WalObject>,
}

/// One object of the chain as recovery accepted it, without its records (a
/// [`ChainWalk`] handed them over as it checked them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeptObject {
    pub object: WalObject,
    /// The bytes of its records (each tiny record whole), and the seq of its last one.
    pub record_bytes: u64,
    pub last_seq: Option<u64>,
}

/// [`Walked`] without the records: what a [`ChainWalk`] ends with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WalkedSummary {
    pub chain: Vec<KeptObject>,
    pub start_offset: u64,
    pub next_seq: u64,
    pub left_out: Option<LeftOut>,
    pub garbage: Vec<WalObject>,
}

/// [`walk_chain`] one object at a time, so that recovery holds one object's bytes and
/// records, not the log's: feed [`ChainWalk::object`] the bodies of `plan.chain` in order
/// (each object's records go to the visitor once the whole object checks out), stop at
/// the first that returns false (a damaged object: nothing past it is read), then
/// [`ChainWalk::finish`] decides exactly what [`walk_chain`] decides.
#[derive(Clone, Debug, Default)]
pub struct ChainWalk {
    kept: Vec<KeptObject>,
    expected_seq: Option<u64>,
    damage: Option<(WalObject, ObjectDamage)>,
}

impl ChainWalk {
    pub fn new() -> ChainWalk {
        ChainWalk::default()
    }

    /// Checks the chain's next object; when it checks out, hands its records to `visit`
    /// in seq order and returns true. Returns false once an object failed its check
    /// (this one or an earlier one): the walk stops there.
    pub fn object(&mut self, object: &WalObject, bytes: &[u8], visit: &mut dyn FnMut(TinyRecord)) -> bool {
        if self.damage.is_some() {
            return false;
        }
        match decode_object(object, bytes, self.expected_seq) {
            Ok(records) => {
                let last_seq = records.last().map(|record| record.seq);
                if let Some(last) = last_seq {
                    self.expected_seq = Some(last + 1);
                }
                let record_bytes = records.iter().map(|r| crate::codec::tiny::record_len(r.key.len(), r.value.len()) as u64).sum();
                self.kept.push(KeptObject { object: *object, record_bytes, last_seq });
                records.into_iter().for_each(&mut *visit);
                true
            }
            Err(damage) => {
                self.damage = Some((*object, damage));
                false
            }
        }
    }

    /// What recovery keeps, leaves out, deletes or refuses (see the module docs), once
    /// every object of `plan.chain` up to the first damaged one was fed. `sessions` are
    /// the registration's; `claimed_epoch` is the epoch this process claimed, `None`
    /// when it only reads (then nothing is garbage).
    pub fn finish(self, plan: &ChainPlan, sessions: &[Session], claimed_epoch: Option<u64>) -> Result<WalkedSummary, OutOfReach> {
        let ChainWalk { kept: chain, expected_seq, damage } = self;
        let start_offset = chain.last().map(|kept| kept.object.end).unwrap_or_else(|| {
            plan.chain.first().map(|o| o.start).or(sessions.last().map(|s| s.start_offset)).unwrap_or(0)
        });
        let beyond: Vec<WalObject> = plan
            .chain
            .iter()
            .skip(chain.len() + usize::from(damage.is_some()))
            .copied()
            .chain(plan.ignored.iter().filter(|(_, why)| *why == Ignored::AfterGap).map(|(o, _)| *o))
            .collect();
        let session_start = |epoch: u64| sessions.iter().find(|s| s.epoch == epoch).map(|s| s.start_offset);
        let out_of_reach = match &damage {
            Some(_) => beyond.first(),
            None => beyond.iter().find(|object| session_start(object.epoch).is_some_and(|start| start > start_offset)),
        };
        if let Some(&later) = out_of_reach {
            let stop = match (&damage, plan.stop) {
                (Some((object, damage)), _) => WalkStop::Damaged { object: *object, damage: damage.clone() },
                (None, ChainStop::Gap { offset }) => WalkStop::Gap { offset },
                (None, ChainStop::End) => WalkStop::EarlyEnd,
            };
            return Err(OutOfReach { stop, beyond: later });
        }
        let left_out = match (&damage, plan.stop) {
            (Some((object, damage)), _) => Some(LeftOut::LastObject { object: *object, damage: damage.clone() }),
            (None, ChainStop::Gap { offset }) => Some(LeftOut::AfterGap { offset, objects: beyond.len() }),
            (None, ChainStop::End) => None,
        };
        let next_seq = expected_seq.unwrap_or_else(|| sessions.last().map_or(1, |s| s.first_seq));
        let mut garbage: Vec<WalObject> = plan.ignored.iter().map(|(object, _)| *object).collect();
        garbage.extend(beyond);
        garbage.extend(damage.map(|(object, _)| object));
        crate::sort::sort(&mut garbage);
        garbage.dedup();
        garbage.retain(|object| claimed_epoch.is_some_and(|claimed| object.epoch < claimed));
        Ok(WalkedSummary { chain, start_offset, next_seq, left_out, garbage })
    }
}

/// Walks `plan`'s chain over the objects' bytes (`bodies[i]` is `plan.chain[i]`'s) and
/// decides what recovery keeps (see the module docs), keeping every record: a
/// [`ChainWalk`] fed every body. `sessions` are the registration's; `claimed_epoch` is
/// the epoch this process claimed, `None` when it only reads (then nothing is garbage).
pub fn walk_chain<B: AsRef<[u8]>>(
    plan: &ChainPlan,
    bodies: &[B],
    sessions: &[Session],
    claimed_epoch: Option<u64>,
) -> Result<Walked, OutOfReach> {
    let mut walk = ChainWalk::new();
    let mut records: Vec<Vec<TinyRecord>> = Vec::new();
    for (object, body) in plan.chain.iter().zip(bodies) {
        let mut these = Vec::new();
        if !walk.object(object, body.as_ref(), &mut |record| these.push(record)) {
            break;
        }
        records.push(these);
    }
    let summary = walk.finish(plan, sessions, claimed_epoch)?;
    let chain = summary.chain.iter().map(|kept| kept.object).zip(records).collect();
    let WalkedSummary { start_offset, next_seq, left_out, garbage, .. } = summary;
    Ok(Walked { chain, start_offset, next_seq, left_out, garbage })
}

#[cfg(test)]
mod tests;
