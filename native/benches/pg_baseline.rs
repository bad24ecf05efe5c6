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

struct Args {
    url: String,
    connections: Vec<usize>,
    seconds: f64,
    record_bytes: usize,
    json: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        url: "postgres://postgres@127.0.0.1:5432/test".to_string(),
        connections: vec![64],
        seconds: 10.0,
        record_bytes: 100,
        json: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name}: needs a value"));
        match arg.as_str() {
            "--url" => args.url = value("--url")?,
            "--connections" => {
                args.connections = value("--connections")?
                    .split(',')
                    .map(|n| n.parse().map_err(|_| format!("--connections: {n:?} is not a number")))
                    .collect::<Result<_, _>>()?
            }
            "--seconds" => args.seconds = value("--seconds")?.parse().map_err(|_| "--seconds: not a number")?,
            "--record-bytes" => {
                args.record_bytes = value("--record-bytes")?.parse().map_err(|_| "--record-bytes: not a number")?
            }
            "--json" => args.json = true,
            "--bench" => {} // cargo bench passes this
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(args)
}

/// Latencies in microseconds, sorted at the end (a bench, not a long run: fine in memory).
fn quantile(sorted: &[u64], per_mille: usize) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (per_mille * sorted.len()).div_ceil(1000).max(1);
    sorted[rank - 1] as f64 / 1000.0
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
            let mut latencies_us = Vec::new();
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let key = format!("c{c}-{n}");
                n += 1;
                let begin = Instant::now();
                // Autocommit: the INSERT is its own transaction, committed before it returns.
                client.execute(&insert, &[&key, &value]).await?;
                latencies_us.push(begin.elapsed().as_micros() as u64);
            }
            Ok::<_, tokio_postgres::Error>(latencies_us)
        }));
    }
    tokio::time::sleep(Duration::from_secs_f64(args.seconds)).await;
    stop.store(true, Ordering::Relaxed);
    let mut all = Vec::new();
    for task in tasks {
        let latencies = task.await.map_err(|e| e.to_string())?.map_err(|e| e.to_string())?;
        all.extend(latencies);
    }
    let elapsed = started.elapsed().as_secs_f64();
    all.sort_unstable();
    Ok((all.len() as f64 / elapsed, quantile(&all, 500), quantile(&all, 990), all.len() as u64))
}

fn main() {
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("pg_baseline: {message}");
            std::process::exit(2);
        }
    };
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
                    runs.push(format!(
                        "{{\"connections\": {connections}, \"acked\": {acked}, \"acked_per_s\": {rate:.1}, \"latency_ms\": {{\"p50\": {p50:.3}, \"p99\": {p99:.3}}}}}"
                    ));
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
        println!("{{\"runs\": [{}]}}", runs.join(", "));
    }
}
