//! Node B's takeover in the remote simulator: on Postgres its claim after the inserts
//! holding the node row and its recovery scan of the ring; on S3 its claim, read-back,
//! LIST and session write, each its own request; and what it recovers.

use super::*;

impl Driver<'_> {
    pub(super) fn take_over(&mut self, now: Nanos) {
        let Some(at) = self.setup.takeover_at else {
            return;
        };
        if now < at {
            return;
        }
        match self.setup.backend {
            RemoteBackend::S3 => self.s3_take_over(at, now),
            RemoteBackend::Postgres => self.postgres_take_over(at, now),
        }
    }

    /// Postgres: node B's two requests, each taking a draw of the request latency. The
    /// claim is the `UPDATE` of the node row to epoch + 1, fenced on the epoch it read:
    /// it reaches the row at `at` and waits there for the inserts holding the row `FOR
    /// SHARE` (those A sent before `at`), then takes its draw; every insert A sends from
    /// `at` on queues behind it and writes nothing. From its answer B scans the ring
    /// (one request) and recovers what the scan reads.
    pub(super) fn postgres_take_over(&mut self, at: Nanos, now: Nanos) {
        let Some(claim) = self.claim.as_ref() else {
            if self.takeover.is_some() {
                return;
            }
            self.claim_requested = true;
            let holding = self
                .requests
                .iter()
                .any(|r| self.batches[r.batch].sent.is_some_and(|sent| sent < at));
            if !holding {
                let done_at = now + self.setup.latency.draw(&mut self.control_rng);
                self.claim = Some(Claim { stage: ClaimStage::EpochBump, done_at });
            }
            return;
        };
        if claim.done_at != now {
            return;
        }
        match claim.stage {
            ClaimStage::EpochBump => {
                self.takeover = Some(self.report(at, now, 0));
                let done_at = now + self.setup.latency.draw(&mut self.control_rng);
                self.claim = Some(Claim { stage: ClaimStage::RecoveryScan, done_at });
            }
            ClaimStage::RecoveryScan => {
                let geometry = self.setup.ring;
                let rows: Vec<SlotRow> = self.rows.iter().map(|(row, _)| row.clone()).collect();
                let recovery = ring::recover_chain(&geometry, self.trim_offset(), OWNER_EPOCH + 1, &rows)
                    .expect("rows the simulator wrote pass every check");
                if let Some(report) = self.takeover.as_mut() {
                    report.new_session_start = recovery.head;
                    report.listed_at = now;
                }
                self.claim = None;
            }
            ClaimStage::Claim | ClaimStage::ReadBack | ClaimStage::List | ClaimStage::Session => {
                unreachable!("an S3 stage on Postgres")
            }
        }
    }

    /// S3: node B's requests, each taking a draw of the request latency. The claim is a
    /// conditional PUT of the registration with epoch + 1: from its answer on, every
    /// fence read of node A finds the new epoch. B reads the registration back, LISTs
    /// the prefix (seeing every object stored by the LIST's answer) and records its
    /// session where what it recovered ends.
    pub(super) fn s3_take_over(&mut self, at: Nanos, now: Nanos) {
        let Some(claim) = self.claim.as_mut() else {
            if self.takeover.is_none() {
                let done_at = now + self.setup.latency.draw(&mut self.control_rng);
                self.claim = Some(Claim { stage: ClaimStage::Claim, done_at });
            }
            return;
        };
        if claim.done_at != now {
            return;
        }
        let next = match claim.stage {
            ClaimStage::Claim => {
                self.registration = self.registration.claimed_by("node-b").expect("epoch fits");
                self.takeover = Some(self.report(at, now, 0));
                Some(ClaimStage::ReadBack)
            }
            ClaimStage::ReadBack => Some(ClaimStage::List),
            ClaimStage::EpochBump | ClaimStage::RecoveryScan => unreachable!("a Postgres stage on S3"),
            ClaimStage::List => {
                let listed: Vec<WalObject> = self.objects.iter().map(|(object, _)| *object).collect();
                let plan = plan_chain(&listed, &self.registration.sessions);
                let start = plan.chain.last().map_or(0, |object| object.end);
                let recovered = self.records_in(plan.chain.iter().filter_map(|o| self.batch_of_object(o)));
                let lowest = listed.iter().map(|object| object.start).min();
                self.pending_session = Some((lowest, start, recovered.len() as u64 + 1));
                if let Some(report) = self.takeover.as_mut() {
                    report.new_session_start = start;
                    report.listed_at = now;
                }
                Some(ClaimStage::Session)
            }
            ClaimStage::Session => {
                let (lowest, start, next_seq) = self.pending_session.take().expect("the LIST came first");
                self.registration = self.registration.with_session(lowest, start, next_seq);
                None
            }
        };
        self.claim = next.map(|stage| Claim { stage, done_at: now + self.setup.latency.draw(&mut self.control_rng) });
    }

    pub(super) fn report(&self, at: Nanos, claimed_at: Nanos, start: u64) -> TakeoverReport {
        TakeoverReport {
            at,
            claimed_at,
            listed_at: claimed_at,
            old_epoch: OWNER_EPOCH,
            new_epoch: OWNER_EPOCH + 1,
            acked_by_old: 0,
            recovered_by_new: 0,
            stragglers_ignored: 0,
            new_session_start: start,
            fenced_batches: Vec::new(),
            ignored: Vec::new(),
            recovered_records: Vec::new(),
            already_uploaded: 0,
        }
    }

    pub(super) fn batch_of_object(&self, object: &WalObject) -> Option<usize> {
        self.objects
            .iter()
            .find(|(o, _)| o == object)
            .map(|(_, index)| *index)
    }

    pub(super) fn records_in(&self, batches: impl Iterator<Item = usize>) -> Vec<u64> {
        batches
            .flat_map(|index| {
                let batch = &self.batches[index];
                batch.first_record..batch.first_record + batch.records
            })
            .collect()
    }
}
