// The figures of Parts 3, 6, 7, 8, 9 and 10: each Part stepped to named moments, its
// drawing read back through the DOM (data attributes), its captions checked step by step,
// and a screenshot of each at its most telling moment.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startLab, screenshot } from '../lib.mjs';

let lab;
before(async () => {
  lab = await startLab();
});
after(async () => {
  await lab?.close();
});

// Rust's Debug output looks like `Intact { page_lsn: 6 }`, `Some(3)`, `InstallImage`.
const DEBUG_TEXT = /\b[A-Z][A-Za-z]+ \{ [a-z_]+: |\bSome\(|\bNone\b|InstallImage|RebuildFromEmpty|InBuffer|PageNo\(|Nanos\(/;

async function noDebugText(page, where) {
  const text = await page.textContent('#chapter');
  const found = text.match(DEBUG_TEXT);
  assert.equal(found, null, `${where}: Debug text on the page: ${found && text.slice(Math.max(0, found.index - 60), found.index + 60)}`);
}

async function reveal(page) {
  await page.click('.power.report button.reveal');
  await page.waitForSelector('.power.report .revealed');
}

async function state(page, selector) {
  return page.getAttribute(selector, 'data-state');
}

/** Steps through the whole run, checking that no two steps in a row share a caption. */
async function captionsDifferStepByStep(page, where, maxSteps = 200) {
  await page.keyboard.press('Home');
  const total = Number((await page.textContent('.player .mark-count')).match(/of (\d+)/)[1]);
  let mark = Number(await page.getAttribute('.player .caption', 'data-mark'));
  let previous = await page.textContent('.player .caption');
  let steps = 0;
  while (mark < total && steps < maxSteps) {
    await page.keyboard.press('ArrowRight');
    await page.waitForSelector(`.player .caption[data-mark="${mark + 1}"]`);
    mark += 1;
    steps += 1;
    const caption = await page.textContent('.player .caption');
    assert.ok(caption.length > 10, `${where} step ${mark}: a caption`);
    assert.notEqual(caption, previous, `${where} step ${mark} repeats the caption of the step before: ${caption}`);
    previous = caption;
  }
  return steps;
}

test('Part 6, no-sync, cut at 13.5 ms: writes 21 to 24 drawn as lost, 1 to 20 as survived', async () => {
  const page = await lab.newPage('?part=6&policy=no-sync&cut=13.5');
  await page.keyboard.press('End');
  // Before the reveal the lanes do not give the answer away.
  assert.equal(await state(page, '[data-figure="lanes"] g.write[data-write="21"]'), 'acked');
  await reveal(page);
  for (let id = 1; id <= 24; id++) {
    const expected = id <= 20 ? 'survived' : 'lost';
    assert.equal(await state(page, `[data-figure="lanes"] g.write[data-write="${id}"]`), expected, `lane of write ${id}`);
    assert.equal(await state(page, `[data-figure="modes"] [data-policy="no-sync"] g.cell[data-write="${id}"]`), expected, `no-sync cell of write ${id}`);
  }
  assert.equal(await page.getAttribute('[data-figure="modes"] [data-policy="group"]', 'data-lost'), '0');
  // The four modes are the teaching page's: the second fast one syncs in the background
  // once a second, and at 13.5 ms it too acknowledged all 24 and lost 21-24.
  const rows = await page.$$eval('table.modes tbody tr', (trs) => trs.map((tr) => [tr.dataset.policy, tr.dataset.acknowledged, tr.dataset.lost]));
  assert.deepEqual(rows, [['group', '22', '0'], ['per-write', '13', '0'], ['no-sync', '24', '4'], ['periodic', '24', '4']]);
  assert.match(await page.textContent('.player .caption'), /4 are lost \(21-24\)/);
  // Every sync bar's label, where drawn, sits clear of its neighbours on its line.
  const overlaps = await page.$$eval('[data-figure="lanes"] .sync-label', (labels) => {
    const boxes = labels.map((label) => label.getBoundingClientRect());
    let count = 0;
    for (let a = 0; a < boxes.length; a++) {
      for (let b = a + 1; b < boxes.length; b++) {
        const [p, q] = [boxes[a], boxes[b]];
        if (p.left < q.right - 0.5 && q.left < p.right - 0.5 && p.top < q.bottom - 0.5 && q.top < p.bottom - 0.5) count++;
      }
    }
    return count;
  });
  assert.equal(overlaps, 0, 'no two sync labels overlap');
  assert.match(await page.textContent('[data-figure="lanes"] figcaption'), /background sync/);
  await noDebugText(page, 'Part 6');
  await screenshot(page, 'figure-part6');
  await page.close();
});

test('Part 7, case 1 (cut at 13.5 ms, seed 9): unit 3 never reached the media and the scan stops at record 24', async () => {
  const page = await lab.newPage('?part=7&cut=13.5&seed=9');
  // Before the cut, B14's units are in its running sync, and the records sit at their offsets.
  await page.keyboard.press('End');
  await reveal(page);
  const starts = await page.$$eval('[data-figure="log-media"] g.segment-row[data-file="wal-6"] g.record', (records) =>
    records.map((record) => [record.dataset.record, record.dataset.start, record.dataset.end].join(':')));
  assert.deepEqual(starts, ['21:0:27', '22:27:55', '23:55:82', '24:82:109']);
  assert.equal(await state(page, '[data-figure="log-media"] g.unit[data-file="wal-6"][data-unit="3"]'), 'not-on-media');
  assert.equal(await state(page, '[data-figure="log-media"] g.unit[data-file="wal-6"][data-unit="2"]'), 'landed');
  // The order B14's units reached the media in: unit 1, then unit 2; unit 3 never did.
  const order = (unit) => page.getAttribute(`[data-figure="log-media"] g.unit[data-file="wal-6"][data-unit="${unit}"]`, 'data-landed-order');
  assert.deepEqual([await order(1), await order(2), await order(3)], ['1', '2', 'never']);
  assert.equal(await order(0), null, 'unit 0 was on the media before the cut, not in flight');
  assert.equal(await page.getAttribute('[data-figure="log-media"] .landing-order', 'data-order'), 'wal-6:1 wal-6:2');
  assert.match(await page.textContent('[data-figure="log-media"] .landing-order'), /unit 1 lands first, then unit 2; the power fails before unit 3 lands/);
  assert.match(await page.textContent('[data-figure="log-media"] g.unit[data-unit="2"] .unit-label'), /landed 2nd/);
  assert.equal(await page.getAttribute('[data-figure="log-media"]', 'data-stop-record'), '24');
  assert.equal(await state(page, '[data-figure="log-media"] g.record[data-record="23"]'), 'accepted');
  assert.equal(await state(page, '[data-figure="log-media"] g.record[data-record="24"]'), 'stopped');
  assert.match(await page.textContent('.player .caption'), /Recovery, check \d+ of \d+: stop: checksum/);
  assert.equal(await page.$('.player .now'), null, 'the scan is labelled by steps, not times');
  await screenshot(page, 'figure-part7');
  // Walk the scan back: the cursor moves check by check.
  await page.keyboard.press('ArrowLeft');
  await page.keyboard.press('ArrowLeft');
  const cursor = await page.$('[data-figure="log-media"] g.scan-cursor');
  assert.ok(cursor, 'the scan cursor is drawn mid-scan');
  assert.equal(await page.getAttribute('[data-figure="log-media"]', 'data-stop-record'), '');
  await noDebugText(page, 'Part 7');
  await page.close();
});

test('Part 8: with the CDC reader at seq 10, four segments are kept and the reader pins them', async () => {
  const page = await lab.newPage('?part=8&cdc=10');
  await page.keyboard.press('End');
  assert.equal(await page.getAttribute('[data-figure="segments"]', 'data-kept'), '4');
  assert.equal(await state(page, '[data-figure="segments"] g.segment-file[data-file="wal-1"]'), 'deleted');
  assert.equal(await state(page, '[data-figure="segments"] g.segment-file[data-file="wal-3"]'), 'kept');
  assert.equal(await page.getAttribute('[data-figure="segments"] g.segment-file[data-file="wal-3"]', 'data-pinned'), 'true');
  assert.equal(await page.getAttribute('[data-figure="segments"] g.reader', 'data-reader-seq'), '10');
  assert.equal(await page.getAttribute('table.gates', 'data-kept'), '4', 'the table agrees with the figure');
  await screenshot(page, 'figure-part8');
  await page.keyboard.press('Home');
  assert.equal(await state(page, '[data-figure="segments"] g.segment-file[data-file="wal-6"]'), 'not-created');
  await noDebugText(page, 'Part 8');
  await page.close();
});

test('Part 9: before REDO\'s last step the final pages are not shown; steps are steps', async () => {
  const page = await lab.newPage('?part=9');
  assert.equal(await page.$('.player .now'), null, 'no "t = ... ms" on abstract steps');
  // It opens at the power cut (its lesson's moment); walk it from the start.
  await page.keyboard.press('Home');
  const total = Number((await page.textContent('.player .mark-count')).match(/of (\d+)/)[1]);
  const seen = [];
  for (let step = 1; step <= total; step++) {
    await page.keyboard.press('ArrowRight');
    await page.waitForSelector(`.player .caption[data-mark="${step}"]`);
    const caption = await page.textContent('.player .caption');
    const finals = await page.$$eval('[data-figure="pages"] [data-place="buffer"][data-final="true"]', (pages) => pages.length);
    const table = await page.$('table.pages');
    seen.push({ step, redo: /REDO record/.test(caption), finals, table: table !== null });
    if (/the power fails/.test(caption)) {
      assert.equal(await state(page, '[data-figure="pages"] g.disk-page[data-page="1"]'), 'torn', 'P1 is torn at the cut');
      await screenshot(page, 'figure-part9-cut');
    }
  }
  const lastRedo = Math.max(...seen.filter((step) => step.redo).map((step) => step.step));
  assert.ok(lastRedo > 1);
  for (const step of seen) {
    if (step.step < lastRedo) {
      assert.ok(step.finals < 2, `step ${step.step}: both final pages shown before REDO's last step`);
      assert.equal(step.table, false, `step ${step.step}: the pages after recovery are not listed yet`);
    }
  }
  assert.equal(seen.find((step) => step.step === lastRedo).finals, 2);
  assert.equal(seen[seen.length - 1].table, true);
  const marks = await page.$$eval('[data-figure="pages"] g.log-record', (records) => records.map((record) => record.dataset.state));
  assert.ok(marks.includes('image-installed') && marks.includes('applied'), marks.join(','));
  await noDebugText(page, 'Part 9');
  await screenshot(page, 'figure-part9');
  // SQLite's WAL mode: whole pages in the log, the checkpoint copying them back.
  const frames = await page.$$eval('[data-figure="sqlite-wal"] g.frame', (all) => all.length);
  const db = await page.$$eval('[data-figure="sqlite-wal"] g.sector[data-place="db"]', (all) => all.map((sector) => Number(sector.dataset.lsn)));
  assert.ok(db.length > 0 && db.every((lsn) => lsn > 0), `the database file holds pages after recovery: ${db}`);
  assert.ok(frames >= 0);
  await page.click('.sqlite-stepper .sqlite-start');
  await page.click('.sqlite-stepper .sqlite-forward');
  assert.equal(await page.$$eval('[data-figure="sqlite-wal"] g.frame', (all) => all.length), 1, 'the first commit appends one frame');
  await page.close();
});

test('Part 10: the leg to C is drawn 6.0 ms long and is not the one waited for at W = 2', async () => {
  const page = await lab.newPage('?part=10&w=2');
  const leg = (name) => `[data-figure="quorum"] g.leg[data-mode="raft"][data-leg="${name}"]`;
  assert.equal(await page.getAttribute(leg('C'), 'data-ms'), '6.0');
  assert.equal(await page.getAttribute(leg('C'), 'data-waited'), 'false');
  assert.equal(await page.getAttribute(leg('B'), 'data-decisive'), 'true');
  const width = async (name) => Number(await page.getAttribute(`${leg(name)} rect.leg-bar`, 'width'));
  assert.ok(Math.abs((await width('C')) / (await width('A')) - 6.0) < 0.01, 'C is drawn six times as long as A\'s 1.0 ms sync');
  assert.equal(await page.getAttribute('[data-figure="quorum"] g.mode-panel[data-mode="raft"]', 'data-commit-ms'), '1.4');
  assert.equal(await page.getAttribute('[data-figure="quorum"] g.mode-panel[data-mode="postgres"]', 'data-commit-ms'), '2.4');
  // Under the panels, write 23's wait beside the naive sum of every leg: the table's numbers.
  const naiveMs = (Number(await page.getAttribute('table.write-23', 'data-naive-ns')) / 1e6).toFixed(1);
  assert.equal(await page.getAttribute('[data-figure="quorum"] g.max-vs-sum', 'data-sum-ms'), naiveMs);
  // Step into the branch: the batch's legs fill as the playhead moves.
  for (let step = 0; step < 50; step++) await page.keyboard.press('ArrowRight');
  assert.match(await page.textContent('[data-figure="quorum"] .batch-title'), /^B1[2-4], batch [1-3] of 3 on the replicas: /);
  // At the end the figure draws the last batch, B14, and says which of the three it is;
  // write 23's wait is the batch in flight plus its own: 1.3 + 1.4 = 2.7 ms.
  await page.keyboard.press('End');
  await page.waitForSelector('[data-figure="quorum"] g.batch-strip[data-current="14"]');
  assert.match(await page.textContent('[data-figure="quorum"] .batch-title'), /^B14, batch 3 of 3 on the replicas: writes 23-24, started at 13\.8 ms/);
  assert.equal(await page.getAttribute('[data-figure="quorum"] g.batch-chip.current', 'data-place'), '3 of 3');
  assert.equal(await page.$$eval('[data-figure="quorum"] g.batch-chip', (all) => all.length), 3);
  const wait = '[data-figure="quorum"] g.write-wait[data-write="23"]';
  assert.deepEqual(
    [await page.getAttribute(wait, 'data-waited-ms'), await page.getAttribute(wait, 'data-own-ms'), await page.getAttribute(wait, 'data-total-ms')],
    ['1.3', '1.4', '2.7']);
  assert.match(await page.textContent(wait), /1\.3 \+ 1\.4 = 2\.7 ms/);
  await screenshot(page, 'figure-part10');
  const w3 = await lab.newPage('?part=10&w=3');
  assert.equal(await w3.getAttribute('[data-figure="quorum"] g.leg[data-mode="raft"][data-leg="C"]', 'data-decisive'), 'true');
  await w3.close();
  await noDebugText(page, 'Part 10');
  await page.close();
});

test('Part 3, E1 on the wrong path, cut at 12.5 ms: the restart reads 17-20 through the page cache, the disk holds 17', async () => {
  const page = await lab.newPage('?part=3&fault=e1&handling=wrong&cut=12.5&seed=0');
  await page.keyboard.press('End');
  assert.deepEqual(await page.$$eval('[data-figure="failed-sync"] svg.path-panel', (panels) => panels.map((panel) => panel.dataset.path)), ['right', 'wrong']);
  assert.ok(await page.$('[data-path="wrong"] g.unit[data-place="cache"][data-state="marked-clean"]'), 'pages marked clean though not on the media');
  assert.ok(await page.$('[data-path="wrong"] g.unit[data-place="media"][data-state="not-on-media"]'));
  assert.equal(await page.getAttribute('[data-path="wrong"] .sync-story', 'data-sync-state'), 'the retry returned OK, having written nothing');
  assert.equal(await page.getAttribute('[data-path="right"] .sync-story', 'data-sync-state'), 'fdatasync returned EIO');
  for (const id of [18, 19, 20]) {
    assert.equal(await state(page, `[data-path="right"] g.told[data-write="${id}"]`), 'failed');
    assert.equal(await state(page, `[data-path="wrong"] g.told[data-write="${id}"]`), 'acked');
  }
  assert.equal(await state(page, '[data-path="wrong"] g.flushed-file[data-file="F11"]'), 'syncing', 'F11 races the power');
  assert.equal(await state(page, '[data-figure="lanes"] g.sync[data-batch="11"]'), 'failed', 'the failed first sync stays marked after the retry');
  assert.equal(await page.$('[data-path="wrong"] .reads'), null, 'nothing read back before the reveal');
  await reveal(page);
  assert.equal(await page.getAttribute('[data-path="wrong"] .reads', 'data-reads-cache'), '17-20');
  assert.equal(await page.getAttribute('[data-path="wrong"] .reads', 'data-reads-disk'), '17');
  for (const id of [18, 19, 20]) assert.equal(await state(page, `[data-figure="lanes"] g.write[data-write="${id}"]`), 'lost');
  assert.match(await page.textContent('[data-figure="failed-sync"] figcaption'), /marked clean/);
  await noDebugText(page, 'Part 3 E1');
  await screenshot(page, 'figure-part3');
  await page.close();
});

test('Part 3, E2: F11\'s fsync fails, manifest edit 9 is never written, wal-5 is kept', async () => {
  const page = await lab.newPage('?part=3&fault=e2');
  await page.keyboard.press('End');
  assert.equal(await state(page, '[data-figure="failed-sync"] g.flushed-file[data-file="F11"]'), 'failed');
  assert.equal(await state(page, '[data-figure="failed-sync"] g.edit[data-edit="9"]'), 'absent');
  assert.equal(await state(page, '[data-figure="failed-sync"] g.edit[data-edit="8"]'), 'durable');
  assert.equal(await state(page, '[data-figure="failed-sync"] g.segment-state[data-file="wal-5"]'), 'kept');
  assert.ok(await page.$('[data-figure="lanes"] g.sync.failed'), 'the failed fsync is marked in the lanes');
  await screenshot(page, 'figure-part3-e2');
  await page.close();
});

test('the failing sync of B11 is marked in the lanes on the right path', async () => {
  const page = await lab.newPage('?part=3&fault=e1');
  await page.keyboard.press('End');
  assert.equal(await state(page, '[data-figure="lanes"] g.sync[data-batch="11"]'), 'failed');
  assert.match(await page.textContent('[data-figure="lanes"] g.sync[data-batch="11"] .sync-label'), /B11 ✗/);
  await page.close();
});

for (const [part, query] of [
  [3, '?part=3&fault=e1&handling=wrong&cut=12.5'],
  [6, '?part=6&cut=13.5'],
  [7, '?part=7&cut=13.5&seed=9'],
  [8, '?part=8&cdc=10'],
  [9, '?part=9'],
  [10, '?part=10'],
]) {
  test(`Part ${part}: every step's caption differs from the previous one's, and no Debug text anywhere`, async () => {
    const page = await lab.newPage(query);
    const steps = await captionsDifferStepByStep(page, `Part ${part}`);
    assert.ok(steps > 5, `Part ${part} has steps`);
    await noDebugText(page, `Part ${part} at its end`);
    await page.close();
  });
}

test('the browser console stays free of errors', () => {
  assert.deepEqual(lab.consoleErrors, []);
});
