// An axe-core scan of every Part, in the light and the dark theme, finds no serious or
// critical violation. Each scan's violations by impact go to .ci/artifacts/axe.json.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { startLab, artifactsDir } from '../lib.mjs';

const require = createRequire(import.meta.url);
const axePath = require.resolve('axe-core/axe.min.js');

let lab;
before(async () => {
  lab = await startLab();
});
after(async () => {
  await lab?.close();
});

const VIEWS = [
  ...[...Array(15).keys()].map((part) => `?part=${part}`),
  '?part=3&fault=e1&handling=wrong&cut=11.5&seed=0&reveal=1',
  '?part=6&cut=13.5&seed=0&predict=20',
  '?part=7&cut=13.5&seed=0&reveal=1',
  '?part=7&cut=13.5&seed=0&reveal=1&present=1',
];

const results = {};

for (const scheme of ['light', 'dark']) {
  test(`axe finds no serious or critical violation on any Part (${scheme})`, async () => {
    const page = await lab.context.newPage();
    await page.setViewportSize({ width: 1366, height: 768 });
    await page.emulateMedia({ colorScheme: scheme, reducedMotion: 'reduce' });
    const serious = [];
    for (const view of VIEWS) {
      await page.goto(lab.url + view);
      await page.waitForSelector('#chapter');
      await page.waitForTimeout(150);
      await page.addScriptTag({ path: axePath });
      const violations = await page.evaluate(async () => {
        const result = await window.axe.run(document, { resultTypes: ['violations'] });
        return result.violations.map((violation) => ({
          id: violation.id,
          impact: violation.impact,
          nodes: violation.nodes.length,
          example: violation.nodes[0]?.target?.join(' ') ?? '',
          summary: violation.nodes[0]?.failureSummary?.split('\n').slice(0, 2).join(' ') ?? '',
        }));
      });
      const byImpact = {};
      for (const violation of violations) byImpact[violation.impact] = (byImpact[violation.impact] ?? 0) + violation.nodes;
      results[`${scheme} ${view}`] = { byImpact, violations };
      for (const violation of violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')) {
        serious.push(`${view} ${violation.impact} ${violation.id} x${violation.nodes}: ${violation.example} (${violation.summary})`);
      }
    }
    fs.mkdirSync(artifactsDir, { recursive: true });
    fs.writeFileSync(path.join(artifactsDir, 'axe.json'), JSON.stringify(results, null, 2) + '\n');
    assert.deepEqual(serious, []);
    await page.close();
  });
}

test('the browser console stays free of errors', () => {
  assert.deepEqual(lab.consoleErrors, []);
});
