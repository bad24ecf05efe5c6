// Parts 9, 10 and 11: redo, the quorum and the budget, checked against the CLI where it answers.
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

for (const [page, cli] of [['fpi', 'fpi'], ['doublewrite', 'doublewrite'], ['none', 'none']]) {
  test(`Part 9 with protection ${page}: the page's verdict is walab sim redo's`, async () => {
    const answer = JSON.parse(walab('sim', 'redo', '--protection', cli, '--json'));
    const tab = await lab.newPage(`?part=9&protection=${page}`);
    await tab.keyboard.press('End');
    const all = await tab.getAttribute('[data-recovered-everything]', 'data-recovered-everything');
    assert.equal(all, String(answer.recovered_everything));
    const events = await tab.$$eval('ol.page-events li', (items) => items.length);
    assert.equal(events, answer.run.length + answer.recovery.length);
    if (page === 'fpi') await screenshot(tab, 'part-09-redo');
    await tab.close();
  });
}

for (const w of [2, 3]) {
  test(`Part 10 at W = ${w}: write 23's budget is walab sim quorum's`, async () => {
    const answer = JSON.parse(walab('sim', 'quorum', '--w', String(w), '--json'));
    const tab = await lab.newPage(`?part=10&w=${w}`);
    assert.equal(await tab.getAttribute('table.write-23', 'data-total-ns'), String(answer.budget.total));
    assert.equal(await tab.getAttribute('table.write-23', 'data-naive-ns'), String(answer.budget.naive_sum));
    await tab.keyboard.press('End');
    if (w === 2) await screenshot(tab, 'part-10-quorum');
    await tab.close();
  });
}

test('Part 11: the budget calculator moves with the load', async () => {
  const tab = await lab.newPage('?part=11');
  const high = Number(await tab.getAttribute('.budget', 'data-shared-iops'));
  const low = await lab.newPage('?part=11&load=100');
  const lower = Number(await low.getAttribute('.budget', 'data-shared-iops'));
  assert.ok(high > lower, `${high} > ${lower}`);
  await screenshot(tab, 'part-11-budget');
  await tab.close();
  await low.close();
});

test('the browser console stays free of errors', () => {
  assert.deepEqual(lab.consoleErrors, []);
});
