// The figures of Parts 0, 1, 2, 4, 5 and 11, read back through the DOM at named moments:
// each drawn write, unit or place carries its state as data attributes.
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

async function open(query, width = 1366, height = 768) {
  const page = await lab.newPage(query);
  await page.setViewportSize({ width, height });
  return page;
}

async function mark(page) {
  return Number(await page.getAttribute('.player .mark-count', 'data-mark'));
}

async function stepForward(page) {
  const before = await mark(page);
  await page.keyboard.press('ArrowRight');
  await page.waitForFunction((previous) => Number(document.querySelector('.player .mark-count').dataset.mark) !== previous, before);
}

/** Steps forward until `check` (run in the page) holds; returns the step number. */
async function stepUntil(page, check, arg, limit = 80) {
  for (let step = 0; step < limit; step++) {
    if (await page.evaluate(check, arg)) return mark(page);
    await stepForward(page);
  }
  throw new Error(`not reached in ${limit} steps: ${check}`);
}

async function stepCount(page) {
  const text = await page.textContent('.player .mark-count');
  return Number(text.match(/of (\d+)/)[1]);
}

/** Every caption from step 0 to the end; each must differ from the one before. */
async function captionsThroughTheRun(page, limit = 80) {
  await page.keyboard.press('Home');
  const captions = [await page.textContent('.player .caption')];
  const steps = Math.min(await stepCount(page), limit);
  while ((await mark(page)) < steps) {
    await stepForward(page);
    captions.push(await page.textContent('.player .caption'));
  }
  return captions;
}

const journey = '[data-figure="sync-journey"]';
const unitState = (page, unit) => page.getAttribute(`${journey} g.unit[data-unit="${unit}"]`, 'data-state');
const mediaRecords = (page) => page.$$eval(`${journey} [data-media-unit]`, (gs) => gs.map((g) => g.dataset.mediaRecords));

test("Part 2: right after write 1's write() unit 0 is dirty and nothing is on the media; after its fdatasync it is on the media", async () => {
  const page = await open('?part=2');
  assert.equal(await page.$('.player .now'), null, 'Part 2 steps through events, labelled as steps');
  await stepUntil(page, (sel) => document.querySelector(sel).dataset.call === 'write', journey);
  assert.match(await page.textContent('.player .caption'), /write\(\) copies bytes 0 to 28/);
  assert.equal(await unitState(page, 0), 'dirty');
  assert.equal(await page.getAttribute(`${journey} g.unit[data-unit="0"]`, 'data-cache-records'), '1');
  assert.deepEqual(await mediaRecords(page), ['', '', '', '']);
  assert.equal(await page.getAttribute(`${journey} g.record[data-write="1"]`, 'data-state'), 'page-cache');
  await stepUntil(page, (sel) => document.querySelector(sel).dataset.call === 'fdatasync', journey);
  assert.equal(await unitState(page, 0), 'device-cache', "fdatasync hands the unit to the drive's cache");
  assert.deepEqual(await mediaRecords(page), ['', '', '', '']);
  await stepUntil(page, (sel) => document.querySelector(sel).dataset.call === 'flush', journey);
  assert.equal(await unitState(page, 0), 'media');
  assert.deepEqual(await mediaRecords(page), ['1', '', '', '']);
  await stepUntil(page, (sel) => document.querySelector(sel).dataset.call === 'returned', journey);
  assert.equal(await page.getAttribute(`${journey} g.record[data-write="1"]`, 'data-acked'), 'false', 'the OK is its own, later step');
  await stepUntil(page, (sel) => document.querySelector(sel).dataset.call === 'ok', journey);
  assert.equal(await page.getAttribute(`${journey} g.record[data-write="1"]`, 'data-acked'), 'true');
  // B2's write() dirties three units, one of them already holding record 1 on the media.
  await stepUntil(page, (sel) => document.querySelector(sel).dataset.call === 'write', journey);
  const states = await page.$$eval(`${journey} g.unit`, (gs) => gs.map((g) => g.dataset.state));
  assert.deepEqual(states, ['dirty', 'dirty', 'dirty', 'zero']);
  await screenshot(page, 'figure-part2');
  await page.close();
});

test('Part 2: every step changes the picture', async () => {
  const page = await open('?part=2');
  await page.keyboard.press('Home');
  let previous = await page.innerHTML(journey);
  const steps = await stepCount(page);
  assert.ok(steps > 15, `${steps} steps`);
  while ((await mark(page)) < steps) {
    await stepForward(page);
    const now = await page.innerHTML(journey);
    assert.notEqual(now, previous, `step ${await mark(page)} changes the figure`);
    previous = now;
  }
  await page.close();
});

const group = '[data-figure="group-commit"]';

test('Part 5: B11 is led by write 18, which takes the whole queue; the queue was 19 and 20 behind a running sync', async () => {
  const page = await open('?part=5');
  await stepUntil(page, (sel) => document.querySelector(sel).dataset.batch === '11', group);
  assert.equal(await page.getAttribute(group, 'data-leader'), '18');
  const states = await page.$$eval(`${group} g.write`, (gs) => Object.fromEntries(gs.map((g) => [g.dataset.write, g.dataset.state])));
  assert.equal(states['18'], 'leader');
  assert.equal(states['19'], 'syncing');
  assert.equal(states['20'], 'syncing');
  assert.equal(states['17'], 'acked');
  assert.match(await page.textContent('.player .caption'), /leads B11/);
  await screenshot(page, 'figure-part5');
  await page.keyboard.press('ArrowLeft');
  const queue = (await page.getAttribute(group, 'data-queue')).split(',');
  assert.ok(queue.includes('19') && queue.includes('20'), `queue before B11: ${queue}`);
  assert.notEqual(await page.getAttribute(group, 'data-batch'), '', 'a sync was running while they queued');
  await page.close();
});

test('Part 5: the tie rule is drawn at the instant it applies', async () => {
  const page = await open('?part=5');
  const tie = '.tie-example [data-figure="group-commit"]';
  assert.equal(await page.getAttribute(tie, 'data-tie'), '3');
  assert.equal(await page.getAttribute(`${tie} g.write[data-write="3"]`, 'data-state'), 'syncing');
  assert.equal(await page.getAttribute(`${tie} g.write[data-write="1"]`, 'data-state'), 'acked');
  assert.match(await page.textContent('.tie-example'), /tie rule/);
  await page.close();
});

test("Part 5: the steady run at 100,000 writes/s shows the page's figures, warm-up left out", async () => {
  const page = await open('?part=5&scenario=steady&load=100000');
  const table = 'table.steady-state';
  const read = (name) => page.getAttribute(table, name);
  assert.equal(await read('data-syncs-per-s'), '1000');
  assert.equal(await read('data-writes-per-sync'), '100.0');
  assert.equal(await read('data-bytes-per-sync'), '10000');
  assert.equal(await read('data-in-flight'), '150');
  assert.equal(await read('data-wait-mean-ms'), '1.50');
  assert.equal(await read('data-wait-max-ms'), '2.0');
  const text = await page.textContent(table);
  assert.match(text, /1,000/);
  assert.match(text, /10,000/);
  assert.match(text, /left out/);
  await page.close();
});

test("Part 5's steady run draws the queue and the leader's batch at the player's instant", async () => {
  const page = await open('?part=5&scenario=steady&load=100000');
  const figure = '[data-figure="steady-queue"]';
  const read = async () => page.$eval(figure, (f) => Object.fromEntries(
    ['queued', 'acked', 'arrived', 'batch', 'batchWrites', 'firstWrite', 'lastWrite', 'bytes'].map((key) => [key, f.dataset[key] === undefined ? null : Number(f.dataset[key])])));
  for (let step = 0; step < 3; step++) await stepForward(page);
  const first = await read();
  const caption = await page.textContent('.player .caption');
  // The figure draws the batch the caption names, with the writes and bytes it names.
  const named = caption.match(/B(\d+) starts: its leader takes the ([\d,]+) writes .*?\(([\d,]+) bytes\)/);
  assert.ok(named, caption);
  assert.deepEqual([first.batch, first.batchWrites, first.bytes], named.slice(1, 4).map((n) => Number(n.replace(/,/g, ''))));
  assert.equal(first.lastWrite - first.firstWrite + 1, first.batchWrites);
  const drawnCells = (p, place) => p.$$eval(`${figure} rect.cells.${place}`, (rows) => rows.reduce((sum, row) => sum + Number(row.dataset.cells), 0));
  assert.equal(await drawnCells(page, 'syncing'), first.batchWrites);
  assert.equal(await page.$$eval(`${figure} rect.cell.leader`, (cells) => cells.length), 1);
  assert.match(await page.textContent(`${figure} .queue-note`), new RegExp(`B${first.batch} syncing: leader write ${first.firstWrite.toLocaleString('en-US')}`));
  await stepForward(page);
  const next = await read();
  assert.equal(next.batch, first.batch + 1);
  assert.equal(next.firstWrite, first.lastWrite + 1, "the next leader takes the writes that queued behind the last batch");
  await page.close();

  // Halfway through a sync, writes queue behind it: every arrived write is acknowledged,
  // in the running sync, or queued.
  // Part 5 has no power button, so the playhead is moved with the scrubber (in us).
  const mid = await open('?part=5&scenario=steady&load=100000');
  await mid.$eval('.player input.scrub', (scrub) => {
    scrub.value = '5500';
    scrub.dispatchEvent(new Event('input', { bubbles: true }));
  });
  await mid.waitForSelector(`${figure}[data-batch]`);
  assert.equal(await mid.getAttribute('.player .now', 'data-now-ns'), '5500000');
  const half = await mid.$eval(figure, (f) => ({ ...f.dataset }));
  const [queued, acked, arrived, writes] = [half.queued, half.acked, half.arrived, half.batchWrites].map(Number);
  assert.ok(queued > 10 && queued < writes, `queued ${queued}, batch ${writes}`);
  assert.equal(acked + writes + queued, arrived);
  assert.equal(await drawnCells(mid, 'queued'), Math.min(queued, 200));
  await screenshot(mid, 'figure-part5-steady-queue');
  await mid.close();
});

test('Part 0: write 1 travels the path, and at 1,000 writes/s sync per write keeps up with its 1.00 ms wait', async () => {
  const page = await open('?part=0&load=1000');
  assert.equal(await page.$('.player .now'), null);
  // It opens at step 1 of 8, write 1 in the client, and says so.
  assert.equal(await page.getAttribute('[data-figure="write-path"]', 'data-station'), 'client');
  assert.match(await page.textContent('.scene[data-scene="write-path"] .player'), /step 1 of 8/);
  await page.keyboard.press('Home');
  for (let step = 0; step < 5; step++) await stepForward(page);
  assert.equal(await page.getAttribute('[data-figure="write-path"]', 'data-station'), 'media');
  assert.equal(await page.getAttribute('[data-figure="write-path"] [data-station="ok"]', 'data-state'), 'ahead');
  await page.keyboard.press('End');
  assert.equal(await page.getAttribute('[data-figure="write-path"]', 'data-station'), 'ok');
  const row = 'table.problem tr[data-policy="per-write"]';
  assert.equal(await page.getAttribute(`${row} td.verdict`, 'data-keeps-up'), 'true');
  assert.match(await page.textContent(row), /1\.00 ms/);
  assert.doesNotMatch(await page.textContent(row), /falls behind/);
  const calm = Number(await page.getAttribute('[data-figure="log-queue"]', 'data-queue-last'));
  await page.close();
  const busy = await open('?part=0&load=5000');
  const busyRow = 'table.problem tr[data-policy="per-write"]';
  assert.equal(await busy.getAttribute(`${busyRow} td.verdict`, 'data-keeps-up'), 'false');
  const grown = Number(await busy.getAttribute('[data-figure="log-queue"]', 'data-queue-last'));
  assert.ok(grown > calm + 10, `the queue grows past 1 / L: ${calm} -> ${grown}`);
  for (let step = 0; step < 4; step++) await stepForward(busy);
  await screenshot(busy, 'figure-part0');
  await busy.close();
});

test('Part 1: the chosen failure wipes the places it reaches and marks where the record must be', async () => {
  const page = await open('?part=1');
  const chain = '[data-figure="chain"]';
  const states = () => page.$$eval(`${chain} g.place`, (gs) => Object.fromEntries(gs.map((g) => [g.dataset.place, g.dataset.state])));
  await page.click('button.failure[data-failure="process"]');
  assert.equal(await page.getAttribute(chain, 'data-needed'), 'pagecache');
  assert.deepEqual(await states(), { appbuffer: 'wiped', pagecache: 'survives', devicecache: 'survives', media: 'survives', othermachines: 'survives' });
  await page.click('button.failure[data-failure="power"]');
  assert.equal(await page.getAttribute(chain, 'data-needed'), 'media');
  assert.deepEqual(await states(), { appbuffer: 'wiped', pagecache: 'wiped', devicecache: 'wiped', media: 'survives', othermachines: 'survives' });
  assert.equal(await page.getAttribute(`${chain} g.place[data-place="media"]`, 'data-needed'), 'true');
  await screenshot(page, 'figure-part1');
  await page.click('button.failure[data-failure="machine"]');
  assert.equal(await page.getAttribute(chain, 'data-needed'), 'othermachines');
  await page.close();
});

test('Part 1 opens on its figure: the durability chain is on the first screen at 1366x768, the table of failures after it', async () => {
  const page = await open('?part=1', 1366, 768);
  const chain = await page.locator('[data-figure="chain"]').boundingBox();
  assert.ok(chain.y + chain.height / 2 < 768, `the chain's middle is at ${chain.y + chain.height / 2} px`);
  const table = await page.locator('table.failures').boundingBox();
  assert.ok(table.y > chain.y, 'the table of failures comes after the figure');
  // The sentence under the buttons gives the failure's example, so the figure reads alone.
  await page.click('button.failure[data-failure="kernel"]');
  assert.match(await page.textContent('.verdict-line'), /^If the kernel crashes \(a kernel panic or a hard reset of the VM; the drive keeps its power\), an OK is safe only once the record has reached the drive's volatile cache\.$/);
  await page.close();
});

test("Part 4: wal-1's records drawn as bytes with their boundaries; the append is labelled in steps", async () => {
  const page = await open('?part=4');
  const figure = '[data-figure="record-bytes"]:not(.cropped)';
  const records = await page.$$eval(`${figure} g.record`, (gs) => gs.map((g) => [Number(g.dataset.write), Number(g.dataset.offset), Number(g.dataset.end)]));
  assert.deepEqual(records, [[1, 0, 29], [2, 29, 56], [3, 56, 85], [4, 85, 114]]);
  assert.equal(await page.$$eval(`${figure} g.byte`, (gs) => gs.length), 128);
  assert.equal(await page.$$eval(`${figure} g.byte.zero-fill`, (gs) => gs.length), 128 - 114);
  assert.equal(await page.getAttribute(`${figure} g.byte[data-byte="29"]`, 'data-write'), '2');
  assert.equal(await page.$('.player .now'), null);
  for (let step = 0; step < 6; step++) await stepForward(page);
  assert.match(await page.textContent('.player .caption'), /breaks the promise/);
  await screenshot(page, 'figure-part4');
  await page.close();
});

test("Part 4: the appended record's bytes follow the append, in the right and the wrong order", async () => {
  const page = await open('?part=4');
  const right = '[data-figure="record-bytes"][data-order="right"]';
  const wrong = '[data-figure="record-bytes"][data-order="wrong"]';
  const states = async () => [await page.getAttribute(right, 'data-appended-state'), await page.getAttribute(wrong, 'data-appended-state')];
  // Record 4's bytes (85 to 113): their drawn state and hex, read back from the cells.
  const cells = (figure) => page.$$eval(`${figure} g.byte[data-write="4"]`, (gs) => [...new Set(gs.map((g) => g.dataset.state))].join() + ':' + gs.map((g) => g.textContent).join(''));
  assert.deepEqual(await states(), ['not-yet', 'not-yet']);
  assert.match(await cells(wrong), /^not-yet:(00){29}$/);
  const seen = [];
  for (let step = 1; step <= 7; step++) {
    await stepForward(page);
    seen.push((await states()).join('/'));
  }
  assert.deepEqual(seen, ['not-yet/not-yet', 'framed/framed', 'media/page-cache', 'media/page-cache', 'media/page-cache', 'media/page-cache', 'media/media']);
  // Synced, the cells hold the record's own bytes (it starts with its CRC, not zeros).
  const written = await cells(right);
  assert.match(written, /^media:/);
  assert.doesNotMatch(written, /^media:(00){29}$/);
  assert.equal(await cells(wrong), written);
  await screenshot(page, 'figure-part4-bytes');
  await page.close();

  // The power fails after step 6 (the wrong order's OK): its bytes were only in the page cache.
  const cut = await open('?part=4&cut=6');
  await cut.waitForSelector(`${wrong}[data-appended-state="lost"]`);
  assert.equal(await cut.getAttribute(right, 'data-appended-state'), 'media');
  assert.match(await cut.$eval(wrong, (figure) => figure.textContent), /power failed/);
  await screenshot(cut, 'figure-part4-bytes-cut');
  await cut.close();
});

test('Part 11: the budget bars are drawn at 1024 wide', async () => {
  const page = await open('?part=11', 1024, 768);
  await page.waitForSelector('svg[aria-label^="IOPS"]');
  const bars = await page.$$eval('svg[data-bars]', (charts) => charts.map((chart) => Number(chart.dataset.bars)));
  assert.ok(bars.length >= 2 && bars.every((count) => count > 0), `${bars}`);
  await screenshot(page, 'figure-part11');
  await page.close();
});

for (const query of ['?part=0', '?part=2', '?part=4', '?part=5', '?part=5&policy=per-write', '?part=5&scenario=steady&load=100000']) {
  test(`${query}: every step's caption differs from the one before`, async () => {
    const page = await open(query);
    const captions = await captionsThroughTheRun(page, 60);
    assert.ok(captions.length > 5, `${captions.length} captions`);
    for (let index = 1; index < captions.length; index++) {
      assert.ok(captions[index].trim().length > 0, `caption ${index} is empty`);
      assert.notEqual(captions[index], captions[index - 1], `step ${index}: ${captions[index]}`);
    }
    await page.close();
  });
}

test('no Rust Debug text on Parts 0, 1, 2, 4, 5 and 11', async () => {
  for (const part of [0, 1, 2, 4, 5, 11]) {
    const page = await open(`?part=${part}`);
    await page.keyboard.press('End');
    const text = await page.innerText('#chapter');
    for (const leak of ['{ ', 'Some(', 'None', 'Ok(', 'Err(', 'Nanos(']) {
      assert.ok(!text.includes(leak), `Part ${part} shows "${leak}"`);
    }
    await page.close();
  }
});

test('the browser console stays free of errors', () => {
  assert.deepEqual(lab.consoleErrors, []);
});
