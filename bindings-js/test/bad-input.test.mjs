// Bad input at the JS face: each gets its typed error, nothing crashes, the evaluator keeps
// serving. The same list as cli/tests/bad_input.rs and bindings-py/tests/test_bad_input.py.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import * as api from 'scale-units';

const { MAX_REQUEST_BYTES, RequestTooLargeError, ScaleUnitsError } = api;
const GOOD = await readFile(new URL('../../examples/api-gateway/request.json', import.meta.url), 'utf8');
const MARKER = '"__bad_input_marker__"';

/** The good request with `path` (dotted, `name[i]` for an index) set to the JSON text `raw`. */
function withRaw(path, raw) {
  const request = JSON.parse(GOOD);
  const parts = path.split('.');
  let slot = request;
  const step = (part) => {
    const [, name, index] = /^([^[]+)(?:\[(\d+)\])?$/.exec(part);
    return index === undefined ? [slot, name] : [slot[name], Number(index)];
  };
  for (const part of parts.slice(0, -1)) {
    const [holder, key] = step(part);
    slot = holder[key];
  }
  const [holder, key] = step(parts.at(-1));
  holder[key] = '__bad_input_marker__';
  return JSON.stringify(request).replace(MARKER, () => raw);
}

const CASES = [
  ['empty', '', 'invalid_json'],
  ['truncated', GOOD.slice(0, 100), 'invalid_json'],
  ['trailing comma', '{"now": 1,}', 'invalid_json'],
  ['two documents', `${GOOD} {}`, 'invalid_json'],
  ['byte-order mark', `\uFEFF${GOOD}`, 'invalid_json'],
  ['NaN', withRaw('current_replicas', 'NaN'), 'invalid_json'],
  ['single quotes', "{'now': 1}", 'invalid_json'],
  ['raw control character in a string', withRaw('contract.unit_ref', '"a\u0001b"'), 'invalid_json'],
  ['lone surrogate escape', withRaw('contract.unit_ref', '"\\ud800"'), 'invalid_json'],
  ['duplicate key', GOOD.replace('"now"', '"now":"2026-08-19T12:00:00Z","now"'), 'invalid_json'],
  ['duplicate key, nested', withRaw('signal', '{"value":1,"value":2}'), 'invalid_json'],
  ['100 000 [', '['.repeat(100_000), 'invalid_json'],
  ['100 000 {"a":', '{"a":'.repeat(100_000), 'invalid_json'],
  ['100 000 [ in a field', withRaw('signal', '['.repeat(100_000)), 'invalid_json'],
  ['129 levels, closed', '['.repeat(129) + ']'.repeat(129), 'invalid_json'],
  ['2^53 + 1 replicas', withRaw('current_replicas', '9007199254740993'), 'replicas_out_of_bounds'],
  ['2^53 + 1 capacity', withRaw('capacities[0].allocatable', '9007199254740993'), 'invalid_field'],
  ['2^64 capacity', withRaw('capacities[0].allocatable', '18446744073709551616'), 'invalid_field'],
  ['2^64 signal', withRaw('signal.value', '18446744073709551616'), 'invalid_field'],
  ['-2^63 - 1 replicas', withRaw('current_replicas', '-9223372036854775809'), 'invalid_field'],
  ['1e400', withRaw('signal.value', '1e400'), 'invalid_field'],
  ['400 digits', withRaw('signal.value', '9'.repeat(400)), 'invalid_field'],
  ['float', withRaw('current_replicas', '3.0'), 'invalid_field'],
  ['negative zero', withRaw('current_replicas', '-0.0'), 'invalid_field'],
  ['boolean as integer', withRaw('current_replicas', 'true'), 'invalid_field'],
  ['escaped control character in a ref', withRaw('contract.unit_ref', '"a\\u0001b"'), 'invalid_ref'],
  ['NUL in a ref', withRaw('signal.source_ref', '"a\\u0000b"'), 'invalid_ref'],
  ['newline in a ref', withRaw('signal.source_ref', '"a\\nb"'), 'invalid_ref'],
  ['non-ASCII ref', withRaw('contract.unit_ref', '"caf\u00e9"'), 'invalid_ref'],
  ['right-to-left override in a ref', withRaw('signal.source_ref', '"a\u202eb"'), 'invalid_ref'],
  ['emoji ref', withRaw('capacities[0].source_ref', '"\u{1F600}"'), 'invalid_ref'],
  ['257-byte ref', withRaw('contract.unit_ref', `"${'a'.repeat(257)}"`), 'invalid_ref'],
  ['megabyte-long ref', withRaw('contract.unit_ref', `"${'a'.repeat(900_000)}"`), 'invalid_ref'],
  ['token: ref', withRaw('signal.source_ref', '"metrics:token:abc123"'), 'credential_in_ref'],
  ['bearer ref', withRaw('signal.source_ref', '"Bearer.eyJhbGciOiJIUzI1NiJ9"'), 'credential_in_ref'],
  ['password ref', withRaw('contract.unit_ref', '"db/PASSWORD/hunter2"'), 'credential_in_ref'],
  ['api key ref', withRaw('capacities[1].source_ref', '"vault:api-key/prod"'), 'credential_in_ref'],
  ['private key ref', withRaw('safety.source_ref', '"ssh/private_key"'), 'credential_in_ref'],
  ['token= ref', withRaw('signal.source_ref', '"token=abc"'), 'invalid_ref'],
  ['null where required', withRaw('now', 'null'), 'invalid_field'],
  ['array for object', withRaw('contract', '[]'), 'invalid_field'],
  ['unknown field', GOOD.replace('{', '{"extra":1,'), 'invalid_field'],
];

const assertServing = () => assert.match(api.evaluateJson(GOOD), /"action":"scale_up"/);

function assertCode(fn, code, name) {
  assert.throws(fn, (error) => {
    assert.ok(error instanceof ScaleUnitsError, `${name}: not a ScaleUnitsError: ${error}`);
    assert.equal(error.code, code, `${name}: ${error.message}`);
    return true;
  });
}

test('every bad JSON text gets its code', () => {
  for (const [name, text, code] of CASES) assertCode(() => api.evaluateJson(text), code, name);
  assertServing();
});

test('text with no UTF-8 form is invalid_json', () => {
  for (const text of ['\uD800', '{"now":"\uDFFF"}', `${GOOD}\uD83D`]) assertCode(() => api.evaluateJson(text), 'invalid_json', text.slice(-8));
});

test('text over the size limit is refused before the component', () => {
  assert.equal(MAX_REQUEST_BYTES, 1 << 20);
  const atLimit = GOOD + ' '.repeat(MAX_REQUEST_BYTES - Buffer.byteLength(GOOD));
  assert.match(api.evaluateJson(atLimit), /"action":"scale_up"/);
  const over = [
    `${atLimit} `,
    GOOD + ' '.repeat(100 << 20),
    // Counted in UTF-8 bytes: under the limit in UTF-16 units, over it in bytes.
    GOOD.replace('{', `{"x":"${'\u00e9'.repeat(MAX_REQUEST_BYTES / 2)}",`),
    '\u{1F600}'.repeat(MAX_REQUEST_BYTES / 4 + 1),
  ];
  for (const text of over) {
    for (const fn of [api.evaluateJson, api.validateContractJson, api.simulateJson]) {
      assert.throws(() => fn(text), (error) => {
        assert.ok(error instanceof RequestTooLargeError && error instanceof RangeError, `${error}`);
        assert.equal(error.code, 'request_too_large');
        assert.equal(error.size, Buffer.byteLength(text));
        assert.equal(error.limit, MAX_REQUEST_BYTES);
        return true;
      });
    }
  }
  // Objects go through the same limit once written as JSON.
  const big = JSON.parse(GOOD);
  big.contract.unit_ref = 'a'.repeat(MAX_REQUEST_BYTES);
  assert.throws(() => api.evaluate(big), RequestTooLargeError);
  assert.throws(() => api.validateContract(big.contract), RequestTooLargeError);
  assertServing();
});

test('JS values past JSON get typed errors', () => {
  const request = () => JSON.parse(GOOD);
  // Numbers JSON.stringify would round or mangle are refused by the facade, naming the path.
  for (const [value, path] of [
    [2 ** 53 + 2, 'capacities[0].allocatable'],
    [NaN, 'capacities[0].allocatable'],
    [Infinity, 'capacities[0].allocatable'],
    [1.5, 'capacities[0].allocatable'],
  ]) {
    const r = request();
    r.capacities[0].allocatable = value;
    assert.throws(() => api.evaluate(r), (error) => error instanceof ScaleUnitsError && error.code === 'invalid_field' && error.path === path);
  }
  // A BigInt past 2^64 is written as its digits and refused by the component.
  const r = request();
  r.capacities[0].allocatable = 1n << 64n;
  assertCode(() => api.evaluate(r), 'invalid_field', '2^64n');
  // Nesting past the JS stack fails while the object is written, before the component.
  let deep = [];
  for (let i = 0; i < 100_000; i += 1) deep = [deep];
  const nested = request();
  nested.signal = deep;
  assert.throws(() => api.evaluate(nested), RangeError);
  assertServing();
});
