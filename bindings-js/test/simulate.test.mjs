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

test('index.d.ts declares every field of a simulation the component writes, and no other', async () => {
  const dts = readFileSync(new URL('../index.d.ts', import.meta.url), 'utf8');
  /** The field names an `export interface NAME { ... }` of index.d.ts declares. */
  const declared = (name) => {
    const body = new RegExp(`export interface ${name} \\{([\\s\\S]*?)\\n\\}`).exec(dts)?.[1];
    assert.ok(body, `index.d.ts lacks interface ${name}`);
    return [...body.matchAll(/^ {2}([a-z_]+)\??:/gm)].map((m) => m[1]).sort();
  };
  // A simulation with a scale still pending at the end, so that every field is there.
  const { input } = JSON.parse(readFileSync(new URL('decisions-replaced-while-pending.json', dir), 'utf8'));
  const { steps, summary } = api.simulate(input);
  assert.ok(summary.pending_at_end, 'the vector ends with a scale pending');
  assert.deepEqual(declared('SimulationStep'), Object.keys(steps[0]).sort());
  assert.deepEqual(declared('SimulationSummary'), Object.keys(summary).sort());
  assert.deepEqual(declared('PendingScale'), Object.keys(summary.pending_at_end).sort());
});
