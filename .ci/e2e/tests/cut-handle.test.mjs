// The power cut, acted on in the figure (web/src/parts/cut_handle.rs): drag the cut line
// along the lanes' time axis, press on the axis, move it with the keyboard and cut with
// Enter, pull the plug drawn on the figure. Each changes the run and the link, and each
// is said to a screen reader.
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
  const page = await lab.context.newPage();
  await page.setViewportSize({ width, height });
  await page.goto(lab.url + query);
  await page.waitForSelector('.scene[data-scene="power-cut"] .cut-grip, .scene[data-scene="torn"] .cut-grip');
  return page;
}

const cutInLink = (page) => new URL(page.url()).searchParams.get('cut');

/** The lanes' time axis on screen: x of 0 ms and of the run's end. */
async function axis(page) {
  return page.evaluate(() => {
    const track = document.querySelector('.cut-track');
    const svg = track.parentElement.querySelector('svg.lanes');
    const ticks = [...svg.querySelectorAll('.tick line')].map((line) => line.getBoundingClientRect().left);
    const grip = track.querySelector('.cut-grip');
    return { first: Math.min(...ticks), grip: grip.getBoundingClientRect(), end: Number(grip.getAttribute('aria-valuemax')) };
  });
}

for (const [part, width] of [[6, 1366], [3, 1024], [7, 390]]) {
  test(`Part ${part} at ${width} px: dragging the cut line cuts the power where it is dropped`, async () => {
    const page = await open(`?part=${part}`, width, width === 390 ? 844 : 768);
    const grip = await page.$('.cut-grip');
    await grip.scrollIntoViewIfNeeded();
    // Before a cut the knob offers one, as a question; it does not look like a cut.
    assert.match(await page.textContent('.cut-knob'), /^cut here\? [\d.]+ ms$/);
    const { grip: box } = await axis(page);
    const track = await page.$eval('.cut-track', (element) => {
      const rect = element.getBoundingClientRect();
      return { left: rect.left, width: rect.width };
    });
    const from = { x: box.left + box.width / 2, y: box.top + 14 };
    // Drop it 60% of the way along the figure.
    const to = track.left + track.width * 0.6;
    await page.mouse.move(from.x, from.y);
    await page.mouse.down();
    for (let step = 1; step <= 8; step++) await page.mouse.move(from.x + ((to - from.x) * step) / 8, from.y);
    // While it moves, the knob says the moment and nothing is cut yet.
    assert.equal(await page.getAttribute('.cut-track', 'data-state'), 'moving');
    assert.equal(cutInLink(page), null, 'no cut before the drop');
    const previewed = Number(await page.getAttribute('.cut-track', 'data-at-ns'));
    await page.mouse.up();
    await page.waitForFunction(() => new URL(location.href).searchParams.get('cut') !== null);
    const cut = Number(cutInLink(page));
    assert.equal(await page.textContent('.cut-knob'), `⚡ power off at ${cutInLink(page)} ms`);
    assert.ok(Math.abs(cut * 1e6 - previewed) <= 150_000, `dropped at ${cut} ms, previewed ${previewed / 1e6} ms`);
    await page.waitForSelector('.power.report .headline');
    assert.match(await page.textContent('.power.report .headline'), new RegExp(`The power failed at ${cut.toString().replace('.', '\\.')} ms`));
    assert.match(await page.textContent('.lab-status'), /The power failed at/);
    // The line stays where it was dropped, as the cut.
    assert.equal(await page.getAttribute('.cut-track', 'data-state'), 'cut');
    assert.equal(Number(await page.getAttribute('.cut-track', 'data-at-ns')), Math.round(cut * 1e6));
    await screenshot(page, `cut-drag-part-${part}-${width}`);
    await page.close();
  });
}

test('Part 6: a press on the time axis moves the cut line there', async () => {
  const page = await open('?part=6&cut=4');
  // The run's whole axis stays drawn after a cut, so the line can move past it.
  assert.ok(Number(await page.getAttribute('.cut-grip', 'aria-valuemax')) > 15, 'the axis runs to the end of the run');
  await page.$eval('.cut-ruler', (element) => element.scrollIntoView({ block: 'center' }));
  const ruler = await page.$eval('.cut-ruler', (element) => {
    const rect = element.getBoundingClientRect();
    return { top: rect.top, height: rect.height, left: rect.left, width: rect.width };
  });
  assert.ok(ruler.height >= 12, `the axis band is ${ruler.height} px high`);
  const { first } = await axis(page);
  await page.mouse.click(first + (ruler.left + ruler.width - first) * 0.75, ruler.top + ruler.height / 2);
  await page.waitForFunction(() => new URL(location.href).searchParams.get('cut') !== '4');
  const cut = Number(cutInLink(page));
  assert.ok(cut > 8, `pressed three quarters along: cut at ${cut} ms`);
  await page.close();
});

test('the keyboard: arrows step the cut line between events, Shift by 1 ms, Enter cuts, Escape puts it back', async () => {
  const page = await open('?part=6');
  await page.focus('.cut-grip');
  const at = async () => Number(await page.getAttribute('.cut-track', 'data-at-ns'));
  const start = await at();
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('ArrowRight');
  const stepped = await at();
  assert.ok(stepped > start, 'the arrows move the line');
  // The player followed the line (the power is on) and did not step on its own as well.
  assert.equal(Number(await page.getAttribute('.player .now', 'data-now-ns')), stepped);
  await page.keyboard.press('Shift+ArrowRight');
  assert.equal(await at(), stepped + 1_000_000, 'Shift+→ is 1 ms');
  assert.match(await page.getAttribute('.cut-grip', 'aria-valuetext'), /Enter pulls the power here/);
  assert.match(await page.textContent('.cut-track [aria-live]'), /ms/);
  assert.equal(cutInLink(page), null, 'moving is not cutting');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('cut') !== null);
  const cut = Number(cutInLink(page));
  assert.ok(Math.abs(cut * 1e6 - (stepped + 1_000_000)) <= 50_000, `Enter cut at ${cut} ms`);
  assert.match(await page.textContent('.lab-status'), new RegExp(`The power failed at ${String(cut).replace('.', '\\.')} ms`));
  // Moving on from the cut, then Escape: the cut stays where it was.
  await page.focus('.cut-grip');
  await page.keyboard.press('Shift+ArrowLeft');
  assert.equal(await page.getAttribute('.cut-track', 'data-state'), 'moving');
  await page.keyboard.press('Escape');
  assert.equal(await page.getAttribute('.cut-track', 'data-state'), 'cut');
  assert.equal(Number(cutInLink(page)), cut);
  await page.close();
});

test('the plug on the figure pulls the power at the playhead and plugs it back in', async () => {
  const page = await open('?part=7');
  await page.keyboard.press('End');
  for (let step = 0; step < 5; step++) await page.keyboard.press('ArrowLeft');
  const now = Number(await page.getAttribute('.player .now', 'data-now-ns'));
  const plug = await page.$('.lanes-figure button.plug');
  assert.match(await plug.getAttribute('aria-label'), /pull the plug/);
  await plug.click();
  await page.waitForFunction(() => new URL(location.href).searchParams.get('cut') !== null);
  assert.equal(Number(cutInLink(page)) * 1e6, Math.floor(now / 100_000) * 100_000);
  assert.equal(await page.getAttribute('.lanes-figure button.plug', 'data-state'), 'pulled');
  await page.click('.lanes-figure button.plug');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('cut') === null);
  assert.match(await page.textContent('.lab-status'), /power is back on/);
  await page.close();
});

test("in presenter mode the power button's (p) stays on its line", async () => {
  const page = await open('?part=6&present=1', 1024, 768);
  const lines = await page.$eval('.power-button', (button) => {
    const range = document.createRange();
    range.selectNodeContents(button);
    return new Set([...range.getClientRects()].map((rect) => Math.round(rect.top))).size;
  });
  assert.equal(lines, 1);
  await page.close();
});
