// The lab on every screen: a 390 x 844 phone, a 1024 x 768 projector, a 1366 x 768
// laptop. No Part scrolls sideways; presenter mode fits the projector; the keys work
// wherever focus is; Back returns to the Part before; an answer waits for a prediction;
// the command-line line of a view reproduces it. Screenshots go to .ci/artifacts/screens/.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startLab, artifactsDir, walab } from '../lib.mjs';

const SIZES = [
  { name: '390', width: 390, height: 844 },
  { name: '1024', width: 1024, height: 768 },
  { name: '1366', width: 1366, height: 768 },
];
const PARTS = [...Array(15).keys()];
const screensDir = path.join(artifactsDir, 'screens');
const pad = (part) => String(part).padStart(2, '0');

let lab;
before(async () => {
  lab = await startLab();
  fs.mkdirSync(screensDir, { recursive: true });
});
after(async () => {
  await lab?.close();
});

async function open(query, size = SIZES[2]) {
  const page = await lab.context.newPage();
  await page.setViewportSize({ width: size.width, height: size.height });
  await page.goto(lab.url + query);
  await page.waitForSelector('#chapter');
  return page;
}

async function goto(page, query) {
  await page.goto(lab.url + query);
  await page.waitForSelector('#chapter');
}

const sideways = (page) =>
  page.evaluate(() => ({ scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth }));

async function shoot(page, name) {
  await page.screenshot({ path: path.join(screensDir, `${name}.png`), fullPage: true });
}

for (const size of SIZES) {
  test(`at ${size.width}x${size.height} no Part scrolls sideways`, async () => {
    const page = await open('?part=0', size);
    const wide = [];
    for (const part of PARTS) {
      await goto(page, `?part=${part}`);
      const { scrollWidth, innerWidth } = await sideways(page);
      if (scrollWidth > innerWidth) wide.push(`Part ${part}: ${scrollWidth} > ${innerWidth}`);
      await shoot(page, `part-${pad(part)}-${size.name}`);
    }
    // The Parts with a power cut, with their answers shown, and a link with a very long value.
    for (const query of [
      '?part=3&fault=e1&handling=wrong&cut=11.5&seed=0&reveal=1',
      '?part=6&cut=13.5&seed=0&reveal=1',
      '?part=7&cut=13.5&seed=0&reveal=1',
      `?part=6&seed=${'9'.repeat(3000)}`,
    ]) {
      await goto(page, query);
      const { scrollWidth, innerWidth } = await sideways(page);
      if (scrollWidth > innerWidth) wide.push(`${query.slice(0, 60)}: ${scrollWidth} > ${innerWidth}`);
    }
    await goto(page, '?part=7&cut=13.5&seed=0&reveal=1');
    await shoot(page, `part-07-cut-${size.name}`);
    assert.deepEqual(wide, []);
    await page.close();
  });
}

// The views of every Part a phone shows, with the power cut and the answers shown.
const PHONE_VIEWS = [
  ...PARTS.map((part) => `?part=${part}`),
  '?part=3&fault=e1&handling=wrong&cut=11.5&seed=0&reveal=1',
  '?part=6&cut=13.5&seed=0&reveal=1',
  '?part=7&cut=13.5&seed=0&reveal=1',
];

test('on a phone every control is at least 44 px each way, so a finger can hit it', async () => {
  const page = await open('?part=0', SIZES[0]);
  const small = [];
  const measure = () =>
    page.evaluate(() => {
      const out = [];
      const controls = 'button, select, summary, input, textarea, .part-pager a';
      for (const element of document.querySelectorAll(controls)) {
        if (element.offsetParent === null && getComputedStyle(element).position !== 'fixed') continue;
        // A box in a label is hit through its label.
        const target = element.matches('input') ? (element.closest('label') ?? element) : element;
        const rect = target.getBoundingClientRect();
        if (rect.width <= 1 || rect.height <= 1) continue; // not drawn, or visually hidden
        if (rect.width < 43.5 || rect.height < 43.5) {
          out.push(`${element.tagName.toLowerCase()}.${[...element.classList].join('.')} ${Math.round(rect.width)}x${Math.round(rect.height)}`);
        }
      }
      return out;
    });
  for (const view of PHONE_VIEWS) {
    await goto(page, view);
    for (const found of new Set(await measure())) small.push(`${view}: ${found}`);
  }
  await goto(page, '?part=1');
  await page.click('button.menu-button');
  for (const found of new Set(await measure())) small.push(`menu open: ${found}`);
  assert.deepEqual(small, []);
  await page.close();
});

test('on a phone the Parts are a menu that opens, lists every Part and closes on a choice', async () => {
  const page = await open('?part=1', SIZES[0]);
  assert.equal(await page.isVisible('nav.parts-nav'), false, 'the list is folded away');
  await page.click('button.menu-button');
  assert.equal(await page.getAttribute('button.menu-button', 'aria-expanded'), 'true');
  assert.equal(await page.isVisible('a.nav-part[data-part="12"]'), true);
  await shoot(page, 'menu-open-390');
  await page.click('a.nav-part[data-part="4"]');
  await page.waitForSelector('#chapter[data-part="4"]');
  assert.equal(await page.isVisible('nav.parts-nav'), false, 'choosing a Part closes the menu');
  await page.close();
});

const PRESENTED = [
  '?part=3&fault=e1&handling=wrong&cut=11.5&seed=0&reveal=1&present=1',
  '?part=6&cut=13.5&seed=0&reveal=1&present=1',
  '?part=7&cut=13.5&seed=0&reveal=1&present=1',
];

test('presenter mode at 1024x768: the player, the figure, the power button and the result fit on one screen', async () => {
  const page = await open('?part=0', SIZES[1]);
  const misfits = [];
  for (const query of PRESENTED) {
    await goto(page, query);
    const boxes = await page.evaluate(() => {
      // In a chapter made of scenes, the scene the link opens on (the power cut's).
      const scope = document.querySelector('.scene[data-opens-here]') ?? document;
      const box = (selector) => {
        const element = scope.querySelector(selector);
        if (!element) return null;
        const rect = element.getBoundingClientRect();
        return { top: rect.top, bottom: rect.bottom, height: rect.height };
      };
      return {
        player: box('.player'),
        figure: box('.stage-figure'),
        power: box('.power-button'),
        result: box('.power.report .revealed'),
        prose: [...document.querySelectorAll('main > .prose')].some((element) => element.offsetParent !== null),
        nav: document.querySelector('nav.parts-nav').offsetParent !== null,
        innerHeight: window.innerHeight,
      };
    });
    for (const name of ['player', 'figure', 'power', 'result']) {
      const box = boxes[name];
      if (!box) misfits.push(`${query}: no ${name}`);
      else if (box.top < 0 || box.bottom > boxes.innerHeight) misfits.push(`${query}: ${name} ${box.top}-${box.bottom} outside 0-${boxes.innerHeight}`);
    }
    assert.equal(boxes.prose, false, 'the prose is out of the way');
    assert.equal(boxes.nav, false, 'the navigation is out of the way');
    const fontSize = await page.evaluate(() => parseFloat(getComputedStyle(document.querySelector('main')).fontSize));
    assert.ok(fontSize >= 18, `large type: ${fontSize}px`);
  }
  assert.deepEqual(misfits, []);
  const empty = [];
  for (const part of PARTS) {
    await goto(page, `?part=${part}&present=1`);
    await page.screenshot({ path: path.join(screensDir, `present-part-${pad(part)}-1024.png`) });
    // Something to talk about besides the title and the pager.
    const shown = await page.evaluate(() =>
      [...document.querySelectorAll('main > :not(h2, .lab-status, .part-pager)')]
        .filter((element) => element.offsetParent !== null)
        .reduce((sum, element) => sum + element.getBoundingClientRect().height, 0));
    if (shown < 150) empty.push(`Part ${part}: ${Math.round(shown)} px`);
    // The step's sentence, where the lanes do not need the room.
    const caption = await page.evaluate(() => {
      const player = document.querySelector('main > .player');
      if (!player || player.offsetParent === null || document.querySelector('main > .lanes-figure')) return true;
      const text = player.querySelector('.caption');
      if (!text) return true; // this player tells its steps elsewhere
      return text.offsetParent !== null && text.textContent.trim().length > 10;
    });
    if (!caption) empty.push(`Part ${part}: the step's sentence is hidden`);
  }
  assert.deepEqual(empty, [], 'presenter mode shows each Part more than its title');
  await goto(page, PRESENTED[1]);
  await page.screenshot({ path: path.join(screensDir, 'present-part-06-cut-1024.png') });
  await page.close();
});

test('f switches presenter mode on and off and the link keeps it; n jumps to the next moment worth talking about', async () => {
  const page = await open('?part=6', SIZES[1]);
  await page.keyboard.press('f');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('present') === '1');
  assert.ok(await page.$('.lab.present'));
  const now = async () => Number(await page.getAttribute('.player .now', 'data-now-ns'));
  const steps = async () => Number(await page.getAttribute('.player .mark-count', 'data-mark'));
  await page.keyboard.press('n');
  const firstMoment = await now();
  assert.ok(firstMoment > 0, 'the first batch starts after 0');
  let presses = 1;
  while ((await now()) < 13_000_000 && presses < 60) {
    await page.keyboard.press('n');
    presses += 1;
  }
  const stepped = await steps();
  assert.ok(presses < stepped / 2, `n reached 13 ms in ${presses} presses, the arrows take ${stepped}`);
  await page.keyboard.press('f');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('present') === null);
  assert.equal(await page.$('.lab.present'), null);
  await page.close();
});

test('after dragging the scrubber, the arrows step, space plays, and p cuts the power in Part 6', async () => {
  const page = await open('?part=6', SIZES[1]);
  const scrub = await page.$('.player .scrub');
  await scrub.scrollIntoViewIfNeeded();
  const box = await scrub.boundingBox();
  await page.mouse.move(box.x + box.width * 0.2, box.y + box.height / 2);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * 0.5, box.y + box.height / 2, { steps: 5 });
  await page.mouse.up();
  assert.equal(await page.evaluate(() => document.activeElement.classList.contains('scrub')), true, 'the slider has focus');
  const steps = async () => Number(await page.getAttribute('.player .mark-count', 'data-mark'));
  const now = async () => Number(await page.getAttribute('.player .now', 'data-now-ns'));
  const dragged = await now();
  assert.ok(dragged > 0);
  const before = await steps();
  await page.keyboard.press('ArrowRight');
  assert.equal(await steps(), before + 1, 'ArrowRight steps to the next event, not 0.01 ms along the slider');
  await page.keyboard.press('ArrowLeft');
  await page.keyboard.press('ArrowLeft');
  assert.equal(await steps(), before - 1);
  await page.keyboard.press(' ');
  await page.waitForSelector('.player button.play:has-text("pause")');
  await page.keyboard.press(' ');
  await page.waitForSelector('.player button.play:has-text("play")');
  const at = await now();
  await page.keyboard.press('p');
  await page.waitForSelector('.power.report');
  const cut = Number(new URL(page.url()).searchParams.get('cut'));
  assert.ok(Math.abs(cut * 1e6 - at) < 100_000, `cut at the playhead: ${cut} ms vs ${at} ns`);
  assert.match(await page.textContent('.lab-status'), new RegExp(`The power failed at ${cut} ms\\. \\d+ writes had been acknowledged\\.`));
  await page.keyboard.press('r');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('cut') === null);
  assert.equal(await page.$('.power.report'), null, 'r restores the power');
  await page.close();
});

test('p in Part 2, which has no power button, cuts nothing and says so; the Part keeps playing', async () => {
  const page = await open('?part=2', SIZES[2]);
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('p');
  assert.match(await page.textContent('.lab-status'), /p does nothing here: Part 2 has no power button/);
  assert.equal(new URL(page.url()).searchParams.get('cut'), null);
  const before = Number(await page.getAttribute('.player .mark-count', 'data-mark'));
  await page.keyboard.press('ArrowRight');
  assert.equal(Number(await page.getAttribute('.player .mark-count', 'data-mark')), before + 1, 'the Part still steps');
  await page.keyboard.press('End');
  const states = await page.$$eval('[data-figure="sync-journey"] g.record', (gs) => gs.map((g) => g.dataset.state));
  assert.deepEqual(states, ['media', 'media', 'media', 'media'], 'the run reaches its end with every write on the media');
  await page.close();
});

test('? lists every key in a dialog and Escape closes it', async () => {
  const page = await open('?part=6', SIZES[2]);
  await page.keyboard.press('?');
  await page.waitForSelector('.keys-dialog[role="dialog"]');
  const keys = await page.$$eval('.keys-dialog kbd', (cells) => cells.map((cell) => cell.textContent));
  for (const key of ['space', 'p', 'r', 'n', 'f', '?', 'Home / End', '+ / −']) assert.ok(keys.includes(key), `${key} in ${keys}`);
  assert.equal(await page.evaluate(() => document.activeElement.classList.contains('close-keys')), true, 'the dialog takes focus');
  await shoot(page, 'keys-dialog-1366');
  await page.keyboard.press('Escape');
  await page.waitForSelector('.keys-dialog', { state: 'detached' });
  await page.close();
});

test('Back after Part 2 -> Part 3 returns to Part 2, the title names the Part, a new Part opens at its top', async () => {
  const page = await open('?part=2', SIZES[2]);
  assert.equal(await page.title(), 'Part 2. What fsync guarantees · walab');
  await page.evaluate(() => window.scrollTo(0, 600));
  await page.click('a.nav-part[data-part="3"]');
  await page.waitForSelector('#chapter[data-part="3"]');
  assert.equal(await page.title(), 'Part 3. When fsync fails · walab');
  assert.equal(await page.evaluate(() => window.scrollY), 0, 'the new Part opens at its top');
  assert.equal(await page.isVisible('nav.parts-nav'), true);
  await page.goBack();
  await page.waitForSelector('#chapter[data-part="2"]');
  assert.equal(await page.title(), 'Part 2. What fsync guarantees · walab');
  assert.equal(new URL(page.url()).searchParams.get('part'), '2');
  await page.goForward();
  await page.waitForSelector('#chapter[data-part="3"]');
  // The pager at the foot of the Part.
  await page.click('.part-pager a.next');
  await page.waitForSelector('#chapter[data-part="4"]');
  await page.click('.part-pager a.prev');
  await page.waitForSelector('#chapter[data-part="3"]');
  await page.goBack();
  await page.waitForSelector('#chapter[data-part="4"]');
  await page.close();
});

test('the navigation stays in view and shows the progress kept in local storage', async () => {
  const page = await open('?part=0', SIZES[2]);
  for (const part of [1, 2, 7]) {
    await page.click(`a.nav-part[data-part="${part}"]`);
    await page.waitForSelector(`#chapter[data-part="${part}"]`);
  }
  await page.evaluate(() => window.scrollTo(0, document.body.scrollHeight));
  const navBox = await page.$eval('nav.parts-nav', (nav) => nav.getBoundingClientRect().top);
  assert.ok(navBox >= 0 && navBox < 10, `the navigation is sticky: top ${navBox}`);
  const visited = Number(await page.getAttribute('nav .progress', 'data-visited'));
  assert.ok(visited >= 4, `${visited} Parts visited`);
  await goto(page, '?part=7&cut=13.5&seed=0');
  const predictions = Number(await page.getAttribute('nav .progress', 'data-predictions'));
  await page.fill('.power.report input.guess', '20');
  await page.click('.power.report button.commit-guess');
  await page.waitForFunction((count) => Number(document.querySelector('nav .progress').dataset.predictions) === count + 1, predictions);
  await page.reload();
  await page.waitForSelector('#chapter');
  assert.equal(Number(await page.getAttribute('nav .progress', 'data-predictions')), predictions + 1, 'kept across a reload');
  assert.ok(Number(await page.getAttribute('nav .progress', 'data-visited')) >= visited);
  await goto(page, '?part=12');
  const drills = Number(await page.getAttribute('nav .progress', 'data-drills'));
  await page.check('input[data-drill="0"] >> nth=1');
  await page.waitForFunction((count) => Number(document.querySelector('nav .progress').dataset.drills) === count + 1, drills);
  await page.close();
});

test("Part 7's outcomes stay hidden until a prediction or a reveal, and the link keeps either", async () => {
  const page = await open('?part=7&cut=13.5&seed=0', SIZES[2]);
  for (const answer of ['ol.scan-checks', 'table.states', 'table.units', '.power.report .revealed']) {
    assert.equal(await page.$(answer), null, `${answer} is not on the page before the prediction`);
  }
  assert.ok(await page.$('.answer-pending'));
  await page.fill('.power.report input.guess', '99');
  await page.click('.power.report button.commit-guess');
  assert.match(await page.textContent('.power.report .field-problem'), /give a whole number from 0 to 24/);
  assert.equal(await page.$('table.states'), null, 'a bad guess shows nothing');
  await page.fill('.power.report input.guess', '22');
  await page.press('.power.report input.guess', 'Enter');
  await page.waitForSelector('table.states');
  assert.equal(new URL(page.url()).searchParams.get('predict'), '22');
  assert.ok(await page.$('ol.scan-checks'));
  const verdict = await page.textContent('.power.report .verdict');
  assert.match(verdict, /^You predicted 22/);
  const shared = await open(new URL(page.url()).search, SIZES[2]);
  assert.equal(await shared.textContent('.power.report .verdict'), verdict, 'the shared link opens the same moment');
  assert.ok(await shared.$('table.states'));
  await shared.close();
  const revealed = await open('?part=7&cut=13.5&seed=0&reveal=1', SIZES[2]);
  assert.ok(await revealed.$('table.states'));
  assert.equal(await revealed.$('.power.report .verdict'), null, 'revealed without a prediction: no verdict');
  await revealed.close();
  // A new cut is a new question.
  await page.keyboard.press('Home');
  for (let step = 0; step < 30; step++) await page.keyboard.press('ArrowRight');
  await page.keyboard.press('p');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('predict') === null);
  assert.equal(await page.$('table.states'), null);
  await page.close();
});

test('Parts 3 and 6 hold their answers until a prediction or a reveal', async () => {
  const page = await open('?part=6', SIZES[2]);
  assert.equal(await page.$('table.modes'), null);
  await page.click('.predict button.reveal');
  await page.waitForSelector('table.modes');
  await goto(page, '?part=3&fault=e1');
  assert.equal(await page.$('table.summary[data-acked]'), null);
  await page.fill('.predict input.guess', '10');
  await page.click('.predict button.commit-guess');
  await page.waitForSelector('table.summary[data-acked]');
  await page.close();
});

test('out-of-range link values and typed values are refused with the range they accept', async () => {
  const page = await open('?part=6&cut=500', SIZES[2]);
  assert.match(await page.textContent('.url-problems'), /cut=500: past the end of the run; give 0 to \d+(\.\d+)? ms/);
  assert.equal(await page.$('.power.report'), null, 'no cut off the chart');
  await goto(page, '?part=6&cut=1e9');
  assert.match(await page.textContent('.url-problems'), /cut=1e9: out of range; give 0 to 10000 ms/);
  await goto(page, '?part=2&cut=4');
  assert.match(await page.textContent('.url-problems'), /cut=4: Part 2 has no power button/);
  await goto(page, '?part=6&cut=13.5');
  await page.fill('input.cut-ms', 'soon');
  await page.press('input.cut-ms', 'Enter');
  await page.waitForSelector('.field-problem');
  assert.match(await page.textContent('.field-problem'), /soon: not a number of milliseconds/);
  assert.equal(await page.inputValue('input.cut-ms'), '13.5', 'the field shows the cut in use');
  await page.fill('input.cut-ms', '250');
  await page.press('input.cut-ms', 'Enter');
  await page.waitForFunction(() => /past the end of the run/.test(document.querySelector('.field-problem')?.textContent ?? ''));
  assert.equal(await page.inputValue('input.cut-ms'), '13.5');
  assert.equal(new URL(page.url()).searchParams.get('cut'), '13.5');
  await page.fill('input.cut-ms', '12');
  await page.press('input.cut-ms', 'Enter');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('cut') === '12');
  assert.equal(await page.$('.field-problem'), null);
  await page.close();
});

const list = (text) => (text === '' ? [] : text.split(',').map(Number));

for (const query of [
  '?part=3&fault=e1&handling=wrong&cut=11.5&seed=0',
  '?part=3&fault=e2&cut=12.5&seed=3',
  '?part=6&policy=no-sync&cut=13.5&seed=2',
  '?part=7&cut=13.5&seed=5&unit=512',
]) {
  test(`the command-line line of ${query} reproduces the view`, async () => {
    const page = await open(`${query}&reveal=1`, SIZES[2]);
    const line = (await page.textContent('.power.report code.cli')).trim();
    const [program, ...args] = line.split(/\s+/);
    assert.equal(program, 'walab');
    const answer = JSON.parse(walab(...args, '--json'));
    const revealed = await page.$('.power.report .revealed');
    const shown = {
      acknowledged: list(await revealed.getAttribute('data-acknowledged')),
      lost: list(await revealed.getAttribute('data-lost')),
      recovered: list(await revealed.getAttribute('data-recovered')),
    };
    assert.deepEqual(shown, { acknowledged: answer.acknowledged, lost: answer.lost_acknowledged, recovered: answer.recovered }, line);
    if (query.includes('handling=wrong')) assert.match(line, /--log-sync-fails 11 --on-sync-error retry/);
    await page.close();
  });
}

test('every control shows where focus is', async () => {
  const page = await open('?part=6&cut=13.5', SIZES[2]);
  const unfocused = [];
  for (let tab = 0; tab < 40; tab++) {
    await page.keyboard.press('Tab');
    const outline = await page.evaluate(() => {
      const element = document.activeElement;
      const style = getComputedStyle(element);
      return { name: `${element.tagName}.${element.className}`, style: style.outlineStyle, width: parseFloat(style.outlineWidth) };
    });
    if (outline.style === 'none' || outline.width < 2) unfocused.push(outline.name);
  }
  assert.deepEqual(unfocused, []);
  await page.close();
});

test('the browser console stays free of errors', () => {
  assert.deepEqual(lab.consoleErrors, []);
});
