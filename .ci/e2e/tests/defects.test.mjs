// The lab's smaller defects, one test each: the moment a key jumps to, what a figure
// labels, what a caption says. Each test opens the view the defect was seen in.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startLab, walab, playerNow as now } from '../lib.mjs';

let lab;
before(async () => {
  lab = await startLab();
});
after(async () => {
  await lab?.close();
});

test('Part 3, E1 handled the wrong way: n stops at the failed fdatasync at 11.00 ms', async () => {
  const page = await lab.newPage('?part=3&fault=e1&handling=wrong');
  await page.keyboard.press('Home');
  const visited = [];
  for (let presses = 0; presses < 40 && (await now(page)) < 13_000_000; presses += 1) {
    await page.keyboard.press('n');
    visited.push(await now(page));
  }
  assert.ok(visited.includes(10_000_000) && visited.includes(12_000_000), visited.join(' '));
  assert.ok(visited.includes(11_000_000), `n skips the EIO at 11.00 ms: ${visited.join(' ')}`);
  // At that moment the caption tells the failure.
  while ((await now(page)) > 11_000_000) await page.keyboard.press('ArrowLeft');
  while ((await now(page)) < 11_000_000) await page.keyboard.press('ArrowRight');
  assert.match(await page.textContent('.player .caption'), /EIO|failed/i);
  await page.close();
});

test('Part 7 offers its two cases by name: the torn record (units 1 and 2 land, 3 does not) and the finished sync', async () => {
  const page = await lab.newPage('?part=7');
  const links = await page.$$eval('a.named-cut', (as) => as.map((a) => ({ case: a.dataset.case, seed: Number(a.dataset.seed), href: a.getAttribute('href') })));
  assert.deepEqual(links.map((link) => link.case), ['TornRecord', 'SyncFinished']);
  for (const link of links) {
    const cli = JSON.parse(walab('sim', 'power-cut', '--scenario', 'tiny-store', '--at-ms', '13.5', '--policy', 'group', '--seed', String(link.seed), '--json'));
    const kept = cli.kept_units.filter((unit) => unit.file === 'wal-6').map((unit) => unit.unit);
    assert.deepEqual(kept, link.case === 'TornRecord' ? [1, 2] : [1, 2, 3], `seed ${link.seed}`);
    if (link.case === 'TornRecord') assert.deepEqual(cli.scan_stop, { reason: 'checksum', segment: 'wal-6', offset: 82 });
  }
  await page.click('a.named-cut[data-case="TornRecord"]');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('cut') === '13.5');
  // The seed in use (the link leaves it out when it is Part 7's own, the torn record's).
  assert.equal(Number(await page.inputValue('.cut-controls input.seed')), links[0].seed);
  assert.ok(await page.$('a.named-cut.current[data-case="TornRecord"]'));
  await page.close();
});

test("Part 7's outcome is chosen by name beside the seed: the torn record or the finished sync", async () => {
  const page = await lab.newPage('?part=7', { width: 1366, height: 800 });
  const options = await page.$$eval('select.named-case option', (all) => all.map((option) => option.textContent));
  assert.ok(options.some((text) => /torn record/.test(text)) && options.some((text) => /sync finished/.test(text)), options.join(' | '));
  const torn = await page.getAttribute('a.named-cut[data-case="TornRecord"]', 'data-seed');
  await page.selectOption('select.named-case', { label: options.find((text) => /torn record/.test(text)) });
  await page.waitForFunction(() => new URL(location.href).searchParams.get('cut') === '13.5');
  assert.equal(await page.inputValue('.cut-controls input.seed'), torn, 'the name chooses the seed, shown in its field');
  // The other case is a link with its own seed.
  const finished = await page.getAttribute('a.named-cut[data-case="SyncFinished"]', 'data-seed');
  await page.selectOption('select.named-case', { label: options.find((text) => /sync finished/.test(text)) });
  await page.waitForFunction((seed) => new URL(location.href).searchParams.get('seed') === seed, finished);
  await page.close();
});

test('Part 7 starts from the textbook case: p at its opening tears record 24, and the menu names it', async () => {
  const page = await lab.newPage('?part=7', { width: 1366, height: 800 });
  await page.keyboard.press('p');
  await page.waitForSelector('.power.report');
  await page.click('.power.report button.reveal');
  await page.waitForSelector('.power.report .revealed');
  assert.equal(await page.getAttribute('.power.report .revealed', 'data-stop-reason'), 'checksum');
  assert.equal(await page.getAttribute('.power.report .revealed', 'data-stop-offset'), '82');
  assert.match(await page.$eval('select.named-case', (select) => select.selectedOptions[0].textContent), /torn record/);
  await page.close();
});

test("Part 7: no unit border runs through a record's label in wal-6's strip", async () => {
  const crossed = [];
  for (const width of [1366, 1024, 390]) {
    for (const view of ['?part=7', '?part=7&cut=13.5&seed=9&reveal=1', '?part=7&present=1']) {
      const page = await lab.newPage(view, { width, height: 800 });
      await page.waitForSelector('.log-media g.record');
      await page.evaluate(() => document.getAnimations().forEach((animation) => animation.finish()));
      const found = await page.evaluate(() => {
        const out = [];
        for (const row of document.querySelectorAll('.log-media g.segment-row')) {
          const borders = [...row.querySelectorAll('g.unit rect')].map((rect) => rect.getBoundingClientRect().left);
          for (const label of row.querySelectorAll('g.record text.record-label')) {
            const box = label.getBoundingClientRect();
            if (box.width === 0) continue;
            for (const border of borders) if (border > box.left + 1 && border < box.right - 1) out.push(`"${label.textContent}" (${Math.round(box.left)}-${Math.round(box.right)}) crosses the unit border at ${Math.round(border)}`);
          }
        }
        return out;
      });
      for (const each of found) crossed.push(`${width} ${view}: ${each}`);
      await page.close();
    }
  }
  assert.deepEqual(crossed, []);
});

test('Part 7: the "unit N: landed" labels stay inside the figure, even as the units slide into place', async () => {
  const page = await lab.newPage('?part=7&cut=13.5&seed=9&reveal=1');
  await page.waitForSelector('.log-media .unit.arrival');
  // Every arrival at its first frame, where it starts highest.
  const outside = await page.evaluate(() => {
    for (const animation of document.getAnimations()) {
      animation.pause();
      animation.currentTime = 0;
    }
    const svg = document.querySelector('.log-media svg').getBoundingClientRect();
    return [...document.querySelectorAll('.log-media .unit-label')]
      .map((label) => ({ text: label.textContent, box: label.getBoundingClientRect() }))
      .filter(({ box }) => box.top < svg.top || box.bottom > svg.bottom || box.left < svg.left || box.right > svg.right)
      .map(({ text, box }) => `${text}: ${(svg.top - box.top).toFixed(1)} px above`);
  });
  assert.deepEqual(outside, []);
  await page.close();
});
