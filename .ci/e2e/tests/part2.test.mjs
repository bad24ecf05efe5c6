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

test('stepping to the end puts writes 1 to 4 on the media, with wal-1 and wal-2 in the directory', async () => {
  const page = await lab.newPage('?part=2');
  await page.keyboard.press('End');
  const writes = await page.$$eval('[data-figure="sync-journey"] g.record', (gs) => gs.map((g) => [Number(g.dataset.write), g.dataset.state, g.dataset.acked]));
  assert.deepEqual(writes, [[1, 'media', 'true'], [2, 'media', 'true'], [3, 'media', 'true'], [4, 'media', 'true']]);
  const media = await page.$$eval('[data-figure="sync-journey"] [data-media-unit]', (gs) => gs.map((g) => g.dataset.mediaRecords));
  assert.deepEqual(media, ['1,2', '2,3', '3,4', '4']);
  assert.equal(await page.getAttribute('[data-figure="sync-journey"] .directory', 'data-directory'), 'wal-1,wal-2');
  await screenshot(page, 'part-02-end');
  await page.close();
});

test('the table of sync calls names a source for every row', async () => {
  const page = await lab.newPage('?part=2');
  const rows = await page.$$eval('table.sync-calls tbody tr', (trs) => trs.map((tr) => tr.querySelector('a.source')?.href ?? ''));
  const afterPowerLoss = await page.$$eval('table.sync-calls tbody tr', (trs) => trs.map((tr) => [tr.dataset.survives, tr.querySelector('td.power-loss-after').textContent]));
  for (const [survives, text] of afterPowerLoss) {
    assert.match(text, survives === 'true' ? /^kept/ : /lost/, text);
  }
  assert.ok(rows.length >= 8);
  assert.ok(rows.every((href) => href.startsWith('https://man7.org/')), rows.join(' '));
  await page.close();
});

test('on a phone Part 2 keeps its lesson short: the notes beside the calls fold into details', async () => {
  const page = await lab.newPage('?part=2', { width: 390, height: 844 });
  await page.waitForSelector('table.sync-calls');
  const height = await page.evaluate(() => document.documentElement.scrollHeight);
  // The journey, the call on a record, the table of calls and the cost of a sync stay open.
  for (const open of ['[data-figure="sync-journey"]', 'table.sync-calls', 'pre.commands']) assert.ok(await page.isVisible(open), open);
  assert.ok(await page.$('details.more summary'), 'the secondary notes are a click away');
  assert.ok(height <= 6200, `Part 2 is ${height} px tall at 390 px`);
  await page.close();
});

test('the browser console stays free of errors', () => {
  assert.deepEqual(lab.consoleErrors, []);
});
