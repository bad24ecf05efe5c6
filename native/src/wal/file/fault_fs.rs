//! A disk that can fail: the fault-injecting [`WalFs`], in the manner of RocksDB's
//! `FaultInjectionTestFS`, as a thin file layer over the lab's device model.
//!
//! Killing a process with SIGKILL tests less than it seems: the kernel's page cache
//! survives the kill, so every byte the process wrote is still readable afterwards,
//! synced or not. A WAL that acknowledges before it syncs passes any number of SIGKILL
//! tests. Only a power loss separates "written" from "durable", and this module makes one
//! that a test can cause at will.
//!
//! The disk itself is [`walab_core::device::Device`], the model the teaching page draws:
//! page cache, atomic units, per-file syncs, failed-sync semantics per file system
//! ([`FailureProfile`]), power cuts that decide each in-flight unit's fate. So the crash
//! tests run the real file WAL on the very disk the lab shows, as TigerBeetle's simulated
//! storage serves its real code. This layer adds only what a file system has and a device
//! does not:
//!
//! - **Names.** Each created file is a device file; a directory table maps paths to them,
//!   twice: the names a listing shows now, and the names a power loss would leave (made
//!   durable by a directory sync). A file no name points at, now or durably, is deleted
//!   from the device.
//! - **Opens.** `sync_data` is the device's sync started and finished in one call. Like
//!   Linux's per-file `errseq_t` ([`Device::write_errors`]), every handle opened *before*
//!   a failure is told of it once, at its next sync, whichever handle met it: the file
//!   WAL's sync threads each sync through their own open, and none may miss an error
//!   another one met.
//! - **Faults on demand.** A chosen sync of a file fails ([`FaultFs::fail_sync_of`]: the
//!   device marks its units clean without writing them, so a later sync succeeds with
//!   nothing to do, and under ext4's and XFS's profile the page cache still shows bytes
//!   the media never got); a chosen write fails with an errno; a power cut
//!   ([`FaultFs::cut_power`], or scheduled with [`FaultFs::schedule_cut`] to fall on the
//!   n-th mutating call) either drops every unsynced unit ([`CutMode::DropUnsynced`]) or
//!   lets the kernel's write-back hand them all to the device first, where a seeded coin
//!   decides each one ([`CutMode::Tear`]): units reach the media whole, in any order.
//!   Names not made durable vanish; removes not made durable come back. From then on
//!   every call fails with EIO until [`FaultFs::restart`], the reboot.
//!
//! Directories created with `create_dir_all` are durable at once (a simplification: the
//! WAL syncs their parents anyway, and the interesting losses are the log files).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use walab_core::device::{Device, DeviceError, FailureProfile, FileId};

use super::fs::{WalFile, WalFs};

/// What a power cut does to the units written since the last sync.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CutMode {
    /// Every unsynced unit is lost.
    DropUnsynced,
    /// Each unsynced unit independently reached the media or not (a torn write).
    Tear,
}

#[derive(Debug)]
struct State {
    device: Device,
    names: BTreeMap<PathBuf, FileId>,
    durable_names: BTreeMap<PathBuf, FileId>,
    dirs: BTreeSet<PathBuf>,
    powered: bool,
    /// When on, [`WalFs::read_from_device`] reads the page cache, as a plain `read` does.
    reads_through_cache: bool,
    /// Mutating calls so far (writes, syncs, creates, removes, renames, directory syncs).
    ops: u64,
    /// Per file: `sync_data` calls on it so far, and which of them fail.
    file_syncs: HashMap<FileId, u64>,
    fail_file_syncs: BTreeSet<(FileId, u64)>,
    /// (file, errno): that file's next `write_at` fails.
    fail_file_write: Option<(FileId, i32)>,
    scheduled_cut: Option<(u64, CutMode, u64)>,
}

/// The in-memory, fault-injecting file system. Clones share one disk.
#[derive(Clone, Debug)]
pub struct FaultFs {
    state: Arc<Mutex<State>>,
    gate: Arc<SyncGate>,
}

/// Holds syncs back until a test lets them through, so a test can look at what the WAL
/// does *while* a sync runs. Open (no effect) unless closed.
#[derive(Debug, Default)]
struct SyncGate {
    /// `None`: open. `Some(n)`: closed, with `n` syncs allowed through.
    permits: Mutex<Option<u64>>,
    changed: Condvar,
    waiting: AtomicUsize,
    /// The one file whose syncs the gate holds (its id + 1; 0 holds none); others pass.
    file: AtomicU64,
}

impl SyncGate {
    fn pass(&self, file: FileId) {
        if self.file.load(Ordering::SeqCst) != u64::from(file.0) + 1 {
            return;
        }
        let mut permits = self.permits.lock().unwrap_or_else(|p| p.into_inner());
        self.waiting.fetch_add(1, Ordering::SeqCst);
        while *permits == Some(0) {
            permits = self.changed.wait(permits).unwrap_or_else(|p| p.into_inner());
        }
        if let Some(n) = permits.as_mut() {
            *n -= 1;
        }
        self.waiting.fetch_sub(1, Ordering::SeqCst);
    }
}

fn eio() -> io::Error {
    io::Error::from_raw_os_error(libc::EIO)
}

/// A handle whose file the device no longer has (removed and forgotten, or lost to a cut).
fn stale(_: DeviceError) -> io::Error {
    io::Error::from_raw_os_error(libc::ESTALE)
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, format!("{}: no such file", path.display()))
}

impl State {
    fn powered(&self) -> io::Result<()> {
        if self.powered {
            Ok(())
        } else {
            Err(eio())
        }
    }

    /// Counts a mutating call; cuts the power if this is the scheduled one (and then the
    /// call fails).
    fn mutating_call(&mut self) -> io::Result<()> {
        self.powered()?;
        self.ops += 1;
        if let Some((at, mode, seed)) = self.scheduled_cut {
            if self.ops >= at {
                self.scheduled_cut = None;
                self.cut(mode, seed);
                return Err(eio());
            }
        }
        Ok(())
    }

    fn cut(&mut self, mode: CutMode, seed: u64) {
        match mode {
            CutMode::DropUnsynced => self.device.cut_power(|_| false),
            CutMode::Tear => {
                self.device.write_back_all();
                let kept = self.device.sample_kept(seed);
                self.device.cut_power(|unit| kept[unit]);
            }
        }
        self.names = self.durable_names.clone();
        self.forget_unnamed();
        self.powered = false;
    }

    /// Deletes from the device every file no name points at, now or durably.
    fn forget_unnamed(&mut self) {
        let named: BTreeSet<FileId> = self.names.values().chain(self.durable_names.values()).copied().collect();
        let unnamed: Vec<FileId> = self.device.live_files().filter(|file| !named.contains(file)).collect();
        for file in unnamed {
            let _ = self.device.delete(file);
        }
    }

    fn file_of(&self, path: &Path) -> io::Result<FileId> {
        self.names.get(path).copied().ok_or_else(|| not_found(path))
    }
}

impl FaultFs {
    /// An empty disk whose atomic unit is `unit_bytes` (512 or 4096 on real devices), on
    /// ext4's or XFS's terms (a failed write-back keeps its bytes in the page cache).
    pub fn new(unit_bytes: u64) -> FaultFs {
        FaultFs::with_profile(unit_bytes, FailureProfile::KeepCache)
    }

    /// An empty disk whose file system handles failed write-backs as `profile` says.
    pub fn with_profile(unit_bytes: u64, profile: FailureProfile) -> FaultFs {
        assert!(unit_bytes > 0, "unit_bytes > 0");
        FaultFs {
            state: Arc::new(Mutex::new(State {
                device: Device::with_profile(unit_bytes as usize, profile),
                names: BTreeMap::new(),
                durable_names: BTreeMap::new(),
                dirs: BTreeSet::new(),
                powered: true,
                reads_through_cache: false,
                ops: 0,
                file_syncs: HashMap::new(),
                fail_file_syncs: BTreeSet::new(),
                fail_file_write: None,
                scheduled_cut: None,
            })),
            gate: Arc::default(),
        }
    }

    /// Holds every later sync of the file at `path` (others, like a spare segment being
    /// zero-filled, pass) at a gate until [`FaultFs::allow_syncs`] lets it through.
    pub fn close_sync_gate_of(&self, path: &Path) -> io::Result<()> {
        let file = self.lock().file_of(path)?;
        self.gate.file.store(u64::from(file.0) + 1, Ordering::SeqCst);
        *self.gate.permits.lock().unwrap_or_else(|p| p.into_inner()) = Some(0);
        self.gate.changed.notify_all();
        Ok(())
    }

    /// Lets `n` more syncs through a closed gate.
    pub fn allow_syncs(&self, n: u64) {
        if let Some(permits) = self.gate.permits.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
            *permits += n;
        }
        self.gate.changed.notify_all();
    }

    /// Opens the gate for good.
    pub fn open_sync_gate(&self) {
        *self.gate.permits.lock().unwrap_or_else(|p| p.into_inner()) = None;
        self.gate.changed.notify_all();
    }

    /// How many syncs are held at the gate now.
    pub fn syncs_at_gate(&self) -> usize {
        self.gate.waiting.load(Ordering::SeqCst)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Makes the `n`-th `sync_data` of the file at `path` from now (1 = its next one)
    /// fail with EIO. Syncs of other files (a spare segment being prepared on another
    /// thread) neither count nor take the failure.
    pub fn fail_sync_of(&self, path: &Path, n: u64) -> io::Result<()> {
        let mut state = self.lock();
        let file = state.file_of(path)?;
        let at = state.file_syncs.get(&file).copied().unwrap_or(0) + n;
        state.fail_file_syncs.insert((file, at));
        Ok(())
    }

    /// Makes the next `write_at` of the file at `path` fail with `errno` (ENOSPC for a
    /// full disk); writes to other files (a spare segment being zero-filled on another
    /// thread) pass.
    pub fn fail_next_write_of(&self, path: &Path, errno: i32) -> io::Result<()> {
        let mut state = self.lock();
        let file = state.file_of(path)?;
        state.fail_file_write = Some((file, errno));
        Ok(())
    }

    /// Cuts the power during the `n`-th mutating call from now (1 = the next one).
    pub fn schedule_cut(&self, n: u64, mode: CutMode, seed: u64) {
        let mut state = self.lock();
        let at = state.ops + n.max(1);
        state.scheduled_cut = Some((at, mode, seed));
    }

    /// Cuts the power now. A sync that is running holds the disk's lock, so a cut
    /// falls either before it (its units are torn or dropped) or after it (they are kept).
    pub fn cut_power(&self, mode: CutMode, seed: u64) {
        let mut state = self.lock();
        if state.powered {
            state.scheduled_cut = None;
            state.cut(mode, seed);
        }
    }

    /// Powers the disk back on (the reboot after a cut). The files are what the media kept.
    pub fn restart(&self) {
        let mut state = self.lock();
        state.powered = true;
        state.scheduled_cut = None;
        state.fail_file_syncs.clear();
        state.fail_file_write = None;
    }

    /// True while the power is on.
    pub fn powered(&self) -> bool {
        self.lock().powered
    }

    /// The file as the page cache shows it (what a plain `read` would return after a
    /// failed sync), for tests that show why recovery must not read through the cache.
    pub fn read_page_cache(&self, path: &Path) -> io::Result<Vec<u8>> {
        let state = self.lock();
        let file = state.file_of(path)?;
        state.device.read_cache(file).map(<[u8]>::to_vec).ok_or_else(|| not_found(path))
    }

    /// Makes [`WalFs::read_from_device`] read through the page cache, as a recovery that
    /// forgot to drop the cached pages would: for tests that show what that costs.
    pub fn read_through_page_cache(&self, on: bool) {
        self.lock().reads_through_cache = on;
    }
}

struct FaultFile {
    state: Arc<Mutex<State>>,
    gate: Arc<SyncGate>,
    file: FileId,
    /// The file's write-back errors this handle has been told of (or that happened
    /// before it was opened).
    errors_seen: u64,
}

impl FaultFile {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl WalFile for FaultFile {
    fn write_at(&mut self, offset: u64, bytes: &[u8]) -> io::Result<()> {
        let mut state = self.lock();
        state.mutating_call()?;
        if let Some((file, errno)) = state.fail_file_write {
            if file == self.file {
                state.fail_file_write = None;
                return Err(io::Error::from_raw_os_error(errno));
            }
        }
        state.device.write(self.file, offset as usize, bytes).map_err(stale)?;
        Ok(())
    }

    fn sync_data(&mut self) -> io::Result<()> {
        self.gate.pass(self.file);
        let shared = Arc::clone(&self.state);
        let mut state = shared.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        state.mutating_call()?;
        let number = {
            let count = state.file_syncs.entry(self.file).or_insert(0);
            *count += 1;
            *count
        };
        let failing = state.fail_file_syncs.remove(&(self.file, number));
        let device = &mut state.device;
        let (sync, _) = device.start_sync(self.file).map_err(stale)?;
        if failing {
            // Linux after a write-back error: the pages are marked clean, not written,
            // and every open of the file learns of the error at its next sync.
            device.fail_sync(sync).map_err(stale)?;
            self.errors_seen = device.write_errors(self.file);
            return Err(eio());
        }
        device.finish_sync(sync).map_err(stale)?;
        let errors = device.write_errors(self.file);
        if self.errors_seen < errors {
            // Another handle's sync met an error this handle has not been told of.
            self.errors_seen = errors;
            return Err(eio());
        }
        Ok(())
    }

    fn len(&self) -> io::Result<u64> {
        let state = self.lock();
        state.powered()?;
        let bytes = state.device.read_cache(self.file).ok_or_else(|| io::Error::from_raw_os_error(libc::ESTALE))?;
        Ok(bytes.len() as u64)
    }
}

impl WalFs for FaultFs {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        let mut state = self.lock();
        state.powered()?;
        let mut cursor = Some(dir);
        while let Some(current) = cursor {
            if current.as_os_str().is_empty() {
                break;
            }
            state.dirs.insert(current.to_path_buf());
            cursor = current.parent();
        }
        Ok(())
    }

    fn create_new(&self, path: &Path) -> io::Result<Box<dyn WalFile>> {
        let mut state = self.lock();
        state.mutating_call()?;
        if state.names.contains_key(path) {
            return Err(io::Error::from(io::ErrorKind::AlreadyExists));
        }
        let file = state.device.register(&path.to_string_lossy());
        state.device.create(file, 0).map_err(stale)?;
        state.names.insert(path.to_path_buf(), file);
        Ok(Box::new(FaultFile { state: Arc::clone(&self.state), gate: Arc::clone(&self.gate), file, errors_seen: 0 }))
    }

    fn open_write(&self, path: &Path) -> io::Result<Box<dyn WalFile>> {
        let state = self.lock();
        state.powered()?;
        let file = state.file_of(path)?;
        let errors_seen = state.device.write_errors(file);
        Ok(Box::new(FaultFile { state: Arc::clone(&self.state), gate: Arc::clone(&self.gate), file, errors_seen }))
    }

    fn read_from_device(&self, path: &Path) -> io::Result<Vec<u8>> {
        let state = self.lock();
        state.powered()?;
        let file = state.file_of(path)?;
        let bytes = if state.reads_through_cache { state.device.read_cache(file) } else { state.device.read_media(file) };
        bytes.map(<[u8]>::to_vec).ok_or_else(|| not_found(path))
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let state = self.lock();
        state.powered()?;
        if !state.dirs.contains(dir) {
            return Err(not_found(dir));
        }
        let mut names: Vec<String> = state
            .names
            .keys()
            .chain(state.dirs.iter())
            .filter(|path| path.parent() == Some(dir))
            .filter_map(|path| path.file_name().map(|name| name.to_string_lossy().into_owned()))
            .collect();
        names.sort();
        names.dedup();
        Ok(names)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        let mut state = self.lock();
        state.mutating_call()?;
        // The device file lives on while a durable name still points at it.
        state.names.remove(path).map(|_| ()).ok_or_else(|| not_found(path))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut state = self.lock();
        state.mutating_call()?;
        let file = state.names.remove(from).ok_or_else(|| not_found(from))?;
        state.names.insert(to.to_path_buf(), file);
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let mut state = self.lock();
        state.mutating_call()?;
        let now: Vec<(PathBuf, FileId)> =
            state.names.iter().filter(|(path, _)| path.parent() == Some(dir)).map(|(p, file)| (p.clone(), *file)).collect();
        state.durable_names.retain(|path, _| path.parent() != Some(dir));
        state.durable_names.extend(now);
        state.forget_unnamed();
        Ok(())
    }

    fn lock_dir(&self, _dir: &Path) -> io::Result<Box<dyn Send>> {
        Ok(Box::new(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(name: &str) -> PathBuf {
        PathBuf::from("/d").join(name)
    }

    fn setup() -> FaultFs {
        let fs = FaultFs::new(4);
        fs.create_dir_all(Path::new("/d")).unwrap();
        fs
    }

    #[test]
    fn synced_bytes_survive_a_cut_and_unsynced_ones_do_not() {
        let fs = setup();
        let mut file = fs.create_new(&p("a")).unwrap();
        fs.sync_dir(Path::new("/d")).unwrap();
        file.write_at(0, b"durable!").unwrap();
        file.sync_data().unwrap();
        file.write_at(8, b"volatile").unwrap();
        fs.cut_power(CutMode::DropUnsynced, 1);
        assert!(file.write_at(0, b"x").is_err());
        fs.restart();
        assert_eq!(fs.read_from_device(&p("a")).unwrap(), b"durable!");
    }

    #[test]
    fn a_torn_write_keeps_whole_units_only() {
        let fs = setup();
        let mut file = fs.create_new(&p("a")).unwrap();
        fs.sync_dir(Path::new("/d")).unwrap();
        file.write_at(0, &[0u8; 32]).unwrap();
        file.sync_data().unwrap();
        file.write_at(0, &[9u8; 32]).unwrap();
        fs.cut_power(CutMode::Tear, 42);
        fs.restart();
        let bytes = fs.read_from_device(&p("a")).unwrap();
        assert_eq!(bytes.len(), 32);
        for unit in bytes.chunks(4) {
            assert!(unit == [0, 0, 0, 0] || unit == [9, 9, 9, 9], "unit {unit:?} is neither old nor new");
        }
    }

    #[test]
    fn a_file_whose_directory_was_not_synced_vanishes() {
        let fs = setup();
        let mut file = fs.create_new(&p("a")).unwrap();
        file.write_at(0, b"abc").unwrap();
        file.sync_data().unwrap();
        fs.cut_power(CutMode::DropUnsynced, 1);
        fs.restart();
        assert!(fs.read_from_device(&p("a")).is_err());
        assert_eq!(fs.list(Path::new("/d")).unwrap(), Vec::<String>::new());
    }

    #[test]
    fn a_remove_not_made_durable_comes_back() {
        let fs = setup();
        let mut file = fs.create_new(&p("a")).unwrap();
        file.write_at(0, b"abc").unwrap();
        file.sync_data().unwrap();
        fs.sync_dir(Path::new("/d")).unwrap();
        fs.remove(&p("a")).unwrap();
        assert!(fs.list(Path::new("/d")).unwrap().is_empty());
        fs.cut_power(CutMode::DropUnsynced, 1);
        fs.restart();
        assert_eq!(fs.read_from_device(&p("a")).unwrap(), b"abc");
    }

    #[test]
    fn a_failed_sync_marks_pages_clean_without_writing_them() {
        let fs = setup();
        let mut file = fs.create_new(&p("a")).unwrap();
        fs.sync_dir(Path::new("/d")).unwrap();
        file.write_at(0, b"lost").unwrap();
        fs.fail_sync_of(&p("a"), 1).unwrap();
        assert_eq!(file.sync_data().unwrap_err().raw_os_error(), Some(libc::EIO));
        // The retry "succeeds": nothing is dirty any more. This is fsyncgate.
        file.sync_data().unwrap();
        assert_eq!(fs.read_page_cache(&p("a")).unwrap(), b"lost");
        assert_eq!(fs.read_from_device(&p("a")).unwrap(), b"\0\0\0\0");
    }

    #[test]
    fn a_write_back_error_reaches_every_handle_opened_before_it_once() {
        let fs = setup();
        let mut writer = fs.create_new(&p("a")).unwrap();
        let mut first = fs.open_write(&p("a")).unwrap();
        let mut second = fs.open_write(&p("a")).unwrap();
        writer.write_at(0, b"lost").unwrap();
        fs.fail_sync_of(&p("a"), 1).unwrap();
        assert_eq!(first.sync_data().unwrap_err().raw_os_error(), Some(libc::EIO));
        // Nothing is dirty any more, yet the other open learns of the error: a sync on
        // it cannot vouch for "lost".
        assert_eq!(second.sync_data().unwrap_err().raw_os_error(), Some(libc::EIO));
        assert_eq!(writer.sync_data().unwrap_err().raw_os_error(), Some(libc::EIO));
        // Once told, each handle's later syncs succeed; a handle opened after is never told.
        second.sync_data().unwrap();
        fs.open_write(&p("a")).unwrap().sync_data().unwrap();
    }

    #[test]
    fn a_scheduled_cut_falls_on_the_chosen_call() {
        let fs = setup();
        let mut file = fs.create_new(&p("a")).unwrap();
        fs.sync_dir(Path::new("/d")).unwrap();
        fs.schedule_cut(2, CutMode::DropUnsynced, 7);
        file.write_at(0, b"one").unwrap();
        assert!(file.sync_data().is_err());
        assert!(!fs.powered());
        fs.restart();
        assert_eq!(fs.read_from_device(&p("a")).unwrap(), b"");
    }

    #[test]
    fn a_failed_write_reports_the_chosen_errno() {
        let fs = setup();
        let mut file = fs.create_new(&p("a")).unwrap();
        fs.fail_next_write_of(&p("a"), libc::ENOSPC).unwrap();
        assert_eq!(file.write_at(0, b"x").unwrap_err().raw_os_error(), Some(libc::ENOSPC));
        file.write_at(0, b"x").unwrap();
    }
}
