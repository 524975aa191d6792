// The object path of the conformance runner reads a vector exactly (issue 24): an integer past
// 2^53 reaches the facade as the BigInt the vector wrote, not as the nearest double JSON.parse
// gives (9007199254740993 would become …992 and the error message would name the wrong number).
// The vector is built here from an example request; tests/vectors is not touched.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import * as api from 'scale-units';
import { checkVector, exactRequest, loadVector } from '../bin/vectors.mjs';

const BIG = '9007199254740993'; // 2^53 + 1: no double holds it
const example = readFileSync(new URL('../../examples/api-gateway/request.json', import.meta.url), 'utf8');
const requestText = example.replace('"target": 100', `"target": ${BIG}`);
const dir = mkdtempSync(join(tmpdir(), 'scale-units-exact-'));
const file = join(dir, 'target-past-2-53.json');
// Written as text: the literal stays exactly as the vector says it.
writeFileSync(
  file,
  `{"id": "exact/target-past-2-53", "description": "target 2^53 + 1 is out of bounds; the message names it exactly.",
 "request": ${requestText},
 "expect": {"error": {"code": "invalid_field", "message_contains": "not ${BIG}"}}}\n`,
);
after(() => rmSync(dir, { recursive: true, force: true }));

test('the vector carries the integer past 2^53 (a double would round it)', () => {
  assert.notEqual(requestText, example);
  assert.notEqual(String(Number(BIG)), BIG);
  const loaded = loadVector(file);
  assert.equal(loaded.objectPath, true, 'the object path runs this vector');
  assert.equal(exactRequest(loaded).contract.policy.target, BigInt(BIG));
});

test('the object path is judged on what the vector says: it passes on both paths', () => {
  assert.deepEqual(checkVector(api, loadVector(file)), []);
  // What the object path saw: the exact number in the message, as the JSON path.
  try {
    api.evaluate(exactRequest(loadVector(file)));
    assert.fail('an out-of-bounds target is refused');
  } catch (caught) {
    assert.equal(caught.code, 'invalid_field');
    assert.match(caught.message, new RegExp(`not ${BIG}$`));
  }
});

test('bin/conformance.mjs passes the vector', () => {
  const runner = fileURLToPath(new URL('../bin/conformance.mjs', import.meta.url));
  const run = spawnSync(process.execPath, [runner, dir], { encoding: 'utf8', env: { ...process.env, SCALE_UNITS_VECTORS: '' } });
  assert.equal(run.stdout.trim(), '1 passed, 0 failed', run.stdout + run.stderr);
  assert.equal(run.status, 0);
});
