// Part 2: writes 1 to 4 travel from the process to the media on the tiny store's run.
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

async function chipsIn(page, stage) {
  return page.$$eval(`.stage-column[data-stage="${stage}"] .chip`, (chips) => chips.map((chip) => Number(chip.dataset.write)));
}

test('each write reaches the media only when its sync has finished', async () => {
  const page = await lab.newPage('?part=2');
  await page.keyboard.press('ArrowRight');
  const early = await chipsIn(page, 'Media');
  assert.ok(!early.includes(4), 'write 4 is not on the media at the first event');
  let sawInFlight = false;
  for (let step = 0; step < 12; step++) {
    await page.keyboard.press('ArrowRight');
    const inFlight = [...(await chipsIn(page, 'PageCache')), ...(await chipsIn(page, 'DeviceCache'))];
    if (inFlight.length > 0) sawInFlight = true;
  }
  assert.ok(sawInFlight, 'some write was seen between the process and the media');
  await page.keyboard.press('End');
  assert.deepEqual((await chipsIn(page, 'Media')).sort(), [1, 2, 3, 4]);
  const states = await page.$$eval('.unit-row .unit-cell', (cells) => cells.map((cell) => cell.dataset.state));
  assert.deepEqual(states, ['media', 'media', 'media', 'media']);
  await screenshot(page, 'part-02-end');
  await page.close();
});

test('the table of sync calls names a source for every row', async () => {
  const page = await lab.newPage('?part=2');
  const rows = await page.$$eval('table.sync-calls tbody tr', (trs) => trs.map((tr) => tr.querySelector('a.source')?.href ?? ''));
  assert.ok(rows.length >= 8);
  assert.ok(rows.every((href) => href.startsWith('https://man7.org/')), rows.join(' '));
  await page.close();
});

test('the browser console stays free of errors', () => {
  assert.deepEqual(lab.consoleErrors, []);
});
