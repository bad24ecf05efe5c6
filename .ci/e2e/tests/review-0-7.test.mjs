// Parts 0-7 as two fresh reviewers found them: one test per defect, each seen failing on
// the page before its fix. Numbers come from the page's core or the native binary's run.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startLab, walab, playerNow as now } from '../lib.mjs';

let lab;
before(async () => {
  lab = await startLab();
});
after(async () => {
  await lab?.close();
});

const lostAt = (ms) => JSON.parse(walab('sim', 'power-cut', '--at-ms', String(ms), '--log-sync-fails', '11', '--on-sync-error', 'retry', '--json')).lost_acknowledged;

test('Part 3, the wrong path: the cut the field suggests loses the writes told OK, and the words say which cuts do', async () => {
  const page = await lab.newPage('?part=3&fault=e1&handling=wrong');
  const suggested = await page.getAttribute('.cut-controls input.cut-ms', 'placeholder');
  assert.ok(lostAt(suggested).length > 0, `the field suggests ${suggested} ms, where the binary's run loses nothing`);
  const note = await page.textContent('.loss-window');
  const [, after, before, lost] = note.match(/after ([\d.]+) ms and before ([\d.]+) ms loses writes ([\d-]+)/) ?? [];
  assert.ok(after && before, note);
  // Just inside the stretch the binary's run loses those writes; just past its end, none.
  for (const at of [Number(after) + 0.01, Number(before) - 0.01]) assert.ok(lostAt(at.toFixed(2)).length > 0, `${at} ms: ${note}`);
  assert.deepEqual(lostAt((Number(before) + 0.01).toFixed(2)), [], `just after ${before} ms: ${note}`);
  const ids = lostAt(suggested);
  assert.equal(lost, `${ids[0]}-${ids.at(-1)}`);
  // The student types the suggestion: the run shows the loss.
  await page.fill('.cut-controls input.cut-ms', suggested);
  await page.keyboard.press('Enter');
  await page.click('.power.report button.reveal');
  assert.deepEqual((await page.getAttribute('.power.report .revealed', 'data-lost')).split(',').map(Number), lostAt(suggested));
  await page.close();
});

test('a cut typed into the field and Enter: the cut is applied and the keys work again', async () => {
  const page = await lab.newPage('?part=6');
  await page.click('.cut-controls input.cut-ms');
  await page.keyboard.type('10');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('cut') === '10');
  const at = await now(page);
  await page.keyboard.press('ArrowLeft');
  assert.ok((await now(page)) < at, 'the arrow key steps back after Enter');
  await page.keyboard.press('r');
  await page.waitForFunction(() => !new URL(location.href).searchParams.has('cut'));
  await page.close();
});

test('a cut past the end of the run is named in the URL note with the range that takes effect', async () => {
  const page = await lab.newPage('?part=6&cut=500');
  const note = await page.textContent('.url-problems');
  assert.match(note, /cut=500: past the end of the run; give 0 to [\d.]+ ms/);
  await page.close();
});

test('Part 6 asks one question at a time, each graded against its own answer', async () => {
  const page = await lab.newPage('?part=6&cut=10', { width: 1366, height: 768 });
  const visible = () => page.$$eval('.predict', (all) => all.filter((each) => each.offsetParent !== null).length);
  assert.equal(await visible(), 1, 'one question on the page');
  // The own cut's question: recovery's count at 10 ms, from the core's report.
  await page.fill('.power.report input.guess', '3');
  await page.click('.power.report button.commit-guess');
  const verdict = await page.textContent('.power.report .verdict');
  const acknowledged = (await page.getAttribute('.power.report .revealed', 'data-acknowledged')).split(',').filter(Boolean).length;
  const lost = (await page.getAttribute('.power.report .revealed', 'data-lost')).split(',').filter(Boolean).length;
  assert.match(verdict, new RegExp(`the run says ${acknowledged - lost}\\.`));
  // Then the lesson's question, graded against the modes' own answer (no sync's losses).
  assert.equal(await visible(), 1, 'the lesson question comes back once the first is answered');
  await page.fill('[data-scene="modes"] input.guess', '3');
  await page.click('[data-scene="modes"] button.commit-guess');
  const noSyncLost = await page.getAttribute('table.modes tr[data-policy="no-sync"]', 'data-lost');
  assert.match(await page.textContent('[data-scene="modes"] .verdict'), new RegExp(`the run says ${noSyncLost}\\.`));
  await page.close();
});

test("Part 6 in presenter mode at 1024x768: each mode's card keeps its labels clear of their values", async () => {
  const page = await lab.newPage('?part=6&present=1', { width: 1024, height: 768 });
  await page.click('[data-scene="modes"] button.reveal');
  await page.waitForSelector('table.modes tr[data-policy]');
  const clashes = await page.$$eval('table.modes td[data-label]', (cells) => cells.flatMap((cell) => {
    const range = document.createRange();
    range.selectNodeContents(cell);
    const value = [...range.getClientRects()].filter((rect) => rect.width > 0);
    const label = cell.getBoundingClientRect();
    const before = getComputedStyle(cell, '::before');
    // The label is the cell's first grid column: its text must end before the value starts.
    const labelRight = label.left + parseFloat(before.width);
    const text = cell.textContent.trim();
    const valueLeft = Math.min(...value.map((rect) => rect.left));
    const probe = document.createElement('span');
    probe.style.cssText = `font: ${before.font}; white-space: ${before.whiteSpace}; position: absolute; visibility: hidden`;
    probe.textContent = cell.dataset.label;
    document.body.append(probe);
    const needed = probe.getBoundingClientRect().width;
    probe.remove();
    return needed > parseFloat(before.width) + 0.5 && before.whiteSpace === 'nowrap' ? [`"${cell.dataset.label}" (${needed.toFixed(0)} px) runs into "${text}" at ${valueLeft.toFixed(0)} (label ends ${labelRight.toFixed(0)})`] : [];
  }));
  assert.deepEqual(clashes, []);
  await page.close();
});

/** One edge (`left` or `top`) of `selector`'s box, sampled on each of the next `frames`
 *  animation frames. */
function edgeOverFrames(page, selector, edge, frames) {
  return page.evaluate(([sel, side, count]) => new Promise((resolve) => {
    const seen = [];
    const sample = () => {
      seen.push(document.querySelector(sel).getBoundingClientRect()[side]);
      if (seen.length < count) requestAnimationFrame(sample); else resolve(seen);
    };
    requestAnimationFrame(sample);
  }), [selector, edge, frames]);
}

/** The left edge of `selector` over the frames after `key`: its first and last places and
 *  how many frames it spent in between. */
async function glide(page, selector, key) {
  const from = await page.$eval(selector, (element) => element.getBoundingClientRect().left);
  await page.keyboard.press(key);
  const seen = await edgeOverFrames(page, selector, 'left', 40);
  const to = seen.at(-1);
  const between = seen.filter((left) => Math.abs(left - from) > 0.5 && Math.abs(left - to) > 0.5).length;
  return { from, to, between };
}

for (const [view, selector] of [
  ['?part=6', '[data-scene="power-cut"] svg.lanes .playhead'],
  ['?part=5', 'svg.trace-lanes .playhead'],
  ['?part=3', '[data-scene="power-cut"] svg.lanes .playhead'],
  ['?part=7', 'svg.lanes .playhead'],
]) test(`${view}: a step moves the lanes' playhead through the frames between, and at once under reduced motion`, async () => {
  const page = await lab.newPage(view, { width: 1366, height: 768 });
  await page.keyboard.press('Home');
  await page.waitForTimeout(600);
  const moving = await glide(page, selector, 'ArrowRight');
  assert.ok(moving.to - moving.from > 2, `the step moved it: ${JSON.stringify(moving)}`);
  assert.ok(moving.between >= 3, `it slides: ${JSON.stringify(moving)}`);
  await page.emulateMedia({ reducedMotion: 'reduce' });
  await page.waitForTimeout(600);
  const still = await glide(page, selector, 'ArrowRight');
  assert.ok(still.to - still.from > 2, `the step moved it: ${JSON.stringify(still)}`);
  assert.ok(still.between <= 1, `reduced motion: it jumps: ${JSON.stringify(still)}`);
  await page.close();
});

/** Part 2: steps from the start until unit 0 turns dirty; the unit's tops over the frames
 *  after that step. */
async function unitWritten(page) {
  await page.keyboard.press('Home');
  await page.waitForTimeout(600);
  const unit = '.sync-journey g.unit[data-unit="0"]';
  for (let step = 0; step < 12; step += 1) {
    const before = await page.getAttribute(unit, 'data-state');
    await page.keyboard.press('ArrowRight');
    const tops = await edgeOverFrames(page, unit, 'top', 30);
    if (before !== 'dirty' && (await page.getAttribute(unit, 'data-state')) === 'dirty') {
      const cache = await page.$eval('.sync-journey [data-row="page-cache"] .row-band', (band) => band.getBoundingClientRect().top);
      return { tops, cache };
    }
  }
  throw new Error('unit 0 never turned dirty');
}

test('Part 2: write() brings a unit down from the process into the page cache; at once under reduced motion', async () => {
  const page = await lab.newPage('?part=2', { width: 1366, height: 768 });
  const { tops, cache } = await unitWritten(page);
  const final = tops.at(-1);
  assert.ok(Math.abs(final - cache) < 20, `it ends in the page cache's row: ${final} vs ${cache}`);
  assert.ok(Math.min(...tops) < final - 20, `it comes from above (the process row): ${tops.map(Math.round).join(' ')}`);
  assert.ok(tops.filter((top) => top > Math.min(...tops) + 1 && top < final - 1).length >= 3, `it slides: ${tops.map(Math.round).join(' ')}`);
  await page.emulateMedia({ reducedMotion: 'reduce' });
  const still = await unitWritten(page);
  assert.ok(still.tops.every((top) => Math.abs(top - still.tops.at(-1)) < 1), `reduced motion: ${still.tops.map(Math.round).join(' ')}`);
  await page.close();
});

test("Part 6's ladder at 390 px: every rung's cells inside the screen, none clipped", async () => {
  const page = await lab.newPage('?part=6', { width: 390, height: 844 });
  const clipped = await page.$$eval('table.ladder td', (cells) => cells.flatMap((cell) => {
    const rect = cell.getBoundingClientRect();
    const out = [];
    if (rect.right > innerWidth + 0.5 || rect.left < -0.5) out.push(`"${cell.textContent.slice(0, 30)}" spans ${Math.round(rect.left)}-${Math.round(rect.right)} of ${innerWidth}`);
    if (cell.scrollWidth > cell.clientWidth + 1) out.push(`"${cell.textContent.slice(0, 30)}" overflows its cell`);
    return out;
  }));
  assert.deepEqual(clipped, []);
  await page.close();
});

for (const size of [{ width: 1366, height: 768 }, { width: 1024, height: 768 }]) test(`the sidebar at ${size.width}x${size.height}: the Parts and the progress line fit the screen`, async () => {
  const page = await lab.newPage('?part=2', size);
  const progress = await page.$eval('nav .progress', (line) => line.getBoundingClientRect().bottom);
  assert.ok(progress <= size.height, `the progress line ends at ${Math.round(progress)} of ${size.height}`);
  await page.close();
});
