//! `walab sim remote`: the stream store's WAL with no local disk, simulated. The log is
//! an object store (one PUT per batch) or Postgres (one committed INSERT per batch, in the
//! ring of slot tables); writers are closed-loop (`--writers N`: each appends its next
//! record once its last is acknowledged) or open-loop (`--rate R`, evenly spaced or
//! `--poisson`). Faults at chosen requests: `--slow-put K:MS`, `--fail-put K`,
//! `--takeover-at-ms T` (node B claims epoch + 1), `--stall-upload-ms FROM:UNTIL` (the
//! Postgres ring fills). `--fence lease` acknowledges a batch as its PUT returns. The run is `walab_core::sim::remote`'s; this file only parses,
//! and prints the run as a table or as JSON (the shape the browser lab reads back).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use serde::Serialize;
use walab_core::ring::RingGeometry;
use walab_core::sim::remote::{
    self, put_bill_per_million_appends, BatchOutcome, LatencyProfile, Load, RemoteBackend, RemoteRun, RemoteSetup, RingWait,
};
use walab_core::sim::remote::upload::{self, AttemptOutcome, ObjectKind, StreamRange, UploadRun, UploadSetup};
use walab_core::sim::SyncLatency;
use walab_core::time::Nanos;

use crate::cli_error::CliError;
use crate::cmd::sim::{latency_file, millis, positive_millis, print_json, write_trace};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// s3 or postgres.
    #[arg(long)]
    backend: String,
    /// Closed-loop writers: each appends its next record once its last is acknowledged.
    #[arg(long, value_name = "N")]
    writers: Option<u64>,
    /// Open-loop arrivals, records a second (evenly spaced unless --poisson).
    #[arg(long, value_name = "R")]
    rate: Option<u64>,
    /// With --rate: exponentially distributed gaps, seeded by --seed.
    #[arg(long)]
    poisson: bool,
    /// Records to append.
    #[arg(long, value_name = "C")]
    count: u64,
    #[arg(long, value_name = "S", default_value_t = 1)]
    seed: u64,
    /// Batches in flight at once (inflight).
    #[arg(long, value_name = "N", default_value_t = 4)]
    inflight: usize,
    /// Gather records this long before a batch goes (Postgres: batch_interval, default 1;
    /// S3 default: none, group commit as the native backend runs it).
    #[arg(long, value_name = "I", allow_hyphen_values = true)]
    batch_interval_ms: Option<String>,
    /// Every request takes exactly L ms.
    #[arg(long, value_name = "L", allow_hyphen_values = true)]
    put_ms: Option<String>,
    /// Draw each request's latency from a measured distribution (walab-latency/1).
    #[arg(long, value_name = "F")]
    latency_file: Option<PathBuf>,
    /// A named latency: s3-standard (20-40 ms), s3-express (2-8 ms), postgres (1-2 ms).
    /// The default is the backend's own.
    #[arg(long, value_name = "NAME")]
    profile: Option<String>,
    /// PUT (or INSERT) number K takes MS milliseconds; repeatable.
    #[arg(long, value_name = "K:MS")]
    slow_put: Vec<String>,
    /// PUT number K fails (Postgres: its answer is lost; it is retried and compared).
    #[arg(long, value_name = "K")]
    fail_put: Option<u64>,
    /// Node B claims the node (epoch + 1) at T ms.
    #[arg(long, value_name = "T", allow_hyphen_values = true)]
    takeover_at_ms: Option<String>,
    /// s3: read (a HEAD of the registration after every PUT before the batch is reported)
    /// or lease (reported as its PUT returns, walab serve's default); a run with
    /// --takeover-at-ms reads the fence either way.
    #[arg(long, value_name = "F", default_value = "read")]
    fence: String,
    /// Each record's size in bytes.
    #[arg(long, value_name = "B", default_value_t = 110)]
    record_bytes: u32,
    /// Postgres: slot tables in the ring.
    #[arg(long, value_name = "N", default_value_t = walab_core::ring::SEGMENTS_DEFAULT)]
    segments: u64,
    /// Postgres: bytes per generation (segment_bytes).
    #[arg(long, value_name = "B", default_value_t = walab_core::ring::SEGMENT_BYTES_DEFAULT)]
    segment_bytes: u64,
    /// Postgres: the background upload confirms what was acknowledged this often.
    #[arg(long, value_name = "MS", default_value = "50")]
    upload_every_ms: String,
    /// Postgres: the upload stalls from FROM ms until UNTIL ms (UNTIL empty: for good).
    #[arg(long, value_name = "FROM:UNTIL")]
    stall_upload_ms: Option<String>,
    /// S3: also run the background upload of the acknowledged records to data objects
    /// (ids reserved, objects uploaded, one commit, the WAL trimmed), with the lab's sizes.
    #[arg(long)]
    upload: bool,
    /// With --upload: the upload task crashes between block K's upload and its commit.
    #[arg(long, value_name = "K")]
    upload_crash_before_commit: Option<u64>,
    /// Print the run as JSON.
    #[arg(long)]
    json: bool,
    /// Write the run's trace (the lab's format) to FILE.
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
}

fn parse_upload(args: &Args, backend: RemoteBackend) -> Result<Option<UploadSetup>, CliError> {
    if !args.upload {
        if args.upload_crash_before_commit.is_some() {
            return Err(CliError::usage("--upload-crash-before-commit: applies only with --upload"));
        }
        return Ok(None);
    }
    if backend != RemoteBackend::S3 {
        return Err(CliError::usage("--upload: simulated for --backend s3 only (the Postgres ring trims with --upload-every-ms)"));
    }
    let setup = UploadSetup { crash_before_commit: args.upload_crash_before_commit, ..UploadSetup::lab() };
    setup.validate().map_err(|error| CliError::usage(format!("--upload-crash-before-commit: {error}")))?;
    Ok(Some(setup))
}

fn parse(args: &Args) -> Result<RemoteSetup, CliError> {
    let backend = RemoteBackend::parse(&args.backend)
        .ok_or_else(|| CliError::usage(format!("--backend: unknown backend '{}' (expected s3 or postgres)", args.backend)))?;
    let load = match (args.writers, args.rate) {
        (Some(writers), None) => {
            if args.poisson {
                return Err(CliError::usage("--poisson: applies only to --rate"));
            }
            Load::Writers { writers }
        }
        (None, Some(rate_per_s)) => Load::Rate { rate_per_s, poisson: args.poisson },
        _ => return Err(CliError::usage("--writers: give exactly one of --writers and --rate")),
    };
    let mut setup = RemoteSetup::new(backend, load, args.count);
    setup.seed = args.seed;
    setup.inflight_max = args.inflight;
    setup.record_bytes = args.record_bytes;
    if let Some(text) = &args.batch_interval_ms {
        setup.batch_interval = Some(positive_millis("batch-interval-ms", text)?);
    }
    setup.latency = match (&args.put_ms, &args.latency_file, &args.profile) {
        (Some(text), None, None) => SyncLatency::fixed(positive_millis("put-ms", text)?),
        (None, Some(path), None) => latency_file(path)?.0,
        (None, None, Some(name)) => LatencyProfile::parse(name)
            .ok_or_else(|| {
                CliError::usage(format!("--profile: unknown profile '{name}' (expected s3-standard, s3-express or postgres)"))
            })?
            .latency(),
        (None, None, None) => LatencyProfile::default_for(backend).latency(),
        _ => return Err(CliError::usage("--put-ms: give at most one of --put-ms, --latency-file and --profile")),
    };
    for text in &args.slow_put {
        let (put, slow) = text
            .split_once(':')
            .ok_or_else(|| CliError::usage(format!("--slow-put: '{text}' is not K:MS (for example 3:200)")))?;
        let put: u64 = put.parse().map_err(|_| CliError::usage(format!("--slow-put: '{put}' is not a PUT number")))?;
        setup.slow_puts.push((put, positive_millis("slow-put", slow)?));
    }
    setup.fail_put = args.fail_put;
    if let Some(text) = &args.takeover_at_ms {
        setup.takeover_at = Some(millis("takeover-at-ms", text)?);
    }
    setup.fence_read = match args.fence.as_str() {
        "read" => true,
        "lease" if backend == RemoteBackend::S3 => false,
        "lease" => return Err(CliError::usage("--fence: applies only to --backend s3 (Postgres checks the epoch inside each insert)")),
        other => return Err(CliError::usage(format!("--fence: unknown fence '{other}' (expected read or lease)"))),
    };
    let ring_flags_given = args.segments != walab_core::ring::SEGMENTS_DEFAULT
        || args.segment_bytes != walab_core::ring::SEGMENT_BYTES_DEFAULT
        || args.stall_upload_ms.is_some();
    if backend == RemoteBackend::S3 && ring_flags_given {
        return Err(CliError::usage("--segments: the ring flags apply only to --backend postgres"));
    }
    setup.ring = RingGeometry { segments: args.segments, segment_bytes: args.segment_bytes };
    setup.trim_every = positive_millis("upload-every-ms", &args.upload_every_ms)?;
    if let Some(text) = &args.stall_upload_ms {
        let (from, until) = text
            .split_once(':')
            .ok_or_else(|| CliError::usage(format!("--stall-upload-ms: '{text}' is not FROM:UNTIL (for example 0:500, or 0: for good)")))?;
        let from = millis("stall-upload-ms", from)?;
        let until = if until.is_empty() { Nanos::MAX } else { millis("stall-upload-ms", until)? };
        if until <= from {
            return Err(CliError::usage("--stall-upload-ms: UNTIL must come after FROM"));
        }
        setup.upload_stall = Some((from, until));
    }
    setup.validate().map_err(|error| CliError::usage(format!("sim remote: {error}")))?;
    Ok(setup)
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let setup = parse(&args)?;
    let upload_setup = parse_upload(&args, setup.backend)?;
    let run = remote::run(&setup).map_err(|error| CliError::usage(format!("sim remote: {error}")))?;
    let upload_run = match &upload_setup {
        Some(upload_setup) => Some(
            upload::run(&run, upload_setup, &setup.latency, setup.seed, setup.record_bytes)
                .map_err(|error| CliError::usage(format!("sim remote: {error}")))?,
        ),
        None => None,
    };
    if let Some(path) = &args.trace {
        let policy = if setup.batch_interval.is_some() { "window" } else { "group" };
        write_trace(path, &remote::to_trace(&run, policy))?;
    }
    let mut json = to_json(&run);
    json.upload = upload_run.as_ref().map(upload_json);
    if args.json {
        print_json(&json)?;
    } else {
        let mut out = std::io::stdout().lock();
        match print_table(&mut out, &json) {
            Err(error) if error.kind() != std::io::ErrorKind::BrokenPipe => {
                return Err(CliError::failed(format!("stdout: {error}")))
            }
            _ => {}
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The run as JSON: times in milliseconds, `null` for what never happened.
#[derive(Serialize)]
pub struct RemoteJson {
    backend: &'static str,
    batches: Vec<BatchJson>,
    records: Vec<RecordJson>,
    puts: u64,
    fence_checks: u64,
    records_acked: u64,
    puts_per_record: Option<f64>,
    /// The PUTs' bill per million appends at S3 Standard's request price.
    put_bill_per_million_usd: Option<f64>,
    takeover: Option<TakeoverJson>,
    trims: Vec<TrimJson>,
    end_ms: f64,
    /// With --upload: the background upload.
    #[serde(skip_serializing_if = "Option::is_none")]
    upload: Option<UploadJson>,
}

#[derive(Serialize)]
pub struct UploadJson {
    streams: u64,
    blocks: Vec<BlockJson>,
    objects: Vec<ObjectJson>,
    commits: Vec<CommitJson>,
    wal_deletes: Vec<DeleteJson>,
    read_twice: u64,
    orphan_overlap: u64,
    end_ms: f64,
}

#[derive(Serialize)]
struct BlockJson {
    block: u64,
    first_record: u64,
    records: u64,
    sealed_ms: f64,
    attempts: Vec<AttemptJson>,
}

#[derive(Serialize)]
struct AttemptJson {
    reserve_sent_ms: f64,
    reserved_ms: f64,
    uploaded_ms: f64,
    commit_answered_ms: Option<f64>,
    outcome: AttemptOutcome,
    ids: Vec<u64>,
}

#[derive(Serialize)]
struct ObjectJson {
    id: u64,
    kind: ObjectKind,
    block: u64,
    attempt: u32,
    ranges: Vec<StreamRange>,
    bytes: u64,
    reserved_ms: f64,
    stored_ms: f64,
    committed_ms: Option<f64>,
    expired_ms: Option<f64>,
}

#[derive(Serialize)]
struct CommitJson {
    at_ms: f64,
    block: u64,
    ids: Vec<u64>,
    stream_ends: Vec<u64>,
}

#[derive(Serialize)]
struct DeleteJson {
    sent_ms: f64,
    done_ms: f64,
    batches: Vec<u64>,
}

fn upload_json(run: &UploadRun) -> UploadJson {
    UploadJson {
        streams: run.streams,
        blocks: run
            .blocks
            .iter()
            .map(|block| BlockJson {
                block: block.block,
                first_record: block.first_record,
                records: block.records,
                sealed_ms: Nanos::as_millis_f64(block.sealed),
                attempts: block
                    .attempts
                    .iter()
                    .map(|attempt| AttemptJson {
                        reserve_sent_ms: Nanos::as_millis_f64(attempt.reserve_sent),
                        reserved_ms: Nanos::as_millis_f64(attempt.reserved),
                        uploaded_ms: Nanos::as_millis_f64(attempt.uploaded),
                        commit_answered_ms: attempt.commit_answered.map(Nanos::as_millis_f64),
                        outcome: attempt.outcome,
                        ids: attempt.ids.clone(),
                    })
                    .collect(),
            })
            .collect(),
        objects: run
            .objects
            .iter()
            .map(|object| ObjectJson {
                id: object.id,
                kind: object.kind,
                block: object.block,
                attempt: object.attempt,
                ranges: object.ranges.clone(),
                bytes: object.bytes,
                reserved_ms: Nanos::as_millis_f64(object.reserved),
                stored_ms: Nanos::as_millis_f64(object.stored),
                committed_ms: object.committed.map(Nanos::as_millis_f64),
                expired_ms: object.expired.map(Nanos::as_millis_f64),
            })
            .collect(),
        commits: run
            .commits
            .iter()
            .map(|commit| CommitJson { at_ms: Nanos::as_millis_f64(commit.at), block: commit.block, ids: commit.ids.clone(), stream_ends: commit.stream_ends.clone() })
            .collect(),
        wal_deletes: run
            .deletes
            .iter()
            .map(|delete| DeleteJson { sent_ms: Nanos::as_millis_f64(delete.sent), done_ms: Nanos::as_millis_f64(delete.done), batches: delete.batches.clone() })
            .collect(),
        read_twice: run.read_twice,
        orphan_overlap: run.orphan_overlap,
        end_ms: Nanos::as_millis_f64(run.end),
    }
}

#[derive(Serialize)]
struct BatchJson {
    batch: u64,
    records: u64,
    first_record: u64,
    first_offset: u64,
    end_offset: u64,
    epoch: u64,
    put: Option<u64>,
    sent_ms: Option<f64>,
    stored_ms: Option<f64>,
    /// S3: the fence read after the PUT answered.
    checked_ms: Option<f64>,
    acked_ms: Option<f64>,
    outcome: &'static str,
    generation: Option<u64>,
    slot: Option<u64>,
    waited: Option<&'static str>,
    retried: bool,
}

#[derive(Serialize)]
struct RecordJson {
    record: u64,
    arrived_ms: Option<f64>,
    acked_ms: Option<f64>,
}

#[derive(Serialize)]
struct TakeoverJson {
    at_ms: f64,
    claimed_ms: f64,
    /// Node B's recovery read answered: S3, its LIST; Postgres, its scan of the ring.
    listed_ms: f64,
    old_epoch: u64,
    new_epoch: u64,
    acked_by_old: u64,
    recovered_by_new: u64,
    stragglers_ignored: u64,
    new_session_start: u64,
    fenced_batches: Vec<u64>,
}

#[derive(Serialize)]
struct TrimJson {
    at_ms: f64,
    trim_offset: u64,
    truncated_slots: Vec<u64>,
}


fn outcome_name(outcome: Option<BatchOutcome>) -> &'static str {
    match outcome {
        Some(BatchOutcome::Acked) => "acked",
        Some(BatchOutcome::StoredNotAcked) => "stored-not-acked",
        Some(BatchOutcome::Failed) | None => "failed",
        Some(BatchOutcome::Fenced) => "fenced",
    }
}

pub fn to_json(run: &RemoteRun) -> RemoteJson {
    let puts_per_record = run.puts_per_record();
    RemoteJson {
        backend: run.backend.name(),
        batches: run
            .batches
            .iter()
            .map(|batch| BatchJson {
                batch: batch.batch,
                records: batch.records,
                first_record: batch.first_record,
                first_offset: batch.first_offset,
                end_offset: batch.end_offset,
                epoch: batch.epoch,
                put: batch.request,
                sent_ms: batch.sent.map(Nanos::as_millis_f64),
                stored_ms: batch.stored.map(Nanos::as_millis_f64),
                checked_ms: batch.checked.map(Nanos::as_millis_f64),
                acked_ms: batch.acked.map(Nanos::as_millis_f64),
                outcome: outcome_name(batch.outcome),
                generation: batch.generation,
                slot: batch.slot,
                waited: batch.waited.map(|wait| match wait {
                    RingWait::Slot => "slot",
                    RingWait::Drain => "drain",
                }),
                retried: batch.retried,
            })
            .collect(),
        records: run
            .records
            .iter()
            .map(|record| RecordJson { record: record.record, arrived_ms: record.arrived.map(Nanos::as_millis_f64), acked_ms: record.acked.map(Nanos::as_millis_f64) })
            .collect(),
        puts: run.puts,
        fence_checks: run.fence_checks,
        records_acked: run.records_acked,
        puts_per_record,
        put_bill_per_million_usd: match run.backend {
            RemoteBackend::S3 => puts_per_record.map(put_bill_per_million_appends),
            RemoteBackend::Postgres => None,
        },
        takeover: run.takeover.as_ref().map(|takeover| TakeoverJson {
            at_ms: Nanos::as_millis_f64(takeover.at),
            claimed_ms: Nanos::as_millis_f64(takeover.claimed_at),
            listed_ms: Nanos::as_millis_f64(takeover.listed_at),
            old_epoch: takeover.old_epoch,
            new_epoch: takeover.new_epoch,
            acked_by_old: takeover.acked_by_old,
            recovered_by_new: takeover.recovered_by_new,
            stragglers_ignored: takeover.stragglers_ignored,
            new_session_start: takeover.new_session_start,
            fenced_batches: takeover.fenced_batches.clone(),
        }),
        trims: run
            .trims
            .iter()
            .map(|trim| TrimJson { at_ms: Nanos::as_millis_f64(trim.at), trim_offset: trim.trim_offset, truncated_slots: trim.truncated_slots.clone() })
            .collect(),
        end_ms: Nanos::as_millis_f64(run.end),
        upload: None,
    }
}

/// Batches the table shows before it summarises.
const TABLE_ROWS_MAX: usize = 40;

fn cell(value: Option<f64>) -> String {
    value.map_or("-".to_string(), |v| format!("{v:.3}"))
}

fn print_table(out: &mut impl Write, json: &RemoteJson) -> std::io::Result<()> {
    writeln!(out, "{:>5} {:>7} {:>12} {:>12} {:>5} {:>10} {:>10} {:>10}  outcome", "batch", "records", "first", "end", "put", "sent ms", "stored ms", "acked ms")?;
    for batch in json.batches.iter().take(TABLE_ROWS_MAX) {
        writeln!(out, 
            "{:>5} {:>7} {:>12} {:>12} {:>5} {:>10} {:>10} {:>10}  {}{}",
            batch.batch,
            batch.records,
            batch.first_offset,
            batch.end_offset,
            batch.put.map_or("-".to_string(), |p| p.to_string()),
            cell(batch.sent_ms),
            cell(batch.stored_ms),
            cell(batch.acked_ms),
            batch.outcome,
            match (batch.waited, batch.retried) {
                (Some(wait), _) => format!(" (waited: {wait})"),
                (None, true) => " (retried, compared: match)".to_string(),
                _ => String::new(),
            }
        )?;
    }
    if json.batches.len() > TABLE_ROWS_MAX {
        writeln!(out, "... {} more batches", json.batches.len() - TABLE_ROWS_MAX)?;
    }
    let per_record = json.puts_per_record.map_or("-".to_string(), |p| format!("{p:.4}"));
    writeln!(out, "{} {}: {} requests for {} acknowledged records ({per_record} per record)", json.backend, if json.backend == "s3" { "PUTs" } else { "INSERTs" }, json.puts, json.records_acked)?;
    if let Some(bill) = json.put_bill_per_million_usd {
        writeln!(out, "PUT bill per million appends at $0.005 per 1,000 PUTs: ${bill:.3} (one PUT per record: $5.000)")?;
    }
    if let Some(upload) = &json.upload {
        let orphans = upload.objects.iter().filter(|object| object.committed_ms.is_none()).count();
        writeln!(
            out,
            "upload: {} blocks, {} objects committed in {} commits, {orphans} orphaned, {} WAL objects deleted, {} records read twice",
            upload.blocks.len(),
            upload.objects.len() - orphans,
            upload.commits.len(),
            upload.wal_deletes.iter().map(|delete| delete.batches.len()).sum::<usize>(),
            upload.read_twice
        )?;
    }
    if let Some(takeover) = &json.takeover {
        writeln!(out, 
            "takeover at {:.3} ms: node B claims epoch {} over {}; A acknowledged {}, B recovers {}, {} straggler objects ignored, A fenced at batch {}",
            takeover.at_ms,
            takeover.new_epoch,
            takeover.old_epoch,
            takeover.acked_by_old,
            takeover.recovered_by_new,
            takeover.stragglers_ignored,
            takeover.fenced_batches.first().map_or("-".to_string(), |b| b.to_string())
        )?;
    }
    Ok(())
}
