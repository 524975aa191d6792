// A per-path diff of two JSON values (two contracts): what a person comparing them wants to read,
// one row per changed leaf. Contracts are small structured JSON, so arrays are compared by index.
import { pathString } from './wire.js';

const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * `[{path, kind, a, b}]` in document order: `kind` is `changed` (both sides, different values),
 * `removed` (only in `a`) or `added` (only in `b`); `path` is the SPEC spelling
 * (`policy.target`, `capacities[1].per_replica`). Equal values give `[]`. A value that changes
 * type (an object becoming a number) is one `changed` row at its own path.
 */
export function diffValues(a, b, segments = []) {
  if (isObject(a) && isObject(b)) {
    const keys = [...Object.keys(a), ...Object.keys(b).filter((k) => !Object.hasOwn(a, k))];
    return keys.flatMap((k) => side(a, b, k, segments));
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    const n = Math.max(a.length, b.length);
    return Array.from({ length: n }, (_, i) => side(a, b, i, segments)).flat();
  }
  if (a === b) return [];
  return [{ path: pathString(segments), kind: 'changed', a, b }];
}

function side(a, b, key, segments) {
  const inA = Array.isArray(a) ? key < a.length : Object.hasOwn(a, key);
  const inB = Array.isArray(b) ? key < b.length : Object.hasOwn(b, key);
  const path = [...segments, key];
  if (inA && inB) return diffValues(a[key], b[key], path);
  return [{ path: pathString(path), kind: inA ? 'removed' : 'added', a: inA ? a[key] : undefined, b: inB ? b[key] : undefined }];
}
