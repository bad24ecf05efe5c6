//! `walab serve`: the stream store over HTTP (see [`crate::serve`]).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use walab_core::stream_store::upload::SealPolicy;
use walab_core::time::Nanos;

use crate::cli_error::CliError;
use crate::serve::meta_log::MetaLog;
use crate::serve::objects::Objects;
use crate::serve::uploader::{CrashPoint, Uploader};
use crate::serve::{http, Store};
use crate::wal::file::node_dir;
use crate::wal::url::{parse_wal_url, WalArgs, WalUrl};
use crate::wal::{Wal, WalOptions};

use super::common::open_failure;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    wal: WalArgs,
    /// Where committed objects go: file:///DIR or s3://BUCKET/PATH (--endpoint applies).
    /// Default for a file:// WAL: DIR/<cluster>/<node>.serve/ beside the WAL.
    #[arg(long, value_name = "URL")]
    objects: Option<String>,
    /// The metadata log: file:///DIR (a walab file WAL). Default for a file:// WAL:
    /// DIR/<cluster>/<node>.serve/meta beside the WAL.
    #[arg(long, value_name = "URL")]
    meta: Option<String>,
    /// The address to take HTTP requests on (port 0: any free port, printed at start).
    #[arg(long, default_value = "127.0.0.1:7070")]
    listen: String,
    /// Seal a block for upload once this many record bytes are pending (also a block's
    /// most bytes).
    #[arg(long, value_name = "BYTES", default_value_t = 8 << 20)]
    block_bytes: usize,
    /// Seal a block once its oldest record has waited this long.
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    block_ms: u64,
    /// A stream's run of at least this many bytes in a block gets an object of its own.
    #[arg(long, value_name = "BYTES", default_value_t = 1 << 20)]
    stream_object_bytes: usize,
    /// Worker threads of the HTTP runtime (default: one per core).
    #[arg(long, value_name = "N")]
    http_threads: Option<usize>,
    /// A fault for crash tests: abort an upload at this point (before-commit: after its
    /// PUTs; after-commit: after its commit, before the WAL is confirmed).
    #[arg(long, hide = true, value_enum, value_name = "POINT")]
    crash_at: Option<CrashPoint>,
    /// A fault that breaks a promise, for the crash test's own test (`crash-test --serve`
    /// must report it).
    #[arg(long, hide = true, value_enum, value_name = "FAULT")]
    fault: Option<Fault>,
}

/// A broken server, for showing that `walab crash-test --serve` notices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Fault {
    /// Start from the metadata log alone, ignoring the WAL's records past the committed
    /// ends: acknowledged appends not yet uploaded are lost, and their producers' seqs
    /// forgotten.
    SkipWalReplay,
}

/// Where the metadata log and the objects go when no flag says.
fn beside_the_wal(args: &Args, what: &str) -> Result<PathBuf, CliError> {
    match parse_wal_url(&args.wal.wal).map_err(CliError::usage)? {
        WalUrl::File(base) => {
            let node = node_dir(&base, &args.wal.cluster, &args.wal.node);
            let mut dir = node.into_os_string();
            dir.push(".serve");
            Ok(PathBuf::from(dir))
        }
        _ => Err(CliError::usage(format!("--{what}: needed with a WAL that is not file:// (use file:///DIR)"))),
    }
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    crate::wal::limit_malloc_arenas();
    let listen: SocketAddr = args
        .listen
        .parse()
        .map_err(|_| CliError::usage(format!("--listen {}: not an address such as 127.0.0.1:7070", args.listen)))?;
    if args.block_bytes < 1024 || args.block_ms == 0 || args.block_ms > 3_600_000 {
        return Err(CliError::usage("--block-bytes at least 1024, --block-ms between 1 and 3600000"));
    }
    if args.http_threads.is_some_and(|threads| !(1..=256).contains(&threads)) {
        return Err(CliError::usage("--http-threads: must be between 1 and 256"));
    }
    let policy = SealPolicy {
        block_bytes: args.block_bytes,
        block_age: Nanos(args.block_ms * 1_000_000),
        stream_object_bytes: args.stream_object_bytes,
    };
    let meta_dir = match &args.meta {
        Some(url) => match parse_wal_url(url).map_err(|error| CliError::usage(error.replace("--wal", "--meta")))? {
            WalUrl::File(dir) => dir,
            _ => return Err(CliError::usage(format!("--meta {url}: only file:///DIR for now"))),
        },
        None => beside_the_wal(&args, "meta")?.join("meta"),
    };
    let objects = match &args.objects {
        Some(url) => Objects::from_url(url, args.wal.endpoint.as_deref()).map_err(CliError::usage)?,
        None => Objects::local(beside_the_wal(&args, "objects")?).map_err(CliError::usage)?,
    };
    let objects = Arc::new(objects);
    let backend = args.wal.backend(true).map_err(CliError::usage)?;
    let meta = MetaLog::open(meta_dir).map_err(CliError::failed)?;
    // The WAL is opened (and recovered) before the runtime starts: a backend with a
    // runtime of its own must not be opened from inside another.
    let (wal, mut recovered) = Wal::open(backend, WalOptions::default()).map_err(open_failure)?;
    if args.fault == Some(Fault::SkipWalReplay) {
        recovered.records.clear();
    }
    let store = Arc::new(Store::recover(wal, recovered, meta.state(), Arc::clone(&objects)).map_err(CliError::failed)?);
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if let Some(threads) = args.http_threads {
        runtime.worker_threads(threads);
    }
    let runtime = runtime
        .enable_all()
        .thread_name("walab-serve")
        .build()
        .map_err(|error| CliError::failed(format!("serve: cannot start the runtime: {error}")))?;
    let mut uploader = Uploader { store: Arc::clone(&store), meta, objects, policy, crash_at: args.crash_at };
    runtime.block_on(async move {
        let expired = uploader.expire_orphans().await.map_err(CliError::failed)?;
        if expired > 0 {
            eprintln!("walab serve: expired {expired} object ids reserved by an upload that never committed");
        }
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .map_err(|error| CliError::usage(format!("--listen {listen}: {error}")))?;
        let bound = listener.local_addr().map_err(|error| CliError::failed(format!("--listen {listen}: {error}")))?;
        tokio::spawn(uploader.run());
        eprintln!("walab serve: listening on http://{bound}");
        axum::serve(listener, http::router(store))
            .await
            .map_err(|error| CliError::failed(format!("serve: http://{bound}: {error}")))
    })?;
    Ok(ExitCode::SUCCESS)
}
