// Measures what a browser downloads to start the lab: the wasm and the JS glue in dist/,
// raw and gzipped (level 9), against the 600 KB gzipped budget. Prints one line per file
// and records the totals in .ci/artifacts/metrics.json. Exits 1 over budget.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { distDir, recordMetric } from './lib.mjs';

const BUDGET_GZIP_BYTES = 600 * 1000;
const files = fs.readdirSync(distDir).filter((name) => /\.(wasm|js)$/.test(name));
if (files.length === 0) {
  console.error(`measure-size: ${distDir}: no .wasm or .js files (build the page first)`);
  process.exit(2);
}
let raw = 0;
let gzip = 0;
for (const name of files.sort()) {
  const body = fs.readFileSync(path.join(distDir, name));
  const gz = zlib.gzipSync(body, { level: 9 }).length;
  raw += body.length;
  gzip += gz;
  console.log(`size: ${name}: ${(body.length / 1000).toFixed(1)} KB raw, ${(gz / 1000).toFixed(1)} KB gzipped`);
}
console.log(`size: wasm + js: ${(raw / 1000).toFixed(1)} KB raw, ${(gzip / 1000).toFixed(1)} KB gzipped (budget 600 KB)`);
recordMetric('wasm_js_raw_bytes', raw);
recordMetric('wasm_js_gzip_bytes', gzip);
if (gzip > BUDGET_GZIP_BYTES) {
  console.error(`size: over budget: ${gzip} > ${BUDGET_GZIP_BYTES} bytes gzipped`);
  process.exit(1);
}
