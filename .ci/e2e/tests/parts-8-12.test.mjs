// Parts 8 to 12: each defect a reviewer found in them, one test each, opened on the view
// it was seen in. The numbers compared come from the page's own data attributes (the
// core's runs), never typed in here.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startLab, playerNow as now } from '../lib.mjs';

let lab;
before(async () => {
  lab = await startLab();
});
after(async () => {
  await lab?.close();
});

test('Part 10 opens at the fork onto the replicas, not on a replay of Part 5', async () => {
  const page = await lab.newPage('?part=10');
  assert.match(await page.textContent('.player .caption'), /forks after write 20/);
  // From the fork to the end of the run is a handful of steps, not 31 more.
  let steps = 0;
  for (let before = -1; steps < 40 && before !== (await now(page)); steps += 1) {
    before = await now(page);
    await page.keyboard.press('ArrowRight');
  }
  assert.ok(steps <= 15, `${steps} steps from the opening to the end`);
  await page.close();
});

test('Part 10 names one naive sum: the figure and the table give the same number under the same label', async () => {
  const page = await lab.newPage('?part=10');
  const naiveNs = Number(await page.getAttribute('table.write-23', 'data-naive-ns'));
  const ms = (naiveNs / 1e6).toFixed(1);
  const label = (await page.textContent('table.write-23 tr:last-child th')).trim();
  const figure = await page.textContent('.quorum-figure .max-vs-sum');
  assert.ok(figure.includes(`${ms} ms`), `the figure's comparison "${figure}" lacks the table's ${ms} ms`);
  assert.ok(figure.includes(label), `the figure's comparison "${figure}" does not call it "${label}"`);
  const everything = await page.textContent('#chapter');
  assert.doesNotMatch(everything, /naive budget/);
  await page.close();
});

test('Part 11 says the conclusion: the throughput needed is above gp3\'s baseline; the bars carry their values', async () => {
  const page = await lab.newPage('?part=11');
  const verdict = page.locator('.budget .verdict');
  const neededMib = Number(await verdict.getAttribute('data-needed-mib'));
  const baselineMib = Number(await verdict.getAttribute('data-baseline-mib'));
  assert.ok(neededMib > baselineMib, `${neededMib} MiB/s against ${baselineMib}`);
  const words = await verdict.textContent();
  assert.ok(words.includes(`${Math.ceil(neededMib)} MiB/s`) && words.includes(`${baselineMib} MiB/s`), words);
  assert.match(words, /above/);
  // Each bar is labelled with its value: the flushes' and compaction's I/Os among them.
  const values = await page.$$eval('.budget svg.chart-svg text.chart-value', (texts) => texts.map((text) => text.textContent));
  const lsmIops = await verdict.getAttribute('data-lsm-iops');
  assert.ok(values.includes(lsmIops), `no bar says ${lsmIops}: ${values.join(', ')}`);
  assert.ok(words.includes(`about ${Math.round(Number(lsmIops) / 10) * 10}`), `the verdict rounds the flushes' ${lsmIops} I/Os: ${words}`);
  // At a light load the log's throughput fits, and the verdict says so from the new run.
  const light = await lab.newPage('?part=11&load=1000');
  assert.ok(Number(await light.getAttribute('.budget .verdict', 'data-needed-mib')) < neededMib);
  await light.close();
  await page.close();
});

test('Part 11 opens on its question and its figure, and the verdict answers it first', async () => {
  // At 1366x768 the question, the load to drag and the bars are on the first screen, before
  // the table of AWS services.
  const page = await lab.newPage('?part=11', { width: 1366, height: 768 });
  const question = await page.locator('.budget .prose').first().textContent();
  assert.match(question, /which runs out first, the I\/Os or the bytes\?/, question);
  const bars = await page.locator('.budget-figure svg.chart-svg').first().boundingBox();
  assert.ok(bars && bars.y + bars.height / 2 < 768, `the bars are at ${bars && bars.y} px, below the first screen`);
  const services = await page.locator('table.services').boundingBox();
  assert.ok(services.y > bars.y, 'the services table comes after the budget figure');
  assert.match(await page.locator('.budget .verdict').textContent(), /^The bytes run out first\. At 100,000 writes/);
  await page.close();
  for (const [load, answer] of [['200', /^Neither runs out\. /], ['1000000', /^Both run out\. /]]) {
    const other = await lab.newPage(`?part=11&load=${load}`);
    const words = await other.locator('.budget .verdict').textContent();
    assert.match(words, answer, `at ${load} writes/s: ${words}`);
    await other.close();
  }
});

test('Part 12 draws the path of an OK: a card per Part (0-11, 13, 14) with the number that Part computes', async () => {
  const page = await lab.newPage('?part=12');
  const parts = await page.$$eval('[data-figure="ok-path"] li.stop', (stops) => stops.map((stop) => Number(stop.dataset.part)));
  assert.deepEqual(parts, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 14]);
  const card = async (part) => page.textContent(`[data-figure="ok-path"] li.stop[data-part="${part}"]`);
  // The AWS budget, with Part 11's own numbers.
  const aws = await lab.newPage('?part=11');
  const verdict = aws.locator('.budget .verdict');
  const lsm = Number(await verdict.getAttribute('data-lsm-iops'));
  const needed = Math.ceil(Number(await verdict.getAttribute('data-needed-mib')));
  const sharedIops = Number(await aws.getAttribute('.budget', 'data-shared-iops')).toLocaleString('en-US');
  await aws.close();
  const budget = await card(11);
  for (const part of ['1,000 +', `about ${Math.round(lsm / 10) * 10}`, sharedIops, '12-16 + ', `${needed} MiB/s`, 'above']) {
    assert.ok(budget.includes(part), `the budget card "${budget}" lacks "${part}"`);
  }
  // Part 10's numbers are its table's.
  const quorum = await lab.newPage('?part=10');
  const total = Number(await quorum.getAttribute('table.write-23', 'data-total-ns')) / 1e6;
  const naive = Number(await quorum.getAttribute('table.write-23', 'data-naive-ns')) / 1e6;
  await quorum.close();
  assert.ok((await card(10)).includes(`${total} ms`) && (await card(10)).includes(`${naive} ms`), await card(10));
  // A card opens its Part.
  await page.click('[data-figure="ok-path"] li.stop[data-part="8"] button');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('part') === '8');
  await page.close();
});

test("Part 12 in presenter mode keeps its content: the Parts' cards and the cheat card", async () => {
  const page = await lab.newPage('?part=12&present=1', { width: 1024, height: 768 });
  assert.ok(await page.isVisible('[data-figure="ok-path"] li.stop[data-part="11"]'), "Part 11's card is hidden in presenter mode");
  assert.ok(await page.isVisible('table.cheat-card'), 'the cheat card is hidden in presenter mode');
  await page.close();
});
