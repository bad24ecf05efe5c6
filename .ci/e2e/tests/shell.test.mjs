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
  const parts = await page.$$eval('a.nav-part', (buttons) => buttons.map((b) => b.dataset.part));
  assert.deepEqual(parts, ['0', '1', '2', '3', '4', '5', '6', '7', '8', '9', '10', '11', '13', '14', '12']);
  await page.close();
});

test('every Part opens, shows its title, updates the URL, and gets a screenshot', async () => {
  const page = await lab.newPage();
  for (let part = 0; part <= 14; part++) {
    await page.click(`a.nav-part[data-part="${part}"]`);
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

test('the Parts in the navigation are links: ?part=N, opened by the app on a click and in a new tab by the browser', async () => {
  const page = await lab.newPage('?part=0');
  const hrefs = await page.$$eval('nav.parts-nav a.nav-part', (links) => links.map((a) => a.getAttribute('href')));
  assert.equal(hrefs.length, 15);
  assert.ok(hrefs.every((href, i) => /^\?part=\d+$/.test(href)), hrefs.join(' '));
  assert.equal(await page.getAttribute('a.nav-part[data-part="9"]', 'href'), '?part=9');
  // A plain click stays in the page (no reload: a mark set on window survives).
  await page.evaluate(() => { window.__stayed = true; });
  await page.click('a.nav-part[data-part="9"]');
  await page.waitForSelector('#chapter[data-part="9"]');
  assert.equal(await page.evaluate(() => window.__stayed), true);
  // A ctrl-click opens the Part in a new tab.
  const [tab] = await Promise.all([lab.context.waitForEvent('page'), page.click('a.nav-part[data-part="4"]', { modifiers: ['Control'] })]);
  await tab.waitForSelector('#chapter[data-part="4"]');
  assert.equal(await page.getAttribute('#chapter', 'data-part'), '9', 'the first tab stays on its Part');
  await tab.close();
  await page.close();
});

test('before the WebAssembly loads, the page shows its title, the first Part and a loading line', async () => {
  const page = await lab.context.newPage();
  // Hold the wasm back, as a slow network would.
  let release;
  const held = new Promise((resolve) => { release = resolve; });
  await page.route('**/*.wasm', async (route) => { await held; await route.continue(); });
  await page.goto(lab.url);
  await page.waitForSelector('#boot');
  assert.match(await page.textContent('#boot h1'), /walab/);
  assert.match(await page.textContent('#boot h2'), /Part 0\. Start here/);
  assert.match(await page.textContent('#boot .boot-loading'), /Loading/);
  release();
  await page.waitForSelector('#chapter h2');
  assert.equal(await page.$('#boot'), null, 'the static page is replaced when the app mounts');
  await page.close();
});

test("Part 12's drills count as answered only when an answer is chosen, not when revealed", async () => {
  const page = await lab.newPage('?part=12');
  const drills = async () => Number(await page.getAttribute('nav .progress', 'data-drills'));
  const before = await drills();
  await page.click('details[data-reveal="1"] summary');
  await page.waitForTimeout(300);
  assert.equal(await drills(), before, 'a revealed answer is not an answered drill');
  await page.check('input[data-drill="0"] >> nth=1');
  await page.waitForFunction((count) => Number(document.querySelector('nav .progress').dataset.drills) === count + 1, before);
  assert.match(await page.textContent('li.drill[data-answered="true"] .drill-verdict'), /^Right\./);
  await page.close();
});

test('the browser console stays free of errors', () => {
  assert.deepEqual(lab.consoleErrors, []);
});
