//! Where and beside what a persist runs: which batch a driver persists on its own
//! thread, and the cohort hold that merges closed-loop writers into one batch.
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
