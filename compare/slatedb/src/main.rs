//! SlateDB durable-put benchmark on an S3-compatible server, for issue 7's comparison.
//!
//!   walab-compare-slatedb --endpoint http://127.0.0.1:P --bucket B --prefix P \
//!       --writers 64 --seconds 10 --value-bytes 100 [--flush-ms 1]
//!
//! Credentials come from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY. Each of `writers`
//! tasks loops: `db.put(key, value)` then `handle.await_durable()` (in slatedb 0.18 `put`
//! returns once the write is in the in-memory WAL; durability is the WriteHandle's
//! `await_durable`, which resolves when the WAL object holding the write is stored).
//! Without --flush-ms the flush interval is SlateDB's default (Settings::default()).
//! Prints one JSON line: durable puts/s and latency p50/p99 in ms.
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use object_store::aws::AmazonS3Builder;
use object_store::ObjectStore;
use slatedb::{Db, Settings};

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter().position(|a| a == name).map(|i| args[i + 1].clone())
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let endpoint = arg(&args, "--endpoint").expect("--endpoint URL");
    let bucket = arg(&args, "--bucket").unwrap_or_else(|| "walab".into());
    let prefix = arg(&args, "--prefix").unwrap_or_else(|| "slatedb".into());
    let writers: usize = arg(&args, "--writers").map_or(64, |s| s.parse().unwrap());
    let seconds: f64 = arg(&args, "--seconds").map_or(10.0, |s| s.parse().unwrap());
    let value_bytes: usize = arg(&args, "--value-bytes").map_or(100, |s| s.parse().unwrap());
    let flush_ms: Option<u64> = arg(&args, "--flush-ms").map(|s| s.parse().unwrap());

    let store: Arc<dyn ObjectStore> = Arc::new(
        AmazonS3Builder::new()
            .with_endpoint(&endpoint)
            .with_allow_http(true)
            .with_region("us-east-1")
            .with_bucket_name(&bucket)
            .with_access_key_id(std::env::var("AWS_ACCESS_KEY_ID").expect("AWS_ACCESS_KEY_ID"))
            .with_secret_access_key(
                std::env::var("AWS_SECRET_ACCESS_KEY").expect("AWS_SECRET_ACCESS_KEY"),
            )
            .build()
            .expect("object store"),
    );
    let mut settings = Settings::default();
    let default_flush = settings.flush_interval;
    if let Some(ms) = flush_ms {
        settings.flush_interval = Some(Duration::from_millis(ms));
    }
    let flush_interval = settings.flush_interval;
    let db = Arc::new(
        Db::builder(prefix.as_str(), store)
            .with_settings(settings)
            .build()
            .await
            .expect("open slatedb"),
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
            let mut lat = Vec::new();
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let key = format!("w{w:05}-{i:012}");
                let t = Instant::now();
                let h = db.put(key.as_bytes(), &value).await.expect("put");
                h.await_durable().await.expect("await_durable");
                lat.push(t.elapsed().as_secs_f64() * 1e3);
                i += 1;
            }
            lat
        }));
    }
    tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
    stop.store(true, Ordering::Relaxed);
    let mut lat = Vec::new();
    for t in tasks {
        lat.extend(t.await.expect("writer task"));
    }
    let elapsed = start.elapsed().as_secs_f64();
    db.close().await.expect("close");
    lat.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let pct = |p: f64| {
        if lat.is_empty() {
            f64::NAN
        } else {
            lat[((lat.len() as f64 - 1.0) * p).round() as usize]
        }
    };
    let out = serde_json::json!({
        "system": "slatedb",
        "slatedb_version": "0.18.0",
        "writers": writers,
        "value_bytes": value_bytes,
        "flush_interval_ms": flush_interval.map(|d| d.as_secs_f64() * 1e3),
        "default_flush_interval_ms": default_flush.map(|d| d.as_secs_f64() * 1e3),
        "seconds": elapsed,
        "durable_puts": lat.len(),
        "durable_puts_per_s": lat.len() as f64 / elapsed,
        "latency_ms": { "p50": pct(0.50), "p99": pct(0.99) },
    });
    println!("{out}");
}
