//! `--wal URL --cluster NAME --node ID`: which log a command opens.
//!
//! Every backend names a node's log the same way: a URL for the storage, and a cluster
//! name and node id (defaults `default` and `0`) inside it. For `file:///DIR` the log
//! lives in `DIR/<cluster>/<node>/`; for `s3://bucket/path` under
//! `path/<cluster>/<node>/` in the bucket (`--endpoint URL` for S3-compatible servers);
//! the Postgres backend in the tables of that node.
//! A scheme this build does not drive yet is refused with one clear line.

use std::path::PathBuf;
use std::sync::Arc;

use super::file::affinity::SyncCpus;
use super::file::{node_dir, FileBackend, SegmentFormat, SEGMENT_BYTES_DEFAULT, SYNC_THREADS_DEFAULT};
use super::file::fs::RealFs;
use super::file::io_thread::OnThread;
use super::postgres::PgBackend;
use super::s3::{self, S3Backend, S3Location};
use super::Backend;
use walab_core::group_commit::{Config, Policy};

/// The flags every WAL command shares.
#[derive(clap::Args, Debug, Clone)]
pub struct WalArgs {
    /// Where the log lives: file:///DIR, s3://BUCKET/PATH or postgres://...
    #[arg(long)]
    pub wal: String,
    /// The cluster the log belongs to.
    #[arg(long, default_value = "default")]
    pub cluster: String,
    /// The node whose log this is.
    #[arg(long, default_value = "0")]
    pub node: String,
    /// Bytes per segment file (file backend); for s3:// the record bytes per trim unit.
    #[arg(long, default_value_t = SEGMENT_BYTES_DEFAULT)]
    pub segment_bytes: u64,
    /// Record format of the segment files (file backend): the tiny store's, one record
    /// per write, or LevelDB's, one WriteBatch record per commit group.
    #[arg(long, value_enum, default_value = "tiny")]
    pub format: SegmentFormat,
    /// S3-compatible endpoint for s3:// (MinIO, R2, a local server); AWS S3 when absent.
    #[arg(long)]
    pub endpoint: Option<String>,
    /// Uploads in flight at once for s3:// (seeds/001's maxInflight).
    #[arg(long, default_value_t = 4)]
    pub inflight_max: usize,
    /// For s3://: make every append its own PUT (the baseline group commit is measured
    /// against).
    #[arg(long)]
    pub per_write: bool,
    /// For file://: sync on an I/O thread of its own, overlapping each sync with waking
    /// the previous batch's writers (helps thread-per-writer loads; by default the
    /// driver syncs inline, which gives a lone writer the fewest thread hops).
    #[arg(long)]
    pub io_thread: bool,
    /// For file://: how many syncs may run at once, each on a sync thread of its own,
    /// while the driver writes the next batch (default 2). 1 syncs one batch at a time,
    /// inline on the driver thread.
    #[arg(long, value_name = "N")]
    pub sync_threads: Option<usize>,
    /// For file://: the CPUs the syncing threads (the driver, the sync threads) run on.
    /// `auto` (the default): the CPUs that take the log device's completion interrupts,
    /// if those are fewer than this process may use (a single-queue disk, as in most
    /// VMs); `off`: wherever Linux puts them; or a list such as `1` or `0,2-3`.
    #[arg(long, value_name = "auto|off|CPUS")]
    pub sync_cpus: Option<String>,
}

/// A parsed `--wal` URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WalUrl {
    /// `file:///absolute/dir` (or `file://relative/dir`).
    File(PathBuf),
    /// `postgres://...` or `postgresql://...`, walab's options still in it.
    Postgres(String),
    /// `s3://bucket` or `s3://bucket/path`.
    S3 { bucket: String, path: String },
}

/// Parses a `--wal` value; the error is the one line to print.
pub fn parse_wal_url(text: &str) -> Result<WalUrl, String> {
    if let Some(path) = text.strip_prefix("file://") {
        if path.is_empty() {
            return Err(format!("--wal {text}: no directory after file://"));
        }
        return Ok(WalUrl::File(PathBuf::from(path)));
    }
    if text.starts_with("postgres://") || text.starts_with("postgresql://") {
        return Ok(WalUrl::Postgres(text.to_string()));
    }
    if let Some(rest) = text.strip_prefix("s3://") {
        let (bucket, path) = rest.split_once('/').unwrap_or((rest, ""));
        let bucket_ok = (3..=63).contains(&bucket.len())
            && bucket.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.');
        if !bucket_ok {
            return Err(format!(
                "--wal {text}: bucket {bucket:?} is not a bucket name (3 to 63 of a-z, 0-9, '-', '.')"
            ));
        }
        let path = path.trim_matches('/');
        let path_ok = path.is_empty()
            || path.split('/').all(|part| {
                !part.is_empty()
                    && part != "."
                    && part != ".."
                    && part.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
            });
        if !path_ok {
            return Err(format!("--wal {text}: use letters, digits, '-', '_' and '.' in the path's parts"));
        }
        return Ok(WalUrl::S3 { bucket: bucket.to_string(), path: path.to_string() });
    }
    match text.split_once("://") {
        Some((scheme, _)) => Err(format!(
            "--wal {text}: unknown scheme {scheme:?}; use file:///DIR, s3://BUCKET/PATH or postgres://..."
        )),
        None => Err(format!("--wal {text}: not a URL; use file:///DIR, s3://BUCKET/PATH or postgres://...")),
    }
}

fn check_name(flag: &str, value: &str) -> Result<(), String> {
    let ok = !value.is_empty()
        && value != "."
        && value != ".."
        && value.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.');
    if ok {
        Ok(())
    } else {
        Err(format!("{flag} {value:?}: use letters, digits, '-', '_' and '.' only"))
    }
}

impl WalArgs {
    /// The backend these flags name. `create` says whether a missing log may be created
    /// (`load`, `bench`) or is an error (`dump`).
    pub fn backend(&self, create: bool) -> Result<Box<dyn Backend>, String> {
        check_name("--cluster", &self.cluster)?;
        check_name("--node", &self.node)?;
        if self.segment_bytes < 4096 || self.segment_bytes > (1 << 34) {
            return Err(format!("--segment-bytes {}: must be between 4096 and 17179869184", self.segment_bytes));
        }
        if let Some(threads) = self.sync_threads {
            if !(1..=16).contains(&threads) {
                return Err(format!("--sync-threads {threads}: must be between 1 and 16"));
            }
            if !matches!(parse_wal_url(&self.wal)?, WalUrl::File(_)) {
                return Err(format!("--sync-threads {threads}: only for a file:// WAL"));
            }
            if self.io_thread && threads > 1 {
                return Err(format!("--sync-threads {threads} and --io-thread: the I/O thread syncs one batch at a time; pass one of them"));
            }
        }
        let sync_cpus = match &self.sync_cpus {
            Some(text) => {
                let parsed = SyncCpus::parse(text)?;
                if !matches!(parse_wal_url(&self.wal)?, WalUrl::File(_)) {
                    return Err(format!("--sync-cpus {text}: only for a file:// WAL"));
                }
                parsed
            }
            None => SyncCpus::Auto,
        };
        match parse_wal_url(&self.wal)? {
            WalUrl::File(base) => {
                let sync_cpus = sync_cpus.resolve(&base)?;
                let sync_threads = if self.io_thread { 1 } else { self.sync_threads.unwrap_or(SYNC_THREADS_DEFAULT) };
                let file = FileBackend::with_format(
                    Arc::new(RealFs),
                    node_dir(&base, &self.cluster, &self.node),
                    self.segment_bytes,
                    create,
                    self.format,
                )
                .with_sync_cpus(sync_cpus)
                .with_sync_threads(sync_threads);
                if self.io_thread {
                    // pwrite + fdatasync on a thread of their own (see `io_thread`).
                    return Ok(Box::new(OnThread::new(Box::new(file)).map_err(|e| e.to_string())?));
                }
                // Small batches sync inline on the driver (fewest thread hops between an
                // append and its OK); larger ones on the sync threads, overlapping.
                Ok(Box::new(file))
            }
            WalUrl::Postgres(url) => {
                let backend = PgBackend::new(&url, &self.cluster, &self.node, create)?;
                Ok(Box::new(backend))
            }
            WalUrl::S3 { bucket, path } => {
                if let Some(endpoint) = &self.endpoint {
                    if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
                        return Err(format!("--endpoint {endpoint}: use http://HOST:PORT or https://HOST"));
                    }
                }
                if !(1..=4096).contains(&self.inflight_max) {
                    return Err(format!("--inflight-max {}: must be between 1 and 4096", self.inflight_max));
                }
                let store = s3::connect(&bucket, self.endpoint.as_deref())?;
                let location =
                    S3Location { node_prefix: s3::layout::node_prefix(&path, &self.cluster, &self.node), bucket };
                let policy = if self.per_write { Policy::PerWrite } else { Policy::Group };
                let machine = Config { inflight_max: self.inflight_max, ..Config::remote(policy) };
                // Uploads are spawned on the backend's own runtime: nothing blocks the driver.
                Ok(Box::new(S3Backend::new(store, location, create, self.segment_bytes)?.with_machine_config(machine)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_file_urls_and_refuses_the_rest() {
        assert_eq!(parse_wal_url("file:///data/wal"), Ok(WalUrl::File(PathBuf::from("/data/wal"))));
        assert!(parse_wal_url("file://").unwrap_err().contains("no directory"));
        assert_eq!(parse_wal_url("postgres://h/db?segments=4"), Ok(WalUrl::Postgres("postgres://h/db?segments=4".into())));
        assert_eq!(
            parse_wal_url("s3://my-bucket/wal/prod/"),
            Ok(WalUrl::S3 { bucket: "my-bucket".into(), path: "wal/prod".into() })
        );
        assert_eq!(parse_wal_url("s3://my-bucket"), Ok(WalUrl::S3 { bucket: "my-bucket".into(), path: String::new() }));
        assert!(parse_wal_url("s3://B/x").unwrap_err().contains("bucket"));
        assert!(parse_wal_url("s3://bucket/a/../b").unwrap_err().contains("path"));
        assert!(parse_wal_url("ftp://x").unwrap_err().contains("unknown scheme"));
        assert!(parse_wal_url("/data").unwrap_err().contains("not a URL"));
    }

    fn args(wal: &str, sync_threads: Option<usize>, io_thread: bool) -> WalArgs {
        WalArgs {
            wal: wal.to_string(),
            cluster: "default".into(),
            node: "0".into(),
            segment_bytes: SEGMENT_BYTES_DEFAULT,
            format: SegmentFormat::Tiny,
            endpoint: None,
            inflight_max: 4,
            per_write: false,
            io_thread,
            sync_threads,
            sync_cpus: None,
        }
    }

    #[test]
    fn sync_threads_are_checked_before_anything_is_opened() {
        let refusal = |a: WalArgs| a.backend(true).err().expect("refused");
        assert!(refusal(args("file:///tmp/x", Some(0), false)).contains("--sync-threads 0: must be between 1 and 16"));
        assert!(refusal(args("file:///tmp/x", Some(17), false)).contains("between 1 and 16"));
        assert!(refusal(args("file:///tmp/x", Some(2), true)).contains("--io-thread"));
        assert!(refusal(args("s3://bucket/wal", Some(2), false)).contains("only for a file:// WAL"));
        assert!(refusal(args("postgres://h/db", Some(1), false)).contains("only for a file:// WAL"));
    }

    #[test]
    fn sync_cpus_are_checked_before_anything_is_opened() {
        let with = |wal: &str, cpus: &str| WalArgs { sync_cpus: Some(cpus.to_string()), ..args(wal, None, false) };
        let refusal = |a: WalArgs| a.backend(true).err().expect("refused");
        assert!(refusal(with("file:///tmp/x", "fast")).starts_with("--sync-cpus fast: "));
        assert!(refusal(with("file:///tmp/x", "2-1")).contains("empty range"));
        assert!(refusal(with("file:///tmp/x", "99999")).contains("out of range"));
        assert!(refusal(with("s3://bucket/wal", "auto")).contains("--sync-cpus auto: only for a file:// WAL"));
        assert!(refusal(with("postgres://h/db", "1")).contains("only for a file:// WAL"));
    }

    #[test]
    fn cluster_and_node_cannot_escape_the_directory() {
        assert!(check_name("--node", "..").is_err());
        assert!(check_name("--cluster", "a/b").is_err());
        assert!(check_name("--node", "node-1").is_ok());
    }
}
