// The page shell: it loads, lists Parts 0 to 14 (the two on the WAL with no local disk, 13 and 14,
// listed before the wrap-up, Part 12), visits each one, and keeps its state in the URL.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startLab, screenshot, recordMetric } from '../lib.mjs';

let lab;
before(async () => {
  lab = await startLab();
});
after(async () => {
  await lab?.close();
});

test('the page renders the shell with Parts 0 to 14, 13 and 14 before the wrap-up', async () => {
  const page = await lab.context.newPage();
  const started = Date.now();
  await page.goto(lab.url);
  await page.waitForSelector('#chapter h2');
  const firstRenderMs = await page.evaluate(() => performance.now());
  recordMetric('first_render_ms_upper_bound', Math.round(firstRenderMs));
  recordMetric('first_render_wall_ms', Date.now() - started);
  const parts = await page.$$eval('button.nav-part', (buttons) => buttons.map((b) => b.dataset.part));
  assert.deepEqual(parts, ['0', '1', '2', '3', '4', '5', '6', '7', '8', '9', '10', '11', '13', '14', '12']);
  await page.close();
});

test('every Part opens, shows its title, updates the URL, and gets a screenshot', async () => {
  const page = await lab.newPage();
  for (let part = 0; part <= 14; part++) {
    await page.click(`button.nav-part[data-part="${part}"]`);
    await page.waitForSelector(`#chapter[data-part="${part}"]`);
    const title = await page.textContent('#chapter h2');
    assert.match(title, new RegExp(`^Part ${part}\\. `));
    assert.equal(new URL(page.url()).searchParams.get('part'), String(part));
    await screenshot(page, `part-${String(part).padStart(2, '0')}`);
  }
  await page.close();
});

test('a bad URL parameter shows a clear message and the page still works', async () => {
  const page = await lab.newPage('?part=99&sync=fast&bogus=1');
  const alert = await page.textContent('.url-problems');
  assert.match(alert, /part=99: not a Part; the lab has Parts 0 to 14/);
  assert.match(alert, /sync=fast: not a number of milliseconds/);
  assert.match(alert, /bogus=1: unknown parameter/);
  assert.equal(await page.getAttribute('#chapter', 'data-part'), '0');
  await screenshot(page, 'bad-url');
  await page.click('.url-problems button');
  assert.equal(await page.$('.url-problems'), null);
  await page.close();
});

test('the browser console stays free of errors', () => {
  assert.deepEqual(lab.consoleErrors, []);
});
