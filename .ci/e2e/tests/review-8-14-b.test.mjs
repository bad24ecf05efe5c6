// Parts 8 to 14, the second round of fresh reviewers: one test per defect, each opened on
// the view it was seen in. Numbers compared come from the page's own data attributes or
// the native binary's output (the core's runs), never typed in here.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startLab, walab } from '../lib.mjs';

let lab;
let dir;
before(async () => {
  lab = await startLab();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'walab-review-b-'));
});
after(async () => {
  await lab?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

test('Part 13 is compact, and its upload opens saying plainly what is there', async () => {
  // The reviewers measured 4,085 px; secondary material now folds away, and on a wide
  // screen each section's words stand beside its figure.
  for (const [size, most] of [[{ width: 1366, height: 768 }, 2600], [{ width: 1024, height: 768 }, 2900]]) {
    const page = await lab.newPage('?part=13', size);
    await page.waitForSelector('.remote-upload');
    const height = await page.$eval('#chapter', (chapter) => chapter.getBoundingClientRect().height);
    assert.ok(height <= most, `Part 13 is ${Math.round(height)} px tall at ${size.width} px`);
    if (size.width === 1366) {
      const [words, lanes] = await Promise.all(['#remote-run + .prose', '.remote-lanes'].map((selector) => page.$eval(selector, (e) => e.getBoundingClientRect().toJSON())));
      assert.ok(words.right <= lanes.left && words.bottom > lanes.top, 'the batches\' words stand beside their lanes');
    }
    const upload = await page.textContent('.remote-upload');
    assert.doesNotMatch(upload, /committed to 0 of 0/, upload);
    assert.match(await page.textContent('.remote-upload .upload-step'), /Nothing uploaded yet|last step/);
    await page.close();
  }
});

test('Part 9: the lesson stands beside the figure, and without protection the last step says P1 is lost', async () => {
  for (const size of [{ width: 1366, height: 768 }, { width: 1024, height: 768 }]) {
    const page = await lab.newPage('?part=9', size);
    const lesson = await page.waitForSelector('[data-scene="pages"] .lesson');
    await (await page.$('[data-scene="pages"] [data-figure="pages"]')).scrollIntoViewIfNeeded();
    const seen = await page.evaluate(() => {
      const box = (element) => element.getBoundingClientRect();
      const lesson = box(document.querySelector('[data-scene="pages"] .lesson'));
      const figure = box(document.querySelector('[data-scene="pages"] [data-figure="pages"]'));
      return { lesson, figure, height: innerHeight };
    });
    assert.match(await lesson.textContent(), /pageLSN/);
    assert.ok(seen.lesson.top >= 0 && seen.lesson.top < seen.height && seen.figure.top < seen.height && seen.figure.bottom > 0,
      `at ${size.width} px the lesson (${Math.round(seen.lesson.top)}) and the figure (${Math.round(seen.figure.top)}) are not on one screen`);
    // The steps taken are no longer a long list in the prose.
    const listed = await page.$$eval('[data-scene="pages"] .scene-prose ol.page-events li', (items) => items.filter((li) => li.checkVisibility()).length);
    assert.ok(listed <= 3, `${listed} steps listed in the prose`);
    await page.close();
  }
  const none = await lab.newPage('?part=9&protection=none');
  await none.keyboard.press('End');
  await none.waitForFunction(() => /Step (\d+) of \1 /.test(document.querySelector('.player .caption').textContent));
  const caption = await none.textContent('.player .caption');
  assert.match(caption, /P1 is lost: before the cut it held order:7 pen, order:9 book/, caption);
  await none.close();
});

for (const width of [1024, 1366]) test(`Part 10 at ${width} px: no two words of the figure overlap`, async () => {
  for (const query of ['?part=10', '?part=10&w=3', '?part=10&lost=b']) {
    const page = await lab.newPage(query, { width, height: 768 });
    await page.waitForSelector('[data-figure="quorum"] svg text');
    await page.waitForTimeout(200);
    const overlaps = await page.evaluate(() => {
      const texts = [...document.querySelectorAll('[data-figure="quorum"] svg text')]
        .map((text) => [text.textContent.trim(), text.getBoundingClientRect()]).filter(([, r]) => r.width > 0);
      const found = [];
      for (let i = 0; i < texts.length; i += 1) {
        for (let j = i + 1; j < texts.length; j += 1) {
          const [a, p] = texts[i];
          const [b, q] = texts[j];
          const x = Math.min(p.right, q.right) - Math.max(p.left, q.left);
          const y = Math.min(p.bottom, q.bottom) - Math.max(p.top, q.top);
          if (x > 1 && y > 2) found.push(`"${a}" / "${b}"`);
        }
      }
      return found;
    });
    assert.deepEqual(overlaps, [], `${query} at ${width} px`);
    await page.close();
  }
});

test('a dropped trace says plainly that a link cannot carry it', async () => {
  const file = path.join(dir, 'cut.json');
  walab('sim', 'power-cut', '--at-ms', '20', '--trace', file, '--json');
  const page = await lab.newPage('?part=5');
  await page.setInputFiles('input.trace-file', file);
  await page.waitForSelector('.dropped');
  assert.match(await page.textContent('.dropped .link-note'), /link cannot carry/);
  await page.close();
  const remote = path.join(dir, 'remote.json');
  walab('sim', 'remote', '--backend', 's3', '--writers', '8', '--count', '200', '--trace', remote, '--json');
  const tab = await lab.newPage('?part=13');
  await tab.setInputFiles('input.trace-file', remote);
  await tab.waitForSelector('.dropped-remote');
  assert.match(await tab.textContent('.dropped-remote .link-note'), /link cannot carry/);
  await tab.close();
});

/** The left edge of `selector` in each of the next `frames` animation frames after `act`. */
async function glide(page, selector, act, frames = 12) {
  await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
  const from = await page.$eval(selector, (e) => e.getBoundingClientRect().left);
  await act();
  const seen = await page.evaluate(([sel, n]) => new Promise((resolve) => {
    const xs = [];
    const tick = () => {
      xs.push(document.querySelector(sel).getBoundingClientRect().left);
      if (xs.length < n) requestAnimationFrame(tick); else resolve(xs);
    };
    requestAnimationFrame(tick);
  }), [selector, frames]);
  await page.waitForTimeout(500);
  const to = await page.$eval(selector, (e) => e.getBoundingClientRect().left);
  // Positions strictly between where it was and where it ends: it moved there.
  const between = seen.filter((x) => Math.min(from, to) + 1 < x && x < Math.max(from, to) - 1);
  return { from, to, between: new Set(between.map((x) => x.toFixed(1))).size };
}

for (const reduced of [false, true]) test(`Parts 8, 10 and 13: a step moves the reader and the playheads ${reduced ? 'at once under reduced motion' : 'smoothly'}`, async () => {
  const cases = [
    ['?part=8&cdc=10', 'g.reader', async (page) => { await page.focus('.reader-grip'); await page.keyboard.press('Shift+ArrowRight'); }],
    // Part 10 opens at the fork, before the batches' strip begins: one step first.
    ['?part=10', '.quorum-figure .strip-playhead', async (page) => page.keyboard.press('ArrowRight')],
    ['?part=13', '.remote-lanes .playhead', async (page) => page.keyboard.press('ArrowRight')],
  ];
  for (const [query, selector, act] of cases) {
    const page = await lab.newPage(query, { width: 1366, height: 768 });
    if (reduced) await page.emulateMedia({ reducedMotion: 'reduce' });
    for (let step = 0; step < 4 && !(await page.$(selector)); step += 1) await page.keyboard.press('ArrowRight');
    await page.waitForSelector(selector, { state: 'attached' });
    await page.$eval(selector, (e) => e.closest('.figure').scrollIntoView());
    await page.waitForTimeout(300);
    const { from, to, between } = await glide(page, selector, () => act(page));
    assert.ok(Math.abs(to - from) > 5, `${query}: ${selector} moved ${from} -> ${to}`);
    if (reduced) assert.equal(between, 0, `${query}: ${selector} glides under reduced motion`);
    else assert.ok(between >= 2, `${query}: ${selector} jumped ${from} -> ${to} (${between} positions between)`);
    await page.close();
  }
});
