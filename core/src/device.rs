//! A simulated storage device, as Parts 2, 3 and 7 of the teaching page describe one.
//!
//! A byte on its way to safety passes three places, and each survives a different set of
//! failures:
//!
//! 1. **The page cache** (the kernel's memory). `write` puts bytes here and marks the
//!    units they touch *dirty*. A process crash leaves them (the kernel still has them);
//!    a power loss takes them.
//! 2. **The device's volatile cache.** The kernel hands dirty pages to the device, either
//!    in the background (write-back) or because a sync asked. The device may report them
//!    written while they sit in its own RAM; a power loss can take them too.
//! 3. **The stable media**, in *atomic units* (32 bytes in the tiny store, 512 B or 4 KiB
//!    in real drives): each unit is written entirely or not at all, but the units of one
//!    write may land in any order, which is how a write tears.
//!
//! A sync of a file moves that file's dirty units to the device and then flushes them to
//! the media; when it returns, every unit it covered is on the media. Each file's syncs
//! are independent: a flush's sync never waits behind the log's.
//!
//! **A power cut** ([`Device::uncertain_units`], [`Device::image_after_power_cut`]):
//! dirty pages are gone; units that a running sync (or a background write-back) had
//! handed to the device may or may not have reached the media, *each independently*.
//! The caller chooses which ones did: one seeded sample, or every subset in turn, so that
//! every legal post-crash state of a small case can be listed, as ALICE and CrashMonkey
//! do.
//!
//! **A failed sync** ([`Device::fail_sync`]) behaves as Linux does (Part 3): the units it
//! covered are marked clean without being written, the error is reported once (to this
//! sync), and the next sync of the file finds nothing dirty and succeeds. The page cache
//! still holds the bytes, so a process that restarts without a reboot and reads through
//! the cache ([`Device::cache_image`]) sees data the media does not have.
//!
//! File systems differ in what a failed write-back leaves behind ([`FailureProfile`]):
//! ext4 and XFS keep the unwritten bytes in the page cache (above); btrfs reverts the
//! cached pages to what is on the media. And a write-back that fails in the background,
//! with no sync running ([`Device::fail_write_back`]), is reported to the *next* sync of
//! the file ([`Device::take_reported_error`]), once, as Linux's errseq does.
//!
//! A file's size is what a sync makes durable with its data: a write past the end grows
//! the file in the page cache only, and the media keeps its old size until a sync that
//! covers the new end returns (or, after a cut, up to the end of the last unit that
//! landed). Linux counts write-back errors per file ([`Device::write_errors`], its
//! `errseq_t`): every open made before an error hears of it at its next sync.
//!
//! Deleting a file and creating one are modelled as already durable (the unlink or the
//! create and its directory sync are not the subject here); a created file is zero-filled
//! at its size on the media, as the tiny store prepares its segments. A file system's
//! names and their directory syncs live in the layer above (the crash tests' file layer,
//! `native/src/wal/file/fault_fs.rs`, which runs the real file WAL on this device).

use crate::rng::Rng;

/// What a failed write-back does to the page cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
pub enum FailureProfile {
    /// ext4, XFS: the pages are marked clean and keep the bytes that never reached the
    /// media, so a read through the cache still sees them.
    #[default]
    KeepCache,
    /// btrfs: the cached pages revert to what is on the media.
    RevertCache,
}

/// A file's index on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FileId(pub u32);

/// A running sync's number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SyncId(pub u64);

/// One unit of one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct UnitRef {
    pub file: u32,
    pub unit: u32,
}

/// A unit's bytes on their way to the media.
#[derive(Clone, Debug, PartialEq, Eq)]
struct InTransit {
    unit: u32,
    bytes: Vec<u8>,
}

#[derive(Clone, Debug)]
struct DeviceFile {
    name: String,
    exists: bool,
    /// What a read through the page cache sees.
    cache: Vec<u8>,
    /// What is on the stable media.
    media: Vec<u8>,
    /// Per unit: changed in the cache and not yet handed to the device.
    dirty: Vec<bool>,
    /// Units written back in the background, in the device's volatile cache.
    volatile: Vec<InTransit>,
    /// A background write-back failed; the next sync reports it.
    error_pending: bool,
    /// Write-back errors so far (failed syncs and failed background write-backs).
    write_errors: u64,
}

#[derive(Clone, Debug)]
struct RunningSync {
    id: SyncId,
    file: FileId,
    units: Vec<InTransit>,
    /// The file's size when the sync started: durable once it returns.
    size: usize,
}

/// Misuse of the device by its driver (a bug in the caller, reported rather than a panic).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceError {
    NoSuchFile(FileId),
    FileDeleted(FileId),
    NoSuchSync(SyncId),
}

impl core::fmt::Display for DeviceError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            DeviceError::NoSuchFile(file) => write!(f, "file {}: no such file", file.0),
            DeviceError::FileDeleted(file) => write!(f, "file {}: deleted", file.0),
            DeviceError::NoSuchSync(sync) => write!(f, "sync {}: not running", sync.0),
        }
    }
}

impl std::error::Error for DeviceError {}

/// The media after a power cut: each file's bytes, or `None` for a file that does not
/// exist (never created, or deleted).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    pub files: Vec<(String, Option<Vec<u8>>)>,
}

impl Image {
    pub fn file(&self, name: &str) -> Option<&[u8]> {
        self.files.iter().find(|(file, _)| file == name).and_then(|(_, bytes)| bytes.as_deref())
    }
}

/// The simulated device. See the module docs.
#[derive(Clone, Debug)]
pub struct Device {
    unit_bytes: usize,
    profile: FailureProfile,
    files: Vec<DeviceFile>,
    syncs: Vec<RunningSync>,
    next_sync: u64,
}

/// Bound on the subsets [`Device::enumerate_power_cuts`] lists: 2^12 states.
pub const UNCERTAIN_UNITS_ENUMERABLE_MAX: usize = 12;

impl Device {
    pub fn new(unit_bytes: usize) -> Device {
        assert!(unit_bytes > 0, "a device needs a positive unit size");
        Device { unit_bytes, profile: FailureProfile::KeepCache, files: Vec::new(), syncs: Vec::new(), next_sync: 1 }
    }

    /// A device whose file system handles failed write-backs as `profile` says.
    pub fn with_profile(unit_bytes: usize, profile: FailureProfile) -> Device {
        Device { profile, ..Device::new(unit_bytes) }
    }

    pub fn unit_bytes(&self) -> usize {
        self.unit_bytes
    }

    /// Registers a file that does not exist yet (so file ids can be fixed up front).
    pub fn register(&mut self, name: &str) -> FileId {
        self.files.push(DeviceFile {
            name: name.to_string(),
            exists: false,
            cache: Vec::new(),
            media: Vec::new(),
            dirty: Vec::new(),
            volatile: Vec::new(),
            error_pending: false,
            write_errors: 0,
        });
        FileId((self.files.len() - 1) as u32)
    }

    /// Creates a registered file zero-filled at `bytes`, already durable.
    pub fn create(&mut self, file: FileId, bytes: usize) -> Result<(), DeviceError> {
        let units = bytes.div_ceil(self.unit_bytes);
        let entry = self.files.get_mut(file.0 as usize).ok_or(DeviceError::NoSuchFile(file))?;
        entry.exists = true;
        entry.cache = vec![0; bytes];
        entry.media = vec![0; bytes];
        entry.dirty = vec![false; units];
        entry.volatile.clear();
        Ok(())
    }

    pub fn name(&self, file: FileId) -> &str {
        &self.files[file.0 as usize].name
    }

    /// The files that exist now, in id order.
    pub fn live_files(&self) -> impl Iterator<Item = FileId> + '_ {
        self.files.iter().enumerate().filter(|(_, entry)| entry.exists).map(|(index, _)| FileId(index as u32))
    }

    pub fn exists(&self, file: FileId) -> bool {
        self.files.get(file.0 as usize).is_some_and(|entry| entry.exists)
    }

    fn live(&mut self, file: FileId) -> Result<&mut DeviceFile, DeviceError> {
        let entry = self.files.get_mut(file.0 as usize).ok_or(DeviceError::NoSuchFile(file))?;
        if !entry.exists {
            return Err(DeviceError::FileDeleted(file));
        }
        Ok(entry)
    }

    /// Writes bytes into the page cache at `offset` (growing the file there with zeros
    /// if needed; the media keeps its size until a sync); the units they touch become
    /// dirty. Returns those units.
    pub fn write(&mut self, file: FileId, offset: usize, bytes: &[u8]) -> Result<Vec<u32>, DeviceError> {
        let unit_bytes = self.unit_bytes;
        let entry = self.live(file)?;
        let end = offset + bytes.len();
        if entry.cache.len() < end {
            entry.cache.resize(end, 0);
        }
        entry.dirty.resize(entry.cache.len().div_ceil(unit_bytes), false);
        entry.cache[offset..end].copy_from_slice(bytes);
        if bytes.is_empty() {
            return Ok(Vec::new());
        }
        let units: Vec<u32> = (offset / unit_bytes..=(end - 1) / unit_bytes).map(|unit| unit as u32).collect();
        for &unit in &units {
            entry.dirty[unit as usize] = true;
        }
        Ok(units)
    }

    fn unit_bytes_of(entry: &DeviceFile, unit: u32, unit_bytes: usize) -> Vec<u8> {
        let start = unit as usize * unit_bytes;
        let end = (start + unit_bytes).min(entry.cache.len());
        entry.cache[start..end].to_vec()
    }

    /// Background write-back: the file's dirty units go to the device's volatile cache.
    pub fn write_back(&mut self, file: FileId) -> Result<Vec<u32>, DeviceError> {
        let unit_bytes = self.unit_bytes;
        let entry = self.live(file)?;
        let mut moved = Vec::new();
        for unit in 0..entry.dirty.len() {
            if entry.dirty[unit] {
                entry.dirty[unit] = false;
                let bytes = Device::unit_bytes_of(entry, unit as u32, unit_bytes);
                entry.volatile.retain(|transit| transit.unit != unit as u32);
                entry.volatile.push(InTransit { unit: unit as u32, bytes });
                moved.push(unit as u32);
            }
        }
        Ok(moved)
    }

    /// Starts a sync of one file: its dirty units (and those in the device's volatile
    /// cache) are handed to the device. Returns the sync and the units it covers.
    pub fn start_sync(&mut self, file: FileId) -> Result<(SyncId, Vec<u32>), DeviceError> {
        let unit_bytes = self.unit_bytes;
        let entry = self.live(file)?;
        let mut units: Vec<InTransit> = core::mem::take(&mut entry.volatile);
        for unit in 0..entry.dirty.len() {
            if entry.dirty[unit] {
                entry.dirty[unit] = false;
                let bytes = Device::unit_bytes_of(entry, unit as u32, unit_bytes);
                units.retain(|transit| transit.unit != unit as u32);
                units.push(InTransit { unit: unit as u32, bytes });
            }
        }
        crate::sort::sort_by_key(&mut units, |transit| transit.unit);
        let covered = units.iter().map(|transit| transit.unit).collect();
        let size = entry.cache.len();
        let id = SyncId(self.next_sync);
        self.next_sync += 1;
        self.syncs.push(RunningSync { id, file, units, size });
        Ok((id, covered))
    }

    fn take_sync(&mut self, sync: SyncId) -> Result<RunningSync, DeviceError> {
        let index = self.syncs.iter().position(|running| running.id == sync).ok_or(DeviceError::NoSuchSync(sync))?;
        Ok(self.syncs.remove(index))
    }

    /// The sync returns successfully: its units are on the media. Returns them.
    pub fn finish_sync(&mut self, sync: SyncId) -> Result<Vec<u32>, DeviceError> {
        let running = self.take_sync(sync)?;
        let unit_bytes = self.unit_bytes;
        let entry = self.files.get_mut(running.file.0 as usize).ok_or(DeviceError::NoSuchFile(running.file))?;
        let mut persisted = Vec::with_capacity(running.units.len());
        if entry.exists {
            if entry.media.len() < running.size {
                entry.media.resize(running.size, 0);
            }
            for transit in &running.units {
                let start = transit.unit as usize * unit_bytes;
                let end = start + transit.bytes.len();
                if entry.media.len() < end {
                    entry.media.resize(end, 0);
                }
                entry.media[start..end].copy_from_slice(&transit.bytes);
                persisted.push(transit.unit);
            }
        }
        Ok(persisted)
    }

    /// The sync fails (EIO): its units are marked clean without being written. The page
    /// cache keeps their bytes (or reverts them, under [`FailureProfile::RevertCache`]).
    /// Returns the dropped units.
    pub fn fail_sync(&mut self, sync: SyncId) -> Result<Vec<u32>, DeviceError> {
        let running = self.take_sync(sync)?;
        let units: Vec<u32> = running.units.iter().map(|transit| transit.unit).collect();
        if let Some(entry) = self.files.get_mut(running.file.0 as usize) {
            entry.write_errors += 1;
        }
        self.drop_units(running.file, &units);
        Ok(units)
    }

    fn drop_units(&mut self, file: FileId, units: &[u32]) {
        if self.profile != FailureProfile::RevertCache {
            return;
        }
        let unit_bytes = self.unit_bytes;
        if let Some(entry) = self.files.get_mut(file.0 as usize) {
            // Past the media's end the pages revert to zeros (what a read there finds).
            for &unit in units {
                let start = unit as usize * unit_bytes;
                let end = (start + unit_bytes).min(entry.cache.len());
                for offset in start..end {
                    entry.cache[offset] = entry.media.get(offset).copied().unwrap_or(0);
                }
            }
        }
    }

    /// A background write-back of the file's dirty units fails: they are marked clean
    /// without being written, and the error waits for the next sync of the file.
    /// Returns the dropped units.
    pub fn fail_write_back(&mut self, file: FileId) -> Result<Vec<u32>, DeviceError> {
        let entry = self.live(file)?;
        let mut dropped = Vec::new();
        for unit in 0..entry.dirty.len() {
            if entry.dirty[unit] {
                entry.dirty[unit] = false;
                dropped.push(unit as u32);
            }
        }
        entry.error_pending = true;
        entry.write_errors += 1;
        self.drop_units(file, &dropped);
        Ok(dropped)
    }

    /// Whether a sync of the file that returns now must report an earlier failed
    /// write-back. True once per failure: the error is reported to one sync only.
    pub fn take_reported_error(&mut self, file: FileId) -> bool {
        match self.files.get_mut(file.0 as usize) {
            Some(entry) => core::mem::take(&mut entry.error_pending),
            None => false,
        }
    }

    /// Write-back errors on the file so far (Linux's `errseq_t`): an open that recorded
    /// a lower count than this one hears of an error at its next sync.
    pub fn write_errors(&self, file: FileId) -> u64 {
        self.files.get(file.0 as usize).map_or(0, |entry| entry.write_errors)
    }

    /// Deletes a file (durably).
    pub fn delete(&mut self, file: FileId) -> Result<(), DeviceError> {
        let entry = self.live(file)?;
        entry.exists = false;
        entry.cache = Vec::new();
        entry.media = Vec::new();
        entry.dirty = Vec::new();
        entry.volatile.clear();
        self.syncs.retain(|running| running.file != file);
        Ok(())
    }

    /// What a read through the page cache sees.
    pub fn read_cache(&self, file: FileId) -> Option<&[u8]> {
        let entry = self.files.get(file.0 as usize)?;
        entry.exists.then_some(entry.cache.as_slice())
    }

    /// What is on the stable media now.
    pub fn read_media(&self, file: FileId) -> Option<&[u8]> {
        let entry = self.files.get(file.0 as usize)?;
        entry.exists.then_some(entry.media.as_slice())
    }

    /// Units whose fate a power cut now decides: those of running syncs, then those in
    /// the device's volatile cache, in a fixed order.
    pub fn uncertain_units(&self) -> Vec<UnitRef> {
        let mut units = Vec::new();
        for running in &self.syncs {
            for transit in &running.units {
                units.push(UnitRef { file: running.file.0, unit: transit.unit });
            }
        }
        for (index, entry) in self.files.iter().enumerate() {
            for transit in &entry.volatile {
                units.push(UnitRef { file: index as u32, unit: transit.unit });
            }
        }
        units
    }

    /// The media after a power cut now, where uncertain unit `i` (in the order of
    /// [`Device::uncertain_units`]) reached the media iff `kept(i)`.
    pub fn image_after_power_cut(&self, kept: impl Fn(usize) -> bool) -> Image {
        let mut media: Vec<Option<Vec<u8>>> =
            self.files.iter().map(|entry| entry.exists.then(|| entry.media.clone())).collect();
        let mut index = 0;
        let mut land = |file: usize, transit: &InTransit, index: usize| {
            if kept(index) {
                if let Some(bytes) = media[file].as_mut() {
                    let start = transit.unit as usize * self.unit_bytes;
                    let end = start + transit.bytes.len();
                    if bytes.len() < end {
                        bytes.resize(end, 0);
                    }
                    bytes[start..end].copy_from_slice(&transit.bytes);
                }
            }
        };
        for running in &self.syncs {
            for transit in &running.units {
                land(running.file.0 as usize, transit, index);
                index += 1;
            }
        }
        for (file, entry) in self.files.iter().enumerate() {
            for transit in &entry.volatile {
                land(file, transit, index);
                index += 1;
            }
        }
        Image { files: self.files.iter().map(|entry| entry.name.clone()).zip(media).collect() }
    }

    /// Per uncertain unit, whether it reached the media: a seeded coin each.
    pub fn sample_kept(&self, seed: u64) -> Vec<bool> {
        let mut rng = Rng::new(seed);
        self.uncertain_units().iter().map(|_| rng.coin()).collect()
    }

    /// One post-crash state, each uncertain unit kept with probability 1/2 (seeded).
    pub fn sample_power_cut(&self, seed: u64) -> (Vec<UnitRef>, Image) {
        let uncertain = self.uncertain_units();
        let kept = self.sample_kept(seed);
        let image = self.image_after_power_cut(|index| kept[index]);
        let kept_units = uncertain.iter().zip(&kept).filter(|(_, kept)| **kept).map(|(unit, _)| *unit).collect();
        (kept_units, image)
    }

    /// Every legal post-crash state: one per subset of the uncertain units, listed from
    /// "none reached the media" to "all did". `None` if there are more than
    /// [`UNCERTAIN_UNITS_ENUMERABLE_MAX`] uncertain units.
    pub fn enumerate_power_cuts(&self) -> Option<Vec<(Vec<UnitRef>, Image)>> {
        let uncertain = self.uncertain_units();
        if uncertain.len() > UNCERTAIN_UNITS_ENUMERABLE_MAX {
            return None;
        }
        let states = (0..1u32 << uncertain.len())
            .map(|mask| {
                let image = self.image_after_power_cut(|index| mask & (1 << index) != 0);
                let kept = uncertain.iter().enumerate().filter(|(index, _)| mask & (1 << index) != 0).map(|(_, unit)| *unit).collect();
                (kept, image)
            })
            .collect();
        Some(states)
    }

    /// The page cache as a restarted process (no reboot) would read it.
    pub fn cache_image(&self) -> Image {
        Image {
            files: self.files.iter().map(|entry| (entry.name.clone(), entry.exists.then(|| entry.cache.clone()))).collect(),
        }
    }

    /// The media as it is now, as if the machine rebooted with no sync running.
    pub fn media_image(&self) -> Image {
        self.image_after_power_cut(|_| false)
    }

    /// Background write-back of every file: all dirty units go to the device's volatile
    /// cache, where a power cut decides each one's fate.
    pub fn write_back_all(&mut self) {
        for index in 0..self.files.len() {
            if self.files[index].exists {
                let _ = self.write_back(FileId(index as u32));
            }
        }
    }

    /// The power fails now and comes back: the device becomes the post-crash state in
    /// which uncertain unit `i` reached the media iff `kept(i)`. Running syncs, the
    /// volatile cache and dirty pages are gone; the page cache starts again from the
    /// media; a pending background error dies with the kernel that held it.
    pub fn cut_power(&mut self, kept: impl Fn(usize) -> bool) {
        let image = self.image_after_power_cut(kept);
        for (entry, (_, media)) in self.files.iter_mut().zip(image.files) {
            if let Some(media) = media {
                entry.dirty = vec![false; media.len().div_ceil(self.unit_bytes)];
                entry.cache = media.clone();
                entry.media = media;
            }
            entry.volatile.clear();
            entry.error_pending = false;
        }
        self.syncs.clear();
    }
}

#[cfg(test)]
mod tests;
