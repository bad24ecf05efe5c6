//! The file WAL's view of a file system: a handful of calls, behind a trait.
//!
//! The file WAL never calls `std::fs` directly. It goes through [`WalFs`] and
//! [`WalFile`], which offer exactly what a log needs: create and open files, write at an
//! offset, make a file's data durable (`fdatasync`), make a directory's entries durable
//! (`fsync` on the directory), read a file back *from the device*, list, rename and
//! remove. Two implementations exist:
//!
//! - [`RealFs`]: the operating system's files, with `File::sync_data` for `fdatasync`
//!   and an `fsync` of the directory after every create, rename and remove.
//! - [`super::fault_fs::FaultFs`]: the core's simulated device
//!   ([`walab_core::device::Device`], the one the lab draws) behind these calls, so that
//!   a test can fail a chosen sync with EIO or cut the power and keep only what a real
//!   device would have kept.
//!
//! Keeping the interface this small is what makes the fault-injecting version honest: it
//! has to model only these calls, and the WAL cannot reach around it.
//!
//! # Reading after a failure
//!
//! [`WalFs::read_from_device`] must return what the *device* holds, not what the page
//! cache holds. After a failed `fdatasync`, Linux may mark the dirty pages clean while
//! keeping their contents in memory, so a plain `read` would return records that never
//! reached the disk (Part 3, "the page cache can still hold what the disk lacks"). The
//! real implementation therefore asks the kernel to drop the file's cached pages
//! (`posix_fadvise(POSIX_FADV_DONTNEED)`: clean pages go, including the ones wrongly
//! marked clean) before reading.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

/// One open log file.
pub trait WalFile: Send {
    /// Writes all of `bytes` at `offset` (the page cache, not yet durable).
    fn write_at(&mut self, offset: u64, bytes: &[u8]) -> io::Result<()>;
    /// `fdatasync`: returns once every byte written so far is on stable media.
    fn sync_data(&mut self) -> io::Result<()>;
    /// The file's current length in bytes.
    #[allow(dead_code)]
    fn len(&self) -> io::Result<u64>;
}

/// The file-system calls the WAL makes.
pub trait WalFs: Send + Sync {
    /// Creates `dir` and its parents (already-existing is fine), making each new entry durable.
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
    /// Creates a new, empty file; fails if it exists. The entry is durable only after
    /// [`WalFs::sync_dir`].
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn WalFile>>;
    /// Opens an existing file for writing.
    fn open_write(&self, path: &Path) -> io::Result<Box<dyn WalFile>>;
    /// The whole file as the device holds it (bypassing cached pages).
    fn read_from_device(&self, path: &Path) -> io::Result<Vec<u8>>;
    /// The names of the entries of `dir`, sorted.
    fn list(&self, dir: &Path) -> io::Result<Vec<String>>;
    /// Removes a file. Durable only after [`WalFs::sync_dir`].
    fn remove(&self, path: &Path) -> io::Result<()>;
    /// Renames a file. Durable only after [`WalFs::sync_dir`]. Used to put `FORMAT`
    /// in place whole; a recyclable log format would also rename old segments.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// `fsync` on a directory: its entries (creates, renames, removes) become durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    /// Takes an exclusive lock on the log directory for this process's lifetime, so two
    /// processes never append to one log. Returns a guard that releases it when dropped.
    fn lock_dir(&self, dir: &Path) -> io::Result<Box<dyn Send>>;
}

/// Bytes written per call when zero-filling a new segment.
pub const ZERO_FILL_CHUNK_BYTES: usize = 1 << 20;

/// Creates `path` holding `len` zero bytes *really written* (not a sparse hole, not
/// unwritten extents: later overwrites then change no file-system metadata), syncs
/// it, then syncs the directory so the name survives a power loss.
pub fn create_zero_filled(fs: &dyn WalFs, path: &Path, len: u64) -> io::Result<Box<dyn WalFile>> {
    zero_fill(fs, path, len, false)
}

/// [`create_zero_filled`] for a spare prepared beside a running log: it syncs after
/// every chunk, so the device never holds more than one chunk of zeros ahead of the
/// log's own syncs. One sync at the end would let 16 MiB of dirty pages reach the
/// device at once, and every log sync issued meanwhile would wait behind them.
pub fn create_zero_filled_paced(fs: &dyn WalFs, path: &Path, len: u64) -> io::Result<Box<dyn WalFile>> {
    zero_fill(fs, path, len, true)
}

fn zero_fill(fs: &dyn WalFs, path: &Path, len: u64, sync_every_chunk: bool) -> io::Result<Box<dyn WalFile>> {
    let mut file = fs.create_new(path)?;
    let zeros = vec![0u8; ZERO_FILL_CHUNK_BYTES];
    let mut offset = 0u64;
    while offset < len {
        let chunk = (len - offset).min(zeros.len() as u64) as usize;
        file.write_at(offset, &zeros[..chunk])?;
        offset += chunk as u64;
        if sync_every_chunk && offset < len {
            file.sync_data()?;
        }
    }
    file.sync_data()?;
    fs.sync_dir(parent_of(path))?;
    Ok(file)
}

/// The directory holding `path` (`.` for a bare name).
pub fn parent_of(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

/// The operating system's file system.
#[derive(Clone, Copy, Debug, Default)]
pub struct RealFs;

struct RealFile {
    file: File,
}

impl WalFile for RealFile {
    fn write_at(&mut self, offset: u64, bytes: &[u8]) -> io::Result<()> {
        self.file.write_all_at(bytes, offset)
    }

    fn sync_data(&mut self) -> io::Result<()> {
        self.file.sync_data()
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }
}

struct DirLock {
    _file: File,
}

impl WalFs for RealFs {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        // Create missing ancestors one by one so each new entry's parent can be synced.
        let mut missing: Vec<PathBuf> = Vec::new();
        let mut cursor = Some(dir);
        while let Some(current) = cursor {
            if current.as_os_str().is_empty() || current.exists() {
                break;
            }
            missing.push(current.to_path_buf());
            cursor = current.parent();
        }
        for created in missing.iter().rev() {
            match fs::create_dir(created) {
                Ok(()) => {}
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
                Err(error) => return Err(error),
            }
            self.sync_dir(parent_of(created))?;
        }
        if !dir.is_dir() {
            return Err(io::Error::new(io::ErrorKind::NotADirectory, "not a directory"));
        }
        Ok(())
    }

    fn create_new(&self, path: &Path) -> io::Result<Box<dyn WalFile>> {
        let file = OpenOptions::new().read(true).write(true).create_new(true).open(path)?;
        Ok(Box::new(RealFile { file }))
    }

    fn open_write(&self, path: &Path) -> io::Result<Box<dyn WalFile>> {
        let file = OpenOptions::new().read(true).write(true).open(path)?;
        Ok(Box::new(RealFile { file }))
    }

    fn read_from_device(&self, path: &Path) -> io::Result<Vec<u8>> {
        let mut file = File::open(path)?;
        drop_cached_pages(&file);
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in fs::read_dir(dir)? {
            names.push(entry?.file_name().to_string_lossy().into_owned());
        }
        names.sort();
        Ok(names)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }

    fn lock_dir(&self, dir: &Path) -> io::Result<Box<dyn Send>> {
        let file = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(dir.join("LOCK"))?;
        if !try_lock_exclusive(&file) {
            return Err(io::Error::new(io::ErrorKind::WouldBlock, "locked by another process (LOCK is held)"));
        }
        Ok(Box::new(DirLock { _file: file }))
    }
}

/// `flock(LOCK_EX | LOCK_NB)`: true when this process now holds the lock.
fn try_lock_exclusive(file: &File) -> bool {
    // SAFETY: flock takes a file descriptor we own for the duration of the call.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
}

/// Asks the kernel to forget the file's clean cached pages, so the next read comes from
/// the device. Best effort: on a file system that ignores the advice, the read still works.
fn drop_cached_pages(file: &File) {
    // SAFETY: posix_fadvise only reads its integer arguments; the descriptor is ours.
    unsafe {
        libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_filled_file_is_really_written_and_listed() {
        let dir = tempfile::tempdir().unwrap();
        let fs = RealFs;
        let path = dir.path().join("seg");
        let mut file = create_zero_filled(&fs, &path, 3 * 1024 * 1024 + 5).unwrap();
        assert_eq!(file.len().unwrap(), 3 * 1024 * 1024 + 5);
        file.write_at(10, b"abc").unwrap();
        file.sync_data().unwrap();
        let bytes = fs.read_from_device(&path).unwrap();
        assert_eq!(&bytes[10..13], b"abc");
        assert!(bytes[..10].iter().all(|&b| b == 0));
        assert_eq!(fs.list(dir.path()).unwrap(), vec!["seg".to_string()]);
        // Allocated blocks cover the whole length: not a sparse file.
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(&path).unwrap();
        assert!(meta.blocks() * 512 >= meta.len());
        assert!(fs.create_new(&path).is_err());
    }

    #[test]
    fn a_second_lock_on_one_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let first = RealFs.lock_dir(dir.path()).unwrap();
        // flock locks belong to the open file description, so a second open conflicts.
        assert!(RealFs.lock_dir(dir.path()).is_err());
        drop(first);
        assert!(RealFs.lock_dir(dir.path()).is_ok());
    }

    #[test]
    fn create_dir_all_makes_nested_directories() {
        let dir = tempfile::tempdir().unwrap();
        let nested = dir.path().join("a/b/c");
        RealFs.create_dir_all(&nested).unwrap();
        assert!(nested.is_dir());
        RealFs.create_dir_all(&nested).unwrap();
    }
}
