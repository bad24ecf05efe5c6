// A trace file written by `walab` and dropped onto the page plays in Part 5's lanes;
// a malformed file gets a clear message and the page keeps working.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startLab, screenshot, walab } from '../lib.mjs';

let lab;
let dir;
before(async () => {
  lab = await startLab();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'walab-trace-'));
});
after(async () => {
  await lab?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

test('a trace from `walab sim power-cut --trace` plays in the lanes', async () => {
  const file = path.join(dir, 'run.json');
  const report = JSON.parse(walab('sim', 'power-cut', '--at-ms', '20', '--trace', file, '--json'));
  const trace = JSON.parse(fs.readFileSync(file, 'utf8'));
  const page = await lab.newPage('?part=2');
  await page.setInputFiles('input.trace-file', file);
  await page.waitForSelector('.dropped');
  assert.equal(await page.getAttribute('#chapter', 'data-part'), '5', 'the page moves to Part 5');
  assert.equal(await page.getAttribute('.dropped', 'data-writes'), String(trace.writes.length));
  await page.keyboard.press('End');
  assert.equal(await page.getAttribute('.acked-line', 'data-acked'), String(report.acknowledged.length));
  await screenshot(page, 'part-05-dropped-trace');
  await page.click('button.close-trace');
  await page.waitForSelector('svg.lanes');
  assert.equal(await page.$('.dropped'), null);
  await page.close();
});

test('a trace dropped anywhere on the page is read, not opened by the browser in place of the lab', async () => {
  const file = path.join(dir, 'anywhere.json');
  walab('sim', 'power-cut', '--at-ms', '20', '--trace', file, '--json');
  const text = fs.readFileSync(file, 'utf8');
  const page = await lab.newPage('?part=2');
  const handled = await page.evaluate((body) => {
    const transfer = new DataTransfer();
    transfer.items.add(new File([body], 'anywhere.json', { type: 'application/json' }));
    const heading = document.querySelector('#chapter h2');
    const over = heading.dispatchEvent(new DragEvent('dragover', { dataTransfer: transfer, bubbles: true, cancelable: true }));
    const drop = heading.dispatchEvent(new DragEvent('drop', { dataTransfer: transfer, bubbles: true, cancelable: true }));
    return { over, drop };
  }, text);
  // dispatchEvent returns false when a listener prevented the browser's own handling.
  assert.deepEqual(handled, { over: false, drop: false });
  await page.waitForSelector('.dropped');
  assert.equal(await page.getAttribute('#chapter', 'data-part'), '5', 'the page moves to Part 5');
  await page.close();
});

test('a malformed trace file gets a clear message', async () => {
  const file = path.join(dir, 'broken.json');
  fs.writeFileSync(file, '{"format_version": 1, "events": [');
  const page = await lab.newPage('?part=5');
  await page.setInputFiles('input.trace-file', file);
  const message = await (await page.waitForSelector('.drop-error')).textContent();
  assert.match(message, /^broken\.json: not a walab trace \(line 1, column \d+/);
  assert.ok(await page.$('svg.lanes'), 'the simulator view is still there');
  await page.close();
});


test('a latency file from `walab fsync-test --export-latency` drives the steady runs', async () => {
  const file = path.join(dir, 'latency.json');
  // A measured distribution: 101 non-decreasing percentiles, 2 ms to 4 ms.
  const quantiles = Array.from({ length: 101 }, (_, i) => 2_000_000 + i * 20_000);
  fs.writeFileSync(file, JSON.stringify({ schema: 'walab-latency/1', source: 'walab fsync-test', method: 'overwrite-fdatasync', quantiles_ns: quantiles }));
  const page = await lab.newPage('?part=5&scenario=steady&load=100000');
  const before = Number(await page.getAttribute('.steady-whole', 'data-batch-mean'));
  await page.setInputFiles('input.trace-file', file);
  await page.waitForSelector('.measured-latency');
  const after = Number(await page.getAttribute('.steady-whole', 'data-batch-mean'));
  assert.ok(after > before * 1.5, `slower syncs carry bigger batches: ${after} > 1.5 x ${before}`);
  await page.click('.measured-latency button');
  assert.equal(await page.$('.measured-latency'), null);
  await page.close();
});

test('the browser console stays free of errors', () => {
  assert.deepEqual(lab.consoleErrors, []);
});
