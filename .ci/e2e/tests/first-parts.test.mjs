// Parts 0, 1, 2 and 4: the problem, the OK's promise, the sync calls and the record. Each
// is built of scenes (the figure beside its words), opens on a moment worth looking at, and
// says its numbers the way a person would (one write, 13.5 ms, a step count in steps).
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

const open = (query, width, height = 768) => lab.newPage(query, { width, height });

const problemRows = (page) =>
  page.$$eval('table.problem tbody tr[data-policy]', (trs) =>
    trs.map((tr) => ({
      policy: tr.dataset.policy,
      syncs: Number(tr.querySelector('td.syncs').textContent.replace(/,/g, '')),
      batch: Number(tr.querySelector('td.batch').textContent.replace(/,/g, '')),
      keepsUp: tr.querySelector('[data-keeps-up]').dataset.keepsUp === 'true',
    })));

test("Part 0's table adds up: in the steady state, syncs a second times writes per sync is the load", async () => {
  const page = await open('?part=0', 1366);
  const wrong = [];
  for (const load of [100, 1000, 20000, 100000]) {
    await page.goto(lab.url + `?part=0&load=${load}`);
    await page.waitForSelector('table.problem tbody tr[data-policy]');
    for (const row of await problemRows(page)) {
      if (!row.keepsUp) continue;
      const product = row.syncs * row.batch;
      if (Math.abs(product - load) > load * 0.01) wrong.push(`${load} writes/s, ${row.policy}: ${row.syncs} syncs/s x ${row.batch} writes per sync = ${product}`);
    }
  }
  assert.deepEqual(wrong, []);
  // The figures the rest of the page (Part 11's budget) uses at 100,000 writes/s.
  await page.goto(lab.url + '?part=0&load=100000');
  await page.waitForSelector('table.problem tbody tr[data-policy]');
  const rows = Object.fromEntries((await problemRows(page)).map((row) => [row.policy, row]));
  assert.deepEqual([rows.group.syncs, rows.group.batch], [1000, 100]);
  assert.deepEqual([rows.window.syncs, rows.window.batch], [500, 200]);
  await page.goto(lab.url + '?part=0&load=100');
  await page.waitForSelector('table.problem tbody tr[data-policy]');
  const slow = Object.fromEntries((await problemRows(page)).map((row) => [row.policy, row]));
  assert.deepEqual([slow['per-write'].syncs, slow['per-write'].batch], [100, 1]);
  // The table says what it counts: the steady state, the warm-up left out.
  assert.match(await page.textContent('table.problem caption'), /steady state/);
  assert.match(await page.textContent('table.problem caption'), /warm-up/);
  await page.close();
});

test('every label of the figures of Parts 0, 1, 2 and 4 stays inside its figure', async () => {
  const cut = [];
  for (const width of [1366, 1024, 390]) {
    const page = await open('?part=0', width);
    for (const part of [0, 1, 2, 4]) {
      await page.goto(lab.url + `?part=${part}`);
      await page.waitForSelector('#chapter');
      // Where things come to rest: a figure laid out again for its measured room moves its marks there.
      await page.waitForTimeout(100);
      await page.evaluate(() => document.getAnimations().forEach((animation) => animation.finish()));
      const found = await page.evaluate(() => {
        const out = [];
        for (const svg of document.querySelectorAll('#chapter svg')) {
          const box = svg.getBoundingClientRect();
          if (box.width === 0) continue;
          for (const text of svg.querySelectorAll('text')) {
            const t = text.getBoundingClientRect();
            if (t.width === 0 || getComputedStyle(text).opacity === '0') continue;
            if (t.left < box.left - 1 || t.right > box.right + 1) out.push(`"${text.textContent.slice(0, 50)}" runs ${Math.round(Math.max(box.left - t.left, t.right - box.right))} px out`);
          }
        }
        return out;
      });
      for (const each of found) cut.push(`${width} Part ${part}: ${each}`);
    }
    await page.close();
  }
  assert.deepEqual(cut, []);
});

test('Part 2 opens on a moment of the journey, not on an empty figure', async () => {
  const page = await open('?part=2', 1366);
  await page.waitForSelector('[data-figure="sync-journey"]');
  const states = await page.$$eval('[data-figure="sync-journey"] g.record', (gs) => gs.map((g) => g.dataset.state));
  const units = await page.$$eval('[data-figure="sync-journey"] g.unit', (gs) => gs.map((g) => g.dataset.state));
  assert.ok(states.some((state) => state !== 'not-yet') && units.some((state) => state === 'dirty' || state === 'device-cache'),
    `records ${states.join(' ')}, units ${units.join(' ')}`);
  assert.doesNotMatch(await page.textContent('.player .caption'), /^Before the first/);
  await page.close();
});

test("Part 2's call column never breaks a call's name", async () => {
  const broken = [];
  for (const width of [1366, 1024, 390]) {
    const page = await open('?part=2', width);
    await page.waitForSelector('table.sync-calls');
    const found = await page.evaluate(() => {
      const out = [];
      for (const code of document.querySelectorAll('table.sync-calls td code')) {
        const text = code.firstChild;
        const range = document.createRange();
        let word = '';
        let top = null;
        for (let i = 0; i < text.length; i++) {
          const char = text.data[i];
          if (char === ' ') { word = ''; top = null; continue; }
          range.setStart(text, i);
          range.setEnd(text, i + 1);
          const rect = range.getClientRects()[0];
          if (!rect) continue;
          if (top !== null && Math.abs(rect.top - top) > 2) { out.push(`${code.textContent} breaks after "${word}"`); break; }
          word += char;
          top = rect.top;
        }
      }
      return out;
    });
    for (const each of found) broken.push(`${width}: ${each}`);
    await page.close();
  }
  assert.deepEqual(broken, []);
});

test('Part 4 highlights the step it is at, the one its caption names', async () => {
  const page = await open('?part=4', 1366);
  for (let step = 0; step < 3; step++) await page.keyboard.press('ArrowRight');
  // Read the step once the player has drawn it.
  await page.waitForFunction(() => document.querySelector('.player .caption')?.textContent.startsWith('Step 3.'));
  const caption = await page.textContent('.player .caption');
  const current = await page.$$eval('.append-column li.current', (lis) => lis.map((li) => li.textContent));
  assert.equal(current.length, 2, `one current step per column: ${current.join(' | ')}`);
  for (const step of current) assert.ok(caption.includes(step), `"${step}" is highlighted, the caption says "${caption}"`);
  assert.equal(await page.$$eval('.append-column li.step', (lis) => lis.filter((li) => li.classList.contains('done')).length), 4);
  await page.close();
});

test("Part 4's cut past the end names the range in steps", async () => {
  const page = await open('?part=4&cut=99', 1366);
  await page.waitForSelector('.url-problems');
  const text = await page.textContent('.url-problems');
  assert.match(text, /0 to 7 steps/);
  assert.doesNotMatch(text, /\d ms/);
  await page.close();
});

// The captions a student steps through, in every Part that counts things.
const SLOPPY = [
  /\b1 (writes|records|syncs|units|bulks|objects|blocks|steps|segments|bytes|batches)\b/,
  /\b1 [a-z]+s are\b/,
  /\d+\.\d{4,} ?ms/,
  /\(s\)/,
];

test('captions say one write, not 1 writes, and milliseconds with few decimals', async () => {
  const page = await open('?part=5&scenario=steady', 1366);
  const sloppy = new Set();
  for (const view of ['?part=5&scenario=steady', '?part=5', '?part=13', '?part=14', '?part=2', '?part=4', '?part=0']) {
    await page.goto(lab.url + view);
    await page.waitForSelector('#chapter');
    const texts = [await page.textContent('#chapter')];
    for (let step = 0; step < 40; step++) {
      await page.keyboard.press('ArrowRight');
      texts.push(await page.textContent('.player .caption').catch(() => ''));
    }
    for (const text of texts) {
      for (const pattern of SLOPPY) {
        const match = text?.match(pattern);
        if (match) sloppy.add(`${view}: "${text.slice(Math.max(0, match.index - 40), match.index + match[0].length + 10)}"`);
      }
    }
  }
  assert.deepEqual([...sloppy], []);
  await page.close();
});

// The figure beside its words in these Parts too.
test('Parts 0, 1, 2 and 4 are built of scenes: the figure stays in view while its text is read', async () => {
  const lost = [];
  for (const [width, height] of [[1366, 768], [1024, 768]]) {
    const page = await open('?part=0', width, height);
    for (const part of [0, 1, 2, 4]) {
      await page.goto(lab.url + `?part=${part}`);
      await page.waitForSelector('#chapter');
      // Where things come to rest: a figure laid out again for its measured room moves its marks there.
      await page.waitForTimeout(100);
      await page.evaluate(() => document.getAnimations().forEach((animation) => animation.finish()));
      const found = await page.evaluate(() => {
        const out = [];
        const scenes = document.querySelectorAll('.scene');
        if (scenes.length === 0) out.push('no scene');
        for (const scene of scenes) {
          const prose = scene.querySelector('.scene-prose');
          if (!prose) continue;
          for (const paragraph of prose.querySelectorAll('p, li')) {
            paragraph.scrollIntoView({ block: 'center' });
            const figure = scene.querySelector('.stage-figure').getBoundingClientRect();
            const visible = Math.min(figure.bottom, window.innerHeight) - Math.max(figure.top, 0);
            if (visible < Math.min(150, figure.height)) out.push(`${scene.dataset.scene}: ${Math.round(visible)} px of the figure in view beside "${paragraph.textContent.slice(0, 40)}"`);
          }
        }
        return out;
      });
      for (const each of found) lost.push(`${width} Part ${part} ${each}`);
      if (width === 1366) await screenshot(page, `part-${String(part).padStart(2, '0')}-scenes-1366`);
    }
    await page.close();
  }
  assert.deepEqual(lost, []);
});

test('on a phone the stage of each scene comes before its text, and nothing swipes sideways', async () => {
  const page = await open('?part=0', 390, 844);
  const wrong = [];
  for (const part of [0, 1, 2, 4]) {
    await page.goto(lab.url + `?part=${part}`);
    await page.waitForSelector('.scene');
    const found = await page.evaluate(() => {
      const out = [];
      for (const scene of document.querySelectorAll('.scene')) {
        const stage = scene.querySelector('.stage').getBoundingClientRect();
        const prose = scene.querySelector('.scene-prose')?.getBoundingClientRect();
        if (prose && prose.top < stage.bottom - 1) out.push(`${scene.dataset.scene}: its text starts above its stage's end`);
      }
      if (document.documentElement.scrollWidth > window.innerWidth + 1) out.push(`the page is ${document.documentElement.scrollWidth} px wide`);
      return out;
    });
    for (const each of found) wrong.push(`Part ${part} ${each}`);
    await screenshot(page, `part-${String(part).padStart(2, '0')}-scenes-390`);
  }
  assert.deepEqual(wrong, []);
  await page.close();
});

test("Part 4's power button sits on its figure's stage, with the player", async () => {
  const page = await open('?part=4', 1024);
  const found = await page.evaluate(() => {
    const power = document.querySelector('.power-button');
    const stage = power?.closest('.stage');
    return { stage: Boolean(stage), player: Boolean(stage?.querySelector('.player')), figure: Boolean(stage?.querySelector('.stage-figure .append-columns')) };
  });
  assert.deepEqual(found, { stage: true, player: true, figure: true });
  await page.close();
});

test('the browser console stays free of errors', () => {
  assert.deepEqual(lab.consoleErrors, []);
});

test('Part 0: dragging the load in the figure, or its arrow keys, runs the simulator at that load', async () => {
  const page = await open('?part=0', 1366);
  const track = await page.waitForSelector('.dial[data-dial="load"] .dial-track');
  const box = await track.boundingBox();
  // Drag the knob from 100,000 writes/s to the track's left end: 100 writes/s.
  const knob = await (await page.$('.dial-knob')).boundingBox();
  await page.mouse.move(knob.x + knob.width / 2, knob.y + knob.height / 2);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * 0.4, box.y + box.height / 2, { steps: 4 });
  await page.mouse.move(box.x - 20, box.y + box.height / 2, { steps: 4 });
  await page.mouse.up();
  await page.waitForFunction(() => new URL(location.href).searchParams.get('load') === '100');
  assert.equal(await page.getAttribute('table.problem tr[data-policy="per-write"] td.verdict', 'data-keeps-up'), 'true');
  assert.match(await page.textContent('.dial [aria-live]'), /At 100 writes\/s: sync per write keeps up/);
  // The keyboard: the dial takes the arrows (the player does not step).
  await page.focus('.dial-track');
  for (let press = 0; press < 5; press++) await page.keyboard.press('ArrowRight');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('load') === '5000');
  assert.equal(await page.getAttribute('.dial-track', 'aria-valuetext'), '5,000 writes/s');
  assert.equal(await page.getAttribute('table.problem tr[data-policy="per-write"] td.verdict', 'data-keeps-up'), 'false');
  assert.match(await page.textContent('.dial [aria-live]'), /sync per write falls behind/);
  await page.keyboard.press('End');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('load') === '1000000');
  await page.close();
});

test('Part 2: clicking a call runs it on the record, and the link keeps the call', async () => {
  const page = await open('?part=2', 1366);
  await page.click('button.call[data-call="o_direct"]');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('call') === 'o_direct');
  assert.equal(await page.getAttribute('[data-figure="call-path"]', 'data-leaves'), "drive's volatile cache");
  assert.equal(await page.getAttribute('[data-figure="call-path"]', 'data-kept'), 'false');
  assert.match(await page.textContent('.call-outcome'), /maybe lost/);
  // Enter on a focused call runs it too.
  await page.focus('button.call[data-call="write"]');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('call') === 'write');
  assert.equal(await page.getAttribute('[data-figure="call-path"]', 'data-leaves'), 'page cache (kernel)');
  assert.equal(await page.getAttribute('.call-outcome', 'aria-live'), 'polite');
  await page.goto(lab.url + '?part=2&call=fsync_dir');
  await page.waitForSelector('[data-figure="call-path"]');
  assert.equal(await page.getAttribute('[data-figure="call-path"]', 'data-kept'), 'true');
  assert.equal(await page.getAttribute('button.call[data-call="fsync_dir"]', 'aria-pressed'), 'true');
  // A directory's fsync makes the file's name durable, not the record: the figure and the
  // outcome say so in whole sentences.
  assert.match(await page.textContent('[data-figure="call-path"]'), /fsync\(directory fd\) returns: the file's name is in\s*the stable media/);
  assert.match(await page.textContent('.call-outcome .returns-when'), /^fsync\(directory fd\) returns when the directory's entries \(a new file's name, a rename\) are on the device; the file's data needs its own fsync\.$/);
  await page.click('button.call[data-call="sync_file_range"]');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('call') === 'sync_file_range');
  assert.match(await page.textContent('.call-outcome .returns-when'), /^sync_file_range\(\) returns when write-back of the byte range has started, or finished, as its flags ask/);
  await page.click('button.call[data-call="o_sync"]');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('call') === 'o_sync');
  assert.match(await page.textContent('.call-outcome .returns-when'), /^each write\(\) to a file opened with O_SYNC returns when its bytes and the file's metadata are on the device/);
  await page.close();
});

test('at 390 px the tables of Parts 0, 1, 2 and 9 reflow into cards: no table scrolls sideways', async () => {
  const wide = [];
  const page = await open('?part=0', 390, 844);
  for (const part of [0, 1, 2, 9]) {
    await page.goto(lab.url + `?part=${part}`);
    await page.waitForSelector('#chapter');
    if (part === 9) await page.keyboard.press('End');
    await page.evaluate(() => document.querySelectorAll('#chapter details').forEach((d) => { d.open = true; }));
    const found = await page.evaluate(() => [...document.querySelectorAll('#chapter table.stack')]
      .filter((table) => table.getBoundingClientRect().width > 0)
      .map((table) => ({ name: table.className, over: table.scrollWidth - table.clientWidth, right: table.getBoundingClientRect().right }))
      .filter((table) => table.over > 1 || table.right > innerWidth + 1));
    const tables = await page.$$eval('#chapter table.stack', (tables) => tables.length);
    if (tables === 0) wide.push(`Part ${part}: no stacked table`);
    for (const table of found) wide.push(`Part ${part}: table.${table.name} ${table.over} px too wide`);
    const page_over = await page.evaluate(() => document.documentElement.scrollWidth - innerWidth);
    if (page_over > 0) wide.push(`Part ${part}: the page is ${page_over} px too wide`);
  }
  await screenshot(page, 'part-09-390-cards');
  await page.close();
  assert.deepEqual(wide, []);
});

test("at 390 px Part 0's write path fits the screen: every station, the current one included, is in view", async () => {
  const page = await open('?part=0', 390, 844);
  await page.waitForSelector('[data-figure="write-path"] svg.fitted');
  const out = await page.$$eval('[data-figure="write-path"] g.station rect', (rects) => rects
    .map((rect) => rect.getBoundingClientRect())
    .filter((box) => box.left < 0 || box.right > innerWidth).length);
  assert.equal(out, 0, 'stations outside the screen');
  const here = await page.$eval('[data-figure="write-path"] g.station.here rect', (rect) => rect.getBoundingClientRect().right);
  assert.ok(here <= 390, `the current station ends at ${here}`);
  const min = await page.$eval('[data-figure="write-path"] text.station-label', (text) => parseFloat(getComputedStyle(text).fontSize) * text.getScreenCTM().a);
  assert.ok(min >= 13, `station labels drawn at ${min} px`);
  await screenshot(page, 'part-00-390-write-path');
  await page.close();
});
