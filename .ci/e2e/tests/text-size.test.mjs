// Figure text stays readable on a 1024 px projector and on a 390 px phone: every text
// drawn in an SVG figure, at the size the figure is scaled to, is at least 12 px.
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
const LANES_PRESENTED = [
  ...[3, 6, 7, 8, 10].map((part) => `?part=${part}&present=1`),
  '?part=3&fault=e1&handling=wrong&cut=11.5&seed=0&reveal=1&present=1',
  '?part=6&cut=13.5&seed=0&reveal=1&present=1',
  '?part=7&cut=13.5&seed=0&reveal=1&present=1',
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

test("Part 6's modes figure: each mode's name ends before its row's first cell", async () => {
  const page = await lab.newPage();
  const clashes = [];
  for (const width of [390, 1024, 1366]) {
    await page.setViewportSize({ width, height: 800 });
    await page.goto(lab.url + '?part=6&cut=13.5&seed=0&reveal=1');
    await page.waitForSelector('[data-figure="modes"] .mode-row');
    const found = await page.$$eval('[data-figure="modes"] .mode-row', (rows) =>
      rows.map((row) => ({
        name: row.querySelector('.mode-name').textContent,
        end: row.querySelector('.mode-name').getBoundingClientRect().right,
        cell: row.querySelector('.cell rect').getBoundingClientRect().left,
      })));
    assert.equal(found.length, 4);
    for (const row of found) if (row.end > row.cell) clashes.push(`${width}: "${row.name}" ends at ${row.end.toFixed(0)}, its first cell starts at ${row.cell.toFixed(0)}`);
  }
  assert.deepEqual(clashes, []);
});
