// Parts 11, 13 and 14 as a newcomer meets them: Part 14's restore tells one story at every
// playhead (its words and its numbers come from the same counts of the core).
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
