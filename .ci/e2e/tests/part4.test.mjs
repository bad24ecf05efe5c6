// Part 4: the record bytes are the core's, the append bench steps, and the power cut reports.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startLab, screenshot, walab } from '../lib.mjs';

let lab;
before(async () => {
  lab = await startLab();
});
after(async () => {
  await lab?.close();
});

test("wal-1's hex on the page equals the records `walab scenario tiny-store --json` prints", async () => {
  const scenario = JSON.parse(walab('scenario', 'tiny-store', '--json'));
  const page = await lab.newPage('?part=4');
  const rows = await page.$$eval('tr.record-row', (trs) =>
    trs.map((tr) => ({
      write: Number(tr.dataset.write),
      offset: Number(tr.dataset.offset),
      hex: tr.querySelector('td.hex').textContent.replace(/\s+/g, ''),
      fields: [...tr.querySelectorAll('td.hex .field')].map((span) => span.title),
    })),
  );
  assert.deepEqual(rows.map((row) => row.offset), [0, 29, 56, 85]);
  for (const row of rows) {
    const expected = scenario.writes.find((write) => write.id === row.write);
    assert.equal(row.hex, expected.record_hex, `write ${row.write}`);
    assert.deepEqual(row.fields, ['CRC32C', 'length', 'type', 'seq', 'op', 'key length', 'key', 'value length', 'value']);
  }
  await page.close();
});

test('stepping with the keyboard and pulling the power after the OK loses the write only in the wrong order', async () => {
  const page = await lab.newPage('?part=4');
  for (let step = 0; step < 6; step++) await page.keyboard.press('ArrowRight');
  assert.equal(await page.getAttribute('.player .mark-count', 'data-mark'), '6');
  assert.equal(await page.$('.player .now'), null, 'the append is labelled in steps, not times');
  await page.keyboard.press('p');
  await page.waitForSelector('.power.report');
  assert.equal(await page.getAttribute('.power.report', 'data-cut-steps'), '6');
  assert.match(await page.textContent('.right-outcome'), /the write survives/);
  assert.match(await page.textContent('.wrong-outcome'), /the client got OK and the write is gone/);
  assert.equal(new URL(page.url()).searchParams.get('cut'), '6');
  await screenshot(page, 'part-04-power-cut');
  await page.close();
});

test('a deep link opens Part 4 at its cut', async () => {
  const page = await lab.newPage('?part=4&cut=2');
  assert.equal(await page.getAttribute('.power.report', 'data-cut-steps'), '2');
  assert.match(await page.textContent('.wrong-outcome'), /nobody was told OK/);
  await page.close();
});

test('play runs the append to its end', async () => {
  const page = await lab.newPage('?part=4');
  await page.selectOption('.player .speed select', { index: 6 });
  await page.click('.player button.play');
  await page.waitForFunction(() => document.querySelector('.player .mark-count').dataset.mark === '7', null, { timeout: 10000 });
  await page.close();
});
