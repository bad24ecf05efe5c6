// Reads a vitest JSON report of the conformance suite and decides: it fails (exit 1)
// when a test failed that the Node reference server passes, that is one not listed in
// reference-failures.txt, or when the suite ran no test. With --strict (walab serve,
// which passes them all) any failed test fails it. It prints the counts, each failure by
// name, and which of the reference server's failures this server passes.
//
//   node check-results.mjs REPORT.json LABEL [--strict]
import { readFileSync } from 'node:fs';

const [reportPath, label = 'server', mode] = process.argv.slice(2);
const strict = mode === '--strict';
if (!reportPath) {
  console.error('usage: node check-results.mjs REPORT.json LABEL [--strict]');
  process.exit(2);
}
const report = JSON.parse(readFileSync(reportPath, 'utf8'));
const referenceFailures = new Set(
  readFileSync(new URL('reference-failures.txt', import.meta.url), 'utf8')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#')),
);

const outcomes = new Map();
for (const file of report.testResults ?? []) {
  for (const test of file.assertionResults ?? []) {
    outcomes.set(test.fullName, test.status);
  }
}
const names = (status) => [...outcomes].filter(([, s]) => s === status).map(([name]) => name);
const passed = names('passed');
const failed = names('failed');
const skipped = [...outcomes].filter(([, s]) => s === 'pending' || s === 'skipped' || s === 'todo').length;

const unexpected = failed.filter((name) => strict || !referenceFailures.has(name));
const fixed = [...referenceFailures].filter((name) => outcomes.get(name) === 'passed');
const missing = [...referenceFailures].filter((name) => !outcomes.has(name));

console.log(`conformance on ${label}: ${passed.length} passed, ${failed.length} failed, ${skipped} skipped of ${outcomes.size} tests`);
for (const name of failed) {
  console.log(`  failed${referenceFailures.has(name) ? ' (fails on the reference server too)' : ''}: ${name}`);
}
for (const name of fixed) {
  console.log(`  passes here, fails on the reference server: ${name}`);
}
for (const name of missing) {
  console.log(`  not in this run (renamed or removed?): ${name}`);
}
if (outcomes.size === 0) {
  console.log(`conformance on ${label}: the suite ran no test`);
  process.exit(1);
}
if (unexpected.length > 0) {
  console.log(
    strict
      ? `conformance on ${label}: ${unexpected.length} test(s) failed, and walab serve must pass every one`
      : `conformance on ${label}: ${unexpected.length} test(s) that the reference server passes failed`,
  );
  process.exit(1);
}
