//! One upload of a sealed block, in the one order every uploader follows: `walab serve`'s
//! upload task and the lab's upload simulator ([`crate::sim::remote::upload`]) both drive
//! an [`UploadCycle`] and only carry out its steps.
//!
//! 1. **Reserve** one object id per object in the metadata log ([`Step::Reserve`]).
//! 2. **PUT** each object under its id ([`Step::Put`]); an uploader may send them one
//!    after the other or side by side, and waits until every one is stored
//!    ([`Step::AwaitPuts`]).
//! 3. **Commit**: one metadata command registers every object of the block and advances
//!    each stream in it at once ([`Step::Commit`], [`Block::commit`]).
//! 4. **Trim**: the committed records leave the log cache and the WAL is confirmed below
//!    the oldest record still uncommitted, which lets the WAL's retention remove what is
//!    behind it ([`Step::Trim`]).
//!
//! Each step starts only once the one before is durable. The argument: an object PUT
//! before its id is reserved could not be told from garbage by the next start, so it
//! would never be deleted; an object committed before it is stored would be a hole a
//! reader falls into; and the WAL confirmed before the commit is durable would lose the
//! records a crash there leaves in neither place. A crash between the PUTs and the commit
//! leaves only orphans under reserved ids, which the next start deletes and expires; a
//! crash between the commit and the trim leaves committed records in the WAL too, which
//! recovery skips (they are below their stream's committed end).

use super::meta::MetaCommand;
use super::upload::Block;

/// What the uploader does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Reserve `count` ids in the metadata log, then [`UploadCycle::reserved`].
    Reserve { count: u32 },
    /// PUT object `object` of the block (`block().objects[object]`) under `id`, then
    /// [`UploadCycle::put_sent`] (and [`UploadCycle::put_stored`] once it is stored).
    Put { object: usize, id: u64 },
    /// Every PUT is sent; wait for the ones not yet stored.
    AwaitPuts,
    /// Append [`UploadCycle::commit_command`] to the metadata log, then
    /// [`UploadCycle::committed`].
    Commit,
    /// Drop the committed records and confirm the WAL below the oldest uncommitted one,
    /// then [`UploadCycle::trimmed`].
    Trim,
    /// The block is uploaded, committed and trimmed.
    Done,
}

/// One block's way from sealed to trimmed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UploadCycle {
    block: Block,
    /// The first reserved id, once the reservation is durable.
    first_id: Option<u64>,
    sent: usize,
    stored: usize,
    committed: bool,
    trimmed: bool,
}

impl UploadCycle {
    pub fn new(block: Block) -> UploadCycle {
        UploadCycle { block, first_id: None, sent: 0, stored: 0, committed: false, trimmed: false }
    }

    pub fn block(&self) -> &Block {
        &self.block
    }

    fn objects(&self) -> usize {
        self.block.objects.len()
    }

    /// The next step.
    pub fn next(&self) -> Step {
        let Some(first) = self.first_id else {
            return Step::Reserve { count: u32::try_from(self.objects()).expect("a block's objects fit a reservation") };
        };
        if self.sent < self.objects() {
            return Step::Put { object: self.sent, id: first + self.sent as u64 };
        }
        if self.stored < self.objects() {
            return Step::AwaitPuts;
        }
        match (self.committed, self.trimmed) {
            (false, _) => Step::Commit,
            (true, false) => Step::Trim,
            (true, true) => Step::Done,
        }
    }

    /// The reservation is durable: the block's ids are `first..first + count`.
    pub fn reserved(&mut self, first: u64) {
        assert!(matches!(self.next(), Step::Reserve { .. }), "reserved out of order: {:?}", self.next());
        self.first_id = Some(first);
    }

    /// The ids the block's objects go under, in object order (empty before the
    /// reservation).
    pub fn ids(&self) -> Vec<u64> {
        self.first_id.map_or_else(Vec::new, |first| (first..first + self.objects() as u64).collect())
    }

    /// The PUT [`Step::Put`] named is sent.
    pub fn put_sent(&mut self) {
        assert!(matches!(self.next(), Step::Put { .. }), "a PUT sent out of order: {:?}", self.next());
        self.sent += 1;
    }

    /// One of the sent PUTs is stored.
    pub fn put_stored(&mut self) {
        assert!(self.stored < self.sent, "more PUTs stored than sent");
        self.stored += 1;
    }

    /// The commit to append: every object under its id, every stream at its new end.
    pub fn commit_command(&self) -> MetaCommand {
        assert_eq!(self.next(), Step::Commit, "the commit is due only once every object is stored");
        self.block.commit(&self.ids())
    }

    /// The commit is durable.
    pub fn committed(&mut self) {
        assert_eq!(self.next(), Step::Commit, "committed out of order");
        self.committed = true;
    }

    /// The committed records are dropped and the WAL is confirmed below them.
    pub fn trimmed(&mut self) {
        assert_eq!(self.next(), Step::Trim, "trimmed out of order");
        self.trimmed = true;
    }
}

/// How far the trim step confirms the WAL: every record below the oldest one still
/// uncommitted (`first_uncommitted`, one per stream that has any), or, when every
/// record is committed, everything before `next` (the position the next record gets).
/// A record at or above what this returns may be the only copy of an acknowledged one.
pub fn confirm_through(next: u64, first_uncommitted: impl IntoIterator<Item = u64>) -> u64 {
    first_uncommitted.into_iter().fold(next, u64::min).saturating_sub(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream_store::log_cache::CachedRecord;
    use crate::stream_store::offset::Offset;
    use crate::stream_store::upload::{seal, Pending, SealPolicy};
    use crate::stream_store::StreamId;
    use crate::time::Nanos;

    fn block(streams: u64) -> Block {
        let policy = SealPolicy { block_bytes: 1 << 20, block_age: Nanos::from_millis(1), stream_object_bytes: 64 };
        let pending = (0..streams)
            .map(|stream| Pending {
                stream: StreamId(stream),
                start: Offset::new(0, 0),
                records: vec![CachedRecord {
                    start: Offset::new(0, 0),
                    body: vec![7; 100].into(),
                    producer: None,
                    stream_seq: None,
                    closes: false,
                    wal_seq: stream + 1,
                }],
                close: None,
            })
            .collect();
        seal(pending, &policy).expect("records pending")
    }

    #[test]
    fn a_block_is_reserved_then_put_then_committed_then_trimmed() {
        let mut cycle = UploadCycle::new(block(2));
        assert_eq!(cycle.block().objects.len(), 2, "two runs of their own");
        assert_eq!(cycle.next(), Step::Reserve { count: 2 });
        assert!(cycle.ids().is_empty());
        cycle.reserved(10);
        assert_eq!(cycle.ids(), vec![10, 11]);
        // Side by side: both sent before either is stored.
        assert_eq!(cycle.next(), Step::Put { object: 0, id: 10 });
        cycle.put_sent();
        assert_eq!(cycle.next(), Step::Put { object: 1, id: 11 });
        cycle.put_sent();
        assert_eq!(cycle.next(), Step::AwaitPuts);
        cycle.put_stored();
        assert_eq!(cycle.next(), Step::AwaitPuts, "one object is not stored yet");
        cycle.put_stored();
        assert_eq!(cycle.next(), Step::Commit);
        let MetaCommand::Commit { objects, .. } = cycle.commit_command() else { panic!("a commit") };
        assert_eq!(objects.iter().map(|object| object.id).collect::<Vec<_>>(), vec![10, 11]);
        cycle.committed();
        assert_eq!(cycle.next(), Step::Trim);
        cycle.trimmed();
        assert_eq!(cycle.next(), Step::Done);
    }

    #[test]
    fn the_wal_is_confirmed_below_the_oldest_uncommitted_record() {
        assert_eq!(confirm_through(101, [40, 7, 90]), 6);
        assert_eq!(confirm_through(101, []), 100, "everything committed");
        assert_eq!(confirm_through(1, []), 0, "nothing written");
    }

    #[test]
    #[should_panic(expected = "the commit is due only once every object is stored")]
    fn no_commit_before_every_object_is_stored() {
        let mut cycle = UploadCycle::new(block(1));
        cycle.reserved(0);
        cycle.put_sent();
        let _ = cycle.commit_command();
    }
}
