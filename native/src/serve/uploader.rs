//! The background upload: sealed blocks of the log cache become objects, one commit in
//! the metadata log makes them the streams' committed records, and the WAL is trimmed
//! behind them.
//!
//! One upload seals a block ([`walab_core::stream_store::upload::seal`]) from the durable
//! records above every stream's committed end and carries out the core's
//! [`UploadCycle`] for it: reserve, PUT, commit, trim, each durable before the next (the
//! order and why are [`walab_core::stream_store::cycle`]'s). Every so many metadata
//! records it snapshots the metadata log, which trims it.
//!
//! Between uploads it compacts (the oldest small objects of one size tier rewritten as one,
//! each stream's runs in them joined, [`walab_core::stream_store::upload::compaction`]):
//! reserve an id, read the objects, PUT the new one, one `Compact` command that puts it
//! in their place. And it deletes garbage: objects no live run names any more (their
//! streams were deleted, or their runs compacted elsewhere), forgotten in the metadata
//! log once deleted. A garbage object is kept for [`GARBAGE_GRACE`] first, so that a read
//! that looked up its run just before still finds it.
//!
//! A crash before the commit leaves objects under reserved ids that nothing names: the
//! next start deletes them and expires the ids ([`Uploader::expire_orphans`]).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use walab_core::stream_store::cycle::{Step, UploadCycle};
use walab_core::stream_store::meta::{MetaCommand, RunEntry, COMMAND_BYTES_MAX, RUN_ENTRY_BYTES};
use walab_core::stream_store::object::{self, Run};
use walab_core::stream_store::offset::Offset;
use walab_core::stream_store::upload::{compaction, seal, SealPolicy};
use walab_core::stream_store::StreamId;

use walab_core::trace::Event;

use super::meta_log::MetaLog;
use crate::wal::live::{OBJECTS_FILE, OBJECT_SYNC_BASE};
use super::objects::Objects;
use super::store::Store;

/// The upload task's state.
pub struct Uploader {
    pub store: Arc<Store>,
    pub meta: Arc<MetaLog>,
    pub objects: Arc<Objects>,
    pub policy: SealPolicy,
    /// A fault for the crash tests: abort the process at this point of an upload.
    pub crash_at: Option<CrashPoint>,
    /// Snapshot the metadata log (and let it trim) after this many of its records.
    pub snapshot_every: u64,
    /// Blocks sealed since start: the live trace's block numbers.
    pub sealed: u64,
    /// Compacted objects hold at most this many data bytes.
    pub compact_bytes: u64,
    /// Garbage object ids and when this process first saw each.
    pub garbage_seen: HashMap<u64, Instant>,
}

/// How long a garbage object stays before it is deleted.
pub const GARBAGE_GRACE: Duration = Duration::from_secs(10);

/// The most data bytes one compacted object holds when `--compact-bytes` is not given.
pub const COMPACT_BYTES_DEFAULT: u64 = 64 << 20;

/// Where a crash test's server aborts an upload (`walab serve --crash-at`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CrashPoint {
    /// After the PUTs, before the commit: the objects are orphans.
    BeforeCommit,
    /// After the commit is durable, before the log cache drops the records and the WAL is
    /// confirmed: the committed records are still in the WAL.
    AfterCommit,
}

impl Uploader {
    fn crash_if_at(&self, point: CrashPoint, ids: &[u64]) {
        if self.crash_at == Some(point) {
            eprintln!("walab serve: crashing at {point:?} of objects {ids:?} (--crash-at)");
            std::process::abort();
        }
    }
}

/// How long the task waits after a failed upload before it tries again.
const RETRY_AFTER: Duration = Duration::from_secs(1);

impl Uploader {
    /// Expires the ids a crashed upload reserved and never committed, deleting their
    /// objects first. Called at start, before any upload.
    pub async fn expire_orphans(&mut self) -> Result<usize, String> {
        let orphans = self.meta.with_state(|state| state.reserved_ids());
        if orphans.is_empty() {
            return Ok(0);
        }
        for &id in &orphans {
            self.objects.delete(id).await?;
        }
        let count = orphans.len();
        self.meta.append(MetaCommand::Expire { ids: orphans }).await?;
        Ok(count)
    }

    /// Deletes the objects no live stream's run names any more (and that have been so
    /// for [`GARBAGE_GRACE`]) and forgets their ids.
    pub async fn collect_garbage(&mut self) -> Result<usize, String> {
        let now = Instant::now();
        let garbage = self.meta.with_state(|state| state.garbage_ids());
        self.garbage_seen.retain(|id, _| garbage.contains(id));
        let garbage: Vec<u64> = garbage
            .into_iter()
            .filter(|id| now.duration_since(*self.garbage_seen.entry(*id).or_insert(now)) >= GARBAGE_GRACE)
            .collect();
        if garbage.is_empty() {
            return Ok(0);
        }
        for &id in &garbage {
            self.objects.delete(id).await?;
        }
        let count = garbage.len();
        self.meta.append(MetaCommand::Forget { ids: garbage }).await?;
        Ok(count)
    }

    /// Rewrites the objects the compaction picks as one object; `false` when none is due.
    pub async fn compact_once(&mut self) -> Result<bool, String> {
        let block_bytes = self.policy.block_bytes as u64;
        let Some(mut chosen) = self.meta.with_state(|state| compaction(&state.object_bytes(), self.compact_bytes, block_bytes)) else {
            return Ok(false);
        };
        loop {
            // The live runs in the chosen objects, as the metadata has them.
            let wanted: Vec<(u64, StreamId, Offset, Offset)> = self.meta.with_state(|state| {
                state
                    .streams()
                    .flat_map(|(id, stream)| {
                        stream.runs.iter().filter(|run| chosen.contains(&run.2)).map(move |&(start, end, object)| (object, id, start, end))
                    })
                    .collect()
            });
            let mut found: BTreeMap<(StreamId, Offset), Run> = BTreeMap::new();
            for &id in &chosen {
                let bytes = self.objects.get(id).await?;
                let runs = object::decode(&bytes).map_err(|error| format!("{}: object {id}: {error}", self.objects.name()))?;
                for run in runs {
                    if wanted.iter().any(|&(object, stream, start, end)| object == id && stream == run.stream && start == run.start && end == run.end()) {
                        found.insert((run.stream, run.start), run);
                    }
                }
            }
            if found.len() != wanted.len() {
                return Err(format!("compacting objects {chosen:?}: {} of their {} live runs found in them", found.len(), wanted.len()));
            }
            // Each stream's runs, joined where one ends where the next starts.
            let mut joined: Vec<Run> = Vec::new();
            for ((stream, _), run) in found {
                match joined.last_mut() {
                    Some(last) if last.stream == stream && last.end() == run.start => last.bodies.extend(run.bodies),
                    _ => joined.push(run),
                }
            }
            if 13 + joined.len() * RUN_ENTRY_BYTES > COMMAND_BYTES_MAX && chosen.len() > 2 {
                // Too many runs for one command: fewer objects at once.
                chosen.truncate(chosen.len() / 2);
                continue;
            }
            let reserve = self.meta.with_state(|state| state.reserve(1));
            let MetaCommand::Reserve { first: id, .. } = reserve else { unreachable!("reserve gives a reservation") };
            self.meta.append(reserve).await?;
            self.objects.put(id, object::encode(&joined)).await?;
            let runs: Vec<RunEntry> = joined.iter().map(|run| RunEntry { stream: run.stream, start: run.start, end: run.end() }).collect();
            self.meta.append(MetaCommand::Compact { id, runs: runs.clone() }).await?;
            self.store.compacted(&runs, id);
            return Ok(true);
        }
    }

    /// Uploads whenever a block is due, until the metadata log fails.
    pub async fn run(mut self) {
        let tick = Duration::from_nanos(self.policy.block_age.0 / 4).clamp(Duration::from_millis(5), Duration::from_secs(1));
        loop {
            tokio::time::sleep(tick).await;
            if let Err(error) = self.collect_garbage().await {
                eprintln!("walab serve: deleting objects no stream needs: {error}");
            }
            if let Err(error) = self.compact_once().await {
                eprintln!("walab serve: compacting objects: {error}");
            }
            if self.meta.failed().is_some() {
                eprintln!("walab serve: uploads stopped until a restart; appends go on into the WAL");
                return;
            }
            if !self.store.upload_due(&self.policy) {
                continue;
            }
            // While blocks keep being due (a backlog), upload them back to back.
            while self.store.upload_due(&self.policy) {
                let uploaded = self.upload_once().await;
                if let Ok(false) = uploaded {
                    break;
                }
                if let Err(error) = uploaded {
                    eprintln!("walab serve: upload: {error}");
                    self.live(|| vec![Event::Note { text: format!("the upload failed ({error}); it tries again in a second") }]);
                    if self.meta.failed().is_some() {
                        eprintln!("walab serve: uploads stopped until a restart; appends go on into the WAL");
                        return;
                    }
                    tokio::time::sleep(RETRY_AFTER).await;
                }
            }
        }
    }

    /// Sends live events, made only if someone listens.
    fn live(&self, make: impl FnOnce() -> Vec<Event>) {
        if let Some(live) = self.store.live() {
            live.emit_with(make);
        }
    }

    /// Seals, uploads, commits and trims one block (in the order of
    /// [`walab_core::stream_store::cycle`]); `false` when nothing was pending.
    pub async fn upload_once(&mut self) -> Result<bool, String> {
        let Some(block) = seal(self.store.pending(self.policy.block_bytes), &self.policy) else {
            return Ok(false);
        };
        self.sealed += 1;
        let number = self.sealed;
        let records = block.records();
        self.live(|| {
            let bytes = block.objects.iter().flatten().map(|run| run.body_bytes() as u64).sum();
            vec![Event::BlockSealed { block: number, records, bytes, objects: block.objects.len() as u64 }]
        });
        let mut cycle = UploadCycle::new(block);
        loop {
            match cycle.next() {
                Step::Reserve { count } => {
                    // Only this task reserves: the next free id stays the one read here.
                    let reserve = self.meta.with_state(|state| state.reserve(count));
                    let MetaCommand::Reserve { first, .. } = reserve else { unreachable!("reserve gives a reservation") };
                    self.meta.append(reserve).await?;
                    cycle.reserved(first);
                }
                Step::Put { object, id } => {
                    let sync = OBJECT_SYNC_BASE + id;
                    self.live(|| vec![Event::SyncStart { sync, file: OBJECTS_FILE, batch: None, units: Vec::new() }]);
                    cycle.put_sent();
                    let put = self.objects.put(id, object::encode(&cycle.block().objects[object])).await;
                    self.live(|| {
                        let error = put.is_err().then_some(walab_core::group_commit::SyncError::Unavailable);
                        vec![Event::SyncEnd { sync, file: OBJECTS_FILE, ok: put.is_ok(), error }]
                    });
                    put?;
                    cycle.put_stored();
                }
                Step::AwaitPuts => unreachable!("each PUT is awaited as it is sent"),
                Step::Commit => {
                    self.crash_if_at(CrashPoint::BeforeCommit, &cycle.ids());
                    self.meta.append(cycle.commit_command()).await?;
                    cycle.committed();
                    self.live(|| vec![Event::Committed { block: number, records }]);
                    self.crash_if_at(CrashPoint::AfterCommit, &cycle.ids());
                }
                Step::Trim => {
                    self.store.committed(cycle.block(), &cycle.ids());
                    cycle.trimmed();
                }
                Step::Done => break,
            }
        }
        if self.meta.snapshot_due(self.snapshot_every) {
            self.meta.snapshot().await?;
        }
        Ok(true)
    }
}
