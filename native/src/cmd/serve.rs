//! `walab serve`: the stream store over HTTP (see [`crate::serve`]).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use walab_core::codec::tiny::TinyRecord;
use walab_core::session::preset::OBJECT_STORE_BEHIND_HTTP_PIPELINE_ROUND_TRIP_PERCENT;
use walab_core::stream_store::meta::MetaCommand;
use walab_core::stream_store::upload::SealPolicy;
use walab_core::time::Nanos;

use crate::cli_error::CliError;
use crate::serve::meta_log::{self, MetaLog};
use crate::serve::objects::Objects;
use crate::serve::uploader::{CrashPoint, Uploader};
use crate::serve::store::EXPIRY_SWEEP_EVERY;
use crate::serve::store::{Found, Replay};
use crate::serve::{http, Store};
use crate::wal::file::node_dir;
use crate::wal::url::{parse_wal_url, with_default_s3_option, WalArgs, WalUrl};
use crate::wal::live::LiveTrace;
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
    /// The metadata log, a walab WAL of its own: file:///DIR, postgres://... or
    /// s3://BUCKET/PATH (there as node <node>_meta of --cluster, so it may share the
    /// data WAL's URL). Default for a file:// WAL: DIR/<cluster>/<node>.serve/meta
    /// beside the WAL; needed with any other WAL.
    #[arg(long, value_name = "URL")]
    meta: Option<String>,
    /// The address to take HTTP requests on (port 0: any free port, printed at start).
    #[arg(long, default_value = "127.0.0.1:7070")]
    listen: String,
    /// Seal a block for upload once this many record bytes are pending (also a block's
    /// most bytes).
    #[arg(long, value_name = "BYTES", default_value_t = 8 << 20)]
    block_bytes: usize,
    /// Seal a block once its oldest record has waited this long (default 1000, 5000 with
    /// --objects on s3://).
    #[arg(long, value_name = "MS")]
    block_ms: Option<u64>,
    /// Objects are compacted (small ones of one size tier rewritten together) up to this
    /// many data bytes.
    #[arg(long, value_name = "BYTES", default_value_t = crate::serve::uploader::COMPACT_BYTES_DEFAULT)]
    compact_bytes: u64,
    /// A stream's run of at least this many bytes in a block gets an object of its own.
    #[arg(long, value_name = "BYTES", default_value_t = 1 << 20)]
    stream_object_bytes: usize,
    /// Worker threads of the HTTP runtime (default: one per core).
    #[arg(long, value_name = "N")]
    http_threads: Option<usize>,
    /// How long a long-poll with nothing new waits before it answers 204.
    #[arg(long, value_name = "MS", default_value_t = 10_000)]
    long_poll_ms: u64,
    /// How long an SSE connection stays open before the server closes it (the client
    /// reconnects from its last offset).
    #[arg(long, value_name = "MS", default_value_t = 60_000)]
    sse_connection_ms: u64,
    /// Snapshot the metadata log after this many of its records (two per upload), once
    /// they hold at least the last snapshot's bytes; the records before a snapshot are
    /// trimmed.
    #[arg(long, value_name = "RECORDS", default_value_t = meta_log::SNAPSHOT_EVERY_DEFAULT)]
    meta_snapshot_every: u64,
    /// The lab's page to serve at / (a built dist/ holding index.html; `GET /trace` is
    /// the live trace it draws). Default: ./dist if it holds index.html, else no page.
    #[arg(long, value_name = "DIR")]
    page: Option<PathBuf>,
    /// A fault for crash tests: abort an upload at this point (before-commit: after its
    /// PUTs; after-commit: after its commit, before the WAL is confirmed).
    #[arg(long, hide = true, value_enum, value_name = "POINT")]
    crash_at: Option<CrashPoint>,
    /// A fault that breaks a promise, for the crash test's own test (`crash-test --serve`
    /// must report it).
    #[arg(long, hide = true, value_enum, value_name = "FAULT")]
    fault: Option<Fault>,
    /// Switches pieces of the WAL's tuning off, as `walab bench --untune` does, to measure
    /// what each buys behind the server (BENCHMARKS.md). For measurement only.
    #[arg(long, value_enum, value_delimiter = ',', hide = true)]
    untune: Vec<crate::wal::os::Tuning>,
}

/// `--block-ms` unless given.
const BLOCK_MS_DEFAULT: u64 = 1000;

/// `--block-ms` unless given when the objects go to an object store. Each upload costs
/// requests whatever it carries: its objects' PUTs and the two records of its commit in
/// the metadata log. At one a second that was 3 to 4 requests a second (0.002 a message at
/// 64 producers, a tenth of all of walab's requests there); a block waiting five seconds
/// costs a fifth of that, and nothing a reader sees: until it is uploaded a record is
/// durable in the WAL and served from the log cache (BENCHMARKS.md).
const OBJECT_STORE_BLOCK_MS_DEFAULT: u64 = 5000;

/// The fence `walab serve` gives an `s3://` WAL whose URL names none: the lease, rather
/// than the S3 WAL's own default (`fence=read`). Under `fence=read` every append waits
/// for a registration read after its PUT: two round trips where s2-lite's append takes
/// its flush interval and one, and twice the requests (p50 67 ms against s2-lite's 51 at
/// one producer; BENCHMARKS.md). The lease acknowledges on the PUT alone, under the
/// clock assumption of `walab_core::remote::lease` (every clock within `skew`, 1 s, of
/// true time); its price is at start: a server taking over a crashed one's log waits out
/// that one's lease (10 s) before it serves. `?fence=read` keeps the read.
const SERVE_S3_FENCE: (&str, &str) = ("fence", "lease");

/// A broken server, for showing that `walab crash-test --serve` notices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Fault {
    /// Start from the metadata log alone, ignoring the WAL's records past the committed
    /// ends: acknowledged appends not yet uploaded are lost, and their producers' seqs
    /// forgotten.
    SkipWalReplay,
}

/// Where the metadata log and the objects go when no flag says: beside a file WAL.
/// Any other WAL lives where this machine's disk is not, so nothing is guessed for it:
/// the refusal names each flag to add.
fn beside_the_wal(args: &Args) -> Result<PathBuf, CliError> {
    match parse_wal_url(&args.wal.wal).map_err(CliError::usage)? {
        WalUrl::File(base) => {
            let node = node_dir(&base, &args.wal.cluster, &args.wal.node);
            let mut dir = node.into_os_string();
            dir.push(".serve");
            Ok(PathBuf::from(dir))
        }
        _ => {
            let missing: Vec<&str> = [("--meta URL", args.meta.is_none()), ("--objects URL", args.objects.is_none())]
                .into_iter()
                .filter_map(|(flag, missing)| missing.then_some(flag))
                .collect();
            Err(CliError::usage(format!(
                "--wal {}: a WAL that is not file:// needs {}: the metadata log on postgres://..., \
                 s3://BUCKET/PATH or file:///DIR, the objects on s3://BUCKET/PATH or file:///DIR",
                args.wal.wal,
                missing.join(" and ")
            )))
        }
    }
}

/// What the server found at start, in one line: the metadata log (new, or its streams and
/// objects) and what the WAL's recovery gave back.
fn found_at_start(meta: &str, new_meta: bool, objects: usize, wal: &str, wal_records: usize, found: &Found) -> String {
    let plural = |count: u64, one: &str, many: &str| format!("{count} {}", if count == 1 { one } else { many });
    let log = if new_meta {
        format!("the metadata log {meta} is new, bound now to the WAL {wal}")
    } else {
        format!(
            "the metadata log {meta} (of the WAL {wal}) holds {} and {}",
            plural(found.streams as u64, "stream", "streams"),
            plural(objects as u64, "committed object", "committed objects")
        )
    };
    let mut wal_part = format!("the WAL gave back {}", plural(wal_records as u64, "record", "records"));
    if wal_records > 0 {
        wal_part.push_str(&format!(": {} not yet in objects", plural(found.replayed, "request", "requests")));
        if found.skipped > 0 {
            wal_part.push_str(&format!(", {} of streams that no longer exist skipped", plural(found.skipped, "record", "records")));
        }
        if found.dropped > 0 {
            wal_part.push_str(&format!(
                ", {} cut short by a crash (never answered) dropped",
                plural(found.dropped, "request", "requests")
            ));
        }
    }
    format!("{log}; {wal_part}")
}

/// The flags `run` checks before anything is opened; the address to listen on.
fn checked_listen(args: &Args) -> Result<SocketAddr, CliError> {
    let listen: SocketAddr = args
        .listen
        .parse()
        .map_err(|_| CliError::usage(format!("--listen {}: not an address such as 127.0.0.1:7070", args.listen)))?;
    if args.block_bytes < 1024 || args.block_ms.is_some_and(|ms| ms == 0 || ms > 3_600_000) {
        return Err(CliError::usage("--block-bytes at least 1024, --block-ms between 1 and 3600000"));
    }
    if !(1..=3_600_000).contains(&args.long_poll_ms) || !(1..=3_600_000).contains(&args.sse_connection_ms) {
        return Err(CliError::usage("--long-poll-ms and --sse-connection-ms: between 1 and 3600000"));
    }
    if args.compact_bytes < 1024 {
        return Err(CliError::usage("--compact-bytes: at least 1024"));
    }
    if args.meta_snapshot_every == 0 {
        return Err(CliError::usage("--meta-snapshot-every: at least 1"));
    }
    if args.http_threads.is_some_and(|threads| !(1..=256).contains(&threads)) {
        return Err(CliError::usage("--http-threads: must be between 1 and 256"));
    }
    Ok(listen)
}

/// The metadata log belongs to one data WAL: the command that binds a new one to `wal`,
/// none when it is bound to `wal` already, and a refusal naming both for another WAL.
fn binding(meta: &MetaLog, wal: &Wal) -> Result<Option<MetaCommand>, CliError> {
    let bound = meta.with_state(|state| state.wal().map(str::to_string));
    match bound {
        Some(bound) if bound != wal.name() => Err(CliError::usage(format!(
            "--meta {}: this metadata log belongs to the WAL {bound}, not to --wal's {}: its commits describe \
             that WAL's records, which this WAL does not hold; start with that --wal, or give this WAL its own --meta",
            meta.name(),
            wal.name()
        ))),
        Some(_) => Ok(None),
        None => Ok(Some(MetaCommand::Bind { wal: wal.name().to_string() })),
    }
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    crate::wal::os::untune(&args.untune);
    crate::wal::limit_malloc_arenas();
    let listen = checked_listen(&args)?;
    let objects_on_s3 = args.objects.as_deref().is_some_and(|url| url.starts_with("s3://"));
    let block_ms = args.block_ms.unwrap_or(if objects_on_s3 { OBJECT_STORE_BLOCK_MS_DEFAULT } else { BLOCK_MS_DEFAULT });
    let policy = SealPolicy {
        block_bytes: args.block_bytes,
        block_age: Nanos(block_ms * 1_000_000),
        stream_object_bytes: args.stream_object_bytes,
    };
    let meta_backend = match &args.meta {
        Some(url) => meta_log::backend_at(url, &args.wal).map_err(CliError::usage)?,
        None => meta_log::file_backend(beside_the_wal(&args)?.join("meta")),
    };
    let objects = match &args.objects {
        Some(url) => Objects::from_url(url, args.wal.endpoint.as_deref()).map_err(CliError::usage)?,
        None => Objects::local(beside_the_wal(&args)?).map_err(CliError::usage)?,
    };
    let objects = Arc::new(objects);
    let mut wal_args = args.wal.clone();
    if matches!(parse_wal_url(&wal_args.wal), Ok(WalUrl::S3 { .. })) {
        let (option, value) = SERVE_S3_FENCE;
        wal_args.wal = with_default_s3_option(&wal_args.wal, option, value);
        wal_args.pipeline_round_trip.get_or_insert(OBJECT_STORE_BEHIND_HTTP_PIPELINE_ROUND_TRIP_PERCENT);
    }
    let backend = wal_args.backend(true).map_err(CliError::usage)?;
    // Opening claims the metadata log (a file's LOCK, a Postgres or S3 node's epoch).
    let meta = Arc::new(MetaLog::open(meta_backend).map_err(CliError::failed)?);
    // The WAL is opened (and recovered) before the runtime starts: a backend with a
    // runtime of its own must not be opened from inside another.
    let page = crate::serve::live::page_dir(args.page.as_deref()).map_err(CliError::usage)?;
    let live = LiveTrace::new("walab-serve");
    // The WAL's records are replayed into the streams as its recovery finds them: the
    // WAL is never held whole.
    let mut replay = Replay::new(&meta, backend.describe()).map_err(CliError::failed)?;
    let skip_replay = args.fault == Some(Fault::SkipWalReplay);
    let mut wal_records = 0;
    let mut replay_one = |record: TinyRecord| {
        wal_records += 1;
        if !skip_replay {
            replay.record(&record);
        }
    };
    let (wal, recovered) = Wal::open_streaming(backend, WalOptions::default(), Some(live), &mut replay_one).map_err(open_failure)?;
    if skip_replay {
        wal_records = 0;
    }
    for note in [meta.repaired.as_deref(), recovered.repaired.as_deref()].into_iter().flatten() {
        eprintln!("walab serve: {note}");
    }
    let bind = binding(&meta, &wal)?;
    let objects_committed = meta.with_state(|state| state.objects().count());
    let (store, found) =
        Store::replayed(wal, recovered.next_seq, replay, Arc::clone(&meta), Arc::clone(&objects)).map_err(CliError::failed)?;
    let store = Arc::new(store);
    eprintln!("walab serve: {}", found_at_start(meta.name(), bind.is_some(), objects_committed, store.wal_name(), wal_records, &found));
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if let Some(threads) = args.http_threads {
        runtime.worker_threads(threads);
    }
    let runtime = runtime
        .enable_all()
        .thread_name("walab-serve")
        .build()
        .map_err(|error| CliError::failed(format!("serve: cannot start the runtime: {error}")))?;
    let snapshot_every = args.meta_snapshot_every;
    let options = http::HttpOptions {
        long_poll: std::time::Duration::from_millis(args.long_poll_ms),
        sse_connection: std::time::Duration::from_millis(args.sse_connection_ms),
    };
    let mut uploader =
        Uploader {
            store: Arc::clone(&store),
            meta: Arc::clone(&meta),
            objects,
            policy,
            crash_at: args.crash_at,
            snapshot_every,
            sealed: 0,
            compact_bytes: args.compact_bytes,
            garbage_seen: Default::default(),
        };
    runtime.block_on(async move {
        if let Some(bind) = bind {
            meta.append(bind).await.map_err(CliError::failed)?;
        }
        let expired = uploader.expire_orphans().await.map_err(CliError::failed)?;
        if expired > 0 {
            eprintln!("walab serve: expired {expired} object ids reserved by an upload that never committed");
        }
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .map_err(|error| CliError::usage(format!("--listen {listen}: {error}")))?;
        let bound = listener.local_addr().map_err(|error| CliError::failed(format!("--listen {listen}: {error}")))?;
        tokio::spawn(uploader.run());
        let sweeping = Arc::clone(&store);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(EXPIRY_SWEEP_EVERY).await;
                sweeping.sweep_expired().await;
            }
        });
        eprintln!("walab serve: listening on http://{bound}");
        let mut routes = http::router(store, options);
        if let Some(dir) = &page {
            eprintln!("walab serve: the lab's page at http://{bound}/ (from {}), watching this server", dir.display());
            routes = crate::serve::live::with_page(routes, dir);
        }
        axum::serve(listener, routes)
            .await
            .map_err(|error| CliError::failed(format!("serve: http://{bound}: {error}")))
    })?;
    Ok(ExitCode::SUCCESS)
}
