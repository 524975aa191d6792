// Every vector below tests/vectors (and below each directory of $SCALE_UNITS_VECTORS, `:`-separated)
// through the package: the JSON text path, the plain-object path, and the typed path compared with
// the JSON path. Vectors listed in <dir>/known-failures/js.txt must fail.
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';
import * as api from 'scale-units';
import { checkVector, exactRequest, findVectorFiles, knownFailures, loadVector, outcomeOf, vectorDirs } from '../bin/vectors.mjs';
import { completeRequest } from '../bin/complete-request.mjs';

const dirs = vectorDirs([], fileURLToPath(new URL('../../tests/vectors', import.meta.url)));

for (const dir of dirs) {
  const files = findVectorFiles(dir);
  const known = knownFailures(dir);
  describe(`vectors in ${dir}`, () => {
    test('the folder holds vectors', () => assert.ok(files.length > 0, `no vectors below ${dir}`));
    const seen = new Set();
    for (const file of files) {
      const loaded = loadVector(file);
      test(loaded.id, () => {
        assert.ok(!seen.has(loaded.id), `duplicate vector id ${loaded.id}`);
        seen.add(loaded.id);
        const problems = checkVector(api, loaded);
        if (known.has(loaded.id)) {
          assert.notDeepEqual(problems, [], `${loaded.id} is listed in known-failures/js.txt (${known.get(loaded.id)}) but passes`);
        } else {
          assert.deepEqual(problems, []);
        }
      });
    }
    test('known failures name existing vectors', () => {
      const ids = new Set(files.map((f) => loadVector(f).id));
      for (const id of known.keys()) assert.ok(ids.has(id), `known-failures/js.txt lists ${id}, which is not a vector`);
    });
  });

  // The typed path has no defaults, so the request is completed with the SPEC's defaults first
  // (test-only); the outcome must equal the JSON path's on the original request.
  test(`typed path agrees with the JSON path (${dir})`, () => {
    let compared = 0;
    for (const file of files) {
      const loaded = loadVector(file);
      if (!loaded.objectPath) continue;
      const request = exactRequest(loaded);
      const json = outcomeOf(api, () => api.evaluate(request));
      const typed = outcomeOf(api, () => api.evaluateTyped(completeRequest(request)));
      if (json.decision) assert.deepEqual(typed, json, loaded.id);
      else assert.equal(typed.error?.code, json.error?.code, `${loaded.id}: ${JSON.stringify(typed)} vs ${JSON.stringify(json)}`);
      compared++;
    }
    assert.ok(compared > 0);
  });

  test(`explain describes every decision (${dir})`, () => {
    for (const file of files) {
      const { vector } = loadVector(file);
      const decision = vector.expect.decision;
      if (!decision) continue;
      const explanation = api.explain(decision);
      assert.equal(typeof explanation.summary, 'string');
      assert.deepEqual(explanation.reasons.map((r) => r.reason), decision.reasons);
      assert.equal(explanation.evidence.length, decision.evidence.length);
    }
  });
}
