//! `walab load --http URL`: concurrent writers append to a running `walab serve` and
//! print each acknowledgement; `walab bench --http URL` runs the same writers and reports
//! acked/s and latencies instead.
//!
//! Each acknowledged append goes to stdout as `ack <stream> <offset> <producer> <seq>`
//! (`-` for an anonymous writer's producer and seq), flushed at once: the same ledger of
//! promises as the WAL's `load`, for a harness that kills the server. Writer `w` appends
//! to stream `<run id>-<w mod streams>`; the first `--producers` writers are idempotent
//! producers `<run id>-p<w>` at epoch 1, seq from 0. At the end a summary goes to stderr.
//!
//! Each writer holds one HTTP/1.1 connection of its own (hyper's connection API, with
//! `TCP_NODELAY`) and sends one append at a time on it: no pool, no URL parsed per request.
//! With `--batch N` each request is a batch append of N records (`POST
//! /streams/{s}/batch`, [`crate::serve::batch`]); its acks are still printed one per record.

use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Body;
use http::header::{HeaderValue, CONTENT_TYPE, HOST};
use http::{Request, Uri};
use hyper_util::rt::TokioIo;

use crate::cli_error::CliError;
use crate::latency::LatencyHistogram;
use crate::serve::batch::{encode_batch, BATCH_BODY_BYTES_MAX};
use crate::serve::http::{EPOCH_HEADER, PRODUCER_HEADER, SEQ_HEADER};
use crate::serve::store::BATCH_RECORDS_MAX;

/// The flags `load --http` and `bench --http` share.
#[derive(clap::Args, Debug, Clone)]
pub struct HttpArgs {
    /// Append to a running `walab serve` at this URL instead of a WAL (`load` prints
    /// `ack <stream> <offset> <producer> <seq>`; `bench` reports acked/s, latencies and
    /// the server's persists and object PUTs per record from its `GET /stats`).
    #[arg(long, value_name = "URL", conflicts_with = "wal")]
    pub http: Option<String>,
    /// With --http: streams the writers append to (writer w to stream w mod K).
    #[arg(long, value_name = "K", default_value_t = 1)]
    pub streams: usize,
    /// With --http: how many of the writers are idempotent producers (epoch 1, seq from 0).
    #[arg(long, value_name = "P", default_value_t = 0)]
    pub producers: usize,
    /// With --http: records per request; above 1 each request is a batch append.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub batch: usize,
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
    /// Records per request (1: the single append route).
    pub batch: usize,
    pub run_id: String,
}

/// Worker threads of the client's runtime.
const CLIENT_RUNTIME_THREADS: usize = 2;

/// The most bytes of an answer the client reads.
const ANSWER_BYTES_MAX: usize = 1 << 20;

/// A finished run of the writers.
pub struct HttpRun {
    /// Every acknowledged append's latency.
    pub latency: LatencyHistogram,
    pub elapsed: Duration,
    /// The first failure (the run stopped there).
    pub error: Option<String>,
}

/// `http://HOST:PORT[/]`, as the host header and the address to connect to.
fn authority_of(url: &str) -> Result<String, CliError> {
    let bad = || CliError::usage(format!("--http {url}: use http://HOST:PORT"));
    let rest = url.strip_prefix("http://").ok_or_else(bad)?;
    let authority = rest.trim_end_matches('/');
    if authority.is_empty() || authority.contains('/') || !authority.contains(':') {
        return Err(bad());
    }
    Ok(authority.to_string())
}

/// One writer's connection.
pub(crate) struct Connection {
    sender: hyper::client::conn::http1::SendRequest<Body>,
}

impl Connection {
    pub(crate) async fn open(authority: &str) -> Result<Connection, String> {
        let stream = tokio::net::TcpStream::connect(authority).await.map_err(|error| format!("http://{authority}: {error}"))?;
        stream.set_nodelay(true).map_err(|error| format!("http://{authority}: TCP_NODELAY: {error}"))?;
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|error| format!("http://{authority}: {error}"))?;
        // Ends when the server closes the connection or the sender is dropped.
        tokio::spawn(connection);
        Ok(Connection { sender })
    }

    /// Sends one request and reads the whole answer, whatever its status; `Err` only when
    /// no answer came (the connection failed or closed: the server may have died).
    pub(crate) async fn exchange(&mut self, request: Request<Body>) -> Result<(http::StatusCode, bytes::Bytes), String> {
        self.sender.ready().await.map_err(|error| error.to_string())?;
        let response = self.sender.send_request(request).await.map_err(|error| error.to_string())?;
        let status = response.status();
        let body = axum::body::to_bytes(Body::new(response.into_body()), ANSWER_BYTES_MAX)
            .await
            .map_err(|error| format!("{status}: the answer's body: {error}"))?;
        Ok((status, body))
    }
}

#[derive(serde::Deserialize)]
struct Acked {
    offset: u64,
    /// A batch's records (absent from a single append's answer).
    count: Option<u64>,
}

/// One writer: its stream, its producer id, its connection.
struct Writer {
    stream: String,
    producer: Option<HeaderValue>,
    uri: Uri,
    host: HeaderValue,
}

impl Writer {
    /// Sends one append (or one batch of `count` records, `body` already laid out) and
    /// reads its answer: the (first) offset, or why not.
    async fn append(&self, connection: &mut Connection, body: &bytes::Bytes, seq: u64, count: u64) -> Result<u64, String> {
        let mut request = Request::post(self.uri.clone()).header(HOST, self.host.clone());
        if let Some(producer) = &self.producer {
            request = request
                .header(PRODUCER_HEADER, producer.clone())
                .header(EPOCH_HEADER, HeaderValue::from_static("1"))
                .header(SEQ_HEADER, HeaderValue::from(seq));
        }
        let request = request
            .header(CONTENT_TYPE, HeaderValue::from_static("application/octet-stream"))
            .body(Body::from(body.clone()))
            .map_err(|error| format!("{}: {error}", self.uri))?;
        let url = || format!("http://{}{}", self.host.to_str().unwrap_or("?"), self.uri);
        connection.sender.ready().await.map_err(|error| format!("{}: {error}", url()))?;
        let response = connection.sender.send_request(request).await.map_err(|error| format!("{}: {error}", url()))?;
        let status = response.status();
        let body = axum::body::to_bytes(Body::new(response.into_body()), ANSWER_BYTES_MAX)
            .await
            .map_err(|error| format!("{}: {status}: the answer's body: {error}", url()))?;
        if !status.is_success() {
            return Err(format!("{}: {status}: {}", url(), String::from_utf8_lossy(&body)));
        }
        let acked = serde_json::from_slice::<Acked>(&body)
            .map_err(|_| format!("{}: an answer without an offset: {}", url(), String::from_utf8_lossy(&body)))?;
        if acked.count.unwrap_or(1) != count {
            return Err(format!("{}: {count} records sent, the answer counts {:?}: {}", url(), acked.count, String::from_utf8_lossy(&body)));
        }
        Ok(acked.offset)
    }
}

/// Runs the writers until `records` are acknowledged, the deadline or the first failure;
/// with `ledger`, each acknowledgement is printed to it and flushed at once.
pub fn drive(load: &HttpLoad, ledger: Option<Arc<Mutex<std::io::Stdout>>>) -> Result<HttpRun, CliError> {
    let authority = authority_of(&load.url)?;
    if load.streams == 0 || load.streams > 100_000 {
        return Err(CliError::usage("--streams: must be between 1 and 100000"));
    }
    if !(1..=BATCH_RECORDS_MAX).contains(&load.batch) {
        return Err(CliError::usage(format!("--batch: must be between 1 and {BATCH_RECORDS_MAX}")));
    }
    if load.batch * (load.record_bytes + 4) > BATCH_BODY_BYTES_MAX {
        return Err(CliError::usage(format!("--batch times --record-bytes: a batch body is at most {BATCH_BODY_BYTES_MAX} bytes")));
    }
    if load.producers > load.writers {
        return Err(CliError::usage(format!("--producers {}: at most --writers ({})", load.producers, load.writers)));
    }
    let host = HeaderValue::from_str(&authority).map_err(|_| CliError::usage(format!("--http {}: not a host", load.url)))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(CLIENT_RUNTIME_THREADS)
        .enable_all()
        .build()
        .map_err(|error| CliError::failed(format!("load: cannot start the runtime: {error}")))?;
    let stop = Arc::new(AtomicBool::new(false));
    let first_error: Arc<Mutex<Option<String>>> = Arc::new(Mutex::new(None));
    let value = vec![b'v'; load.record_bytes];
    // The request bodies: one record, or a batch of `n` (every batch is full but a
    // writer's last one under --records).
    let body_of = |n: usize| -> bytes::Bytes {
        if load.batch == 1 {
            return bytes::Bytes::from(value.clone());
        }
        let mut body = Vec::with_capacity(n * (value.len() + 4));
        encode_batch(std::iter::repeat_n(&value[..], n), &mut body);
        bytes::Bytes::from(body)
    };
    let full_body = body_of(load.batch);
    let started = Instant::now();
    let histograms: Vec<LatencyHistogram> = runtime.block_on(async {
        let mut tasks = Vec::with_capacity(load.writers);
        for w in 0..load.writers {
            let stream = format!("{}-{}", load.run_id, w % load.streams);
            let route = if load.batch == 1 { "records" } else { "batch" };
            let uri: Uri = format!("/streams/{stream}/{route}")
                .parse()
                .map_err(|_| CliError::usage(format!("--run-id {}: not usable in a URL path", load.run_id)))?;
            let producer = match w < load.producers {
                true => Some(
                    HeaderValue::from_str(&format!("{}-p{w}", load.run_id))
                        .map_err(|_| CliError::usage(format!("--run-id {}: not usable in a header", load.run_id)))?,
                ),
                false => None,
            };
            let writer = Writer { stream, producer, uri, host: host.clone() };
            let share = load.records / load.writers as u64 + u64::from((w as u64) < load.records % load.writers as u64);
            let (authority, ledger) = (authority.clone(), ledger.clone());
            let batch = load.batch as u64;
            let (full_body, last_body) = (full_body.clone(), body_of((share % batch) as usize));
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
                let mut seq = 0;
                'requests: while seq < share {
                    if stop.load(Ordering::Relaxed) || deadline.is_some_and(|d| Instant::now() >= d) {
                        break;
                    }
                    let count = batch.min(share - seq);
                    let body = if count == batch { &full_body } else { &last_body };
                    let sent = Instant::now();
                    let offset = match writer.append(&mut connection, body, seq, count).await {
                        Ok(offset) => offset,
                        Err(error) => {
                            fail(error);
                            break;
                        }
                    };
                    latency.record_n(u64::try_from(sent.elapsed().as_nanos()).unwrap_or(u64::MAX), count);
                    if let Some(ledger) = &ledger {
                        let mut out = ledger.lock().unwrap_or_else(|p| p.into_inner());
                        for n in 0..count {
                            let record_seq = (seq + n).to_string();
                            let (producer, record_seq) = match &writer.producer {
                                Some(producer) => (producer.to_str().unwrap_or("?"), record_seq.as_str()),
                                None => ("-", "-"),
                            };
                            let line = writeln!(out, "ack {} {} {producer} {record_seq}", writer.stream, offset + n);
                            if line.is_err() {
                                // Nobody reads our promises any more (a closed pipe).
                                stop.store(true, Ordering::Relaxed);
                                break 'requests;
                            }
                        }
                        if out.flush().is_err() {
                            stop.store(true, Ordering::Relaxed);
                            break;
                        }
                    }
                    seq += count;
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

/// One GET on a connection of its own, its JSON answer; `None` from a server without the
/// route (an HTTP floor that only answers appends).
async fn server_stats(authority: &str) -> Result<Option<ServerStats>, String> {
    let mut connection = Connection::open(authority).await?;
    let request = Request::get("/stats")
        .header(HOST, authority)
        .body(Body::empty())
        .map_err(|error| format!("http://{authority}/stats: {error}"))?;
    let url = format!("http://{authority}/stats");
    let response = connection.sender.send_request(request).await.map_err(|error| format!("{url}: {error}"))?;
    let status = response.status();
    let body = axum::body::to_bytes(Body::new(response.into_body()), ANSWER_BYTES_MAX)
        .await
        .map_err(|error| format!("{url}: {error}"))?;
    if status == http::StatusCode::NOT_FOUND {
        return Ok(None);
    }
    if !status.is_success() {
        return Err(format!("{url}: {status}: {}", String::from_utf8_lossy(&body)));
    }
    serde_json::from_slice(&body).map(Some).map_err(|error| format!("{url}: {error}: {}", String::from_utf8_lossy(&body)))
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
    let report = BenchJson { http: bench.url.clone(), wal, record_bytes: bench.record_bytes, runs };
    let mut out = std::io::stdout().lock();
    if bench.json {
        let _ = writeln!(out, "{}", serde_json::to_string(&report).expect("plain data serializes"));
        return Ok(ExitCode::SUCCESS);
    }
    let column = |value: Option<f64>| value.map_or("-".to_string(), |value| format!("{value:.4}"));
    let _ = writeln!(out, "{} (WAL {}), {} B values", report.http, report.wal, report.record_bytes);
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
