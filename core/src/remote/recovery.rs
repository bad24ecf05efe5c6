//! The object-store WAL's recovery after the reads: which objects count, what is left
//! out, and when the log must be refused.
//!
//! [`plan_chain`](super::layout::plan_chain) decides from the LIST alone which objects
//! may form the log. The backend then reads them, and [`walk_chain`] checks each one's
//! bytes ([`decode_object`]) in order and decides what the reads mean:
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

/// Walks `plan`'s chain over the objects' bytes (`bodies[i]` is `plan.chain[i]`'s) and
/// decides what recovery keeps (see the module docs). `sessions` are the registration's;
/// `claimed_epoch` is the epoch this process claimed, `None` when it only reads (then
/// nothing is garbage).
pub fn walk_chain<B: AsRef<[u8]>>(
    plan: &ChainPlan,
    bodies: &[B],
    sessions: &[Session],
    claimed_epoch: Option<u64>,
) -> Result<Walked, OutOfReach> {
    let (chain, expected_seq, damage) = check_objects(plan, bodies);
    let start_offset = chain.last().map(|(object, _)| object.end).unwrap_or_else(|| {
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
    Ok(Walked { chain, start_offset, next_seq, left_out, garbage })
}

/// The objects that check out, in chain order, up to the first damaged one; and the seq
/// after the last good record.
#[allow(clippy::type_complexity)]
fn check_objects<B: AsRef<[u8]>>(
    plan: &ChainPlan,
    bodies: &[B],
) -> (Vec<(WalObject, Vec<TinyRecord>)>, Option<u64>, Option<(WalObject, ObjectDamage)>) {
    let mut chain = Vec::new();
    let mut expected_seq = None;
    for (object, body) in plan.chain.iter().zip(bodies) {
        match decode_object(object, body.as_ref(), expected_seq) {
            Ok(records) => {
                if let Some(last) = records.last() {
                    expected_seq = Some(last.seq + 1);
                }
                chain.push((*object, records));
            }
            Err(damage) => return (chain, expected_seq, Some((*object, damage))),
        }
    }
    (chain, expected_seq, None)
}

#[cfg(test)]
mod tests;
