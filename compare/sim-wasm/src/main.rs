//! `walab-sim-native COUNT RATE SEED ROUNDS`: times [`walab_sim_wasm::sim_commit`]
//! natively, one line per round: `native <seconds> <syncs>`.

use std::time::Instant;

fn main() {
    let args: Vec<u64> = std::env::args().skip(1).map(|a| a.parse().expect("COUNT RATE SEED ROUNDS: numbers")).collect();
    let [count, rate, seed, rounds] = args[..] else {
        eprintln!("usage: walab-sim-native COUNT RATE SEED ROUNDS");
        std::process::exit(2);
    };
    for _ in 0..rounds {
        let started = Instant::now();
        let syncs = walab_sim_wasm::sim_commit(count, rate, seed);
        println!("native {:.4} {syncs}", started.elapsed().as_secs_f64());
    }
}
