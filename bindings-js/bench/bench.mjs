#!/usr/bin/env node
// Per-call timing of the npm package on one realistic request (reference vector t01: an MCP
// gateway, 4 capacity axes, a provider quota, continuity and safety; it scales up).
//
//   node bench/bench.mjs [VECTOR.json] [--batches N] [--calls N] [--native CRITERION_DIR] [--json FILE]
//
// Each path runs `batches` batches of `calls` calls after a warm-up, interleaved with the others; the table shows the median
// per-call time over batches and the decisions per second it implies. With --native (the
// `target/criterion` folder of `cargo bench -p scale-units-core --bench core` just run, as
// `make bench-js` does), each row also shows its ratio to the native core's median for the same
// request: `native/evaluate_json` for the JSON paths, `native/evaluate_typed` for the typed one.
// With --json, the per-call time of every batch is also written to FILE, for the one table of
// `make bench` (benches/table.py).
// A benchmark, not a test.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { evaluate, evaluateBatchJson, evaluateJson, evaluateTyped, componentDigest } from 'scale-units';
import { completeRequest } from '../bin/complete-request.mjs';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    batches: { type: 'string', default: '31' },
    calls: { type: 'string', default: '1000' },
    native: { type: 'string' },
    json: { type: 'string' },
  },
});
const file = positionals[0] ?? new URL('../../tests/vectors/reference/t01-mcp-target-tracks-deterministically.json', import.meta.url);
const { request } = JSON.parse(readFileSync(file, 'utf8'));
const text = JSON.stringify(request);
const complete = completeRequest(request); // the typed path has no defaults: every field given
const batches = Number(values.batches);
const calls = Number(values.calls);

const BATCH = 1000;
const texts = Array.from({ length: BATCH }, () => text);
// [name, one call, native baseline, decisions per call]
const paths = [
  ['evaluateJson(text) -> text', () => evaluateJson(text), 'evaluate_json', 1],
  ['evaluate(object) -> object', () => evaluate(request), 'evaluate_json', 1],
  ['evaluateTyped(object) -> object', () => evaluateTyped(complete), 'evaluate_typed', 1],
  [`evaluateBatchJson(${BATCH} texts), per decision`, () => evaluateBatchJson(texts), 'evaluate_json', BATCH],
];

/** The native core's median in µs for one criterion benchmark of the `native` group. */
function nativeMedian(name) {
  const file = join(values.native, 'native', name, 'new', 'estimates.json');
  if (!existsSync(file)) throw new Error(`no criterion estimate ${file}: run cargo bench -p scale-units-core --bench core first`);
  return JSON.parse(readFileSync(file, 'utf8')).median.point_estimate / 1000;
}
const native = values.native ? { evaluate_json: nativeMedian('evaluate_json'), evaluate_typed: nativeMedian('evaluate_typed') } : undefined;

// Batches of the paths interleave (A B C A B C …), so a change in machine load hits every path alike.
// A path deciding `per` requests a call runs calls / per times a batch, so every batch is about
// the same number of decisions; times are per decision.
function measureAll(fns) {
  const count = (per) => Math.max(1, Math.round(calls / per));
  for (const [fn, per] of fns) for (let i = 0; i < count(per); i++) fn(); // warm-up
  const perCall = fns.map(() => []);
  for (let b = 0; b < batches; b++) {
    fns.forEach(([fn, per], p) => {
      const n = count(per);
      const start = process.hrtime.bigint();
      for (let i = 0; i < n; i++) fn();
      perCall[p].push(Number(process.hrtime.bigint() - start) / 1000 / (n * per));
    });
  }
  return perCall.map((times) => {
    const sorted = [...times].sort((a, b) => a - b);
    return { median: sorted[sorted.length >> 1], min: sorted[0], max: sorted[sorted.length - 1], times };
  });
}

console.log(`scale-units (Node ${process.version}, ${componentDigest.slice(0, 19)}…), ${batches} batches × ${calls} calls`);
console.log(`machine: ${cpus().length} × ${cpus()[0]?.model.trim()}, load average ${loadavg().map((l) => l.toFixed(2)).join(' ')} at start`);
console.log(`request: ${typeof file === 'string' ? file : file.pathname.split('/').slice(-2).join('/')} (${text.length} bytes of JSON)\n`);
console.log(`| path | median µs/call | min–max µs | decisions/s |${native ? ' native core µs | × native |' : ''}`);
console.log(`|---|---:|---:|---:|${native ? '---:|---:|' : ''}`);
const results = measureAll(paths.map(([, fn, , per]) => [fn, per]));
for (const [p, [name, , nativeName]] of paths.entries()) {
  const { median, min, max } = results[p];
  const ratio = native ? ` \`${nativeName}\` ${native[nativeName].toFixed(2)} | ${(median / native[nativeName]).toFixed(1)} |` : '';
  console.log(`| \`${name}\` | ${median.toFixed(2)} | ${min.toFixed(2)}–${max.toFixed(2)} | ${Math.round(1e6 / median).toLocaleString('en-US')} |${ratio}`);
}
if (values.json) {
  const rows = paths.map(([name, , nativeName], p) => ({ path: name, native: nativeName, per_call_us: results[p].times }));
  writeFileSync(values.json, JSON.stringify({ face: `Node ${process.version} (jco)`, component: componentDigest, rows }, null, 1));
}
