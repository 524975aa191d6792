// The hand-written face over the jco output in generated/. It converts and reports; every rule of
// the SPEC lives in the component.
import { instantiate } from '../generated/evaluator.js';
import { MANIFEST } from '../generated/manifest.js';
import { SCHEMA } from '../generated/schema.js';
import { MAX_REQUEST_BYTES, RequestTooLargeError, ScaleUnitsError, UnsupportedError } from './error.js';
import { parseExactJson } from './exact-json.js';

// WIT u64 and s64 both become `bigint` in jco's declarations; these are the s64 fields of
// wit/evaluator.wit (a test keeps the list equal to the WIT).
const SIGNED = new Set(['EvaluationRequest.currentReplicas', 'SignalObservation.value', 'ProposedChange.toReplicas']);
const U64_MAX = (1n << 64n) - 1n;
const S64_MIN = -(1n << 63n);
const S64_MAX = (1n << 63n) - 1n;

const snake = (camel) => camel.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
const fieldPath = (path, key) => (path ? `${path}.${key}` : key);
const describe = (value) => (value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value);
const invalid = (path, message) => new ScaleUnitsError('invalid_field', message, path);
// A string without lone surrogates, which alone has a UTF-8 form (jco's lowering would swap in U+FFFD).
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const wellFormed = (text) => (text.isWellFormed ? text.isWellFormed() : !LONE_SURROGATE.test(text));

function isPlainObject(value) {
  if (typeof value !== 'object' || value === null) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * A JS number that is an integer, or a typed `invalid_field` error naming the path. An integer
 * past 2^53 is not refused here: it goes to the component as the exact digits of its value, so
 * the answer is the core's (every SPEC bound is at most 10^15, far below 2^53, so a value the
 * number rounded is out of bounds either way and gets the same code).
 */
function checkNumber(value, path) {
  if (!Number.isInteger(value)) {
    throw invalid(path, `${path || 'value'} must be an integer, not ${value}`);
  }
}

/** The exact decimal digits of an integer-valued number (`String` would write 1e+21). */
const integerDigits = (value) => (Number.isSafeInteger(value) ? String(value === 0 ? 0 : value) : BigInt(value).toString());

// True when JSON.stringify writes `value` exactly: only strings, booleans, null, safe integers,
// arrays and plain objects, not too deep to be circular. Anything else takes the careful writer.
function stringifiesExactly(value, depth = 0) {
  switch (typeof value) {
    case 'string':
    case 'boolean':
    case 'undefined':
      return true;
    case 'number':
      return Number.isSafeInteger(value);
    case 'object':
      if (value === null) return true;
      if (depth > 32) return false;
      if (Array.isArray(value)) {
        for (const item of value) if (!stringifiesExactly(item, depth + 1)) return false;
        return true;
      }
      if (!isPlainObject(value)) return false;
      for (const key in value) if (!stringifiesExactly(value[key], depth + 1)) return false;
      return true;
    default:
      return false;
  }
}

/** JSON text for a plain JS value: JSON.stringify when that is exact, else `toJsonText`. */
function requestText(value) {
  // JSON.stringify(undefined) is no text at all: refused as the core refuses `null`.
  if (value === undefined) throw invalid('', 'the document must be an object, not undefined');
  return stringifiesExactly(value) ? JSON.stringify(value) : toJsonText(value);
}

/**
 * Writes a plain JS value as JSON text for the component's JSON entry points. Unlike
 * JSON.stringify it refuses what it cannot write as a JSON integer (NaN, 1.5, Infinity, a Map)
 * with an `invalid_field` error naming the path, and writes a BigInt, or an integer-valued
 * number past 2^53, as its exact decimal digits (never `1e+21`); a Date is its ISO 8601 text.
 * Properties whose value is `undefined` are omitted, as JSON.stringify does.
 */
export function toJsonText(value, path = '', seen = new Set()) {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      checkNumber(value, path);
      return integerDigits(value);
    case 'bigint':
      return value.toString();
    case 'object': {
      if (value === null) return 'null';
      // A Date is a time: the SPEC's text (ISO 8601 in UTC, `Z`), as JSON.stringify writes it.
      if (value instanceof Date) {
        if (Number.isNaN(value.getTime())) throw invalid(path, `${path || 'request'} is an invalid Date`);
        return JSON.stringify(value.toISOString());
      }
      if (seen.has(value)) throw invalid(path, `${path || 'request'} is circular`);
      seen.add(value);
      let text;
      if (Array.isArray(value)) {
        text = `[${value.map((item, i) => toJsonText(item === undefined ? null : item, `${path}[${i}]`, seen)).join(',')}]`;
      } else if (isPlainObject(value)) {
        const parts = [];
        for (const [key, item] of Object.entries(value)) {
          if (item !== undefined) parts.push(`${JSON.stringify(key)}:${toJsonText(item, fieldPath(path, key), seen)}`);
        }
        text = `{${parts.join(',')}}`;
      } else {
        throw invalid(path, `${path || 'request'} must be a plain object, an array or a scalar, not ${value.constructor?.name ?? 'an object'}`);
      }
      seen.delete(value);
      return text;
    }
    default:
      throw invalid(path, `${path || 'request'} cannot be ${typeof value}`);
  }
}

// --- the typed path: snake_case plain objects <-> jco's records (camelCase, kebab-case enums) ---

function toWitInteger(value, signed, path) {
  let big;
  if (typeof value === 'bigint') big = value;
  else if (typeof value === 'number') {
    checkNumber(value, path);
    big = BigInt(value);
  } else throw invalid(path, `${path} must be an integer, not ${describe(value)}`);
  // jco would wrap an out-of-range value modulo 2^64; refuse it instead.
  if (signed ? big < S64_MIN || big > S64_MAX : big < 0n || big > U64_MAX) {
    throw invalid(path, `${path} is outside the range of a WIT ${signed ? 's64' : 'u64'}`);
  }
  return big;
}

// The schema, compiled once: snake_case keys, signedness and enum spellings per field.
const RECORDS = new Map(
  Object.entries(SCHEMA.records).map(([type, fields]) => {
    const compiled = fields.map((f) => ({ ...f, key: snake(f.name), signed: SIGNED.has(`${type}.${f.name}`) }));
    return [type, { fields: compiled, keys: new Set(compiled.map((f) => f.key)) }];
  }),
);
// Wire spelling -> WIT case, per enum. Only wire spellings are accepted: `scale_up`, never `scale-up`.
const ENUMS = new Map(
  Object.entries(SCHEMA.enums).map(([type, cases]) => [type, new Map(cases.map((c) => [c.replaceAll('-', '_'), c]))]),
);

function toWit(value, field, path) {
  const { type } = field;
  if (type === 'string') {
    // A Date is a time's text, as on the JSON path.
    if (value instanceof Date && !Number.isNaN(value.getTime())) return value.toISOString();
    if (typeof value !== 'string') throw invalid(path, `${path} must be a string, not ${describe(value)}`);
    if (!wellFormed(value)) throw invalid(path, `${path} holds a lone surrogate and has no UTF-8 form`);
    return value;
  }
  if (type === 'boolean') {
    if (typeof value !== 'boolean') throw invalid(path, `${path} must be a boolean, not ${describe(value)}`);
    return value;
  }
  if (type === 'bigint') return toWitInteger(value, field.signed, path);
  const cases = ENUMS.get(type);
  if (cases) {
    const wit = typeof value === 'string' ? cases.get(value) : undefined;
    if (wit === undefined) throw invalid(path, `${path} must be one of ${[...cases.keys()].join(', ')}`);
    return wit;
  }
  return toWitRecord(value, type, path);
}

function toWitRecord(value, type, path) {
  if (!isPlainObject(value)) throw invalid(path, `${path || (type === 'Decision' ? 'decision' : 'request')} must be an object, not ${describe(value)}`);
  const { fields, keys } = RECORDS.get(type);
  const out = {};
  for (const field of fields) {
    const item = value[field.key];
    if (item === undefined || item === null) {
      if (field.optional) continue;
      // The typed record has no defaults: every non-optional field must be given.
      const at = fieldPath(path, field.key);
      throw invalid(at, `${at} is required by the typed path (evaluate() applies the SPEC's defaults)`);
    }
    if (field.list) {
      const at = fieldPath(path, field.key);
      if (!Array.isArray(item)) throw invalid(at, `${at} must be an array, not ${describe(item)}`);
      const list = new Array(item.length);
      for (let i = 0; i < item.length; i++) list[i] = toWit(item[i], field, `${at}[${i}]`);
      out[field.name] = list;
    } else {
      out[field.name] = toWit(item, field, fieldPath(path, field.key));
    }
  }
  for (const key in value) {
    if (!keys.has(key) && value[key] !== undefined) throw invalid(fieldPath(path, key), `unknown field ${fieldPath(path, key)}`);
  }
  return out;
}

function fromWit(value, type) {
  if (type === 'string' || type === 'boolean') return value;
  // Every integer the component returns is at most 10^15, so a number is exact; never round.
  if (type === 'bigint') return Number.isSafeInteger(Number(value)) ? Number(value) : value;
  if (ENUMS.has(type)) return value.replaceAll('-', '_');
  const out = {};
  for (const field of RECORDS.get(type).fields) {
    const item = value[field.name];
    out[field.key] =
      item === undefined ? null : field.list ? item.map((element) => fromWit(element, field.type)) : fromWit(item, field.type);
  }
  return out;
}

// --- loading and calling the component ---

async function sha256(bytes) {
  const subtle = globalThis.crypto?.subtle;
  if (!subtle) throw new Error('scale-units: WebCrypto (crypto.subtle) is needed to verify the component; use a secure context');
  const digest = new Uint8Array(await subtle.digest('SHA-256', bytes));
  return `sha256:${Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('')}`;
}

/**
 * Instantiates the component, reading each core module with `readCore(name)` (bytes) and
 * refusing one whose sha256 differs from the build's manifest.
 */
export async function instantiateEvaluator(readCore) {
  const getCoreModule = async (name) => {
    const expected = MANIFEST.core[name];
    if (!expected) throw new Error(`scale-units: unexpected core module ${name}; rebuild generated/`);
    const bytes = await readCore(name);
    const actual = await sha256(bytes);
    if (actual !== expected) throw new Error(`scale-units: ${name} has ${actual}, the build recorded ${expected}; rebuild generated/`);
    return WebAssembly.compile(bytes);
  };
  const root = await instantiate(getCoreModule, {});
  return root.evaluator;
}

/** Calls the component; an `evaluation-error` becomes a ScaleUnitsError, anything else propagates. */
function call(fn, ...args) {
  try {
    return fn(...args);
  } catch (error) {
    const payload = error?.payload;
    if (payload && typeof payload.code === 'string') throw evaluationError(payload);
    throw error;
  }
}

/** The UTF-8 length of a string (a lone surrogate counts 3, as its U+FFFD would). */
function utf8Length(text) {
  let size = 0;
  for (let i = 0; i < text.length; i += 1) {
    const unit = text.charCodeAt(i);
    if (unit < 0x80) size += 1;
    else if (unit < 0x800) size += 2;
    else if (unit >= 0xd800 && unit <= 0xdbff && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      size += 4;
      i += 1;
    } else size += 3;
  }
  return size;
}

/**
 * JSON text as the component will read it. A string with a lone surrogate has no UTF-8 form; the
 * string lowering would swap in U+FFFD, so it is refused as `invalid_json` (SPEC §1: invalid UTF-8).
 * Text over MAX_REQUEST_BYTES is a RequestTooLargeError.
 */
function jsonText(text, what) {
  if (typeof text !== 'string') throw new TypeError(`${what} takes JSON text (a string)`);
  // A UTF-16 unit is at most 3 UTF-8 bytes (a surrogate pair, 2 units, is 4): count only when in doubt.
  if (text.length * 3 > MAX_REQUEST_BYTES) {
    const size = utf8Length(text);
    if (size > MAX_REQUEST_BYTES) throw new RequestTooLargeError(size, MAX_REQUEST_BYTES);
  }
  if (!wellFormed(text)) {
    throw new ScaleUnitsError('invalid_json', 'the text holds a lone surrogate and has no UTF-8 form', '');
  }
  return text;
}

/** An `evaluation-error` value of the component as a ScaleUnitsError. */
const evaluationError = (payload) => new ScaleUnitsError(payload.code.replaceAll('-', '_'), payload.message, payload.path);

/**
 * Many JSON texts in one call of the component (WIT `evaluate-batch-json`): one entry per text, in
 * order, the decision's JSON text or the ScaleUnitsError of that text (one bad text does not stop
 * the others). `prepare(item, index)` turns an item into JSON text and may throw a ScaleUnitsError
 * for that item alone; a RequestTooLargeError fails the whole call, as in the Rust host.
 */
function evaluateBatchWith(ev, items, prepare, what) {
  if (!Array.isArray(items)) throw new TypeError(`${what} takes an array`);
  const results = new Array(items.length);
  const texts = [];
  const indices = [];
  items.forEach((item, index) => {
    try {
      texts.push(jsonText(prepare(item, index), `${what}[${index}]`));
      indices.push(index);
    } catch (error) {
      if (!(error instanceof ScaleUnitsError)) throw error;
      results[index] = error;
    }
  });
  const outcomes = texts.length ? ev.evaluateBatchJson(texts) : [];
  outcomes.forEach((outcome, n) => {
    results[indices[n]] = outcome.tag === 'ok' ? outcome.val.json : evaluationError(outcome.val);
  });
  return results;
}

/** A WIT `diagnosis` as the facade's list of faults (codes in their wire spelling). */
const faultsOf = (diagnosis) =>
  diagnosis.faults.map((fault) => ({
    code: fault.code.replaceAll('-', '_'),
    message: fault.message,
    path: fault.path,
    hint: fault.hint,
  }));

/** The text of a request or contract to diagnose or describe: JSON text as given, a plain object as JSON. */
const diagnosisText = (value, what) => jsonText(typeof value === 'string' ? value : requestText(value), what);

// Functions a component of an older WIT minor lacks, with the version that added them: the facade
// loads such a component and throws UnsupportedError when one is called.
const ADDED = {
  deriveJson: ['derive-json', '0.2.0'],
  diagnoseRequestJson: ['diagnose-request-json', '0.2.0'],
  diagnoseContractJson: ['diagnose-contract-json', '0.2.0'],
  gate: ['gate', '0.3.0'],
  gateJson: ['gate-json', '0.3.0'],
  scalerReadingJson: ['scaler-reading-json', '0.3.0'],
  validateObservationsJson: ['validate-observations-json', '0.3.0'],
  derivationText: ['derivation-text', '0.3.0'],
  limitsJson: ['limits-json', '0.3.0'],
};

/** The export `name` of `ev`, or an UnsupportedError naming what the component lacks. */
function exported(ev, name) {
  const fn = ev[name];
  if (typeof fn === 'function') return fn;
  const [wit, since] = ADDED[name] ?? [name, 'current'];
  throw new UnsupportedError(wit, ev.info().witVersion, since);
}

/** A proposed change `{to_replicas, kind}` as the WIT record (no default: `kind` is required). */
const toWitChange = (change) => toWitRecord(change, 'ProposedChange', 'change');

/** The public API over an instantiated evaluator interface. */
export function createApi(ev) {
  const evaluateJson = (text) => call(ev.evaluateJson, jsonText(text, 'evaluateJson')).json;
  const evaluateBatchJson = (texts) => evaluateBatchWith(ev, texts, (text) => text, 'evaluateBatchJson');
  const simulateJson = (text) => call(ev.simulateJson, jsonText(text, 'simulateJson')).json;
  const deriveJson = (text) => call(exported(ev, 'deriveJson'), jsonText(text, 'deriveJson')).json;
  const gateJson = (request, change) =>
    call(exported(ev, 'gateJson'), jsonText(request, 'gateJson'), jsonText(change, 'gateJson'));
  const scalerReadingJson = (text) => exported(ev, 'scalerReadingJson')(jsonText(text, 'scalerReadingJson'));
  const validateObservationsJson = (text) => {
    call(exported(ev, 'validateObservationsJson'), jsonText(text, 'validateObservationsJson'));
  };
  const limitsJson = () => exported(ev, 'limitsJson')();
  return {
    componentDigest: MANIFEST.componentDigest,
    evaluateJson,
    evaluate: (request) => JSON.parse(evaluateJson(requestText(request))),
    evaluateBatchJson,
    evaluateBatch: (requests) =>
      evaluateBatchWith(ev, requests, requestText, 'evaluateBatch').map((entry) =>
        typeof entry === 'string' ? JSON.parse(entry) : entry),
    evaluateTyped: (request) => fromWit(call(ev.evaluate, toWitRecord(request, 'EvaluationRequest', '')), 'Decision'),
    validateContract: (contract) => fromWit(call(ev.validateContractJson, jsonText(requestText(contract), 'validateContract')), 'ContractIdentity'),
    validateContractJson: (text) => fromWit(call(ev.validateContractJson, jsonText(text, 'validateContractJson')), 'ContractIdentity'),
    explain: (decision) => fromWit(call(ev.explain, toWitRecord(decision, 'Decision', '')), 'Explanation'),
    surfaceProfile: (surface) => fromWit(call(ev.surfaceProfile, toWit(surface, { type: 'SurfaceKind' }, 'surface')), 'Profile'),
    info: () => fromWit(call(ev.info), 'EvaluatorInfo'),
    simulateJson,
    // Like `evaluate`, the object goes through JSON: the core applies the input's defaults.
    simulate: (input) => JSON.parse(simulateJson(requestText(input))),
    deriveJson,
    // Integers past 2^53 (the growth gate's products) come back as BigInt, never rounded.
    derive: (request) => parseExactJson(deriveJson(requestText(request))),
    diagnose: (request) => faultsOf(call(exported(ev, 'diagnoseRequestJson'), diagnosisText(request, 'diagnose'))),
    diagnoseContract: (contract) =>
      faultsOf(call(exported(ev, 'diagnoseContractJson'), diagnosisText(contract, 'diagnoseContract'))),
    gateJson,
    // Like `evaluate`, the request goes through JSON (the core applies its defaults); so does the
    // change, whose `kind` defaults to `scale` there.
    gate: (request, change) => JSON.parse(gateJson(requestText(request), requestText(change))),
    gateTyped: (request, change) =>
      fromWit(call(exported(ev, 'gate'), toWitRecord(request, 'EvaluationRequest', ''), toWitChange(change)), 'GateVerdict'),
    scalerReadingJson,
    scalerReading: (request) => JSON.parse(scalerReadingJson(requestText(request))),
    validateObservationsJson,
    validateObservations: (request) => validateObservationsJson(requestText(request)),
    derivationText: (request) => call(exported(ev, 'derivationText'), diagnosisText(request, 'derivationText')),
    limitsJson,
    limits: () => JSON.parse(limitsJson()),
  };
}
