// The instructor's power button (Parts 3, 6, 7, 8): the page's report after a cut must be
// the core's own answer, as `walab sim power-cut --json` prints it for the same cut.
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

const list = (text) => (text === '' ? [] : text.split(',').map(Number));

async function revealedReport(page) {
  // A link with reveal=1 (or predict=N) opens with the answer already shown.
  if (!(await page.$('.power.report .revealed'))) await page.click('.power.report button.reveal');
  const revealed = await page.waitForSelector('.power.report .revealed');
  const attr = async (name) => (await revealed.getAttribute(name)) ?? '';
  return {
    acknowledged: list(await attr('data-acknowledged')),
    survived: list(await attr('data-survived')),
    lost_acknowledged: list(await attr('data-lost')),
    recovered: list(await attr('data-recovered')),
    scan_stop: {
      reason: await attr('data-stop-reason'),
      segment: await attr('data-stop-segment'),
      offset: Number(await attr('data-stop-offset')),
    },
  };
}

function cliReport(args) {
  const answer = JSON.parse(walab('sim', 'power-cut', ...args, '--json'));
  return {
    acknowledged: answer.acknowledged,
    survived: answer.survived,
    lost_acknowledged: answer.lost_acknowledged,
    recovered: answer.recovered,
    scan_stop: { reason: answer.scan_stop.reason, segment: answer.scan_stop.segment ?? '', offset: answer.scan_stop.offset },
  };
}

for (const [policy, seed] of [['group', 0], ['per-write', 1], ['no-sync', 2]]) {
  test(`Part 6 deep link: a cut at 13.5 ms under ${policy} reports what the CLI reports`, async () => {
    const page = await lab.newPage(`?part=6&policy=${policy}&cut=13.5&seed=${seed}`);
    const shown = await revealedReport(page);
    assert.deepEqual(shown, cliReport(['--at-ms', '13.5', '--policy', policy, '--seed', String(seed)]));
    if (policy === 'group') await screenshot(page, 'part-06-cut-13.5');
    await page.close();
  });
}

test('Part 7: play, pull the power mid-run, then walk the recovery scan to its stop', async () => {
  const page = await lab.newPage('?part=7&seed=5');
  // Step to the 40th event, then pull the power with the keyboard.
  for (let step = 0; step < 40; step++) await page.keyboard.press('ArrowRight');
  await page.keyboard.press('p');
  await page.waitForSelector('.power.report');
  const cut = new URL(page.url()).searchParams.get('cut');
  assert.ok(cut, 'the cut is in the URL');
  const shown = await revealedReport(page);
  assert.deepEqual(shown, cliReport(['--at-ms', cut, '--seed', '5']));
  await page.keyboard.press('End');
  const total = await page.$$eval('ol.scan-checks li', (items) => items.length);
  assert.equal(await page.getAttribute('ol.scan-checks', 'data-checks-done'), String(total));
  const last = await page.textContent('ol.scan-checks li:last-child');
  assert.match(last, new RegExp(`^stop: ${shown.scan_stop.reason}`));
  await screenshot(page, 'part-07-recovery');
  await page.close();
});

test('Part 7: a cut during B14 shows wal-6 unit by unit', async () => {
  const page = await lab.newPage('?part=7&cut=13.5&seed=0&reveal=1');
  const units = await page.$$eval('table.units tr.unit', (rows) => rows.length);
  assert.equal(units, 4);
  await page.close();
});

test('Part 7: the atomic-unit control reruns the cut with 512-byte units, into the link and back', async () => {
  const page = await lab.newPage('?part=7&cut=13.5&seed=0&reveal=1');
  const view = async (p) => ({
    unitBytes: await p.getAttribute('table.units', 'data-unit-bytes'),
    units: await p.$$eval('table.units tr.unit', (rows) => rows.length),
    stops: await p.$$eval('table.states tbody tr td:last-child', (cells) => cells.map((cell) => cell.textContent.split(' ')[0])),
  });
  const small = await view(page);
  assert.equal(await page.inputValue('select.unit'), '32');
  assert.equal(small.unitBytes, '32');
  assert.equal(small.units, 4);
  assert.equal(small.stops.length, 8);
  assert.ok(small.stops.includes('checksum'), 'with 32-byte units some outcome tears a record');

  await page.selectOption('select.unit', '512');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('unit') === '512');
  // Another unit is another question: the answer waits for a new reveal.
  assert.equal(await page.$('.power.report .revealed'), null);
  const shown = await revealedReport(page);
  await page.waitForSelector('table.units[data-unit-bytes="512"]');
  const large = await view(page);
  assert.deepEqual(large, { unitBytes: '512', units: 1, stops: ['zero', 'zero'] });
  assert.equal(new URL(page.url()).searchParams.get('cut'), '13.5', 'the cut is kept');
  assert.deepEqual(shown, cliReport(['--at-ms', '13.5', '--seed', '0', '--unit-bytes', '512']));
  assert.match(await page.textContent('.power.report code.cli'), /--unit-bytes 512/);
  await screenshot(page, 'part-07-unit-512');

  // The shared link opens the same view.
  const shared = await lab.newPage(new URL(page.url()).search);
  assert.equal(await shared.inputValue('select.unit'), '512');
  assert.deepEqual(await view(shared), large);
  assert.deepEqual(await revealedReport(shared), shown);
  await shared.close();
  await page.close();
});

test('Part 3 E1 on the wrong path reports what the CLI reports', async () => {
  const page = await lab.newPage('?part=3&fault=e1&handling=wrong&cut=11.5&seed=0');
  const shown = await revealedReport(page);
  assert.deepEqual(
    shown,
    cliReport(['--at-ms', '11.5', '--log-sync-fails', '11', '--on-sync-error', 'retry', '--seed', '0']),
  );
  await screenshot(page, 'part-03-e1-wrong');
  await page.close();
});

test('Part 3 E1 on a chosen batch, on the right path, reports what the CLI reports', async () => {
  const page = await lab.newPage('?part=3&fault=e1&eio=5&cut=6&seed=0');
  assert.equal(await page.inputValue('input.eio-batch'), '5');
  const shown = await revealedReport(page);
  assert.deepEqual(shown, cliReport(['--at-ms', '6', '--log-sync-fails', '5', '--on-sync-error', 'fail-stop', '--seed', '0']));
  await page.close();
});

test('Part 8: a CDC reader stuck at seq 10 pins segments', async () => {
  const without = await lab.newPage('?part=8&cdc=none&reveal=1');
  await without.keyboard.press('End');
  const keptWithout = Number(await without.getAttribute('table.gates', 'data-kept'));
  await without.selectOption('select.cdc', '10');
  // Seq 10 is Part 8's own reader, so the link names none.
  await without.waitForFunction(() => !new URL(location.href).searchParams.has('cdc'));
  await without.keyboard.press('End');
  const keptWith = Number(await without.getAttribute('table.gates', 'data-kept'));
  assert.ok(keptWith > keptWithout, `${keptWith} > ${keptWithout}`);
  await screenshot(without, 'part-08-cdc');
  await without.close();
});

test('the browser console stays free of errors', () => {
  assert.deepEqual(lab.consoleErrors, []);
});
