// The conformance vectors (SPEC §11) as the JS package runs them: shared by bin/conformance.mjs and
// the node --test suite. Node-only (it reads files); not part of the published facade.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { parseExactJson } from '../src/exact-json.js';
import { completeRequest } from './complete-request.mjs';

/** Every `*.json` vector below `dir`, recursively, sorted by path. */
export function findVectorFiles(dir) {
  const out = [];
  const walk = (d) => {
    for (const entry of readdirSync(d, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const path = join(d, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.json')) out.push(path);
    }
  };
  if (!statSync(dir).isDirectory()) throw new Error(`${dir} is not a directory`);
  walk(dir);
  return out;
}

/** `<id> <reason>` lines of `<dir>/known-failures/js.txt`, when the file exists. */
export function knownFailures(dir) {
  const file = join(dir, 'known-failures', 'js.txt');
  const listed = new Map();
  if (!existsSync(file)) return listed;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const text = line.trim();
    if (!text || text.startsWith('#')) continue;
    const [id, ...reason] = text.split(/\s+/);
    listed.set(id, reason.join(' '));
  }
  return listed;
}

// Index just past the JSON value starting at or after `i` (the text is known to be valid JSON).
function skipValue(text, i) {
  while (/\s/.test(text[i])) i++;
  const c = text[i];
  if (c === '"') {
    for (i++; text[i] !== '"'; i++) if (text[i] === '\\') i++;
    return i + 1;
  }
  if (c === '{' || c === '[') {
    const close = c === '{' ? '}' : ']';
    i++;
    for (;;) {
      while (/[\s,:]/.test(text[i])) i++;
      if (text[i] === close) return i + 1;
      i = skipValue(text, i);
    }
  }
  const m = /^[^\s,:\]}]+/.exec(text.slice(i, i + 400));
  return i + m[0].length;
}

/** The exact source text of the top-level member `key` of the JSON object `text`, or undefined. */
export function rawMember(text, key) {
  let i = text.indexOf('{') + 1;
  for (;;) {
    while (/[\s,]/.test(text[i])) i++;
    if (text[i] === '}') return undefined;
    const keyEnd = skipValue(text, i);
    const name = JSON.parse(text.slice(i, keyEnd));
    i = keyEnd;
    while (/[\s:]/.test(text[i])) i++;
    const end = skipValue(text, i);
    if (name === key) return text.slice(i, end);
    i = end;
  }
}

// A number literal with a fraction or an exponent, outside strings: JSON.parse turns `100.0` into
// 100, so a plain-object caller cannot present it (SPEC §1: in JS the number's value decides).
function hasFloatLiteral(raw) {
  return /[0-9][.eE]/.test(raw.replace(/"(?:[^"\\]|\\.)*"/g, '""'));
}

export function loadVector(file) {
  const text = readFileSync(file, 'utf8');
  const vector = JSON.parse(text);
  const requestText = vector.request_json ?? rawMember(text, 'request');
  if (typeof requestText !== 'string') throw new Error(`${file}: neither request nor request_json`);
  // The expected derivation parsed exactly (its products may pass 2^53).
  const expectText = rawMember(text, 'expect');
  const derivationText = expectText === undefined ? undefined : rawMember(expectText, 'derivation');
  const derivation = derivationText === undefined ? undefined : parseExactJson(derivationText);
  return {
    file,
    vector,
    id: vector.id ?? file,
    requestText,
    derivation,
    objectPath: 'request' in vector && !hasFloatLiteral(requestText),
    gate: gateCase(vector, file),
  };
}

/**
 * The request of a vector on the object path, read exactly: an integer past 2^53 becomes a BigInt
 * (which the facade accepts), never the nearest double JSON.parse would give. A fresh value on
 * every call.
 */
export function exactRequest(loaded) {
  return parseExactJson(loaded.requestText);
}

// The vector keys of a gate case (tests/vectors/README.md, "gate vectors"), read as the core's
// runner reads them: `change` (its `kind` defaults to `scale`) or the exact `change_json` text.
function gateCase(vector, file) {
  const { change, change_json: changeJson } = vector;
  const { gate, gate_error: gateError, scaler } = vector.expect ?? {};
  if (change === undefined && changeJson === undefined) {
    if (gate || gateError || scaler) throw new Error(`${file}: expect.gate, expect.gate_error and expect.scaler need a change`);
    return undefined;
  }
  if (change !== undefined && changeJson !== undefined) throw new Error(`${file}: both change and change_json`);
  if (Boolean(gate) === Boolean(gateError)) throw new Error(`${file}: a gate vector needs exactly one of expect.gate and expect.gate_error`);
  const typed = change === undefined ? undefined : { to_replicas: change.to_replicas, kind: change.kind ?? 'scale' };
  return { changeText: changeJson ?? JSON.stringify(typed), change: typed, expect: gate, error: gateError, scaler };
}

const show = (v) => JSON.stringify(v, (_, x) => (typeof x === 'bigint' ? `${x}n` : x));

/** Compares an outcome (`{decision}` or `{error}`) with a vector's `expect`; returns the differences. */
export function compareOutcome(expect, outcome) {
  if (outcome.host) return [`host error: ${outcome.host}`];
  if (expect.error) {
    if (!outcome.error) return [`expected error ${expect.error.code}, got decision ${outcome.decision.action} ${show(outcome.decision.reasons)}`];
    const problems = [];
    if (outcome.error.code !== expect.error.code) problems.push(`error code ${outcome.error.code} (${outcome.error.message}), expected ${expect.error.code}`);
    if (expect.error.message_contains && !outcome.error.message.includes(expect.error.message_contains)) {
      problems.push(`error message ${show(outcome.error.message)} lacks ${show(expect.error.message_contains)}`);
    }
    return problems;
  }
  if (!outcome.decision) return [`expected a decision, got error ${outcome.error.code} at ${show(outcome.error.path)}: ${outcome.error.message}`];
  const problems = [];
  const want = expect.decision;
  for (const key of new Set([...Object.keys(want), ...Object.keys(outcome.decision)])) {
    if (!isDeepStrictEqual(outcome.decision[key], want[key])) {
      problems.push(`${key}: got ${show(outcome.decision[key])}, expected ${show(want[key])}`);
    }
  }
  return problems;
}

/** Compares a derivation outcome with `expect.derivation`, every field, integers exactly. */
export function compareDerivation(expected, outcome) {
  if (outcome.host) return [`host error: ${outcome.host}`];
  if (outcome.error) return [`expected a derivation, got error ${outcome.error.code}: ${outcome.error.message}`];
  const problems = [];
  const walk = (want, got, path) => {
    if (want !== null && typeof want === 'object' && got !== null && typeof got === 'object') {
      if (Array.isArray(want) !== Array.isArray(got)) return problems.push(`${path}: got ${show(got)}, expected ${show(want)}`);
      const keys = new Set([...Object.keys(want), ...Object.keys(got)]);
      for (const key of keys) walk(want[key], got[key], Array.isArray(want) ? `${path}[${key}]` : `${path}.${key}`);
      return undefined;
    }
    if (!isDeepStrictEqual(want, got)) problems.push(`${path}: got ${show(got)}, expected ${show(want)}`);
    return undefined;
  };
  walk(expected, outcome.decision, 'derivation');
  return problems;
}

/**
 * Compares a list of faults with `expect.diagnosis`: as many faults, each with the expected code
 * and path, a hint containing `hint_contains` and a message containing `message_contains`.
 */
export function compareDiagnosis(expected, outcome) {
  if (outcome.host) return [`host error: ${outcome.host}`];
  if (outcome.error) return [`diagnose threw ${outcome.error.code}: ${outcome.error.message}`];
  const faults = outcome.decision;
  const problems = [];
  expected.forEach((want, i) => {
    const got = faults[i];
    if (!got) return;
    if (got.code !== want.code || got.path !== want.path) {
      problems.push(`[${i}]: expected ${want.code} at ${show(want.path)}, got ${got.code} at ${show(got.path)}: ${got.message}`);
    } else if (!got.hint.includes(want.hint_contains)) {
      problems.push(`[${i}] (${got.code} at ${show(got.path)}): hint ${show(got.hint)} lacks ${show(want.hint_contains)}`);
    } else if (want.message_contains && !got.message.includes(want.message_contains)) {
      problems.push(`[${i}] (${got.code} at ${show(got.path)}): message ${show(got.message)} lacks ${show(want.message_contains)}`);
    }
  });
  if (faults.length !== expected.length) problems.push(`expected ${expected.length} faults, got ${faults.length}`);
  return problems;
}

/**
 * Compares a verdict or reading with the expected one as the core's runner does
 * (`verdict_difference`): every field exactly, except `message_contains` (a fragment of
 * `message`) and a non-null `error` (by code and `message_contains`); no field beyond them.
 */
export function compareVerdict(want, got, path) {
  if (got === null || typeof got !== 'object' || Array.isArray(got)) return [`${path}: expected an object, got ${show(got)}`];
  const problems = [];
  for (const [key, value] of Object.entries(want)) {
    if (key === 'message_contains') {
      if (typeof got.message !== 'string' || !got.message.includes(value)) problems.push(`${path}.message: ${show(got.message)} lacks ${show(value)}`);
    } else if (!(key in got)) {
      problems.push(`${path}.${key}: missing, expected ${show(value)}`);
    } else if (key === 'error' && value !== null) {
      if (got.error?.code !== value.code) problems.push(`${path}.error: code ${show(got.error?.code)} (${show(got.error?.message)}), expected ${value.code}`);
      else if (value.message_contains && !got.error.message.includes(value.message_contains)) {
        problems.push(`${path}.error: message ${show(got.error.message)} lacks ${show(value.message_contains)}`);
      }
    } else if (!isDeepStrictEqual(got[key], value)) {
      problems.push(`${path}.${key}: got ${show(got[key])}, expected ${show(value)}`);
    }
  }
  for (const key of Object.keys(got)) {
    if (!(key in want) && !(key === 'message' && 'message_contains' in want)) problems.push(`${path}.${key}: unexpected field`);
  }
  return problems;
}

/** Compares a gate outcome (`{decision: verdict}` or `{error}`) with the case's expectation. */
function compareGate(gate, outcome) {
  if (outcome.host) return [`host error: ${outcome.host}`];
  if (gate.error) {
    if (!outcome.error) return [`expected error ${gate.error.code}, got a verdict ${show(outcome.decision?.reason)}`];
    return compareOutcome({ error: gate.error }, outcome);
  }
  if (outcome.error) return [`expected a verdict, got error ${outcome.error.code}: ${outcome.error.message}`];
  return compareVerdict(gate.expect, outcome.decision, 'gate');
}

/**
 * Checks a gate vector (SPEC §12.3): the verdict of `gateJson` on the exact texts and the reading
 * of `scalerReadingJson`; where a plain object carries the request, `scalerReading` on it and, with
 * a `change` (not `change_json`), `gate` on the objects and the typed `gateTyped` on the request
 * completed with the SPEC's defaults (the typed record has none).
 */
export function checkGate(api, loaded) {
  const { gate, requestText } = loaded;
  const problems = [];
  const json = outcomeOf(api, () => JSON.parse(api.gateJson(requestText, gate.changeText)));
  problems.push(...compareGate(gate, json).map((p) => `gateJson: ${p}`));
  if (gate.scaler) {
    const reading = outcomeOf(api, () => JSON.parse(api.scalerReadingJson(requestText)));
    problems.push(...(reading.decision ? compareVerdict(gate.scaler, reading.decision, 'scaler') : [`threw ${show(reading)}`]).map((p) => `scalerReadingJson: ${p}`));
  }
  if (loaded.objectPath) {
    const request = JSON.parse(requestText);
    if (gate.scaler) {
      const reading = outcomeOf(api, () => api.scalerReading(request));
      problems.push(...(reading.decision ? compareVerdict(gate.scaler, reading.decision, 'scaler') : [`threw ${show(reading)}`]).map((p) => `scalerReading: ${p}`));
    }
    // A `change_json` is a change only a JSON reader can be given: no object for it.
    if (gate.change) {
      problems.push(...compareGate(gate, outcomeOf(api, () => api.gate(request, gate.change))).map((p) => `gate: ${p}`));
      const typed = outcomeOf(api, () => api.gateTyped(completeRequest(request), gate.change));
      problems.push(...compareGate(gate, typed).map((p) => `gateTyped: ${p}`));
    }
  }
  return problems;
}

/** Runs `fn` and returns `{decision}`, `{error}` for a ScaleUnitsError, or `{host}` for anything else. */
export function outcomeOf(api, fn) {
  try {
    return { decision: fn() };
  } catch (error) {
    if (error instanceof api.ScaleUnitsError) return { error: { code: error.code, message: error.message, path: error.path } };
    return { host: `${error?.name}: ${error?.message}` };
  }
}

/**
 * Checks one vector through the JSON text path (the vector's exact request text, as the CLI reads
 * it) and, where a plain object can carry the request, the plain-object path; plus the contract
 * digest when the vector pins one. Returns the list of problems (empty: the vector passes).
 */
export function checkVector(api, loaded) {
  const { vector, requestText } = loaded;
  const problems = [];
  const text = outcomeOf(api, () => JSON.parse(api.evaluateJson(requestText)));
  problems.push(...compareOutcome(vector.expect, text).map((p) => `evaluateJson: ${p}`));
  if (loaded.objectPath) {
    const object = outcomeOf(api, () => api.evaluate(exactRequest(loaded)));
    problems.push(...compareOutcome(vector.expect, object).map((p) => `evaluate: ${p}`));
  }
  if (loaded.derivation !== undefined) {
    const derived = outcomeOf(api, () => parseExactJson(api.deriveJson(requestText)));
    problems.push(...compareDerivation(loaded.derivation, derived).map((p) => `deriveJson: ${p}`));
    if (loaded.objectPath) {
      const typed = outcomeOf(api, () => api.derive(exactRequest(loaded)));
      problems.push(...compareDerivation(loaded.derivation, typed).map((p) => `derive: ${p}`));
    }
  }
  if (vector.expect.diagnosis) {
    const faults = outcomeOf(api, () => api.diagnose(requestText));
    problems.push(...compareDiagnosis(vector.expect.diagnosis, faults).map((p) => `diagnose: ${p}`));
  }
  if (loaded.gate) problems.push(...checkGate(api, loaded));
  if (vector.expect.contract_digest) {
    const contract = loaded.objectPath ? exactRequest(loaded).contract : vector.request.contract;
    const identity = outcomeOf(api, () => api.validateContract(contract));
    const got = identity.decision?.contract_digest ?? show(identity.error ?? identity.host);
    if (got !== vector.expect.contract_digest) problems.push(`validateContract: contract_digest ${got}, expected ${vector.expect.contract_digest}`);
  }
  return problems;
}

/** The vector directories to run: the arguments, else tests/vectors and $SCALE_UNITS_VECTORS. */
export function vectorDirs(args, defaultDir) {
  if (args.length) return args;
  const dirs = [defaultDir];
  if (process.env.SCALE_UNITS_VECTORS) dirs.push(...process.env.SCALE_UNITS_VECTORS.split(':').filter(Boolean));
  return dirs;
}
