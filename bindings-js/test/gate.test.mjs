// The WIT 0.3.0 functions on the facade: the gate (JSON, object and typed), the external scaler's
// reading, observation validation, the derivation's words and the limits; and a component of an
// older WIT minor, which still loads and refuses what it lacks with UnsupportedError. (Every gate
// vector runs in vectors.test.mjs.)
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { test } from 'node:test';
import { transpileBytes } from '@bytecodealliance/jco-transpile';
import * as api from 'scale-units';
import { completeRequest } from '../bin/complete-request.mjs';
import { createApi } from '../src/facade.js';
import { TRANSPILE_OPTIONS } from '../scripts/transpile-options.mjs';

const { ScaleUnitsError, UnsupportedError } = api;
const vector = JSON.parse(
  await readFile(new URL('../../tests/vectors/reference/t01-mcp-target-tracks-deterministically.json', import.meta.url), 'utf8'),
);
const request = () => structuredClone(vector.request);
const decision = vector.expect.decision; // scale_up 1 -> 3

function assertError(fn, code, path) {
  assert.throws(fn, (error) => {
    assert.ok(error instanceof ScaleUnitsError, `not a ScaleUnitsError: ${error}`);
    assert.equal(error.code, code);
    if (path !== undefined) assert.equal(error.path, path);
    return true;
  });
}

test('gate, gateJson and gateTyped give one verdict', () => {
  const change = { to_replicas: 3, kind: 'scale' };
  const verdict = api.gate(request(), change);
  assert.equal(verdict.allowed, true);
  assert.equal(verdict.reason, 'within_decision');
  assert.equal(verdict.from_replicas, 1);
  assert.equal(verdict.to_replicas, 3);
  assert.deepEqual(verdict.decision, decision);
  assert.equal(verdict.error, null);
  assert.deepEqual(JSON.parse(api.gateJson(JSON.stringify(request()), JSON.stringify(change))), verdict);
  assert.deepEqual(api.gateTyped(completeRequest(request()), change), verdict);
  // `kind` defaults to `scale` on the JSON paths only: the typed record has no defaults.
  assert.deepEqual(api.gate(request(), { to_replicas: 3 }), verdict);
  assertError(() => api.gateTyped(completeRequest(request()), { to_replicas: 3 }), 'invalid_field', 'change.kind');
});

test('a change past the decision is denied, break glass allows it', () => {
  const denied = api.gate(request(), { to_replicas: 5 });
  assert.equal(denied.allowed, false);
  assert.equal(denied.reason, 'past_desired');
  assert.match(denied.message, /1 -> 5/);
  const glass = api.gateTyped(completeRequest(request()), { to_replicas: 5, kind: 'break_glass' });
  assert.equal(glass.allowed, true);
  assert.equal(glass.reason, 'break_glass');
});

test('a request that cannot be evaluated is a denial, a change that cannot be read an error', () => {
  const bad = request();
  bad.contract.policy.min_replicas = 9; // above max_replicas 8
  const verdict = api.gate(bad, { to_replicas: 3 });
  assert.equal(verdict.allowed, false);
  assert.equal(verdict.reason, 'request_invalid');
  assert.equal(verdict.from_replicas, null);
  assert.equal(verdict.decision, null);
  assert.equal(verdict.error.code, 'invalid_policy');
  assert.equal(api.gateTyped(completeRequest(bad), { to_replicas: 3, kind: 'scale' }).reason, 'request_invalid');
  assertError(() => api.gate(request(), { to_replicas: 10001 }), 'invalid_field');
  assertError(() => api.gateTyped(completeRequest(request()), { to_replicas: 10001, kind: 'scale' }), 'invalid_field');
  assertError(() => api.gateTyped(completeRequest(request()), { to_replicas: 3, kind: 'break-glass' }), 'invalid_field', 'change.kind');
  assertError(() => api.gate(request(), { to_replicas: 1.5 }), 'invalid_field', 'to_replicas');
  assertError(() => api.gateJson(JSON.stringify(request()), '{"to_replicas": 3'), 'invalid_json');
  assert.throws(() => api.gateJson(JSON.stringify(request()), 3), TypeError);
  // The evaluator keeps serving.
  assert.equal(api.gate(request(), { to_replicas: 3 }).allowed, true);
});

test('scalerReading: the decision as the metric, active; no decision is active without a metric', () => {
  const reading = api.scalerReading(request());
  assert.deepEqual(reading, { metric_value: 3, active: true, decision, error: null });
  assert.deepEqual(JSON.parse(api.scalerReadingJson(JSON.stringify(request()))), reading);
  const none = api.scalerReading({});
  assert.equal(none.metric_value, null);
  assert.equal(none.active, true);
  assert.equal(none.error.code, 'invalid_field');
  assert.equal(JSON.parse(api.scalerReadingJson('{')).error.code, 'invalid_json');
});

test('validateObservations checks the evidence without the bounds of current_replicas', () => {
  assert.equal(api.validateObservations(request()), undefined);
  const far = request();
  far.current_replicas = 10001;
  assertError(() => api.evaluate(far), 'replicas_out_of_bounds');
  assert.equal(api.validateObservations(far), undefined);
  assert.equal(api.validateObservationsJson(JSON.stringify(far)), undefined);
  const stale = request();
  stale.capacities[0].reserved = stale.capacities[0].allocatable + 1;
  const thrown = (fn) => {
    try {
      fn();
    } catch (error) {
      return error;
    }
    return assert.fail('did not throw');
  };
  const expected = thrown(() => api.evaluate(stale));
  const actual = thrown(() => api.validateObservations(stale));
  assert.ok(actual instanceof ScaleUnitsError);
  assert.deepEqual([actual.code, actual.path, actual.message], [expected.code, expected.path, expected.message]);
  assertError(() => api.validateObservationsJson('[]'), 'invalid_field');
});

test("derivationText is the core's words for the derivation, one step a line", () => {
  const text = api.derivationText(request());
  assert.equal(api.derivationText(JSON.stringify(request())), text);
  const lines = text.trimEnd().split('\n');
  assert.equal(lines.at(-1), 'decision: scale_up 1 -> 3 (target_tracking)');
  assert.ok(lines.includes('target: ceil(250 / 100) = 3'), text);
  // One evidence line per evidence entry of the decision.
  assert.equal(lines.filter((l) => l.startsWith('evidence ')).length, decision.evidence.length);
  const bad = request();
  bad.contract.policy.min_replicas = 9;
  assertError(() => api.derivationText(bad), 'invalid_policy');
  assertError(() => api.derivationText('{'), 'invalid_json');
});

test('limits are the bounds the evaluator enforces', () => {
  const limits = api.limits();
  assert.deepEqual(limits, JSON.parse(api.limitsJson()));
  assert.deepEqual(Object.keys(limits).sort(), ['max_amount', 'max_observations', 'max_replicas', 'max_seconds']);
  // The component enforces them: one past max_replicas is refused, max_replicas itself is not.
  assertError(() => api.gate(request(), { to_replicas: limits.max_replicas + 1 }), 'invalid_field');
  assert.equal(api.gate(request(), { to_replicas: limits.max_replicas }).reason, 'past_desired');
});

test('a component of WIT 0.1.0 still loads; what it lacks is an UnsupportedError', async () => {
  const fixture = await readFile(new URL('../../tests/fixtures/scale_units_evaluator-wit-0.1.0.wasm', import.meta.url));
  const { files } = await transpileBytes(fixture, { ...TRANSPILE_OPTIONS });
  const dir = await mkdtemp(join(tmpdir(), 'scale-units-wit-0.1-'));
  try {
    for (const [name, bytes] of Object.entries(files)) if (!name.includes('/')) await writeFile(join(dir, name), bytes);
    const { instantiate } = await import(pathToFileURL(join(dir, 'evaluator.js')).href);
    const root = await instantiate(async (name) => WebAssembly.compile(await readFile(join(dir, name))), {});
    const old = createApi(root.evaluator);
    assert.equal(old.info().wit_version, '0.1.0');
    assert.deepEqual(old.evaluate(request()), decision);
    const calls = {
      'gate-json': () => old.gate(request(), { to_replicas: 3 }),
      gate: () => old.gateTyped(completeRequest(request()), { to_replicas: 3, kind: 'scale' }),
      'scaler-reading-json': () => old.scalerReading(request()),
      'validate-observations-json': () => old.validateObservations(request()),
      'derivation-text': () => old.derivationText(request()),
      'limits-json': () => old.limits(),
      'derive-json': () => old.derive(request()),
      'diagnose-request-json': () => old.diagnose(request()),
    };
    for (const [fn, call] of Object.entries(calls)) {
      assert.throws(call, (error) => {
        assert.ok(error instanceof UnsupportedError, `${fn}: ${error}`);
        assert.ok(!(error instanceof ScaleUnitsError));
        assert.deepEqual([error.code, error.function, error.witVersion], ['unsupported', fn, '0.1.0']);
        return true;
      });
    }
    // Still serving after every refusal.
    assert.deepEqual(old.evaluate(request()), decision);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
