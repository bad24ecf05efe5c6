//! A disk that can fail: the fault-injecting [`WalFs`], in the manner of RocksDB's
//! `FaultInjectionTestFS`.
//!
//! Killing a process with SIGKILL tests less than it seems: the kernel's page cache
//! survives the kill, so every byte the process wrote is still readable afterwards,
//! synced or not. A WAL that acknowledges before it syncs passes any number of SIGKILL
//! tests. Only a power loss separates "written" from "durable", and this module makes one
//! that a test can cause at will.
//!
//! [`FaultFs`] keeps every file in memory twice: the bytes as the page cache holds them
//! (`current`) and the bytes as the device holds them (`durable`), plus the set of
//! *units* (atomic device sectors, `unit_bytes` each) written since the last sync.
//! Directories are modelled the same way: the names a listing shows now, and the names a
//! power loss would leave (those made durable by a directory sync).
//!
//! - `sync_data` copies the file's dirty units to the device and clears them.
//! - A sync chosen with [`FaultFs::fail_sync`] returns EIO and does what Linux may do: it
//!   marks the dirty pages clean *without* writing them, so a later sync succeeds with
//!   nothing to do, and the page cache still shows bytes the device never got
//!   ([`FaultFs::read_page_cache`] shows them; [`WalFs::read_from_device`] does not).
//!   Like Linux's per-file `errseq_t`, every handle opened *before* the failure is told
//!   of it once, at its next sync, whichever handle met it: the file WAL's sync threads
//!   each sync through their own open, and none may miss an error another one met.
//! - A power cut ([`FaultFs::cut_power`], or scheduled with [`FaultFs::schedule_cut`]
//!   to fall on the n-th mutating call) keeps, for every dirty unit, either nothing
//!   ([`CutMode::DropUnsynced`]) or a seeded coin's choice of old or new bytes
//!   ([`CutMode::Tear`]): units reach the media whole, in any order. Names not made
//!   durable by a directory sync vanish; removes not made durable come back. From then
//!   on every call fails with EIO until [`FaultFs::restart`], which is the reboot.
//!
//! Directories created with `create_dir_all` are durable at once (a simplification: the
//! WAL syncs their parents anyway, and the interesting losses are the log files).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use walab_core::rng::Rng;

use super::fs::{WalFile, WalFs};

/// What a power cut does to the units written since the last sync.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CutMode {
    /// Every unsynced unit is lost.
    DropUnsynced,
    /// Each unsynced unit independently reached the media or not (a torn write).
    Tear,
}

#[derive(Debug, Default)]
struct Inode {
    /// What the page cache holds.
    current: Vec<u8>,
    /// What the device holds.
    durable: Vec<u8>,
    /// Units written since the last sync.
    dirty_units: BTreeSet<u64>,
    /// Write-back errors so far (Linux's `errseq_t` on the file's mapping): a handle
    /// opened before an error is told of it by its next sync, whichever handle's sync
    /// met it first.
    write_errors: u64,
}

#[derive(Debug)]
struct State {
    unit_bytes: u64,
    inodes: HashMap<u64, Inode>,
    next_inode: u64,
    names: BTreeMap<PathBuf, u64>,
    durable_names: BTreeMap<PathBuf, u64>,
    dirs: BTreeSet<PathBuf>,
    powered: bool,
    /// Mutating calls so far (writes, syncs, creates, removes, renames, directory syncs).
    ops: u64,
    /// `sync_data` calls so far.
    syncs: u64,
    fail_syncs: BTreeSet<u64>,
    /// Per inode: `sync_data` calls on that file so far, and which of them fail.
    inode_syncs: HashMap<u64, u64>,
    fail_inode_syncs: BTreeSet<(u64, u64)>,
    /// (write number, errno): that `write_at` call fails.
    fail_write: Option<(u64, i32)>,
    /// (inode, errno): that file's next `write_at` fails.
    fail_inode_write: Option<(u64, i32)>,
    writes: u64,
    scheduled_cut: Option<(u64, CutMode, u64)>,
    cuts: u64,
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
    /// The one file (inode) whose syncs the gate holds; others pass.
    inode: AtomicU64,
}

impl SyncGate {
    fn pass(&self, inode: u64) {
        if self.inode.load(Ordering::SeqCst) != inode {
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

fn power_off_error() -> io::Error {
    io::Error::from_raw_os_error(libc::EIO)
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, format!("{}: no such file", path.display()))
}

impl State {
    /// Counts a mutating call; cuts the power if this is the scheduled one (and then the
    /// call fails). `tear_inode` is the file whose sync is in progress, if any: its dirty
    /// units are what the cut tears.
    fn mutating_call(&mut self) -> io::Result<()> {
        if !self.powered {
            return Err(power_off_error());
        }
        self.ops += 1;
        if let Some((at, mode, seed)) = self.scheduled_cut {
            if self.ops >= at {
                self.scheduled_cut = None;
                self.cut(mode, seed);
                return Err(power_off_error());
            }
        }
        Ok(())
    }

    fn cut(&mut self, mode: CutMode, seed: u64) {
        let mut rng = Rng::new(seed);
        let unit = self.unit_bytes;
        for inode in self.inodes.values_mut() {
            for &index in &inode.dirty_units {
                let keep = match mode {
                    CutMode::DropUnsynced => false,
                    CutMode::Tear => rng.coin(),
                };
                if !keep {
                    continue;
                }
                let start = index * unit;
                let end = ((index + 1) * unit).min(inode.current.len() as u64);
                if start >= end {
                    continue;
                }
                if (inode.durable.len() as u64) < end {
                    inode.durable.resize(end as usize, 0);
                }
                inode.durable[start as usize..end as usize].copy_from_slice(&inode.current[start as usize..end as usize]);
            }
            inode.dirty_units.clear();
            inode.current = inode.durable.clone();
        }
        self.names = self.durable_names.clone();
        let live: BTreeSet<u64> = self.names.values().copied().collect();
        self.inodes.retain(|id, _| live.contains(id));
        self.powered = false;
        self.cuts += 1;
    }

    fn inode_of(&self, path: &Path) -> io::Result<u64> {
        self.names.get(path).copied().ok_or_else(|| not_found(path))
    }
}

impl FaultFs {
    /// An empty disk whose atomic unit is `unit_bytes` (512 or 4096 on real devices).
    pub fn new(unit_bytes: u64) -> FaultFs {
        assert!(unit_bytes > 0, "unit_bytes > 0");
        FaultFs {
            state: Arc::new(Mutex::new(State {
                unit_bytes,
                inodes: HashMap::new(),
                next_inode: 1,
                names: BTreeMap::new(),
                durable_names: BTreeMap::new(),
                dirs: BTreeSet::new(),
                powered: true,
                ops: 0,
                syncs: 0,
                fail_syncs: BTreeSet::new(),
                inode_syncs: HashMap::new(),
                fail_inode_syncs: BTreeSet::new(),
                fail_write: None,
                fail_inode_write: None,
                writes: 0,
                scheduled_cut: None,
                cuts: 0,
            })),
            gate: Arc::default(),
        }
    }

    /// Holds every later sync of the file at `path` (others, like a spare segment being
    /// zero-filled, pass) at a gate until [`FaultFs::allow_syncs`] lets it through.
    pub fn close_sync_gate_of(&self, path: &Path) -> io::Result<()> {
        let inode = *self.lock().names.get(path).ok_or_else(|| io::Error::from_raw_os_error(libc::ENOENT))?;
        self.gate.inode.store(inode, Ordering::SeqCst);
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

    /// Makes the `n`-th `sync_data` from now (1 = the next one) fail with EIO, marking
    /// the file's dirty pages clean without writing them.
    pub fn fail_sync(&self, n: u64) {
        let mut state = self.lock();
        let at = state.syncs + n;
        state.fail_syncs.insert(at);
    }

    /// Makes the `n`-th `sync_data` of the file at `path` from now (1 = its next one)
    /// fail with EIO. Unlike [`FaultFs::fail_sync`], syncs of other files (a spare
    /// segment being prepared on another thread) neither count nor take the failure.
    pub fn fail_sync_of(&self, path: &Path, n: u64) -> io::Result<()> {
        let mut state = self.lock();
        let inode = *state.names.get(path).ok_or_else(|| io::Error::from_raw_os_error(libc::ENOENT))?;
        let at = state.inode_syncs.get(&inode).copied().unwrap_or(0) + n;
        state.fail_inode_syncs.insert((inode, at));
        Ok(())
    }

    /// Makes the `n`-th `write_at` from now fail with `errno` (ENOSPC for a full disk).
    pub fn fail_write(&self, n: u64, errno: i32) {
        let mut state = self.lock();
        let at = state.writes + n;
        state.fail_write = Some((at, errno));
    }

    /// Makes the next `write_at` of the file at `path` fail with `errno`; writes to other
    /// files (a spare segment being zero-filled on another thread) pass.
    pub fn fail_next_write_of(&self, path: &Path, errno: i32) -> io::Result<()> {
        let mut state = self.lock();
        let inode = state.inode_of(path)?;
        state.fail_inode_write = Some((inode, errno));
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

    /// Powers the disk back on (the reboot after a cut). The files are what the device kept.
    pub fn restart(&self) {
        let mut state = self.lock();
        state.powered = true;
        state.scheduled_cut = None;
        state.fail_syncs.clear();
        state.fail_inode_syncs.clear();
        state.fail_write = None;
        state.fail_inode_write = None;
    }

    /// True while the power is on.
    pub fn powered(&self) -> bool {
        self.lock().powered
    }

    /// The file as the page cache shows it (what a plain `read` would return after a
    /// failed sync), for tests that show why recovery must not read through the cache.
    pub fn read_page_cache(&self, path: &Path) -> io::Result<Vec<u8>> {
        let state = self.lock();
        let id = state.inode_of(path)?;
        Ok(state.inodes[&id].current.clone())
    }
}

struct FaultFile {
    state: Arc<Mutex<State>>,
    gate: Arc<SyncGate>,
    inode: u64,
    /// The inode's write-back errors this handle has been told of (or that happened
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
        state.writes += 1;
        if let Some((at, errno)) = state.fail_write {
            if state.writes == at {
                state.fail_write = None;
                return Err(io::Error::from_raw_os_error(errno));
            }
        }
        if let Some((inode, errno)) = state.fail_inode_write {
            if inode == self.inode {
                state.fail_inode_write = None;
                return Err(io::Error::from_raw_os_error(errno));
            }
        }
        let unit = state.unit_bytes;
        let inode = state.inodes.get_mut(&self.inode).ok_or_else(|| io::Error::from_raw_os_error(libc::ESTALE))?;
        let end = offset as usize + bytes.len();
        if inode.current.len() < end {
            inode.current.resize(end, 0);
        }
        inode.current[offset as usize..end].copy_from_slice(bytes);
        if !bytes.is_empty() {
            for index in offset / unit..=(end as u64 - 1) / unit {
                inode.dirty_units.insert(index);
            }
        }
        Ok(())
    }

    fn sync_data(&mut self) -> io::Result<()> {
        self.gate.pass(self.inode);
        let shared = Arc::clone(&self.state);
        let mut state = shared.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        state.mutating_call()?;
        state.syncs += 1;
        let sync_number = state.syncs;
        let inode_sync_number = {
            let count = state.inode_syncs.entry(self.inode).or_insert(0);
            *count += 1;
            *count
        };
        let failing = state.fail_syncs.remove(&sync_number) | state.fail_inode_syncs.remove(&(self.inode, inode_sync_number));
        let unit = state.unit_bytes;
        let inode = state.inodes.get_mut(&self.inode).ok_or_else(|| io::Error::from_raw_os_error(libc::ESTALE))?;
        if failing {
            // Linux after a write-back error: the pages are marked clean, not written,
            // and every open of the file learns of the error at its next sync.
            inode.dirty_units.clear();
            inode.write_errors += 1;
            self.errors_seen = inode.write_errors;
            return Err(io::Error::from_raw_os_error(libc::EIO));
        }
        if self.errors_seen < inode.write_errors {
            // Another handle's sync met an error this handle has not been told of.
            self.errors_seen = inode.write_errors;
            return Err(io::Error::from_raw_os_error(libc::EIO));
        }
        let dirty = std::mem::take(&mut inode.dirty_units);
        if inode.durable.len() < inode.current.len() {
            inode.durable.resize(inode.current.len(), 0);
        }
        for index in dirty {
            let start = (index * unit) as usize;
            let end = ((index + 1) * unit).min(inode.current.len() as u64) as usize;
            if start < end {
                inode.durable[start..end].copy_from_slice(&inode.current[start..end]);
            }
        }
        Ok(())
    }

    fn len(&self) -> io::Result<u64> {
        let state = self.lock();
        if !state.powered {
            return Err(power_off_error());
        }
        let inode = state.inodes.get(&self.inode).ok_or_else(|| io::Error::from_raw_os_error(libc::ESTALE))?;
        Ok(inode.current.len() as u64)
    }
}

impl WalFs for FaultFs {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        let mut state = self.lock();
        if !state.powered {
            return Err(power_off_error());
        }
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
        let id = state.next_inode;
        state.next_inode += 1;
        state.inodes.insert(id, Inode::default());
        state.names.insert(path.to_path_buf(), id);
        Ok(Box::new(FaultFile { state: Arc::clone(&self.state), gate: Arc::clone(&self.gate), inode: id, errors_seen: 0 }))
    }

    fn open_write(&self, path: &Path) -> io::Result<Box<dyn WalFile>> {
        let state = self.lock();
        if !state.powered {
            return Err(power_off_error());
        }
        let id = state.inode_of(path)?;
        let errors_seen = state.inodes.get(&id).map_or(0, |inode| inode.write_errors);
        Ok(Box::new(FaultFile { state: Arc::clone(&self.state), gate: Arc::clone(&self.gate), inode: id, errors_seen }))
    }

    fn read_from_device(&self, path: &Path) -> io::Result<Vec<u8>> {
        let state = self.lock();
        if !state.powered {
            return Err(power_off_error());
        }
        let id = state.inode_of(path)?;
        Ok(state.inodes[&id].durable.clone())
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let state = self.lock();
        if !state.powered {
            return Err(power_off_error());
        }
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
        state.names.remove(path).map(|_| ()).ok_or_else(|| not_found(path))?;
        // The inode lives on while a durable name still points at it.
        Ok(())
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut state = self.lock();
        state.mutating_call()?;
        let id = state.names.remove(from).ok_or_else(|| not_found(from))?;
        state.names.insert(to.to_path_buf(), id);
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let mut state = self.lock();
        state.mutating_call()?;
        let now: Vec<(PathBuf, u64)> =
            state.names.iter().filter(|(path, _)| path.parent() == Some(dir)).map(|(p, id)| (p.clone(), *id)).collect();
        state.durable_names.retain(|path, _| path.parent() != Some(dir));
        state.durable_names.extend(now);
        // Inodes no name points at, now or durably, are gone for good.
        let live: BTreeSet<u64> = state.names.values().chain(state.durable_names.values()).copied().collect();
        state.inodes.retain(|id, _| live.contains(id));
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
        fs.fail_sync(1);
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
        fs.fail_sync(1);
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
        fs.fail_write(1, libc::ENOSPC);
        assert_eq!(file.write_at(0, b"x").unwrap_err().raw_os_error(), Some(libc::ENOSPC));
        file.write_at(0, b"x").unwrap();
    }
}
