// Parts 11, 13 and 14 as a newcomer meets them: Part 14's restore tells one story at every
// playhead (its words and its numbers come from the same counts of the core).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startLab, screenshot, playerNow } from '../lib.mjs';

let lab;
before(async () => {
  lab = await startLab();
});
after(async () => {
  await lab?.close();
});

async function seek(tab, micros) {
  await tab.$eval('input.scrub', (input, value) => {
    input.value = String(value);
    input.dispatchEvent(new Event('input', { bubbles: true }));
  }, micros);
}

test("Part 14's restore from a backup: the sentence's words and numbers agree at every playhead", async () => {
  const tab = await lab.newPage('?part=14&rtl=lower');
  const max = Number(await tab.getAttribute('input.scrub', 'max'));
  assert.ok(max > 0);
  const seen = [];
  for (const micros of [52870, ...Array.from({ length: 21 }, (_, i) => Math.round((max * i) / 20))]) {
    await seek(tab, micros);
    const verdict = await tab.$eval('.timeline-verdict', (el) => ({ ...el.dataset, text: el.textContent }));
    const [acked, past, uploaded, lost] = ['acked', 'past', 'uploaded', 'lost'].map((key) => Number(verdict[key]));
    assert.ok([acked, past, uploaded, lost].every(Number.isInteger), JSON.stringify(verdict));
    const where = `at ${micros} us: ${verdict.text}`;
    assert.ok(uploaded <= past && past <= acked, where);
    assert.ok(lost >= past - uploaded, where);
    if (acked > 0) assert.match(verdict.text, new RegExp(`Of ${acked.toLocaleString('en-US')} acknowledged record`), where);
    if (past > 0) assert.match(verdict.text, new RegExp(`${past} (was|were) committed after the backup point`), where);
    assert.match(verdict.text, lost === 0 ? /so (none are|nothing is) lost/ : new RegExp(`so ${lost} (is|are) lost`), where);
    assert.doesNotMatch(verdict.text, /records after the backup point are gone/, where);
    seen.push({ micros, past, uploaded, lost });
  }
  assert.ok(seen.some((each) => each.micros === 52870 && each.lost > 0), 'at 52.87 ms some records are lost');
  assert.ok(seen.some((each) => each.past > 0 && each.uploaded === each.past && each.lost === 0), 'late in the run the upload has them all');
  await screenshot(tab, 'part14-restore-lower');
  await tab.close();
});

test('Parts 13 and 14 open on a moment with something drawn, not on an empty run at 0 ms', async () => {
  for (const part of [13, 14]) {
    const tab = await lab.newPage(`?part=${part}`);
    const now = await playerNow(tab);
    assert.ok(now > 0, `Part ${part} opens at ${now} ns`);
    assert.notEqual((await tab.textContent('.player .caption')).trim(), '', `Part ${part}'s caption has words`);
    const drawn = await tab.$$eval('.remote-lanes g.batch', (groups) => groups.filter((g) => g.dataset.state !== 'not-yet').length);
    assert.ok(drawn >= 2, `Part ${part} draws ${drawn} batches at its opening`);
    await tab.close();
  }
});

test('Part 14 on a 1024x768 projector: the figure text at least 16 px, the caption and the outcome on screen', async () => {
  const tab = await lab.newPage('?part=14&present=1', { width: 1024, height: 768 });
  await tab.waitForTimeout(150);
  const found = await tab.evaluate(() => {
    const small = [];
    for (const text of document.querySelectorAll('main svg text')) {
      const matrix = text.getScreenCTM();
      if (!matrix || text.getBoundingClientRect().width === 0) continue;
      const px = parseFloat(getComputedStyle(text).fontSize) * Math.hypot(matrix.a, matrix.b);
      if (px < 15.95) small.push(`"${text.textContent.trim()}" ${px.toFixed(1)} px`);
    }
    const seen = (selector) => {
      const element = document.querySelector(selector);
      if (!element || element.offsetParent === null) return `${selector} is not shown`;
      const rect = element.getBoundingClientRect();
      return rect.top >= 0 && rect.bottom <= innerHeight && rect.height > 0 ? 'on screen' : `${selector} at ${Math.round(rect.top)}-${Math.round(rect.bottom)} of ${innerHeight}`;
    };
    return { small, caption: seen('.player .caption'), outcome: seen('.remote-outcome'), lanes: seen('.remote-lanes'), ring: seen('.remote-ring') };
  });
  assert.deepEqual(found.small, []);
  assert.deepEqual([found.caption, found.outcome, found.lanes, found.ring], ['on screen', 'on screen', 'on screen', 'on screen']);
  await screenshot(tab, 'part14-present-1024');
  await tab.close();
});

test('Part 14: clicking a slot table, or its arrow keys, says what the slot holds', async () => {
  const tab = await lab.newPage('?part=14');
  const live = '.remote-ring .slot-words[aria-live]';
  await tab.click('.remote-ring g.slot[data-slot="1"] rect');
  await tab.waitForFunction(() => document.querySelector('.remote-ring').dataset.chosen === '1');
  assert.match(await tab.textContent(live), /^Slot 1 /);
  const generation = await tab.getAttribute('.remote-ring g.slot[data-slot="1"]', 'data-generation');
  if (generation) assert.match(await tab.textContent(live), new RegExp(`holds generation ${generation},`));
  assert.ok(await tab.$('.remote-ring g.slot.chosen[data-slot="1"]'));
  await tab.focus('.remote-ring');
  await tab.keyboard.press('ArrowRight');
  await tab.waitForFunction(() => document.querySelector('.remote-ring').dataset.chosen === '2');
  assert.match(await tab.textContent(live), /^Slot 2 /);
  await tab.keyboard.press('Home');
  await tab.waitForFunction(() => document.querySelector('.remote-ring').dataset.chosen === '0');
  // The figure's keys are its own: the player did not step.
  await tab.close();
});

test('Part 13: clicking the lanes at a millisecond makes node B take over there; Enter at the playhead, Delete for none', async () => {
  const tab = await lab.newPage('?part=13');
  await (await tab.$('.remote-lanes')).scrollIntoViewIfNeeded();
  const svg = await (await tab.$('.remote-lanes svg')).boundingBox();
  // The lanes' time axis starts at the labels' edge and ends 12 px from the right (of a
  // drawing laid out at its own width): click 60% of the way along it.
  const label = await (await tab.$('.remote-lanes text.axis')).boundingBox();
  const axisEnd = await (await tab.$$('.remote-lanes text.axis'))[1].boundingBox();
  const end = parseFloat(await (await tab.$$('.remote-lanes text.axis'))[1].textContent());
  await tab.mouse.click(label.x + (axisEnd.x + axisEnd.width - label.x) * 0.6, svg.y + svg.height * 0.5);
  await tab.waitForFunction(() => new URL(location.href).searchParams.get('rtake') !== null);
  const at = Number(new URL(tab.url()).searchParams.get('rtake'));
  assert.ok(Math.abs(at - end * 0.6) < end * 0.05, `took over at ${at} ms, 60% of ${end} ms`);
  await tab.waitForFunction(() => /^Node B takes the node over at /.test(document.querySelector('.remote-lanes [aria-live]').textContent));
  assert.equal(await tab.$eval('label.takeover select', (select) => select.value), String(at));
  // The keys: Enter takes over at the playhead, Delete takes the takeover away.
  await seek(tab, 20000);
  await tab.focus('.remote-lanes');
  await tab.keyboard.press('Enter');
  await tab.waitForFunction(() => new URL(location.href).searchParams.get('rtake') === '20');
  assert.match(await tab.textContent('.remote-lanes [aria-live]'), /at 20 ms/);
  await tab.focus('.remote-lanes');
  await tab.keyboard.press('Delete');
  await tab.waitForFunction(() => new URL(location.href).searchParams.get('rtake') === null);
  assert.match(await tab.textContent('.remote-lanes [aria-live]'), /No takeover/);
  await tab.close();
});

test("Part 11: dragging the load on the budget figure, or its arrow keys, recomputes the budget", async () => {
  const tab = await lab.newPage('?part=11', { width: 1366, height: 900 });
  const track = await tab.waitForSelector('.budget-figure .dial[data-dial="load"] .dial-track');
  await track.scrollIntoViewIfNeeded();
  const box = await track.boundingBox();
  const knob = await (await tab.$('.budget-figure .dial-knob')).boundingBox();
  const before = await tab.getAttribute('.budget', 'data-shared-iops');
  await tab.mouse.move(knob.x + knob.width / 2, knob.y + knob.height / 2);
  await tab.mouse.down();
  await tab.mouse.move(box.x + box.width * 0.5, box.y + box.height / 2, { steps: 4 });
  await tab.mouse.move(box.x - 20, box.y + box.height / 2, { steps: 4 });
  await tab.mouse.up();
  await tab.waitForFunction(() => new URL(location.href).searchParams.get('load') === '100');
  await tab.waitForFunction(() => /^At 100 writes\/s: /.test(document.querySelector('.budget-figure .dial [aria-live]').textContent));
  const iops = await tab.getAttribute('.budget', 'data-shared-iops');
  assert.notEqual(iops, before);
  assert.ok((await tab.textContent('.budget-figure .dial [aria-live]')).includes(`${Number(iops).toLocaleString('en-US')} IOPS`));
  await tab.focus('.budget-figure .dial-track');
  await tab.keyboard.press('End');
  await tab.waitForFunction(() => new URL(location.href).searchParams.get('load') === '1000000');
  assert.equal(await tab.getAttribute('.budget-figure .dial-track', 'aria-valuetext'), '1,000,000 writes/s');
  await tab.close();
});

test('on a 390 px phone Parts 11, 13 and 14 fit its width: nothing swipes sideways', async () => {
  const wide = [];
  for (const view of ['?part=11', '?part=13', '?part=14', '?part=14&present=1', '?part=13&rtake=30']) {
    const tab = await lab.newPage(view, { width: 390, height: 844 });
    await tab.waitForTimeout(150);
    const found = await tab.evaluate(() => {
      const out = [];
      if (document.documentElement.scrollWidth > innerWidth) out.push(`the page is ${document.documentElement.scrollWidth} px wide`);
      for (const element of document.querySelectorAll('#chapter .figure, #chapter svg, #chapter table, #chapter .dial, #chapter .controls')) {
        const rect = element.getBoundingClientRect();
        if (rect.width > 0 && (rect.right > innerWidth + 0.5 || rect.left < -0.5)) out.push(`${element.tagName.toLowerCase()}.${element.className.baseVal ?? element.className} spans ${Math.round(rect.left)}-${Math.round(rect.right)}`);
      }
      return out;
    });
    for (const each of found) wide.push(`${view}: ${each}`);
    await screenshot(tab, `phone${view.replace(/[?&=]/g, '-')}`);
    await tab.close();
  }
  assert.deepEqual(wide, []);
});

test("Part 13's totals count one record as one record", async () => {
  const tab = await lab.newPage('?part=13&rtake=30');
  assert.equal(await tab.getAttribute('.remote-totals', 'data-records-acked'), '1');
  assert.match(await tab.textContent('.remote-totals'), /, 1 record acknowledged,/);
  await tab.close();
});

test('Part 13: a commit is one round trip: an append on an idle stream is acknowledged when its PUT returns', async () => {
  const tab = await lab.newPage('?part=13&rlat=25&rrate=1&rcount=3');
  const batches = await tab.$$eval('.remote-lanes g.batch', (gs) => gs.map((g) => ({ ...g.dataset })));
  assert.ok(batches.length > 0);
  for (const batch of batches) {
    assert.ok(!batch.checked, `batch ${batch.batch} waits for a fence read: ${JSON.stringify(batch)}`);
    if (batch.acked && batch.sent) assert.ok(Math.abs(Number(batch.acked) - Number(batch.sent) - 25) < 1e-6, JSON.stringify(batch));
  }
  assert.match(await tab.textContent('code.cli'), /--fence lease/);
  assert.match(await tab.textContent('#chapter'), /acknowledged when that PUT returns: one round trip/);
  await tab.close();
});

test("Part 14's restore before the backup point says the database holds every record", async () => {
  const tab = await lab.newPage('?part=14&rtl=lower');
  await seek(tab, 10000);
  const verdict = await tab.$eval('.timeline-verdict', (el) => ({ ...el.dataset, text: el.textContent }));
  assert.equal(verdict.past, '0');
  assert.match(verdict.text, /every one was committed before the backup point \(20 ms\)/);
  assert.match(verdict.text, /Play past 20 ms/);
  await tab.close();
});

test("Part 14 offers Postgres's latencies, Part 13 the object store's: no S3 class on the Postgres chapter", async () => {
  const options = async (query) => {
    const tab = await lab.newPage(query);
    const values = await tab.$$eval('#chapter select option', (all) => all.map((option) => option.textContent));
    await tab.close();
    return values.join(' | ');
  };
  const postgres = await options('?part=14');
  assert.ok(postgres.includes('a Postgres commit, 1-2 ms') && !postgres.includes('S3 Standard, 20-40 ms') && !postgres.includes('S3 Express One Zone, 2-8 ms'), postgres);
  const s3 = await options('?part=13');
  assert.ok(s3.includes('S3 Standard, 20-40 ms') && !s3.includes('a Postgres commit, 1-2 ms'), s3);
});
