//! The metadata log: [`walab_core::stream_store::meta`]'s commands, one per record of a
//! walab WAL (any backend: a file WAL, a Postgres WAL, an S3 WAL), replayed at start.
//!
//! Why walab's own WAL and not an embedded database: the metadata is a short log of
//! commands whose state machine lives in the core, and a log is what walab already makes
//! durable, with its recovery and its fencing; an embedded database would bring a second
//! storage engine whose own log would hold the same commands. Because it is a `Wal`, the
//! metadata can live where the data WAL does not die with the machine (Postgres, a
//! bucket), and it is claimed like any WAL: a file WAL's `LOCK`, a Postgres node row's
//! epoch, an S3 registration.
//!
//! Compaction: after [`MetaLog::snapshot_due`] records, the uploader writes a snapshot of
//! the state ([`MetaState::snapshot`]) and confirms the WAL below it, which trims the
//! older records as the backend trims (whole file segments, a Postgres trim offset,
//! S3 trim units); replay starts from the last complete snapshot
//! ([`walab_core::stream_store::meta::replay`]).

use std::sync::Arc;

use walab_core::stream_store::meta::{replay, MetaCommand, MetaState};

use crate::wal::file::fs::RealFs;
use crate::wal::file::{FileBackend, SegmentFormat};
use crate::wal::url::{parse_wal_url, WalArgs, WalUrl};
use crate::wal::{AsyncWriter, Backend, Wal, WalOptions};

/// Bytes per segment of a new file metadata log.
const META_SEGMENT_BYTES: u64 = 1 << 20;

/// The key of every metadata record.
const META_KEY: &[u8] = b"meta";

/// The node id the metadata log of node `node` takes in a Postgres or S3 WAL: its own
/// node row and tables (or its own prefix), so it never meets the data WAL of `node`
/// even at the same URL and cluster.
pub fn meta_node(node: &str) -> String {
    format!("{node}_meta")
}

/// The storage of `--meta URL` for the node `wal` names: `file:///DIR` is the log's own
/// directory; `postgres://...` and `s3://BUCKET/PATH` hold it as node
/// [`meta_node`] of `wal`'s cluster (with `wal`'s `--endpoint`).
pub fn backend_at(url: &str, wal: &WalArgs) -> Result<Box<dyn Backend>, String> {
    let as_meta = |error: String| match error.strip_prefix("--wal") {
        Some(rest) => format!("--meta{rest}"),
        None => format!("--meta {url}: {error}"),
    };
    match parse_wal_url(url).map_err(as_meta)? {
        WalUrl::File(dir) => Ok(file_backend(dir)),
        WalUrl::Postgres(_) | WalUrl::S3 { .. } => {
            let args = WalArgs {
                wal: url.to_string(),
                cluster: wal.cluster.clone(),
                node: meta_node(&wal.node),
                segment_bytes: None,
                format: SegmentFormat::Tiny,
                endpoint: wal.endpoint.clone(),
                inflight: None,
                per_write: false,
                sync_cpus: None,
            };
            args.backend(true).map_err(as_meta)
        }
    }
}

/// A file metadata log in `dir` (created if missing).
pub fn file_backend(dir: std::path::PathBuf) -> Box<dyn Backend> {
    Box::new(
        FileBackend::with_format(Arc::new(RealFs), dir, META_SEGMENT_BYTES, true, SegmentFormat::Tiny)
            .with_recorded_geometry(true),
    )
}

/// Records between two snapshots of the metadata log when `--meta-snapshot-every` is
/// not given: about 500 uploads.
pub const SNAPSHOT_EVERY_DEFAULT: u64 = 1000;

/// An open metadata log and the state its commands give.
pub struct MetaLog {
    writer: AsyncWriter,
    state: MetaState,
    /// Records written after the last complete snapshot (or since the log began).
    since_snapshot: u64,
    /// Set after a failed append: the state may be ahead of the log, so nothing more
    /// is written until a restart replays the log.
    failed: Option<String>,
    wal: Wal,
}

impl MetaLog {
    /// Opens (or creates) the log on `backend` and replays it. Opening claims the log
    /// as the backend claims a WAL; call it outside any tokio runtime (a Postgres or S3
    /// backend runs its own).
    pub fn open(backend: Box<dyn Backend>) -> Result<MetaLog, String> {
        let (wal, recovered) = Wal::open(backend, WalOptions::default()).map_err(|error| format!("--meta: {error}"))?;
        let mut records = Vec::with_capacity(recovered.records.len());
        for record in &recovered.records {
            let command = MetaCommand::decode(&record.value)
                .map_err(|error| format!("{}: metadata record {}: {error}", wal.name(), record.seq))?;
            records.push((record.seq, command));
        }
        let replayed = replay(&records).map_err(|error| format!("{}: {error}", wal.name()))?;
        Ok(MetaLog { writer: wal.async_writer(), state: replayed.state, since_snapshot: replayed.since_snapshot, failed: None, wal })
    }

    pub fn name(&self) -> &str {
        self.wal.name()
    }

    /// Whether an append failed (nothing more is written until a restart).
    pub fn failed(&self) -> bool {
        self.failed.is_some()
    }

    pub fn state(&self) -> &MetaState {
        &self.state
    }

    /// Applies `command` (refused whole if it does not apply) and makes it durable.
    pub async fn append(&mut self, command: MetaCommand) -> Result<(), String> {
        if let Some(failure) = &self.failed {
            return Err(format!("{}: stopped after a failure: {failure}", self.name()));
        }
        self.state.apply(&command).map_err(|error| format!("{}: {error}", self.name()))?;
        self.write(&command).await.map(|_| ())
    }

    /// Makes `command` durable; its seq.
    async fn write(&mut self, command: &MetaCommand) -> Result<u64, String> {
        match self.writer.append(META_KEY, &command.encode()).await {
            Ok(seq) => {
                self.since_snapshot += 1;
                Ok(seq)
            }
            Err(error) => {
                let message = format!("{}: {error}", self.name());
                self.failed = Some(message.clone());
                Err(message)
            }
        }
    }

    /// Whether `every` records or more were written since the last snapshot.
    pub fn snapshot_due(&self, every: u64) -> bool {
        self.since_snapshot >= every
    }

    /// Writes the state as a snapshot and confirms the WAL below its first part, so the
    /// backend may trim every record before it. Returns the parts written.
    pub async fn snapshot(&mut self) -> Result<usize, String> {
        if let Some(failure) = &self.failed {
            return Err(format!("{}: stopped after a failure: {failure}", self.name()));
        }
        let parts = self.state.snapshot();
        let mut first_seq = None;
        for part in &parts {
            let seq = self.write(part).await?;
            first_seq.get_or_insert(seq);
        }
        self.since_snapshot = 0;
        if let Some(first_seq) = first_seq {
            self.wal.confirm_consumer(first_seq - 1);
        }
        Ok(parts.len())
    }
}
