//! `append`: closed-loop producers, each on its own HTTP/1.1 connection, each sending one
//! request of `batch` messages and waiting for its answer before the next.
//!
//! The run has three phases. Setup opens every connection and creates the streams
//! (producer `p` appends to stream `p mod streams`). A warm-up lets the server reach its
//! steady state (first requests, caches, SlateDB's first flushes) and is not counted.
//! Then, for `seconds`, every acknowledgement that arrives is counted (its messages and
//! its latency, from the request's send to its whole answer). The S3 test server's
//! request counts are read at the start and the end of that window, so background work
//! the server does meanwhile (uploads, compaction, metadata) is charged to the messages
//! acknowledged in it. A request still in flight at the end is finished but not counted.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http::HeaderValue;

use crate::conn::Connection;
use crate::protocol::{Protocol, Target};
use crate::stats::{process_cpu, read_requests, Latency, LatencyMs};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[arg(long, value_enum)]
    protocol: Protocol,
    /// The server, http://HOST:PORT.
    #[arg(long)]
    url: String,
    /// S2's basin (created when missing).
    #[arg(long, default_value = "walab-bench")]
    basin: String,
    /// Concurrent producers, one connection each.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=20_000))]
    producers: u32,
    /// Streams the producers append to (producer p to stream p mod K; at most --producers).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=20_000))]
    streams: u32,
    /// Messages per request (the client's batching).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    batch: u32,
    /// Bytes per message.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(3..=65_536))]
    message_bytes: u32,
    /// Seconds counted.
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
    /// Seconds run before counting starts.
    #[arg(long, default_value_t = 2.0)]
    warmup_seconds: f64,
    /// Durable Streams only: every request carries Producer-Id, Producer-Epoch 0 and its
    /// Producer-Seq (the protocol's idempotent producers).
    #[arg(long)]
    idempotent: bool,
    /// Names the streams and producers (`<run-id>-<k>`, `<run-id>-p<p>`).
    #[arg(long, default_value = "bench")]
    run_id: String,
    /// The S3 test server's request counts (`walab s3-server --requests-file`), read at
    /// the start and end of the counted window.
    #[arg(long)]
    requests_file: Option<PathBuf>,
    /// The server's process: its CPU time (user + system) over the counted window is
    /// reported per acknowledged message.
    #[arg(long)]
    server_pid: Option<u32>,
}

#[derive(serde::Serialize)]
pub struct Report {
    protocol: String,
    url: String,
    producers: u32,
    streams: u32,
    batch: u32,
    message_bytes: u32,
    idempotent: bool,
    seconds: f64,
    acked_messages: u64,
    requests: u64,
    acked_per_s: f64,
    requests_per_s: f64,
    /// Each acknowledged message's latency (a batch's messages share their request's).
    latency_ms: LatencyMs,
    /// S3 requests the test server saw in the window, by kind, and per acknowledged message.
    #[serde(skip_serializing_if = "Option::is_none")]
    s3_requests: Option<std::collections::BTreeMap<String, u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    s3_requests_per_message: Option<f64>,
    /// The server's CPU time in the window per acknowledged message, in microseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    server_cpu_us_per_message: Option<f64>,
}

impl Report {
    pub fn summary(&self) -> String {
        let per = self.s3_requests_per_message.map_or(String::new(), |per| {
            format!(", {per:.4} S3 requests/message")
        });
        format!(
            "{} {}: {} producers, {} streams, {} per request: {:.0} acked/s, p50 {:.2} ms, p99 {:.2} ms{per}",
            self.protocol,
            self.url,
            self.producers,
            self.streams,
            self.batch,
            self.acked_per_s,
            self.latency_ms.p50,
            self.latency_ms.p99
        )
    }
}

/// One producer's counted share.
struct Counted {
    latency: Latency,
    requests: u64,
}

/// Creates the streams on up to 64 connections at once.
async fn create_streams(target: &Target, names: &[String]) -> Result<(), String> {
    let mut setup = Connection::open(&target.authority).await?;
    target.ensure_basin(&mut setup).await?;
    let lanes = names.len().clamp(1, 64);
    let mut tasks = Vec::new();
    for lane in 0..lanes {
        let mine: Vec<String> = names.iter().skip(lane).step_by(lanes).cloned().collect();
        let target = target.clone();
        tasks.push(tokio::spawn(async move {
            let mut connection = Connection::open(&target.authority).await?;
            for name in mine {
                target.create_stream(&mut connection, &name).await?;
            }
            Ok::<(), String>(())
        }));
    }
    for task in tasks {
        task.await.map_err(|error| error.to_string())??;
    }
    Ok(())
}

pub async fn run(args: Args) -> Result<Report, String> {
    let target = Target::parse(args.protocol, &args.url, &args.basin)?;
    if args.idempotent && args.protocol != Protocol::Ds {
        return Err(
            "--idempotent: only with --protocol ds (S2 has no idempotent producers of this kind)"
                .to_string(),
        );
    }
    if args.streams > args.producers {
        return Err(format!(
            "--streams {}: at most --producers ({})",
            args.streams, args.producers
        ));
    }
    if !(args.seconds > 0.0 && args.seconds <= 3600.0)
        || !(0.0..=600.0).contains(&args.warmup_seconds)
    {
        return Err("--seconds: above 0 and at most 3600; --warmup-seconds: 0 to 600".to_string());
    }
    let names: Vec<String> = (0..args.streams)
        .map(|k| format!("{}-{k}", args.run_id))
        .collect();
    create_streams(&target, &names).await?;

    // Every connection is open before the clock starts.
    let mut connections = Vec::with_capacity(args.producers as usize);
    for _ in 0..args.producers {
        connections.push(Connection::open(&target.authority).await?);
    }
    let body = target.append_body(args.batch as usize, args.message_bytes as usize);
    let start = Instant::now();
    let counted_from = start + Duration::from_secs_f64(args.warmup_seconds);
    let counted_until = counted_from + Duration::from_secs_f64(args.seconds);
    let stop = Arc::new(AtomicBool::new(false));
    let first_error: Arc<Mutex<Option<String>>> = Arc::new(Mutex::new(None));

    let (requests_file, server_pid) = (args.requests_file.clone(), args.server_pid);
    let window_counts = tokio::spawn(async move {
        tokio::time::sleep_until(counted_from.into()).await;
        let before = requests_file.as_deref().map(read_requests).transpose()?;
        let cpu_before = server_pid.map(process_cpu).transpose()?;
        tokio::time::sleep_until(counted_until.into()).await;
        let cpu = match (server_pid, cpu_before) {
            (Some(pid), Some(before)) => Some(process_cpu(pid)?.saturating_sub(before)),
            _ => None,
        };
        let requests = match (requests_file.as_deref(), before) {
            (Some(path), Some(before)) => {
                let after = read_requests(path)?;
                let delta = after.iter().map(|(kind, n)| {
                    (
                        kind.clone(),
                        n.saturating_sub(before.get(kind).copied().unwrap_or(0)),
                    )
                });
                Some(delta.collect::<std::collections::BTreeMap<_, _>>())
            }
            _ => None,
        };
        Ok::<_, String>((requests, cpu))
    });

    let mut tasks = Vec::with_capacity(connections.len());
    for (p, mut connection) in connections.into_iter().enumerate() {
        let target = target.clone();
        let path = target.append_path(&names[p % names.len()]);
        let producer = HeaderValue::from_str(&format!("{}-p{p}", args.run_id))
            .map_err(|_| format!("--run-id {}: not usable in a header", args.run_id))?;
        let (body, stop, first_error) = (body.clone(), Arc::clone(&stop), Arc::clone(&first_error));
        let (batch, idempotent) = (args.batch as usize, args.idempotent);
        tasks.push(tokio::spawn(async move {
            let mut counted = Counted {
                latency: Latency::new(),
                requests: 0,
            };
            let mut seq = 0u64;
            while !stop.load(Ordering::Relaxed) && Instant::now() < counted_until {
                let request = target.append_request(
                    &path,
                    body.clone(),
                    idempotent.then_some((&producer, seq)),
                );
                let sent = Instant::now();
                let checked = match connection.exchange(request).await {
                    Ok(answer) => target.check_append(&path, &answer, batch, idempotent),
                    Err(error) => Err(error),
                };
                let acked = Instant::now();
                if let Err(error) = checked {
                    stop.store(true, Ordering::Relaxed);
                    first_error
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .get_or_insert(error);
                    break;
                }
                seq += 1;
                if acked >= counted_from && acked < counted_until {
                    counted.latency.record_n(acked - sent, batch as u64);
                    counted.requests += 1;
                }
            }
            counted
        }));
    }
    let mut latency = Latency::new();
    let mut requests = 0;
    for task in tasks {
        let counted = task.await.map_err(|error| error.to_string())?;
        latency.merge(&counted.latency);
        requests += counted.requests;
    }
    if let Some(error) = first_error.lock().unwrap_or_else(|p| p.into_inner()).take() {
        window_counts.abort();
        return Err(error);
    }
    let (s3_requests, server_cpu) = window_counts.await.map_err(|error| error.to_string())??;
    let acked_messages = latency.count();
    let s3_requests_per_message = s3_requests
        .as_ref()
        .map(|counts| counts.values().sum::<u64>() as f64 / acked_messages.max(1) as f64);
    Ok(Report {
        protocol: format!("{:?}", args.protocol).to_lowercase(),
        url: args.url,
        producers: args.producers,
        streams: args.streams,
        batch: args.batch,
        message_bytes: args.message_bytes,
        idempotent: args.idempotent,
        seconds: args.seconds,
        acked_messages,
        requests,
        acked_per_s: acked_messages as f64 / args.seconds,
        requests_per_s: requests as f64 / args.seconds,
        latency_ms: latency.ms(),
        s3_requests,
        s3_requests_per_message,
        server_cpu_us_per_message: server_cpu
            .map(|cpu| cpu.as_secs_f64() * 1e6 / acked_messages.max(1) as f64),
    })
}
