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
  assert.equal(Number(await totals.getAttribute('data-batches')), run.batches.length);
  assert.equal(Number(await totals.getAttribute('data-puts-per-record')).toFixed(6), run.puts_per_record.toFixed(6));
  const drawn = await tab.$$eval('.remote-lanes g.batch', (groups) => groups.map((g) => ({
    batch: Number(g.dataset.batch), records: Number(g.dataset.records),
    sent: g.dataset.sent === undefined ? null : Number(g.dataset.sent),
    stored: g.dataset.stored === undefined ? null : Number(g.dataset.stored),
    acked: g.dataset.acked === undefined ? null : Number(g.dataset.acked),
  })));
  assert.ok(drawn.length > 0);
  for (const batch of drawn) {
    const cli = run.batches.find((b) => b.batch === batch.batch);
    assert.deepEqual(batch, { batch: cli.batch, records: cli.records, sent: cli.sent_ms, stored: cli.stored_ms, acked: cli.acked_ms });
  }
}

test('Part 13: a slow third PUT holds back the batches stored behind it, with the CLI\'s numbers', async () => {
  const tab = await lab.newPage('?part=13&rlat=25&rslow=3:200');
  const run = await cliRun(tab);
  assert.ok((await tab.textContent('code.cli')).includes('--slow-put 3:200'));
  await sameTotals(tab, run);
  // Once batches 4 and 5 are stored (acknowledged as their PUTs return: no fence read), batch 3's slow PUT still runs.
  const at = Math.max(...[4, 5].map((n) => run.batches.find((b) => b.batch === n).stored_ms));
  assert.ok(at < run.batches.find((b) => b.batch === 3).stored_ms);
  await seek(tab, at);
  assert.equal(await tab.getAttribute('g.batch[data-batch="3"]', 'data-state'), 'in-flight');
  for (const n of [4, 5]) {
    assert.equal(await tab.getAttribute(`g.batch[data-batch="${n}"]`, 'data-state'), 'stored-not-acked', `batch ${n}`);
  }
  assert.ok(Number(await tab.getAttribute('.remote-lanes', 'data-held')) >= 2);
  assert.equal(await tab.getAttribute('g.batch[data-batch="1"]', 'data-state'), 'acked');
  await screenshot(tab, 'remote-slow-put');
  // Batch 3 is reported as its PUT returns (one round trip, no fence read); batch 4 goes with it.
  const third = run.batches.find((b) => b.batch === 3);
  assert.ok(third.checked_ms == null, 'no fence read');
  assert.equal(third.acked_ms, third.stored_ms);
  await seek(tab, third.acked_ms);
  assert.equal(await tab.getAttribute('g.batch[data-batch="4"]', 'data-state'), 'acked', 'released with batch 3');
  const costs = await tab.$$eval('table.remote-costs tr[data-writers]', (rows) => rows.map((r) => Number(r.dataset.putsPerRecord)));
  assert.ok(costs.length >= 4 && costs.every((c, i) => i === 0 || c < costs[i - 1]), `PUTs per record fall: ${costs}`);
  await tab.close();
});

test('Part 13: a takeover at 60 ms ignores node A\'s stragglers and loses nothing A acknowledged', async () => {
  // PUT 8 is the last one sent before 60 ms; slowed past B's claim, read-back and LIST it lands as a straggler.
  const tab = await lab.newPage('?part=13&rlat=25&rrate=20000&rpoisson=1&rcount=4000&rtake=60&rslow=8:300');
  const run = await cliRun(tab);
  assert.equal(run.takeover.claimed_ms, 85, 'the claim is a 25 ms PUT');
  assert.equal(run.takeover.listed_ms, 135, 'then a read-back and a LIST');
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
  const ignored = await tab.$$('.remote-lanes g.batch[data-state="ignored"]');
  assert.ok(ignored.length >= 1, 'a straggler is drawn as ignored');
  await screenshot(tab, 'remote-takeover');
  await tab.close();
});

test('Part 14: a ring of two slots waits for slot 0 while the upload stalls', async () => {
  const tab = await lab.newPage('?part=14&rlat=1&rwriters=8&rcount=200&rseg=2&rstall=0:300');
  const run = await cliRun(tab);
  await sameTotals(tab, run);
  const first = run.batches.find((b) => b.waited === 'slot');
  assert.equal(first.generation, 2);
  await seek(tab, 250);
  assert.equal(await tab.getAttribute('.remote-ring', 'data-waiting'), '2');
  assert.equal(await tab.getAttribute('.remote-ring g.slot[data-slot="0"]', 'data-generation'), '0');
  await screenshot(tab, 'remote-ring');
  await seek(tab, 300);
  assert.equal(await tab.getAttribute('.remote-ring', 'data-waiting'), null, 'the trim at 300 ms frees slot 0');
  await tab.close();
});

test('Part 13: blocks become stream-set and stream objects, one commit each, then the WAL is trimmed; a crash before a commit leaves orphans that expire', async () => {
  const tab = await lab.newPage('?part=13&rlat=25&rupcrash=2');
  const run = await cliRun(tab);
  assert.ok((await tab.textContent('code.cli')).includes('--upload-crash-before-commit 2'));
  const upload = run.upload;
  assert.ok(upload.blocks.length >= 3, 'several blocks');
  const state = (id) => tab.getAttribute(`.remote-upload li.upload-object[data-id="${id}"]`, 'data-state');
  const endsAt = (ms) => {
    const done = upload.commits.filter((c) => c.at_ms <= ms);
    return (done.length ? done[done.length - 1].stream_ends : [0, 0, 0, 0]).join(',');
  };
  const [crashed, retry] = upload.blocks[1].attempts;
  assert.equal(crashed.outcome, 'crashed-before-commit');
  assert.equal(retry.outcome, 'committed');
  // Ids are reserved before anything is uploaded.
  await seek(tab, crashed.reserved_ms);
  for (const id of crashed.ids) assert.equal(await state(id), 'uploading', `id ${id}`);
  // The crash: stored objects nothing references, and no stream moved.
  await seek(tab, crashed.uploaded_ms);
  for (const id of crashed.ids) assert.equal(await state(id), 'orphan', `id ${id}`);
  assert.match(await tab.textContent('.caption'), /crashes after uploading block 2/);
  assert.equal(await tab.getAttribute('.remote-upload', 'data-committed-ends'), endsAt(crashed.uploaded_ms));
  await screenshot(tab, 'remote-upload-crash');
  // The retry reserves fresh ids and one commit advances every stream at once.
  await seek(tab, retry.commit_answered_ms);
  for (const id of retry.ids) assert.equal(await state(id), 'committed', `id ${id}`);
  assert.ok(retry.ids.every((id) => !crashed.ids.includes(id)));
  assert.equal(await tab.getAttribute('.remote-upload', 'data-committed-ends'), endsAt(retry.commit_answered_ms));
  assert.match(await tab.textContent('.caption'), /one commit registers/i);
  // At the end: every object committed or expired as the CLI says, nothing read twice, the WAL trimmed.
  await tab.keyboard.press('End');
  const drawn = await tab.$$eval('.remote-upload li.upload-object', (items) => items.map((li) => ({
    id: Number(li.dataset.id), kind: li.dataset.kind, state: li.dataset.state, ranges: li.dataset.ranges,
  })));
  assert.equal(drawn.length, upload.objects.length);
  for (const object of upload.objects) {
    const seen = drawn.find((d) => d.id === object.id);
    assert.equal(seen.kind, object.kind, `id ${object.id}`);
    assert.equal(seen.state, object.committed_ms === null ? 'expired' : 'committed', `id ${object.id}`);
    assert.equal(seen.ranges, object.ranges.map((r) => `${r.stream + 1}:${r.start}-${r.end}`).join(' '));
  }
  assert.ok(drawn.some((d) => d.kind === 'stream') && drawn.some((d) => d.kind === 'stream-set'));
  const figure = await tab.$('.remote-upload');
  assert.equal(await figure.getAttribute('data-committed-ends'), endsAt(Infinity));
  assert.equal(Number(await figure.getAttribute('data-read-twice')), 0);
  assert.equal(upload.read_twice, 0);
  assert.equal(Number(await figure.getAttribute('data-orphan-overlap')), upload.orphan_overlap);
  assert.equal(upload.orphan_overlap, upload.blocks[1].records, 'the orphan held block 2 again');
  const deleted = upload.wal_deletes.reduce((n, d) => n + d.batches.length, 0);
  assert.equal(Number(await figure.getAttribute('data-wal-deleted')), deleted);
  assert.equal(deleted, run.batches.length, 'every WAL object deleted once its records are committed');
  assert.equal((await tab.$$('.remote-upload li.wal-object[data-state="deleted"]')).length, deleted);
  await screenshot(tab, 'remote-upload-end');
  await tab.close();
});

test('Part 14: the start-up toggles give the core\'s verdicts; old timeline links keep their case', async () => {
  const tab = await lab.newPage('?part=14');
  const verdict = () => tab.$eval('.startup-verdict', (el) => ({ ...el.dataset }));
  assert.deepEqual(await verdict(), { verdict: 'starts', warnings: '', timeline: 'equal', lost: '0' });
  await tab.check('label.toggle.recovery input');
  await tab.waitForFunction(() => document.querySelector('.startup-verdict').dataset.verdict === 'refused');
  assert.equal((await verdict()).refusal, 'in-recovery');
  assert.match(new URL(tab.url()).search, /rrecovery=1/);
  await tab.uncheck('label.toggle.recovery input');
  await tab.check('label.toggle.fsync input');
  await tab.waitForFunction(() => document.querySelector('.startup-verdict').dataset.refusal === 'fsync-off');
  await tab.check('label.toggle.unsafe input');
  await tab.waitForFunction(() => document.querySelector('.startup-verdict').dataset.verdict === 'starts');
  assert.equal((await verdict()).warnings, 'fsync-off-allowed');
  await tab.uncheck('label.toggle.fsync input');
  await tab.uncheck('label.toggle.unsafe input');
  await tab.selectOption('label.timeline select', 'higher');
  await tab.waitForFunction(() => document.querySelector('.startup-verdict').dataset.timeline === 'higher-sync');
  await tab.uncheck('label.toggle.ssn input');
  await tab.waitForFunction(() => document.querySelector('.startup-verdict').dataset.timeline === 'higher-async');
  assert.equal((await verdict()).warnings, 'no-synchronous-standby');
  assert.match(new URL(tab.url()).search, /rtl=higher-async/);
  await screenshot(tab, 'remote-startup');
  await tab.close();
  // A link from before the toggles opens the same case.
  const old = await lab.newPage('?part=14&rtl=higher-async');
  assert.equal(await old.getAttribute('.timeline-verdict', 'data-case'), 'higher-async');
  assert.equal(await old.isChecked('label.toggle.ssn input'), false);
  await old.close();
});

test('the new Parts sit before the wrap-up, and part=12 still opens it', async () => {
  const tab = await lab.newPage('?part=12');
  assert.match(await tab.textContent('#chapter h2'), /Part 12\. What you've learned/);
  const order = await tab.$$eval('nav a.nav-part', (buttons) => buttons.map((b) => b.dataset.part));
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
  for (const width of [390, 1024, 1366]) {
    const tab = await lab.newPage('?part=14&rlat=1&rwriters=8&rcount=200&rseg=2&rstall=0:300');
    await tab.setViewportSize({ width, height: 900 });
    await seek(tab, 250);
    const wider = await tab.evaluate(() => {
      const column = document.querySelector('#chapter').getBoundingClientRect().right + 1;
      return [...document.querySelectorAll('#chapter .figure, #chapter .remote-controls, #chapter table, #chapter label.remote-control')]
        .filter((el) => el.getBoundingClientRect().right > column).map((el) => el.className);
    });
    assert.deepEqual(wider, [], `Part 14 at ${width} px`);
    await screenshot(tab, `remote-part14-${width}`);
    await tab.close();
  }
});

test('the browser console stays free of errors', () => {
  assert.deepEqual(lab.consoleErrors, []);
});
