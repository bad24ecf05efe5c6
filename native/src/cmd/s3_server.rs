//! `walab s3-server`: the S3 test server ([`crate::s3_server`]) as a process, for
//! `scripts/s3-server`, the benchmarks and trying the S3 WAL by hand.
//!
//! It serves until it is killed. Faults given as flags are counted from the server's
//! first PUT; a test that needs them at a moment of its own choosing starts the server
//! in-process instead (`wal::s3::local_server`).

use std::io::Write;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use crate::cli_error::CliError;
use crate::s3_server::faults::{parse_put_number, parse_stall};
use crate::s3_server::{serve, Control, LatencyProfile, ServerConfig};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// Port to listen on (0: any free port; the line printed at start names it).
    #[arg(long, default_value_t = 0)]
    port: u16,
    #[arg(long, default_value = "walab")]
    access_key: String,
    #[arg(long, default_value = "walab-secret-key")]
    secret_key: String,
    /// Request latency: none, s3-standard, s3-express, or a file of measured latencies
    /// (lines `KIND MS`, kinds put, head, get, list, delete).
    #[arg(long, default_value = "none")]
    latency: String,
    /// Seeds the latency draws.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Check conditional PUTs and write them without the per-key lock (s3s-fs's race;
    /// only to show it).
    #[arg(long)]
    no_lock: bool,
    /// Fail the Nth PUT with 500 InternalError (repeatable).
    #[arg(long, value_name = "N")]
    fail_put: Vec<String>,
    /// Hold the Nth PUT MS milliseconds between its check and its write (repeatable).
    #[arg(long, value_name = "N:MS")]
    stall_put: Vec<String>,
    /// Close the Nth PUT's connection without an answer, before writing (repeatable).
    #[arg(long, value_name = "N")]
    drop_put: Vec<String>,
    /// Write the Nth PUT, then close its connection without an answer (repeatable).
    #[arg(long, value_name = "N")]
    drop_put_reply: Vec<String>,
    /// Keep the requests received so far, by kind (lines `KIND N`), in this file,
    /// rewritten every 100 ms: what a benchmark reads before and after a run.
    #[arg(long, value_name = "PATH")]
    requests_file: Option<PathBuf>,
    /// Directory whose sub-directories are the buckets.
    root: PathBuf,
}

/// How often `--requests-file` is rewritten.
const REQUESTS_FILE_INTERVAL: std::time::Duration = std::time::Duration::from_millis(100);

/// Rewrites `path` with the request counts every [`REQUESTS_FILE_INTERVAL`], whole
/// (written beside it, then renamed over it), for as long as the server runs.
fn keep_requests_file(path: PathBuf, control: Arc<Control>) -> Result<(), CliError> {
    let mut partial = path.clone().into_os_string();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    let write = move || std::fs::write(&partial, control.requests_text()).and_then(|()| std::fs::rename(&partial, &path));
    write().map_err(|error| CliError::usage(format!("--requests-file: cannot write it: {error}")))?;
    std::thread::Builder::new()
        .name("requests-file".to_string())
        .spawn(move || loop {
            std::thread::sleep(REQUESTS_FILE_INTERVAL);
            let _ = write();
        })
        .map_err(|error| CliError::failed(format!("cannot start the requests file's thread: {error}")))?;
    Ok(())
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let latency = LatencyProfile::parse(&args.latency).map_err(|error| CliError::usage(format!("--latency {error}")))?;
    if !args.root.is_dir() {
        return Err(CliError::usage(format!("{}: not a directory", args.root.display())));
    }
    let control = Arc::new(Control::default());
    control.set_locking(!args.no_lock);
    for text in &args.fail_put {
        control.fail_put(parse_put_number("--fail-put", text).map_err(CliError::usage)?);
    }
    for text in &args.stall_put {
        let (nth, stall) = parse_stall(text).map_err(CliError::usage)?;
        control.stall_put(nth, stall);
    }
    for text in &args.drop_put {
        control.drop_put_connection(parse_put_number("--drop-put", text).map_err(CliError::usage)?, false);
    }
    for text in &args.drop_put_reply {
        control.drop_put_connection(parse_put_number("--drop-put-reply", text).map_err(CliError::usage)?, true);
    }
    if let Some(path) = &args.requests_file {
        keep_requests_file(path.clone(), Arc::clone(&control))?;
    }
    let listener = TcpListener::bind((args.host.as_str(), args.port))
        .map_err(|error| CliError::usage(format!("{}:{}: cannot listen: {error}", args.host, args.port)))?;
    let address = listener.local_addr().map_err(|error| CliError::failed(format!("cannot read the address: {error}")))?;
    let mut config = ServerConfig::new(&args.root, &args.access_key, &args.secret_key);
    config.latency = latency;
    config.seed = args.seed;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|error| CliError::failed(format!("cannot start the runtime: {error}")))?;
    let _ = writeln!(
        std::io::stdout().lock(),
        "s3-server: http://{address} root {} latency {} lock {}",
        args.root.display(),
        config.latency,
        if args.no_lock { "off" } else { "on" }
    );
    runtime.block_on(serve(&config, control, listener)).map_err(CliError::failed)?;
    Ok(ExitCode::SUCCESS)
}
