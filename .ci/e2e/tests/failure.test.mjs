// A failure inside the page's code: the links that once panicked open their Part, and a
// panic (asked for on purpose) leaves a notice in the page saying what failed, with the
// view's link to report it, instead of a frozen or blank page.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startLab, screenshot, walab } from '../lib.mjs';

let lab;
before(async () => {
  lab = await startLab();
});
after(async () => {
  await lab?.close();
});

test('Part 13 opens with node B taking over at 28.5 to 30 ms, on seeds 1 to 3, and draws the CLI\'s run', async () => {
  for (const query of ['?part=13&rtake=30', '?part=13&rtake=28.5', '?part=13&rtake=29.5', '?part=13&rtake=30&seed=2', '?part=13&rtake=30&seed=3', '?part=13&rcount=1']) {
    const tab = await lab.newPage(query);
    assert.equal(await tab.$('#lab-failed'), null, `${query}: no failure notice`);
    assert.match(await tab.textContent('#chapter h2'), /no local disk/i, query);
    const command = (await tab.textContent('code.cli')).trim();
    const run = JSON.parse(walab(...command.split(/\s+/).slice(1)));
    assert.equal(Number(await tab.getAttribute('.remote-totals', 'data-records-acked')), run.records_acked, query);
    if (query === '?part=13&rtake=30') await screenshot(tab, 'part13-takeover-30ms');
    await tab.close();
  }
});

test('a panic shows what failed and the view\'s link in the page, over the stopped controls', async () => {
  const tab = await lab.newPage('?part=5&seed=7');
  const href = tab.url();
  // The page's code stops at the panic; the call itself throws in JavaScript.
  const thrown = await tab.evaluate(() => {
    try {
      window.wasmBindings.lab_fail_for_test();
      return null;
    } catch (error) {
      return String(error);
    }
  });
  assert.ok(thrown, 'the call into the stopped program throws');
  const notice = await tab.waitForSelector('#lab-failed[role="alert"]', { timeout: 5000 });
  assert.ok(await notice.isVisible());
  const text = await notice.textContent();
  assert.match(text, /The lab stopped/);
  assert.match(text, /lab_fail_for_test: a failure asked for by a test \(at web\/src\/panic_report\.rs:\d+\)/);
  assert.equal(await tab.getAttribute('#lab-failed a.failed-link', 'href'), href);
  // The notice covers the page: a click lands on it, not on the dead controls behind it.
  const box = await notice.boundingBox();
  assert.ok(box.width >= 1200 && box.height >= 800, `covers the viewport: ${JSON.stringify(box)}`);
  const onTop = await tab.evaluate(() => document.elementFromPoint(640, 450)?.closest('#lab-failed') !== null);
  assert.ok(onTop, 'the notice is on top');
  await screenshot(tab, 'panic-notice');
  await tab.close();
  lab.consoleErrors.length = 0;
});
