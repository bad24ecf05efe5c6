//! Exports the simulator's steady-load runs as plain wasm functions (no imports, no
//! wasm-bindgen), so `bench.mjs` can time them under node.

use walab_core::group_commit::{Config, Policy};
use walab_core::sim::commit::{run, Arrivals, CommitSetup};
use walab_core::time::Nanos;

fn steady(arrivals: Arrivals) -> u64 {
    let setup = CommitSetup::new(Config::file(Policy::Group), Nanos::from_millis(1));
    match run(&setup, &arrivals) {
        Ok(run) => run.summary.syncs,
        Err(_) => 0,
    }
}

/// Group commit over `count` evenly spaced writes at 100,000 a second; returns the syncs.
#[no_mangle]
pub extern "C" fn steady_even(count: u64) -> u64 {
    steady(Arrivals::Even { rate_per_s: 100_000, count })
}

/// The same with Poisson arrivals (seed 1); returns the syncs.
#[no_mangle]
pub extern "C" fn steady_poisson(count: u64) -> u64 {
    steady(Arrivals::Poisson { rate_per_s: 100_000, count, seed: 1 })
}

/// The Poisson run's total wait in nanoseconds: compare with the native run's to check
/// that both targets simulate the same thing, bit for bit.
#[no_mangle]
pub extern "C" fn steady_poisson_wait_total(count: u64) -> u64 {
    let setup = CommitSetup::new(Config::file(Policy::Group), Nanos::from_millis(1));
    match run(&setup, &Arrivals::Poisson { rate_per_s: 100_000, count, seed: 1 }) {
        Ok(run) => run.summary.wait_total.0,
        Err(_) => 0,
    }
}
