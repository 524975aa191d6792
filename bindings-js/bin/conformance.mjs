#!/usr/bin/env node
// Runs conformance vectors through the npm package: node bin/conformance.mjs DIR... (and every
// folder of $SCALE_UNITS_VECTORS, `:`-separated, when it is set).
// Prints each failure, then exactly `N passed, N failed`; exits 1 when any vector fails.
// A vector listed in DIR/known-failures/js.txt must fail; it counts as failed if it passes. A DIR
// that is missing or holds no vector counts as one failure: nothing checked is not a pass.
import * as api from 'scale-units';
import { checkVector, findVectorFiles, knownFailures, loadVector } from './vectors.mjs';

const dirs = [...process.argv.slice(2), ...(process.env.SCALE_UNITS_VECTORS ?? '').split(':').filter(Boolean)];
if (!dirs.length) {
  console.error('usage: node bin/conformance.mjs DIR... (or set $SCALE_UNITS_VECTORS to folders of vectors, :-separated)');
  process.exit(2);
}
let passed = 0;
let failed = 0;
for (const dir of dirs) {
  let files;
  try {
    files = findVectorFiles(dir);
  } catch (error) {
    failed++;
    console.log(`FAIL ${dir}: ${error.message}`);
    continue;
  }
  if (!files.length) {
    failed++;
    console.log(`FAIL ${dir}: no vectors below it`);
  }
  const known = knownFailures(dir);
  for (const file of files) {
    let id = file;
    let problems;
    try {
      const loaded = loadVector(file);
      id = loaded.id;
      problems = checkVector(api, loaded);
    } catch (error) {
      problems = [`unreadable vector: ${error.message}`];
    }
    if (known.has(id)) {
      if (problems.length) passed++;
      else {
        failed++;
        console.log(`FAIL ${id}: listed in known-failures/js.txt (${known.get(id)}) but passes; remove it from the list`);
      }
    } else if (problems.length) {
      failed++;
      console.log(`FAIL ${id} (${file})`);
      for (const problem of problems) console.log(`  ${problem}`);
    } else passed++;
  }
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
