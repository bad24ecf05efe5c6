//! The recap: the path of one OK, a stop per lesson, each with the headline number its
//! chapter computed. The numbers come from the same core runs the chapters make (the
//! tiny store's group commit and power cut, its gates, branch B's redo, branch R's
//! quorum, the budget model), run again here for the defaults, so the recap cannot drift
//! from the chapters it sums up.

use walab_core::budget::{Budget, Fit, MIB};
use walab_core::codec::tiny::HEADER_BYTES;
use walab_core::group_commit::{Config, Policy};
use walab_core::pages::branch_b::{self, CutPoint};
use walab_core::pages::engine::Protection;
use walab_core::pages::page::PageGeometry;
use walab_core::quorum::{self, QuorumSetup};
use walab_core::sim::commit::{self, tiny_store_setup};
use walab_core::sim::tiny::{self, CdcReader, TinySetup};
use walab_core::tiny_store::{POWER_CUT, SYNC_LATENCY, WRITES};

use super::redo_quorum_budget::{FORK_AFTER_WRITE, PAGE_BYTES, SECTOR_BYTES};
use crate::format::{group_thousands, ms};

/// One stop on the path: what it is about, its number in a few words, and its lesson.
#[derive(Debug)]
pub struct Stop {
    pub topic: Topic,
    pub headline: String,
    pub lesson: String,
}

/// What a stop sums up, in the order an OK travels (`crate::parts` says which chapter
/// teaches each).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Topic {
    SyncsPerSecond,
    Chain,
    OneSync,
    FailedSync,
    RecordHeader,
    GroupCommit,
    PowerCut,
    TornTail,
    Retention,
    Redo,
    Quorum,
    AwsBudget,
    ObjectStore,
    Postgres,
}

/// The reader the recap pins the retention run's segments with.
const READER_SEQ: u64 = 10;

/// Every stop, in the order an OK travels (the remote WALs last).
pub fn stops(budget: Option<&Budget>) -> Vec<Stop> {
    let stop = |topic: Topic, headline: String, lesson: &str| Stop { topic, headline, lesson: lesson.to_string() };
    let failed = |what: &str| format!("({what} did not run)");
    let mut stops = Vec::with_capacity(15);
    stops.push(stop(Topic::SyncsPerSecond, budget.map_or_else(|| failed("the budget"), |budget| format!(
        "{} writes/s ÷ {} syncs/s = {:.0} writes a sync", group_thousands(budget.input.rate_per_s), group_thousands(budget.syncs_per_s), budget.writes_per_batch_mean)),
        "A log that syncs in about 1 ms allows about 1,000 syncs a second: a heavy load needs many writes per sync."));
    stops.push(stop(Topic::Chain, "log before apply; durable before OK".to_string(),
        "An OK names the failure it survives; the WAL rule logs the change before applying it and syncs before answering."));
    stops.push(stop(Topic::OneSync, format!("one fdatasync: {}", ms(SYNC_LATENCY)),
        "A write only reaches the page cache; a sync makes it durable, through the drive's cache, with the directory and the file's size."));
    stops.push(stop(Topic::FailedSync, "EIO: fail the waiters, stop, recover".to_string(),
        "A failed sync may have marked the pages clean: a retry that returns OK wrote nothing, so the engine must stop."));
    stops.push(stop(Topic::RecordHeader, format!("{HEADER_BYTES}-byte header: checksum, length, type"),
        "Each record carries its own checksum and length, so a scan can tell a whole record from a torn one."));
    let tiny_commit = |policy| {
        let (setup, arrivals) = tiny_store_setup(Config::file(policy));
        commit::run(&setup, &arrivals)
    };
    let group = tiny_commit(Policy::Group).map(|run| run.summary);
    let per_write = tiny_commit(Policy::PerWrite).map(|run| run.summary);
    stops.push(stop(Topic::GroupCommit, match (group, per_write) {
        (Ok(group), Ok(per_write)) => format!(
            "{} writes in {} syncs, waits {} to {} (a sync each: {} syncs, up to {})",
            WRITES.len(), group.syncs, ms(group.wait_min), ms(group.wait_max), per_write.syncs, ms(per_write.wait_max)),
        _ => failed("the group-commit run"),
    }, "Group commit shares each sync: every wait is between L and 2L, with the same guarantee as a sync per write."));
    let at_cut = |policy| {
        let run = tiny::run(&TinySetup::new(policy).with_power_cut(POWER_CUT)).ok()?;
        let lost = run.post_crash_states()?.first()?.lost_acknowledged.len();
        Some((run.acknowledged().len(), lost))
    };
    stops.push(stop(Topic::PowerCut, match (at_cut(Policy::Group), at_cut(Policy::NoSync)) {
        (Some((group_acked, group_lost)), Some((fast_acked, fast_lost))) => format!(
            "power off at {}: group commit {group_acked} OK, {group_lost} lost; no sync {fast_acked} OK, {fast_lost} lost", ms(POWER_CUT)),
        _ => failed("the power cut"),
    }, "An OK before the sync is a promise the power can break; after the sync it holds."));
    stops.push(stop(Topic::TornTail, "the scan stops at the first bad checksum".to_string(),
        "A torn tail is harmless: only writes never acknowledged can be in it, and recovery stops before them."));
    let kept = |readers: Vec<CdcReader>| {
        let run = tiny::run(&TinySetup { readers, ..TinySetup::new(Policy::Group) }).ok()?;
        let at = run.ack_of(WRITES.len() as u64)?;
        Some(run.gates_at(at).iter().filter(|gate| gate.exists).count())
    };
    let reader = CdcReader { name: "cdc".to_string(), confirmed_seq: READER_SEQ };
    stops.push(stop(Topic::Retention, match (kept(Vec::new()), kept(vec![reader])) {
        (Some(alone), Some(pinned)) => format!("{} kept; {} with a reader stuck at seq {READER_SEQ}", crate::format::count(alone as u64, "segment"), pinned),
        _ => failed("the retention run"),
    }, "A segment goes once its records are flushed and every reader has passed it; a stuck reader pins the log."));
    let redo = |protection| {
        let geometry = PageGeometry::new(PAGE_BYTES, SECTOR_BYTES).ok()?;
        Some(branch_b::run(geometry, protection, CutPoint::PAGE).ok()?.recovered_everything())
    };
    stops.push(stop(Topic::Redo, match (redo(Protection::FullPageImages), redo(Protection::None)) {
        (Some(with), Some(without)) => format!("torn page: {} with full-page images, {} without", restored(with), restored(without)),
        _ => failed("the redo run"),
    }, "Redo applies a record only where LSN > pageLSN; a torn page needs a full-page image or a doublewrite copy."));
    let setup = QuorumSetup::branch_r();
    stops.push(stop(Topic::Quorum, match quorum::branch_r(&setup, FORK_AFTER_WRITE).ok().and_then(|branch| branch.budget(23)) {
        Some(wait) => format!("write 23 waits {}, not the naive {}", ms(wait.total), ms(wait.naive_sum)),
        None => failed("the quorum run"),
    }, "Replicas' legs run at once: a commit costs the slowest leg it needs, and the copies survive a lost disk or zone."));
    stops.push(stop(Topic::AwsBudget, budget.map_or_else(|| failed("the budget"), aws_budget),
        "The syncs fit gp3's included IOPS; the bytes (log pages plus the LSM tree's) need more throughput or a second volume."));
    stops.push(stop(Topic::ObjectStore, "no local disk: an OK once the object is stored".to_string(),
        "On S3 an append waits for its upload (tens of ms on S3 Standard); records that arrive meanwhile share the next upload, and the epoch in every key fences a replaced node."));
    stops.push(stop(Topic::Postgres, "an OK once the row is committed".to_string(),
        "In Postgres the WAL is rows in a ring of slot tables; a commit costs a millisecond or two, and the node row's epoch fences a replaced node."));
    stops
}

fn restored(whole: bool) -> &'static str {
    if whole {
        "rebuilt"
    } else {
        "lost"
    }
}

/// "1,000 + about 760 = 1,763 IOPS of gp3's 3,000; 12-16 + 191 MiB/s = 207 MiB/s, above
/// its 125 MiB/s": Part 11's numbers, from the same [`BudgetWords`].
pub fn aws_budget(budget: &Budget) -> String {
    let words = BudgetWords::of(budget);
    format!(
        "{} + {} = {} IOPS of {}'s {}; {} + {} MiB/s = {} MiB/s, {} its {} MiB/s",
        words.log_iops, words.lsm_iops, words.iops, budget.limits.name, words.iops_baseline,
        words.log_mib, words.lsm_mib, words.needed_mib, words.above_mib, budget.limits.mib_per_s_included,
    )
}

/// The budget's numbers as Parts 11 and 12 both say them: one rounding, one unit (MiB/s,
/// rounded up, as a need is), so the two Parts never disagree.
pub struct BudgetWords {
    pub log_iops: String,
    /// "about 760", or the exact count below 100.
    pub lsm_iops: String,
    pub iops: String,
    pub iops_baseline: String,
    pub above_iops: &'static str,
    /// "12-16", or one number when both ends read the same.
    pub log_mib: String,
    pub lsm_mib: String,
    pub needed_mib: String,
    pub above_mib: &'static str,
}

impl BudgetWords {
    pub fn of(budget: &Budget) -> BudgetWords {
        let above = |fit: Fit| if fit == Fit::Included { "within" } else { "above" };
        let (low, high) = (mib_up(budget.log_bytes_per_s_min), mib_up(budget.log_bytes_per_s_max));
        BudgetWords {
            log_iops: group_thousands(budget.log_iops),
            lsm_iops: if budget.lsm_iops < 100 { group_thousands(budget.lsm_iops) } else { format!("about {}", group_thousands(about(budget.lsm_iops))) },
            iops: group_thousands(budget.shared.iops),
            iops_baseline: group_thousands(budget.limits.iops_included),
            above_iops: above(budget.shared.iops_fit),
            log_mib: if low == high { high } else { format!("{low}-{high}") },
            lsm_mib: mib_up(budget.input.lsm_bytes_per_s),
            needed_mib: mib_up(budget.shared.bytes_per_s),
            above_mib: above(budget.shared.throughput_fit),
        }
    }
}

/// Bytes a second in MiB/s, rounded up: whole MiB from 10 up ("207"), tenths below ("0.8").
pub fn mib_up(bytes_per_s: u64) -> String {
    let tenths = bytes_per_s.saturating_mul(10).div_ceil(MIB);
    if tenths < 100 {
        format!("{}.{}", tenths / 10, tenths % 10)
    } else {
        group_thousands(bytes_per_s.div_ceil(MIB))
    }
}

/// A count to the nearest ten ("about 760").
pub fn about(count: u64) -> u64 {
    (count + 5) / 10 * 10
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::redo_quorum_budget::BudgetModel;
    use crate::url_state::parse_query;

    #[test]
    fn the_path_of_an_ok_has_a_stop_for_every_lesson() {
        use Topic::*;
        let budget = BudgetModel::build(&parse_query("").0, true).budget.unwrap();
        let stops = stops(Some(&budget));
        let topics: Vec<Topic> = stops.iter().map(|stop| stop.topic).collect();
        let all = [SyncsPerSecond, Chain, OneSync, FailedSync, RecordHeader, GroupCommit, PowerCut, TornTail, Retention, Redo, Quorum, AwsBudget, ObjectStore, Postgres];
        assert_eq!(topics, all);
        let headline = |topic: Topic| stops.iter().find(|stop| stop.topic == topic).unwrap().headline.clone();
        assert_eq!(headline(SyncsPerSecond), "100,000 writes/s ÷ 1,000 syncs/s = 100 writes a sync");
        assert_eq!(headline(GroupCommit), "24 writes in 14 syncs, waits 1 ms to 1.9 ms (a sync each: 24 syncs, up to 11.3 ms)");
        assert_eq!(headline(PowerCut), "power off at 13.5 ms: group commit 22 OK, 0 lost; no sync 24 OK, 4 lost");
        assert_eq!(headline(Retention), "1 segment kept; 4 with a reader stuck at seq 10");
        assert_eq!(headline(Redo), "torn page: rebuilt with full-page images, lost without");
        assert_eq!(headline(Quorum), "write 23 waits 2.7 ms, not the naive 9.7 ms");
        assert_eq!(headline(AwsBudget), "1,000 + about 760 = 1,763 IOPS of gp3's 3,000; 12-16 + 191 MiB/s = 207 MiB/s, above its 125 MiB/s");
        let light = BudgetModel::build(&parse_query("load=200").0, false).budget.unwrap();
        assert_eq!(aws_budget(&light), "200 + 2 = 202 IOPS of gp3's 3,000; 0.8 + 0.4 MiB/s = 1.2 MiB/s, within its 125 MiB/s");
        assert!(stops.iter().all(|stop| !stop.headline.contains("did not run")));
    }
}
