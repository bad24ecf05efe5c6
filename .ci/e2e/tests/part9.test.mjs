// Part 9: the page engine's figure opens on the power cut that tears P1, and SQLite's
// stepper beside it opens on its own cut, not at its end.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startLab, screenshot } from '../lib.mjs';

let lab;
before(async () => {
  lab = await startLab();
});
after(async () => {
  await lab?.close();
});

test('Part 9 opens just after the power cut: P1 torn on disk, recovery about to start', async () => {
  const page = await lab.newPage('?part=9', { width: 1366, height: 768 });
  const mark = Number(await page.getAttribute('.player .mark-count', 'data-mark'));
  assert.ok(mark > 0, 'not at the empty start');
  assert.match(await page.textContent('.player .caption'), /power fails/);
  assert.equal(await page.getAttribute('[data-figure="pages"] g.disk-page[data-page="1"]', 'data-state'), 'torn');
  await screenshot(page, 'part-09-opening');
  await page.close();
});

test("SQLite's stepper opens on its power cut, with steps left to play", async () => {
  const page = await lab.newPage('?part=9', { width: 1366, height: 768 });
  const [step, total] = (await page.textContent('.sqlite-stepper .mark-count')).match(/(\d+) of (\d+)/).slice(1).map(Number);
  assert.ok(step > 0 && step < total, `step ${step} of ${total}`);
  assert.match(await page.textContent('[data-figure="sqlite-wal"]'), /POWER CUT/i);
  await page.close();
});

test('the browser console stays free of errors', () => {
  assert.deepEqual(lab.consoleErrors, []);
});
