//! `walab load --http URL`: concurrent writers append to a running Durable Streams
//! server (`walab serve`, or any server of the protocol, [`super::protocol_client`]) and
//! print each acknowledgement; `walab bench --http URL` runs the same writers and reports
//! acked/s and latencies instead.
//!
//! Writer `w` appends to stream `<run id>-<w mod streams>` (created first, with `PUT`);
//! the first `--producers` writers are idempotent producers `<run id>-p<w>` at epoch 0,
//! their seq one higher per request. With `--batch N` each request carries N records: a
//! JSON array of N messages on a JSON stream, N records' bytes one after another on a
//! byte stream. Each acknowledged request goes to stdout as
//! `ack <stream> <offset> <producer> <seq> <records>` (`-` for an anonymous writer's
//! producer and seq), flushed at once, where `offset` is the stream's tail the answer
//! named (`Stream-Next-Offset`): the request's records end there. That is the ledger of
//! promises a harness that kills the server checks. At the end a summary goes to stderr.
//!
//! Each writer holds one HTTP/1.1 connection of its own and sends one request at a time
//! on it: no pool, no URL parsed per request.

use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http::header::HeaderValue;

use super::protocol_client::{self, appended, append_request, Appended, Client, Connection, Content, ProducerHeaders};
use crate::cli_error::CliError;
use crate::latency::LatencyHistogram;

/// The flags `load --http` and `bench --http` share.
#[derive(clap::Args, Debug, Clone)]
pub struct HttpArgs {
    /// Append to a running Durable Streams server (`walab serve`) at this base URL
    /// instead of a WAL (`load` prints `ack <stream> <offset> <producer> <seq>
    /// <records>`; `bench` reports acked/s, latencies and, from `walab serve`'s
    /// `GET /stats`, its persists and object PUTs per record).
    #[arg(long, value_name = "URL", conflicts_with = "wal")]
    pub http: Option<String>,
    /// With --http: streams the writers append to (writer w to stream w mod K).
    #[arg(long, value_name = "K", default_value_t = 1)]
    pub streams: usize,
    /// With --http: how many of the writers are idempotent producers (epoch 0, one seq
    /// per request).
    #[arg(long, value_name = "P", default_value_t = 0)]
    pub producers: usize,
    /// With --http: records per request; above 1 each request is a batch (one POST).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub batch: usize,
    /// With --http: the streams' content type: bytes (application/octet-stream) or json
    /// (application/json, each record a JSON string of --record-bytes bytes).
    #[arg(long, value_enum, default_value_t = Content::Bytes)]
    pub content: Content,
}

/// What `load --http` and `bench --http` need besides the shared writer flags.
pub struct HttpLoad {
    pub url: String,
    pub writers: usize,
    pub records: u64,
    pub deadline: Option<Instant>,
    pub record_bytes: usize,
    pub streams: usize,
    pub producers: usize,
    /// Records per request.
    pub batch: usize,
    pub content: Content,
    pub run_id: String,
}

/// Worker threads of the client's runtime.
const CLIENT_RUNTIME_THREADS: usize = 2;

/// The most records one request carries (a server may take fewer: its `413` is named).
pub const BATCH_RECORDS_MAX: usize = 10_000;

/// A finished run of the writers.
pub struct HttpRun {
    /// Every acknowledged record's latency (a request's, once per record it carried).
    pub latency: LatencyHistogram,
    pub elapsed: Duration,
    /// The first failure (the run stopped there).
    pub error: Option<String>,
}

fn authority_of(url: &str) -> Result<String, CliError> {
    protocol_client::authority_of(url).ok_or_else(|| CliError::usage(format!("--http {url}: use http://HOST:PORT")))
}

/// The body of one request of `n` records of `record_bytes` each.
pub fn request_body(content: Content, n: usize, record_bytes: usize) -> bytes::Bytes {
    match content {
        Content::Bytes => bytes::Bytes::from(vec![b'v'; n * record_bytes]),
        Content::Json => {
            // A JSON string of `record_bytes` bytes with its quotes (at least `""`).
            let message = format!("\"{}\"", "v".repeat(record_bytes.saturating_sub(2)));
            let body = match n {
                1 => message,
                _ => format!("[{}]", vec![message; n].join(",")),
            };
            bytes::Bytes::from(body)
        }
    }
}

/// One writer: its stream, its producer id, its request's fixed parts.
struct Writer {
    stream: String,
    path: String,
    producer: Option<HeaderValue>,
    host: HeaderValue,
    content: Content,
    url: String,
}

impl Writer {
    /// Sends one request of `count` records (`body` already laid out) as seq `seq` and
    /// reads its answer: the stream's tail after it, or why not.
    async fn append(&self, connection: &mut Connection, body: &bytes::Bytes, seq: u64) -> Result<String, String> {
        let producer = self.producer.as_ref().map(|id| ProducerHeaders { id, epoch: 0, seq });
        let request = append_request(&self.path, &self.host, self.content, body.clone(), producer)?;
        let answer = connection.exchange(request).await.map_err(|error| format!("POST {}: {error}", self.url))?;
        match appended(&answer, producer.is_some()) {
            Ok(Appended::Fresh { next_offset }) => Ok(next_offset),
            Ok(Appended::Duplicate { .. }) => Err(format!(
                "POST {}: producer {} seq {seq} was answered as a duplicate: the server already has it (use a new --run-id)",
                self.url,
                self.producer.as_ref().and_then(|id| id.to_str().ok()).unwrap_or("?"),
            )),
            Err(refused) => Err(format!("POST {}: {refused}", self.url)),
        }
    }
}

/// Checks the flags `load --http` and `bench --http` share.
fn check(load: &HttpLoad) -> Result<(), CliError> {
    if load.streams == 0 || load.streams > 100_000 {
        return Err(CliError::usage("--streams: must be between 1 and 100000"));
    }
    if !(1..=BATCH_RECORDS_MAX).contains(&load.batch) {
        return Err(CliError::usage(format!("--batch: must be between 1 and {BATCH_RECORDS_MAX}")));
    }
    if load.producers > load.writers {
        return Err(CliError::usage(format!("--producers {}: at most --writers ({})", load.producers, load.writers)));
    }
    if load.content == Content::Json && load.record_bytes < 2 {
        return Err(CliError::usage("--record-bytes: a JSON record is at least 2 bytes (\"\")"));
    }
    Ok(())
}

/// Runs the writers until `records` are acknowledged, the deadline or the first failure;
/// with `ledger`, each acknowledgement is printed to it and flushed at once.
pub fn drive(load: &HttpLoad, ledger: Option<Arc<Mutex<std::io::Stdout>>>) -> Result<HttpRun, CliError> {
    let authority = authority_of(&load.url)?;
    check(load)?;
    let host = HeaderValue::from_str(&authority).map_err(|_| CliError::usage(format!("--http {}: not a host", load.url)))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(CLIENT_RUNTIME_THREADS)
        .enable_all()
        .build()
        .map_err(|error| CliError::failed(format!("load: cannot start the runtime: {error}")))?;
    let stop = Arc::new(AtomicBool::new(false));
    let first_error: Arc<Mutex<Option<String>>> = Arc::new(Mutex::new(None));
    let names: Vec<String> = (0..load.streams.min(load.writers)).map(|k| format!("{}-{k}", load.run_id)).collect();
    for name in &names {
        if protocol_client::escape(name) != *name {
            return Err(CliError::usage(format!("--run-id {}: use letters, digits and . _ - ~ only", load.run_id)));
        }
    }
    // The streams first, one after the other on one connection.
    runtime.block_on(async {
        let mut client = Client::open(&authority).await?;
        for name in &names {
            client.create(name, load.content).await?;
        }
        Ok::<_, String>(())
    })
    .map_err(CliError::failed)?;
    let full_body = request_body(load.content, load.batch, load.record_bytes);
    let started = Instant::now();
    let histograms: Vec<LatencyHistogram> = runtime.block_on(async {
        let mut tasks = Vec::with_capacity(load.writers);
        for w in 0..load.writers {
            let stream = names[w % names.len()].clone();
            let path = protocol_client::stream_path(&stream);
            let producer = match w < load.producers {
                true => Some(
                    HeaderValue::from_str(&format!("{}-p{w}", load.run_id))
                        .map_err(|_| CliError::usage(format!("--run-id {}: not usable in a header", load.run_id)))?,
                ),
                false => None,
            };
            let url = format!("http://{authority}{path}");
            let writer = Writer { stream, path, producer, host: host.clone(), content: load.content, url };
            let share = load.records / load.writers as u64 + u64::from((w as u64) < load.records % load.writers as u64);
            let (authority, ledger) = (authority.clone(), ledger.clone());
            let batch = load.batch as u64;
            // Every request is full but a writer's last one under --records.
            let (full_body, last_body) = (full_body.clone(), request_body(load.content, (share % batch) as usize, load.record_bytes));
            let (stop, first_error) = (Arc::clone(&stop), Arc::clone(&first_error));
            let deadline = load.deadline;
            tasks.push(tokio::spawn(async move {
                let mut latency = LatencyHistogram::new();
                let fail = |error: String| {
                    stop.store(true, Ordering::Relaxed);
                    first_error.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(error);
                };
                let mut connection = match Connection::open(&authority).await {
                    Ok(connection) => connection,
                    Err(error) => {
                        fail(error);
                        return latency;
                    }
                };
                let (mut sent_records, mut seq) = (0, 0u64);
                while sent_records < share {
                    if stop.load(Ordering::Relaxed) || deadline.is_some_and(|d| Instant::now() >= d) {
                        break;
                    }
                    let count = batch.min(share - sent_records);
                    let body = if count == batch { &full_body } else { &last_body };
                    let sent = Instant::now();
                    let offset = match writer.append(&mut connection, body, seq).await {
                        Ok(offset) => offset,
                        Err(error) => {
                            fail(error);
                            break;
                        }
                    };
                    latency.record_n(u64::try_from(sent.elapsed().as_nanos()).unwrap_or(u64::MAX), count);
                    if let Some(ledger) = &ledger {
                        let mut out = ledger.lock().unwrap_or_else(|p| p.into_inner());
                        let seq_text = seq.to_string();
                        let (producer, seq_text) = match &writer.producer {
                            Some(producer) => (producer.to_str().unwrap_or("?"), seq_text.as_str()),
                            None => ("-", "-"),
                        };
                        if writeln!(out, "ack {} {offset} {producer} {seq_text} {count}", writer.stream).and_then(|()| out.flush()).is_err() {
                            // Nobody reads our promises any more (a closed pipe).
                            stop.store(true, Ordering::Relaxed);
                            break;
                        }
                    }
                    sent_records += count;
                    seq += 1;
                }
                latency
            }));
        }
        let mut histograms = Vec::new();
        for task in tasks {
            if let Ok(latency) = task.await {
                histograms.push(latency);
            }
        }
        Ok::<_, CliError>(histograms)
    })?;
    let elapsed = started.elapsed().max(Duration::from_micros(1));
    let mut latency = LatencyHistogram::new();
    for histogram in &histograms {
        latency.merge(histogram);
    }
    let error = first_error.lock().unwrap_or_else(|p| p.into_inner()).take();
    Ok(HttpRun { latency, elapsed, error })
}

pub fn run(load: HttpLoad) -> Result<ExitCode, CliError> {
    let run = drive(&load, Some(Arc::new(Mutex::new(std::io::stdout()))))?;
    let acked = run.latency.count();
    eprintln!(
        "load: {acked} acked in {:.2} s: {:.0} acked/s, p50 {:.3} ms, p99 {:.3} ms ({} writers, {} streams, {} per request)",
        run.elapsed.as_secs_f64(),
        acked as f64 / run.elapsed.as_secs_f64(),
        run.latency.quantile_ms(500),
        run.latency.quantile_ms(990),
        load.writers,
        load.streams.min(load.writers),
        load.batch,
    );
    match run.error {
        Some(error) => Err(CliError::failed(error)),
        None => Ok(ExitCode::SUCCESS),
    }
}

/// The server's counters (`GET /stats`), read before and after a bench run.
#[derive(serde::Deserialize, Clone, Debug, Default)]
struct ServerStats {
    wal: String,
    wal_persists: u64,
    object_puts: u64,
}

/// `GET /stats` on a connection of its own, its JSON answer; `None` from a server without
/// it (another server of the protocol, or an HTTP floor that only answers appends).
async fn server_stats(authority: &str) -> Result<Option<ServerStats>, String> {
    let mut client = Client::open(authority).await?;
    let answer = client.get("/stats").await?;
    let url = format!("http://{authority}/stats");
    if answer.status == http::StatusCode::NOT_FOUND {
        return Ok(None);
    }
    if !answer.status.is_success() {
        return Err(format!("{url}: {}", answer.describe()));
    }
    serde_json::from_slice(&answer.body).map(Some).map_err(|error| format!("{url}: {error}: {}", String::from_utf8_lossy(&answer.body)))
}

/// What `bench --http` asks for.
pub struct HttpBench {
    pub url: String,
    pub writers: Vec<usize>,
    pub seconds: f64,
    pub record_bytes: usize,
    pub streams: usize,
    pub producers: usize,
    pub batch: usize,
    pub content: Content,
    pub run_id: String,
    pub json: bool,
}

#[derive(serde::Serialize)]
struct LatencyMs {
    p50: f64,
    p99: f64,
}

#[derive(serde::Serialize)]
struct BenchRunJson {
    writers: usize,
    streams: usize,
    /// Records per request.
    batch: usize,
    seconds: f64,
    acked: u64,
    acked_per_s: f64,
    latency_ms: LatencyMs,
    /// The server's WAL persists (fdatasyncs, PUTs or INSERTs) per acknowledged record.
    #[serde(skip_serializing_if = "Option::is_none")]
    wal_persists_per_record: Option<f64>,
    /// Objects uploaded per acknowledged record (uploads lag: a short run counts fewer).
    #[serde(skip_serializing_if = "Option::is_none")]
    object_puts_per_record: Option<f64>,
    /// For an s3:// WAL: WAL PUTs and object PUTs per acknowledged record.
    #[serde(skip_serializing_if = "Option::is_none")]
    s3_puts_per_record: Option<f64>,
}

#[derive(serde::Serialize)]
struct BenchJson {
    http: String,
    wal: String,
    /// The streams' content type.
    content: &'static str,
    record_bytes: usize,
    runs: Vec<BenchRunJson>,
}

/// `walab bench --http URL`: the load's writers for `--seconds` per writer count, and the
/// server's persists and uploads per acknowledged record from its `GET /stats`.
pub fn bench(bench: HttpBench) -> Result<ExitCode, CliError> {
    let authority = authority_of(&bench.url)?;
    let stats_runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| CliError::failed(format!("bench: cannot start the runtime: {error}")))?;
    let stats = || stats_runtime.block_on(server_stats(&authority)).map_err(CliError::failed);
    let mut runs = Vec::new();
    let mut wal = "unknown: no GET /stats".to_string();
    for &writers in &bench.writers {
        let before = stats()?;
        let load = HttpLoad {
            url: bench.url.clone(),
            writers,
            records: u64::MAX,
            deadline: Some(Instant::now() + Duration::from_secs_f64(bench.seconds)),
            record_bytes: bench.record_bytes,
            streams: bench.streams,
            producers: bench.producers.min(writers),
            batch: bench.batch,
            content: bench.content,
            run_id: format!("{}-{writers}w", bench.run_id),
        };
        let run = drive(&load, None)?;
        if let Some(error) = run.error {
            return Err(CliError::failed(error));
        }
        let after = stats()?;
        let acked = run.latency.count();
        let per_record = |n: u64| if acked == 0 { 0.0 } else { n as f64 / acked as f64 };
        let counted = match (before, after) {
            (Some(before), Some(after)) => {
                wal = after.wal.clone();
                Some((
                    after.wal_persists.saturating_sub(before.wal_persists),
                    after.object_puts.saturating_sub(before.object_puts),
                    after.wal.starts_with("s3://"),
                ))
            }
            _ => None,
        };
        runs.push(BenchRunJson {
            writers,
            streams: bench.streams.min(writers),
            batch: bench.batch,
            seconds: run.elapsed.as_secs_f64(),
            acked,
            acked_per_s: acked as f64 / run.elapsed.as_secs_f64(),
            latency_ms: LatencyMs { p50: run.latency.quantile_ms(500), p99: run.latency.quantile_ms(990) },
            wal_persists_per_record: counted.map(|(persists, _, _)| per_record(persists)),
            object_puts_per_record: counted.map(|(_, puts, _)| per_record(puts)),
            s3_puts_per_record: counted.and_then(|(persists, puts, s3)| s3.then(|| per_record(persists + puts))),
        });
    }
    let report = BenchJson { http: bench.url.clone(), wal, content: bench.content.mime(), record_bytes: bench.record_bytes, runs };
    let mut out = std::io::stdout().lock();
    if bench.json {
        let _ = writeln!(out, "{}", serde_json::to_string(&report).expect("plain data serializes"));
        return Ok(ExitCode::SUCCESS);
    }
    let column = |value: Option<f64>| value.map_or("-".to_string(), |value| format!("{value:.4}"));
    let _ = writeln!(out, "{} (WAL {}), {} B records, {}", report.http, report.wal, report.record_bytes, report.content);
    let _ = writeln!(
        out,
        "{:>7} {:>7} {:>5} {:>11} {:>9} {:>9} {:>14} {:>14} {:>14}",
        "writers", "streams", "batch", "acked/s", "p50 ms", "p99 ms", "persists/rec", "obj PUTs/rec", "S3 PUTs/rec"
    );
    for run in &report.runs {
        let _ = writeln!(
            out,
            "{:>7} {:>7} {:>5} {:>11.0} {:>9.3} {:>9.3} {:>14} {:>14} {:>14}",
            run.writers,
            run.streams,
            run.batch,
            run.acked_per_s,
            run.latency_ms.p50,
            run.latency_ms.p99,
            column(run.wal_persists_per_record),
            column(run.object_puts_per_record),
            column(run.s3_puts_per_record),
        );
    }
    Ok(ExitCode::SUCCESS)
}
