//! `walab fsync-test`: how long does one sync take on *this* disk, and with which call?
//!
//! Part 2 of the teaching page says "measure, don't assume": a write-ahead log is only as
//! fast as the sync that makes each batch durable, and the cost of that sync depends on
//! the call (fdatasync, fsync, `O_DSYNC`, `O_DIRECT` plus fdatasync), on whether the file
//! grows (every growing sync must also write the new size, an inode update), and on
//! whether a newly created file's directory entry is synced too. This command measures
//! each of those on a directory you choose, in the spirit of `pg_test_fsync` and of fio's
//! `--fdatasync=1` percentiles.
//!
//! Each *method* repeats one durable write of `--block-bytes` (4 KiB by default) for
//! `--seconds` (or `--ops` times) and times every repetition with a monotonic clock:
//!
//! | method | one operation |
//! | --- | --- |
//! | `overwrite-fdatasync` | `pwrite` into a zero-filled, synced file, then `fdatasync` (what the file WAL does) |
//! | `overwrite-fsync` | the same with `fsync` (which also flushes timestamps) |
//! | `overwrite-odsync` | `pwrite` on a file opened with `O_DSYNC` (the write returns once durable) |
//! | `overwrite-odirect-fdatasync` | `pwrite` of an aligned buffer with `O_DIRECT`, then `fdatasync` |
//! | `grow-fdatasync` | append to a growing file, then `fdatasync` (size changes each time) |
//! | `grow-fsync` | append to a growing file, then `fsync` |
//! | `create-fdatasync` | create a new file, write, `fdatasync`, no directory sync (not crash safe) |
//! | `create-fdatasync-dirsync` | the same, then `fsync` the directory (crash safe) |
//!
//! A method the file system refuses (tmpfs has no `O_DIRECT`, for example) is reported as
//! unsupported with the reason, and the others still run.
//!
//! The command also reads `/sys/block/<dev>/queue/write_cache` for the device that holds
//! the directory: `write back` means the kernel sees a volatile cache in the device, so
//! each sync also sends a cache flush; `write through` means it does not.
//!
//! # The exported latency distribution
//!
//! `--export-latency FILE` writes one method's measured sync latencies (by default
//! `overwrite-fdatasync`, the one the WAL uses; `--export-method` picks another) as a small
//! JSON document that the browser's simulator loads in place of its fixed 1 ms sync, so a
//! simulated run uses this disk's numbers. Version 1 of the schema:
//!
//! ```json
//! {
//!   "schema": "walab-latency/1",
//!   "source": "walab fsync-test",
//!   "method": "overwrite-fdatasync",
//!   "block_bytes": 4096,
//!   "samples": 2817,
//!   "mean_ns": 702311,
//!   "write_cache": "write back",
//!   "quantiles_ns": [401223, 455120, "... 101 integers in all ...", 5120331]
//! }
//! ```
//!
//! `quantiles_ns[i]` is the i-th percentile (nearest rank) of the measured latencies in
//! integer nanoseconds, for i = 0 (the minimum) to 100 (the maximum), so the array always
//! has 101 non-decreasing entries. To draw a latency, draw u uniformly in [0, 100),
//! take i = floor(u) and interpolate linearly between `quantiles_ns[i]` and
//! `quantiles_ns[i + 1]`. `write_cache` is the sysfs text, or `null` when unknown.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use serde::Serialize;
use walab_core::time::Nanos;

use crate::cli_error::CliError;
use crate::latency::LatencyHistogram;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The directory to test (it must exist and be writable; the test files are removed).
    #[arg(long)]
    dir: PathBuf,
    /// Seconds to spend on each method.
    #[arg(long, conflicts_with = "ops")]
    seconds: Option<f64>,
    /// Operations per method instead of a duration.
    #[arg(long)]
    ops: Option<u64>,
    /// Bytes written per operation.
    #[arg(long, default_value_t = 4096)]
    block_bytes: usize,
    /// Size of the preallocated file the overwrite methods cycle through.
    #[arg(long, default_value_t = 16 << 20)]
    file_bytes: u64,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Write one method's latency distribution as JSON (schema in the module docs).
    #[arg(long)]
    export_latency: Option<PathBuf>,
    /// Run only these methods (comma-separated names from the table above); all by default.
    #[arg(long, value_delimiter = ',')]
    methods: Vec<String>,
    /// The method whose distribution `--export-latency` writes.
    #[arg(long, default_value = "overwrite-fdatasync")]
    export_method: String,
}

/// Every method, in the order they run and print.
pub const METHODS: [Method; 8] = [
    Method::OverwriteFdatasync,
    Method::OverwriteFsync,
    Method::OverwriteOdsync,
    Method::OverwriteOdirectFdatasync,
    Method::GrowFdatasync,
    Method::GrowFsync,
    Method::CreateFdatasync,
    Method::CreateFdatasyncDirsync,
];

/// One way of making a block durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    OverwriteFdatasync,
    OverwriteFsync,
    OverwriteOdsync,
    OverwriteOdirectFdatasync,
    GrowFdatasync,
    GrowFsync,
    CreateFdatasync,
    CreateFdatasyncDirsync,
}

impl Method {
    pub fn name(self) -> &'static str {
        match self {
            Method::OverwriteFdatasync => "overwrite-fdatasync",
            Method::OverwriteFsync => "overwrite-fsync",
            Method::OverwriteOdsync => "overwrite-odsync",
            Method::OverwriteOdirectFdatasync => "overwrite-odirect-fdatasync",
            Method::GrowFdatasync => "grow-fdatasync",
            Method::GrowFsync => "grow-fsync",
            Method::CreateFdatasync => "create-fdatasync",
            Method::CreateFdatasyncDirsync => "create-fdatasync-dirsync",
        }
    }
}

/// How long to run each method.
#[derive(Clone, Copy, Debug)]
pub enum Budget {
    Duration(Duration),
    Ops(u64),
}

/// Latency percentiles of a set of samples, nearest rank, in nanoseconds.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct LatencySummary {
    pub samples: u64,
    pub mean_ns: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
}

/// The nearest-rank percentile `per_mille / 10` of samples (`per_mille` 500 is p50, 999
/// is p99.9), read from their [`LatencyHistogram`]. Empty input gives 0.
pub fn percentile_sorted(sorted: &[u64], per_mille: u64) -> u64 {
    LatencyHistogram::of(sorted).quantile(per_mille)
}

impl LatencySummary {
    pub fn from_sorted(sorted: &[u64]) -> LatencySummary {
        let histogram = LatencyHistogram::of(sorted);
        let total: u128 = sorted.iter().map(|&x| u128::from(x)).sum();
        LatencySummary {
            samples: sorted.len() as u64,
            mean_ns: if sorted.is_empty() { 0 } else { (total / sorted.len() as u128) as u64 },
            p50_ns: histogram.quantile(500),
            p99_ns: histogram.quantile(990),
            p999_ns: histogram.quantile(999),
            max_ns: sorted.last().copied().unwrap_or(0),
        }
    }
}

/// The 101 nearest-rank percentiles p0..p100 of sorted, non-empty samples.
pub fn quantiles_101(sorted: &[u64]) -> Vec<u64> {
    let histogram = LatencyHistogram::of(sorted);
    (0..=100u64).map(|p| if p == 0 { sorted[0] } else { histogram.quantile(p * 10) }).collect()
}

/// The result of one method.
#[derive(Clone, Debug, Serialize)]
pub struct MethodResult {
    pub method: &'static str,
    /// `None` when the method ran; the reason otherwise.
    pub unsupported: Option<String>,
    pub ops_per_s: f64,
    #[serde(flatten)]
    pub latency: Option<LatencySummary>,
    #[serde(skip)]
    pub sorted_ns: Vec<u64>,
}

/// Whether the kernel sees a volatile write cache on the device holding a directory.
#[derive(Clone, Debug, Serialize)]
pub struct WriteCache {
    /// The block device's name in /sys/block (for a partition, its disk), if found.
    pub device: Option<String>,
    /// The text of `queue/write_cache`: "write back" or "write through".
    pub write_cache: Option<String>,
}

impl WriteCache {
    pub fn volatile(&self) -> Option<bool> {
        self.write_cache.as_deref().map(|text| text.trim() == "write back")
    }
}

/// Finds the device under `dir` through /sys/dev/block/MAJOR:MINOR and reads its
/// `queue/write_cache`. File systems without a block device (tmpfs, overlay on some
/// setups) give `None`s.
pub fn probe_write_cache(dir: &Path) -> WriteCache {
    let Some(device_dir) = crate::wal::file::affinity::disk_sysfs_dir(dir) else {
        return WriteCache { device: None, write_cache: None };
    };
    let device = device_dir.file_name().map(|name| name.to_string_lossy().into_owned());
    let write_cache = fs::read_to_string(device_dir.join("queue/write_cache")).ok().map(|s| s.trim().to_string());
    WriteCache { device, write_cache }
}

/// Why a method could not run.
#[derive(Debug)]
enum MethodError {
    /// The file system refused the method itself (for example `O_DIRECT` on tmpfs).
    Unsupported(String),
    /// Anything else: the test cannot go on.
    Io(String),
}

fn io_error(what: &str, path: &Path, error: std::io::Error) -> MethodError {
    MethodError::Io(format!("{}: {what}: {error}", path.display()))
}

/// A buffer of `len` bytes starting at a 4096-aligned address, for `O_DIRECT`, without
/// unsafe code: over-allocate and slice at the aligned offset.
struct AlignedBuffer {
    storage: Vec<u8>,
    start: usize,
    len: usize,
}

impl AlignedBuffer {
    const ALIGN: usize = 4096;
    fn new(len: usize, fill: u8) -> AlignedBuffer {
        let storage = vec![fill; len + Self::ALIGN];
        let address = storage.as_ptr() as usize;
        let start = (Self::ALIGN - address % Self::ALIGN) % Self::ALIGN;
        AlignedBuffer { storage, start, len }
    }
    fn bytes(&self) -> &[u8] {
        &self.storage[self.start..self.start + self.len]
    }
}

/// Writes zeros over `file_bytes`, syncs the file and its directory: the WAL's segment
/// preparation.
pub fn zero_fill(path: &Path, file_bytes: u64) -> std::io::Result<File> {
    let file = OpenOptions::new().read(true).write(true).create(true).truncate(true).open(path)?;
    let chunk = vec![0u8; 1 << 20];
    let mut offset = 0u64;
    while offset < file_bytes {
        let len = (file_bytes - offset).min(chunk.len() as u64) as usize;
        file.write_all_at(&chunk[..len], offset)?;
        offset += len as u64;
    }
    file.sync_all()?;
    if let Some(parent) = path.parent() {
        File::open(parent)?.sync_all()?;
    }
    Ok(file)
}

/// The per-method progress bar on stderr (`indicatif`; drawn only on a terminal).
struct Progress {
    bar: indicatif::ProgressBar,
}

impl Progress {
    fn new() -> Progress {
        let bar = indicatif::ProgressBar::with_draw_target(Some(1000), indicatif::ProgressDrawTarget::stderr_with_hz(10));
        let style = indicatif::ProgressStyle::with_template("{msg:<28} [{bar:30}] {percent:>3}%")
            .expect("a valid template")
            .progress_chars("## ");
        bar.set_style(style);
        Progress { bar }
    }
    fn draw(&mut self, method: Method, fraction: f64) {
        if self.bar.message() != method.name() {
            self.bar.set_message(method.name());
        }
        self.bar.set_position((fraction.clamp(0.0, 1.0) * 1000.0) as u64);
    }
    fn clear(&mut self) {
        self.bar.set_position(0);
        self.bar.finish_and_clear();
        self.bar.reset();
    }
}

fn run_method(
    method: Method,
    dir: &Path,
    budget: Budget,
    block_bytes: usize,
    file_bytes: u64,
    progress: &mut Progress,
) -> Result<Vec<u64>, MethodError> {
    let path = dir.join(format!("walab-fsync-test-{}.tmp", method.name()));
    let result = run_method_at(method, dir, &path, budget, block_bytes, file_bytes, progress);
    let _ = fs::remove_file(&path);
    if matches!(method, Method::CreateFdatasync | Method::CreateFdatasyncDirsync) {
        if let Ok(entries) = fs::read_dir(dir) {
            for entry in entries.flatten() {
                if entry.file_name().to_string_lossy().starts_with("walab-fsync-test-create-") {
                    let _ = fs::remove_file(entry.path());
                }
            }
        }
    }
    result
}

fn run_method_at(
    method: Method,
    dir: &Path,
    path: &Path,
    budget: Budget,
    block_bytes: usize,
    file_bytes: u64,
    progress: &mut Progress,
) -> Result<Vec<u64>, MethodError> {
    let blocks_in_file = (file_bytes / block_bytes as u64).max(1);
    let overwrite = matches!(
        method,
        Method::OverwriteFdatasync | Method::OverwriteFsync | Method::OverwriteOdsync | Method::OverwriteOdirectFdatasync
    );
    if overwrite {
        zero_fill(path, blocks_in_file * block_bytes as u64).map_err(|e| io_error("zero-fill", path, e))?;
    }
    let mut options = OpenOptions::new();
    options.read(true).write(true);
    match method {
        Method::OverwriteOdsync => {
            options.custom_flags(libc::O_DSYNC);
        }
        Method::OverwriteOdirectFdatasync => {
            if block_bytes % AlignedBuffer::ALIGN != 0 {
                return Err(MethodError::Unsupported(format!("O_DIRECT needs --block-bytes a multiple of {}", AlignedBuffer::ALIGN)));
            }
            options.custom_flags(libc::O_DIRECT);
        }
        Method::GrowFdatasync | Method::GrowFsync => {
            options.create(true).truncate(true);
        }
        _ => {}
    }
    let file = if matches!(method, Method::CreateFdatasync | Method::CreateFdatasyncDirsync) {
        None
    } else {
        Some(options.open(path).map_err(|error| {
            if method == Method::OverwriteOdirectFdatasync && error.raw_os_error() == Some(libc::EINVAL) {
                MethodError::Unsupported("the file system refuses O_DIRECT".to_string())
            } else {
                io_error("open", path, error)
            }
        })?)
    };
    let buffer = AlignedBuffer::new(block_bytes, 0xA5);
    let dir_handle = File::open(dir).map_err(|e| io_error("open directory", dir, e))?;
    let mut samples = Vec::new();
    let started = Instant::now();
    let mut op = 0u64;
    loop {
        let fraction = match budget {
            Budget::Duration(limit) => started.elapsed().as_secs_f64() / limit.as_secs_f64(),
            Budget::Ops(n) => op as f64 / n as f64,
        };
        if fraction >= 1.0 {
            break;
        }
        progress.draw(method, fraction);
        let offset = match method {
            Method::GrowFdatasync | Method::GrowFsync => op * block_bytes as u64,
            _ => (op % blocks_in_file) * block_bytes as u64,
        };
        let begin = Instant::now();
        match method {
            Method::CreateFdatasync | Method::CreateFdatasyncDirsync => {
                let new_path = dir.join(format!("walab-fsync-test-create-{op}.tmp"));
                let new_file = OpenOptions::new()
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .open(&new_path)
                    .map_err(|e| io_error("create", &new_path, e))?;
                new_file.write_all_at(buffer.bytes(), 0).map_err(|e| io_error("write", &new_path, e))?;
                new_file.sync_data().map_err(|e| io_error("fdatasync", &new_path, e))?;
                if method == Method::CreateFdatasyncDirsync {
                    dir_handle.sync_all().map_err(|e| io_error("fsync directory", dir, e))?;
                }
                let elapsed = begin.elapsed();
                drop(new_file);
                let _ = fs::remove_file(&new_path);
                samples.push(elapsed.as_nanos() as u64);
                op += 1;
                continue;
            }
            _ => {}
        }
        let file = file.as_ref().expect("opened above");
        if let Err(error) = file.write_all_at(buffer.bytes(), offset) {
            if method == Method::OverwriteOdirectFdatasync && error.raw_os_error() == Some(libc::EINVAL) {
                return Err(MethodError::Unsupported("O_DIRECT write refused (alignment)".to_string()));
            }
            return Err(io_error("write", path, error));
        }
        match method {
            Method::OverwriteFsync | Method::GrowFsync => file.sync_all().map_err(|e| io_error("fsync", path, e))?,
            Method::OverwriteOdsync => {}
            _ => file.sync_data().map_err(|e| io_error("fdatasync", path, e))?,
        }
        samples.push(begin.elapsed().as_nanos() as u64);
        op += 1;
    }
    Ok(samples)
}

/// Runs the chosen methods; the only error is one that stops the whole test (the
/// directory is unusable), as a one-line message.
pub fn measure(
    dir: &Path,
    methods: &[Method],
    budget: Budget,
    block_bytes: usize,
    file_bytes: u64,
) -> Result<Vec<MethodResult>, String> {
    let mut progress = Progress::new();
    let mut results = Vec::new();
    for &method in methods {
        let outcome = run_method(method, dir, budget, block_bytes, file_bytes, &mut progress);
        progress.clear();
        match outcome {
            Ok(mut samples) => {
                samples.sort_unstable();
                let total_s: f64 = samples.iter().map(|&ns| ns as f64 / 1e9).sum();
                let ops_per_s = if total_s > 0.0 { samples.len() as f64 / total_s } else { 0.0 };
                results.push(MethodResult {
                    method: method.name(),
                    unsupported: None,
                    ops_per_s,
                    latency: Some(LatencySummary::from_sorted(&samples)),
                    sorted_ns: samples,
                });
            }
            Err(MethodError::Unsupported(reason)) => results.push(MethodResult {
                method: method.name(),
                unsupported: Some(reason),
                ops_per_s: 0.0,
                latency: None,
                sorted_ns: Vec::new(),
            }),
            Err(MethodError::Io(message)) => return Err(message),
        }
    }
    Ok(results)
}

#[derive(Serialize)]
struct ReportJson<'a> {
    dir: String,
    block_bytes: usize,
    device: Option<&'a str>,
    write_cache: Option<&'a str>,
    volatile_write_cache: Option<bool>,
    /// The CPUs the device's completion interrupts go to (absent if not found).
    #[serde(skip_serializing_if = "Option::is_none")]
    completion_cpus: Option<Vec<usize>>,
    methods: &'a [MethodResult],
}

/// The exported distribution (schema in the module docs).
#[derive(Serialize, serde::Deserialize, Debug, PartialEq)]
pub struct LatencyExport {
    pub schema: String,
    pub source: String,
    pub method: String,
    pub block_bytes: usize,
    pub samples: u64,
    pub mean_ns: u64,
    pub write_cache: Option<String>,
    pub quantiles_ns: Vec<u64>,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let meta = fs::metadata(&args.dir).map_err(|e| CliError::usage(format!("{}: {e}", args.dir.display())))?;
    if !meta.is_dir() {
        return Err(CliError::usage(format!("{}: not a directory", args.dir.display())));
    }
    if args.block_bytes == 0 || args.block_bytes > (64 << 20) {
        return Err(CliError::usage("--block-bytes: must be between 1 and 67108864"));
    }
    let budget = match (args.seconds, args.ops) {
        (_, Some(0)) => return Err(CliError::usage("--ops: must be at least 1")),
        (_, Some(n)) => Budget::Ops(n),
        (Some(s), None) if s.is_finite() && s > 0.0 && s <= 3600.0 => Budget::Duration(Duration::from_secs_f64(s)),
        (Some(_), None) => return Err(CliError::usage("--seconds: must be a number between 0 and 3600")),
        (None, None) => Budget::Duration(Duration::from_secs(2)),
    };
    let export_method = METHODS
        .iter()
        .copied()
        .find(|m| m.name() == args.export_method)
        .ok_or_else(|| CliError::usage(format!("--export-method: unknown method {:?}", args.export_method)))?;
    let mut methods = Vec::new();
    for name in &args.methods {
        let method = METHODS
            .iter()
            .copied()
            .find(|m| m.name() == name)
            .ok_or_else(|| CliError::usage(format!("--methods: unknown method {name:?}")))?;
        methods.push(method);
    }
    if methods.is_empty() {
        methods = METHODS.to_vec();
    }
    if args.export_latency.is_some() && !methods.contains(&export_method) {
        methods.push(export_method);
    }
    let cache = probe_write_cache(&args.dir);
    let results = measure(&args.dir, &methods, budget, args.block_bytes, args.file_bytes).map_err(CliError::failed)?;

    if let Some(path) = &args.export_latency {
        let chosen = results.iter().find(|r| r.method == export_method.name()).expect("the exported method ran");
        if chosen.sorted_ns.is_empty() {
            return Err(CliError::failed(format!(
                "{}: nothing to export: {} {}",
                path.display(),
                chosen.method,
                chosen.unsupported.as_deref().unwrap_or("took no samples")
            )));
        }
        let latency = chosen.latency.as_ref().expect("samples present");
        let export = LatencyExport {
            schema: "walab-latency/1".to_string(),
            source: "walab fsync-test".to_string(),
            method: chosen.method.to_string(),
            block_bytes: args.block_bytes,
            samples: latency.samples,
            mean_ns: latency.mean_ns,
            write_cache: cache.write_cache.clone(),
            quantiles_ns: quantiles_101(&chosen.sorted_ns),
        };
        let text = serde_json::to_string_pretty(&export).expect("plain data serializes");
        fs::write(path, text + "\n").map_err(|e| CliError::usage(format!("{}: {e}", path.display())))?;
    }

    let completion_cpus = crate::wal::file::affinity::completion_cpus(&args.dir);
    let mut out = std::io::stdout().lock();
    if args.json {
        let report = ReportJson {
            dir: args.dir.display().to_string(),
            block_bytes: args.block_bytes,
            device: cache.device.as_deref(),
            write_cache: cache.write_cache.as_deref(),
            volatile_write_cache: cache.volatile(),
            completion_cpus: completion_cpus.clone(),
            methods: &results,
        };
        let _ = writeln!(out, "{}", serde_json::to_string(&report).expect("plain data serializes"));
        return Ok(ExitCode::SUCCESS);
    }
    let cache_line = match (cache.device.as_deref(), cache.write_cache.as_deref(), cache.volatile()) {
        (Some(dev), Some(text), Some(true)) => format!("{dev}: volatile write cache ({text}): each sync also flushes the device cache"),
        (Some(dev), Some(text), _) => format!("{dev}: no volatile write cache ({text})"),
        _ => "device write cache: unknown (no block device found for this directory)".to_string(),
    };
    let _ = writeln!(out, "directory {}, {} B per write", args.dir.display(), args.block_bytes);
    let _ = writeln!(out, "{cache_line}");
    if let (Some(cpus), Some(allowed)) = (&completion_cpus, crate::wal::file::affinity::allowed_cpus()) {
        let _ = writeln!(
            out,
            "completion interrupts on CPU {} of {}{}",
            crate::wal::file::affinity::format_cpu_list(cpus),
            crate::wal::file::affinity::format_cpu_list(&allowed),
            if cpus.len() < allowed.len() {
                ": the file WAL syncs there (walab bench --sync-cpus)"
            } else {
                ""
            }
        );
    }
    let _ = writeln!(out, "{:<28} {:>10} {:>9} {:>9} {:>9} {:>9}", "method", "ops/s", "p50 ms", "p99 ms", "p99.9 ms", "max ms");
    for result in &results {
        match (&result.latency, &result.unsupported) {
            (Some(l), None) => {
                let _ = writeln!(
                    out,
                    "{:<28} {:>10.0} {:>9.3} {:>9.3} {:>9.3} {:>9.3}",
                    result.method,
                    result.ops_per_s,
                    Nanos(l.p50_ns).as_millis_f64(),
                    Nanos(l.p99_ns).as_millis_f64(),
                    Nanos(l.p999_ns).as_millis_f64(),
                    Nanos(l.max_ns).as_millis_f64()
                );
            }
            (_, reason) => {
                let _ = writeln!(out, "{:<28} unsupported: {}", result.method, reason.as_deref().unwrap_or("no samples"));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let sorted: Vec<u64> = (1..=1000).collect();
        assert_eq!(percentile_sorted(&sorted, 500), 500);
        assert_eq!(percentile_sorted(&sorted, 990), 990);
        assert_eq!(percentile_sorted(&sorted, 999), 999);
        assert_eq!(percentile_sorted(&sorted, 1000), 1000);
        assert_eq!(percentile_sorted(&[7], 999), 7);
        assert_eq!(percentile_sorted(&[], 500), 0);
    }

    #[test]
    fn quantiles_have_101_nondecreasing_entries() {
        let sorted = vec![3, 5, 5, 9, 20];
        let q = quantiles_101(&sorted);
        assert_eq!(q.len(), 101);
        assert_eq!(q[0], 3);
        assert_eq!(q[100], 20);
        assert!(q.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn every_method_runs_or_says_why_not_on_a_real_directory() {
        let dir = tempfile::tempdir().unwrap();
        let results = measure(dir.path(), &METHODS, Budget::Ops(3), 4096, 64 * 1024).unwrap();
        assert_eq!(results.len(), METHODS.len());
        for result in &results {
            match &result.latency {
                Some(latency) => assert_eq!(latency.samples, 3, "{}", result.method),
                None => assert!(result.unsupported.is_some(), "{}", result.method),
            }
        }
        // The test files are gone afterwards.
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
