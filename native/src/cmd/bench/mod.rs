//! `walab bench`: group commit measured on a real disk, beside the model's prediction.
//!
//! For each writer count, closed-loop writers (each appends, waits for its
//! acknowledgement, appends again; tokio tasks by default, `--writer-kind threads` for
//! one OS thread each) run for `--seconds` against the WAL, and the command
//! reports acknowledged writes a second, syncs (persists) a second, the mean batch, and
//! the append latency p50 and p99 as each writer saw it.
//!
//! Beside each measurement stands Part 5's model: a sync of latency L carries the writes
//! that arrived while the previous one ran, so a batch holds about `rate x L` writes. The
//! column `model_batch` is that product from this run's own acknowledged rate and mean
//! persist time; when the measured batch matches it, group commit is doing what the
//! arithmetic says. With W closed-loop writers and one sync in flight the batches settle
//! near W / 2: half the writers wait in the running sync, half gather for the next one.
//!
//! `--trim-lag N` plays the consumer: every few milliseconds it confirms everything
//! acknowledged except the last N records, so segments are removed as the run goes and
//! the disk stays bounded. `--trace FILE` writes the driver's events (arrivals, batches,
//! syncs, acknowledgements) in the core's trace format (`walab_core::trace::Trace`) for
//! the browser to animate beside a simulated run: the file is one trace when one writer
//! count ran, a JSON array of traces (scenario `native-file-<W>w`) when several did. At
//! most [`TRACE_EVENTS_MAX`] events per writer count are kept (then `truncated` is set).
//!
//! Latencies go into a fixed log-linear histogram (64 sub-buckets per power of two,
//! under 2% error), so memory stays flat however long the run.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::cli_error::CliError;
use crate::cmd::common::{check_writers_and_bytes, default_run_id};
use crate::wal::url::WalArgs;
use walab_core::trace::Trace;

use self::raw::{RawJson, RawTurns, WalTurns};
use self::writers::{join_writers, spawn_writers, WriterShared};
pub use self::writers::{WriterKind, TASK_RUNTIME_THREADS};

mod raw;
mod writers;

use crate::wal::{Wal, WalOptions};

/// Trace events kept per writer count.
pub const TRACE_EVENTS_MAX: usize = 200_000;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    wal: Option<WalArgs>,
    #[command(flatten)]
    http: super::load_http::HttpArgs,
    /// Writer counts to run, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,8,64")]
    writers: Vec<usize>,
    /// Value bytes per record.
    #[arg(long, default_value_t = 100)]
    record_bytes: usize,
    /// Seconds per writer count.
    #[arg(long, default_value_t = 5.0)]
    seconds: f64,
    /// Confirm all but the last N acknowledged records as consumed, so segments are trimmed.
    #[arg(long, default_value_t = 10_000)]
    trim_lag: u64,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Write the driver's trace of each run as JSON.
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Writers as tokio tasks (the default) or as OS threads, one per writer.
    #[arg(long, value_enum, default_value = "tasks")]
    writer_kind: WriterKind,
    /// For file://: alternate turns of this many milliseconds between the WAL and raw
    /// 4 KiB overwrite + fdatasync calls on a preallocated file in the same directory,
    /// and report both with their ratios. A shared disk's speed drifts from second to
    /// second; measured in turns, both see the same disk.
    #[arg(long)]
    against_raw_ms: Option<u64>,
    /// Switches pieces of the WAL's tuning off for this run, to measure what each buys
    /// (BENCHMARKS.md). For measurement only.
    #[arg(long, value_enum, value_delimiter = ',', hide = true)]
    untune: Vec<crate::wal::os::Tuning>,
}

/// Every latency in this command is read from one kind of histogram.
pub use crate::latency::LatencyHistogram as Histogram;

#[derive(Serialize)]
struct LatencyMs {
    p50: f64,
    p99: f64,
}

#[derive(Serialize)]
struct RunJson {
    writers: usize,
    writer_kind: WriterKind,
    seconds: f64,
    acked: u64,
    acked_per_s: f64,
    syncs_per_s: f64,
    batch_mean: f64,
    persist_mean_ms: f64,
    latency_ms: LatencyMs,
    model_batch: f64,
    segments_removed: u64,
    /// Mean time from a persist's completion to the start of the next one when records
    /// were already waiting for it: the driver's cost between back-to-back syncs.
    handoff_us_mean: f64,
    /// The CPUs the driver and sync threads ran on (`--sync-cpus`), as a Linux CPU
    /// list; absent when they were left to the scheduler.
    #[serde(skip_serializing_if = "Option::is_none")]
    sync_cpus: Option<String>,
    /// With `--against-raw-ms`: the raw syncs measured in the turns between the WAL's.
    #[serde(skip_serializing_if = "Option::is_none")]
    raw: Option<RawJson>,
    /// Resident set size one second into the run and at its end: flat memory means
    /// these two stay close however long the run.
    rss_kib_after_1s: Option<u64>,
    rss_kib_at_end: Option<u64>,
}

#[derive(Serialize)]
struct BenchJson {
    wal: String,
    record_bytes: usize,
    runs: Vec<RunJson>,
    peak_rss_kib: Option<u64>,
}


fn proc_status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// This process's peak resident set size (VmHWM), in KiB.
pub fn peak_rss_kib() -> Option<u64> {
    proc_status_kib("VmHWM:")
}

/// This process's resident set size now (VmRSS), in KiB.
pub fn rss_kib() -> Option<u64> {
    proc_status_kib("VmRSS:")
}

/// One writer count's run, in its steps: open the log, start the writers, play the
/// consumer (and the raw turns) for `--seconds`, stop and join the writers, report.
fn run_one(args: &Args, writers: usize, run_id: &str) -> Result<(RunJson, Option<Trace>), CliError> {
    let (run, mut raw) = open_run(args)?;
    let handles = spawn_writers(args, &run, writers, run_id)?;
    let consumed = consume(args, &run, raw.as_mut())?;
    run.shared.stop.store(true, Ordering::Relaxed);
    let histogram = join_writers(handles);
    let elapsed = run.started.elapsed().as_secs_f64();
    let after = run.wal.stats();
    let wal = Arc::try_unwrap(run.wal).map_err(|_| CliError::failed("bench: writers still hold the log"))?;
    let trace = wal.close();
    if let Some(message) = run.shared.failure.lock().unwrap_or_else(|p| p.into_inner()).take() {
        return Err(CliError::failed(format!("{}: {message}", args.wal().wal)));
    }
    let measured = Measured { elapsed, before: run.before, after, histogram, consumed, sync_cpus: run.sync_cpus };
    Ok((report(args, writers, measured, raw), trace))
}

/// An open log and what its writers will share, before any writer starts.
struct BenchRun {
    wal: Arc<Wal>,
    shared: WriterShared,
    sync_cpus: Option<String>,
    before: crate::wal::WalStats,
    started: Instant,
}

/// Opens the log, and the raw test file beside it for `--against-raw-ms` (the writers
/// then start paused, for the first turn is the raw one's to open).
fn open_run(args: &Args) -> Result<(BenchRun, Option<RawTurns>), CliError> {
    let backend = args.wal().backend(true).map_err(CliError::usage)?;
    let options = WalOptions { trace_events_max: args.trace.is_some().then_some(TRACE_EVENTS_MAX), ..WalOptions::default() };
    let (wal, _) = Wal::open_streaming(backend, options, None, &mut |_| {}).map_err(crate::cmd::common::open_failure)?;
    let sync_cpus = wal.sync_cpus().map(crate::wal::file::affinity::format_cpu_list);
    let before = wal.stats();
    let started = Instant::now();
    let shared = WriterShared {
        stop: Arc::new(AtomicBool::new(false)),
        go: Arc::new(AtomicBool::new(true)),
        inflight: Arc::new(AtomicUsize::new(0)),
        newest_acked: Arc::new(AtomicU64::new(0)),
        failure: Arc::default(),
        turnstile: Arc::default(),
    };
    let raw_dir = match crate::wal::url::parse_wal_url(&args.wal().wal) {
        Ok(crate::wal::url::WalUrl::File(base)) => Some(base),
        _ => None,
    };
    let raw = match (args.against_raw_ms, raw_dir) {
        (Some(turn_ms), Some(dir)) => Some(RawTurns::new(&dir, Duration::from_millis(turn_ms))?),
        _ => None,
    };
    if raw.is_some() {
        shared.go.store(false, Ordering::Release);
    }
    Ok((BenchRun { wal: Arc::new(wal), shared, sync_cpus, before, started }, raw))
}

/// What the consumer saw while the writers ran.
struct Consumed {
    /// With raw turns, the WAL's numbers summed over its own turns only.
    wal_turns: WalTurns,
    rss_kib_after_1s: Option<u64>,
    rss_kib_at_end: Option<u64>,
}

/// Confirms all but the last `--trim-lag` acknowledged records as consumed.
fn confirm(args: &Args, run: &BenchRun) {
    let newest = run.shared.newest_acked.load(Ordering::Relaxed);
    if newest > args.trim_lag {
        run.wal.confirm_consumer(newest - args.trim_lag);
    }
}

/// The consumer, every few milliseconds for `--seconds` (or until a writer failed); with
/// `--against-raw-ms`, in turns: the WAL's, the writers quiesced, then a raw turn on the
/// same disk.
fn consume(args: &Args, run: &BenchRun, mut raw: Option<&mut RawTurns>) -> Result<Consumed, CliError> {
    let run_for = Duration::from_secs_f64(args.seconds);
    let shared = &run.shared;
    let mut consumed = Consumed { wal_turns: WalTurns::default(), rss_kib_after_1s: None, rss_kib_at_end: None };
    while run.started.elapsed() < run_for && !shared.stop.load(Ordering::Relaxed) {
        if consumed.rss_kib_after_1s.is_none() && run.started.elapsed() >= Duration::from_secs(1) {
            consumed.rss_kib_after_1s = rss_kib();
        }
        let Some(raw) = raw.as_deref_mut() else {
            std::thread::sleep(Duration::from_millis(10).min(run_for.saturating_sub(run.started.elapsed())));
            confirm(args, run);
            continue;
        };
        let (turn_start, stats_start) = (Instant::now(), run.wal.stats());
        shared.turnstile.open(&shared.go);
        while turn_start.elapsed() < raw.turn && !shared.stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(5));
            confirm(args, run);
        }
        shared.go.store(false, Ordering::Release);
        while shared.inflight.load(Ordering::Acquire) > 0 && !shared.stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_micros(100));
        }
        consumed.wal_turns.add(turn_start.elapsed(), &stats_start, &run.wal.stats());
        raw.run_turn().map_err(|e| CliError::failed(format!("bench: raw turn: {e}")))?;
    }
    consumed.rss_kib_at_end = rss_kib();
    Ok(consumed)
}

/// A finished run's raw numbers.
struct Measured {
    elapsed: f64,
    before: crate::wal::WalStats,
    after: crate::wal::WalStats,
    histogram: Histogram,
    consumed: Consumed,
    sync_cpus: Option<String>,
}

/// The run's row: rates over the WAL's own time, the model's batch beside the measured one.
fn report(args: &Args, writers: usize, measured: Measured, raw: Option<RawTurns>) -> RunJson {
    let Measured { elapsed, before, after, histogram, consumed, sync_cpus } = measured;
    let (elapsed, acked, persists, persist_ns) = match &raw {
        Some(_) => {
            let turns = &consumed.wal_turns;
            (turns.seconds, turns.acked, turns.persists, turns.persist_ns)
        }
        None => (
            elapsed,
            after.acked - before.acked,
            after.persists_ok - before.persists_ok,
            after.persist_ns_total - before.persist_ns_total,
        ),
    };
    let persist_mean_s = if persists == 0 { 0.0 } else { persist_ns as f64 / persists as f64 / 1e9 };
    let acked_per_s = if elapsed > 0.0 { acked as f64 / elapsed } else { 0.0 };
    let p50_ms = histogram.quantile_ms(500);
    let raw_json = raw.map(|raw| raw.finish(p50_ms, persists as f64 / elapsed.max(1e-9)));
    let handoffs = after.handoffs - before.handoffs;
    RunJson {
        writers,
        writer_kind: args.writer_kind,
        seconds: elapsed,
        acked,
        acked_per_s,
        syncs_per_s: if elapsed > 0.0 { persists as f64 / elapsed } else { 0.0 },
        batch_mean: if persists == 0 { 0.0 } else { acked as f64 / persists as f64 },
        persist_mean_ms: persist_mean_s * 1e3,
        latency_ms: LatencyMs { p50: p50_ms, p99: histogram.quantile_ms(990) },
        model_batch: acked_per_s * persist_mean_s,
        segments_removed: after.segments_removed - before.segments_removed,
        handoff_us_mean: if handoffs == 0 {
            0.0
        } else {
            (after.handoff_ns_total - before.handoff_ns_total) as f64 / handoffs as f64 / 1e3
        },
        rss_kib_after_1s: consumed.rss_kib_after_1s,
        rss_kib_at_end: consumed.rss_kib_at_end,
        sync_cpus,
        raw: raw_json,
    }
}

impl Args {
    /// The WAL's flags (`run` refuses a command with neither `--wal` nor `--http`).
    fn wal(&self) -> &WalArgs {
        self.wal.as_ref().expect("run checked that --wal is given")
    }
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    crate::wal::os::untune(&args.untune);
    crate::wal::limit_malloc_arenas();
    for &writers in &args.writers {
        check_writers_and_bytes(writers, args.record_bytes)?;
    }
    if !(args.seconds.is_finite() && args.seconds > 0.0 && args.seconds <= 86_400.0) {
        return Err(CliError::usage("--seconds: must be a positive number"));
    }
    if let Some(url) = args.http.http {
        if args.trace.is_some() || args.against_raw_ms.is_some() {
            return Err(CliError::usage("--trace and --against-raw-ms: only with --wal"));
        }
        return super::load_http::bench(super::load_http::HttpBench {
            url,
            writers: args.writers,
            seconds: args.seconds,
            record_bytes: args.record_bytes,
            streams: args.http.streams,
            producers: args.http.producers,
            batch: args.http.batch,
            content: args.http.content,
            run_id: default_run_id(),
            json: args.json,
        });
    }
    if args.wal.is_none() {
        return Err(CliError::usage("--wal URL or --http URL: say what to bench"));
    }
    // Refuse a bad URL before running anything.
    args.wal().backend(true).map_err(CliError::usage)?;
    if let Some(turn_ms) = args.against_raw_ms {
        if !args.wal().wal.starts_with("file://") {
            return Err(CliError::usage("--against-raw-ms: only for a file:// WAL (raw syncs need a directory)"));
        }
        if !(1..=60_000).contains(&turn_ms) {
            return Err(CliError::usage("--against-raw-ms: must be between 1 and 60000"));
        }
    }
    let run_id = default_run_id();
    let mut runs = Vec::new();
    let mut traces = Vec::new();
    for &writers in &args.writers {
        let (run, trace) = run_one(&args, writers, &run_id)?;
        runs.push(run);
        if let Some(mut trace) = trace {
            trace.scenario = format!("native-file-{writers}w");
            traces.push(trace);
        }
    }
    if let Some(path) = &args.trace {
        // One writer count: the file is one trace. Several: an array of traces.
        let text = if traces.len() == 1 {
            serde_json::to_string(&traces[0])
        } else {
            serde_json::to_string(&traces)
        }
        .expect("plain data serializes");
        std::fs::write(path, text + "\n").map_err(|e| CliError::usage(format!("{}: {e}", path.display())))?;
    }
    let report = BenchJson { wal: args.wal().wal.clone(), record_bytes: args.record_bytes, runs, peak_rss_kib: peak_rss_kib() };
    if args.json {
        let _ = writeln!(std::io::stdout().lock(), "{}", serde_json::to_string(&report).expect("plain data serializes"));
    } else {
        print_table(&report);
    }
    Ok(ExitCode::SUCCESS)
}

/// The report as a table, one row per writer count, and the raw turns' lines.
fn print_table(report: &BenchJson) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}, {} B values", report.wal, report.record_bytes);
    let _ = writeln!(
        out,
        "{:>7} {:>11} {:>9} {:>10} {:>11} {:>11} {:>9} {:>9} {:>14}",
        "writers", "acked/s", "syncs/s", "batch", "model batch", "persist ms", "p50 ms", "p99 ms", "RSS 1s/end MiB"
    );
    for run in &report.runs {
        let _ = writeln!(
            out,
            "{:>7} {:>11.0} {:>9.0} {:>10.1} {:>11.1} {:>11.3} {:>9.3} {:>9.3} {:>14}",
            run.writers,
            run.acked_per_s,
            run.syncs_per_s,
            run.batch_mean,
            run.model_batch,
            run.persist_mean_ms,
            run.latency_ms.p50,
            run.latency_ms.p99,
            match (run.rss_kib_after_1s, run.rss_kib_at_end) {
                (Some(a), Some(b)) => format!("{:.1}/{:.1}", a as f64 / 1024.0, b as f64 / 1024.0),
                (None, Some(b)) => format!("-/{:.1}", b as f64 / 1024.0),
                _ => "-".to_string(),
            }
        );
    }
    if let Some(cpus) = report.runs.iter().find_map(|run| run.sync_cpus.as_ref()) {
        let _ = writeln!(
            out,
            "the driver and sync threads ran on CPU {cpus}, where the log device's completion interrupts go (--sync-cpus off: anywhere)"
        );
    }
    for run in &report.runs {
        if let Some(raw) = &run.raw {
            let _ = writeln!(
                out,
                "{} writers, in {} ms turns with raw 4 KiB overwrite + fdatasync: raw {:.0} syncs/s, p50 {:.3} ms, p99 {:.3} ms; \
                 WAL p50 / raw p50 {:.2}, WAL syncs/s / raw syncs/s {:.2}",
                run.writers, raw.turn_ms, raw.ops_per_s, raw.p50_ms, raw.p99_ms, raw.wal_p50_over_raw_p50, raw.wal_syncs_over_raw_syncs
            );
        }
    }
    if let Some(rss) = report.peak_rss_kib {
        let _ = writeln!(out, "peak RSS {rss} KiB");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_quantiles_stay_within_two_percent() {
        let mut histogram = Histogram::new();
        for value in 1..=100_000u64 {
            histogram.record(value * 1000);
        }
        for (per_mille, exact) in [(500u64, 50_000_000u64), (990, 99_000_000), (1000, 100_000_000)] {
            let got = histogram.quantile(per_mille);
            let error = (got as f64 - exact as f64).abs() / exact as f64;
            assert!(error < 0.02, "p{per_mille}: {got} vs {exact}");
        }
        assert_eq!(histogram.count(), 100_000);
        let mut small = Histogram::new();
        small.record(0);
        small.record(5);
        assert_eq!(small.quantile(1000), 5);
    }
}
