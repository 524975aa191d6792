// The facade's own behaviour: number handling, errors, the typed path's conversion, the other
// functions, and the browser entry.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import * as api from 'scale-units';
import { SCHEMA } from '../generated/schema.js';
import { completeRequest } from '../bin/complete-request.mjs';

const { ScaleUnitsError } = api;
const vector = JSON.parse(
  await readFile(new URL('../../tests/vectors/reference/t01-mcp-target-tracks-deterministically.json', import.meta.url), 'utf8'),
);
const request = () => structuredClone(vector.request);
const typedRequest = () => completeRequest(request());

function assertFieldError(fn, path) {
  assert.throws(fn, (error) => {
    assert.ok(error instanceof ScaleUnitsError, `not a ScaleUnitsError: ${error}`);
    assert.equal(error.name, 'ScaleUnitsError');
    assert.equal(error.code, 'invalid_field');
    assert.equal(error.path, path);
    return true;
  });
}

test('evaluate, evaluateTyped and evaluateJson give the reference decision', () => {
  assert.deepEqual(api.evaluate(request()), vector.expect.decision);
  assert.deepEqual(api.evaluateTyped(typedRequest()), vector.expect.decision);
  assert.deepEqual(JSON.parse(api.evaluateJson(JSON.stringify(vector.request))), vector.expect.decision);
});

test('evaluateBatch and evaluateBatchJson: one entry per request, in order, each error in its place', () => {
  const text = JSON.stringify(vector.request);
  const low = request();
  low.current_replicas = 0; // below the contract's floor
  const results = api.evaluateBatchJson([text, '{', 'ab\uD800', JSON.stringify(low), text]);
  assert.equal(results.length, 5);
  assert.equal(results[0], api.evaluateJson(text));
  assert.equal(results[4], results[0]);
  for (const [index, code] of [[1, 'invalid_json'], [2, 'invalid_json'], [3, 'replicas_out_of_bounds']]) {
    assert.ok(results[index] instanceof ScaleUnitsError, `${index}: ${results[index]}`);
    assert.equal(results[index].code, code);
  }
  assert.throws(() => api.evaluateJson(JSON.stringify(low)), (e) => e.code === results[3].code && e.message === results[3].message);

  const bad = request();
  bad.capacities[2].reserved = 1.5;
  const decided = api.evaluateBatch([request(), bad, request()]);
  assert.deepEqual(decided[0], vector.expect.decision);
  assert.deepEqual(decided[2], vector.expect.decision);
  assert.ok(decided[1] instanceof ScaleUnitsError && decided[1].path === 'capacities[2].reserved', `${decided[1]}`);

  assert.deepEqual(api.evaluateBatchJson([]), []);
  assert.throws(() => api.evaluateBatchJson(text), TypeError);
  assert.throws(() => api.evaluateBatchJson([text, ' '.repeat(api.MAX_REQUEST_BYTES + 1)]), api.RequestTooLargeError);
});

for (const [name, evaluate, make] of [
  ['evaluate', api.evaluate, request],
  ['evaluateTyped', api.evaluateTyped, typedRequest],
]) {
  test(`${name}: non-integers are refused with the path, never rounded`, () => {
    for (const bad of [1.5, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, -0.5]) {
      const r = make();
      r.capacities[2].reserved = bad;
      assertFieldError(() => evaluate(r), 'capacities[2].reserved');
    }
  });

  test(`${name}: integers past 2^53 get the core's answer, as on every other face`, () => {
    // A value past 2^53 goes to the component as its exact digits; every SPEC bound is far below,
    // so the code is the core's whatever the number rounded.
    for (const big of [2 ** 53, 2 ** 60, -(2 ** 53)]) {
      const r = make();
      r.capacities[2].reserved = big;
      assertFieldError(() => evaluate(r), 'capacities[2].reserved');
    }
    const negative = make();
    negative.signal.value = -1000000000000000000;
    assert.throws(() => evaluate(negative), (e) => {
      assert.ok(e instanceof ScaleUnitsError, `not a ScaleUnitsError: ${e}`);
      assert.equal(e.code, 'invalid_observation');
      assert.match(e.message, /scale signal values must be finite non-negative integers/);
      return true;
    });
    const replicas = make();
    replicas.current_replicas = 2 ** 53 + 2;
    assert.throws(() => evaluate(replicas), (e) => e instanceof ScaleUnitsError && e.code === 'replicas_out_of_bounds');
    const r = make();
    r.contract.policy.target = 1e21;
    assertFieldError(() => evaluate(r), 'contract.policy.target');
  });

  test(`${name}: BigInt is accepted where the WIT takes u64/s64`, () => {
    const r = make();
    r.current_replicas = 1n;
    r.signal.value = 250n;
    r.contract.policy.target = 100n;
    r.capacities[0].allocatable = 10000n;
    assert.deepEqual(evaluate(r), vector.expect.decision);
    r.signal.value = 2n ** 70n; // exact, and out of bounds: the component's bound check, not a wrap
    assert.throws(() => evaluate(r), (e) => e instanceof ScaleUnitsError && e.code === 'invalid_field' && e.path.startsWith('signal'));
  });

  test(`${name}: component errors arrive as ScaleUnitsError with the wire code and path`, () => {
    const r = make();
    r.current_replicas = 0;
    assert.throws(() => evaluate(r), (e) => e instanceof ScaleUnitsError && e.code === 'replicas_out_of_bounds' && e.path === 'current_replicas');
    const s = make();
    s.signal.source_ref = 'bearer:abc';
    assert.throws(() => evaluate(s), (e) => e instanceof ScaleUnitsError && e.code === 'credential_in_ref');
  });
}

test('evaluateTyped: wrong types, unknown fields, WIT spellings and a missing field are invalid_field', () => {
  const cases = [
    [(r) => (r.contract.policy.allow_scale_to_zero = 0), 'contract.policy.allow_scale_to_zero'],
    [(r) => (r.contract.surface = 'mcp-gateway'), 'contract.surface'],
    [(r) => (r.contract.surface = 'no_such_surface'), 'contract.surface'],
    [(r) => (r.capacities[1].colour = 'red'), 'capacities[1].colour'],
    [(r) => delete r.contract.policy.drain_seconds, 'contract.policy.drain_seconds'],
    [(r) => (r.capacities[0].used = -1), 'capacities[0].used'],
    [(r) => (r.current_replicas = 2n ** 63n), 'current_replicas'],
    [(r) => (r.quotas = null), 'quotas'],
    [(r) => (r.now = 17), 'now'],
    [(r) => (r.contract.contract_id = 'x\uD800'), 'contract.contract_id'],
  ];
  for (const [mutate, path] of cases) {
    const r = typedRequest();
    mutate(r);
    assertFieldError(() => api.evaluateTyped(r), path);
  }
});

test('evaluate refuses values JSON cannot carry exactly', () => {
  // (A Date is a time's text: test/usage.test.mjs.)
  const r = request();
  r.now = new Map([['at', '2026-08-19T12:00:00Z']]);
  assertFieldError(() => api.evaluate(r), 'now');
  const c = request();
  c.contract.self = c.contract;
  assertFieldError(() => api.evaluate(c), 'contract.self');
  assertFieldError(() => api.evaluate(() => 1), '');
});

test('evaluateJson passes text through and reports invalid_json', () => {
  assert.throws(() => api.evaluateJson('{'), (e) => e instanceof ScaleUnitsError && e.code === 'invalid_json');
  assert.throws(() => api.evaluateJson({}), TypeError);
  // A lone surrogate has no UTF-8 form: refused, never replaced by U+FFFD on the way in.
  const text = JSON.stringify(vector.request).replace('unit:mcp-gateway', 'unit:mcp-gateway\uD800');
  assert.throws(() => api.evaluateJson(text), (e) => e instanceof ScaleUnitsError && e.code === 'invalid_json');
  assert.throws(() => api.validateContractJson('{"unit_ref": "\uDC00"}'), (e) => e instanceof ScaleUnitsError && e.code === 'invalid_json');
});

test('validateContract returns the identity and reports contract errors', () => {
  assert.deepEqual(api.validateContract(vector.request.contract), {
    contract_id: vector.expect.decision.contract_id,
    contract_digest: vector.expect.contract_digest,
  });
  assert.deepEqual(api.validateContractJson(JSON.stringify(vector.request.contract)).contract_id, vector.expect.decision.contract_id);
  const bad = structuredClone(vector.request.contract);
  bad.policy.min_replicas = 9;
  assert.throws(() => api.validateContract(bad), (e) => e instanceof ScaleUnitsError && e.code === 'invalid_policy');
});

test('info, surfaceProfile and explain speak snake_case', () => {
  assert.deepEqual(api.info(), { evaluator_version: '0.1.0', schema_version: '1', wit_version: '0.3.0' });
  const profile = api.surfaceProfile('mcp_gateway');
  assert.equal(profile.surface, 'mcp_gateway');
  assert.deepEqual(profile.provider_quota_axes, ['provider_global_quota']);
  assertFieldError(() => api.surfaceProfile('mcp-gateway'), 'surface');
  const explanation = api.explain(vector.expect.decision);
  assert.deepEqual(explanation.reasons.map((r) => r.reason), ['target_tracking']);
});

test('the s64 fields of the facade are those of the WIT', async () => {
  const wit = await readFile(new URL('../../wit/evaluator.wit', import.meta.url), 'utf8');
  const signed = [];
  let record;
  for (const line of wit.split('\n')) {
    const r = /^\s*record ([\w-]+) \{/.exec(line);
    if (r) record = r[1].replace(/(^|-)(\w)/g, (_, __, c) => c.toUpperCase());
    const f = /^\s*%?([\w-]+): s64,/.exec(line);
    if (f) signed.push(`${record}.${f[1].replace(/-(\w)/g, (_, c) => c.toUpperCase())}`);
  }
  const facade = await readFile(new URL('../src/facade.js', import.meta.url), 'utf8');
  const listed = /const SIGNED = new Set\((\[[^\]]*\])\)/.exec(facade)[1];
  assert.deepEqual(JSON.parse(listed.replaceAll("'", '"')).sort(), signed.sort());
  for (const name of signed) {
    const [type, field] = name.split('.');
    assert.ok(SCHEMA.records[type].some((f) => f.name === field && f.type === 'bigint'), name);
  }
});

test('the browser entry uses no Node API and runs on fetch alone', async () => {
  const sources = ['../src/browser.js', '../src/facade.js', '../src/error.js', '../generated/evaluator.js', '../generated/manifest.js', '../generated/schema.js'];
  for (const source of sources) {
    const text = await readFile(new URL(source, import.meta.url), 'utf8');
    assert.doesNotMatch(text, /from\s+['"]node:|require\(|\bBuffer\b|process\.(?!env\?)/, source);
  }
  // Node's fetch does not read file: URLs; stand in for a web server.
  const realFetch = globalThis.fetch;
  const fetched = [];
  globalThis.fetch = async (url) => {
    fetched.push(String(url));
    return new Response(await readFile(new URL(url)));
  };
  try {
    const browser = await import('../src/browser.js');
    assert.deepEqual(browser.evaluate(request()), vector.expect.decision);
    assert.equal(browser.componentDigest, api.componentDigest);
  } finally {
    globalThis.fetch = realFetch;
  }
  assert.deepEqual(fetched.map((u) => u.split('/').pop()), ['evaluator.core.wasm']);
});

test("index.d.ts spells every enum as the component does", async () => {
  const dts = await readFile(new URL('../index.d.ts', import.meta.url), 'utf8');
  for (const [type, cases] of Object.entries(SCHEMA.enums)) {
    const name = type === 'Reason' ? 'DecisionReason' : type;
    const m = new RegExp(`export type ${name} =([^;]+);`).exec(dts);
    assert.ok(m, `index.d.ts lacks ${name}`);
    const declared = [...m[1].matchAll(/'([a-z0-9_]+)'/g)].map((x) => x[1]);
    assert.deepEqual(declared, cases.map((c) => c.replaceAll('-', '_')), name);
  }
});

test('a core module whose sha256 differs from the build manifest is refused', async () => {
  const { instantiateEvaluator } = await import('../src/facade.js');
  const real = await readFile(new URL('../generated/evaluator.core.wasm', import.meta.url));
  const tampered = Buffer.from(real);
  tampered[tampered.length - 1] ^= 1;
  await assert.rejects(instantiateEvaluator(async () => tampered), /evaluator\.core\.wasm has sha256:[0-9a-f]{64}, the build recorded/);
  assert.equal(typeof (await instantiateEvaluator(async () => real)).evaluateJson, 'function');
});

test('derive returns the derivation of the decision, integers past 2^53 exact', async () => {
  const example = JSON.parse(await readFile(new URL('../../examples/api-gateway/request.json', import.meta.url), 'utf8'));
  const decision = api.evaluate(example);
  const derivation = api.derive(example);
  assert.equal(derivation.decision_id, decision.decision_id);
  assert.equal(derivation.action, decision.action);
  assert.deepEqual(derivation.reasons, decision.reasons);
  assert.equal(api.deriveJson(JSON.stringify(example)), api.deriveJson(JSON.stringify(example)));
  assert.deepEqual(api.derive(example), JSON.parse(api.deriveJson(JSON.stringify(example))), 'small numbers are plain numbers');
  const t = derivation.target;
  assert.equal(t.ceil, Math.ceil(t.value / t.target));

  // 200 more replicas × 10^15 millicores each: 2 × 10^17 needed, past Number.MAX_SAFE_INTEGER.
  const big = structuredClone(example);
  Object.assign(big.contract.policy, { max_replicas: 1000, scale_up_step: 200 });
  big.signal.value = 100_000;
  big.contract.replica_demands[0].per_replica = 10 ** 15;
  const growth = api.derive(big).gates.find((g) => g.gate === 'growth');
  assert.equal(growth.additional, 200);
  assert.equal(growth.capacity[0].needed, 200n * 10n ** 15n);
  assert.equal(typeof growth.capacity[0].needed, 'bigint');
  assert.equal(growth.capacity[0].per_replica, 10 ** 15, 'a safe integer stays a number');
  assert.match(api.deriveJson(JSON.stringify(big)), /"needed":200000000000000000[,}]/);

  // An invalid request: derive throws what evaluate throws.
  const bad = structuredClone(example);
  bad.current_replicas = 10_001;
  assert.throws(() => api.derive(bad), (error) => error instanceof ScaleUnitsError && error.code === 'replicas_out_of_bounds');
});

test('diagnose and diagnoseContract list every fault with a hint, the first the error', () => {
  const broken = request();
  broken.current_replicas = 10_001;
  broken.contract.policy.target = 0;
  const faults = api.diagnose(broken);
  assert.ok(faults.length >= 2, JSON.stringify(faults));
  let thrown;
  try {
    api.evaluate(broken);
  } catch (error) {
    thrown = error;
  }
  assert.deepEqual(faults[0], { code: thrown.code, message: thrown.message, path: thrown.path, hint: faults[0].hint });
  assert.ok(faults.every((f) => typeof f.hint === 'string' && f.hint.length > 0 && !f.code.includes('-')));
  assert.deepEqual(api.diagnose(JSON.stringify(broken)), faults, 'text and object agree');
  assert.deepEqual(api.diagnose(request()), []);
  assert.deepEqual(api.diagnose('{'), [api.diagnose('{')[0]]);
  assert.equal(api.diagnose('{')[0].code, 'invalid_json');
  const contractFaults = api.diagnoseContract(broken.contract);
  assert.equal(contractFaults[0].path, 'policy.target');
  assert.deepEqual(api.diagnoseContract(request().contract), []);
});
