//! The remote driver on `sim::clock` against its old loop, in one process: first every
//! setup of a matrix must give the same run (bulks, records, takeover, trims, the end),
//! then both loops run the same setups in alternating rounds and the medians are printed.
//!
//! `cargo run --release -p walab-core --example remote_loop`

use std::time::Instant;

use walab_core::ring::RingGeometry;
use walab_core::sim::remote::{self, driver_old, LatencyProfile, Load, RemoteBackend, RemoteSetup};
use walab_core::sim::SyncLatency;
use walab_core::time::Nanos;

fn ms(millis: u64) -> Nanos {
    Nanos::from_millis(millis)
}

fn matrix() -> Vec<RemoteSetup> {
    let mut setups = Vec::new();
    let loads = [
        Load::Writers { writers: 1 },
        Load::Writers { writers: 8 },
        Load::Writers { writers: 64 },
        Load::Rate { rate_per_s: 5_000, poisson: false },
        Load::Rate { rate_per_s: 20_000, poisson: false },
        Load::Rate { rate_per_s: 20_000, poisson: true },
    ];
    for backend in [RemoteBackend::S3, RemoteBackend::Postgres] {
        let latencies = [
            SyncLatency::fixed(ms(if backend == RemoteBackend::S3 { 25 } else { 1 })),
            LatencyProfile::default_for(backend).latency(),
            LatencyProfile::S3Express.latency(),
        ];
        for load in loads {
            for latency in &latencies {
                for fault in 0..8 {
                    for seed in 1..=3 {
                        let mut setup = RemoteSetup::new(backend, load, 600);
                        setup.seed = seed;
                        setup.latency = latency.clone();
                        match fault {
                            0 => {}
                            1 => setup.slow_puts = vec![(3, ms(200))],
                            2 => setup.fail_put = Some(3),
                            3 => setup.takeover_at = Some(ms(30)),
                            4 => {
                                setup.takeover_at = Some(ms(60));
                                setup.slow_puts = vec![(8, ms(300))];
                            }
                            5 => setup.takeover_at = Some(Nanos::ZERO),
                            6 => setup.inflight_max = 1,
                            _ => setup.batch_interval = Some(ms(2)),
                        }
                        if backend == RemoteBackend::Postgres {
                            setup.ring = RingGeometry { segments: 2 + seed, segment_bytes: 4096 };
                            if fault == 6 {
                                setup.upload_stall = Some((Nanos::ZERO, ms(500)));
                            }
                            if fault == 7 {
                                setup.upload_stall = Some((ms(10), Nanos::MAX));
                            }
                        }
                        setups.push(setup);
                    }
                }
            }
        }
    }
    setups
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(|a, b| a.partial_cmp(b).unwrap());
    samples[samples.len() / 2]
}

fn main() {
    let setups = matrix();
    let mut compared = 0;
    for setup in &setups {
        let (new, old) = (remote::run(setup), driver_old::run(setup));
        match (&new, &old) {
            (Ok(new), Ok(old)) => assert!(new == old, "the runs differ: {setup:?}"),
            (new, old) => assert_eq!(new.is_err(), old.is_err(), "{setup:?}"),
        }
        compared += 1;
    }
    println!("{compared} setups: the same run from both loops");

    // Timed: the lab's S3 run, a Postgres ring run and a large closed-loop run.
    let mut timed = vec![
        RemoteSetup::new(RemoteBackend::S3, Load::Rate { rate_per_s: 20_000, poisson: true }, 20_000),
        RemoteSetup::new(RemoteBackend::Postgres, Load::Writers { writers: 64 }, 20_000),
        RemoteSetup::new(RemoteBackend::S3, Load::Writers { writers: 256 }, 100_000),
    ];
    timed[0].takeover_at = Some(ms(300));
    timed[1].ring = RingGeometry { segments: 4, segment_bytes: 65_536 };
    let rounds = 31;
    for setup in &timed {
        let (mut new_times, mut old_times) = (Vec::new(), Vec::new());
        for round in 0..rounds {
            // Alternate which loop goes first.
            for which in [round % 2, 1 - round % 2] {
                let start = Instant::now();
                let run = if which == 0 { remote::run(setup) } else { driver_old::run(setup) };
                let elapsed = start.elapsed().as_secs_f64() * 1e3;
                std::hint::black_box(run.unwrap());
                if which == 0 { new_times.push(elapsed) } else { old_times.push(elapsed) }
            }
        }
        let (new, old) = (median(new_times), median(old_times));
        println!(
            "{} {:?} {} records: clock {new:.2} ms, old loop {old:.2} ms (median of {rounds}, new/old {:.3})",
            setup.backend.name(),
            setup.load,
            setup.count,
            new / old
        );
    }
}
