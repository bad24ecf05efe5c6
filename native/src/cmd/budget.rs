//! `walab budget`: the log's syncs, IOPS and MB/s held against a volume's limits
//! (Parts 11 and 12). The arithmetic lives in `walab_core::budget`; the batch size comes
//! from running the core's group-commit machine at the given rate.

use std::io::Write;
use std::process::ExitCode;

use clap::ValueEnum;
use walab_core::budget::{compute, Budget, BudgetInput, Fit, VolumeKind, VolumeLoad, MIB};
use walab_core::time::Nanos;

use crate::cli_error::CliError;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Writes a second.
    #[arg(long, default_value_t = 100_000)]
    rate: u64,
    /// Bytes of each record before the log's 7-byte header.
    #[arg(long, default_value_t = 100)]
    record_bytes: u64,
    /// Sync latency in milliseconds (decimal, exact to the nanosecond).
    #[arg(long, default_value = "1")]
    sync_ms: String,
    /// Bytes of the page a sync writes whole.
    #[arg(long, default_value_t = 4096)]
    page_bytes: u64,
    /// The LSM tree's flush and compaction writes, in MB (10^6 bytes) a second.
    #[arg(long, default_value_t = 200)]
    lsm_mb_s: u64,
    /// The volume the log (and the tree) live on.
    #[arg(long, value_enum, default_value_t = Volume::Gp3)]
    volume: Volume,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Volume {
    Gp3,
    Io2,
    InstanceStore,
}

/// 1234567 -> "1,234,567".
pub fn thousands(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

fn mb(bytes_per_s: u64) -> String {
    format!("{:.1} MB/s", bytes_per_s as f64 / 1e6)
}

fn fit_text(fit: Fit, included: u64, unit: &str) -> String {
    match fit {
        Fit::Included if included == u64::MAX => "no volume limit".to_string(),
        Fit::Included => format!("within the included {} {unit}", thousands(included)),
        Fit::Provision { to } => format!("over the included {} {unit}: provision {} {unit}", thousands(included), thousands(to)),
        Fit::BeyondMax { max } => format!("BEYOND one volume's maximum of {} {unit}", thousands(max)),
    }
}

fn load_line(label: &str, load: &VolumeLoad, budget: &Budget) -> String {
    format!(
        "  {label:<18} {:>6} IOPS ({}); {} = {:.1} MiB/s ({})",
        thousands(load.iops),
        fit_text(load.iops_fit, budget.limits.iops_included, "IOPS"),
        mb(load.bytes_per_s),
        load.bytes_per_s as f64 / MIB as f64,
        fit_text(load.throughput_fit, budget.limits.mib_per_s_included, "MiB/s"),
    )
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let sync_latency = Nanos::parse_millis(&args.sync_ms)
        .ok_or_else(|| CliError::usage(format!("--sync-ms: {:?} is not a number of milliseconds", args.sync_ms)))?;
    let lsm_bytes_per_s = args
        .lsm_mb_s
        .checked_mul(1_000_000)
        .ok_or_else(|| CliError::usage(format!("--lsm-mb-s: {} is too large", args.lsm_mb_s)))?;
    let input = BudgetInput {
        rate_per_s: args.rate,
        record_bytes: args.record_bytes,
        sync_latency,
        log_page_bytes: args.page_bytes,
        lsm_bytes_per_s,
        volume: match args.volume {
            Volume::Gp3 => VolumeKind::Gp3,
            Volume::Io2 => VolumeKind::Io2,
            Volume::InstanceStore => VolumeKind::InstanceStore,
        },
    };
    let budget = compute(input).map_err(|error| CliError::usage(format!("budget: {error}")))?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &budget).map_err(|error| CliError::failed(format!("stdout: {error}")))?;
        writeln!(out).ok();
        return Ok(ExitCode::SUCCESS);
    }
    let limits = &budget.limits;
    let lines = [
        format!(
            "workload: {} writes/s of {} B ({} B in the log), {} syncs, {}-byte log pages, {} of LSM flushes and compaction",
            thousands(input.rate_per_s),
            input.record_bytes,
            budget.log_record_bytes,
            input.sync_latency,
            input.log_page_bytes,
            mb(input.lsm_bytes_per_s)
        ),
        format!(
            "group commit (simulated): {:.1} writes per batch, {} syncs/s, {} B per sync, {} to {} whole pages per sync (mean {:.2})",
            budget.writes_per_batch_mean,
            thousands(budget.syncs_per_s),
            thousands(budget.batch_bytes_mean.round() as u64),
            budget.pages_per_sync_min,
            budget.pages_per_sync_max,
            budget.pages_per_sync_mean
        ),
        format!(
            "log: {} IOPS ({} I/O per sync); {} to {} written (the bare records are {})",
            thousands(budget.log_iops),
            budget.ios_per_sync,
            mb(budget.log_bytes_per_s_min),
            mb(budget.log_bytes_per_s_max),
            mb(budget.record_bytes_per_s)
        ),
        match limits.io_bytes_max {
            Some(io) => format!("lsm: {} in {} KiB I/Os = {:.1}, so {} IOPS", mb(input.lsm_bytes_per_s), io / 1024, budget.lsm_iops_exact, thousands(budget.lsm_iops)),
            None => format!("lsm: {} (no EBS I/O accounting on this volume)", mb(input.lsm_bytes_per_s)),
        },
        match (limits.iops_max, limits.mib_per_s_max) {
            (Some(iops), Some(mib)) => format!(
                "{}: {} IOPS and {} MiB/s included; at most {} IOPS and {} MiB/s provisioned",
                limits.name,
                thousands(limits.iops_included),
                thousands(limits.mib_per_s_included),
                thousands(iops),
                thousands(mib)
            ),
            _ => format!("{}: no per-volume quota; the instance type's limits apply, and the data is lost with the instance", limits.name),
        },
        load_line("log + lsm, shared:", &budget.shared, &budget),
        load_line("log on its own:", &budget.log_alone, &budget),
        load_line("lsm on its own:", &budget.lsm_alone, &budget),
    ];
    for line in lines {
        writeln!(out, "{line}").ok();
    }
    Ok(ExitCode::SUCCESS)
}
