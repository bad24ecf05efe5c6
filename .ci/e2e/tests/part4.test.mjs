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
  // The bytes of wal-1's figure, record by record (the figure draws each byte in hex).
  const rows = await page.$$eval('[data-scene="record-bytes"] [data-figure="record-bytes"]', ([figure]) =>
    [...figure.querySelectorAll('g.record')].map((record) => {
      const [offset, end] = [Number(record.dataset.offset), Number(record.dataset.end)];
      const bytes = [...figure.querySelectorAll('g.byte')].filter((b) => Number(b.dataset.byte) >= offset && Number(b.dataset.byte) < end);
      return {
        write: Number(record.dataset.write),
        offset,
        hex: bytes.map((b) => b.textContent).join(''),
        fields: [...new Set(bytes.map((b) => [...b.classList].find((c) => c.startsWith('f-'))))],
      };
    }),
  );
  assert.deepEqual(rows.map((row) => row.offset), [0, 29, 56, 85]);
  for (const row of rows) {
    const expected = scenario.writes.find((write) => write.id === row.write);
    assert.equal(row.hex, expected.record_hex, `write ${row.write}`);
    assert.deepEqual(row.fields, ['f-crc', 'f-len', 'f-type', 'f-seq', 'f-op', 'f-klen', 'f-key', 'f-vlen', 'f-value']);
  }
  // The key to the colours, under the figure.
  assert.match(await page.textContent('.wal-bytes .legend'), /CRC32C.*length.*type.*seq/);
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

test("a byte changed in wal-1's figure stops the core's scan at its record's CRC, and the keyboard can do it too", async () => {
  const page = await lab.newPage('?part=4', { width: 1366, height: 768 });
  const scene = '[data-scene="record-bytes"]';
  assert.equal(await page.getAttribute(`${scene} .corrupt`, 'data-accepted'), '4');
  // Byte 82 is in record 3's value (record 3 is bytes 56-84).
  await page.click(`${scene} g.byte[data-byte="82"]`);
  await page.waitForSelector(`${scene} .corrupt[data-changed="82"]`);
  assert.equal(await page.getAttribute(`${scene} .corrupt`, 'data-accepted'), '2');
  assert.equal(await page.getAttribute(`${scene} .corrupt`, 'data-stop'), 'checksum');
  assert.equal(await page.getAttribute(`${scene} .corrupt-verdict`, 'aria-live'), 'polite');
  const verdict = await page.textContent(`${scene} .corrupt-verdict`);
  assert.match(verdict, /byte 82 \(record 3\)/);
  assert.match(verdict, /stores CRC [0-9a-f]{8} but its bytes give [0-9a-f]{8}/);
  assert.match(verdict, /Records 3 and 4 are not replayed/);
  assert.ok(await page.$(`${scene} g.byte.changed[data-byte="82"]`), 'the changed byte is marked in the figure');
  await screenshot(page, 'part-04-corrupt');
  // The keyboard: type a byte's number (record 1's CRC), then put it back.
  await page.fill(`${scene} input.corrupt-byte`, '0');
  await page.press(`${scene} input.corrupt-byte`, 'Enter');
  await page.waitForSelector(`${scene} .corrupt[data-changed="0"]`);
  assert.equal(await page.getAttribute(`${scene} .corrupt`, 'data-accepted'), '0');
  await page.click(`${scene} button.corrupt-restore`);
  await page.waitForFunction((sel) => document.querySelector(sel).dataset.accepted === '4', `${scene} .corrupt`);
  await page.close();
});
