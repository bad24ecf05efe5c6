//! The floor under `walab serve`'s latency: an axum server with the Durable Streams
//! protocol's create and append routes (`PUT` and `POST` at `/v1/stream/{name}`) that
//! answer at once, touching no WAL, so that `walab load --http` (or `walab bench --http`)
//! against it measures the HTTP round trip and the client alone.
//!
//!   cargo run --release -p walab --example http_floor -- [--listen 127.0.0.1:0] [--threads 2]
//!   walab bench --http URL --writers 64 --seconds 5
//!
//! Prints `http_floor: listening on http://ADDR` on stderr and serves until killed.
use std::net::SocketAddr;

use axum::body::Bytes;
use axum::extract::Path;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::put;
use axum::Router;

#[derive(clap::Parser, Debug)]
struct Args {
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Worker threads of the server's runtime (`walab serve` uses one per core).
    #[arg(long)]
    threads: Option<usize>,
}

/// Where every answer says the stream ends.
const NEXT_OFFSET: &str = "0000000000000001_0000000000000001";

async fn create(Path(_stream): Path<String>) -> (StatusCode, [(&'static str, &'static str); 1]) {
    (StatusCode::CREATED, [("stream-next-offset", NEXT_OFFSET)])
}

async fn append(Path(_stream): Path<String>, headers: HeaderMap, _body: Bytes) -> (StatusCode, HeaderMap) {
    let mut answer = HeaderMap::new();
    answer.insert("stream-next-offset", NEXT_OFFSET.parse().expect("a header value"));
    // A producer's request is a fresh append (200) with its epoch and seq echoed.
    let status = match (headers.get("producer-epoch"), headers.get("producer-seq")) {
        (Some(epoch), Some(seq)) => {
            answer.insert("producer-epoch", epoch.clone());
            answer.insert("producer-seq", seq.clone());
            StatusCode::OK
        }
        _ => StatusCode::NO_CONTENT,
    };
    (status, answer)
}

fn main() {
    let args = <Args as clap::Parser>::parse();
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(threads) = args.threads {
        builder.worker_threads(threads);
    }
    let runtime = builder.enable_all().build().expect("a runtime");
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(args.listen).await.expect("bind");
        eprintln!("http_floor: listening on http://{}", listener.local_addr().expect("an address"));
        let router = Router::new().route("/v1/stream/{*stream}", put(create).post(append));
        axum::serve(listener, router).await.expect("serve");
    });
}
