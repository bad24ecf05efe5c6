//! The run as the remote simulator's driver leaves it: every batch's outcome, every
//! record's, and the tables a run reports.

use super::*;

impl Driver<'_> {
    pub(super) fn finish(mut self) -> RemoteRun {
        // The inserts a Postgres claim waits for all land, and each of B's requests is an
        // instant of the run, so a takeover that began has finished.
        assert!(self.claim.is_none() && (self.takeover.is_some() || !self.claim_requested), "the takeover finished");
        let mut batches = std::mem::take(&mut self.batches);
        for batch in &mut batches {
            if batch.outcome.is_none() {
                batch.outcome = Some(if batch.acked.is_some() {
                    BatchOutcome::Acked
                } else if batch.stored.is_some() {
                    BatchOutcome::StoredNotAcked
                } else {
                    BatchOutcome::Failed
                });
            }
        }
        self.batches = batches;
        let acked_by_old = self.records_acked;
        let mut takeover = self.takeover.take();
        if let Some(report) = takeover.as_mut() {
            report.acked_by_old = acked_by_old;
            report.fenced_batches = std::mem::take(&mut self.fenced_batches);
            match self.setup.backend {
                RemoteBackend::S3 => {
                    // Recovery once every straggler has landed: the whole listing.
                    let listed: Vec<WalObject> =
                        self.objects.iter().map(|(object, _)| *object).collect();
                    let plan = plan_chain(&listed, &self.registration.sessions);
                    report.recovered_records =
                        self.records_in(plan.chain.iter().filter_map(|o| self.batch_of_object(o)));
                    report.stragglers_ignored = plan
                        .ignored
                        .iter()
                        .filter(|(object, _)| object.epoch == OWNER_EPOCH)
                        .count() as u64;
                    report.ignored = plan.ignored;
                }
                RemoteBackend::Postgres => {
                    let rows: Vec<SlotRow> = self.rows.iter().map(|(row, _)| row.clone()).collect();
                    let recovery = ring::recover_chain(
                        &self.setup.ring,
                        self.trim_offset(),
                        OWNER_EPOCH + 1,
                        &rows,
                    )
                    .expect("rows the simulator wrote pass every check");
                    // Records below the trim offset are in data objects already; the rest are replayed.
                    let uploaded = self.records_in(
                        self.batches
                            .iter()
                            .enumerate()
                            .filter(|(_, b)| b.end_offset <= self.trim_offset())
                            .map(|(i, _)| i),
                    );
                    report.already_uploaded = uploaded.len() as u64;
                    report.recovered_records = uploaded;
                    report.recovered_records.extend(
                        recovery
                            .records
                            .iter()
                            .map(|record| self.ticket_record[record.seq as usize - 1]),
                    );
                }
            }
            report.recovered_by_new = report.recovered_records.len() as u64;
        }
        RemoteRun {
            backend: self.setup.backend,
            batches: self.batches,
            records: self.records,
            puts: self.puts,
            fence_checks: self.fence_checks,
            records_acked: self.records_acked,
            takeover,
            trims: self.trims,
            ring: self.setup.ring,
            end: self.now,
        }
    }
}
