//! The upload task on the simulator's clock ([`crate::sim::clock::run`]): a block is sealed
//! when one is due (an arrival), each request it sends answers at a drawn or fixed instant
//! (a completion), and node B's claim reaches the metadata log at its instant (a landing,
//! fed before any answer of that instant). What the task does with a block, and in what
//! order, is the core's [`UploadCycle`]: the same steps `walab serve`'s uploader carries
//! out. How far a commit confirms the WAL is the cycle's
//! ([`crate::stream_store::cycle::confirm_through`]), and which WAL objects that lets go
//! the consumer gate of the session's retention ([`Gates`]).

use core::ops::ControlFlow;

use super::cache::{block_objects, Cache};
use super::metadata::{CommitError, MetadataLog};
use super::{AttemptOutcome, AttemptRow, BlockRow, CommitRow, ObjectKind, ObjectRow, StreamRange, UploadRun, UploadSetup, WalDeleteRow, ATTEMPTS_MAX, STREAMS};
use crate::rng::Rng;
use crate::session::retention::Gates;
use crate::sim::clock::{InstantBound, Simulation};
use crate::sim::remote::{RemoteRun, OWNER_EPOCH};
use crate::sim::SyncLatency;
use crate::stream_store::cycle::{Step, UploadCycle};
use crate::stream_store::meta::MetaError;
use crate::stream_store::upload::{seal, Block, SealPolicy};
use crate::time::Nanos;

/// Where the task is with the block it holds.
enum Phase {
    /// The reservation is sent; its answer comes at `at`.
    Reserving { at: Nanos },
    /// The objects' PUTs are sent side by side; when each is stored, `None` once it is.
    Putting { stored: Vec<Option<Nanos>> },
    /// The commit is sent; its answer comes at `at`.
    Committing { at: Nanos },
    /// The task crashed before the commit; it restarts at `at`.
    Restarting { at: Nanos },
}

/// The block the task holds and its current attempt.
struct Holding {
    block: Block,
    row: BlockRow,
    objects: Vec<(ObjectKind, Vec<StreamRange>)>,
    attempt: u32,
    cycle: UploadCycle,
    start: Nanos,
    reserved: Nanos,
    uploaded: Nanos,
    phase: Phase,
}

/// The upload as a simulation on the clock.
pub(super) struct UploadTask<'a> {
    wal: &'a RemoteRun,
    setup: &'a UploadSetup,
    latency: &'a SyncLatency,
    cache: Cache,
    policy: SealPolicy,
    record_bytes: u64,
    /// Node B's claim: when it reaches the metadata log, and its epoch.
    claim: Option<(Nanos, u64)>,
    claim_landed: bool,
    rng: Rng,
    pub(super) metadata: MetadataLog,
    pub(super) out: UploadRun,
    /// When the task is next free.
    ready: Nanos,
    deleted_batches: usize,
    sealed: u64,
    /// While idle: when the next block is due.
    due: Option<Nanos>,
    holding: Option<Holding>,
}

impl<'a> UploadTask<'a> {
    pub(super) fn new(wal: &'a RemoteRun, setup: &'a UploadSetup, latency: &'a SyncLatency, seed: u64, cache: Cache, record_bytes: u64, out: UploadRun) -> UploadTask<'a> {
        let mut task = UploadTask {
            wal,
            setup,
            latency,
            cache,
            policy: setup.seal_policy(),
            record_bytes,
            claim: wal.takeover.as_ref().map(|takeover| (takeover.claimed_at, takeover.new_epoch)),
            claim_landed: false,
            rng: Rng::new(seed ^ 0x0b1e_c75a_0000_0000),
            metadata: MetadataLog::new(STREAMS, OWNER_EPOCH),
            out,
            ready: Nanos::ZERO,
            deleted_batches: 0,
            sealed: 0,
            due: None,
            holding: None,
        };
        task.idle();
        task
    }

    /// The instants a run may visit: per block its seal and, per attempt, the
    /// reservation, each object's PUT (at most one per stream and the stream-set
    /// object), the commit and a restart; and the claim.
    pub(super) fn bound(&self) -> InstantBound {
        let blocks = self.cache.acked.len() as u64 + 1;
        InstantBound { name: "upload", instants_max: blocks * (1 + u64::from(ATTEMPTS_MAX) * (STREAMS + 4)) + 1 }
    }

    fn claimed_by(&self, t: Nanos) -> bool {
        self.claim.is_some_and(|(claimed_at, _)| t >= claimed_at)
    }

    /// Lets the held block go (if any) and finds when the next one is due. Bounded by the
    /// records: a block commits at least one unless every attempt at it failed (then the
    /// next seal takes the same records again).
    fn idle(&mut self) {
        if let Some(holding) = self.holding.take() {
            if !holding.row.attempts.is_empty() {
                self.out.blocks.push(holding.row);
            }
        }
        self.due = if (self.sealed as usize) < self.cache.acked.len() {
            self.cache.next_due(&self.metadata.stream_ends(), self.ready, &self.policy)
        } else {
            None
        };
    }

    /// Ends the run: the held block's attempts are kept.
    fn stop(&mut self) -> ControlFlow<()> {
        if let Some(holding) = self.holding.take() {
            if !holding.row.attempts.is_empty() {
                self.out.blocks.push(holding.row);
            }
        }
        self.due = None;
        ControlFlow::Break(())
    }

    /// Starts an attempt at the held block at `now`: the cycle's first step, the reservation.
    fn attempt(&mut self, now: Nanos) -> ControlFlow<()> {
        if self.claimed_by(now) {
            return self.stop();
        }
        let latency = self.setup.metadata_latency;
        let holding = self.holding.as_mut().expect("an attempt at a held block");
        holding.attempt += 1;
        holding.cycle = UploadCycle::new(holding.block.clone());
        holding.start = now;
        let Step::Reserve { .. } = holding.cycle.next() else { unreachable!("a cycle starts with its reservation") };
        holding.phase = Phase::Reserving { at: now + latency };
        ControlFlow::Continue(())
    }

    /// The reservation is answered: every PUT is sent at once.
    fn reserved(&mut self, now: Nanos) {
        let holding = self.holding.as_mut().expect("a held block");
        let Step::Reserve { count } = holding.cycle.next() else { unreachable!("reserving") };
        let ids = self.metadata.reserve(now, u64::from(count), self.setup.id_ttl);
        holding.cycle.reserved(ids[0]);
        holding.reserved = now;
        holding.uploaded = now;
        let mut stored = Vec::new();
        while let Step::Put { object, id } = holding.cycle.next() {
            let (kind, ranges) = &holding.objects[object];
            let at = now + self.latency.draw(&mut self.rng);
            holding.uploaded = holding.uploaded.max(at);
            let bytes = ranges.iter().map(|range| (range.end - range.start) * self.record_bytes).sum();
            self.out.objects.push(ObjectRow {
                id,
                kind: *kind,
                block: holding.row.block,
                attempt: holding.attempt,
                ranges: ranges.clone(),
                bytes,
                reserved: now,
                stored: at,
                committed: None,
                expired: None,
            });
            holding.cycle.put_sent();
            stored.push(Some(at));
        }
        holding.phase = Phase::Putting { stored };
    }

    /// Every object is stored: the commit is sent, unless this attempt crashes first.
    fn uploaded(&mut self) {
        let holding = self.holding.as_mut().expect("a held block");
        let uploaded = holding.uploaded;
        if self.setup.crash_before_commit == Some(holding.row.block) && holding.attempt == 1 {
            holding.row.attempts.push(AttemptRow {
                reserve_sent: holding.start,
                reserved: holding.reserved,
                uploaded,
                commit_answered: None,
                outcome: AttemptOutcome::CrashedBeforeCommit,
                ids: holding.cycle.ids(),
            });
            holding.phase = Phase::Restarting { at: uploaded + self.setup.restart_after };
        } else {
            holding.phase = Phase::Committing { at: uploaded + self.setup.metadata_latency };
        }
    }

    /// The commit is answered at `now`.
    fn commit_answered(&mut self, now: Nanos) -> ControlFlow<()> {
        let holding = self.holding.as_mut().expect("a held block");
        let ids = holding.cycle.ids();
        let outcome = match self.metadata.commit(now, OWNER_EPOCH, &holding.cycle.commit_command()) {
            Ok(()) => AttemptOutcome::Committed,
            Err(CommitError::Fenced { .. }) => AttemptOutcome::Fenced,
            Err(CommitError::Refused(MetaError::NotReserved { .. })) => AttemptOutcome::Expired,
            Err(CommitError::Refused(error)) => unreachable!("the task uploads from the committed ends: {error}"),
        };
        holding.row.attempts.push(AttemptRow {
            reserve_sent: holding.start,
            reserved: holding.reserved,
            uploaded: holding.uploaded,
            commit_answered: Some(now),
            outcome,
            ids: ids.clone(),
        });
        self.ready = now;
        match outcome {
            AttemptOutcome::Committed => {
                holding.cycle.committed();
                let Step::Trim = holding.cycle.next() else { unreachable!("a commit is followed by the trim") };
                let block = holding.row.block;
                self.trim(now, block, ids);
                self.holding.as_mut().expect("a held block").cycle.trimmed();
                self.idle();
                ControlFlow::Continue(())
            }
            AttemptOutcome::Fenced => self.stop(),
            AttemptOutcome::Expired | AttemptOutcome::CrashedBeforeCommit => self.retry(now),
        }
    }

    /// The next attempt at the held block at `now`, if it has one left.
    fn retry(&mut self, now: Nanos) -> ControlFlow<()> {
        if self.holding.as_ref().is_some_and(|holding| holding.attempt < ATTEMPTS_MAX) {
            self.attempt(now)
        } else {
            self.idle();
            ControlFlow::Continue(())
        }
    }

    /// The trim after block `block`'s commit under `ids` at `now`: the WAL batches the
    /// consumer gate lets go are deleted (their answer is not waited for).
    fn trim(&mut self, now: Nanos, block: u64, ids: Vec<u64>) {
        for &id in &ids {
            self.out.objects[id as usize].committed = Some(now);
        }
        let ends = self.metadata.stream_ends();
        let confirmed = self.cache.confirm_through(&ends);
        self.out.commits.push(CommitRow { at: now, block, ids, stream_ends: ends });
        let covered: Vec<u64> = self.wal.batches[self.deleted_batches..]
            .iter()
            .take_while(|batch| {
                let last = batch.first_record + batch.records - 1;
                batch.acked.is_some() && Gates::of(Some(last), confirmed, core::iter::empty()).consumer
            })
            .map(|batch| batch.batch)
            .collect();
        if !covered.is_empty() {
            self.deleted_batches += covered.len();
            let done = now + self.latency.draw(&mut self.rng);
            self.out.deletes.push(WalDeleteRow { sent: now, done, batches: covered });
        }
    }
}

impl Simulation for UploadTask<'_> {
    type Stop = ();

    /// A block falling due.
    fn next_arrival(&self) -> Option<Nanos> {
        self.due
    }

    fn next_completion(&self) -> Option<Nanos> {
        match &self.holding.as_ref()?.phase {
            Phase::Reserving { at } | Phase::Committing { at } | Phase::Restarting { at } => Some(*at),
            Phase::Putting { stored } => stored.iter().flatten().min().copied(),
        }
    }

    fn next_landing(&self) -> Option<Nanos> {
        self.claim.filter(|_| !self.claim_landed).map(|(at, _)| at)
    }

    fn next_timeout(&self) -> Option<Nanos> {
        None
    }

    fn land(&mut self, now: Nanos) -> ControlFlow<()> {
        if let Some((at, epoch)) = self.claim {
            if at == now && !self.claim_landed {
                self.claim_landed = true;
                self.metadata.claim(epoch);
            }
        }
        ControlFlow::Continue(())
    }

    fn complete(&mut self, now: Nanos) -> ControlFlow<()> {
        let Some(holding) = self.holding.as_mut() else {
            return ControlFlow::Continue(());
        };
        match &mut holding.phase {
            Phase::Reserving { at } if *at == now => self.reserved(now),
            Phase::Putting { stored } => {
                for each in stored.iter_mut().filter(|each| **each == Some(now)) {
                    *each = None;
                    holding.cycle.put_stored();
                }
                if holding.cycle.next() == Step::Commit {
                    self.uploaded();
                }
            }
            Phase::Committing { at } if *at == now => return self.commit_answered(now),
            Phase::Restarting { at } if *at == now => {
                self.ready = now;
                return self.retry(now);
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }

    /// A block is due: the task seals it and starts its first attempt.
    fn arrive(&mut self, now: Nanos) -> ControlFlow<()> {
        if self.due != Some(now) {
            return ControlFlow::Continue(());
        }
        self.due = None;
        if self.claimed_by(now) {
            return self.stop();
        }
        let ends = self.metadata.stream_ends();
        let block = seal(self.cache.pending_runs(&ends, now, self.policy.block_bytes), &self.policy).expect("a due block holds a record");
        self.sealed += 1;
        let records = block.records();
        let row = BlockRow {
            block: self.sealed,
            first_record: self.cache.first_record(&block),
            records,
            bytes: records * self.record_bytes,
            sealed: now,
            attempts: Vec::new(),
        };
        let objects = block_objects(&block, &self.policy);
        let cycle = UploadCycle::new(block.clone());
        self.holding = Some(Holding {
            block,
            row,
            objects,
            attempt: 0,
            cycle,
            start: now,
            reserved: now,
            uploaded: now,
            phase: Phase::Restarting { at: now },
        });
        self.attempt(now)
    }

    fn time_out(&mut self, _now: Nanos) {}

    fn act(&mut self, _now: Nanos) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }
}
