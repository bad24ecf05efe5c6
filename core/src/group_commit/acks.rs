//! The machine's acknowledgements: persists in flight in submission order, released
//! only from the front (so writers hear OK in ticket order whatever order persists
//! complete in, and `durable_lsn` never decreases), and fail-stop: a failed persist fails
//! its writers and every later one and refuses every further append.

use super::*;

impl GroupCommit {
    pub(super) fn push_inflight(&mut self, id: BatchId, tickets: Tickets, lsn_end: u64) {
        assert!(self.running < self.config.inflight_max, "running persists <= inflight_max");
        self.inflight.push_back(Inflight {
            id,
            tickets,
            lsn_end,
            state: InflightState::Running,
            submitted: self.last_now,
            next_ticket_then: self.next_ticket,
        });
        self.running += 1;
        self.counters.persists += 1;
    }

    /// Releases acknowledgements for the completed batches at the front, in order, at
    /// `now`, just after a persist that took `persisted_in` returned.
    pub(super) fn release_in_order(&mut self, now: Nanos, persisted_in: Nanos) {
        let mut acked: Option<Tickets> = None;
        while let Some(front) = self.inflight.front() {
            match front.state {
                InflightState::Running | InflightState::AbandonedRunning => break,
                InflightState::AbandonedDone => {
                    self.inflight.pop_front();
                    continue;
                }
                InflightState::Done => {}
            }
            let front = self.inflight.pop_front().expect("front exists");
            assert!(front.lsn_end >= self.durable_lsn, "durable_lsn never decreases");
            self.durable_lsn = front.lsn_end;
            assert!(self.durable_lsn <= self.written_lsn, "durable_lsn <= written_lsn");
            if front.tickets.count == 0 {
                continue;
            }
            acked = Some(match acked {
                None => front.tickets,
                Some(run) => {
                    debug_assert_eq!(run.end(), front.tickets.first);
                    Tickets { first: run.first, count: run.count + front.tickets.count }
                }
            });
        }
        if let Some(run) = acked {
            if self.config.policy.syncs_before_ack() {
                self.settle(run);
                self.counters.acked += run.count;
                self.ready.push_back(Action::Ack(run));
                // Writers answered earlier and not back yet still count.
                let still_away = self.hold.map_or(0, |hold| hold.answered.saturating_sub(hold.appended));
                let waiting = self.open.as_ref().map_or(0, |open| open.tickets.count);
                let opened = self.open.as_ref().map(|open| open.opened);
                let answered = run.count + still_away;
                self.hold = schedule::CohortHold::longer(
                    schedule::CohortHold::after_ack(&self.config, now, answered, waiting, persisted_in),
                    schedule::CohortHold::paced(&self.config, now, answered, waiting, opened, &self.round_trip),
                );
            }
        }
    }

    pub(super) fn settle(&mut self, run: Tickets) {
        assert!(run.first == self.settled_ticket, "acknowledgements are released in ticket order");
        self.settled_ticket = run.end();
    }

    /// Fails every writer from `first` on (those not failed already) and refuses all
    /// further appends.
    pub(super) fn fail_from(&mut self, first: Ticket, error: SyncError) {
        let end = self.failed_from.unwrap_or(self.next_ticket);
        if first.0 >= end.0 {
            return;
        }
        self.failed_from = Some(first);
        self.failed.get_or_insert(error);
        self.hold = None;
        self.open = None;
        self.closed.clear();
        self.next_periodic = None;
        let count = end.0 - first.0;
        if count > 0 && self.config.policy.syncs_before_ack() {
            self.counters.failed += count;
            self.ready.push_back(Action::Fail { tickets: Tickets { first, count }, error });
        }
    }
}
