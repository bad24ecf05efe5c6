//! Parts 11 and 12: the log's budget on a cloud volume.
//!
//! A sync is not free on AWS. An EBS volume is sold as a number of I/O operations a
//! second (IOPS) and a throughput in MiB/s, and the log's syncs draw on the same budget
//! as the LSM tree's flushes and compactions. This module turns a workload into the
//! numbers to hold against a volume's limits:
//!
//! 1. **Syncs a second.** Group commit decides them, so the calculator *runs* the
//!    group-commit machine at the given rate with evenly spaced writers
//!    ([`crate::quorum::steady_group_commit`]) rather than typing in `rate x L`. At
//!    100,000 writes a second and L = 1 ms it finds 100 writes per batch, so 1,000 syncs
//!    a second.
//! 2. **Log I/Os.** Each sync writes its batch and makes it durable with one
//!    `fdatasync`. The kernel writes whole pages (4 KiB), so a 10.7 KB batch that starts
//!    partway into a page touches 3 or 4 of them; the run's own batch offsets say which.
//!    EBS counts an I/O of up to 256 KiB on an SSD volume as one operation (larger ones
//!    are split into 256 KiB pieces), so each sync costs one I/O: 1,000 IOPS.
//! 3. **Log bytes.** 3 or 4 whole pages per sync, 1,000 times a second: 12 to 16 MB/s,
//!    although the bare records are only 100,000 x 107 B = 10.7 MB/s.
//! 4. **LSM bytes and I/Os.** The tree's flush and compaction bandwidth is an input
//!    (200 MB/s at 100,000 writes a second on the teaching page, from its LSM companion
//!    page). The tree rewrites what the log takes in, so the lab scales it with the load:
//!    [`LSM_BYTES_PER_WRITE`], 2,000 bytes of flushes and compaction a write. It moves in
//!    large sequential writes, which EBS merges up to 256 KiB per I/O: 200 MB/s / 256 KiB
//!    is about 763 IOPS.
//! 5. **Against the volume.** About 1,000 + 763 = 1,763 IOPS is well inside gp3's
//!    baseline of 3,000, but 12-16 MB/s + 200 MB/s is above its 125 MiB/s baseline
//!    throughput: provision more gp3 throughput, or move the log to its own volume.
//!
//! Volume limits, from AWS's documentation (checked for this lab; AWS changes them, so
//! pass your own if they moved):
//! - gp3: 3,000 IOPS and 125 MiB/s included; up to 16,000 IOPS and 1,000 MiB/s
//!   provisioned, with at most 0.25 MiB/s of throughput per provisioned IOPS
//!   (Amazon EBS User Guide, "General Purpose SSD volumes"; the EC2 API's
//!   `CreateVolume` lists gp3 IOPS as 3,000-16,000 and throughput as 125-1,000 MiB/s).
//! - io2 Block Express: provisioned IOPS up to 256,000 and throughput up to 4,000 MiB/s,
//!   nothing included (Amazon EBS User Guide, "Provisioned IOPS SSD volumes").
//! - The 256 KiB I/O size: Amazon EBS User Guide, "Amazon EBS I/O characteristics and
//!   monitoring" ("I/O size is capped at 256 KiB for SSD volumes"; sequential smaller
//!   I/Os are merged up to it, larger ones split).
//! - Instance-store NVMe: no per-volume IOPS or throughput quota; the limits are the
//!   instance type's published figures (tens to hundreds of thousands of 4 KiB random
//!   IOPS per the EC2 storage-optimized instance documentation), and the data lives and
//!   dies with the instance: a log there survives a process or OS crash, not the loss of
//!   the instance or its host.

use crate::codec::tiny::HEADER_BYTES;
use crate::quorum::{steady_group_commit, BatchTiming, QuorumError};
use crate::time::Nanos;

/// One MiB, in bytes.
pub const MIB: u64 = 1 << 20;
/// EBS's largest I/O on an SSD volume: bigger ones count as several.
pub const EBS_IO_BYTES_MAX: u64 = 256 * 1024;

/// A kind of volume.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
pub enum VolumeKind {
    Gp3,
    Io2,
    InstanceStore,
}

/// A volume's published limits. `None` means "no such limit on this kind of volume".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct VolumeLimits {
    pub kind: VolumeKind,
    pub name: &'static str,
    /// IOPS included without provisioning (gp3's 3,000; io2 includes none).
    pub iops_included: u64,
    /// Throughput included without provisioning, in MiB/s.
    pub mib_per_s_included: u64,
    /// The most IOPS one volume can be provisioned with.
    pub iops_max: Option<u64>,
    /// The most throughput one volume can be provisioned with, in MiB/s.
    pub mib_per_s_max: Option<u64>,
    /// Provisioned throughput may not exceed this many MiB/s per 100 provisioned IOPS
    /// (gp3: 25, that is 0.25 MiB/s per IOPS).
    pub mib_per_s_per_100_iops_max: Option<u64>,
    /// Bytes one I/O may carry before EBS counts it as more than one.
    pub io_bytes_max: Option<u64>,
}

impl VolumeLimits {
    pub fn of(kind: VolumeKind) -> VolumeLimits {
        match kind {
            VolumeKind::Gp3 => VolumeLimits {
                kind,
                name: "gp3",
                iops_included: 3_000,
                mib_per_s_included: 125,
                iops_max: Some(16_000),
                mib_per_s_max: Some(1_000),
                mib_per_s_per_100_iops_max: Some(25),
                io_bytes_max: Some(EBS_IO_BYTES_MAX),
            },
            VolumeKind::Io2 => VolumeLimits {
                kind,
                name: "io2 Block Express",
                iops_included: 0,
                mib_per_s_included: 0,
                iops_max: Some(256_000),
                mib_per_s_max: Some(4_000),
                mib_per_s_per_100_iops_max: None,
                io_bytes_max: Some(EBS_IO_BYTES_MAX),
            },
            VolumeKind::InstanceStore => VolumeLimits {
                kind,
                name: "instance-store NVMe",
                iops_included: u64::MAX,
                mib_per_s_included: u64::MAX,
                iops_max: None,
                mib_per_s_max: None,
                mib_per_s_per_100_iops_max: None,
                io_bytes_max: None,
            },
        }
    }
}

/// The workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct BudgetInput {
    pub rate_per_s: u64,
    /// The caller's record; the log adds its 7-byte header to each.
    pub record_bytes: u64,
    pub sync_latency: Nanos,
    /// The page a sync writes whole (the OS page, 4 KiB).
    pub log_page_bytes: u64,
    /// The LSM tree's flush and compaction writes, in bytes a second.
    pub lsm_bytes_per_s: u64,
    pub volume: VolumeKind,
}

/// The LSM tree's flush and compaction bytes per write taken in: the teaching page's
/// 200 MB/s at its 100,000 writes a second.
pub const LSM_BYTES_PER_WRITE: u64 = 2_000;

impl BudgetInput {
    /// The teaching page's opening problem: 100,000 writes of 100 bytes a second, 1 ms
    /// syncs, 4 KiB pages, 200 MB/s of flushes and compaction, one gp3 volume.
    pub fn page() -> BudgetInput {
        BudgetInput::at_load(100_000, Nanos::from_millis(1))
    }

    /// The page's problem at another load and sync latency: the tree's flushes and
    /// compaction grow with the load ([`LSM_BYTES_PER_WRITE`] a write).
    pub fn at_load(rate_per_s: u64, sync_latency: Nanos) -> BudgetInput {
        BudgetInput {
            rate_per_s,
            record_bytes: 100,
            sync_latency,
            log_page_bytes: 4096,
            lsm_bytes_per_s: rate_per_s.saturating_mul(LSM_BYTES_PER_WRITE),
            volume: VolumeKind::Gp3,
        }
    }
}

/// Why a budget cannot be computed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BudgetError {
    RateZero,
    /// More than one write a nanosecond.
    RateTooHigh { rate_per_s: u64 },
    /// Records or pages over 1 GiB.
    TooLarge { what: &'static str, bytes: u64 },
    /// `rate x L` writes per batch is more than the calculator simulates.
    BatchTooLargeToSimulate { writes_per_batch: u64 },
    RecordBytesZero,
    SyncLatencyZero,
    PageBytesZero,
    /// The group-commit run behind the syncs failed.
    Run(QuorumError),
}

impl std::fmt::Display for BudgetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BudgetError::RateZero => f.write_str("the rate must be at least 1 write a second"),
            BudgetError::RateTooHigh { rate_per_s } => write!(f, "a rate of {rate_per_s} writes a second is more than one a nanosecond"),
            BudgetError::TooLarge { what, bytes } => write!(f, "{what} of {bytes} bytes is over 1 GiB"),
            BudgetError::BatchTooLargeToSimulate { writes_per_batch } => {
                write!(f, "about {writes_per_batch} writes per batch (rate x sync latency); the calculator simulates at most {} per batch", STEADY_WRITES_MAX / STEADY_SYNCS)
            }
            BudgetError::RecordBytesZero => f.write_str("records must be at least 1 byte"),
            BudgetError::SyncLatencyZero => f.write_str("the sync latency must be longer than zero"),
            BudgetError::PageBytesZero => f.write_str("the page size must be at least 1 byte"),
            BudgetError::Run(error) => write!(f, "group-commit run: {error}"),
        }
    }
}

/// Whether a need fits a volume.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(tag = "fits", rename_all = "snake_case"))]
pub enum Fit {
    /// Within what the volume includes.
    Included,
    /// Needs provisioning up to `to` (IOPS or MiB/s), within the volume's maximum.
    Provision { to: u64 },
    /// Beyond what one volume of this kind can be provisioned with.
    BeyondMax { max: u64 },
}

/// One volume's load and verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct VolumeLoad {
    pub iops: u64,
    /// The worst case (most pages per sync), in bytes a second.
    pub bytes_per_s: u64,
    pub iops_fit: Fit,
    pub throughput_fit: Fit,
}

/// The whole budget.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Budget {
    pub input: BudgetInput,
    pub limits: VolumeLimits,
    /// Record plus header, as the log stores it.
    pub log_record_bytes: u64,
    /// From the group-commit run, in its steady part.
    pub writes_per_batch_mean: f64,
    pub syncs_per_s: u64,
    pub batch_bytes_mean: f64,
    /// Whole log pages one sync writes: fewest, most, mean over the steady batches.
    pub pages_per_sync_min: u64,
    pub pages_per_sync_max: u64,
    pub pages_per_sync_mean: f64,
    /// The bare records, before rounding to pages.
    pub record_bytes_per_s: u64,
    pub log_bytes_per_s_min: u64,
    pub log_bytes_per_s_max: u64,
    /// I/Os one sync counts as (1 while a sync's pages fit in 256 KiB).
    pub ios_per_sync: u64,
    pub log_iops: u64,
    /// Flushes and compaction: the exact quotient and the whole I/Os needed.
    pub lsm_iops_exact: f64,
    pub lsm_iops: u64,
    /// The log and the tree on one volume.
    pub shared: VolumeLoad,
    /// The log on a volume of its own, and the tree on another of the same kind.
    pub log_alone: VolumeLoad,
    pub lsm_alone: VolumeLoad,
}

/// How many whole pages of `page_bytes` the byte range `offset .. offset + bytes` touches.
pub fn pages_touched(offset: u64, bytes: u64, page_bytes: u64) -> u64 {
    if bytes == 0 {
        return 0;
    }
    (offset + bytes - 1) / page_bytes - offset / page_bytes + 1
}

fn fit(need: u64, included: u64, max: Option<u64>) -> Fit {
    if need <= included {
        Fit::Included
    } else {
        match max {
            Some(max) if need > max => Fit::BeyondMax { max },
            _ => Fit::Provision { to: need },
        }
    }
}

fn load(iops: u64, bytes_per_s: u64, limits: &VolumeLimits) -> VolumeLoad {
    let mib_per_s = bytes_per_s.div_ceil(MIB);
    let throughput_fit = fit(mib_per_s, limits.mib_per_s_included, limits.mib_per_s_max);
    // gp3 ties throughput to IOPS: provisioning T MiB/s needs at least 4 T IOPS.
    let iops_needed = match (throughput_fit, limits.mib_per_s_per_100_iops_max) {
        (Fit::Provision { to }, Some(per_100)) => iops.max((to * 100).div_ceil(per_100)),
        _ => iops,
    };
    VolumeLoad { iops, bytes_per_s, iops_fit: fit(iops_needed, limits.iops_included, limits.iops_max), throughput_fit }
}

/// Writers simulated for the steady state, at most.
const STEADY_WRITES_MAX: u64 = 400_000;
/// Sync latencies' worth of writers simulated: enough for a steady middle.
const STEADY_SYNCS: u64 = 12;
/// The largest record or page the calculator takes.
const BYTES_MAX: u64 = 1 << 30;
/// Batches at each end of the run left out of the steady averages.
const WARMUP_BATCHES: usize = 2;

/// Computes the budget.
pub fn compute(input: BudgetInput) -> Result<Budget, BudgetError> {
    if input.rate_per_s == 0 {
        return Err(BudgetError::RateZero);
    }
    if input.record_bytes == 0 {
        return Err(BudgetError::RecordBytesZero);
    }
    if input.sync_latency.0 == 0 {
        return Err(BudgetError::SyncLatencyZero);
    }
    if input.log_page_bytes == 0 {
        return Err(BudgetError::PageBytesZero);
    }
    if input.rate_per_s > 1_000_000_000 {
        return Err(BudgetError::RateTooHigh { rate_per_s: input.rate_per_s });
    }
    if input.record_bytes > BYTES_MAX {
        return Err(BudgetError::TooLarge { what: "a record", bytes: input.record_bytes });
    }
    if input.log_page_bytes > BYTES_MAX {
        return Err(BudgetError::TooLarge { what: "a page", bytes: input.log_page_bytes });
    }
    let limits = VolumeLimits::of(input.volume);
    let log_record_bytes = input.record_bytes + HEADER_BYTES as u64;

    // 1. Run group commit over STEADY_SYNCS sync latencies' worth of writers (at least
    //    40). Every record has the same size, so the machine is fed 1-byte records and
    //    the batches' offsets and sizes are scaled back up: the same batches, without
    //    holding gigabytes of payload.
    let writes_per_latency = u128::from(input.rate_per_s) * u128::from(input.sync_latency.0) / 1_000_000_000;
    let count = writes_per_latency * u128::from(STEADY_SYNCS);
    if count > u128::from(STEADY_WRITES_MAX) {
        return Err(BudgetError::BatchTooLargeToSimulate { writes_per_batch: u64::try_from(writes_per_latency).unwrap_or(u64::MAX) });
    }
    let count = (count as u64).max(40);
    let mut run = steady_group_commit(input.rate_per_s, count, 1, input.sync_latency).map_err(BudgetError::Run)?;
    for batch in &mut run.batches {
        batch.offset *= log_record_bytes;
        batch.bytes *= log_record_bytes;
    }
    let steady: &[BatchTiming] = if run.batches.len() > 2 * WARMUP_BATCHES + 1 {
        &run.batches[WARMUP_BATCHES..run.batches.len() - WARMUP_BATCHES]
    } else {
        &run.batches
    };
    let steady_writes: u64 = steady.iter().map(|batch| batch.writes).sum();
    let steady_batches = steady.len() as u64;
    let writes_per_batch_mean = steady_writes as f64 / steady_batches as f64;
    // syncs/s = rate / writes per batch, rounded to the nearest whole sync.
    let syncs_per_s = (u128::from(input.rate_per_s) * u128::from(steady_batches) * 2 + u128::from(steady_writes)) / (2 * u128::from(steady_writes));
    let syncs_per_s = syncs_per_s as u64;
    let batch_bytes_mean = steady.iter().map(|batch| batch.bytes).sum::<u64>() as f64 / steady_batches as f64;

    // 2. Whole pages per sync, from where each batch really fell in the log.
    let pages: Vec<u64> = steady.iter().map(|batch| pages_touched(batch.offset, batch.bytes, input.log_page_bytes)).collect();
    let pages_per_sync_min = pages.iter().copied().min().unwrap_or(0);
    let pages_per_sync_max = pages.iter().copied().max().unwrap_or(0);
    let pages_per_sync_mean = pages.iter().sum::<u64>() as f64 / pages.len().max(1) as f64;
    let io_bytes_max = limits.io_bytes_max.unwrap_or(u64::MAX);
    let ios_per_sync = (pages_per_sync_max * input.log_page_bytes).div_ceil(io_bytes_max).max(1);
    let log_iops = syncs_per_s * ios_per_sync;

    // 3. Bytes.
    let record_bytes_per_s = input.rate_per_s * log_record_bytes;
    let log_bytes_per_s_min = syncs_per_s * pages_per_sync_min * input.log_page_bytes;
    let log_bytes_per_s_max = syncs_per_s * pages_per_sync_max * input.log_page_bytes;

    // 4. The LSM tree's large sequential I/Os.
    let (lsm_iops_exact, lsm_iops) = match limits.io_bytes_max {
        Some(io) => (input.lsm_bytes_per_s as f64 / io as f64, input.lsm_bytes_per_s.div_ceil(io)),
        None => (0.0, 0),
    };

    // 5. Against the volume.
    let shared = load(log_iops + lsm_iops, log_bytes_per_s_max + input.lsm_bytes_per_s, &limits);
    let log_alone = load(log_iops, log_bytes_per_s_max, &limits);
    let lsm_alone = load(lsm_iops, input.lsm_bytes_per_s, &limits);
    Ok(Budget {
        input,
        limits,
        log_record_bytes,
        writes_per_batch_mean,
        syncs_per_s,
        batch_bytes_mean,
        pages_per_sync_min,
        pages_per_sync_max,
        pages_per_sync_mean,
        record_bytes_per_s,
        log_bytes_per_s_min,
        log_bytes_per_s_max,
        ios_per_sync,
        log_iops,
        lsm_iops_exact,
        lsm_iops,
        shared,
        log_alone,
        lsm_alone,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_to(value: u64, step: u64) -> u64 {
        (value + step / 2) / step * step
    }

    #[test]
    fn part12_syncs_about_1000_plus_760_of_3000_iops() {
        let budget = compute(BudgetInput::page()).unwrap();
        assert_eq!(budget.writes_per_batch_mean, 100.0, "rate x L, found by running group commit");
        assert_eq!(budget.syncs_per_s, 1_000);
        assert_eq!(budget.ios_per_sync, 1, "a 16 KiB sync is one EBS I/O");
        assert_eq!(budget.log_iops, 1_000);
        assert_eq!(round_to(budget.lsm_iops, 10), 760);
        assert_eq!(round_to(budget.shared.iops, 100), 1_800);
        assert!(budget.shared.iops < budget.limits.iops_included);
    }

    #[test]
    fn part12_log_12_to_16_mb_s_plus_200_over_125_mib_s() {
        let budget = compute(BudgetInput::page()).unwrap();
        assert_eq!(budget.record_bytes_per_s, 10_700_000, "100,000 x 107 B");
        assert_eq!(budget.batch_bytes_mean, 10_700.0, "about 10 KB per sync");
        assert_eq!((budget.pages_per_sync_min, budget.pages_per_sync_max), (3, 4));
        assert_eq!(budget.log_bytes_per_s_min / 1_000_000, 12);
        assert_eq!(budget.log_bytes_per_s_max / 1_000_000, 16);
        assert!(budget.shared.bytes_per_s > 125 * MIB);
        // gp3 can be provisioned for it: 207 MiB/s, within its 1,000.
        assert_eq!(budget.shared.throughput_fit, Fit::Provision { to: 207 });
        assert_eq!(budget.shared.iops_fit, Fit::Included);
        // A log volume of its own fits gp3's baseline; the tree's volume still needs more throughput.
        assert_eq!((budget.log_alone.iops_fit, budget.log_alone.throughput_fit), (Fit::Included, Fit::Included));
        assert_eq!(budget.lsm_alone.throughput_fit, Fit::Provision { to: 191 });
    }

    /// The simulator's own group-commit run (`sim::commit`, the one behind Part 5) agrees
    /// with the batches the budget drives: same writes per batch, same pages per sync.
    #[test]
    fn the_simulators_steady_run_agrees() {
        use crate::group_commit::{Config, Policy};
        use crate::sim::commit::{run, Arrivals, CommitSetup, Keep};
        let budget = compute(BudgetInput::page()).unwrap();
        let setup = CommitSetup {
            record_bytes: budget.log_record_bytes as u32,
            keep: Keep { writes: false, batches: true, trace: false },
            ..CommitSetup::new(Config::file(Policy::Group), Nanos::from_millis(1))
        };
        let simulated = run(&setup, &Arrivals::Even { rate_per_s: 100_000, count: 4_000 }).unwrap();
        let mut offset = 0;
        let mut pages = Vec::new();
        let mut writes = Vec::new();
        for batch in &simulated.batches {
            pages.push(pages_touched(offset, batch.bytes, 4096));
            writes.push(batch.writes);
            offset += batch.bytes;
        }
        let steady = 2..simulated.batches.len() - 2;
        assert!(writes[steady.clone()].iter().all(|&count| count as f64 == budget.writes_per_batch_mean));
        assert_eq!(pages[steady.clone()].iter().min(), Some(&budget.pages_per_sync_min));
        assert_eq!(pages[steady].iter().max(), Some(&budget.pages_per_sync_max));
    }

    /// At a light load the tree's flushes shrink with the log's: 200 writes a second
    /// need 0.4 MB/s of flushes and compaction, well within gp3's baseline.
    #[test]
    fn the_trees_bytes_follow_the_load() {
        let light = compute(BudgetInput::at_load(200, Nanos::from_millis(1))).unwrap();
        assert_eq!(light.input.lsm_bytes_per_s, 400_000);
        assert_eq!((light.pages_per_sync_min, light.pages_per_sync_max), (1, 1));
        assert_eq!(light.shared.throughput_fit, Fit::Included);
        assert_eq!(light.shared.iops_fit, Fit::Included);
        assert_eq!(compute(BudgetInput::page()).unwrap().input.lsm_bytes_per_s, 200_000_000);
    }

    #[test]
    fn low_load_gets_batches_of_one() {
        let budget = compute(BudgetInput { rate_per_s: 200, ..BudgetInput::page() }).unwrap();
        assert_eq!(budget.writes_per_batch_mean, 1.0);
        assert_eq!(budget.syncs_per_s, 200);
        assert_eq!(budget.pages_per_sync_max, 1);
    }

    #[test]
    fn gp3_ties_throughput_to_iops_and_has_a_ceiling() {
        let limits = VolumeLimits::of(VolumeKind::Gp3);
        // 1,000 MiB/s needs 4,000 IOPS even if the I/Os themselves need fewer.
        assert_eq!(load(100, 1_000 * MIB, &limits).iops_fit, Fit::Provision { to: 4_000 });
        assert_eq!(load(100, 2_000 * MIB, &limits).throughput_fit, Fit::BeyondMax { max: 1_000 });
        let io2 = VolumeLimits::of(VolumeKind::Io2);
        assert_eq!(load(1_763, 217 * MIB, &io2).iops_fit, Fit::Provision { to: 1_763 });
        let nvme = compute(BudgetInput { volume: VolumeKind::InstanceStore, ..BudgetInput::page() }).unwrap();
        assert_eq!(nvme.shared.iops_fit, Fit::Included);
        assert_eq!(nvme.lsm_iops, 0, "no EBS I/O accounting on instance store");
    }

    #[test]
    fn refuses_what_it_cannot_simulate() {
        assert_eq!(compute(BudgetInput { rate_per_s: u64::MAX, ..BudgetInput::page() }).unwrap_err(), BudgetError::RateTooHigh { rate_per_s: u64::MAX });
        assert!(matches!(compute(BudgetInput { record_bytes: u64::MAX, ..BudgetInput::page() }), Err(BudgetError::TooLarge { .. })));
        assert!(matches!(compute(BudgetInput { log_page_bytes: u64::MAX, ..BudgetInput::page() }), Err(BudgetError::TooLarge { .. })));
        assert_eq!(
            compute(BudgetInput { rate_per_s: 10_000_000, sync_latency: Nanos::from_millis(1_000), ..BudgetInput::page() }).unwrap_err(),
            BudgetError::BatchTooLargeToSimulate { writes_per_batch: 10_000_000 }
        );
        // The largest inputs it takes still compute without overflow.
        let big = compute(BudgetInput { rate_per_s: 1_000_000_000, record_bytes: 1 << 30, sync_latency: Nanos(1_000), log_page_bytes: 1 << 30, ..BudgetInput::page() }).unwrap();
        assert_eq!(big.writes_per_batch_mean, 1_000.0);
    }

    #[test]
    fn refuses_zeros() {
        assert_eq!(compute(BudgetInput { rate_per_s: 0, ..BudgetInput::page() }).unwrap_err(), BudgetError::RateZero);
        assert_eq!(compute(BudgetInput { record_bytes: 0, ..BudgetInput::page() }).unwrap_err(), BudgetError::RecordBytesZero);
        assert_eq!(compute(BudgetInput { sync_latency: Nanos::ZERO, ..BudgetInput::page() }).unwrap_err(), BudgetError::SyncLatencyZero);
        assert_eq!(compute(BudgetInput { log_page_bytes: 0, ..BudgetInput::page() }).unwrap_err(), BudgetError::PageBytesZero);
    }

    #[test]
    fn pages_touched_counts_partial_pages() {
        assert_eq!(pages_touched(0, 10_700, 4096), 3);
        assert_eq!(pages_touched(4000, 10_700, 4096), 4);
        assert_eq!(pages_touched(0, 4096, 4096), 1);
        assert_eq!(pages_touched(1, 4096, 4096), 2);
        assert_eq!(pages_touched(5, 0, 4096), 0);
    }
}
