//! Steady-load group commit: one million simulated writes at 100,000 a second, L = 1 ms.
//!
//! The simulator's speed target is at least 10 million simulated writes a second
//! natively. Criterion reports the time per run of 1,000,000 writes (its "thrpt" line is
//! the writes a second). The same run compiled to wasm32 is measured by
//! `core/benches/wasm/` (see its README).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use walab_core::group_commit::{Config, Policy};
use walab_core::sim::commit::{run, Arrivals, CommitSetup};
use walab_core::time::Nanos;

const WRITES: u64 = 1_000_000;

fn steady_group_commit(c: &mut Criterion) {
    let setup = CommitSetup::new(Config::file(Policy::Group), Nanos::from_millis(1));
    let mut group = c.benchmark_group("steady_load");
    group.throughput(Throughput::Elements(WRITES));
    group.sample_size(20);
    group.bench_function("group_commit_even_1m_writes", |b| {
        let arrivals = Arrivals::Even { rate_per_s: 100_000, count: WRITES };
        b.iter(|| run(&setup, &arrivals).unwrap().summary.syncs)
    });
    group.bench_function("group_commit_poisson_1m_writes", |b| {
        let arrivals = Arrivals::Poisson { rate_per_s: 100_000, count: WRITES, seed: 1 };
        b.iter(|| run(&setup, &arrivals).unwrap().summary.syncs)
    });
    group.finish();
}

criterion_group!(benches, steady_group_commit);
criterion_main!(benches);
