// A trace written by `walab sim remote --trace` and dropped onto the page plays in Part 13
// (S3) or 14 (Postgres): the chapter's figures draw the file, with the numbers the same
// run's --json prints; a damaged remote trace gets one sentence and the chapter keeps the
// lab's own run; a commit trace still opens Part 5.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startLab, screenshot, walab } from '../lib.mjs';

let lab;
let dir;
before(async () => {
  lab = await startLab();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'walab-remote-trace-'));
});
after(async () => {
  await lab?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Runs `walab sim remote ... --trace FILE --json`; returns the file and the run's JSON. */
function recorded(name, ...args) {
  const file = path.join(dir, name);
  const run = JSON.parse(walab('sim', 'remote', ...args, '--trace', file, '--json'));
  return { file, run };
}

/** Moves the playhead to the first step of the scrubber (in microseconds) at or after `ms`. */
async function seek(tab, ms) {
  await tab.$eval('input.scrub', (input, ms) => {
    const step = Number(input.step) || 1;
    input.value = String(Math.ceil((ms * 1000) / step) * step);
    input.dispatchEvent(new Event('input', { bubbles: true }));
  }, ms);
}

async function drop(tab, file) {
  await tab.setInputFiles('input.trace-file', file);
}

/** The page's totals and every drawn batch against the CLI's JSON of the same run. */
async function sameNumbers(tab, run, file) {
  const banner = await tab.waitForSelector('.dropped-remote');
  assert.equal(await banner.getAttribute('data-file'), path.basename(file));
  assert.equal(await banner.getAttribute('data-backend'), run.backend);
  assert.equal(Number(await banner.getAttribute('data-batches')), run.batches.length);
  assert.equal(Number(await banner.getAttribute('data-puts')), run.puts);
  assert.equal(Number(await banner.getAttribute('data-records')), run.records.length);
  assert.equal(Number(await banner.getAttribute('data-records-acked')), run.records_acked);
  const headline = await tab.textContent('.dropped-remote .headline');
  assert.ok(headline.includes(`${path.basename(file)} holds one run of walab sim remote`), headline);
  assert.ok(headline.includes(`${run.records.length} records in ${run.batches.length} batches`), headline);
  const totals = await tab.$('.remote-totals');
  assert.equal(Number(await totals.getAttribute('data-puts')), run.puts);
  assert.equal(Number(await totals.getAttribute('data-records-acked')), run.records_acked);
  assert.equal(Number(await totals.getAttribute('data-batches')), run.batches.length);
  assert.equal(Number(await totals.getAttribute('data-puts-per-record')).toFixed(6), run.puts_per_record.toFixed(6));
  const drawn = await tab.$$eval('.remote-lanes g.batch', (groups) => groups.map((g) => ({
    batch: Number(g.dataset.batch), records: Number(g.dataset.records), epoch: Number(g.dataset.epoch),
    sent: g.dataset.sent === undefined ? null : Number(g.dataset.sent),
    stored: g.dataset.stored === undefined ? null : Number(g.dataset.stored),
    checked: g.dataset.checked === undefined ? null : Number(g.dataset.checked),
    acked: g.dataset.acked === undefined ? null : Number(g.dataset.acked),
  })));
  assert.equal(drawn.length, Math.min(run.batches.length, 24));
  for (const batch of drawn) {
    const cli = run.batches.find((b) => b.batch === batch.batch);
    assert.deepEqual(batch, {
      batch: cli.batch, records: cli.records, epoch: cli.epoch, sent: cli.sent_ms, stored: cli.stored_ms, checked: cli.checked_ms, acked: cli.acked_ms,
    }, `batch ${batch.batch}`);
  }
  // The lab's own run's controls and command line give way to the file.
  assert.equal(await tab.$('.remote-controls label.latency'), null);
  assert.equal(await tab.$('code.cli'), null);
  assert.ok((await tab.textContent('.trace-source')).includes(path.basename(file)));
}

test('Part 13 plays a trace of `walab sim remote --backend s3` with a slow third PUT, with the CLI\'s numbers', async () => {
  const { file, run } = recorded('slow.json', '--backend', 's3', '--writers', '8', '--count', '200', '--slow-put', '3:200');
  assert.equal(run.takeover, null);
  const tab = await lab.newPage('?part=2');
  await drop(tab, file);
  await tab.waitForSelector('.dropped-remote');
  assert.equal(await tab.getAttribute('#chapter', 'data-part'), '13', 'the page moves to Part 13');
  await sameNumbers(tab, run, file);
  assert.equal(await tab.getAttribute('[data-takeover]:not(.dropped-remote)', 'data-takeover'), 'none');
  // While the slow PUT 3 runs, no record after it is acknowledged: the 8 writers wait
  // for their OKs, so batch 4 is not even formed.
  const third = run.batches.find((b) => b.batch === 3);
  assert.ok(third.stored_ms - third.sent_ms >= 200, 'PUT 3 takes 200 ms');
  const during = (third.sent_ms + third.stored_ms) / 2;
  await seek(tab, during);
  assert.equal(await tab.getAttribute('g.batch[data-batch="3"]', 'data-state'), 'in-flight');
  assert.equal(await tab.getAttribute('g.batch[data-batch="4"]', 'data-state'), 'not-yet');
  const ackedDuring = run.records.filter((r) => r.acked_ms !== null && r.acked_ms <= during).length;
  assert.equal(ackedDuring, run.batches.filter((b) => b.batch < 3).reduce((n, b) => n + b.records, 0));
  assert.equal(Number(await tab.getAttribute('.remote-lanes', 'data-acked')), ackedDuring);
  assert.equal(Number(await tab.getAttribute('.remote-lanes', 'data-in-flight')), 1);
  // Stored, it waits for the fence read before its records are acknowledged.
  await seek(tab, third.stored_ms);
  assert.equal(await tab.getAttribute('g.batch[data-batch="3"]', 'data-state'), 'fence-read');
  assert.match(await tab.textContent('.caption'), /batch 3 is stored; node A reads the registration back/i);
  assert.equal(Number(await tab.getAttribute('.remote-lanes', 'data-acked')), ackedDuring);
  await seek(tab, third.acked_ms);
  assert.equal(await tab.getAttribute('g.batch[data-batch="3"]', 'data-state'), 'acked');
  assert.equal(Number(await tab.getAttribute('.remote-lanes', 'data-acked')), ackedDuring + third.records);
  await tab.keyboard.press('End');
  assert.equal(Number(await tab.getAttribute('.remote-lanes', 'data-acked')), run.records_acked);
  await screenshot(tab, 'remote-trace-part13');
  // Closing the file brings the lab's own run and its controls back.
  await tab.click('.dropped-remote button.close-trace');
  await tab.waitForSelector('code.cli');
  assert.equal(await tab.$('.dropped-remote'), null);
  await tab.close();
});

test('Part 13 draws a trace\'s takeover with the CLI\'s epochs, recovery and stragglers', async () => {
  // PUT 3 is slow enough to land after node B's claim and LIST: a straggler.
  const { file, run } = recorded('takeover.json', '--backend', 's3', '--writers', '8', '--count', '200', '--slow-put', '3:200', '--takeover-at-ms', '150');
  assert.ok(run.takeover, 'the run has a takeover');
  assert.ok(run.takeover.stragglers_ignored >= 1, 'a straggler');
  const tab = await lab.newPage('?part=13');
  await drop(tab, file);
  await sameNumbers(tab, run, file);
  assert.equal(await tab.getAttribute('.dropped-remote', 'data-takeover'), 'yes');
  const headline = await tab.textContent('.dropped-remote .headline');
  assert.ok(headline.includes(`At ${run.takeover.at_ms} ms node B takes the node over (epoch ${run.takeover.new_epoch} after node A's ${run.takeover.old_epoch})`), headline);
  await seek(tab, run.takeover.at_ms - 1);
  assert.equal(await tab.getAttribute('[data-takeover="pending"]', 'data-takeover'), 'pending');
  await tab.keyboard.press('End');
  const panel = await tab.$('.takeover-panel');
  assert.equal(Number(await panel.getAttribute('data-old-epoch')), run.takeover.old_epoch);
  assert.equal(Number(await panel.getAttribute('data-new-epoch')), run.takeover.new_epoch);
  assert.equal(Number(await panel.getAttribute('data-acked-by-old')), run.takeover.acked_by_old);
  assert.equal(Number(await panel.getAttribute('data-recovered-by-new')), run.takeover.recovered_by_new);
  assert.equal(Number(await panel.getAttribute('data-stragglers-ignored')), run.takeover.stragglers_ignored);
  assert.ok((await panel.textContent()).includes(`B's own objects start at offset ${run.takeover.new_session_start}`));
  const fenced = run.takeover.fenced_batches[0];
  if (fenced !== undefined) {
    assert.ok((await panel.textContent()).includes(`batch ${fenced}`), 'the first fenced batch is named');
  }
  assert.equal(await tab.getAttribute('.remote-lanes g.takeover', 'data-at'), String(run.takeover.at_ms));
  const ignored = await tab.$$eval('.remote-lanes g.batch[data-state="ignored"]', (groups) => groups.map((g) => Number(g.dataset.batch)));
  assert.equal(ignored.length, run.takeover.stragglers_ignored);
  for (const batch of ignored) assert.equal(run.batches.find((b) => b.batch === batch).outcome, 'stored-not-acked', `batch ${batch}`);
  await screenshot(tab, 'remote-trace-takeover');
  await tab.close();
});

test('Part 14 plays a trace of `walab sim remote --backend postgres`', async () => {
  const { file, run } = recorded('pg.json', '--backend', 'postgres', '--writers', '8', '--count', '200', '--slow-put', '3:20', '--takeover-at-ms', '10');
  const tab = await lab.newPage('?part=13');
  await drop(tab, file);
  await tab.waitForFunction(() => document.querySelector('#chapter').dataset.part === '14');
  await sameNumbers(tab, run, file);
  assert.equal(await tab.$('.remote-ring'), null, 'no ring: the trace does not carry its geometry');
  assert.ok(await tab.$('.ring-left-out'));
  await tab.keyboard.press('End');
  const panel = await tab.$('.takeover-panel');
  assert.equal(Number(await panel.getAttribute('data-acked-by-old')), run.takeover.acked_by_old);
  assert.equal(Number(await panel.getAttribute('data-recovered-by-new')), run.takeover.recovered_by_new);
  await tab.close();
});

test('a damaged remote trace gets one sentence, and the chapter keeps the lab\'s own run', async () => {
  const { file } = recorded('good.json', '--backend', 's3', '--writers', '8', '--count', '200');
  const trace = JSON.parse(fs.readFileSync(file, 'utf8'));
  const before = trace.events.length;
  trace.events = trace.events.filter((e) => !(e.event === 'batch_formed' && e.batch === 2));
  assert.equal(trace.events.length, before - 1, 'batch 2 was formed once');
  const bad = path.join(dir, 'bad.json');
  fs.writeFileSync(bad, JSON.stringify(trace));
  const tab = await lab.newPage('?part=2');
  await drop(tab, bad);
  const message = await (await tab.waitForSelector('.trace-error')).textContent();
  assert.equal(message, 'bad.json: batch 2 is used before a batch_formed event made it. The chapter shows the lab\'s own run.');
  assert.equal(await tab.getAttribute('#chapter', 'data-part'), '13');
  assert.ok(await tab.$('code.cli'), 'the lab\'s own run is there');
  assert.ok(await tab.$('.remote-lanes g.batch'));
  // Unreadable JSON dropped in Part 13 stays there, with the drop zone's sentence.
  const broken = path.join(dir, 'broken.json');
  fs.writeFileSync(broken, '{"format_version": 1, "scenario": "remote-s3", "events": [');
  await drop(tab, broken);
  await tab.waitForFunction(() => document.querySelector('.trace-error')?.textContent.startsWith('broken.json: not a walab trace'));
  assert.equal(await tab.getAttribute('#chapter', 'data-part'), '13');
  assert.match(await tab.textContent('.drop-error'), /^broken\.json: not a walab trace \(line 1, column \d+/);
  await tab.close();
});

test('a commit trace dropped in Part 13 still opens Part 5', async () => {
  const file = path.join(dir, 'commit.json');
  walab('sim', 'power-cut', '--at-ms', '20', '--trace', file, '--json');
  const tab = await lab.newPage('?part=13');
  await drop(tab, file);
  await tab.waitForSelector('.dropped');
  assert.equal(await tab.getAttribute('#chapter', 'data-part'), '5');
  await tab.close();
});

test('Parts 13 and 14 with a trace playing at 390, 1024 and 1366 px wide', async () => {
  const s3 = recorded('wide-s3.json', '--backend', 's3', '--writers', '8', '--count', '200', '--slow-put', '3:200', '--takeover-at-ms', '150');
  const pg = recorded('wide-pg.json', '--backend', 'postgres', '--writers', '8', '--count', '200', '--slow-put', '3:20');
  for (const [part, { file, run }] of [[13, s3], [14, pg]]) {
    for (const width of [390, 1024, 1366]) {
      const tab = await lab.newPage(`?part=${part}`);
      await tab.setViewportSize({ width, height: 900 });
      await drop(tab, file);
      await tab.waitForSelector('.dropped-remote');
      const third = run.batches.find((b) => b.batch === 3);
      await seek(tab, (third.sent_ms + third.stored_ms) / 2);
      const overflow = await tab.evaluate(() => {
        const column = document.querySelector('#chapter').getBoundingClientRect().right + 1;
        const wider = [...document.querySelectorAll('#chapter .figure, #chapter .remote-controls, #chapter table, #chapter td, #chapter li, #chapter .dropped-remote, #chapter .player, #chapter p, #chapter button, #chapter label')]
          .filter((el) => el.getBoundingClientRect().right > column).map((el) => el.className || el.tagName);
        return { wider, page: document.documentElement.scrollWidth - document.documentElement.clientWidth };
      });
      assert.deepEqual(overflow.wider, [], `Part ${part} at ${width} px`);
      assert.ok(overflow.page <= 0, `Part ${part} at ${width} px scrolls sideways by ${overflow.page} px`);
      await screenshot(tab, `part${part}-trace-${width}`);
      await tab.close();
    }
  }
});

test('the browser console stays free of errors', () => {
  assert.deepEqual(lab.consoleErrors, []);
});
