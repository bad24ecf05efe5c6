//! Where and beside what a persist runs: the machine's pipelining settings for each kind
//! of storage, and which batch a driver persists on its own thread.
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

/// The native file WAL: the fewest records a group batch needs to start syncing beside
/// a running sync (the machine's `pipeline_min_records`), and the size below which a
/// batch after a batch as small is synced inline. A lone writer's record then syncs with
/// no thread hop, and a second sync starts only for a batch worth a sync of its own.
pub const LOCAL_FILE_PIPELINE_MIN_RECORDS: u64 = 2;

/// The object-store WAL: the fewest records a bulk needs to be uploaded beside another
/// upload. A PUT is billed per request and a bulk's latency is about one round trip
/// whatever it carries, so at low concurrency one upload in flight lets the next bulk
/// gather; at high concurrency every slot fills.
pub const OBJECT_STORE_PIPELINE_MIN_RECORDS: u64 = 32;

/// Whether the driver persists a batch of `records` inline: the storage allows it
/// ([`Config::inline_persists`]), and either one persist at a time is all there is
/// (`inflight_max == 1`), or nothing else is `running` and this batch and the previous
/// one (`previous_records`) are both below `pipeline_min_records`.
pub fn persists_inline(config: &Config, running: usize, records: u64, previous_records: u64) -> bool {
    config.inline_persists
        && (config.inflight_max == 1
            || (running == 0 && records < config.pipeline_min_records && previous_records < config.pipeline_min_records))
}

/// Serde's test for leaving `inline_persists` out of a serialized config.
#[cfg(feature = "serde")]
pub(super) fn is_false(value: &bool) -> bool {
    !*value
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::group_commit::Policy;

    #[test]
    fn a_lone_writer_syncs_inline_and_anything_with_company_goes_off_the_thread() {
        let file = Config::local_file(Policy::Group, 2);
        assert!(persists_inline(&file, 0, 1, 1), "a record after a record, nothing running");
        assert!(!persists_inline(&file, 1, 1, 1), "another sync is running");
        assert!(!persists_inline(&file, 0, 2, 1), "a batch worth a sync of its own");
        assert!(!persists_inline(&file, 0, 1, 5), "a small batch after a large one");
        let one_at_a_time = Config::local_file(Policy::Group, 1);
        assert!(persists_inline(&one_at_a_time, 0, 64, 64), "one sync at a time: always inline");
        assert!(!persists_inline(&Config::object_store(Policy::Group), 0, 1, 1), "an object store never blocks the driver");
        assert!(!persists_inline(&Config::file(Policy::Group), 0, 1, 1), "the simulated file leaves it to its driver");
    }

    #[test]
    fn the_machine_marks_the_batches_it_submits() {
        use crate::group_commit::{Action, GroupCommit};
        use crate::time::Nanos;
        let mut machine = GroupCommit::new(Config::local_file(Policy::Group, 2)).unwrap();
        machine.handle_append(Nanos(0), 1, b"a").unwrap();
        let Some(Action::Persist(first)) = machine.poll_action() else { panic!("a persist") };
        assert!(first.inline, "nothing running, a lone record");
        machine.handle_append(Nanos(1), 1, b"b").unwrap();
        machine.handle_append(Nanos(1), 1, b"c").unwrap();
        let Some(Action::Persist(second)) = machine.poll_action() else { panic!("two records start beside the first") };
        assert!(!second.inline, "one sync is running: the second goes off the thread");
    }
}
