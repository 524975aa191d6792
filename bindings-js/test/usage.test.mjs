// The package as its users meet it: `require` fails with words (ES module only), a Date stands for
// a time, a wrong argument gets the error the README names, and the conformance command reads
// $SCALE_UNITS_VECTORS as the Rust and Python ones do.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import * as api from 'scale-units';
import { completeRequest } from '../bin/complete-request.mjs';

const vector = JSON.parse(
  readFileSync(new URL('../../tests/vectors/reference/t01-mcp-target-tracks-deterministically.json', import.meta.url), 'utf8'),
);

test('require() fails with words: the package is an ES module only, and why', () => {
  const require = createRequire(import.meta.url);
  assert.throws(
    () => require('scale-units'),
    (error) => {
      assert.equal(error.code, 'ERR_REQUIRE_ESM');
      assert.match(error.message, /ES module only/);
      assert.match(error.message, /top-level await/);
      assert.match(error.message, /await import\('scale-units'\)/);
      return true;
    },
  );
  // Dynamic import from CommonJS works, as the message says.
  const cjs = spawnSync(process.execPath, ['-e', "import('scale-units').then((m) => console.log(typeof m.evaluate))"], {
    cwd: fileURLToPath(new URL('..', import.meta.url)),
    encoding: 'utf8',
  });
  assert.equal(cjs.stdout.trim(), 'function', cjs.stderr);
});

test('a Date stands for a time, written as its ISO text; an invalid Date is refused at its path', () => {
  const request = structuredClone(vector.request);
  const expected = api.evaluate(request);
  for (const object of [request, request.signal]) {
    for (const key of ['now', 'observed_at', 'expires_at']) if (key in object) object[key] = new Date(object[key]);
  }
  assert.ok(request.now instanceof Date);
  assert.deepEqual(api.evaluate(request), expected);
  // The typed path too.
  const typed = completeRequest(structuredClone(vector.request));
  typed.now = new Date(typed.now);
  assert.deepEqual(api.evaluateTyped(typed), expected);
  request.now = new Date('not a time');
  assert.throws(
    () => api.evaluate(request),
    (error) => error instanceof api.ScaleUnitsError && error.code === 'invalid_field' && error.path === 'now',
  );
});

test('a wrong argument: the object API sends it to the core (ScaleUnitsError), the text API wants a string (TypeError)', () => {
  for (const value of ['{}', 42, null, undefined, []]) {
    assert.throws(
      () => api.evaluate(value),
      (error) => error instanceof api.ScaleUnitsError && error.code === 'invalid_field',
      `evaluate(${String(value)})`,
    );
  }
  for (const fn of [api.evaluateJson, api.validateContractJson, api.simulateJson]) {
    assert.throws(() => fn({}), TypeError);
  }
  assert.throws(() => api.evaluateBatch('x'), TypeError);
  assert.throws(
    () => api.explain(42),
    (error) => error instanceof api.ScaleUnitsError && /^decision must be an object/.test(error.message),
  );
});

test('bin/conformance.mjs runs the folders of $SCALE_UNITS_VECTORS, with or without DIR arguments', () => {
  const dir = mkdtempSync(join(tmpdir(), 'scale-units-js-vectors-'));
  try {
    const failing = { id: 'env/fails', description: 'expects the wrong code', request_json: '{', expect: { error: { code: 'invalid_field' } } };
    writeFileSync(join(dir, 'fails.json'), JSON.stringify(failing));
    const bin = fileURLToPath(new URL('../bin/conformance.mjs', import.meta.url));
    const run = (args) =>
      spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8', env: { ...process.env, SCALE_UNITS_VECTORS: `${dir}:` } });
    const alone = run([]);
    assert.equal(alone.status, 1, alone.stderr);
    assert.match(alone.stdout, /FAIL env\/fails/);
    assert.equal(alone.stdout.trim().split('\n').pop(), '0 passed, 1 failed');
    const both = run([fileURLToPath(new URL('../../tests/vectors/reference', import.meta.url))]);
    assert.equal(both.stdout.trim().split('\n').pop(), '12 passed, 1 failed');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
