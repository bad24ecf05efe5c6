// Parts 3, 5, 6 and 7: a link's prediction is graded against one question only, Part 6's
// worst legal outcome is the worst, and every figure opens on a moment worth looking at
// rather than on an empty run at t = 0.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startLab, walab } from '../lib.mjs';

let lab;
before(async () => {
  lab = await startLab();
});
after(async () => {
  await lab?.close();
});

for (const query of [
  '?part=6&policy=no-sync&cut=13.5&seed=2&predict=4&reveal=1',
  '?part=6&policy=no-sync&cut=13.5&seed=2&predict=20&reveal=1',
  '?part=3&fault=e1&handling=wrong&cut=11.5&seed=0&predict=3',
]) {
  test(`${query}: one prediction, one verdict`, async () => {
    const page = await lab.newPage(query);
    await page.waitForSelector('.power.report .verdict');
    const verdicts = await page.$$eval('.verdict', (all) => all.map((verdict) => verdict.textContent));
    assert.equal(verdicts.length, 1, `the one guess is graded ${verdicts.length} times: ${verdicts.join(' | ')}`);
    // The verdict is the power report's: the writes recovery finds.
    const revealed = await page.$('.power.report .revealed');
    const acknowledged = (await revealed.getAttribute('data-acknowledged')).split(',').filter(Boolean).length;
    const lost = (await revealed.getAttribute('data-lost')).split(',').filter(Boolean).length;
    const guess = Number(new URL(lab.url + query).searchParams.get('predict'));
    const answer = acknowledged - lost;
    assert.equal(verdicts[0], guess === answer ? `You predicted ${guess}: right.` : `You predicted ${guess}; the run says ${answer}.`);
    await page.close();
  });
}

test("Part 6's modes figure shows each mode's worst legal outcome, as the core computes it", async () => {
  const page = await lab.newPage('?part=6&reveal=1');
  await page.waitForSelector('[data-figure="modes"] .mode-row');
  const rows = await page.$$eval('[data-figure="modes"] .mode-row', (all) =>
    Object.fromEntries(all.map((row) => [row.dataset.policy, Object.fromEntries([...row.querySelectorAll('.cell')].map((cell) => [cell.dataset.write, cell.dataset.state]))])));
  // Group commit at 13.5 ms: B14 (writes 23 and 24) is in flight. Its worst legal outcome
  // keeps none of B14's units, so 23 and 24 are gone, not "kept without an OK".
  for (const [policy, inFlight] of [['group', ['23', '24']], ['per-write', []]]) {
    const states = walab('sim', 'power-cut', '--at-ms', '13.5', '--policy', policy, '--all-states', '--json');
    const all = JSON.parse(states).states ?? JSON.parse(states);
    // The worst: most acknowledged writes lost, then fewest writes recovered.
    const worst = [...all].sort((a, b) => b.lost_acknowledged.length - a.lost_acknowledged.length || a.recovered.length - b.recovered.length)[0];
    for (const [write, state] of Object.entries(rows[policy])) {
      const id = Number(write);
      if (state === 'not-arrived') continue;
      const recovered = worst.recovered.includes(id);
      assert.ok(['survived', 'survived-without-ok'].includes(state) === recovered, `${policy}: write ${write} is ${state}, recovered ${recovered}`);
    }
    for (const write of inFlight) assert.equal(rows[policy][write], 'absent', `${policy}: write ${write}`);
  }
  // FIGURES.md: group commit 22 acknowledged and 0 lost; sync per write 13 and 0; no sync 24 and 4 (21-24).
  const table = await page.$$eval('table.modes tbody tr', (all) => all.map((row) => [row.dataset.policy, row.dataset.acknowledged, row.dataset.lost]));
  assert.deepEqual(table.filter(([policy]) => ['group', 'per-write', 'no-sync'].includes(policy)),
    [['group', '22', '0'], ['per-write', '13', '0'], ['no-sync', '24', '4']]);
  await page.close();
});

for (const part of [3, 5, 6, 7]) {
  test(`Part ${part} opens on a moment worth looking at, not on an empty run`, async () => {
    const page = await lab.newPage(`?part=${part}`);
    await page.waitForSelector('svg.lanes');
    const now = Number(await page.getAttribute('.player .now', 'data-now-ns'));
    assert.ok(now > 0, `the playhead opens at ${now} ns`);
    const drawn = await page.$$eval('svg.lanes .write', (writes) => writes.filter((write) => !write.classList.contains('not-yet')).length);
    assert.ok(drawn >= 4, `${drawn} writes drawn on open`);
    const syncs = await page.$$eval('svg.lanes :is(.sync, .batch)', (all) => all.length);
    assert.ok(syncs >= 1, 'a sync is drawn on open');
    // The step's sentence names what happens there, not "before the first event".
    const caption = await page.textContent('.player .caption');
    assert.doesNotMatch(caption, /before the first event/i);
    await page.close();
  });
}

// Part 3 in a student's words: the writers the step's sentence says were told "unknown"
// are the ones the figure draws so; no error text of the log's own (its Rust Display)
// reaches a caption; the citations stay inside their paragraph and the fault menu shows
// its whole choice.
test('Part 3: the caption and the figure name the same writers, in plain sentences, nothing clipped', async () => {
  const page = await lab.newPage('?part=3', { width: 1024, height: 768 });
  await page.keyboard.press('Home');
  const internal = [];
  let compared = false;
  for (let step = 0; step < 40; step++) {
    const caption = await page.textContent('.scene[data-scene="failed-sync"] .player .caption');
    if (/log failed earlier|i\/o error \(/i.test(caption)) internal.push(`step ${step}: ${caption.slice(0, 160)}`);
    const told = caption.match(/writes (\d+)-(\d+) are told the outcome is unknown/);
    if (told) {
      const said = [];
      for (let id = Number(told[1]); id <= Number(told[2]); id++) said.push(String(id));
      const drawn = await page.$$eval('[data-path="right"] g.told[data-state="failed"]', (all) => all.map((each) => each.dataset.write));
      assert.deepEqual(drawn, said, 'the figure draws as told "unknown" the writes the caption names');
      compared = true;
    }
    await page.keyboard.press('ArrowRight');
  }
  assert.ok(compared, 'some step tells writers the outcome is unknown');
  assert.deepEqual(internal, []);
  const clipped = [];
  for (const [width, view] of [[1366, '?part=3'], [1024, '?part=3'], [390, '?part=3'], [1024, '?part=3&present=1']]) {
    await page.setViewportSize({ width, height: 800 });
    await page.goto(lab.url + view);
    await page.waitForSelector('#chapter');
    await page.waitForTimeout(150);
    const found = await page.evaluate(() => {
      const out = [];
      for (const source of document.querySelectorAll('main .prose a.source')) {
        const box = source.parentElement.getBoundingClientRect();
        for (const rect of source.getClientRects()) if (rect.right > box.right + 1) out.push(`${source.textContent.slice(0, 30)} ends ${Math.round(rect.right - box.right)} px past its paragraph`);
      }
      for (const select of document.querySelectorAll('main select')) {
        if (select.offsetParent === null) continue;
        // Its width as laid out against the width its longest choice asks for.
        const shown = select.getBoundingClientRect().width;
        const saved = select.getAttribute('style');
        select.style.maxWidth = 'none';
        select.style.width = 'max-content';
        const wanted = select.getBoundingClientRect().width;
        if (saved === null) select.removeAttribute('style'); else select.setAttribute('style', saved);
        if (wanted > shown + 1) out.push(`select.${select.className}: "${select.selectedOptions[0]?.textContent}" is clipped (${Math.round(shown)} of ${Math.round(wanted)} px)`);
      }
      return out;
    });
    for (const each of found) clipped.push(`${width} ${view}: ${each}`);
  }
  assert.deepEqual(clipped, []);
  await page.close();
});
