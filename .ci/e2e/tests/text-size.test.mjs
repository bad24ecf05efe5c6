// Figure text stays readable on a 1024 px projector and on a 390 px phone: every text
// drawn in an SVG figure, at the size the figure is scaled to, is at least 12 px; in
// presenter mode at 1024x768, read from the back of a room, at least 16 px, with the
// step's sentence and the outcome on screen beside the figure.
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

const VIEWS = [
  ...[...Array(15).keys()].map((part) => `?part=${part}`),
  '?part=3&fault=e1&handling=wrong&cut=11.5&seed=0&reveal=1',
  '?part=6&cut=13.5&seed=0&reveal=1',
  '?part=7&cut=13.5&seed=0&reveal=1',
];

for (const width of [1024, 390]) test(`figure text is at least 12 px at ${width} px wide`, async () => {
  // On a phone a figure keeps that size and scrolls sideways in its own box.
  const page = await lab.newPage();
  await page.setViewportSize({ width, height: 768 });
  const small = [];
  for (const view of VIEWS) {
    await page.goto(lab.url + view);
    await page.waitForSelector('#chapter');
    const found = await page.evaluate(() => {
      const out = [];
      for (const text of document.querySelectorAll('svg text')) {
        const matrix = text.getScreenCTM();
        if (!matrix || text.getBoundingClientRect().width === 0) continue;
        const px = parseFloat(getComputedStyle(text).fontSize) * Math.hypot(matrix.a, matrix.b);
        if (px < 11.95) out.push(`${text.textContent.trim().slice(0, 20)} (${px.toFixed(1)} px)`);
      }
      return out;
    });
    for (const text of found) small.push(`${view}: ${text}`);
  }
  assert.deepEqual(small, [], `figure text under 12 px at ${width} wide`);
});

// On a projector the instructor presents the lanes: at 1366 wide, read from the back of a
// room, their text is at least 14 px (it was squeezed to 42% of the screen's height).
// (Part 10 presents its replicas' figure, not the lanes; Part 7 presents wal-6's bytes.)
const LANES_PRESENTED = [
  ...[3, 6, 8].map((part) => `?part=${part}&present=1`),
  '?part=3&fault=e1&handling=wrong&cut=11.5&seed=0&reveal=1&present=1',
  '?part=6&cut=13.5&seed=0&reveal=1&present=1',
];

test('in presenter mode at 1366 px the lanes text is at least 14 px', async () => {
  const page = await lab.newPage();
  await page.setViewportSize({ width: 1366, height: 768 });
  const small = [];
  for (const view of LANES_PRESENTED) {
    await page.goto(lab.url + view);
    await page.waitForSelector('svg.lanes');
    const found = await page.evaluate(() => {
      let least = Infinity;
      for (const text of document.querySelectorAll('svg.lanes text')) {
        const matrix = text.getScreenCTM();
        if (!matrix || text.getBoundingClientRect().width === 0) continue;
        least = Math.min(least, parseFloat(getComputedStyle(text).fontSize) * Math.hypot(matrix.a, matrix.b));
      }
      return least;
    });
    if (!(found >= 13.95)) small.push(`${view}: ${found.toFixed(1)} px`);
  }
  assert.deepEqual(small, []);
});

// The time axis of the lanes: neighbouring tick labels keep a gap of at least a quarter of
// their size, on a phone, a projector and a laptop.
test('the tick labels of the lanes never touch', async () => {
  const page = await lab.newPage();
  const touching = [];
  for (const width of [390, 1024, 1366]) {
    await page.setViewportSize({ width, height: 800 });
    for (const view of ['?part=3', '?part=5', '?part=6', '?part=7&cut=13.5&seed=0&reveal=1', '?part=8', '?part=10']) {
      await page.goto(lab.url + view);
      await page.waitForSelector('svg.lanes');
      const found = await page.evaluate(() => {
        const out = [];
        for (const svg of document.querySelectorAll('svg.lanes')) {
          const labels = [...svg.querySelectorAll('.tick text')].map((text) => ({
            text: text.textContent,
            box: text.getBoundingClientRect(),
            px: parseFloat(getComputedStyle(text).fontSize) * Math.hypot(text.getScreenCTM().a, text.getScreenCTM().b),
          }));
          labels.sort((a, b) => a.box.left - b.box.left);
          for (let i = 1; i < labels.length; i++) {
            const gap = labels[i].box.left - labels[i - 1].box.right;
            if (gap < labels[i].px / 4) out.push(`"${labels[i - 1].text}" and "${labels[i].text}" ${gap.toFixed(1)} px apart`);
          }
        }
        return out;
      });
      if (found.length === 0 && !(await page.$('svg.lanes .tick text'))) touching.push(`${view}: no tick labels`);
      for (const each of found.slice(0, 3)) touching.push(`${width} ${view}: ${each}`);
    }
  }
  assert.deepEqual(touching, []);
});

test("Part 6's modes figure: each mode's name stays clear of its row's cells (beside them or above)", async () => {
  const page = await lab.newPage();
  const clashes = [];
  for (const width of [390, 1024, 1366]) {
    await page.setViewportSize({ width, height: 800 });
    await page.goto(lab.url + '?part=6&cut=13.5&seed=0&reveal=1');
    await page.waitForSelector('[data-figure="modes"] .mode-row');
    // The cells ease into the places the measured stage gives them: measure where they end.
    await page.evaluate(() => document.getAnimations().forEach((animation) => animation.finish()));
    const found = await page.$$eval('[data-figure="modes"] .mode-row', (rows) =>
      rows.map((row) => {
        const name = row.querySelector('.mode-name').getBoundingClientRect();
        const cell = row.querySelector('.cell rect').getBoundingClientRect();
        return { name: row.querySelector('.mode-name').textContent, end: name.right, bottom: name.bottom, cell: cell.left, top: cell.top };
      }));
    assert.equal(found.length, 4);
    for (const row of found) if (row.end > row.cell && row.bottom > row.top) clashes.push(`${width}: "${row.name}" ends at ${row.end.toFixed(0)}, its first cell starts at ${row.cell.toFixed(0)} on the same line`);
  }
  assert.deepEqual(clashes, []);
});

// Presenter mode at 1024x768, every Part: each figure's text at least 16 px as rendered
// (font size times the SVG's scale), and the first stage's caption and outcome on screen
// with its figure. One test per Part, so a failure names its Part.
const PRESENTER_VIEWS = [
  ...[...Array(15).keys()].map((part) => [part, `?part=${part}&present=1`]),
  [3, '?part=3&fault=e1&handling=wrong&cut=11.5&seed=0&reveal=1&present=1'],
  [6, '?part=6&policy=no-sync&cut=13.5&seed=2&reveal=1&present=1'],
  [7, '?part=7&cut=13.5&seed=0&reveal=1&present=1'],
];

// The Parts whose figures are not yet laid out for the projector: their tests run and
// print what is too small, marked TODO so the suite stays green until each is fixed.
const PRESENTER_TODO = new Set([]);

for (const [part, view] of PRESENTER_VIEWS) test(`presenter mode at 1024x768, ${view}: figure text at least 16 px, caption and outcome on screen`,
  { todo: PRESENTER_TODO.has(part) ? `Part ${part}'s figures are not yet laid out for presenter mode` : false }, async () => {
  const page = await lab.context.newPage();
  await page.setViewportSize({ width: 1024, height: 768 });
  await page.goto(lab.url + view);
  await page.waitForSelector('#chapter');
  await page.waitForTimeout(150);
  const found = await page.evaluate(() => {
    const small = [];
    for (const text of document.querySelectorAll('main svg text')) {
      const matrix = text.getScreenCTM();
      const box = text.getBoundingClientRect();
      if (!matrix || box.width === 0 || text.closest('[hidden], details:not([open])')) continue;
      const px = parseFloat(getComputedStyle(text).fontSize) * Math.hypot(matrix.a, matrix.b);
      if (px < 15.95) small.push(`${text.closest('[data-figure]')?.dataset.figure ?? 'svg'}: "${text.textContent.trim().slice(0, 24)}" ${px.toFixed(1)} px`);
    }
    // The stage the view opens on, or the first one with a figure.
    const stage = document.querySelector('.scene[data-opens-here] .stage')
      ?? [...document.querySelectorAll('.stage')].find((each) => each.querySelector('.stage-figure svg, .stage-figure canvas'));
    const off = [];
    if (stage) {
      const onScreen = (element, name) => {
        if (!element || element.offsetParent === null) return;
        const rect = element.getBoundingClientRect();
        if (rect.height === 0) return;
        if (rect.top < 0 || rect.top > innerHeight - 24) off.push(`${name} starts at ${Math.round(rect.top)} of ${innerHeight}`);
      };
      onScreen(stage.querySelector('.player .caption'), "the step's caption");
      onScreen(stage.querySelector('.stage-outcome'), 'the outcome');
      onScreen(stage.querySelector('.stage-figure'), 'the figure');
    }
    return { small, off };
  });
  await page.close();
  assert.deepEqual(found.small.slice(0, 12), [], `Part ${part}: ${found.small.length} figure texts under 16 px`);
  assert.deepEqual(found.off, [], `Part ${part}`);
});

// Presenter mode at 1024x768 in the Parts whose figures are tallest (the failed sync's two
// paths, the lanes of 24 writes, wal-6's bytes): the stage the view opens on shows its
// figure, the step's sentence and the outcome whole, inside the 768 px, with no scrolling
// by the presenter (the page's own scroll to the scene a link opens on is allowed).
const PRESENTER_FITS = [
  '?part=3&present=1',
  '?part=3&fault=e1&handling=wrong&cut=11.5&seed=0&reveal=1&present=1',
  '?part=6&present=1',
  '?part=6&cut=13.5&seed=0&reveal=1&present=1',
  '?part=6&policy=no-sync&cut=13.5&seed=2&reveal=1&present=1',
  '?part=7&present=1',
  '?part=7&cut=13.5&seed=0&reveal=1&present=1',
  '?part=7&cut=13.5&seed=9&present=1',
  // The presenter pulls the power with p: the cut's stage and its report come into view.
  '?part=3&present=1 p',
  '?part=6&present=1 p',
  '?part=7&present=1 p',
];

test('presenter mode at 1024x768: Parts 3, 6 and 7 fit their figure, caption and outcome in 768 px', async () => {
  const page = await lab.context.newPage();
  await page.setViewportSize({ width: 1024, height: 768 });
  const misfits = [];
  for (const entry of PRESENTER_FITS) {
    const [view, key] = entry.split(' ');
    await page.goto(lab.url + view);
    await page.waitForSelector('#chapter');
    await page.waitForTimeout(300);
    if (key) {
      await page.keyboard.press(key);
      await page.waitForSelector('.scene[data-opens-here] .power.report');
      await page.waitForTimeout(300);
    }
    const found = await page.evaluate(() => {
      const stage = document.querySelector('.scene[data-opens-here] .stage')
        ?? [...document.querySelectorAll('.stage')].find((each) => each.querySelector('.stage-figure svg'));
      if (!stage) return ['no stage with a figure'];
      const out = [];
      const whole = (element, name) => {
        if (!element && name === 'the outcome') return; // no cut yet: nothing to report
        if (!element || element.offsetParent === null || element.getBoundingClientRect().height === 0) { out.push(`no ${name} on screen`); return; }
        const rect = element.getBoundingClientRect();
        if (rect.top < 0 || rect.bottom > innerHeight + 0.5) out.push(`${name} spans ${Math.round(rect.top)}-${Math.round(rect.bottom)} of ${innerHeight}`);
      };
      whole(stage.querySelector('.stage-figure'), 'the figure');
      const caption = [...stage.querySelectorAll('.player .caption, .scene-idea')].find((each) => each.offsetParent !== null && each.textContent.trim().length > 10);
      whole(caption, "the step's caption");
      whole(stage.querySelector('.stage-outcome'), 'the outcome');
      return out;
    });
    for (const each of found) misfits.push(`${entry}: ${each}`);
  }
  await page.close();
  assert.deepEqual(misfits, []);
});
