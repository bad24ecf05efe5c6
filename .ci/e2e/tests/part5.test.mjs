// Part 5: group commit on the core's simulator, the policy switch, steady load and the charts.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startLab, screenshot, playerNow } from '../lib.mjs';

let lab;
before(async () => {
  lab = await startLab();
});
after(async () => {
  await lab?.close();
});

async function batchesDrawn(page) {
  return page.$$eval('svg.lanes g.sync', (groups) => groups.length);
}

test('at the end of the run every write is acknowledged and one batch is drawn per sync', async () => {
  const page = await lab.newPage('?part=5');
  await page.keyboard.press('End');
  const syncs = Number(await page.getAttribute('table.summary', 'data-syncs'));
  assert.equal(await batchesDrawn(page), syncs);
  const phases = await page.$$eval('svg.lanes g.write', (groups) => groups.map((g) => g.dataset.phase));
  assert.equal(phases.length, 24);
  assert.ok(phases.every((phase) => phase === 'acked'), phases.join(','));
  const leaders = await page.$$eval('svg.lanes g.write.leader', (groups) => groups.length);
  assert.equal(leaders, syncs, 'one leader per batch');
  await screenshot(page, 'part-05-tiny-end');
  await page.close();
});

test('stepping walks the events and step back returns', async () => {
  const page = await lab.newPage('?part=5');
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('ArrowRight');
  const second = await page.getAttribute('.player .now', 'data-now-ns');
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('ArrowLeft');
  assert.equal(await page.getAttribute('.player .now', 'data-now-ns'), second);
  await page.close();
});

test('sync per write takes one sync per write, and the URL says so', async () => {
  const page = await lab.newPage('?part=5');
  await page.selectOption('select.policy', 'per-write');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('policy') === 'per-write');
  assert.equal(await page.getAttribute('table.summary', 'data-syncs'), '24');
  await page.close();
});

test('steady load at 100,000 writes a second batches about 100 writes per sync', async () => {
  const page = await lab.newPage('?part=5&scenario=steady&load=100000');
  const batchMean = Number(await page.getAttribute('.steady-whole', 'data-batch-mean'));
  assert.ok(batchMean > 80 && batchMean < 120, `batch mean ${batchMean}`);
  await page.keyboard.press('End');
  await screenshot(page, 'part-05-steady');
  assert.equal(await page.getAttribute('figure.chart svg[aria-label^="mean wait against load"]', 'data-series'), '3');
  await page.close();
});

test('sync per write at 12.7 ms, as write 24 arrives: 12 writes wait for their OK (FIGURES.md), 11 of them queued', async () => {
  const page = await lab.newPage('?part=5&policy=per-write');
  await page.keyboard.press('Home');
  for (let i = 0; i < 200 && (await playerNow(page)) < 12_700_000; i++) await page.keyboard.press('ArrowRight');
  assert.equal(await playerNow(page), 12_700_000);
  assert.equal(await page.textContent('table.summary td.waiting-now'), '12');
  assert.equal(await page.textContent('table.summary td.acked-now'), '12');
  const title = await page.textContent('[data-region="queue"] .region-title');
  assert.match(title, /^queue: 11 · 12 without OK$/);
  await page.close();
});

test('steady load at 100,000 writes/s shows its steady state first (100.0 writes per sync); the whole run, warm-up included, follows and says so', async () => {
  const page = await lab.newPage('?part=5&scenario=steady&load=100000');
  const steady = await page.$('.steady-stats table.steady-state');
  assert.ok(steady, 'the steady state is shown');
  assert.equal(await steady.getAttribute('data-writes-per-sync'), '100.0');
  assert.equal(await steady.getAttribute('data-syncs-per-s'), '1000');
  // The whole run (95 writes per sync with its lone first sync) comes after, and says it counts the warm-up.
  assert.match(await page.textContent('.steady-whole'), /^The whole run, warm-up and drain included: /);
  const order = await page.$$eval('.steady-stats > *', (nodes) => nodes.map((node) => node.className));
  assert.ok(order.findIndex((name) => /steady-state/.test(name)) < order.findIndex((name) => /steady-whole/.test(name)), order.join(' | '));
  await page.close();
});

test('the browser console stays free of errors', () => {
  assert.deepEqual(lab.consoleErrors, []);
});
