//! `--against-raw-ms`: the raw side of the turns, 4 KiB overwrites and fdatasync in the
//! WAL's own directory, alternating with the WAL's turns so that both meet the same disk.

use super::*;

/// The raw side of `--against-raw-ms`, and the WAL's ratios against it.
#[derive(Serialize)]
pub(super) struct RawJson {
    pub(super) turn_ms: u64,
    pub(super) ops_per_s: f64,
    pub(super) p50_ms: f64,
    pub(super) p99_ms: f64,
    /// The WAL's append p50 over the raw sync p50 (1.0 is the disk's own sync).
    pub(super) wal_p50_over_raw_p50: f64,
    /// The WAL's syncs/s over the raw syncs/s (1.0: the WAL keeps the disk as busy as a raw loop).
    pub(super) wal_syncs_over_raw_syncs: f64,
}

/// The WAL's counters summed over its turns.
#[derive(Default)]
pub(super) struct WalTurns {
    pub(super) seconds: f64,
    pub(super) acked: u64,
    pub(super) persists: u64,
    pub(super) persist_ns: u64,
}

impl WalTurns {
    pub(super) fn add(&mut self, took: Duration, before: &crate::wal::WalStats, after: &crate::wal::WalStats) {
        self.seconds += took.as_secs_f64();
        self.acked += after.acked - before.acked;
        self.persists += after.persists_ok - before.persists_ok;
        self.persist_ns += after.persist_ns_total - before.persist_ns_total;
    }
}

/// Raw syncs in turns: 4 KiB overwrites of a preallocated 16 MiB file, each followed by
/// fdatasync, as `walab fsync-test`'s overwrite-fdatasync method does.
pub(super) struct RawTurns {
    pub(super) path: PathBuf,
    pub(super) file: std::fs::File,
    pub(super) block: Vec<u8>,
    pub(super) offset: u64,
    pub(super) turn: Duration,
    pub(super) histogram: Histogram,
    pub(super) ops: u64,
    pub(super) seconds: f64,
}

pub(super) const RAW_FILE_BYTES: u64 = 16 << 20;
pub(super) const RAW_BLOCK_BYTES: usize = 4096;

impl RawTurns {
    pub(super) fn new(dir: &std::path::Path, turn: Duration) -> Result<RawTurns, CliError> {
        use std::os::unix::fs::FileExt;
        let fail = |what: &str, e: std::io::Error| CliError::failed(format!("bench --against-raw-ms: {}: {what}: {e}", dir.display()));
        std::fs::create_dir_all(dir).map_err(|e| fail("cannot create the directory", e))?;
        let path = dir.join(format!(".walab-raw-{}", std::process::id()));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .map_err(|e| fail("cannot create the raw test file", e))?;
        let zeros = vec![0u8; 1 << 20];
        for chunk in 0..RAW_FILE_BYTES / zeros.len() as u64 {
            file.write_all_at(&zeros, chunk * zeros.len() as u64).map_err(|e| fail("cannot preallocate", e))?;
        }
        file.sync_all().map_err(|e| fail("cannot sync the raw test file", e))?;
        Ok(RawTurns {
            path,
            file,
            block: vec![0x5a; RAW_BLOCK_BYTES],
            offset: 0,
            turn,
            histogram: Histogram::new(),
            ops: 0,
            seconds: 0.0,
        })
    }

    pub(super) fn run_turn(&mut self) -> std::io::Result<()> {
        use std::os::unix::fs::FileExt;
        let started = Instant::now();
        while started.elapsed() < self.turn {
            let begin = Instant::now();
            self.file.write_all_at(&self.block, self.offset)?;
            self.file.sync_data()?;
            self.histogram.record(begin.elapsed().as_nanos() as u64);
            self.ops += 1;
            self.offset = (self.offset + RAW_BLOCK_BYTES as u64) % RAW_FILE_BYTES;
        }
        self.seconds += started.elapsed().as_secs_f64();
        Ok(())
    }

    pub(super) fn finish(self, wal_p50_ms: f64, wal_syncs_per_s: f64) -> RawJson {
        let _ = std::fs::remove_file(&self.path);
        let ops_per_s = if self.seconds > 0.0 { self.ops as f64 / self.seconds } else { 0.0 };
        let p50_ms = self.histogram.quantile_ms(500);
        RawJson {
            turn_ms: self.turn.as_millis() as u64,
            ops_per_s,
            p50_ms,
            p99_ms: self.histogram.quantile_ms(990),
            wal_p50_over_raw_p50: if p50_ms > 0.0 { wal_p50_ms / p50_ms } else { 0.0 },
            wal_syncs_over_raw_syncs: if ops_per_s > 0.0 { wal_syncs_per_s / ops_per_s } else { 0.0 },
        }
    }
}
