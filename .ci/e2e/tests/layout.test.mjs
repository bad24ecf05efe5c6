// The figure beside its words: every chapter is made of scenes (web/src/layout.rs), each a
// stage (the figure, the controls that act on it, the step's sentence, the outcome) and
// the text about it. A shared link with a power cut opens on the cut and its result; the
// power button sits with the player on the figure; on a wide screen the figure stays in
// view while its text is read.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startLab } from '../lib.mjs';

let lab;
before(async () => {
  lab = await startLab();
});
after(async () => {
  await lab?.close();
});

async function open(query, width, height) {
  const page = await lab.context.newPage();
  await page.setViewportSize({ width, height });
  await page.goto(lab.url + query);
  await page.waitForSelector('#chapter');
  return page;
}

/** The element's box in the viewport, or null. */
const box = (page, selector) =>
  page.evaluate((selector) => {
    const element = document.querySelector(selector);
    if (!element) return null;
    const rect = element.getBoundingClientRect();
    return { top: rect.top, bottom: rect.bottom, left: rect.left, right: rect.right, innerHeight: window.innerHeight, innerWidth: window.innerWidth };
  }, selector);

test('a shared link with a cut opens on the cut and its result at 1024x768', async () => {
  const page = await open('?part=6&policy=no-sync&cut=13.5&seed=2', 1024, 768);
  await page.waitForSelector('.power.report .headline');
  // The scroll to the cut happens once the view is drawn.
  await page.waitForTimeout(200);
  const misplaced = [];
  for (const selector of ['.power.report .headline', 'svg.lanes .cut-line', '.power.report .predict']) {
    const found = await box(page, selector);
    if (!found) misplaced.push(`${selector}: missing`);
    else if (found.top < 0 || found.top > found.innerHeight - 20) misplaced.push(`${selector}: top at ${Math.round(found.top)} of ${found.innerHeight}`);
  }
  assert.match(await page.textContent('.power.report .headline'), /The power failed at 13\.5 ms/);
  await page.goto(lab.url + '?part=6&policy=no-sync&cut=13.5&seed=2&reveal=1');
  await page.waitForSelector('.power.report .revealed');
  await page.waitForTimeout(200);
  const result = await box(page, '.power.report .revealed');
  if (result.top < 0 || result.top > result.innerHeight - 40) misplaced.push(`the result (reveal=1): top at ${Math.round(result.top)} of ${result.innerHeight}`);
  assert.deepEqual(misplaced, []);
  await page.close();
});

test('the power button sits with the player, on the figure', async () => {
  const far = [];
  for (const width of [1366, 1024, 390]) {
    const page = await open('?part=0', width, 768);
    for (const part of [3, 6]) {
      await page.goto(lab.url + `?part=${part}`);
      await page.waitForSelector('.power-button');
      // The player on the power button's own stage.
      const { gap, together } = await page.evaluate(() => {
        const power = document.querySelector('.power-button');
        const stage = power.closest('.stage');
        const player = stage?.querySelector('.player');
        if (!player) return { gap: Infinity, together: false };
        return {
          gap: power.getBoundingClientRect().top - player.getBoundingClientRect().bottom,
          together: Boolean(stage.querySelector('.stage-figure svg')),
        };
      });
      if (gap > 250 || gap < -400) far.push(`${width} Part ${part}: the power button is ${Math.round(gap)} px below the player`);
      if (!together) far.push(`${width} Part ${part}: the power button, the player and the figure are not on one stage`);
    }
    await page.close();
  }
  assert.deepEqual(far, []);
});

test('on a wide screen the figure stays in view while its text is read', async () => {
  const page = await open('?part=0', 1366, 768);
  const lost = [];
  for (const part of [3, 6]) {
    await page.goto(lab.url + `?part=${part}`);
    await page.waitForSelector('.scene');
    // Read each paragraph of each scene's text in the middle of the screen: its figure must
    // be on screen beside it.
    const found = await page.evaluate(() => {
      const out = [];
      for (const scene of document.querySelectorAll('.scene')) {
        const prose = scene.querySelector('.scene-prose');
        if (!prose) continue;
        for (const paragraph of prose.querySelectorAll('p, li')) {
          paragraph.scrollIntoView({ block: 'center' });
          const figure = scene.querySelector('.stage-figure').getBoundingClientRect();
          const visible = Math.min(figure.bottom, window.innerHeight) - Math.max(figure.top, 0);
          if (visible < Math.min(150, figure.height)) out.push(`${scene.dataset.scene}: ${Math.round(visible)} px of the figure in view beside "${paragraph.textContent.slice(0, 40)}"`);
        }
      }
      return out;
    });
    for (const each of found) lost.push(`Part ${part} ${each}`);
  }
  assert.deepEqual(lost, []);
  await page.close();
});

// The results' tables (a cut's report, the four modes, every legal outcome of a cut) wrap
// their cells at spaces and hyphens, never inside a word ("acknowledge / d"), on a laptop
// and a projector; on a phone they still fit the screen's width.
const RESULT_VIEWS = [
  '?part=3&fault=e1&handling=wrong&cut=11.5&seed=0&reveal=1',
  '?part=6&cut=13.5&seed=0&reveal=1',
  '?part=6&policy=no-sync&cut=13.5&seed=2&reveal=1',
  '?part=7&cut=13.5&seed=9&reveal=1',
];

test('results tables break lines between words, never inside one, and fit a phone', async () => {
  const broken = [];
  for (const [width, height] of [[1366, 768], [1024, 768], [390, 844]]) {
    for (const view of RESULT_VIEWS) {
      const page = await open(view, width, height);
      // The stage lays out again once it has measured its room: read the settled layout.
      await page.waitForSelector('main table');
      await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
      await page.waitForTimeout(400);
      const found = await page.evaluate(() => {
        const out = [];
        for (const cell of document.querySelectorAll('main table :is(th, td)')) {
          if (cell.offsetParent === null || cell.closest('.hex, code')) continue;
          const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
          for (let node = walker.nextNode(); node; node = walker.nextNode()) {
            // Each word between spaces and hyphens: its letters on one line.
            for (const match of node.textContent.matchAll(/[^\s\-–]+/g)) {
              const range = document.createRange();
              range.setStart(node, match.index);
              range.setEnd(node, match.index + match[0].length);
              const tops = new Set([...range.getClientRects()].filter((rect) => rect.width > 0).map((rect) => Math.round(rect.top)));
              if (tops.size > 1) out.push(`"${match[0]}"`);
            }
          }
        }
        const wide = [...document.querySelectorAll('main table')].filter((table) => table.offsetParent !== null
          && table.getBoundingClientRect().right > document.documentElement.clientWidth + 1 && !table.closest('.lanes-scroll, .scroll-x'));
        for (const table of wide) out.push(`table.${table.className} ends at ${Math.round(table.getBoundingClientRect().right)}`);
        // Nor past the box it is shown in (a cut's report, the outcome's column).
        for (const table of document.querySelectorAll('.stage table')) {
          const holder = table.parentElement.closest('.report, .stage-outcome, .stage-figure');
          if (table.offsetParent === null || !holder) continue;
          const over = table.getBoundingClientRect().right - holder.getBoundingClientRect().right;
          if (over > 1) out.push(`table.${table.className} runs ${Math.round(over)} px out of its box`);
        }
        return out;
      });
      for (const each of found.slice(0, 4)) broken.push(`${width} ${view}: ${each}`);
      await page.close();
    }
  }
  assert.deepEqual(broken, []);
});
