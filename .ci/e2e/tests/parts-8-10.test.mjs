// Parts 8, 9 and 10 acted on and read: the moment each opens on, the words of its figure,
// the reader dragged along Part 8's segments, a replica lost in Part 10's figure.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startLab, playerNow, screenshot, settledBox } from '../lib.mjs';

let lab;
before(async () => {
  lab = await startLab();
});
after(async () => {
  await lab?.close();
});

const cdc = (page) => new URL(page.url()).searchParams.get('cdc');
const readerSeq = (page) => page.getAttribute('[data-figure="segments"] g.reader', 'data-reader-seq');

test('Part 8 opens as the last write is told OK, with every segment created, not on an empty figure at 0 ms', async () => {
  const page = await lab.newPage('?part=8');
  assert.ok((await playerNow(page)) > 0, 'the playhead is past 0 ms');
  const states = await page.$$eval('[data-figure="segments"] g.segment-file', (files) => files.map((file) => file.dataset.state));
  assert.equal(states.length, 6);
  assert.ok(!states.includes('not-created'), `every segment exists or was deleted: ${states}`);
  assert.match(await page.textContent('.player .caption'), /24/, 'the caption is about write 24');
  await page.close();
});

test('Part 8: a segment not created yet shows no gate, and counts are plural-correct', async () => {
  const page = await lab.newPage('?part=8');
  await page.keyboard.press('Home');
  await page.waitForSelector('table.gates tr[data-segment="6"][data-status="not created yet"]');
  const cells = await page.$$eval('table.gates tr[data-segment="6"] td', (tds) => tds.map((td) => td.textContent));
  assert.deepEqual(cells.slice(2, 4), ['—', '—'], 'no gate for wal-6 before it exists');
  const gates = await page.$$eval('[data-figure="segments"] g.segment-file[data-file="wal-6"] g.gate', (all) => all.map((gate) => [gate.dataset.open, gate.textContent]));
  assert.deepEqual(gates, [['none', '—'], ['none', '—']]);
  // Every step of the run: one segment, or some segments, never "segment(s)".
  const outcomes = new Set();
  for (let step = 0; step < 40; step++) {
    outcomes.add(await page.textContent('.scene[data-scene="segments"] .stage-outcome'));
    await page.keyboard.press('ArrowRight');
  }
  for (const outcome of outcomes) assert.match(outcome, /^(1 segment|[02-9] segments) kept at this instant\.$/, outcome);
  assert.ok([...outcomes].some((outcome) => outcome.startsWith('1 segment ')), [...outcomes].join(' | '));
  const text = await page.textContent('#chapter');
  assert.doesNotMatch(text, /\(s\)|\b1 (records|segments|writes)\b/);
  await page.close();
});

for (const width of [1366, 1024, 390]) test(`Part 8 at ${width}: every file's words stay inside its box`, async () => {
  const page = await lab.newPage('?part=8&cdc=10', { width, height: 768 });
  const outside = [];
  for (const key of [null, 'Home', 'End']) {
    if (key) await page.keyboard.press(key);
    await page.evaluate(() => document.getAnimations().forEach((animation) => animation.finish()));
    const found = await page.$$eval('[data-figure="segments"] g.segment-file', (files) => files.flatMap((file) => {
      const box = file.querySelector('rect.file-box').getBoundingClientRect();
      return [...file.querySelectorAll('text')].map((text) => [text.textContent, text.getBoundingClientRect()])
        .filter(([, r]) => r.left < box.left - 0.5 || r.right > box.right + 0.5 || r.top < box.top - 0.5 || r.bottom > box.bottom + 0.5)
        .map(([words, r]) => `${file.dataset.file} "${words}" ${r.left.toFixed(0)}-${r.right.toFixed(0)} outside ${box.left.toFixed(0)}-${box.right.toFixed(0)}`);
    }));
    outside.push(...found.map((each) => `${key ?? 'opening'}: ${each}`));
  }
  const wide = await page.evaluate(() => document.documentElement.scrollWidth - innerWidth);
  assert.ok(wide <= 0, `no sideways scroll (${wide} px too wide)`);
  await screenshot(page, `part8-${width}`);
  assert.deepEqual(outside, []);
  await page.close();
});

test('Part 8: the reader is dragged along the files; the kept files follow while it moves', async () => {
  const page = await lab.newPage('?part=8&cdc=10');
  assert.equal(await readerSeq(page), '10');
  const keptAt10 = await page.getAttribute('[data-figure="segments"]', 'data-kept');
  // The pointer acts only on what is on screen, once the stage has laid the files out.
  await page.$eval('[data-figure="segments"]', (figure) => figure.scrollIntoView({ block: 'center' }));
  const from = await settledBox(page, '.reader-grip');
  const target = await settledBox(page, '[data-figure="segments"] g.segment-file[data-file="wal-5"] rect.file-box');
  await page.mouse.move(from.x + from.width / 2, from.y + from.height / 2);
  await page.mouse.down();
  await page.mouse.move(target.x + target.width * 0.5, target.y + target.height / 2, { steps: 8 });
  await page.mouse.move(target.x + target.width * 0.5 + 1, target.y + target.height / 2);
  // Still pressed: the figure has already moved with the pointer.
  await page.waitForFunction(() => Number(document.querySelector('[data-figure="segments"] g.reader')?.dataset.readerSeq) >= 17);
  const during = Number(await readerSeq(page));
  assert.ok(during >= 17 && during <= 20, `the reader is in wal-5 while dragged: ${during}`);
  await page.mouse.up();
  assert.equal(cdc(page), String(during), 'the link names the reader');
  const kept = await page.getAttribute('[data-figure="segments"]', 'data-kept');
  assert.ok(Number(kept) < Number(keptAt10), `fewer files kept with the reader further on: ${kept} < ${keptAt10}`);
  assert.equal(await page.getAttribute('table.gates', 'data-kept'), kept, 'the table agrees');
  await screenshot(page, 'part8-dragged');
  await page.close();
});

test('Part 8: a click on a file puts the reader there; with no reader, a click adds one', async () => {
  const page = await lab.newPage('?part=8&cdc=none');
  assert.equal(await page.$('[data-figure="segments"] g.reader'), null, 'no reader drawn');
  const box = await (await page.$('[data-figure="segments"] g.segment-file[data-file="wal-2"] rect.file-box')).boundingBox();
  await page.mouse.click(box.x + box.width * 0.5, box.y + box.height / 2);
  await page.waitForSelector('[data-figure="segments"] g.reader');
  const seq = Number(await readerSeq(page));
  assert.ok(seq >= 5 && seq <= 8, `the reader stands in wal-2: ${seq}`);
  assert.equal(cdc(page), String(seq));
  assert.equal(await page.getAttribute('[data-figure="segments"] g.segment-file[data-file="wal-3"]', 'data-pinned'), 'true');
  await page.close();
});

test('Part 8: the reader\'s handle takes the arrows and says what it pins', async () => {
  const page = await lab.newPage('?part=8&cdc=10');
  const now = await playerNow(page);
  await page.focus('.reader-grip');
  assert.match(await page.textContent('.reader-said'), /^reader at seq 10 pins segments? [\d-]+; 4 segments kept$/);
  await page.keyboard.press('ArrowRight');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('cdc') === '11');
  assert.equal(await playerNow(page), now, 'the arrows moved the reader, not the player');
  assert.equal(await page.getAttribute('.reader-grip', 'aria-valuenow'), '11');
  await page.keyboard.press('Shift+ArrowRight');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('cdc') === '15');
  await page.keyboard.press('End');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('cdc') === '24');
  assert.match(await page.textContent('.reader-said'), /^reader at seq 24 pins no segment; 1 segment kept$/);
  await page.keyboard.press('Home');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('cdc') === '0');
  assert.match(await page.textContent('.reader-said'), /^reader at seq 0 pins segments 1-\d; \d segments kept$/);
  await page.close();
});

test('Part 9: the log\'s chips are not clipped, the resets are words, an emptied -wal file says why', async () => {
  for (const width of [1366, 1024, 390]) {
    const page = await lab.newPage('?part=9', { width, height: 768 });
    await page.keyboard.press('End');
    await page.evaluate(() => document.getAnimations().forEach((animation) => animation.finish()));
    const clipped = await page.$$eval('[data-figure="pages"] g.log-record', (records) => records.flatMap((record) => {
      const box = record.querySelector('rect').getBoundingClientRect();
      return [...record.querySelectorAll('text')].filter((text) => text.getBoundingClientRect().right > box.right + 0.5)
        .map((text) => `${record.dataset.lsn} "${text.textContent}"`);
    }));
    assert.deepEqual(clipped, [], `${width}: chips' words inside their chips`);
    const words = await page.$$eval('[data-figure="pages"] g.log-record text.small', (texts) => texts.map((text) => text.textContent));
    assert.ok(words.includes('change') && words.includes('+image'), words.join(' '));
    const wide = await page.evaluate(() => document.documentElement.scrollWidth - innerWidth);
    assert.ok(wide <= 0, `${width}: no sideways scroll (${wide} px too wide)`);
    const text = await page.textContent('#chapter');
    assert.doesNotMatch(text, /\(s\)/);
    // SQLite's last step: the checkpoint reset the -wal file, and the figure says so.
    const [done, total] = (await page.textContent('.sqlite-stepper .mark-count')).match(/(\d+) of (\d+)/).slice(1).map(Number);
    for (let step = done; step < total; step++) await page.click('.sqlite-forward');
    await page.waitForSelector(`.sqlite-stepper[data-step="${total}"]`);
    await page.evaluate(() => document.getAnimations().forEach((animation) => animation.finish()));
    const frames = await page.$$('[data-figure="sqlite-wal"] g.frame');
    assert.equal(frames.length, 0, 'the -wal file is empty at the last step');
    assert.equal(await page.getAttribute('[data-figure="sqlite-wal"] text.wal-empty', 'data-empty'), 'reset');
    assert.match(await page.textContent('[data-figure="sqlite-wal"] text.wal-empty'), /checkpoint .*reset/);
    await screenshot(page, `part9-${width}`);
    await page.close();
  }
});

for (const width of [390, 1024, 1366]) test(`Part 10 at ${width}: the replicas' figure is laid out for the width, its words inside it`, async () => {
  const page = await lab.newPage('?part=10', { width, height: 844 });
  await page.evaluate(() => document.getAnimations().forEach((animation) => animation.finish()));
  const wide = await page.evaluate(() => document.documentElement.scrollWidth - innerWidth);
  assert.ok(wide <= 0, `no sideways scroll (${wide} px too wide)`);
  assert.ok(await page.$('[data-figure="quorum"] svg.fitted'), 'the figure is drawn for the room it has');
  const outside = await page.$eval('[data-figure="quorum"] svg', (svg) => {
    const frame = svg.getBoundingClientRect();
    return [...svg.querySelectorAll('text')].map((text) => [text.textContent, text.getBoundingClientRect()])
      .filter(([, r]) => r.width > 0 && (r.left < frame.left - 1 || r.right > frame.right + 1))
      .map(([words, r]) => `"${words}" ${r.left.toFixed(0)}-${r.right.toFixed(0)} of ${frame.left.toFixed(0)}-${frame.right.toFixed(0)}`);
  });
  assert.deepEqual(outside, []);
  await screenshot(page, `part10-${width}`);
  await page.close();
});

test('the browser console stays free of errors', () => {
  assert.deepEqual(lab.consoleErrors, []);
});
