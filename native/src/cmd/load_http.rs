//! `walab load --http URL`: concurrent writers append to a running `walab serve` and
//! print each acknowledgement.
//!
//! Each acknowledged append goes to stdout as `ack <stream> <offset> <producer> <seq>`
//! (`-` for an anonymous writer's producer and seq), flushed at once: the same ledger of
//! promises as the WAL's `load`, for a harness that kills the server. Writer `w` appends
//! to stream `<run id>-<w mod streams>`; the first `--producers` writers are idempotent
//! producers `<run id>-p<w>` at epoch 1, seq from 0. At the end a summary goes to stderr.

use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::cli_error::CliError;
use crate::latency::LatencyHistogram;

/// What `load --http` needs besides the shared writer flags.
pub struct HttpLoad {
    pub url: String,
    pub writers: usize,
    pub records: u64,
    pub deadline: Option<Instant>,
    pub record_bytes: usize,
    pub streams: usize,
    pub producers: usize,
    pub run_id: String,
}

struct Writer {
    stream: String,
    producer: Option<String>,
}

pub fn run(load: HttpLoad) -> Result<ExitCode, CliError> {
    let base = load.url.trim_end_matches('/').to_string();
    if !(base.starts_with("http://") || base.starts_with("https://")) {
        return Err(CliError::usage(format!("--http {}: use http://HOST:PORT", load.url)));
    }
    if load.streams == 0 || load.streams > 100_000 {
        return Err(CliError::usage("--streams: must be between 1 and 100000"));
    }
    if load.producers > load.writers {
        return Err(CliError::usage(format!("--producers {}: at most --writers ({})", load.producers, load.writers)));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|error| CliError::failed(format!("load: cannot start the runtime: {error}")))?;
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(load.writers)
        .build()
        .map_err(|error| CliError::failed(format!("load: cannot build the HTTP client: {error}")))?;
    let stdout = Arc::new(Mutex::new(std::io::stdout()));
    let stop = Arc::new(AtomicBool::new(false));
    let first_error: Arc<Mutex<Option<String>>> = Arc::new(Mutex::new(None));
    let value = bytes::Bytes::from(vec![b'v'; load.record_bytes]);
    let started = Instant::now();
    let histograms: Vec<LatencyHistogram> = runtime.block_on(async {
        let tasks: Vec<_> = (0..load.writers)
            .map(|w| {
                let writer = Writer {
                    stream: format!("{}-{}", load.run_id, w % load.streams),
                    producer: (w < load.producers).then(|| format!("{}-p{w}", load.run_id)),
                };
                let share = load.records / load.writers as u64 + u64::from((w as u64) < load.records % load.writers as u64);
                let (client, base, value) = (client.clone(), base.clone(), value.clone());
                let (stdout, stop, first_error) = (Arc::clone(&stdout), Arc::clone(&stop), Arc::clone(&first_error));
                let deadline = load.deadline;
                tokio::spawn(async move {
                    let mut latency = LatencyHistogram::new();
                    let url = format!("{base}/streams/{}/records", writer.stream);
                    for seq in 0..share {
                        if stop.load(Ordering::Relaxed) || deadline.is_some_and(|d| Instant::now() >= d) {
                            break;
                        }
                        let mut request = client.post(&url).body(value.clone());
                        if let Some(producer) = &writer.producer {
                            request = request
                                .header("walab-producer", producer)
                                .header("walab-producer-epoch", "1")
                                .header("walab-producer-seq", seq.to_string());
                        }
                        let sent = Instant::now();
                        let answer = match request.send().await {
                            Ok(response) => {
                                let status = response.status();
                                response.bytes().await.map(|body| (status, body))
                            }
                            Err(error) => Err(error),
                        };
                        let outcome = match answer {
                            Ok((status, body)) if status.is_success() => {
                                serde_json::from_slice::<serde_json::Value>(&body).ok().and_then(|v| v["offset"].as_u64()).ok_or_else(|| {
                                    format!("{url}: an answer without an offset: {}", String::from_utf8_lossy(&body))
                                })
                            }
                            Ok((status, body)) => Err(format!("{url}: {status}: {}", String::from_utf8_lossy(&body))),
                            Err(error) => Err(format!("{url}: {error}")),
                        };
                        match outcome {
                            Ok(offset) => {
                                latency.record_duration(sent.elapsed());
                                let (producer, seq) = match &writer.producer {
                                    Some(producer) => (producer.as_str(), seq.to_string()),
                                    None => ("-", "-".to_string()),
                                };
                                let mut out = stdout.lock().unwrap_or_else(|p| p.into_inner());
                                if writeln!(out, "ack {} {offset} {producer} {seq}", writer.stream).and_then(|()| out.flush()).is_err() {
                                    stop.store(true, Ordering::Relaxed);
                                    break;
                                }
                            }
                            Err(error) => {
                                stop.store(true, Ordering::Relaxed);
                                first_error.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(error);
                                break;
                            }
                        }
                    }
                    latency
                })
            })
            .collect();
        let mut histograms = Vec::new();
        for task in tasks {
            if let Ok(latency) = task.await {
                histograms.push(latency);
            }
        }
        histograms
    });
    let elapsed = started.elapsed().max(Duration::from_micros(1));
    let mut latency = LatencyHistogram::new();
    for histogram in &histograms {
        latency.merge(histogram);
    }
    let acked = latency.count();
    eprintln!(
        "load: {acked} acked in {:.2} s: {:.0} acked/s, p50 {:.3} ms, p99 {:.3} ms ({} writers, {} streams)",
        elapsed.as_secs_f64(),
        acked as f64 / elapsed.as_secs_f64(),
        latency.quantile_ms(500),
        latency.quantile_ms(990),
        load.writers,
        load.streams.min(load.writers),
    );
    let error = first_error.lock().unwrap_or_else(|p| p.into_inner()).take();
    match error {
        Some(error) => Err(CliError::failed(error)),
        None => Ok(ExitCode::SUCCESS),
    }
}
