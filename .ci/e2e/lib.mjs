// Shared set-up for the end-to-end tests: serve dist/, launch Debian's Chromium through
// playwright-core with a fresh profile, collect console errors, save screenshots.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { serveDirectory } from './serve.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
export const repoRoot = path.resolve(here, '..', '..');
export const distDir = process.env.WALAB_DIST ?? path.join(repoRoot, 'dist');
export const artifactsDir = process.env.WALAB_ARTIFACTS ?? path.join(repoRoot, '.ci', 'artifacts');
const chromiumPath = process.env.CHROMIUM ?? '/usr/bin/chromium';

export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Starts the static server and the browser; returns helpers and a close(). */
export async function startLab() {
  if (!fs.existsSync(path.join(distDir, 'index.html'))) {
    throw new Error(`${distDir}/index.html is missing: run trunk build --release first`);
  }
  fs.mkdirSync(artifactsDir, { recursive: true });
  const { server, url } = await serveDirectory(distDir, 0);
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'walab-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1280, height: 900 },
  });
  const consoleErrors = [];
  context.on('page', (page) => watchConsole(page, consoleErrors));
  for (const page of context.pages()) watchConsole(page, consoleErrors);
  return {
    url,
    context,
    consoleErrors,
    /** A page on `query`, at `size` ({ width, height }) when given, once the chapter is drawn. */
    async newPage(query = '', size = undefined) {
      const page = await context.newPage();
      if (size) await page.setViewportSize(size);
      await page.goto(url + query);
      await page.waitForSelector('#chapter');
      return page;
    },
    async close() {
      await context.close();
      await new Promise((resolve) => server.close(resolve));
      fs.rmSync(profile, { recursive: true, force: true });
    },
  };
}

function watchConsole(page, sink) {
  page.on('console', (message) => {
    if (message.type() === 'error') sink.push(message.text());
  });
  page.on('pageerror', (error) => sink.push(String(error)));
}

/** The player's time, in nanoseconds, as the page last drew it. */
export const playerNow = async (page) => Number(await page.getAttribute('.player .now', 'data-now-ns'));

/**
 * The bounding box of `selector` once the layout has settled: the same box over three
 * animation frames in a row (a stage lays its figure out again once it has measured its
 * room, and a busy machine draws that late). A pointer aimed before then misses.
 */
export async function settledBox(page, selector) {
  await page.waitForFunction((sel) => {
    const element = document.querySelector(sel);
    if (!element) return false;
    const r = element.getBoundingClientRect();
    const now = `${r.x},${r.y},${r.width},${r.height},${scrollX},${scrollY}`;
    const seen = (window.__settled ??= {});
    const entry = seen[sel];
    if (entry && entry.box === now) entry.frames += 1;
    else seen[sel] = { box: now, frames: 0 };
    return seen[sel].frames >= 3;
  }, selector, { polling: 'raf' });
  return (await page.$(selector)).boundingBox();
}

export async function screenshot(page, name) {
  const file = path.join(artifactsDir, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

/** Runs the native `walab` binary and returns stdout (it must exist: scripts/test builds it). */
export function walab(...args) {
  const bin = process.env.WALAB_BIN ?? path.join(repoRoot, 'target', 'debug', 'walab');
  return execFileSync(bin, args, { encoding: 'utf8' });
}

/** Records a measured figure in .ci/artifacts/metrics.json (merged with earlier ones). */
export function recordMetric(name, value) {
  const file = path.join(artifactsDir, 'metrics.json');
  fs.mkdirSync(artifactsDir, { recursive: true });
  const metrics = fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, 'utf8')) : {};
  metrics[name] = value;
  fs.writeFileSync(file, JSON.stringify(metrics, null, 2) + '\n');
}
