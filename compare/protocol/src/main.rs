//! The load generator of `compare/protocol/run`: the same closed-loop client for
//! `walab serve`, the Durable Streams reference server and s2-lite.
//!
//!   walab-compare-protocol append --protocol ds|s2 --url http://127.0.0.1:P --producers 64 \
//!       [--streams K] [--batch B] [--message-bytes 100] [--seconds 10] [--idempotent] \
//!       [--requests-file FILE]
//!   walab-compare-protocol fanout --url http://127.0.0.1:P [--readers 1000] [--streams 1] \
//!       [--messages 200] [--interval-ms 20]
//!
//! One client for every server, so that a difference in the numbers is the servers'.
//! Every producer or reader holds one HTTP/1.1 connection (hyper, `TCP_NODELAY`), sends a
//! request only when the last was answered, and every latency goes into an HDR
//! histogram. Each command prints one JSON line on stdout and a summary on stderr; a
//! failed request stops the run with exit 1 naming it, a bad flag exits 2 (clap).

mod append;
mod conn;
mod fanout;
mod protocol;
mod sse;
mod stats;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

/// Worker threads of the client's runtime (as `walab bench --http`'s client).
const CLIENT_RUNTIME_THREADS: usize = 2;

#[derive(Parser)]
#[command(
    about = "One load generator for walab serve, the Durable Streams reference server and s2-lite"
)]
enum Command {
    /// Closed-loop producers append batches of messages; acked/s, latencies, S3 requests.
    Append(append::Args),
    /// SSE readers tail streams while a writer appends; delivery after acknowledgement.
    Fanout(fanout::Args),
}

fn main() -> ExitCode {
    let command = Command::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(CLIENT_RUNTIME_THREADS)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("walab-compare-protocol: cannot start the runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match command {
            Command::Append(args) => append::run(args).await.map(|report| {
                (
                    serde_json::to_string(&report).expect("plain data serializes"),
                    report.summary(),
                )
            }),
            Command::Fanout(args) => fanout::run(args).await.map(|report| {
                (
                    serde_json::to_string(&report).expect("plain data serializes"),
                    report.summary(),
                )
            }),
        }
    });
    // Connections still open (readers that were stopped) end with the runtime.
    runtime.shutdown_background();
    match result {
        Ok((json, summary)) => {
            let _ = writeln!(std::io::stdout().lock(), "{json}");
            eprintln!("{summary}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("walab-compare-protocol: {error}");
            ExitCode::FAILURE
        }
    }
}
