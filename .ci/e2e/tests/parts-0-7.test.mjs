// Parts 0 to 7, acted on in their figures: Part 4's power cut is drawn in its columns and
// pulled by clicking a step; Part 5's steady load is dragged on its figure; on a phone the
// figures of Parts 1, 2 and 4 are laid out for its width instead of swiping sideways.
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

/** For each append column: the 1-based step the cut line follows, and where it is drawn. */
const cutLines = (page) =>
  page.$$eval('.append-column', (columns) =>
    columns.map((column) => {
      const steps = [...column.querySelectorAll('li.step')];
      const after = steps.findIndex((step) => step.classList.contains('cut-after'));
      const line = column.querySelector('.cut-line');
      if (after < 0 || !line) return { after: null };
      const box = line.getBoundingClientRect();
      const above = steps[after].getBoundingClientRect();
      const below = steps[after + 1]?.getBoundingClientRect();
      return { after: after + 1, below: box.top >= above.top + above.height / 2 && (!below || box.bottom <= below.top + below.height / 2) };
    }));

test("Part 4's cut is drawn in both columns, between the last step done and the first one never run", async () => {
  const page = await open('?part=4&cut=4', 1366);
  await page.waitForSelector('.power.report');
  assert.deepEqual(await cutLines(page), [{ after: 4, below: true }, { after: 4, below: true }]);
  await screenshot(page, 'part-04-cut-line-1366');
  await page.goto(lab.url + '?part=4');
  await page.waitForSelector('.append-column');
  assert.deepEqual(await cutLines(page), [{ after: null }, { after: null }], 'no cut, no line');
  await page.close();
});

test("Part 4's cut line sweeps in when the power is pulled, and appears at once with reduced motion", async () => {
  const sweeps = async (motion) => {
    const page = await open('?part=4', 1024);
    await page.emulateMedia({ reducedMotion: motion });
    await page.click('.append-column:nth-child(1) li.step:nth-child(3) button');
    await page.waitForSelector('.cut-line');
    const names = await page.evaluate(() => document.getAnimations()
      .filter((animation) => animation.effect?.target?.classList?.contains('cut-line'))
      .map((animation) => animation.animationName));
    await page.close();
    return names;
  };
  assert.deepEqual(await sweeps('no-preference'), ['cut-falls', 'cut-falls']);
  assert.deepEqual(await sweeps('reduce'), []);
});

test('Part 4: clicking a step, or Enter on it, pulls the power after that step', async () => {
  const page = await open('?part=4', 1024);
  await page.click('.append-column:nth-child(2) li.step:nth-child(6) button');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('cut') === '6');
  assert.equal(await page.getAttribute('.power.report', 'data-cut-steps'), '6');
  assert.equal(await page.getAttribute('.power.report', 'aria-live'), 'polite');
  assert.match(await page.textContent('.wrong-outcome'), /the client got OK and the write is gone/);
  assert.deepEqual((await cutLines(page)).map((column) => column.after), [6, 6]);
  // The keyboard: each step is a button, and Enter on it cuts after it.
  await page.focus('.append-column:nth-child(1) li.step:nth-child(2) button');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('cut') === '2');
  assert.match(await page.textContent('.power.report .headline'), /after 2 steps/);
  await page.close();
});

test("Part 5: dragging the load on the steady run's figure, or its arrow keys, runs it again at that load", async () => {
  const page = await open('?part=5&scenario=steady', 1366);
  const track = await page.waitForSelector('.stage-figure .dial[data-dial="load"] .dial-track');
  const box = await track.boundingBox();
  const knob = await (await page.$('.stage-figure .dial-knob')).boundingBox();
  await page.mouse.move(knob.x + knob.width / 2, knob.y + knob.height / 2);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * 0.4, box.y + box.height / 2, { steps: 4 });
  await page.mouse.move(box.x - 20, box.y + box.height / 2, { steps: 4 });
  await page.mouse.up();
  await page.waitForFunction(() => new URL(location.href).searchParams.get('load') === '100');
  await page.waitForFunction(() => /At 100 writes\/s: /.test(document.querySelector('.stage-figure .dial [aria-live]').textContent));
  const said = await page.textContent('.stage-figure .dial [aria-live]');
  // The dial says the steady state's writes per sync, or the whole run's when the run is
  // too short to have a steady state: the outcome shows the same number.
  const perSync = await page.evaluate(() => {
    const steady = document.querySelector('table.summary.steady-state');
    return steady ? steady.dataset.writesPerSync : document.querySelector('.steady-whole').dataset.batchMean;
  });
  assert.ok(said.includes(`${perSync} writes per sync`), `"${said}" names the run's ${perSync} writes per sync`);
  // The keys: ten presses within one task, faster than the figure redraws (each stop reruns
  // the simulator), still move ten stops; then a real key press moves one more.
  await page.focus('.stage-figure .dial-track');
  await page.evaluate(() => {
    const track = document.querySelector('.stage-figure .dial-track');
    for (let press = 0; press < 10; press++) track.dispatchEvent(new KeyboardEvent('keydown', { key: 'ArrowRight', bubbles: true, cancelable: true }));
  });
  await page.waitForFunction(() => new URL(location.href).searchParams.get('load') === '200000');
  assert.equal(await page.getAttribute('.stage-figure .dial-track', 'aria-valuetext'), '200,000 writes/s');
  await page.waitForFunction(() => /At 200,000 writes\/s: /.test(document.querySelector('.stage-figure .dial [aria-live]').textContent));
  assert.ok(Number(await page.getAttribute('.steady-whole', 'data-batch-mean')) > 50, 'batches grow with the load');
  await page.keyboard.press('ArrowRight');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('load') === '500000');
  await page.close();
});

test('on a phone the figures of Parts 1, 2 and 4 fit its width: nothing in a stage swipes sideways', async () => {
  const page = await open('?part=1', 390, 844);
  const wide = [];
  for (const view of ['?part=1', '?part=1&failure=process', '?part=2', '?part=4', '?part=4&cut=5']) {
    await page.goto(lab.url + view);
    await page.waitForSelector('.scene .stage-figure');
    await page.waitForTimeout(200);
    const found = await page.evaluate(() => [...document.querySelectorAll('.stage-figure, .stage-figure *')]
      .filter((element) => element.scrollWidth > element.clientWidth + 1 && ['auto', 'scroll'].includes(getComputedStyle(element).overflowX))
      .map((element) => `${element.tagName.toLowerCase()}.${[...element.classList].join('.')} is ${element.scrollWidth} px in ${element.clientWidth}`));
    for (const each of found) wide.push(`${view}: ${each}`);
    await screenshot(page, `phone-${view.slice(1).replace(/[&=]/g, '-')}`);
  }
  assert.deepEqual(wide, []);
  await page.close();
});

test("on a phone Part 5's steady-load figure stacks its three places and draws the canvas at its shown size", async () => {
  const page = await open('?part=5&scenario=steady&load=5000', 390, 844);
  await page.waitForSelector('[data-figure="steady-queue"] .place.acked');
  // Every place (queue, sync, acknowledged) lies inside the screen, none cut off to its right.
  const places = await page.$$eval('[data-figure="steady-queue"] .place', (all) => all.map((place) => {
    const box = place.getBoundingClientRect();
    return { name: place.getAttribute('class'), left: box.left, right: box.right, width: box.width };
  }));
  assert.equal(places.length, 3);
  for (const place of places) {
    assert.ok(place.left >= 0 && place.right <= 390, `${place.name}: ${place.left}..${place.right} on a 390 px screen`);
    assert.ok(place.width >= 300, `${place.name} is drawn ${place.width} px wide, too small to read`);
  }
  assert.equal(await page.$eval('[data-figure="steady-queue"]', (f) => f.scrollWidth <= f.clientWidth), true, 'the figure swipes sideways');
  // The canvas is drawn at its shown width, so its 14 px labels are 14 px on the screen.
  const canvas = await page.$eval('canvas.steady-canvas', (c) => ({ drawn: c.width / devicePixelRatio, shown: c.clientWidth }));
  assert.ok(Math.abs(canvas.drawn - canvas.shown) <= 2, `canvas drawn ${canvas.drawn} px wide, shown ${canvas.shown} px`);
  await screenshot(page, 'part5-steady-phone');
  await page.close();
});
