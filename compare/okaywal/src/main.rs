//! okaywal 0.3.1 durable-append benchmark, the okaywal side of compare/okaywal/run.
//!
//!   walab-compare-okaywal --dir DIR --writers 64 --seconds 10 --record-bytes 100
//!
//! Opens a fresh okaywal log in DIR (default configuration: 1 MiB preallocated segments)
//! and runs `writers` OS threads, closed loop: each begins an entry, writes one
//! `record-bytes` chunk and calls `EntryWriter::commit`, which returns once the entry is
//! synced to disk (okaywal groups the commits of concurrent writers into one
//! `sync_data`). The commit's latency goes into an HDR histogram (microseconds).
//! The log manager checkpoints nothing (okaywal's `LogVoid`): segments are recycled
//! without an extra write, the cheapest a checkpoint can be.
//! Prints one JSON line: acknowledged appends/s and latency p50/p99 in ms.
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use hdrhistogram::Histogram;
use okaywal::{LogVoid, WriteAheadLog};

#[derive(Parser)]
#[command(about = "okaywal 0.3.1: closed-loop writers, each entry committed (synced) before the next")]
struct Args {
    /// Directory for the log (created if missing; should be empty)
    #[arg(long)]
    dir: PathBuf,
    /// Concurrent writer threads
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    writers: u32,
    /// Seconds to run
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
    /// Bytes per entry (one chunk)
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=(64 << 20)))]
    record_bytes: u32,
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("walab-compare-okaywal: {e}");
            ExitCode::FAILURE
        }
    }
}

fn new_histogram() -> Histogram<u64> {
    // 1 us to 1 hour, 3 significant digits.
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("constant histogram bounds")
}

fn run(args: &Args) -> Result<(), String> {
    if !(args.seconds.is_finite() && args.seconds > 0.0) {
        return Err(format!("--seconds must be a positive number of seconds, not {}", args.seconds));
    }
    let wal = Arc::new(
        WriteAheadLog::recover(&args.dir, LogVoid)
            .map_err(|e| format!("cannot open an okaywal log in {}: {e}", args.dir.display()))?,
    );
    let stop = Arc::new(AtomicBool::new(false));
    let record = vec![0x5au8; args.record_bytes as usize];
    let start = Instant::now();
    let mut threads = Vec::with_capacity(args.writers as usize);
    for _ in 0..args.writers {
        let wal = wal.clone();
        let stop = stop.clone();
        let record = record.clone();
        threads.push(std::thread::spawn(move || -> std::io::Result<Histogram<u64>> {
            let mut hist = new_histogram();
            while !stop.load(Ordering::Relaxed) {
                let t = Instant::now();
                let mut entry = wal.begin_entry()?;
                entry.write_chunk(&record)?;
                entry.commit()?;
                hist.saturating_record(t.elapsed().as_micros() as u64);
            }
            Ok(hist)
        }));
    }
    std::thread::sleep(Duration::from_secs_f64(args.seconds));
    stop.store(true, Ordering::Relaxed);
    let mut hist = new_histogram();
    for t in threads {
        let h = t
            .join()
            .map_err(|_| "a writer thread panicked".to_string())?
            .map_err(|e| format!("append failed: {e}"))?;
        hist.add(&h).map_err(|e| format!("merging histograms: {e}"))?;
    }
    let elapsed = start.elapsed().as_secs_f64();
    drop(wal);
    let ms = |q: f64| hist.value_at_quantile(q) as f64 / 1e3;
    let out = serde_json::json!({
        "system": "okaywal",
        "okaywal_version": "0.3.1",
        "writers": args.writers,
        "record_bytes": args.record_bytes,
        "seconds": elapsed,
        "acked": hist.len(),
        "acked_per_s": hist.len() as f64 / elapsed,
        "latency_ms": { "p50": ms(0.50), "p99": ms(0.99), "max": hist.max() as f64 / 1e3 },
    });
    println!("{out}");
    Ok(())
}
