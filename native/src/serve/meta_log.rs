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
//! Requests (a `PUT` creating a stream, a `DELETE`) and the uploader append to it at the
//! same time. A command is applied to the state and submitted to the WAL under one lock,
//! so the log's order is the order the state saw, and the appender waits for durability
//! outside it: concurrent creates share a group commit.
//!
//! Compaction: once [`MetaLog::snapshot_due`], the uploader writes a snapshot of the
//! state ([`MetaState::snapshot`]) and confirms the WAL below it, which trims the older
//! records as the backend trims (whole file segments, a Postgres trim offset, S3 trim
//! units); replay starts from the last complete snapshot
//! ([`walab_core::stream_store::meta::replay`]). A snapshot is due after
//! `--meta-snapshot-every` records *and* once the records since the last one hold at
//! least as many bytes as it did: writing one only after as many bytes of log keeps its
//! cost per logged byte at most one and the log at most about twice the state.

use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use walab_core::stream_store::meta::{replay, Applied, MetaCommand, MetaState};

use crate::wal::file::fs::RealFs;
use crate::wal::file::{FileBackend, SegmentFormat};
use crate::wal::url::{parse_wal_url, WalArgs, WalUrl};
use crate::wal::{AsyncWriter, Backend, Wal, WalOptions};

/// Bytes per segment of a new file metadata log (and per trim unit of an S3 one).
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
        parsed @ (WalUrl::Postgres(_) | WalUrl::S3 { .. }) => {
            let args = WalArgs {
                wal: url.to_string(),
                cluster: wal.cluster.clone(),
                node: meta_node(&wal.node),
                // S3: trim units as small as a file log's segments, so what a restart
                // reads (one object per record) stays near the records since the last
                // snapshot. Postgres: the URL's ring.
                segment_bytes: matches!(parsed, WalUrl::S3 { .. }).then_some(META_SEGMENT_BYTES),
                format: SegmentFormat::Tiny,
                endpoint: wal.endpoint.clone(),
                inflight: None,
                per_write: false,
                sync_cpus: None,
                cohort_hold: None,
                pipeline_running: None,
                pipeline_round_trip: None,
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
/// not given.
pub const SNAPSHOT_EVERY_DEFAULT: u64 = 1000;

/// The state and the bookkeeping for compaction, under one lock.
struct Inner {
    state: MetaState,
    /// Records written after the last complete snapshot (or since the log began).
    since_snapshot: u64,
    /// Their encoded bytes, and the last snapshot's.
    since_snapshot_bytes: u64,
    snapshot_bytes: u64,
}

/// An open metadata log and the state its commands give.
pub struct MetaLog {
    inner: Mutex<Inner>,
    writer: AsyncWriter,
    /// Set after a failed append: the state may be ahead of the log, so nothing more
    /// is written until a restart replays the log.
    failed: OnceLock<String>,
    /// What recovery repaired when the log was opened, if anything.
    pub repaired: Option<String>,
    wal: Wal,
}

fn lock(inner: &Mutex<Inner>) -> MutexGuard<'_, Inner> {
    inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
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
        let replayed = replay(&records, recovered.next_seq).map_err(|error| format!("{}: {error}", wal.name()))?;
        // The records after the snapshot are the last `since_snapshot`; its parts are
        // the ones from its first seq up to them.
        let tail = recovered.records.len() - replayed.since_snapshot as usize;
        let since_snapshot_bytes = recovered.records[tail..].iter().map(|r| r.value.len() as u64).sum();
        let snapshot_bytes = match replayed.snapshot_seq {
            Some(seq) => recovered.records[..tail].iter().filter(|r| r.seq >= seq).map(|r| r.value.len() as u64).sum(),
            None => 0,
        };
        if let Some(seq) = replayed.snapshot_seq {
            // What a crash kept from being trimmed after the last snapshot may go now.
            wal.confirm_consumer(seq - 1);
        }
        let inner = Inner { state: replayed.state, since_snapshot: replayed.since_snapshot, since_snapshot_bytes, snapshot_bytes };
        Ok(MetaLog { inner: Mutex::new(inner), writer: wal.async_writer(), failed: OnceLock::new(), repaired: recovered.repaired, wal })
    }

    pub fn name(&self) -> &str {
        self.wal.name()
    }

    /// Whether an append failed (nothing more is written until a restart).
    pub fn failed(&self) -> Option<&str> {
        self.failed.get().map(String::as_str)
    }

    /// Reads the state.
    pub fn with_state<T>(&self, read: impl FnOnce(&MetaState) -> T) -> T {
        read(&lock(&self.inner).state)
    }

    fn fail(&self, message: String) -> String {
        self.failed.get_or_init(|| message).clone()
    }

    /// Applies `command` (refused whole if it does not apply) and makes it durable; what
    /// it did to streams.
    pub async fn append(&self, command: MetaCommand) -> Result<Applied, String> {
        let (applied, pending) = {
            let mut inner = lock(&self.inner);
            if let Some(failure) = self.failed.get() {
                return Err(format!("{}: stopped after a failure: {failure}", self.name()));
            }
            let applied = inner.state.apply(&command).map_err(|error| format!("{}: {error}", self.name()))?;
            let bytes = command.encode();
            let pending = match self.writer.submit(META_KEY, &bytes) {
                Ok(pending) => pending,
                Err(error) => return Err(self.fail(format!("{}: {error}", self.name()))),
            };
            inner.since_snapshot += 1;
            inner.since_snapshot_bytes += bytes.len() as u64;
            (applied, pending)
        };
        match pending.durable().await {
            Ok(_) => Ok(applied),
            Err(error) => Err(self.fail(format!("{}: {error}", self.name()))),
        }
    }

    /// Whether `every` records or more were written since the last snapshot, holding at
    /// least as many bytes as it did.
    pub fn snapshot_due(&self, every: u64) -> bool {
        let inner = lock(&self.inner);
        inner.since_snapshot >= every && inner.since_snapshot_bytes >= inner.snapshot_bytes
    }

    /// Writes the state as a snapshot and confirms the WAL below its first part, so the
    /// backend may trim every record before it. Returns the parts written.
    pub async fn snapshot(&self) -> Result<usize, String> {
        let pending = {
            let mut inner = lock(&self.inner);
            if let Some(failure) = self.failed.get() {
                return Err(format!("{}: stopped after a failure: {failure}", self.name()));
            }
            let parts = inner.state.snapshot();
            let mut pending = Vec::with_capacity(parts.len());
            // Submitted under one hold of the lock: nothing comes between the parts.
            for part in &parts {
                match self.writer.submit(META_KEY, &part.encode()) {
                    Ok(answer) => pending.push(answer),
                    Err(error) => return Err(self.fail(format!("{}: {error}", self.name()))),
                }
            }
            inner.snapshot_bytes = parts.iter().map(|part| part.encode().len() as u64).sum();
            inner.since_snapshot = 0;
            inner.since_snapshot_bytes = 0;
            pending
        };
        let parts = pending.len();
        let mut first_seq = None;
        for answer in pending {
            match answer.durable().await {
                Ok(seq) => {
                    first_seq.get_or_insert(seq);
                }
                Err(error) => return Err(self.fail(format!("{}: {error}", self.name()))),
            }
        }
        if let Some(first_seq) = first_seq {
            self.wal.confirm_consumer(first_seq - 1);
        }
        Ok(parts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reserve_one(log: &MetaLog) -> MetaCommand {
        log.with_state(|state| state.reserve(1))
    }

    #[test]
    fn a_snapshot_is_due_after_as_many_bytes_as_it_took_also_after_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let mut log = MetaLog::open(file_backend(dir.path().join("meta"))).unwrap();
        let reserve_bytes = reserve_one(&log).encode().len() as u64;
        for _ in 0..40 {
            let command = reserve_one(&log);
            runtime.block_on(log.append(command)).unwrap();
        }
        assert!(log.snapshot_due(40) && !log.snapshot_due(41));
        let parts = runtime.block_on(log.snapshot()).unwrap();
        assert_eq!(parts, 1);
        // 40 reserved ids: the state's encoding is several reservations' worth of bytes.
        let snapshot_bytes = log.with_state(|state| state.snapshot()[0].encode().len() as u64);
        let needed = snapshot_bytes.div_ceil(reserve_bytes);
        assert!(needed > 2, "{snapshot_bytes} bytes");
        for written in 1..=needed {
            let command = reserve_one(&log);
            runtime.block_on(log.append(command)).unwrap();
            assert_eq!(log.snapshot_due(1), written == needed, "after {written} of {needed}");
            if written == needed - 1 {
                // A reopen counts the same: the snapshot's bytes and the records after it.
                drop(log);
                log = MetaLog::open(file_backend(dir.path().join("meta"))).unwrap();
                assert_eq!(log.with_state(|state| state.reserved_ids().len() as u64), 40 + written);
                assert!(!log.snapshot_due(1));
            }
        }
    }
}
