//! The floor under the S3 WAL's latency: raw request round trips against one server,
//! with the client the WAL uses (object_store, one HTTP/1 connection per request in flight).
//!
//!   eval "$(scripts/s3-server)"
//!   cargo run --release -p walab --example s3_floor -- --endpoint "$WALAB_S3_ENDPOINT" \
//!       [--bucket walab] [--seconds 3] [--bytes 4096] [--concurrency 1,4,16]
//!
//! For each concurrency C, C tasks loop for `--seconds` over one kind of request each
//! round; kinds: `put` (a new key, `If-None-Match: *`, as a WAL upload), `head` and `get`
//! (of one small object, as the fence check), and `put+head` (an upload followed by the
//! fence check, what one bulk costs). Prints requests/s and latency p50/p99 per kind.
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use object_store::aws::AmazonS3Builder;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};

use walab::latency::LatencyHistogram;

/// Raw request round trips against one S3-compatible server.
#[derive(clap::Parser, Debug)]
struct Args {
    #[arg(long)]
    endpoint: String,
    #[arg(long, default_value = "walab")]
    bucket: String,
    #[arg(long, default_value_t = 3.0)]
    seconds: f64,
    /// Bytes per uploaded object.
    #[arg(long, default_value_t = 4096)]
    bytes: usize,
    #[arg(long, value_delimiter = ',', default_value = "1,4,16")]
    concurrency: Vec<usize>,
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    Put,
    Head,
    Get,
    PutHead,
}

async fn once(store: &dyn ObjectStore, kind: Kind, small: &Path, key: &Path, body: &bytes::Bytes) {
    let create = || PutOptions::from(PutMode::Create);
    match kind {
        Kind::Put => {
            store.put_opts(key, PutPayload::from_bytes(body.clone()), create()).await.expect("put");
        }
        Kind::Head => {
            store.head(small).await.expect("head");
        }
        Kind::Get => {
            store.get(small).await.expect("get").bytes().await.expect("get body");
        }
        Kind::PutHead => {
            store.put_opts(key, PutPayload::from_bytes(body.clone()), create()).await.expect("put");
            store.head(small).await.expect("head");
        }
    }
}

fn main() {
    let Args { endpoint, bucket, seconds, bytes, concurrency } = <Args as clap::Parser>::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let store: Arc<dyn ObjectStore> = Arc::new(
        AmazonS3Builder::from_env()
            .with_endpoint(&endpoint)
            .with_allow_http(true)
            .with_region("us-east-1")
            .with_bucket_name(&bucket)
            .build()
            .expect("client"),
    );
    let run = format!("floor-{}", std::process::id());
    let small = Path::from(format!("{run}/registration"));
    runtime.block_on(store.put(&small, PutPayload::from(vec![7u8; 200]))).expect("put the small object");
    let body = bytes::Bytes::from(vec![0x5au8; bytes]);
    println!("{:>5} {:<9} {:>9} {:>8} {:>8}", "conc", "kind", "req/s", "p50 ms", "p99 ms");
    let next_key = Arc::new(AtomicU64::new(0));
    for &c in &concurrency {
        for kind in [Kind::Put, Kind::Head, Kind::Get, Kind::PutHead] {
            let stop = Arc::new(AtomicBool::new(false));
            let started = Instant::now();
            let tasks: Vec<_> = (0..c)
                .map(|_| {
                    let (store, stop, small, body, next_key, run) =
                        (Arc::clone(&store), Arc::clone(&stop), small.clone(), body.clone(), Arc::clone(&next_key), run.clone());
                    runtime.spawn(async move {
                        let mut lat = LatencyHistogram::new();
                        while !stop.load(Ordering::Relaxed) {
                            let key = Path::from(format!("{run}/o/{:012}", next_key.fetch_add(1, Ordering::Relaxed)));
                            let t = Instant::now();
                            once(store.as_ref(), kind, &small, &key, &body).await;
                            lat.record_duration(t.elapsed());
                        }
                        lat
                    })
                })
                .collect();
            std::thread::sleep(Duration::from_secs_f64(seconds));
            stop.store(true, Ordering::Relaxed);
            let mut lat = LatencyHistogram::new();
            for task in tasks {
                lat.merge(&runtime.block_on(task).expect("task"));
            }
            let elapsed = started.elapsed().as_secs_f64();
            let pct = |per_mille: u64| lat.quantile_ms(per_mille);
            println!(
                "{c:>5} {:<9} {:>9.0} {:>8.3} {:>8.3}",
                format!("{kind:?}").to_lowercase(),
                lat.count() as f64 / elapsed,
                pct(500),
                pct(990)
            );
        }
    }
}
