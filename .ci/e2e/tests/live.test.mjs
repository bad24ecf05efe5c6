// Part 13 watching a real `walab serve --page dist`: the page is loaded from the server,
// appends are driven over HTTP, and the live view's counts rise, batches are drawn as lanes
// and an upload's committed objects appear. Screenshots at 390, 1024 and 1366 px go to
// .ci/artifacts/live-*.png. Without a server, Part 13 says how to start one.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import readline from 'node:readline';
import { chromium } from 'playwright-core';
import { CHROMIUM_ARGS, artifactsDir, distDir, repoRoot, startLab } from '../lib.mjs';

const bin = process.env.WALAB_BIN ?? path.join(repoRoot, 'target', 'debug', 'walab');
let server;
let base;
let walDir;
let context;
let profile;
const consoleErrors = [];

before(async () => {
  walDir = fs.mkdtempSync(path.join(os.tmpdir(), 'walab-live-'));
  server = spawn(bin, ['serve', '--wal', `file://${walDir}`, '--listen', '127.0.0.1:0', '--page', distDir,
    '--block-bytes', '4096', '--block-ms', '50'], { stdio: ['ignore', 'ignore', 'pipe'] });
  base = await new Promise((resolve, reject) => {
    const lines = readline.createInterface({ input: server.stderr });
    lines.on('line', (line) => {
      const match = line.match(/listening on (http:\/\/\S+)/);
      if (match) resolve(match[1]);
    });
    server.once('exit', (code) => reject(new Error(`walab serve exited with ${code}`)));
  });
  fs.mkdirSync(artifactsDir, { recursive: true });
  profile = fs.mkdtempSync(path.join(os.tmpdir(), 'walab-chromium-'));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', headless: true, args: CHROMIUM_ARGS,
    viewport: { width: 1366, height: 768 },
  });
  context.on('page', (page) => {
    page.on('console', (message) => { if (message.type() === 'error') consoleErrors.push(message.text()); });
    page.on('pageerror', (error) => consoleErrors.push(String(error)));
  });
});

after(async () => {
  await context?.close();
  server?.kill('SIGKILL');
  if (profile) fs.rmSync(profile, { recursive: true, force: true });
  if (walDir) fs.rmSync(walDir, { recursive: true, force: true });
});

// Three streams (created once: a create with no body writes no WAL record), appended to
// in turn with the Durable Streams protocol.
let created = false;
async function append(count) {
  if (!created) {
    for (let s = 0; s < 3; s++) {
      const response = await fetch(`${base}/v1/stream/s${s}`, { method: 'PUT' });
      assert.equal(response.status, 201);
    }
    created = true;
  }
  for (let i = 0; i < count; i++) {
    const response = await fetch(`${base}/v1/stream/s${i % 3}`, {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream' },
      body: 'x'.repeat(300),
    });
    assert.equal(response.status, 204);
  }
}

const counts = (page) => page.$eval('.live-counts', (p) => Object.fromEntries(Object.entries(p.dataset).map(([k, v]) => [k, Number(v)])));

test('Part 13 served by walab serve draws its appends, batches and uploads as they happen', async () => {
  const page = await context.newPage();
  await page.goto(`${base}/?part=13`);
  await page.waitForSelector('.live-server[data-connection="live"]');
  await page.waitForSelector('.live-counts');
  const before = await counts(page);
  assert.equal(before.acked, 0, 'nothing appended yet');
  await append(60);
  await page.waitForFunction(() => Number(document.querySelector('.live-counts')?.dataset.acked) >= 60, null, { timeout: 30000 });
  await page.waitForFunction(() => Number(document.querySelector('.live-counts')?.dataset.commits) >= 1, null, { timeout: 30000 });
  await page.waitForSelector('.live-blocks .upload-object.committed', { timeout: 30000 });
  const after = await counts(page);
  assert.ok(after.batches >= 1 && after.batches <= 60, `batches ${after.batches}`);
  assert.ok(after.blocks >= 1 && after.uploads >= 1 && after.commits >= 1, JSON.stringify(after));
  assert.equal(after.dropped, 0);
  // The batches are drawn as lanes, acknowledged, and the steps say what happened.
  const lanes = await page.$$eval('.live-server .remote-lanes g.batch', (groups) => groups.map((g) => g.dataset.state));
  assert.ok(lanes.length >= 1 && lanes.includes('acked'), JSON.stringify(lanes));
  const steps = await page.$$eval('.live-steps li', (items) => items.map((li) => li.textContent));
  assert.ok(steps.length >= 1 && steps.every((step) => /^at [\d.]+ ms: /.test(step)), JSON.stringify(steps));
  const text = await page.textContent('.live-counts');
  assert.match(text, /appends acknowledged/);
  // More appends: the counts keep rising.
  await append(20);
  await page.waitForFunction((n) => Number(document.querySelector('.live-counts')?.dataset.acked) >= n, after.acked + 20, { timeout: 30000 });
  for (const width of [390, 1024, 1366]) {
    await page.setViewportSize({ width, height: 900 });
    await page.waitForTimeout(400);
    const { scrollWidth, innerWidth } = await page.evaluate(() => ({ scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth }));
    assert.ok(scrollWidth <= innerWidth, `at ${width} px the page scrolls sideways: ${scrollWidth} > ${innerWidth}`);
    const section = await page.$('.live-server');
    await section.scrollIntoViewIfNeeded();
    await section.screenshot({ path: path.join(artifactsDir, `live-${width}.png`) });
  }
  await page.close();
  assert.deepEqual(consoleErrors, []);
});

test('Part 13 without a server says how to start one and draws nothing', async () => {
  const lab = await startLab();
  try {
    const page = await lab.newPage('?part=13');
    await page.waitForSelector('.live-server[data-connection="none"]');
    assert.match(await page.textContent('.live-none'), /walab serve --wal file:\/\/\/tmp\/x --page dist/);
    assert.equal(await page.$('.live-counts'), null);
    assert.equal(await page.$('.live-server .remote-lanes'), null);
    assert.deepEqual(lab.consoleErrors, []);
  } finally {
    await lab.close();
  }
});

test('Part 13 served elsewhere watches the server its link names, and refuses an address that is not one', async () => {
  await append(3);
  const lab = await startLab();
  try {
    const page = await lab.newPage(`?part=13&server=${encodeURIComponent(base)}`);
    await page.waitForSelector('.live-server[data-connection="live"]');
    assert.match(await page.textContent('.live-status'), new RegExp(`Watching ${base}/trace live`));
    // The page rewrites its address from what it read: the server stays in the link.
    assert.match(await page.evaluate(() => location.search), new RegExp(`server=${base.replace(/[/.]/g, '\\$&')}`));
    const requested = [];
    const hostile = await lab.newPage('?part=13&server=javascript:alert(1)');
    hostile.on('request', (request) => requested.push(request.url()));
    await hostile.waitForSelector('.live-server[data-connection="none"]');
    assert.match(await hostile.textContent('.url-problems'), /server.*not a server address; give http:\/\/HOST:PORT/s);
    assert.ok(!requested.some((url) => url.startsWith('javascript:')), requested.join(' '));
    assert.deepEqual(lab.consoleErrors, []);
  } finally {
    await lab.close();
  }
});
