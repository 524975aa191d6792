// The package runs the very component the Rust host runs: its reported digest is the sha256 of the
// workspace component, equals the digest the Rust host reports, and generated/ is what jco makes
// of that component today. Every check fails (never skips) when it cannot verify.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { transpileBytes } from '@bytecodealliance/jco-transpile';
import { componentDigest } from 'scale-units';
import { MANIFEST } from '../generated/manifest.js';
import { defaultComponentPath } from '../scripts/build.mjs';
import { TRANSPILE_OPTIONS } from '../scripts/transpile-options.mjs';

const sha256 = (bytes) => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
const componentPath = defaultComponentPath();
// Written by `make component-digest` from `scale-units inspect` (the Rust host).
const hostDigestPath = process.env.SCALE_UNITS_HOST_DIGEST ?? join(dirname(componentPath), 'component.sha256');

test('componentDigest is the sha256 of the workspace component', async () => {
  assert.match(componentDigest, /^sha256:[0-9a-f]{64}$/);
  assert.equal(componentDigest, sha256(await readFile(componentPath)), `generated/ is stale: run make js-build`);
});

test('componentDigest equals the digest the Rust host reports', async () => {
  let text;
  try {
    text = await readFile(hostDigestPath, 'utf8');
  } catch (error) {
    assert.fail(`cannot read the Rust host's digest ${hostDigestPath} (run make component-digest): ${error.message}`);
  }
  const digests = text.match(/sha256:[0-9a-f]{64}/g) ?? [];
  assert.equal(digests.length, 1, `${hostDigestPath} should hold exactly one sha256:<hex> digest, holds: ${JSON.stringify(text)}`);
  assert.equal(componentDigest, digests[0]);
});

test('generated/ is exactly what jco makes of that component', async () => {
  const { files } = await transpileBytes(await readFile(componentPath), { ...TRANSPILE_OPTIONS });
  const generated = new URL('../generated/', import.meta.url);
  for (const [name, bytes] of Object.entries(files)) {
    assert.deepEqual(await readFile(new URL(name, generated)), Buffer.from(bytes), `generated/${name} differs: run make js-build`);
    if (name.endsWith('.wasm')) assert.equal(MANIFEST.core[name], sha256(bytes));
  }
  assert.deepEqual(Object.keys(MANIFEST.core).sort(), Object.keys(files).filter((n) => n.endsWith('.wasm')).sort());
});
