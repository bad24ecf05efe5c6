// Parts 13 and 14, the WAL with no local disk: the page draws the numbers `walab sim remote`
// prints for the same parameters, a slow PUT holds acknowledgements back in the drawing,
// a takeover shows node A's straggler ignored, and the Postgres ring waits for its slot.
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

/** The page's own command line, run: the same parameters, by construction of the link. */
async function cliRun(tab) {
  const command = (await tab.textContent('code.cli')).trim();
  const args = command.split(/\s+/);
  assert.equal(args[0], 'walab');
  return JSON.parse(walab(...args.slice(1)));
}

async function seek(tab, ms) {
  await tab.$eval('input.scrub', (input, micros) => {
    input.value = String(micros);
    input.dispatchEvent(new Event('input', { bubbles: true }));
  }, Math.round(ms * 1000));
}

async function sameTotals(tab, run) {
  const totals = await tab.$('.remote-totals');
  assert.equal(Number(await totals.getAttribute('data-puts')), run.puts);
  assert.equal(Number(await totals.getAttribute('data-records-acked')), run.records_acked);
  assert.equal(Number(await totals.getAttribute('data-bulks')), run.bulks.length);
  assert.equal(Number(await totals.getAttribute('data-puts-per-record')).toFixed(6), run.puts_per_record.toFixed(6));
  const drawn = await tab.$$eval('.remote-lanes g.bulk', (groups) => groups.map((g) => ({
    bulk: Number(g.dataset.bulk), records: Number(g.dataset.records),
    sent: g.dataset.sent === undefined ? null : Number(g.dataset.sent),
    stored: g.dataset.stored === undefined ? null : Number(g.dataset.stored),
    acked: g.dataset.acked === undefined ? null : Number(g.dataset.acked),
  })));
  assert.ok(drawn.length > 0);
  for (const bulk of drawn) {
    const cli = run.bulks.find((b) => b.bulk === bulk.bulk);
    assert.deepEqual(bulk, { bulk: cli.bulk, records: cli.records, sent: cli.sent_ms, stored: cli.stored_ms, acked: cli.acked_ms });
  }
}

test('Part 13: a slow third PUT holds back the bulks stored behind it, with the CLI\'s numbers', async () => {
  const tab = await lab.newPage('?part=13&rlat=25&rslow=3:200');
  const run = await cliRun(tab);
  assert.ok((await tab.textContent('code.cli')).includes('--slow-put 3:200'));
  await sameTotals(tab, run);
  await seek(tab, 100);
  assert.equal(await tab.getAttribute('g.bulk[data-bulk="3"]', 'data-state'), 'in-flight');
  for (const n of [4, 5]) {
    assert.equal(await tab.getAttribute(`g.bulk[data-bulk="${n}"]`, 'data-state'), 'stored-not-acked', `bulk ${n}`);
  }
  assert.ok(Number(await tab.getAttribute('.remote-lanes', 'data-held')) >= 2);
  assert.equal(await tab.getAttribute('g.bulk[data-bulk="1"]', 'data-state'), 'acked');
  await screenshot(tab, 'remote-slow-put');
  await seek(tab, 203.225);
  assert.equal(await tab.getAttribute('g.bulk[data-bulk="4"]', 'data-state'), 'acked', 'released with bulk 3');
  const costs = await tab.$$eval('table.remote-costs tr[data-writers]', (rows) => rows.map((r) => Number(r.dataset.putsPerRecord)));
  assert.ok(costs.length >= 4 && costs.every((c, i) => i === 0 || c < costs[i - 1]), `PUTs per record fall: ${costs}`);
  await tab.close();
});

test('Part 13: a takeover at 60 ms ignores node A\'s stragglers and loses nothing A acknowledged', async () => {
  const tab = await lab.newPage('?part=13&rlat=25&rrate=20000&rpoisson=1&rcount=4000&rtake=60');
  const run = await cliRun(tab);
  await sameTotals(tab, run);
  await tab.keyboard.press('End');
  const panel = await tab.$('.takeover-panel');
  assert.equal(Number(await panel.getAttribute('data-old-epoch')), 5);
  assert.equal(Number(await panel.getAttribute('data-new-epoch')), 6);
  assert.equal(Number(await panel.getAttribute('data-stragglers-ignored')), run.takeover.stragglers_ignored);
  assert.ok(run.takeover.stragglers_ignored >= 1);
  assert.equal(Number(await panel.getAttribute('data-acked-by-old')), run.takeover.acked_by_old);
  assert.equal(Number(await panel.getAttribute('data-recovered-by-new')), run.takeover.recovered_by_new);
  assert.ok(run.takeover.recovered_by_new >= run.takeover.acked_by_old);
  const ignored = await tab.$$('.remote-lanes g.bulk[data-state="ignored"]');
  assert.ok(ignored.length >= 1, 'a straggler is drawn as ignored');
  await screenshot(tab, 'remote-takeover');
  await tab.close();
});

test('Part 14: a ring of two slots waits for slot 0 while the upload stalls', async () => {
  const tab = await lab.newPage('?part=14&rlat=1&rwriters=8&rcount=200&rseg=2&rstall=0:300');
  const run = await cliRun(tab);
  await sameTotals(tab, run);
  const first = run.bulks.find((b) => b.waited === 'slot');
  assert.equal(first.generation, 2);
  await seek(tab, 250);
  assert.equal(await tab.getAttribute('.remote-ring', 'data-waiting'), '2');
  assert.equal(await tab.getAttribute('.remote-ring g.slot[data-slot="0"]', 'data-generation'), '0');
  await screenshot(tab, 'remote-ring');
  await seek(tab, 300);
  assert.equal(await tab.getAttribute('.remote-ring', 'data-waiting'), null, 'the trim at 300 ms frees slot 0');
  await tab.close();
});

test('the new Parts sit before the wrap-up, and part=12 still opens it', async () => {
  const tab = await lab.newPage('?part=12');
  assert.match(await tab.textContent('#chapter h2'), /Part 12\. What you've learned/);
  const order = await tab.$$eval('nav button.nav-part', (buttons) => buttons.map((b) => b.dataset.part));
  assert.deepEqual(order.slice(-4), ['11', '13', '14', '12']);
  await tab.close();
});

test('Part 13 at 390, 1024 and 1366 px wide', async () => {
  for (const width of [390, 1024, 1366]) {
    const tab = await lab.newPage('?part=13&rlat=25&rslow=3:200');
    await tab.setViewportSize({ width, height: 900 });
    await seek(tab, 100);
    // The chapter's own figures, controls and tables fit the chapter's column.
    const wider = await tab.evaluate(() => {
      const column = document.querySelector('#chapter').getBoundingClientRect().right + 1;
      return [...document.querySelectorAll('#chapter .figure, #chapter .remote-controls, #chapter table, #chapter label.remote-control')]
        .filter((el) => el.getBoundingClientRect().right > column).map((el) => el.className);
    });
    assert.deepEqual(wider, [], `at ${width} px`);
    await screenshot(tab, `remote-part13-${width}`);
    await tab.close();
  }
  const tab = await lab.newPage('?part=14&rlat=1&rwriters=8&rcount=200&rseg=2&rstall=0:300');
  await tab.setViewportSize({ width: 390, height: 900 });
  await seek(tab, 250);
  await screenshot(tab, 'remote-part14-390');
  await tab.close();
});

test('the browser console stays free of errors', () => {
  assert.deepEqual(lab.consoleErrors, []);
});
