//! `walab sim ...`: runs the core's deterministic simulator and prints what happened.
//!
//! - `walab sim commit`: a group-commit schedule for given or generated arrivals
//!   (Part 5): which writes each batch carried, when each write was acknowledged, and
//!   the totals (syncs a second, writes per batch, waits).
//! - `walab sim power-cut`: the tiny store with the power failing at an instant
//!   (Parts 3, 6, 7 and 8): what was acknowledged, what survived, what was lost, and
//!   where recovery's scan stopped; `--all-states` lists every legal post-crash state.
//! - `walab sim redo` (`redo.rs`): Part 9's page engine, torn and recovered.
//! - `walab sim quorum` (`quorum.rs`): Part 10's branch R and the survival table.
//! - `walab sim remote` (`sim_remote.rs`): the stream store's WAL on S3 or Postgres.
//!
//! Every variant takes `--trace FILE` and writes the run's trace as JSON, the format the
//! browser lab opens (`walab_core::trace`). `sim` is a group of subcommands so that more
//! simulations (redo, quorum) can join it.
//!
//! Bad arguments (unsorted or negative arrivals, a zero latency, an unknown policy) get
//! one line naming the problem, and exit 2.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Subcommand;
use serde::Serialize;
use walab_core::group_commit::{Config, Policy, PolicyKind};
use walab_core::sim::commit::{self, Arrivals, CommitSetup, Keep};
use walab_core::sim::SyncLatency;
use walab_core::sim::tiny::{self, CdcReader, CrashState, LogSyncFault, SyncErrorHandling, TinySetup};
use walab_core::time::Nanos;
use walab_core::trace::Trace;

use crate::cli_error::{one_of, BadValue, CliError};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    command: SimCommand,
}

#[derive(Subcommand, Debug)]
enum SimCommand {
    /// Simulate group commit over arrivals and print the schedule (Part 5).
    Commit(CommitArgs),
    /// Cut the power during the tiny store's run and show what recovery finds (Parts 3, 6-8).
    PowerCut(PowerCutArgs),
    /// A page engine torn mid write-back, then REDO with full-page images, doublewrite, or neither (Part 9).
    Redo(crate::cmd::redo::Args),
    /// The tiny store forked after a write and committed by a quorum of replicas (Part 10).
    Quorum(crate::cmd::quorum::Args),
    /// The stream store's WAL on S3 or in Postgres: bulks, PUTs, a takeover, the ring.
    Remote(crate::cmd::sim_remote::Args),
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    match args.command {
        SimCommand::Commit(args) => run_commit(args),
        SimCommand::PowerCut(args) => run_power_cut(args),
        SimCommand::Redo(args) => crate::cmd::redo::run(args),
        SimCommand::Quorum(args) => crate::cmd::quorum::run(args),
        SimCommand::Remote(args) => crate::cmd::sim_remote::run(args),
    }
}

#[derive(clap::Args, Debug)]
pub struct CommitArgs {
    /// group, per-write, window, no-sync or periodic.
    #[arg(long, default_value = "group", value_parser = policy_kind)]
    policy: PolicyKind,
    /// Sync latency in milliseconds.
    #[arg(long, value_name = "L", allow_hyphen_values = true)]
    sync_ms: Option<String>,
    /// Draw each sync's latency from a disk's measured distribution, as
    /// `walab fsync-test --export-latency FILE` writes it (instead of --sync-ms).
    #[arg(long, value_name = "FILE")]
    latency_file: Option<PathBuf>,
    /// Window policy: how long a batch gathers, in milliseconds (default 2): the
    /// Postgres WAL's batch_interval.
    #[arg(long, value_name = "W", allow_hyphen_values = true, visible_alias = "batch-interval-ms")]
    window_ms: Option<String>,
    /// Byte cap that closes a batch (window policy default 65536; otherwise 1 MiB).
    #[arg(long, value_name = "B")]
    window_bytes: Option<u64>,
    /// Periodic policy: the background sync interval in milliseconds (default 1000).
    #[arg(long, value_name = "P", allow_hyphen_values = true)]
    interval_ms: Option<String>,
    /// Batches persisting at once (1 for a file; 4 for S3 and Postgres).
    #[arg(long, value_name = "N", default_value_t = 1)]
    inflight: u64,
    /// Bytes per record.
    #[arg(long, value_name = "R", default_value_t = 100)]
    record_bytes: u32,
    /// Explicit arrival instants in milliseconds, comma-separated and sorted.
    #[arg(long, value_name = "MS,MS,...", allow_hyphen_values = true)]
    arrivals_ms: Option<String>,
    /// The tiny store's 24 writes (their arrivals, record sizes and segments).
    #[arg(long, value_name = "NAME")]
    scenario: Option<String>,
    /// Generated arrivals: writes per second ...
    #[arg(long, value_name = "PER_S")]
    rate: Option<u64>,
    /// ... and how many writes.
    #[arg(long, value_name = "N")]
    count: Option<u64>,
    /// Poisson arrivals (random gaps) instead of evenly spaced ones.
    #[arg(long)]
    poisson: bool,
    /// Seed for Poisson arrivals.
    #[arg(long, value_name = "S", default_value_t = 1)]
    seed: u64,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Write the run's trace as JSON to this file.
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
}

#[derive(clap::Args, Debug)]
pub struct PowerCutArgs {
    /// The scenario (only tiny-store).
    #[arg(long, default_value = "tiny-store")]
    scenario: String,
    /// When the power fails, in milliseconds.
    #[arg(long, value_name = "MS", allow_hyphen_values = true)]
    at_ms: String,
    /// group, per-write, window, no-sync or periodic.
    #[arg(long, default_value = "group", value_parser = policy_kind)]
    policy: PolicyKind,
    /// Window policy: the window in milliseconds (default 2): the Postgres WAL's
    /// batch_interval.
    #[arg(long, value_name = "W", allow_hyphen_values = true, visible_alias = "batch-interval-ms")]
    window_ms: Option<String>,
    /// Periodic policy: the background sync interval in milliseconds (default 1000).
    #[arg(long, value_name = "P", allow_hyphen_values = true)]
    interval_ms: Option<String>,
    /// List every legal post-crash state instead of one seeded sample.
    #[arg(long)]
    all_states: bool,
    /// Seed choosing which in-flight units reached the media.
    #[arg(long, value_name = "S", default_value_t = 0)]
    seed: u64,
    /// The device's atomic unit in bytes: what a cut can tear (the page's `unit=`).
    #[arg(long, value_name = "BYTES", default_value_t = walab_core::tiny_store::UNIT_BYTES)]
    unit_bytes: usize,
    /// Branch E1: this log batch's sync returns EIO (11 = B11).
    #[arg(long, value_name = "BATCH")]
    log_sync_fails: Option<u64>,
    /// What the log does about a failed sync: fail-stop (right) or retry (wrong).
    #[arg(long, value_name = "HOW", default_value = "fail-stop", value_parser = sync_error_handling)]
    on_sync_error: SyncErrorHandling,
    /// Branch E2: this flushed file's sync fails (11 = F11).
    #[arg(long, value_name = "FILE_NUMBER")]
    flush_sync_fails: Option<u64>,
    /// Branch T: a CDC reader stuck at this seq.
    #[arg(long, value_name = "SEQ")]
    cdc_reader_at: Option<u64>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Write the run's trace as JSON to this file.
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
}

/// The longest time any flag takes: about 11.6 days, so sums of times never overflow.
const MILLIS_MAX: u64 = 1_000_000_000;

pub(crate) fn millis(flag: &str, text: &str) -> Result<Nanos, CliError> {
    let value = Nanos::parse_millis(text).ok_or_else(|| {
        CliError::usage(format!("--{flag}: '{text}' is not a non-negative number of milliseconds"))
    })?;
    if value > Nanos::from_millis(MILLIS_MAX) {
        return Err(CliError::usage(format!("--{flag}: {text} ms is more than {MILLIS_MAX} ms")));
    }
    Ok(value)
}

pub(crate) fn positive_millis(flag: &str, text: &str) -> Result<Nanos, CliError> {
    let value = millis(flag, text)?;
    if value == Nanos::ZERO {
        return Err(CliError::usage(format!("--{flag}: must be above zero")));
    }
    Ok(value)
}

/// `--policy`'s parser: the core's names.
pub(crate) fn policy_kind(text: &str) -> Result<PolicyKind, BadValue> {
    PolicyKind::from_name(text).ok_or_else(|| {
        let names: Vec<&str> = PolicyKind::ALL.iter().map(|kind| kind.name()).collect();
        BadValue(format!("unknown policy '{text}' (expected {})", one_of(&names)))
    })
}

/// `--on-sync-error`'s parser: the core's names.
fn sync_error_handling(text: &str) -> Result<SyncErrorHandling, BadValue> {
    SyncErrorHandling::from_name(text).ok_or_else(|| {
        let names: Vec<&str> = SyncErrorHandling::ALL.iter().map(|handling| handling.name()).collect();
        BadValue(format!("unknown '{text}' (expected {})", one_of(&names)))
    })
}

/// The policy with its setting: `--window-ms` and `--interval-ms` belong to one policy each.
fn policy(kind: PolicyKind, window_ms: Option<&str>, interval_ms: Option<&str>) -> Result<Policy, CliError> {
    let policy = match kind {
        PolicyKind::Group => Policy::Group,
        PolicyKind::PerWrite => Policy::PerWrite,
        PolicyKind::Window => Policy::Window { window: positive_millis("window-ms", window_ms.unwrap_or("2"))? },
        PolicyKind::NoSync => Policy::NoSync,
        PolicyKind::Periodic => Policy::Periodic { interval: positive_millis("interval-ms", interval_ms.unwrap_or("1000"))? },
    };
    if window_ms.is_some() && !matches!(policy, Policy::Window { .. }) {
        return Err(CliError::usage("--window-ms: applies only to --policy window"));
    }
    if interval_ms.is_some() && !matches!(policy, Policy::Periodic { .. }) {
        return Err(CliError::usage("--interval-ms: applies only to --policy periodic"));
    }
    Ok(policy)
}


pub(crate) fn write_trace(path: &Path, trace: &Trace) -> Result<(), CliError> {
    let name = path.display();
    let file = File::create(path).map_err(|error| CliError::usage(format!("{name}: cannot create: {error}")))?;
    let mut out = BufWriter::new(file);
    serde_json::to_writer(&mut out, trace).map_err(|error| CliError::failed(format!("{name}: {error}")))?;
    out.flush().map_err(|error| CliError::failed(format!("{name}: {error}")))?;
    Ok(())
}

/// Prints `value` as one line of JSON. Buffered: stdout is line-buffered, and a JSON
/// document is one long line, so unbuffered it would reach the OS in 1 KiB pieces, each
/// searched for a newline first.
pub(crate) fn print_json(value: &impl Serialize) -> Result<(), CliError> {
    let stdout_error = |error: &dyn std::fmt::Display| CliError::failed(format!("stdout: {error}"));
    let mut out = BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    serde_json::to_writer(&mut out, value).map_err(|error| stdout_error(&error))?;
    writeln!(out).map_err(|error| stdout_error(&error))?;
    out.flush().map_err(|error| stdout_error(&error))?;
    Ok(())
}

// ---------------------------------------------------------------- sim commit

/// `sim commit --json`, serialized straight from the run: a run of millions of writes
/// is not copied into a second set of per-write structs first.
struct CommitJson<'a> {
    run: &'a commit::CommitRun,
    /// The policy acknowledges before the sync (no-sync, periodic): each write also says
    /// when it became durable.
    acknowledges_first: bool,
}

impl Serialize for CommitJson<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut out = serializer.serialize_struct("CommitJson", 3)?;
        out.serialize_field("batches", &Batches(&self.run.batches))?;
        out.serialize_field("writes", &Writes { writes: &self.run.writes, acknowledges_first: self.acknowledges_first })?;
        out.serialize_field("summary", &summary_json(&self.run.summary))?;
        out.end()
    }
}

struct Batches<'a>(&'a [commit::BatchRecord]);

impl Serialize for Batches<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|batch| BatchJson {
            start_ms: Nanos::as_millis_f64(batch.start),
            end_ms: batch.end.map(Nanos::as_millis_f64),
            writes: WriteIds { first: batch.first_write, count: batch.writes },
        }))
    }
}

#[derive(Serialize)]
struct BatchJson {
    start_ms: f64,
    end_ms: Option<f64>,
    writes: WriteIds,
}

/// A batch's write ids, `first ..`, as a JSON array.
struct WriteIds {
    first: u64,
    count: u64,
}

impl Serialize for WriteIds {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.first..self.first + self.count)
    }
}

struct Writes<'a> {
    writes: &'a [commit::WriteRecord],
    acknowledges_first: bool,
}

impl Serialize for Writes<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.writes.iter().map(|write| WriteJson {
            id: write.id,
            arrival_ms: Nanos::as_millis_f64(write.arrival),
            ack_ms: write.ack.map(Nanos::as_millis_f64),
            durable_ms: self.acknowledges_first.then(|| write.durable.map(Nanos::as_millis_f64)),
        }))
    }
}

#[derive(Serialize)]
struct WriteJson {
    id: u64,
    arrival_ms: f64,
    ack_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    durable_ms: Option<Option<f64>>,
}

#[derive(Serialize)]
struct SummaryJson {
    writes: u64,
    syncs: u64,
    syncs_per_s: f64,
    batch_mean: f64,
    wait_ms_mean: f64,
    wait_ms_min: f64,
    wait_ms_max: f64,
}

fn summary_json(summary: &commit::Summary) -> SummaryJson {
    SummaryJson {
        writes: summary.writes,
        syncs: summary.syncs,
        syncs_per_s: summary.syncs_per_s(),
        batch_mean: summary.batch_mean(),
        wait_ms_mean: Nanos::as_millis_f64(summary.wait_mean()),
        wait_ms_min: Nanos::as_millis_f64(summary.wait_min),
        wait_ms_max: Nanos::as_millis_f64(summary.wait_max),
    }
}

/// Per-write record sizes and segments, when the arrivals come from a scenario.
type PerWrite = Option<(Vec<u32>, Vec<u64>)>;

fn arrivals(args: &CommitArgs) -> Result<(Arrivals, PerWrite), CliError> {
    let sources = [args.arrivals_ms.is_some(), args.scenario.is_some(), args.rate.is_some() || args.count.is_some()];
    if sources.iter().filter(|given| **given).count() != 1 {
        return Err(CliError::usage(
            "arrivals: give exactly one of --arrivals-ms, --scenario tiny-store, or --rate with --count",
        ));
    }
    if args.poisson && args.rate.is_none() {
        return Err(CliError::usage("--poisson: needs --rate and --count"));
    }
    if let Some(list) = &args.arrivals_ms {
        let mut times = Vec::new();
        for (index, text) in list.split(',').enumerate() {
            let at = Nanos::parse_millis(text).filter(|at| *at <= Nanos::from_millis(MILLIS_MAX)).ok_or_else(|| {
                CliError::usage(format!(
                    "--arrivals-ms: arrival {} ('{}') is not a number of milliseconds from 0 to {MILLIS_MAX}",
                    index + 1,
                    text.trim()
                ))
            })?;
            if let Some(&before) = times.last() {
                if at < before {
                    return Err(CliError::usage(format!(
                        "--arrivals-ms: arrival {} ({}) comes before arrival {} ({}); arrivals must be sorted",
                        index + 1,
                        text.trim(),
                        index,
                        Nanos::as_millis_f64(before)
                    )));
                }
            }
            times.push(at);
        }
        return Ok((Arrivals::Given(times), None));
    }
    if let Some(name) = &args.scenario {
        if name != "tiny-store" {
            return Err(CliError::usage(format!("--scenario: unknown scenario '{name}' (expected tiny-store)")));
        }
        let writes = &walab_core::tiny_store::WRITES;
        let times = writes.iter().map(|write| write.arrival).collect();
        let sizes = writes.iter().map(|write| write.record().len() as u32).collect();
        let segments = writes.iter().map(|write| write.segment()).collect();
        return Ok((Arrivals::Given(times), Some((sizes, segments))));
    }
    let (Some(rate_per_s), Some(count)) = (args.rate, args.count) else {
        return Err(CliError::usage("--rate: needs --count (and --count needs --rate)"));
    };
    if rate_per_s == 0 {
        return Err(CliError::usage("--rate: must be at least 1 write per second"));
    }
    if count == 0 {
        return Err(CliError::usage("--count: must be at least 1"));
    }
    if count > commit::WRITES_MAX {
        return Err(CliError::usage(format!("--count: at most {}", commit::WRITES_MAX)));
    }
    if count / rate_per_s > MILLIS_MAX / 1000 {
        return Err(CliError::usage(format!("--count: {count} writes at {rate_per_s}/s last more than {MILLIS_MAX} ms")));
    }
    if args.poisson {
        Ok((Arrivals::Poisson { rate_per_s, count, seed: args.seed }, None))
    } else {
        Ok((Arrivals::Even { rate_per_s, count }, None))
    }
}

/// Reads a `walab-latency/1` document (see `fsync_test`'s module docs).
pub(crate) fn latency_file(path: &Path) -> Result<(SyncLatency, Nanos), CliError> {
    let name = path.display();
    let text = std::fs::read_to_string(path).map_err(|error| CliError::usage(format!("{name}: cannot read: {error}")))?;
    let export: crate::cmd::fsync_test::LatencyExport =
        serde_json::from_str(&text).map_err(|error| CliError::usage(format!("{name}: not a latency export: {error}")))?;
    if export.schema != "walab-latency/1" {
        return Err(CliError::usage(format!("{name}: schema {:?}, expected \"walab-latency/1\"", export.schema)));
    }
    let latency = SyncLatency::from_quantiles(&export.quantiles_ns).map_err(|error| CliError::usage(format!("{name}: {error}")))?;
    // The median, for display.
    Ok((latency, Nanos(export.quantiles_ns[50])))
}

fn run_commit(args: CommitArgs) -> Result<ExitCode, CliError> {
    let (sync_latency_model, sync_latency) = match (&args.sync_ms, &args.latency_file) {
        (Some(text), None) => {
            let latency = positive_millis("sync-ms", text)?;
            (SyncLatency::fixed(latency), latency)
        }
        (None, Some(path)) => latency_file(path)?,
        _ => return Err(CliError::usage("--sync-ms: give exactly one of --sync-ms and --latency-file")),
    };
    let policy = policy(args.policy, args.window_ms.as_deref(), args.interval_ms.as_deref())?;
    if args.inflight == 0 {
        return Err(CliError::usage("--inflight: must be at least 1"));
    }
    if args.record_bytes == 0 {
        return Err(CliError::usage("--record-bytes: must be at least 1"));
    }
    let batch_bytes_max = match (args.window_bytes, policy) {
        (Some(0), _) => return Err(CliError::usage("--window-bytes: must be at least 1")),
        (Some(bytes), _) => bytes as usize,
        (None, Policy::Window { .. }) => 64 * 1024,
        (None, _) => 1 << 20,
    };
    let (arrivals, tiny) = arrivals(&args)?;
    let base = Config::file(policy);
    let config = Config {
        inflight_max: args.inflight as usize,
        batch_bytes_max,
        unflushed_bytes_max: base.unflushed_bytes_max.max(batch_bytes_max),
        ..base
    };
    let mut setup = CommitSetup {
        record_bytes: args.record_bytes,
        // The table shows batches and totals; only the JSON lists every write.
        keep: Keep { writes: args.json, batches: true, trace: args.trace.is_some() },
        seed: args.seed,
        ..CommitSetup::new(config, sync_latency)
    };
    setup.sync_latency = sync_latency_model;
    if let Some((sizes, segments)) = tiny {
        setup.record_bytes_each = Some(sizes);
        setup.segment_each = Some(segments);
    }
    let mut run = commit::run(&setup, &arrivals).map_err(|error| CliError::usage(format!("sim commit: {error}")))?;
    if let (Some(path), Some(mut trace)) = (&args.trace, run.trace.take()) {
        trace.scenario = if args.scenario.is_some() { "tiny-store" } else { "arrivals" }.to_string();
        trace.seed = args.poisson.then_some(args.seed);
        write_trace(path, &trace)?;
    }
    if args.json {
        print_json(&CommitJson { run: &run, acknowledges_first: !policy.syncs_before_ack() })?;
    } else {
        let latency = if args.latency_file.is_some() { format!("median {sync_latency}, measured") } else { sync_latency.to_string() };
        print_commit_table(&run, args.policy.name(), &latency).map_err(|error| CliError::failed(format!("stdout: {error}")))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Batches shown in the table before it is cut short (the JSON has them all).
const TABLE_ROWS_MAX: usize = 40;

fn print_commit_table(run: &commit::CommitRun, policy: &str, sync_latency: &str) -> std::io::Result<()> {
    let mut out = BufWriter::new(std::io::stdout().lock());
    writeln!(out, "policy {policy}, sync {sync_latency}")?;
    if !run.batches.is_empty() {
        writeln!(out, "{:>6}  {:>10}  {:>10}  writes", "batch", "start ms", "end ms")?;
        for (index, batch) in run.batches.iter().take(TABLE_ROWS_MAX).enumerate() {
            let last = batch.first_write + batch.writes.saturating_sub(1);
            let shown = if batch.writes > 12 {
                format!("{} .. {} ({})", batch.first_write, last, batch.writes)
            } else {
                let ids: Vec<String> = (batch.first_write..batch.first_write + batch.writes).map(|id| id.to_string()).collect();
                ids.join(", ")
            };
            let end = batch.end.map_or("-".to_string(), |end| format!("{:.3}", end.as_millis_f64()));
            writeln!(out, "{:>6}  {:>10.3}  {:>10}  {shown}", format!("B{}", index + 1), batch.start.as_millis_f64(), end)?;
        }
        if run.batches.len() > TABLE_ROWS_MAX {
            writeln!(out, "   ... {} more batches (see --json)", run.batches.len() - TABLE_ROWS_MAX)?;
        }
    }
    let summary = summary_json(&run.summary);
    writeln!(out, "writes          {}", summary.writes)?;
    writeln!(out, "syncs           {} ({:.1} a second)", summary.syncs, summary.syncs_per_s)?;
    writeln!(out, "writes a batch  {:.2}", summary.batch_mean)?;
    writeln!(
        out,
        "wait            mean {:.3} ms, min {:.3} ms, max {:.3} ms",
        summary.wait_ms_mean, summary.wait_ms_min, summary.wait_ms_max
    )?;
    out.flush()
}

// ---------------------------------------------------------------- sim power-cut

#[derive(Serialize)]
struct ScanStopJson {
    reason: &'static str,
    segment: Option<String>,
    offset: u64,
}

#[derive(Serialize)]
struct UnitJson {
    file: String,
    unit: u32,
}

#[derive(Serialize)]
struct CrashJson {
    acknowledged: Vec<u64>,
    survived: Vec<u64>,
    lost_acknowledged: Vec<u64>,
    recovered: Vec<u64>,
    scan_stop: ScanStopJson,
    /// The in-flight units that reached the media in this state.
    kept_units: Vec<UnitJson>,
}

#[derive(Serialize)]
struct AllStatesJson {
    at_ms: f64,
    policy: String,
    /// The units whose fate the power cut decided.
    uncertain_units: Vec<UnitJson>,
    states: Vec<CrashJson>,
}

fn crash_json(state: &CrashState) -> CrashJson {
    CrashJson {
        acknowledged: state.acknowledged.clone(),
        survived: state.survived.clone(),
        lost_acknowledged: state.lost_acknowledged.clone(),
        recovered: state.recovery.recovered.clone(),
        scan_stop: ScanStopJson {
            reason: state.recovery.stop.reason.name(),
            segment: state.recovery.stop.segment.clone(),
            offset: state.recovery.stop.offset,
        },
        kept_units: state.kept_units.iter().map(|(file, unit)| UnitJson { file: file.clone(), unit: *unit }).collect(),
    }
}

fn ids(list: &[u64]) -> String {
    if list.is_empty() {
        return "none".to_string();
    }
    // Runs of consecutive ids as "1-17".
    let mut parts: Vec<String> = Vec::new();
    let mut start = list[0];
    let mut end = list[0];
    for &id in &list[1..] {
        if id == end + 1 {
            end = id;
        } else {
            parts.push(if start == end { start.to_string() } else { format!("{start}-{end}") });
            start = id;
            end = id;
        }
    }
    parts.push(if start == end { start.to_string() } else { format!("{start}-{end}") });
    format!("{} ({})", parts.join(", "), list.len())
}

fn print_crash(out: &mut impl Write, state: &CrashJson) -> std::io::Result<()> {
    let kept: Vec<String> = state.kept_units.iter().map(|unit| format!("{} unit {}", unit.file, unit.unit)).collect();
    writeln!(out, "in-flight units on the media: {}", if kept.is_empty() { "none".to_string() } else { kept.join(", ") })?;
    writeln!(out, "  acknowledged       {}", ids(&state.acknowledged))?;
    writeln!(out, "  survived           {}", ids(&state.survived))?;
    writeln!(out, "  lost acknowledged  {}", ids(&state.lost_acknowledged))?;
    writeln!(out, "  recovered          {}", ids(&state.recovered))?;
    let stop = &state.scan_stop;
    writeln!(
        out,
        "  scan stopped       {} at {}:{}",
        stop.reason,
        stop.segment.as_deref().unwrap_or("-"),
        stop.offset
    )?;
    Ok(())
}

fn run_power_cut(args: PowerCutArgs) -> Result<ExitCode, CliError> {
    if args.scenario != "tiny-store" {
        return Err(CliError::usage(format!("--scenario: unknown scenario '{}' (expected tiny-store)", args.scenario)));
    }
    let at = millis("at-ms", &args.at_ms)?;
    let policy = policy(args.policy, args.window_ms.as_deref(), args.interval_ms.as_deref())?;
    let handling = args.on_sync_error;
    let setup = TinySetup {
        log_sync_fault: args.log_sync_fails.map(|batch| LogSyncFault { batch, handling }),
        flush_sync_fault: args.flush_sync_fails,
        readers: args
            .cdc_reader_at
            .map(|seq| CdcReader { name: "cdc".to_string(), confirmed_seq: seq })
            .into_iter()
            .collect(),
        power_cut: Some(at),
        unit_bytes: args.unit_bytes,
        ..TinySetup::new(policy)
    };
    let mut run = tiny::run(&setup).map_err(|error| CliError::usage(format!("sim power-cut: {error}")))?;
    let mut out = std::io::stdout().lock();
    let io = |error: std::io::Error| CliError::failed(format!("stdout: {error}"));
    if args.all_states {
        let states = run.post_crash_states().ok_or_else(|| {
            CliError::failed(format!(
                "sim power-cut: {} units were in flight at {}; too many states to list",
                run.device.uncertain_units().len(),
                at
            ))
        })?;
        if let Some(path) = &args.trace {
            write_trace(path, &run.trace)?;
        }
        let uncertain_units = run
            .device
            .uncertain_units()
            .iter()
            .map(|unit| UnitJson { file: run.device.name(walab_core::device::FileId(unit.file)).to_string(), unit: unit.unit })
            .collect();
        let json = AllStatesJson {
            at_ms: Nanos::as_millis_f64(at),
            policy: args.policy.name().to_string(),
            uncertain_units,
            states: states.iter().map(crash_json).collect(),
        };
        if args.json {
            print_json(&json)?;
        } else {
            writeln!(out, "power cut at {at}, policy {}: {} legal post-crash states", args.policy.name(), json.states.len()).map_err(io)?;
            for state in &json.states {
                print_crash(&mut out, state).map_err(io)?;
            }
        }
    } else {
        let state = run.sample_post_crash(args.seed);
        tiny::record_recovery(&mut run, &state);
        if let Some(path) = &args.trace {
            let mut trace = run.trace.clone();
            trace.seed = Some(args.seed);
            write_trace(path, &trace)?;
        }
        let json = crash_json(&state);
        if args.json {
            print_json(&json)?;
        } else {
            writeln!(out, "power cut at {at}, policy {}", args.policy.name()).map_err(io)?;
            print_crash(&mut out, &json).map_err(io)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
