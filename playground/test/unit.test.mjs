// The page's pure helpers, in Node: wire paths <-> editor lines, JSON/YAML edits, the share link.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decodeState, encodeState } from '../src/share.js';
import { editText, locate, parseText, pathSegments, pathString } from '../src/wire.js';

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
