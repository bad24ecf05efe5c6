//! The floor under `walab serve`'s latency: an axum server with `serve`'s append route
//! that answers `{"offset": 0}` at once, touching no WAL, so that `walab load --http`
//! (or `walab bench --http`) against it measures the HTTP round trip and the client alone.
//!
//!   cargo run --release -p walab --example http_floor -- [--listen 127.0.0.1:0] [--threads 2]
//!   walab bench --http URL --writers 64 --seconds 5
//!
//! Prints `http_floor: listening on http://ADDR` on stderr and serves until killed.
use std::net::SocketAddr;

use axum::body::Bytes;
use axum::extract::Path;
use axum::routing::post;
use axum::Router;

#[derive(clap::Parser, Debug)]
struct Args {
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Worker threads of the server's runtime (`walab serve` uses one per core).
    #[arg(long)]
    threads: Option<usize>,
}

async fn append(Path(_stream): Path<String>, _body: Bytes) -> ([(&'static str, &'static str); 1], &'static str) {
    ([("content-type", "application/json")], "{\"offset\":0}")
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
        let router = Router::new().route("/streams/{stream}/records", post(append));
        axum::serve(listener, router).await.expect("serve");
    });
}
