//! SlateDB durable-put benchmark on an S3-compatible server, beside walab's S3 WAL.
//!
//!   walab-compare-slatedb --endpoint http://127.0.0.1:P --bucket B --prefix P \
//!       --writers 64 --seconds 10 --value-bytes 100 [--flush-ms 1]
//!
//! Credentials come from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY. Each of `writers`
//! tasks loops: `db.put(key, value)` then `handle.await_durable()` (in slatedb 0.18 `put`
//! returns once the write is in the in-memory WAL; durability is the WriteHandle's
//! `await_durable`, which resolves when the WAL object holding the write is stored).
//! Without --flush-ms the flush interval is SlateDB's default (Settings::default()).
//! Latencies go into an HDR histogram (microseconds). Prints one JSON line: durable
//! puts/s and latency p50/p99 in ms.
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use hdrhistogram::Histogram;
use object_store::aws::AmazonS3Builder;
use object_store::ObjectStore;
use slatedb::{Db, Settings};

#[derive(Parser)]
#[command(about = "SlateDB 0.18.0: closed-loop writers, each put awaited until durable")]
struct Args {
    /// S3-compatible endpoint, e.g. http://127.0.0.1:9000
    #[arg(long)]
    endpoint: String,
    /// Bucket
    #[arg(long, default_value = "walab")]
    bucket: String,
    /// Path prefix of the database inside the bucket
    #[arg(long, default_value = "slatedb")]
    prefix: String,
    /// Concurrent writer tasks
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    writers: u32,
    /// Seconds to run
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
    /// Bytes per value
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=(64 << 20)))]
    value_bytes: u32,
    /// SlateDB's WAL flush interval in ms (SlateDB's default when absent)
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    flush_ms: Option<u64>,
}

fn new_histogram() -> Histogram<u64> {
    // 1 us to 1 hour, 3 significant digits.
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("constant histogram bounds")
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    match run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("walab-compare-slatedb: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), String> {
    if !(args.seconds.is_finite() && args.seconds > 0.0) {
        return Err(format!("--seconds must be a positive number of seconds, not {}", args.seconds));
    }
    let env = |name: &str| std::env::var(name).map_err(|_| format!("{name} is not set (the S3 server's credentials)"));
    let (endpoint, bucket, prefix) = (&args.endpoint, &args.bucket, &args.prefix);
    let (writers, value_bytes) = (args.writers as usize, args.value_bytes as usize);
    let store: Arc<dyn ObjectStore> = Arc::new(
        AmazonS3Builder::new()
            .with_endpoint(endpoint)
            .with_allow_http(true)
            .with_region("us-east-1")
            .with_bucket_name(bucket)
            .with_access_key_id(env("AWS_ACCESS_KEY_ID")?)
            .with_secret_access_key(env("AWS_SECRET_ACCESS_KEY")?)
            .build()
            .map_err(|e| format!("object store for {endpoint}: {e}"))?,
    );
    let mut settings = Settings::default();
    let default_flush = settings.flush_interval;
    if let Some(ms) = args.flush_ms {
        settings.flush_interval = Some(Duration::from_millis(ms));
    }
    let flush_interval = settings.flush_interval;
    let db = Arc::new(
        Db::builder(prefix.as_str(), store)
            .with_settings(settings)
            .build()
            .await
            .map_err(|e| format!("cannot open SlateDB at {bucket}/{prefix}: {e}"))?,
    );

    let stop = Arc::new(AtomicBool::new(false));
    let value = vec![0x5au8; value_bytes];
    let start = Instant::now();
    let mut tasks = Vec::with_capacity(writers);
    for w in 0..writers {
        let db = db.clone();
        let stop = stop.clone();
        let value = value.clone();
        tasks.push(tokio::spawn(async move {
            let mut hist = new_histogram();
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let key = format!("w{w:05}-{i:012}");
                let t = Instant::now();
                let h = db.put(key.as_bytes(), &value).await.map_err(|e| format!("put: {e}"))?;
                h.await_durable().await.map_err(|e| format!("await_durable: {e}"))?;
                hist.saturating_record(t.elapsed().as_micros() as u64);
                i += 1;
            }
            Ok::<_, String>(hist)
        }));
    }
    tokio::time::sleep(Duration::from_secs_f64(args.seconds)).await;
    stop.store(true, Ordering::Relaxed);
    let mut hist = new_histogram();
    for t in tasks {
        let h = t.await.map_err(|e| format!("a writer task failed: {e}"))??;
        hist.add(&h).map_err(|e| format!("merging histograms: {e}"))?;
    }
    let elapsed = start.elapsed().as_secs_f64();
    db.close().await.map_err(|e| format!("close: {e}"))?;
    let pct = |q: f64| hist.value_at_quantile(q) as f64 / 1e3;
    let out = serde_json::json!({
        "system": "slatedb",
        "slatedb_version": "0.18.0",
        "writers": writers,
        "value_bytes": value_bytes,
        "flush_interval_ms": flush_interval.map(|d| d.as_secs_f64() * 1e3),
        "default_flush_interval_ms": default_flush.map(|d| d.as_secs_f64() * 1e3),
        "seconds": elapsed,
        "durable_puts": hist.len(),
        "durable_puts_per_s": hist.len() as f64 / elapsed,
        "latency_ms": { "p50": pct(0.50), "p99": pct(0.99) },
    });
    println!("{out}");
    Ok(())
}
