//! `walab crash-test`: crash the WAL on purpose and check every acknowledgement.
//!
//! A WAL's whole promise is "acknowledged means durable". This command tests it the only
//! way it can be tested: make promises, crash, recover, and look for each promise.
//!
//! # `--kills K`: the process dies
//!
//! Each round starts `walab load` as a child process, lets it run for a random time
//! (seeded), and kills it with SIGKILL. Every `ack <key>` line the child printed before
//! dying is a promise. The parent then recovers the log itself and checks that every
//! key ever acknowledged, in this round and all earlier ones, is in it.
//!
//! SIGKILL is a weak crash: the kernel's page cache survives it, so data written but
//! never synced is still there afterwards. A WAL that acknowledged before syncing would
//! pass. That is what the second mode is for.
//!
//! # `--power-loss --cuts K`: the power fails
//!
//! The load runs in this process over [`crate::wal::file::fault_fs::FaultFs`], the
//! core's simulated device (the one the lab draws) behind the file WAL's file calls: it
//! knows what was synced. Each round schedules a power cut on a random upcoming
//! file-system call (seeded), lets writers append until the cut stops the log, then
//! "reboots" (the disk keeps only what a real device would have: synced bytes, plus a
//! random subset of unsynced units when the cut tears), recovers, and checks every
//! acknowledgement. A WAL built with the acknowledge-before-sync policy fails this test,
//! and a unit test keeps it that way.
//!
//! # `--serve --kills K`: the stream server dies
//!
//! Each round starts `walab serve` on the WAL (a new file:// log in a temporary directory
//! unless `--wal` says) with small blocks (`--block-bytes`, `--block-ms`), so that
//! uploads, commits and WAL trims run all the time, and drives it with the Durable
//! Streams protocol from this process ([`crate::cmd::crash_serve`]): `--writers`
//! idempotent producers on `--streams` JSON streams, one request in flight per producer,
//! each request `--batch` messages under one `Producer-Seq`. At a random (seeded) moment
//! the server gets SIGKILL; it is restarted on the same WAL, metadata log and objects
//! (every other server seals by age 50 times later, so that kills also find a long WAL
//! tail and the check also reads the log cache), and then:
//!
//! - each producer's request that was in flight at the kill is retried: the answer must
//!   be a duplicate (`204`: it was durable, all of it) or a fresh append (`200`: none of
//!   it was), never a refusal, since a request is atomic;
//! - each producer's last acknowledged request is retried: the answer must be a
//!   duplicate;
//! - every stream is read back from its start with the protocol's offsets: every
//!   message one producer's, with the bytes it sent, each request's messages together and
//!   exactly once, every acknowledged request there and nothing else, and every offset an
//!   acknowledgement named where its request ends (in the stream's order, at the reads'
//!   boundaries, and a read from it starts with the next request), in this round or any
//!   earlier one.
//!
//! The first broken promise stops the test with an error naming the stream, producer and
//! seq, what was expected and what was found. A server started with the hidden
//! `--serve-fault skip-wal-replay` (it recovers from the metadata log alone) is caught,
//! and a test keeps it that way.

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use walab_core::codec::tiny::TinyRecord;
use walab_core::group_commit::Policy;
use walab_core::rng::Rng;

use crate::cli_error::CliError;
use crate::cmd::crash_serve;
use crate::wal::file::fault_fs::{CutMode, FaultFs};
use crate::wal::file::{FileBackend, SegmentFormat};
use crate::wal::url::WalArgs;
use crate::wal::{Backend, Wal, WalError, WalOptions};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The log to crash (not needed with --power-loss, which uses an in-memory disk; with
    /// --serve, default: a new file:// log in a temporary directory).
    #[arg(long)]
    wal: Option<String>,
    #[arg(long, default_value = "default")]
    cluster: String,
    #[arg(long, default_value = "0")]
    node: String,
    /// S3-compatible endpoint for an s3:// log (passed on to the child).
    #[arg(long)]
    endpoint: Option<String>,
    /// Rounds of start-load, SIGKILL, recover, check.
    #[arg(long, default_value_t = 20)]
    kills: u64,
    /// Kill `walab serve` instead of `walab load`: drive HTTP appends at it from this
    /// process, SIGKILL it, restart it, retry and read back every stream.
    #[arg(long)]
    serve: bool,
    /// Streams the producers append to (with --serve; --writers producers share them).
    #[arg(long, default_value_t = 3)]
    streams: usize,
    /// The server's --objects (with --serve; default: beside a file:// WAL, else in a
    /// temporary directory).
    #[arg(long, value_name = "URL")]
    objects: Option<String>,
    /// The server's --meta (with --serve; default as for --objects).
    #[arg(long, value_name = "URL")]
    meta: Option<String>,
    /// The server's --block-bytes (with --serve): small, so that uploads happen often.
    #[arg(long, value_name = "BYTES", default_value_t = 16 * 1024)]
    block_bytes: usize,
    /// The server's --block-ms (with --serve).
    #[arg(long, value_name = "MS", default_value_t = 20)]
    block_ms: u64,
    /// Messages per request (with --serve): 1, one JSON message; more, a JSON array of
    /// them under one `Producer-Seq`, appended all or none.
    #[arg(long, value_name = "N", default_value_t = 1)]
    batch: u64,
    /// Start the server with this hidden `walab serve --fault` (with --serve): a broken
    /// server, which the test must catch.
    #[arg(long, hide = true, value_enum, value_name = "FAULT")]
    serve_fault: Option<crate::cmd::serve::Fault>,
    /// Simulate power cuts in-process instead of killing a child.
    #[arg(long)]
    power_loss: bool,
    /// Rounds of power cut, reboot, recover, check (with --power-loss).
    #[arg(long, default_value_t = 100)]
    cuts: u64,
    /// Concurrent writers.
    #[arg(long, default_value_t = 8)]
    writers: usize,
    /// Value bytes per record.
    #[arg(long, default_value_t = 100)]
    record_bytes: usize,
    /// Seed for the kill times, cut points and tears.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Longest time a child runs before its SIGKILL, in milliseconds.
    #[arg(long, default_value_t = 500)]
    kill_after_ms_max: u64,
    /// Instead of killing walab, SIGKILL the postmaster of this Postgres data directory
    /// (a throwaway cluster of your own, with `--wal postgres://...` pointing at it),
    /// then restart it with pg_ctl and check every acknowledgement.
    #[arg(long)]
    kill_postmaster: Option<PathBuf>,
    /// The simulated device's atomic unit, in bytes (with --power-loss).
    #[arg(long, default_value_t = 512)]
    unit_bytes: u64,
    /// Record format of the segment files: tiny or leveldb.
    #[arg(long, value_enum, default_value = "tiny")]
    format: SegmentFormat,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// What a crash test found.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct CrashReport {
    /// Kills or power cuts performed.
    pub crashes: u64,
    /// Distinct acknowledged keys, each checked after every later crash.
    pub acks_checked: u64,
    /// Acknowledged keys missing from a recovery (must be 0).
    pub lost: u64,
    /// Records recovered in the final check.
    pub records_recovered: u64,
    /// The first few lost keys, for the error message.
    pub lost_examples: Vec<String>,
    /// A recovery that found the log corrupt (every acknowledgement then counts as lost).
    pub corrupt: Option<String>,
}

fn check(acked: &[String], recovered_keys: &HashSet<Vec<u8>>, report: &mut CrashReport) {
    for key in acked {
        if !recovered_keys.contains(key.as_bytes()) {
            report.lost += 1;
            if report.lost_examples.len() < 5 {
                report.lost_examples.push(key.clone());
            }
        }
    }
}

/// Parameters of the in-process power-loss test.
#[derive(Clone, Copy, Debug)]
pub struct PowerLossParams {
    pub cuts: u64,
    pub writers: usize,
    pub record_bytes: usize,
    pub seed: u64,
    pub unit_bytes: u64,
    pub segment_bytes: u64,
    /// The machine under test: [`Policy::Group`] is the real WAL; [`Policy::NoSync`]
    /// acknowledges before syncing and must fail.
    pub policy: Policy,
    pub format: SegmentFormat,
}

/// Runs the power-loss test; `Err` only for a failure of the harness itself (a recovery
/// that could not open the log).
pub fn power_loss(params: PowerLossParams) -> Result<CrashReport, String> {
    let fs = FaultFs::new(params.unit_bytes);
    let dir = PathBuf::from("/walab/default/0");
    let mut rng = Rng::new(params.seed);
    let mut report = CrashReport::default();
    let mut acked_all: Vec<String> = Vec::new();
    let value = vec![b'v'; params.record_bytes];
    for round in 0..=params.cuts {
        let backend =
            Box::new(FileBackend::with_format(Arc::new(fs.clone()), dir.clone(), params.segment_bytes, true, params.format));
        // Recovery and the check always use the real WAL's settings.
        let (mut keys, mut recovered_count) = (HashSet::new(), 0u64);
        let mut keep = |record: TinyRecord| {
            keys.insert(record.key);
            recovered_count += 1;
        };
        let (wal, _) = match Wal::open_streaming(backend, WalOptions::default(), None, &mut keep) {
            Ok(opened) => opened,
            Err(WalError::Corrupt(message)) => {
                // Damage before the end of the log: nothing acknowledged can be vouched for.
                report.corrupt = Some(format!("after cut {round}: {message}"));
                report.lost += acked_all.len() as u64;
                report.lost_examples.extend(acked_all.iter().take(5).cloned());
                break;
            }
            Err(error) => return Err(format!("round {round}: recovery failed: {error}")),
        };
        check(&acked_all, &keys, &mut report);
        report.records_recovered = recovered_count;
        drop(wal);
        if round == params.cuts {
            break;
        }
        // A fresh WAL on the recovered disk, with the policy under test, syncing on two
        // sync threads (`--inflight 2`) or inline only (`--inflight 1`, the default): the
        // round number picks, so both modes get cut.
        let file = FileBackend::with_format(Arc::new(fs.clone()), dir.clone(), params.segment_bytes, true, params.format);
        let backend: Box<dyn Backend> = match round % 2 {
            0 => Box::new(file.with_sync_threads(2)),
            _ => Box::new(file),
        };
        // The backend's own settings (two batches in flight with sync threads), with the
        // policy under test.
        let options = WalOptions { policy: Some(params.policy), trace_events_max: None };
        let (wal, _) = Wal::open(backend, options).map_err(|e| format!("round {round}: reopen failed: {e}"))?;
        let mode = if rng.coin() { CutMode::Tear } else { CutMode::DropUnsynced };
        fs.schedule_cut(1 + rng.below(64), mode, rng.next_u64());
        let acked_round = Arc::new(Mutex::new(Vec::new()));
        let handles: Vec<_> = (0..params.writers)
            .map(|w| {
                let mut writer = wal.writer();
                let (fs, acked_round, value) = (fs.clone(), Arc::clone(&acked_round), value.clone());
                std::thread::spawn(move || {
                    // Bounded: the cut falls within 64 file-system calls, and a WAL
                    // that never syncs is stopped by the power check.
                    for n in 0..100_000u64 {
                        let key = format!("c{round}-w{w}-{n}");
                        match writer.append(key.as_bytes(), &value) {
                            Ok(_) => acked_round.lock().unwrap_or_else(|p| p.into_inner()).push(key),
                            Err(_) => break,
                        }
                        if !fs.powered() {
                            break;
                        }
                    }
                })
            })
            .collect();
        for handle in handles {
            let _ = handle.join();
        }
        // Make sure the power did go off (a round whose writers all stopped early).
        fs.cut_power(mode, rng.next_u64());
        drop(wal);
        fs.restart();
        report.crashes += 1;
        acked_all.extend(acked_round.lock().unwrap_or_else(|p| p.into_inner()).drain(..));
    }
    report.acks_checked = acked_all.len() as u64;
    Ok(report)
}

/// Runs the SIGKILL test against a real log.
fn kill_test(args: &Args, wal_args: &WalArgs) -> Result<CrashReport, CliError> {
    let exe = std::env::current_exe().map_err(|e| CliError::failed(format!("cannot find the walab binary: {e}")))?;
    let mut rng = Rng::new(args.seed);
    let mut report = CrashReport::default();
    let mut acked_all: Vec<String> = Vec::new();
    let run_base = crate::cmd::common::default_run_id();
    for round in 0..args.kills {
        let mut child = Command::new(&exe)
            .args(["load", "--wal", &wal_args.wal, "--cluster", &wal_args.cluster, "--node", &wal_args.node])
            .args(["--writers", &args.writers.to_string(), "--seconds", "3600"])
            .args(["--record-bytes", &args.record_bytes.to_string(), "--format", wal_args.format.name()])
            .args(["--run-id", &format!("{run_base}-k{round}")])
            .args(wal_args.endpoint.iter().flat_map(|endpoint| ["--endpoint", endpoint.as_str()]))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| CliError::failed(format!("cannot start walab load: {e}")))?;
        let stdout = child.stdout.take().expect("piped");
        let stderr = child.stderr.take().expect("piped");
        let reader = std::thread::spawn(move || {
            let mut keys = Vec::new();
            let mut lines = BufReader::new(stdout);
            let mut line = String::new();
            // Only whole lines count: a line cut by the kill was not a complete promise.
            while lines.read_line(&mut line).unwrap_or(0) > 0 {
                if let Some(key) = line.strip_suffix('\n').and_then(|l| l.strip_prefix("ack ")) {
                    keys.push(key.to_string());
                }
                line.clear();
            }
            keys
        });
        let errors = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = std::io::Read::read_to_string(&mut BufReader::new(stderr), &mut text);
            text
        });
        let delay = 1 + rng.below(args.kill_after_ms_max.max(1));
        std::thread::sleep(Duration::from_millis(delay));
        if let Some(data_dir) = &args.kill_postmaster {
            // The server dies under the load; walab is killed right after, and the
            // server restarted before recovery.
            crate::wal::postgres::cluster::kill_postmaster(data_dir).map_err(CliError::failed)?;
            std::thread::sleep(Duration::from_millis(50));
            let _ = child.kill();
            crate::wal::postgres::cluster::start_server(data_dir).map_err(CliError::failed)?;
        }
        let _ = child.kill();
        let status = child.wait().map_err(|e| CliError::failed(format!("cannot wait for walab load: {e}")))?;
        let keys = reader.join().unwrap_or_default();
        let child_errors = errors.join().unwrap_or_default();
        let ended_by_itself = status.success() || (status.code().is_some() && keys.is_empty() && !child_errors.is_empty());
        // With --kill-postmaster the child may well fail on its own: its server died.
        if ended_by_itself && args.kill_postmaster.is_none() {
            // The child ended on its own: it failed to start (a bad URL, a locked log).
            if let Some(line) = child_errors.lines().next() {
                return Err(CliError::failed(format!("walab load ended by itself: {}", line.trim_start_matches("walab: "))));
            }
        }
        acked_all.extend(keys);
        report.crashes += 1;
        // A kill can land before the child created anything at all: then there is
        // nothing to recover and nothing was promised, so recovery may create the log.
        let backend = wal_args.backend(true).map_err(CliError::usage)?;
        let (mut recovered_keys, mut recovered_count) = (HashSet::new(), 0u64);
        let mut keep = |record: TinyRecord| {
            recovered_keys.insert(record.key);
            recovered_count += 1;
        };
        let (wal, _) = Wal::open_streaming(backend, WalOptions::default(), None, &mut keep)
            .map_err(|e| CliError::failed(format!("after kill {}: recovery failed: {e}", round + 1)))?;
        drop(wal);
        report.records_recovered = recovered_count;
        check(&acked_all, &recovered_keys, &mut report);
        if args.kills >= 10 && std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            eprint!("\rkill {}/{}: {} acks so far, {} lost", round + 1, args.kills, acked_all.len(), report.lost);
        }
    }
    if args.kills >= 10 && std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        eprintln!();
    }
    report.acks_checked = acked_all.len() as u64;
    Ok(report)
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    crate::wal::limit_malloc_arenas();
    crate::cmd::common::check_writers_and_bytes(args.writers, args.record_bytes)?;
    if args.serve {
        return run_serve(&args);
    }
    let (kind, report) = if args.power_loss {
        if args.unit_bytes == 0 || args.unit_bytes > 65_536 {
            return Err(CliError::usage("--unit-bytes: must be between 1 and 65536"));
        }
        let params = PowerLossParams {
            cuts: args.cuts,
            writers: args.writers,
            record_bytes: args.record_bytes,
            seed: args.seed,
            unit_bytes: args.unit_bytes,
            segment_bytes: 64 * 1024,
            policy: Policy::Group,
            format: args.format,
        };
        ("cuts", power_loss(params).map_err(CliError::failed)?)
    } else {
        let Some(wal) = args.wal.clone() else {
            return Err(CliError::usage("--wal: required unless --power-loss"));
        };
        let wal_args = WalArgs {
            wal,
            cluster: args.cluster.clone(),
            node: args.node.clone(),
            segment_bytes: None,
            format: args.format,
            endpoint: args.endpoint.clone(),
            inflight: None,
            per_write: false,
            sync_cpus: None,
            cohort_hold: None,
            pipeline_running: None,
            pipeline_round_trip: None,
        };
        wal_args.backend(true).map_err(CliError::usage)?;
        ("kills", kill_test(&args, &wal_args)?)
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        let _ = writeln!(out, "{}", serde_json::to_string(&report).expect("plain data serializes"));
    } else {
        let _ = writeln!(
            out,
            "{kind} {}, acks checked {}, lost {}, records recovered {}",
            report.crashes, report.acks_checked, report.lost, report.records_recovered
        );
    }
    if let Some(message) = &report.corrupt {
        return Err(CliError::failed(format!("crash-test: log corrupt: {message}")));
    }
    if report.lost > 0 {
        return Err(CliError::failed(format!(
            "crash-test: {} acknowledged records lost (for example {})",
            report.lost,
            report.lost_examples.join(", ")
        )));
    }
    Ok(ExitCode::SUCCESS)
}

/// `--serve`: the stream store's crash test ([`crash_serve`]).
fn run_serve(args: &Args) -> Result<ExitCode, CliError> {
    if args.power_loss || args.kill_postmaster.is_some() {
        return Err(CliError::usage("--serve: not with --power-loss or --kill-postmaster"));
    }
    if args.block_bytes < 1024 || args.block_ms == 0 || args.block_ms > 3_600_000 {
        return Err(CliError::usage("--block-bytes at least 1024, --block-ms between 1 and 3600000"));
    }
    if !(1..=crash_serve::BATCH_MAX).contains(&args.batch) {
        return Err(CliError::usage(format!("--batch {}: between 1 and {}", args.batch, crash_serve::BATCH_MAX)));
    }
    if args.streams == 0 || args.streams > args.writers {
        return Err(CliError::usage(format!("--streams {}: between 1 and --writers ({})", args.streams, args.writers)));
    }
    let exe = std::env::current_exe().map_err(|e| CliError::failed(format!("cannot find the walab binary: {e}")))?;
    let run_id = crate::cmd::common::default_run_id();
    // A directory of our own for what has no place given: the default WAL, and the
    // metadata and objects of a WAL that is not file://.
    let scratch = std::env::temp_dir().join(format!("walab-crash-serve-{run_id}"));
    let mut made_scratch = false;
    let mut scratch_url = |name: &str| -> Result<String, CliError> {
        let dir = scratch.join(name);
        std::fs::create_dir_all(&dir).map_err(|e| CliError::failed(format!("{}: {e}", dir.display())))?;
        made_scratch = true;
        Ok(format!("file://{}", dir.display()))
    };
    let (wal, segment_bytes) = match &args.wal {
        Some(wal) => (wal.clone(), None),
        // A new log: small segments, so that trims remove files.
        None => (scratch_url("wal")?, Some(64 * 1024)),
    };
    let is_file = matches!(crate::wal::url::parse_wal_url(&wal).map_err(CliError::usage)?, crate::wal::url::WalUrl::File(_));
    let (objects, meta) = match is_file {
        true => (args.objects.clone(), args.meta.clone()),
        false => (
            Some(args.objects.clone().map_or_else(|| scratch_url("objects"), Ok)?),
            Some(args.meta.clone().map_or_else(|| scratch_url("meta"), Ok)?),
        ),
    };
    let params = crash_serve::ServeCrashParams {
        exe,
        wal,
        cluster: args.cluster.clone(),
        node: args.node.clone(),
        endpoint: args.endpoint.clone(),
        objects,
        meta,
        segment_bytes,
        fault: args.serve_fault.and_then(|fault| clap::ValueEnum::to_possible_value(&fault)).map(|v| v.get_name().to_string()),
        kills: args.kills,
        producers: args.writers,
        streams: args.streams,
        record_bytes: args.record_bytes,
        seed: args.seed,
        kill_after_ms_max: args.kill_after_ms_max,
        block_bytes: args.block_bytes,
        block_ms: args.block_ms,
        batch: args.batch,
        run_id,
    };
    // The rounds' lines go to stdout, or to stderr when stdout is for the JSON.
    let json = args.json;
    let report = crash_serve::serve_kill_test(&params, |line| match json {
        true => crash_serve::print_line(&mut std::io::stderr().lock(), line),
        false => crash_serve::print_line(&mut std::io::stdout().lock(), line),
    })?;
    let mut out = std::io::stdout().lock();
    if json {
        let _ = writeln!(out, "{}", serde_json::to_string(&report).expect("plain data serializes"));
    } else {
        let _ = writeln!(
            out,
            "serve kills {}, acked {} requests ({} messages), checked {} messages and {} offsets, duplicates answered {}, in flight {} (durable {}, appended on retry {}), objects uploaded {}, {:.1} s",
            report.kills,
            report.acked,
            report.acked_messages,
            report.checked,
            report.offsets_read,
            report.duplicates,
            report.in_flight,
            report.in_flight_durable,
            report.in_flight_appended,
            report.objects_uploaded,
            report.seconds
        );
    }
    if let Some(broken) = &report.broken {
        let kept = if made_scratch { format!(" (the logs are kept in {})", scratch.display()) } else { String::new() };
        return Err(CliError::failed(format!("crash-test --serve: {broken}{kept}")));
    }
    if made_scratch {
        let _ = std::fs::remove_dir_all(&scratch);
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(policy: Policy) -> PowerLossParams {
        PowerLossParams {
            format: SegmentFormat::Tiny,
            cuts: 25,
            writers: 4,
            record_bytes: 40,
            seed: 7,
            unit_bytes: 512,
            segment_bytes: 8 * 1024,
            policy,
        }
    }

    #[test]
    fn the_group_commit_wal_loses_nothing_acknowledged_across_power_cuts() {
        let report = power_loss(params(Policy::Group)).unwrap();
        assert_eq!(report.crashes, 25);
        assert!(report.acks_checked > 0);
        assert_eq!(report.lost, 0, "lost: {:?}", report.lost_examples);
    }

    #[test]
    fn the_leveldb_format_loses_nothing_acknowledged_across_power_cuts() {
        let report = power_loss(PowerLossParams { format: SegmentFormat::Leveldb, ..params(Policy::Group) }).unwrap();
        assert!(report.acks_checked > 0);
        assert_eq!(report.lost, 0, "lost: {:?}", report.lost_examples);
    }

    #[test]
    fn a_wal_that_acknowledges_before_syncing_fails_the_power_loss_test() {
        let report = power_loss(params(Policy::NoSync)).unwrap();
        assert!(report.lost > 0, "acknowledge-before-sync must lose acknowledged records: {report:?}");
    }
}
