//! One run of the group-commit simulator, as `walab sim commit --sync-ms 1 --rate RATE
//! --count COUNT --poisson --seed SEED` runs it (the table's keep: batches, not writes),
//! exported for WebAssembly with a C ABI (no bindings: the caller times it) and called by
//! the native binary beside it.

use walab_core::group_commit::{Config, Policy};
use walab_core::sim::commit::{self, Arrivals, CommitSetup, Keep};
use walab_core::time::Nanos;

/// Runs the simulation; returns the syncs it made (so a caller can check both builds
/// simulated the same run), or `u64::MAX` if the setup was refused.
#[no_mangle]
pub extern "C" fn sim_commit(count: u64, rate_per_s: u64, seed: u64) -> u64 {
    // The CLI's defaults: one persist at a time, a batch of at most 1 MiB.
    let base = Config::file(Policy::Group);
    let batch_bytes_max = 1 << 20;
    let config = Config {
        inflight_max: 1,
        batch_bytes_max,
        unflushed_bytes_max: base.unflushed_bytes_max.max(batch_bytes_max),
        ..base
    };
    let setup = CommitSetup {
        keep: Keep { writes: false, batches: true, trace: false },
        seed,
        ..CommitSetup::new(config, Nanos(1_000_000))
    };
    let arrivals = Arrivals::Poisson { rate_per_s, count, seed };
    match commit::run(&setup, &arrivals) {
        Ok(run) => run.summary.syncs,
        Err(_) => u64::MAX,
    }
}
