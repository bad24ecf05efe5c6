// Alternates native runs of the simulator (its own binary) with runs of the same function
// compiled to WebAssembly in headless Chromium, then prints both and their ratio.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(process.env.NODE_PATH + '/');
const { chromium } = require('playwright-core');
const [native, wasmPath, count, rate, seed, rounds] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu'],
});
const page = await browser.newPage();
await page.goto('about:blank');
const bytes = fs.readFileSync(wasmPath).toString('base64');
await page.evaluate(async (b64) => {
  const raw = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  const { instance } = await WebAssembly.instantiate(raw, {});
  window.simCommit = instance.exports.sim_commit;
}, bytes);
const rows = [];
for (let round = 1; round <= Number(rounds); round++) {
  const line = execFileSync(native, [count, rate, seed, '1'], { encoding: 'utf8' }).trim().split(/\s+/);
  const nativeS = Number(line[1]);
  const nativeSyncs = Number(line[2]);
  const [wasmS, wasmSyncs] = await page.evaluate(
    ([c, r, s]) => {
      const started = performance.now();
      const syncs = window.simCommit(BigInt(c), BigInt(r), BigInt(s));
      return [(performance.now() - started) / 1000, Number(syncs)];
    },
    [count, rate, seed],
  );
  if (nativeSyncs !== wasmSyncs) {
    console.error(`round ${round}: native simulated ${nativeSyncs} syncs, WebAssembly ${wasmSyncs}`);
    process.exit(1);
  }
  rows.push([nativeS, wasmS]);
  console.log(
    `round ${round}: native ${nativeS.toFixed(3)} s (${(count / nativeS / 1e6).toFixed(1)} M writes/s), ` +
      `Chromium wasm ${wasmS.toFixed(3)} s (${(count / wasmS / 1e6).toFixed(1)} M writes/s), ` +
      `wasm/native time ${(wasmS / nativeS).toFixed(2)}x, ${nativeSyncs} syncs each`,
  );
}
await browser.close();
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const n = median(rows.map((r) => r[0]));
const w = median(rows.map((r) => r[1]));
console.log(
  `median: native ${(count / n / 1e6).toFixed(1)} M writes/s, Chromium wasm ${(count / w / 1e6).toFixed(1)} M writes/s, ` +
    `wasm/native time ${(w / n).toFixed(2)}x`,
);
