//! The Postgres WAL's opponent: N connections, each doing one `INSERT` and its `COMMIT`
//! per record, with `synchronous_commit = on`.
//!
//! Postgres already groups concurrent commits into one WAL flush (a backend that finds
//! its commit record flushed by another's `fdatasync` returns at once), so this is the
//! fair baseline for walab's Postgres WAL: the same server, the same durability, the
//! same number of concurrent appenders, but one transaction per record instead of one
//! per batch. Each connection runs a closed loop (insert, wait for the commit, insert
//! again) for `--seconds`, and the harness reports acknowledged inserts a second and the
//! latency p50 and p99 as the appender saw it.
//!
//! Not a test and not in the default build:
//!
//! ```text
//! cargo bench -p walab --bench pg_baseline -- --url postgres://postgres@127.0.0.1:5432/test \
//!     --connections 64,1024 --seconds 10 [--record-bytes 100] [--json]
//! ```
//!
//! 1,024 connections need `max_connections` above that: `scripts/bench-postgres-wal`
//! starts a throwaway cluster with it raised.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_postgres::NoTls;
use walab::latency::LatencyHistogram;

/// N connections, each one INSERT + COMMIT per record, against walab's Postgres WAL.
#[derive(clap::Parser, Debug)]
struct Args {
    #[arg(long, default_value = "postgres://postgres@127.0.0.1:5432/test")]
    url: String,
    /// Connection counts to run, one after the other.
    #[arg(long, value_delimiter = ',', default_value = "64")]
    connections: Vec<usize>,
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
    #[arg(long, default_value_t = 100)]
    record_bytes: usize,
    /// One JSON object with every run.
    #[arg(long)]
    json: bool,
    /// Passed by `cargo bench`.
    #[arg(long, hide = true)]
    bench: bool,
}

#[derive(serde::Serialize)]
struct LatencyMs {
    p50: f64,
    p99: f64,
}

#[derive(serde::Serialize)]
struct RunJson {
    connections: usize,
    acked: u64,
    acked_per_s: f64,
    latency_ms: LatencyMs,
}

async fn run(args: &Args, connections: usize) -> Result<(f64, f64, f64, u64), String> {
    let (setup, connection) = tokio_postgres::connect(&args.url, NoTls).await.map_err(|e| e.to_string())?;
    tokio::spawn(connection);
    setup
        .batch_execute("CREATE TABLE IF NOT EXISTS walab_baseline (key text NOT NULL, value bytea NOT NULL); TRUNCATE walab_baseline")
        .await
        .map_err(|e| e.to_string())?;
    let mut clients = Vec::with_capacity(connections);
    for _ in 0..connections {
        let (client, connection) = tokio_postgres::connect(&args.url, NoTls).await.map_err(|e| e.to_string())?;
        tokio::spawn(connection);
        client.batch_execute("SET synchronous_commit = on").await.map_err(|e| e.to_string())?;
        clients.push(client);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for (c, client) in clients.into_iter().enumerate() {
        let stop = Arc::clone(&stop);
        let value = vec![b'v'; args.record_bytes];
        tasks.push(tokio::spawn(async move {
            let insert = client.prepare("INSERT INTO walab_baseline (key, value) VALUES ($1, $2)").await?;
            let mut latencies = LatencyHistogram::new();
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let key = format!("c{c}-{n}");
                n += 1;
                let begin = Instant::now();
                // Autocommit: the INSERT is its own transaction, committed before it returns.
                client.execute(&insert, &[&key, &value]).await?;
                latencies.record_duration(begin.elapsed());
            }
            Ok::<_, tokio_postgres::Error>(latencies)
        }));
    }
    tokio::time::sleep(Duration::from_secs_f64(args.seconds)).await;
    stop.store(true, Ordering::Relaxed);
    let mut all = LatencyHistogram::new();
    for task in tasks {
        let latencies = task.await.map_err(|e| e.to_string())?.map_err(|e| e.to_string())?;
        all.merge(&latencies);
    }
    let elapsed = started.elapsed().as_secs_f64();
    Ok((all.count() as f64 / elapsed, all.quantile_ms(500), all.quantile_ms(990), all.count()))
}

fn main() {
    let args = <Args as clap::Parser>::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    if !args.json {
        println!("{}, {} B values, INSERT + COMMIT per record, synchronous_commit = on", args.url, args.record_bytes);
        println!("{:>11} {:>11} {:>9} {:>9}", "connections", "acked/s", "p50 ms", "p99 ms");
    }
    let mut runs = Vec::new();
    for &connections in &args.connections {
        match runtime.block_on(run(&args, connections)) {
            Ok((rate, p50, p99, acked)) => {
                if args.json {
                    runs.push(RunJson { connections, acked, acked_per_s: rate, latency_ms: LatencyMs { p50, p99 } });
                } else {
                    println!("{connections:>11} {rate:>11.0} {p50:>9.3} {p99:>9.3}");
                }
            }
            Err(message) => {
                eprintln!("pg_baseline: {connections} connections: {message}");
                std::process::exit(1);
            }
        }
    }
    if args.json {
        println!("{}", serde_json::json!({ "runs": runs }));
    }
}
