//! Where and beside what a persist runs: which batch a driver persists on its own
//! thread, when a batch is worth a persist beside running ones, and the cohort hold
//! that merges closed-loop writers into one batch.
//!
//! A driver that can block in a persist (the file WAL, whose `fdatasync` it may run
//! itself) has two ways to run one: *inline*, blocking the driver until the sync
//! returns, with no thread hop between the append and its answer; or *off the thread*
//! (a sync thread, a runtime task), so the driver can write the next batch while this
//! one syncs. Inline is the better choice exactly when there is nothing to overlap: no
//! other persist is running, and the batch and the one before it are small (a lone
//! writer, who appends again only after its answer). A large batch's writers are about
//! to append again together, so a small batch after a large one goes off the thread:
//! blocking the driver on it would make them wait out this sync before theirs starts.

use super::Config;
use crate::time::Nanos;

/// What the persists that returned measured: how long one took, and how many records
/// were appended while it ran (the arrival rate times the round trip, counted together,
/// with no clock and no division). Each new persist weighs a quarter, so one persist
/// that carried every writer (none left to arrive during it) does not make the next
/// batch worth nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RoundTrip {
    /// Records appended during a round trip.
    pub arrivals: u64,
    /// A persist's duration.
    pub duration: Nanos,
    /// Whether any persist has returned yet.
    pub measured: bool,
}

impl RoundTrip {
    /// Takes in one returned persist: `arrivals` appended while it ran, for `duration`.
    pub fn measure(&mut self, arrivals: u64, duration: Nanos) {
        if !self.measured {
            *self = RoundTrip { arrivals, duration, measured: true };
            return;
        }
        let blend = |old: u64, new: u64| old.saturating_mul(3).saturating_add(new).saturating_add(2) / 4;
        self.arrivals = blend(self.arrivals, arrivals);
        self.duration = Nanos(blend(self.duration.0, duration.0));
    }

    /// `percent` of a round trip's arrivals.
    pub fn arrivals_percent(&self, percent: u32) -> u64 {
        self.arrivals.saturating_mul(u64::from(percent)) / 100
    }

    /// `percent` of a round trip.
    pub fn duration_percent(&self, percent: u32) -> Nanos {
        Nanos(self.duration.0.saturating_mul(u64::from(percent)) / 100)
    }
}

/// The records a [`super::Policy::Group`] batch must hold to start beside running
/// persists (with none running it starts at once, whatever it holds, unless a hold is in
/// force): the largest of [`Config::pipeline_min_records`],
/// [`Config::pipeline_running_percent`] of the `running_records` and
/// [`Config::pipeline_round_trip_percent`] of a [`RoundTrip`]'s arrivals.
///
/// # Why a round trip's arrivals
///
/// On storage billed per request (an object store's PUT), every persist beside a running
/// one is a request bought for latency: its records would otherwise wait for the running
/// persists to end. Started whenever a slot is free, persists follow the slots rather
/// than the load: with writers arriving all the time (behind an HTTP server, the answers
/// of one persist come back spread over the server's work for each) every free slot
/// sends whoever has arrived, `inflight_max` persists per round trip whatever the load.
///
/// A batch is worth a persist of its own once it holds what a round trip brings: the
/// arrivals counted during the persists that returned are the arrival rate times the
/// round trip, measured together ([`RoundTrip`]). Under a steady load the batch
/// gathering beside a running persist reaches that count about when the running one
/// returns, so it starts then, alone: one persist in flight, the persists per second
/// near one per round trip however many writers wait, and a record waits for at most
/// the persist running when it arrived and its own (one extra round trip, as with one
/// persist at a time). What the count adds over one persist at a time is the bound's
/// other half: when the running persist takes longer than they have (a slow request,
/// a burst of arrivals), the batch behind it reaches a round trip's worth first and
/// starts beside it, so no record waits out a slow request and then its own.
///
/// Above 100 the percent also sets how long a batch gathers with none running: after an
/// acknowledgement a hold keeps the next batch until the writers answered are back or
/// its first record has waited the percent of a round trip ([`CohortHold::paced`]), so
/// under a steady load a persist starts every percent of a round trip and carries that
/// much: at 150, two persists per three round trips, a record waiting at most half a
/// round trip more than with one persist at a time.
pub fn pipeline_min(config: &Config, running_records: impl FnOnce() -> u64, round_trip: &RoundTrip) -> u64 {
    let by_round_trip = round_trip.arrivals_percent(config.pipeline_round_trip_percent);
    let by_running = match config.pipeline_running_percent {
        0 => 0,
        percent => running_records().saturating_mul(u64::from(percent)) / 100,
    };
    config.pipeline_min_records.max(by_running).max(by_round_trip)
}

/// Whether the driver persists a batch of `records` inline: the storage allows it
/// ([`Config::inline_persists`]), and either one persist at a time is all there is
/// (`inflight_max == 1`), or nothing else is `running` and this batch and the previous
/// one (`previous_records`) are both below `pipeline_min_records`.
pub fn persists_inline(config: &Config, running: usize, records: u64, previous_records: u64) -> bool {
    config.inline_persists
        && (config.inflight_max == 1
            || (running == 0 && records < config.pipeline_min_records && previous_records < config.pipeline_min_records))
}

/// A hold on the next batch after an acknowledgement, so that the writers it answered
/// ride the same sync as those already waiting ([`Config::cohort_hold_percent`]).
///
/// Closed-loop writers (each appends again once answered) left alone split into two
/// cohorts: while cohort X's sync runs, cohort Y gathers; the instant X's sync ends, Y's
/// batch starts, a moment before X's writers have appended again, so X gathers during
/// Y's sync, and so on. Every append then waits for two syncs (the one running when it
/// arrives, then its own) and each sync carries half the writers. Holding Y's batch,
/// when it holds fewer than half as many records as X answered, until X's writers are
/// back (k appends after an acknowledgement of k) merges the two into one batch, where
/// an append waits for one sync plus the time the answered writers take to append
/// again. Writers that start together split unevenly (the first batch takes whoever
/// came first), so the hold merges them at the second acknowledgement, and once merged
/// they stay so (a hold that runs out leaves a few stragglers, fewer than half).
/// Cohorts of similar size are left apart: each fills a sync of its own, and holding one
/// would idle the disk. The hold is bounded by a fraction of
/// the answered persist's duration, so writers that do not come back (an open-loop
/// load, writers that finished)
/// cost at most that, and a lone writer, whose own append ends the hold, costs nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CohortHold {
    /// Writers the acknowledgement answered: the appends the hold waits for.
    pub answered: u64,
    /// Records appended since the acknowledgement.
    pub appended: u64,
    /// When the hold ends whatever has been appended.
    pub until: Nanos,
}

impl CohortHold {
    /// The hold an acknowledgement of `answered` writers at `now` starts, with `waiting`
    /// records gathered behind it, after a persist that took `persisted_in`. `None` when
    /// the config asks for none, when the batch that would start already holds half as
    /// many records as were answered or more (cohorts of similar size each fill a sync),
    /// or when it would end at once.
    pub fn after_ack(config: &Config, now: Nanos, answered: u64, waiting: u64, persisted_in: Nanos) -> Option<CohortHold> {
        if config.cohort_hold_percent == 0 || answered == 0 || waiting.saturating_mul(2) >= answered {
            return None;
        }
        let hold = Nanos(persisted_in.0.saturating_mul(u64::from(config.cohort_hold_percent)) / 100);
        if hold == Nanos::ZERO {
            return None;
        }
        Some(CohortHold { answered, appended: 0, until: now + hold })
    }

    /// The hold of [`Config::pipeline_round_trip_percent`] above 100 after an
    /// acknowledgement of `answered` writers at `now`, with `waiting` records gathered
    /// behind it since `opened` (none: no batch is gathering yet): the next batch waits
    /// for the answered writers until its first record has waited the percent of a
    /// [`RoundTrip`] (from `now` when none has arrived yet). `None` at 100 and below, when
    /// that time has passed, and when the answered and the waiting together are fewer
    /// than [`Config::pipeline_min_records`]: a load that brings less than a persist's
    /// worth in a round trip is not made to wait for more.
    ///
    /// Under a steady load the batch behind a persist has gathered a round trip's
    /// arrivals when that persist returns; gathering for the rest of the percent makes
    /// every persist carry that much more, and the persists per second fall below one per
    /// round trip. Measured from the batch's first record, the wait is bounded however
    /// many acknowledgements come in meanwhile. Closed-loop writers that come back sooner
    /// end the hold with their appends, as a cohort hold's do: cohorts of any size then
    /// merge into one persist (the cohort hold leaves cohorts of similar size apart, each
    /// filling a sync of its own; behind one persist in flight they would take turns
    /// instead, each waiting for the other's round trip).
    pub fn paced(
        config: &Config,
        now: Nanos,
        answered: u64,
        waiting: u64,
        opened: Option<Nanos>,
        round_trip: &RoundTrip,
    ) -> Option<CohortHold> {
        if config.pipeline_round_trip_percent <= 100 || answered == 0 {
            return None;
        }
        if answered.saturating_add(waiting) < config.pipeline_min_records {
            return None;
        }
        let until = opened.unwrap_or(now) + round_trip.duration_percent(config.pipeline_round_trip_percent);
        (until > now).then_some(CohortHold { answered, appended: 0, until })
    }

    /// The longer of two holds (each waits for the same answered writers).
    pub fn longer(a: Option<CohortHold>, b: Option<CohortHold>) -> Option<CohortHold> {
        match (a, b) {
            (Some(a), Some(b)) => Some(if b.until > a.until { b } else { a }),
            (a, b) => a.or(b),
        }
    }

    /// Counts one append; true once every answered writer could have appended again,
    /// which ends the hold.
    pub fn count_append(&mut self) -> bool {
        self.appended += 1;
        self.appended >= self.answered
    }

    /// Whether the hold has run out at `now`.
    pub fn expired(&self, now: Nanos) -> bool {
        now >= self.until
    }
}

/// Serde's test for leaving `inline_persists` out of a serialized config.
#[cfg(feature = "serde")]
pub(super) fn is_false(value: &bool) -> bool {
    !*value
}

/// Serde's test for leaving `cohort_hold_percent` out of a serialized config.
#[cfg(feature = "serde")]
pub(super) fn is_zero(value: &u32) -> bool {
    *value == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::group_commit::Policy;
    use crate::session::preset::{Storage, Tuning};

    fn local_file(sync_threads: usize) -> Config {
        Storage::LocalFile { sync_threads }.config(&Tuning::default())
    }

    #[test]
    fn a_lone_writer_syncs_inline_and_anything_with_company_goes_off_the_thread() {
        let file = local_file(2);
        assert!(persists_inline(&file, 0, 1, 1), "a record after a record, nothing running");
        assert!(!persists_inline(&file, 1, 1, 1), "another sync is running");
        assert!(!persists_inline(&file, 0, 2, 1), "a batch worth a sync of its own");
        assert!(!persists_inline(&file, 0, 1, 5), "a small batch after a large one");
        let one_at_a_time = local_file(1);
        assert!(persists_inline(&one_at_a_time, 0, 64, 64), "one sync at a time: always inline");
        let object_store = Storage::ObjectStore.config(&Tuning::default());
        assert!(!persists_inline(&object_store, 0, 1, 1), "an object store never blocks the driver");
        assert!(!persists_inline(&Config::file(Policy::Group), 0, 1, 1), "the simulated file leaves it to its driver");
    }

    #[test]
    fn a_round_trip_weighs_each_new_persist_a_quarter() {
        let mut round_trip = RoundTrip::default();
        round_trip.measure(400, Nanos(30));
        assert_eq!(round_trip, RoundTrip { arrivals: 400, duration: Nanos(30), measured: true }, "the first is taken whole");
        round_trip.measure(0, Nanos(50));
        assert_eq!((round_trip.arrivals, round_trip.duration), (300, Nanos(35)), "a persist that carried everyone");
        assert_eq!(round_trip.arrivals_percent(150), 450);
        assert_eq!(round_trip.duration_percent(150), Nanos(52));
        let config = Config { pipeline_min_records: 32, pipeline_round_trip_percent: 150, ..Config::file(Policy::Group) };
        assert_eq!(pipeline_min(&config, || 0, &round_trip), 450);
        assert_eq!(pipeline_min(&config, || 0, &RoundTrip::default()), 32, "nothing measured yet");
        let off = Config { pipeline_min_records: 32, ..Config::file(Policy::Group) };
        assert_eq!(pipeline_min(&off, || 0, &round_trip), 32, "off");
    }

    #[test]
    fn a_paced_hold_ends_when_the_first_record_has_waited_its_share_of_a_round_trip() {
        let round_trip = RoundTrip { arrivals: 500, duration: Nanos(1_000), measured: true };
        let config = Config { pipeline_min_records: 32, pipeline_round_trip_percent: 150, ..Config::file(Policy::Group) };
        let hold = CohortHold::paced(&config, Nanos(5_000), 600, 450, Some(Nanos(4_000)), &round_trip);
        assert_eq!(hold, Some(CohortHold { answered: 600, appended: 0, until: Nanos(5_500) }), "opened at 4,000");
        let nothing_gathered = CohortHold::paced(&config, Nanos(5_000), 600, 0, None, &round_trip);
        assert_eq!(nothing_gathered.map(|hold| hold.until), Some(Nanos(6_500)), "from now");
        assert_eq!(CohortHold::paced(&config, Nanos(5_500), 600, 450, Some(Nanos(4_000)), &round_trip), None, "waited enough");
        assert_eq!(CohortHold::paced(&config, Nanos(5_000), 20, 11, None, &round_trip), None, "less than a persist's worth");
        assert!(CohortHold::paced(&config, Nanos(5_000), 20, 12, None, &round_trip).is_some(), "32 together");
        let at_100 = Config { pipeline_round_trip_percent: 100, ..config };
        assert_eq!(CohortHold::paced(&at_100, Nanos(5_000), 600, 0, None, &round_trip), None, "no hold at 100");
        let longer = CohortHold::longer(hold, nothing_gathered);
        assert_eq!(longer, nothing_gathered);
    }

    #[test]
    fn a_hold_lasts_its_share_of_the_answered_persist() {
        let config = Config { cohort_hold_percent: 50, ..Config::file(Policy::Group) };
        let hold = CohortHold::after_ack(&config, Nanos(1_000), 3, 1, Nanos(800)).expect("a hold");
        assert_eq!(hold, CohortHold { answered: 3, appended: 0, until: Nanos(1_400) });
        assert!(!hold.expired(Nanos(1_399)) && hold.expired(Nanos(1_400)));
        let mut counting = hold;
        assert!(!counting.count_append() && !counting.count_append() && counting.count_append(), "the third append ends it");
        assert_eq!(CohortHold::after_ack(&Config::file(Policy::Group), Nanos(0), 3, 1, Nanos(800)), None, "off");
        assert_eq!(CohortHold::after_ack(&config, Nanos(0), 0, 0, Nanos(800)), None, "nobody answered");
        assert_eq!(CohortHold::after_ack(&config, Nanos(0), 4, 2, Nanos(800)), None, "half as many wait as were answered");
        assert!(CohortHold::after_ack(&config, Nanos(0), 5, 2, Nanos(800)).is_some(), "fewer than half wait");
        assert_eq!(CohortHold::after_ack(&config, Nanos(0), 3, 1, Nanos(1)), None, "a hold of nothing");
    }

    #[test]
    fn the_machine_marks_the_batches_it_submits() {
        use crate::group_commit::{Action, GroupCommit};
        use crate::time::Nanos;
        let mut machine = GroupCommit::new(local_file(2)).unwrap();
        machine.handle_append(Nanos(0), 1, b"a").unwrap();
        let Some(Action::Persist(first)) = machine.poll_action() else { panic!("a persist") };
        assert!(first.inline, "nothing running, a lone record");
        machine.handle_append(Nanos(1), 1, b"b").unwrap();
        machine.handle_append(Nanos(1), 1, b"c").unwrap();
        let Some(Action::Persist(second)) = machine.poll_action() else { panic!("two records start beside the first") };
        assert!(!second.inline, "one sync is running: the second goes off the thread");
    }
}
