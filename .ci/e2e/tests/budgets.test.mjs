// Measured budgets: first render on localhost and the frame time while the steady-load
// scenario plays. The figures go to .ci/artifacts/metrics.json and the log; the tests
// check that the measurement happened, not how fast this machine is.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startLab, recordMetric } from '../lib.mjs';

let lab;
before(async () => {
  lab = await startLab();
});
after(async () => {
  await lab?.close();
});

test('first render: navigation start to the chapter heading', async () => {
  const samples = [];
  for (let run = 0; run < 3; run++) {
    const page = await lab.context.newPage();
    await page.goto(lab.url + '?part=5');
    await page.waitForSelector('#chapter h2');
    samples.push(await page.evaluate(() => performance.now()));
    await page.close();
  }
  samples.sort((a, b) => a - b);
  const median = Math.round(samples[1]);
  recordMetric('first_render_ms_median_of_3', median);
  console.log(`budget: first render ${median} ms (median of 3, budget 1000 ms)`);
  assert.equal(samples.length, 3);
});

test('frame time while the steady load plays', async () => {
  const page = await lab.newPage('?part=5&scenario=steady&load=100000');
  await page.selectOption('.player .speed select', { index: 2 });
  await page.click('.player button.play');
  const frames = await page.evaluate(
    () =>
      new Promise((resolve) => {
        const times = [];
        const step = (t) => {
          times.push(t);
          if (times.length < 181) requestAnimationFrame(step);
          else resolve(times);
        };
        requestAnimationFrame(step);
      }),
  );
  const gaps = frames.slice(1).map((t, i) => t - frames[i]).sort((a, b) => a - b);
  const mean = gaps.reduce((a, b) => a + b, 0) / gaps.length;
  const p95 = gaps[Math.floor(gaps.length * 0.95)];
  const fps = 1000 / mean;
  recordMetric('steady_play_frame_ms_mean', Number(mean.toFixed(2)));
  recordMetric('steady_play_frame_ms_p95', Number(p95.toFixed(2)));
  recordMetric('steady_play_fps', Number(fps.toFixed(1)));
  console.log(`budget: steady-load play ${fps.toFixed(1)} fps, frame mean ${mean.toFixed(2)} ms, p95 ${p95.toFixed(2)} ms (budget 60 fps)`);
  const now = Number(await page.getAttribute('.player .now', 'data-now-ns'));
  assert.ok(now > 0, 'the playhead moved while frames were measured');
  assert.equal(gaps.length, 180);
  await page.close();
});
