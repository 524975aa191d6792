// The page's pure helpers, in Node: wire paths <-> editor lines, JSON/YAML edits, syntax errors in
// words, the slider grids, the contract diff, the share link, the documents rendered for the site.
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { renderDocs, slugify } from '../scripts/docs.mjs';
import { nowWindow, stepThrough } from '../src/controls.js';
import { diffValues } from '../src/diff.js';
import { DOC_PAGES } from '../src/docs.js';
import { resourceName, scaleUnitYaml } from '../src/scaleunit.js';
import { decodeState, encodeState } from '../src/share.js';
import { editText, jsonSyntaxError, locate, parseText, pathSegments, pathString, placeWords } from '../src/wire.js';

test('paths: the SPEC spelling, JSON Pointers and back', () => {
  assert.deepEqual(pathSegments('capacities[2].reserved'), ['capacities', 2, 'reserved']);
  assert.deepEqual(pathSegments('contract.quotas[0]'), ['contract', 'quotas', 0]);
  assert.deepEqual(pathSegments('/contract/policy/target'), ['contract', 'policy', 'target']);
  assert.deepEqual(pathSegments('/capacities/1/axis'), ['capacities', 1, 'axis']);
  assert.deepEqual(pathSegments(''), []);
  assert.equal(pathString(['capacities', 2, 'reserved']), 'capacities[2].reserved');
});

test('locate: the line of a field, or of the object that lacks it', () => {
  const json = '{\n  "a": 1,\n  "list": [\n    {"x": 1},\n    {\n      "y": 2\n    }\n  ]\n}\n';
  assert.equal(locate(json, ['a']), 2);
  assert.equal(locate(json, ['list', 1]), 5);
  assert.equal(locate(json, ['list', 1, 'y']), 6);
  assert.equal(locate(json, ['list', 1, 'missing']), 5);
  const yaml = '# c\na: 1\nlist:\n  - x: 1\n  - y: 2\n';
  assert.equal(locate(yaml, ['list', 1, 'y']), 5);
});

test('parseText: syntax errors carry a line; YAML refuses duplicate keys', () => {
  assert.ok(parseText('{\n  "a": 1,\n  "b": ,\n}', 'json').error);
  assert.ok(parseText('a: 1\na: 2\n', 'yaml').error);
  assert.deepEqual(parseText('a: 1\n', 'yaml').value, { a: 1 });
});

test('editText: a YAML edit keeps its comments; undefined deletes', () => {
  const yaml = '# the queue\nsignal:\n  value: 1 # per replica\n';
  assert.equal(editText(yaml, 'yaml', ['signal', 'value'], 7), '# the queue\nsignal:\n  value: 7 # per replica\n');
  assert.equal(editText('{"a": 1, "b": 2}', 'json', ['b'], undefined), '{\n  "a": 1\n}\n');
  assert.equal(editText('{"signal": {"value": 1}}', 'json', ['signal'], null), '{\n  "signal": null\n}\n');
});

test('share: a state survives the fragment', async () => {
  const state = { contract: { text: '{"é": "☃"}', format: 'json' }, request: { text: 'now: x\n'.repeat(500), format: 'yaml' }, sim: { trace: 'spike' } };
  const fragment = await encodeState(state);
  assert.match(fragment, /^s1\.[A-Za-z0-9_-]+$/);
  assert.ok(fragment.length < 400, `compressed: ${fragment.length} characters`);
  assert.deepEqual(await decodeState(fragment), state);
  await assert.rejects(decodeState('nonsense'));
});

test('jsonSyntaxError: the component parser\'s message in words, with its line and column', () => {
  const at = (what) => jsonSyntaxError(`request is not valid JSON: ${what} at line 61 column 3`);
  assert.deepEqual(at('trailing comma'), { line: 61, column: 3, message: 'trailing comma' });
  assert.equal(at('EOF while parsing an object').message, 'the text ends before the object is closed (a `}` is missing)');
  assert.equal(at('expected `,` or `}`').message, 'a `,` or a closing `}` is missing');
  assert.equal(at('key must be a string').message, 'a key must be a string in double quotes');
  assert.equal(at('control character (\\u0000-\\u001F) found while parsing a string').message, 'a raw control character (a tab or line break) inside a string');
  assert.equal(at('duplicate key `target`').message, 'duplicate key `target`', 'a message without words of its own passes as is');
  assert.equal(jsonSyntaxError('contract.policy.target must be an integer'), null);
  assert.equal(placeWords('contract', 61, 3), 'contract, line 61, column 3');
  assert.equal(placeWords('request', 4), 'request, line 4');
  assert.equal(placeWords('request'), 'request');
  // YAML errors carry their column too.
  const yaml = parseText('a: 1\na: 2\n', 'yaml').error;
  assert.equal(yaml.line, 2);
  assert.equal(typeof yaml.column, 'number');
});

test('stepThrough: the slider grid holds 0 and the value', () => {
  assert.equal(stepThrough(640, 3), 2);
  assert.equal(stepThrough(640, 4), 4);
  assert.equal(stepThrough(641, 3), 1);
  assert.equal(stepThrough(0, 7), 7);
  assert.equal(stepThrough(5, 0), 1);
  for (const value of [1, 97, 640, 730, 1500, 99_991]) {
    for (const ideal of [1, 2, 3, 5, 8, 13]) {
      const step = stepThrough(value, ideal);
      assert.ok(step >= 1 && step <= Math.max(1, ideal) && value % step === 0, `${value}, ${ideal} -> ${step}`);
    }
  }
});

test('nowWindow: `now` is a whole number of steps from the start, and the window covers the range', () => {
  const now = Date.parse('2026-08-19T12:00:00Z');
  // The case: a window starting 2 273 s before now, with 5 s steps.
  const [lo, hi] = nowWindow(now, now - 2_273_000, now + 600_000, 5000);
  assert.equal((now - lo) % 5000, 0);
  assert.ok(lo <= now - 2_273_000 && lo > now - 2_273_000 - 5000);
  assert.ok(hi >= now + 600_000 && (hi - now) % 5000 === 0);
  const odd = now + 1500; // a `now` with milliseconds
  const [lo2] = nowWindow(odd, odd - 12_345, odd + 1, 5000);
  assert.equal((odd - lo2) % 5000, 0);
  assert.deepEqual(nowWindow(now, now + 10_000, now - 10_000, 5000), [now, now], 'a range that leaves now out is widened to it');
});

test('diffValues: one row per changed leaf, by path, in document order', () => {
  const a = { unit_ref: 'u', policy: { target: 100, scale_up_step: 2 }, capacities: [{ axis: 'cpu', per_replica: 1 }], quotas: [] };
  const b = { unit_ref: 'u', policy: { target: 50, scale_up_step: 2, max: 3 }, capacities: [{ axis: 'cpu', per_replica: 2 }, { axis: 'mem', per_replica: 1 }], quotas: [] };
  assert.deepEqual(diffValues(a, b), [
    { path: 'policy.target', kind: 'changed', a: 100, b: 50 },
    { path: 'policy.max', kind: 'added', a: undefined, b: 3 },
    { path: 'capacities[0].per_replica', kind: 'changed', a: 1, b: 2 },
    { path: 'capacities[1]', kind: 'added', a: undefined, b: { axis: 'mem', per_replica: 1 } },
  ]);
  assert.deepEqual(diffValues(b, a).map((r) => [r.path, r.kind]), [
    ['policy.target', 'changed'],
    ['policy.max', 'removed'],
    ['capacities[0].per_replica', 'changed'],
    ['capacities[1]', 'removed'],
  ]);
  assert.deepEqual(diffValues(a, structuredClone(a)), []);
  assert.deepEqual(diffValues({ x: { y: 1 } }, { x: [1] }), [{ path: 'x', kind: 'changed', a: { y: 1 }, b: [1] }]);
  assert.deepEqual(diffValues({ x: null }, { x: 0 }), [{ path: 'x', kind: 'changed', a: null, b: 0 }]);
  assert.deepEqual(diffValues(1, 2), [{ path: '', kind: 'changed', a: 1, b: 2 }]);
});

test('share: a link of an older shape decodes as it was written', async () => {
  const old = { example: 'api-gateway', contract: { text: '{}', format: 'json' }, request: { text: '{}', format: 'json' }, sim: { trace: 'spike' } };
  const state = await decodeState(await encodeState(old));
  assert.deepEqual(state, old);
  assert.equal(state.compare, undefined, 'the page gives a missing field its default');
});

test('docs: headings get GitHub anchors, every reason an anchor in the algorithm, links stay in the site', () => {
  assert.equal(slugify('7. The algorithm'), '7-the-algorithm');
  assert.equal(slugify('4.1 `ScalePolicy`'), '41-scalepolicy');
  assert.equal(slugify('Scale-unit evaluation — specification, schema "1"'), 'scale-unit-evaluation--specification-schema-1');

  const root = mkdtempSync(join(tmpdir(), 'playground-docs-'));
  for (const page of DOC_PAGES) {
    mkdirSync(join(root, page.source, '..'), { recursive: true });
    writeFileSync(join(root, page.source), `# ${page.label}\n\nSee [the SPEC](${page.id === 'spec' ? 'SPEC.md' : page.source.includes('/') ? '../docs/SPEC.md' : 'docs/SPEC.md'}#7-the-algorithm), [a file](core/src/lib.rs) and [the web](https://example.org/).\n`);
  }
  writeFileSync(
    join(root, 'docs/SPEC.md'),
    '# Spec\n\n## 6. Before\n\n`cooldown` here is not the place.\n\n## 7. The algorithm\n\n| a | b |\n|---|---|\n| x | `signal_missing` |\n\nThen `cooldown`, and [README](../README.md).\n\n```\nreturn hold, reasons [at_target]\n```\n\n## 8. After\n\n`noisy_neighbor`\n',
  );
  const reasons = ['signal_missing', 'cooldown', 'at_target', 'noisy_neighbor'];
  const pages = Object.fromEntries(renderDocs(root, { reasons }).map((p) => [p.fileName, p.html]));
  const spec = pages['docs/spec.html'];
  assert.match(spec, /<h2 id="7-the-algorithm"/);
  assert.match(spec, /<span id="algorithm"><\/span>/);
  assert.match(spec, /<td><code id="reason-signal_missing">signal_missing<\/code><\/td>/);
  assert.match(spec, /Then <code id="reason-cooldown">cooldown<\/code>/, 'the algorithm section, not §6');
  assert.match(spec, /<pre><code id="reason-at_target">/, 'a reason named only in a code block');
  assert.match(spec, /<span id="reason-noisy_neighbor"><\/span>/, 'a reason the section never names: its start');
  assert.match(spec, /<div class="table-scroll"><table>/);
  assert.match(spec, /<a href="readme.html">README<\/a>/, 'a listed document becomes its page');
  const readme = pages['docs/readme.html'];
  assert.match(readme, /<a href="spec.html#7-the-algorithm">the SPEC<\/a>/);
  assert.match(readme, /<span class="repo-path" title="in the repository: core\/src\/lib.rs">a file<\/span>/, 'no dead link without a source URL');
  assert.match(readme, /<a href="https:\/\/example.org\/">the web<\/a>/);
  assert.match(readme, /<a href="..\/index.html">← Playground<\/a>/);
  const withBase = renderDocs(root, { reasons, sourceBase: 'https://code.example/tree/abc/' }).find((p) => p.fileName === 'docs/readme.html').html;
  assert.match(withBase, /<a href="https:\/\/code.example\/tree\/abc\/core\/src\/lib.rs">a file<\/a>/);

  writeFileSync(join(root, 'docs/SPEC.md'), '# Spec\n\n## 7. Something else\n');
  assert.throws(() => renderDocs(root, { reasons }), /no "The algorithm" section/);
});

test('scaleUnitYaml: the contract inside a ScaleUnit, named after its unit_ref, strings kept strings', () => {
  const contract = { schema_version: '1', unit_ref: 'unit:Media/Transcode_Pool', surface: 'media_pool', version: 1, continuity: { mode: 'stateless', external_store_ref: 'on' } };
  const text = scaleUnitYaml(contract);
  assert.match(text, /^# A ScaleUnit /);
  const resource = parseText(text, 'yaml').value;
  assert.deepEqual(resource, {
    apiVersion: 'scale-units.dev/v1alpha1',
    kind: 'ScaleUnit',
    metadata: { name: 'transcode-pool' },
    spec: { scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'transcode-pool' }, mode: 'Enforce', contract },
  });
  // YAML 1.1 readers (the API server's) keep "1" and "on" strings.
  assert.match(text, /schema_version: "1"/);
  assert.match(text, /external_store_ref: "on"/);
  assert.equal(scaleUnitYaml(contract, { mode: 'Monitor' }).includes('mode: Monitor'), true);
  assert.equal(resourceName({ surface: 'rlm_pool' }), 'rlm-pool');
  assert.equal(resourceName({ unit_ref: 'unit:x/---' }), 'scale-unit');
  assert.equal(resourceName({ unit_ref: `unit:x/${'a'.repeat(80)}` }).length, 63);
});
