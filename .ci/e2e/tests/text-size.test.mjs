// Figure text stays readable on a 1024 px projector: every text drawn in an SVG figure,
// at the size the figure is scaled to, is at least 12 px.
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

test('figure text is at least 12 px at 1024 px wide', async () => {
  const page = await lab.newPage();
  await page.setViewportSize({ width: 1024, height: 768 });
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
  assert.deepEqual(small, [], 'figure text under 12 px at 1024 wide');
});
