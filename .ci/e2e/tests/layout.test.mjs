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
