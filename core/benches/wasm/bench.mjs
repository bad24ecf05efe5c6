// Times the wasm32 build of the steady-load group-commit run under node.
//   node bench.mjs path/to/walab_wasm_bench.wasm
import { readFileSync } from "node:fs";

const path = process.argv[2] ?? "target/wasm32-unknown-unknown/release/walab_wasm_bench.wasm";
const { instance } = await WebAssembly.instantiate(readFileSync(path), {});
const writes = 1_000_000n;
const rounds = 10;

for (const name of ["steady_even", "steady_poisson"]) {
  const run = instance.exports[name];
  const syncs = run(writes); // warm-up
  const times = [];
  for (let i = 0; i < rounds; i++) {
    const start = process.hrtime.bigint();
    run(writes);
    times.push(Number(process.hrtime.bigint() - start) / 1e9);
  }
  times.sort((a, b) => a - b);
  const median = times[Math.floor(rounds / 2)];
  console.log(
    `${name}: ${Number(writes)} writes, ${syncs} syncs, median ${(median * 1e3).toFixed(1)} ms, ` +
      `best ${(times[0] * 1e3).toFixed(1)} ms, ${(Number(writes) / median / 1e6).toFixed(2)} M writes/s (median)`,
  );
}

// Determinism: the native test `poisson_run_is_the_same_on_every_target` expects this.
console.log(`steady_poisson_wait_total(100000) = ${instance.exports.steady_poisson_wait_total(100_000n)}`);
