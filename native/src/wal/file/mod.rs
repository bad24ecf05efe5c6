//! The file backend: segmented log files on a local disk.
//!
//! # Layout
//!
//! A log lives in `DIR/<cluster>/<node>/` as files `wal-<segment>.log`, the segment
//! number zero-padded to 20 digits so that a directory listing is in log order, plus a
//! `LOCK` file that one process at a time holds (`flock`), so two processes never append
//! to one log.
//!
//! # Why segments are zero-filled
//!
//! Part 2 of the teaching page: an `fdatasync` that extends a file must also write the
//! file's new size, a metadata update, so every sync of a growing log costs more than a
//! sync of an overwrite. So each segment is created at its full size by *writing* zeros
//! (not `fallocate`, whose unwritten extents still need a metadata update at the first
//! write into them), synced, and its directory synced so the name survives a power
//! loss. Appends then only overwrite zeros. The zeros also mark where the log ends: the
//! recovery scan stops cleanly at a zero header. While one segment fills up, a helper
//! thread prepares the next one, so a segment switch rarely waits for the zero-fill.
//!
//! Segments are not recycled: the tiny-store format carries no log number, so an old
//! record left in a reused file could pass its checksum after a crash (Part 7's "recycled
//! segments"). A removed segment is gone; a new one is zero-filled.
//!
//! # Syncing
//!
//! Every batch is written on the driver thread, in log order. A batch the machine marks
//! [`Batch::inline`] (a lone writer's: [`walab_core::group_commit::schedule`]) is then
//! synced on the driver thread; with `--inflight 2` or more every other batch's
//! `fdatasync` runs on one of the sync threads ([`sync_pool`]), so syncs can overlap (by
//! default, `--inflight 1`, every sync is inline, one at a time). Each sync thread syncs
//! through its own open of the segment, made when the segment becomes current. The
//! driver and the sync threads run on the CPUs that take the device's completion
//! interrupts, where that is a strict subset of the CPUs ([`affinity`],
//! `--sync-cpus`).
//!
//! # Formats
//!
//! `--format tiny` (the default) writes the tiny store's records, one per write, at the
//! offsets the group-commit machine gives. `--format leveldb` writes LevelDB's log
//! format with one `WriteBatch` record per commit group ([`leveldb_segment`]);
//! `walab inspect --format leveldb` and LevelDB's own reader can read those segments.
//! A `FORMAT` file in the log directory records which, and the segment size, when the
//! log is created (`tiny` on its first line, `segment-bytes N` on its second). Opening
//! with the other format is refused; opening without `--segment-bytes` adopts the
//! recorded size, and opening with another one is refused by name.
//!
//! # Reading only
//!
//! A backend made with `create = false` (`walab dump`) reads the log and changes
//! nothing: it neither cuts a torn tail (it reports it), removes, creates nor prepares
//! a segment, writes no FORMAT, and takes the lock only where a writer left a `LOCK`.
//!
//! # Recovery
//!
//! Opening reads every segment *from the device* ([`fs::WalFs::read_from_device`],
//! which drops cached pages first), one at a time, and feeds each to the core's recovery
//! scan ([`walab_core::scan::TinyScanner`]), oldest first, so that only one segment is in
//! memory; the records it accepts are handed on as it finds them
//! ([`Backend::recover_streaming`]) and only a summary per segment is kept for the plan:
//!
//! - a clean end (zeros) of the last segment with records: nothing to repair;
//! - a damaged record (torn or checksum) in the last segment with records: that is a
//!   torn tail, which nothing acknowledged can be in (acknowledgement waits for the
//!   sync). Recovery overwrites it with zeros from the last good record to the last
//!   non-zero byte and syncs, so that a record appended there later cannot be followed
//!   by a stale one that happens to line up, and the next scan ends cleanly;
//! - a damaged record with records in a *later* segment: the log is corrupt, and
//!   opening fails with [`WalError::Corrupt`] naming the segment and the byte.
//!
//! These decisions are the core's ([`walab_core::file_log::plan_recovery`]); this backend
//! reads the files, runs the scan, and carries the plan out.
//!
//! Empty segments after the last one with records (a prepared spare, or one left half
//! zero-filled by a crash) are removed and appending resumes in the last segment with
//! records, right after its last good record.

pub mod affinity;
pub mod fault_fs;
mod format;
pub mod fs;
pub mod leveldb_segment;
mod recovery;
pub mod sync_pool;
#[cfg(test)]
mod tests;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;

use walab_core::group_commit::{self, Batch, SyncError};
use walab_core::session::preset::{Storage, Tuning, LOCAL_FILE_INFLIGHT};
use walab_core::codec::leveldb::{LogFormat, LogScanner, LogSegment};
use walab_core::codec::tiny::TinyRecord;
use walab_core::codec::tiny_group;
use walab_core::file_log::{plan_recovery, RecoveryPlan, SegmentFile, SegmentFound, SegmentLayout, TornTail};
use walab_core::scan::{CheckLog, ScanStop, TinyScanner};

pub use self::format::FORMAT_FILE_NAME;
use self::fs::{create_zero_filled, create_zero_filled_paced, WalFile, WalFs};
use self::sync_pool::{SyncHandles, SyncPool};
use super::{sync_error_of, Backend, Completion, Recovered, WalError};

/// Bytes per segment unless `--segment-bytes` says otherwise: the session's preset.
pub use walab_core::session::preset::LOCAL_SEGMENT_BYTES as SEGMENT_BYTES_DEFAULT;

/// The file name of a segment.
pub fn segment_file_name(segment: u64) -> String {
    format!("wal-{segment:020}.log")
}

/// The segment number of a file name, if it is a segment's.
pub fn parse_segment_file_name(name: &str) -> Option<u64> {
    let digits = name.strip_prefix("wal-")?.strip_suffix(".log")?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

type Prepared = io::Result<Box<dyn WalFile>>;

/// The next segment: being zero-filled by a helper thread, or found ready at recovery.
enum Spare {
    Preparing(JoinHandle<Prepared>),
    Ready(Box<dyn WalFile>),
}

/// How records are laid out in the segment files.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SegmentFormat {
    /// The tiny store's format: one record per write.
    Tiny,
    /// LevelDB's log format: 32 KiB blocks, one `WriteBatch` record per commit group.
    Leveldb,
}

impl SegmentFormat {
    pub fn name(self) -> &'static str {
        match self {
            SegmentFormat::Tiny => "tiny",
            SegmentFormat::Leveldb => "leveldb",
        }
    }
}

/// A log in one directory, through a [`WalFs`].
pub struct FileBackend {
    fs: Arc<dyn WalFs>,
    dir: PathBuf,
    segment_bytes_max: u64,
    format: SegmentFormat,
    /// `--format leveldb`: where the next group record goes in the current segment.
    group_log: leveldb_segment::GroupLog,
    /// The segment being appended to, and its open file.
    current: Option<(u64, Box<dyn WalFile>)>,
    /// The next segment being zero-filled by a helper thread.
    spare: Option<(u64, Spare)>,
    /// Create the directory if missing and repair what recovery finds (load, bench), or
    /// refuse a missing log and only read (dump).
    create: bool,
    /// No `--segment-bytes` was given: take the size the log recorded.
    adopt_recorded_size: bool,
    _lock: Option<Box<dyn Send>>,
    /// The sync threads, if syncs may overlap ([`FileBackend::with_sync_threads`]).
    pool: Option<SyncPool>,
    /// The current segment's handles for the sync threads.
    sync_handles: Option<Arc<SyncHandles>>,
    /// The CPUs the syncing threads run on ([`FileBackend::with_sync_cpus`]).
    sync_cpus: Option<Vec<usize>>,
    /// What the user set on top of the file WAL's preset ([`FileBackend::with_tuning`]).
    tuning: Tuning,
    /// What opening found about FORMAT, for recovery's note.
    format_note: Option<String>,
}

impl FileBackend {
    /// A tiny-store-format log (tests and the power-loss harness's default).
    pub fn new(fs: Arc<dyn WalFs>, dir: PathBuf, segment_bytes_max: u64, create: bool) -> FileBackend {
        FileBackend::with_format(fs, dir, segment_bytes_max, create, SegmentFormat::Tiny)
    }

    pub fn with_format(
        fs: Arc<dyn WalFs>,
        dir: PathBuf,
        segment_bytes_max: u64,
        create: bool,
        format: SegmentFormat,
    ) -> FileBackend {
        FileBackend {
            fs,
            dir,
            segment_bytes_max,
            format,
            group_log: leveldb_segment::GroupLog::default(),
            current: None,
            spare: None,
            create,
            adopt_recorded_size: false,
            _lock: None,
            pool: None,
            sync_handles: None,
            sync_cpus: None,
            tuning: Tuning::default(),
            format_note: None,
        }
    }

    /// What the user set on top of the file WAL's preset (`--inflight`: the sync
    /// threads to start, [`LOCAL_FILE_INFLIGHT`] by default; `--cohort-hold`). The
    /// machine then runs as many syncs at once as threads actually started.
    pub fn with_tuning(mut self, tuning: Tuning) -> FileBackend {
        self.tuning = tuning;
        self.with_sync_threads(tuning.inflight_max.unwrap_or(LOCAL_FILE_INFLIGHT))
    }

    /// Takes the segment size the log recorded when it was created instead of this
    /// backend's (`--segment-bytes` not given); otherwise another recorded size is
    /// refused by name.
    pub fn with_recorded_geometry(mut self, adopt: bool) -> FileBackend {
        self.adopt_recorded_size = adopt;
        self
    }

    /// Lets up to `threads` syncs run at once, each on a thread of its own (0 or 1:
    /// every sync inline on the driver thread). If the threads cannot be started, syncs
    /// stay inline.
    pub fn with_sync_threads(mut self, threads: usize) -> FileBackend {
        self.pool = if threads >= 2 { SyncPool::new(threads, self.sync_cpus.clone()).ok() } else { None };
        self
    }

    /// Runs the threads that sync (the driver, the sync threads) on `cpus` (see
    /// [`affinity`]).
    pub fn with_sync_cpus(mut self, cpus: Option<Vec<usize>>) -> FileBackend {
        self.sync_cpus = cpus;
        if let Some(pool) = self.pool.take() {
            // Threads already started stay where they are: start them again.
            let threads = pool.threads();
            drop(pool);
            return self.with_sync_threads(threads);
        }
        self
    }

    /// Makes `segment`'s file the one appended to, with its sync threads' handles.
    fn set_current(&mut self, segment: u64, file: Box<dyn WalFile>) -> io::Result<()> {
        self.sync_handles = None;
        self.current = Some((segment, file));
        self.group_log.restart();
        if let Some(pool) = &self.pool {
            // Opened before the first batch is written: every write-back error of this
            // segment reaches every handle (see `sync_pool`).
            match SyncHandles::open(self.fs.as_ref(), &self.path(segment), pool.threads()) {
                Ok(handles) => self.sync_handles = Some(handles),
                Err(error) => {
                    self.current = None;
                    return Err(error);
                }
            }
        }
        Ok(())
    }

    /// Bytes of a segment file on disk.
    fn file_bytes(&self) -> u64 {
        match self.format {
            SegmentFormat::Tiny => self.segment_bytes_max,
            SegmentFormat::Leveldb => tiny_group::log_bytes_max(self.segment_bytes_max),
        }
    }

    fn path(&self, segment: u64) -> PathBuf {
        self.dir.join(segment_file_name(segment))
    }

    fn open_error(&self, what: &str, error: io::Error) -> WalError {
        WalError::Open(format!("{}: {what}: {}", self.dir.display(), describe_io(&error)))
    }

    /// Starts zero-filling `segment` on a helper thread.
    fn prepare_spare(&mut self, segment: u64) {
        if self.spare.as_ref().is_some_and(|(s, _)| *s == segment) {
            return;
        }
        let fs = Arc::clone(&self.fs);
        let path = self.path(segment);
        let len = self.file_bytes();
        let spawned = std::thread::Builder::new()
            .name("wal-zero-fill".to_string())
            .spawn(move || create_zero_filled_paced(fs.as_ref(), &path, len));
        // If no thread can be started, the switch zero-fills inline instead.
        if let Ok(handle) = spawned {
            self.spare = Some((segment, Spare::Preparing(handle)));
        }
    }

    /// Makes `segment` the current one: the prepared spare if it is that segment, or a
    /// new zero-filled file made now.
    fn switch_to(&mut self, segment: u64) -> io::Result<()> {
        let file = match self.spare.take() {
            Some((spare, Spare::Ready(file))) if spare == segment => file,
            Some((spare, Spare::Preparing(handle))) if spare == segment => match handle.join() {
                Ok(prepared) => prepared?,
                Err(_) => return Err(io::Error::other("the zero-fill thread panicked")),
            },
            other => {
                if let Some((_, Spare::Preparing(handle))) = other {
                    // A spare for another segment is of no use; let it finish.
                    let _ = handle.join();
                }
                create_zero_filled(self.fs.as_ref(), &self.path(segment), self.file_bytes())?
            }
        };
        self.set_current(segment, file)?;
        self.prepare_spare(segment + 1);
        Ok(())
    }

    fn persist_now(&mut self, batch: &Batch) -> io::Result<()> {
        self.write_now(batch)?;
        let (_, file) = self.current.as_mut().expect("switched above");
        file.sync_data()
    }

    /// Writes a batch, switching to its segment first if need be (no sync).
    fn write_now(&mut self, batch: &Batch) -> io::Result<()> {
        if self.current.as_ref().is_none_or(|(segment, _)| *segment != batch.segment) {
            self.switch_to(batch.segment)?;
        }
        self.write_batch(batch)
    }

    /// Writes a batch into the current segment in the log's format (no sync).
    fn write_batch(&mut self, batch: &Batch) -> io::Result<()> {
        let file_bytes = self.file_bytes();
        let (_, file) = self.current.as_mut().expect("a current segment");
        match self.format {
            SegmentFormat::Tiny => {
                let end = batch.offset + batch.bytes.len() as u64;
                assert!(end <= file_bytes, "a batch never passes its segment's end");
                file.write_at(batch.offset, &batch.bytes)
            }
            SegmentFormat::Leveldb => self.group_log.write(file.as_mut(), batch, file_bytes),
        }
    }
}

/// An I/O error in the words a user needs (`permission denied`, `no space left on device`).
pub fn describe_io(error: &io::Error) -> String {
    let text = error.to_string();
    // std appends " (os error N)"; keep the words, lowercase them.
    let words = text.split(" (os error").next().unwrap_or(&text);
    words.to_lowercase()
}

impl Backend for FileBackend {
    fn describe(&self) -> String {
        format!("file://{}", self.dir.display())
    }

    fn recover(&mut self) -> Result<Recovered, WalError> {
        let mut records = Vec::new();
        let mut recovered = self.recover_streaming(&mut |record| records.push(record))?;
        recovered.records = records;
        Ok(recovered)
    }

    fn recover_streaming(&mut self, visit: &mut dyn FnMut(TinyRecord)) -> Result<Recovered, WalError> {
        let names = self.open_dir()?;
        let (files, found, stop) = self.scan_segments(&names, visit)?;
        // Step 3: the core decides what the log is and what to repair.
        let layout = SegmentLayout {
            file_bytes: self.file_bytes(),
            fresh_segment_on_open: self.format == SegmentFormat::Leveldb,
        };
        let plan = plan_recovery(&files, &found, stop, layout)
            .map_err(|corruption| WalError::Corrupt(format!("{}: {corruption}", self.path(corruption.segment).display())))?;
        let repaired = self.repair_torn_tail(plan.torn_tail)?;
        let repaired = match (self.format_note.take(), repaired) {
            (Some(format), Some(tail)) => Some(format!("{format}; {tail}")),
            (format, tail) => format.or(tail),
        };
        if self.create {
            self.get_ready_to_append(&plan)?;
        }
        // Reading only: what a writer would remove, create or prepare stays as it is.
        Ok(Recovered {
            records: Vec::new(),
            next_seq: plan.next_seq,
            lsn: plan.lsn,
            segment: plan.segment,
            segment_bytes: plan.segment_bytes,
            segments: plan.segments,
            repaired,
            ring: None,
        })
    }

    fn segment_bytes_max(&self) -> u64 {
        self.segment_bytes_max
    }

    fn machine_config(&self) -> group_commit::Config {
        let sync_threads = self.pool.as_ref().map_or(1, SyncPool::threads);
        Storage::LocalFile { sync_threads }.config(&self.tuning)
    }

    fn sync_cpus(&self) -> Option<Vec<usize>> {
        self.sync_cpus.clone()
    }

    fn persist(&mut self, batch: Batch, done: Completion) {
        // The machine decides ([`group_commit::schedule`]), from this backend's own
        // settings: without sync threads it runs one sync at a time, all inline.
        if batch.inline {
            let result = self.persist_now(&batch).map_err(|error| sync_error_of(&error));
            if result.is_err() {
                // After a failed sync the open file is not trusted again; a reopen starts over.
                self.current = None;
            }
            done.complete(result, batch.bytes);
            return;
        }
        // The write goes to the page cache in log order here; the sync runs on a sync
        // thread, beside the one already running.
        match self.write_now(&batch) {
            Ok(()) => match (&self.pool, &self.sync_handles) {
                (Some(pool), Some(handles)) => pool.submit(Arc::clone(handles), done, batch.bytes),
                // Not reached: the machine marks a batch for a sync thread only when
                // this backend's settings say threads run, and a segment becomes current
                // only with its handles.
                _ => done.complete(Err(SyncError::Unavailable), batch.bytes),
            },
            Err(error) => {
                self.current = None;
                done.complete(Err(sync_error_of(&error)), batch.bytes);
            }
        }
    }

    fn write_unsynced(&mut self, batch: &Batch) -> Result<(), SyncError> {
        self.write_now(batch).map_err(|e| sync_error_of(&e))
    }

    fn remove_segments(&mut self, segments: &[u64]) -> Result<(), WalError> {
        for &segment in segments {
            self.fs
                .remove(&self.path(segment))
                .map_err(|e| self.open_error(&format!("cannot remove {}", segment_file_name(segment)), e))?;
        }
        self.fs.sync_dir(&self.dir).map_err(|e| self.open_error("cannot sync the log directory", e))
    }
}

impl Drop for FileBackend {
    fn drop(&mut self) {
        if let Some((_, Spare::Preparing(handle))) = self.spare.take() {
            let _ = handle.join();
        }
    }
}

/// The scan's stop reason in words (the core's).
pub use walab_core::file_log::stop_words;

/// The directory of a node's log under a base directory.
pub fn node_dir(base: &Path, cluster: &str, node: &str) -> PathBuf {
    base.join(cluster).join(node)
}
