// The simulation vectors of tests/vectors-sim (format: its README) through `simulate` and
// `simulateJson`, and the facade's handling of simulation errors.
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { describe, test } from 'node:test';
import { isDeepStrictEqual } from 'node:util';
import * as api from 'scale-units';

const dir = new URL('../../tests/vectors-sim/', import.meta.url);
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.json'))
  .sort();

/** Differences between a simulation and a vector's `expect` (steps: the fields given; summary: all). */
function differences(got, expect) {
  const out = [];
  if (got.steps.length !== expect.steps.length) out.push(`${got.steps.length} steps, expected ${expect.steps.length}`);
  expect.steps.forEach((want, i) => {
    for (const [key, value] of Object.entries(want)) {
      if (!got.steps[i] || !isDeepStrictEqual(got.steps[i][key], value)) {
        out.push(`steps[${i}].${key}: ${JSON.stringify(got.steps[i]?.[key])}, expected ${JSON.stringify(value)}`);
      }
    }
  });
  if (!isDeepStrictEqual(got.summary, expect.summary)) {
    out.push(`summary: ${JSON.stringify(got.summary)}, expected ${JSON.stringify(expect.summary)}`);
  }
  return out;
}

describe('simulation vectors in tests/vectors-sim', () => {
  test('the folder holds vectors', () => assert.ok(files.length > 0));
  for (const file of files) {
    const text = readFileSync(new URL(file, dir), 'utf8');
    const vector = JSON.parse(text);
    test(vector.id, () => {
      const inputText = JSON.stringify(vector.input);
      if (vector.expect.error) {
        for (const run of [() => api.simulate(vector.input), () => api.simulateJson(inputText)]) {
          assert.throws(run, (error) => {
            assert.ok(error instanceof api.ScaleUnitsError, `not a ScaleUnitsError: ${error}`);
            assert.equal(error.code, vector.expect.error.code);
            if (vector.expect.error.message_contains) assert.ok(error.message.includes(vector.expect.error.message_contains), error.message);
            return true;
          });
        }
        return;
      }
      const fromObject = api.simulate(vector.input);
      assert.deepEqual(differences(fromObject, vector.expect), []);
      // The text path returns the core's JSON text; it parses to the same simulation.
      assert.deepEqual(JSON.parse(api.simulateJson(inputText)), fromObject);
      for (const step of fromObject.steps) assert.match(step.decision_id, /^scale-decision:[0-9a-f]{32}$/);
    });
  }
});

test('simulate: a bad CSV cell is invalid_field at its row and column', () => {
  const { input } = JSON.parse(readFileSync(new URL('metrics-outage-is-never-zero.json', dir), 'utf8'));
  assert.throws(
    () => api.simulate({ ...input, trace_csv: 'time,signal\n2026-08-19T12:00:00Z,lots\n' }),
    (error) => error instanceof api.ScaleUnitsError && error.code === 'invalid_field' && error.path === 'trace[0].signal',
  );
});

test('simulate: numbers are checked as evaluate checks them; simulateJson takes text only', () => {
  const { input } = JSON.parse(readFileSync(new URL('metrics-outage-is-never-zero.json', dir), 'utf8'));
  assert.throws(
    () => api.simulate({ ...input, initial_replicas: 1.5 }),
    (error) => error instanceof api.ScaleUnitsError && error.code === 'invalid_field' && error.path === 'initial_replicas',
  );
  assert.throws(() => api.simulateJson(input), TypeError);
  assert.throws(() => api.simulateJson('{'), (error) => error instanceof api.ScaleUnitsError && error.code === 'invalid_json');
});
