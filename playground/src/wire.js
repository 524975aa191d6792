// Text <-> value for the two editors (JSON or YAML), and where a wire path sits in the text.
// Rules stay in the component: this module only parses, prints and points.
import { isMap, isSeq, parseDocument } from 'yaml';

/** `contract.policy.target`, `capacities[2].reserved` or `/contract/policy/target` -> segments. */
export function pathSegments(path) {
  if (!path) return [];
  const text = path.startsWith('/') ? path.slice(1).replaceAll('/', '.') : path;
  const out = [];
  for (const part of text.split('.')) {
    const m = /^([^[]*)((?:\[\d+\])*)$/.exec(part);
    if (!m) {
      out.push(part);
      continue;
    }
    if (m[1]) out.push(m[1]);
    for (const index of m[2].matchAll(/\[(\d+)\]/g)) out.push(Number(index[1]));
  }
  // A JSON Pointer writes indices as plain segments.
  return out.map((s) => (typeof s === 'string' && /^\d+$/.test(s) ? Number(s) : s));
}

/** Segments -> the SPEC's path spelling (`capacities[2].reserved`). */
export function pathString(segments) {
  let out = '';
  for (const s of segments) out += typeof s === 'number' ? `[${s}]` : out ? `.${s}` : s;
  return out;
}

function lineOf(text, offset) {
  let line = 1;
  for (let i = 0; i < offset && i < text.length; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}

// serde_json's messages (the component's parser) in words a person reads; any other passes as is.
const SYNTAX_WORDS = [
  [/^EOF while parsing an object$/, 'the text ends before the object is closed (a `}` is missing)'],
  [/^EOF while parsing a list$/, 'the text ends before the list is closed (a `]` is missing)'],
  [/^EOF while parsing a string$/, 'the text ends inside a string (a closing `"` is missing)'],
  [/^EOF while parsing a value$/, 'the text ends where a value should be'],
  [/^expected `:`$/, 'a `:` is missing after the key'],
  [/^expected `,` or `}`$/, 'a `,` or a closing `}` is missing'],
  [/^expected `,` or `]`$/, 'a `,` or a closing `]` is missing'],
  [/^expected value$/, 'not a JSON value (strings need double quotes)'],
  [/^expected ident$/, 'not a JSON word (the only bare words are true, false and null)'],
  [/^key must be a string$/, 'a key must be a string in double quotes'],
  [/^trailing characters$/, 'text after the end of the document'],
  [/^invalid escape$/, 'an invalid escape in a string'],
  [/^invalid number$/, 'an invalid number'],
  [/^number out of range$/, 'a number out of range'],
  [/^control character .* while parsing a string$/, 'a raw control character (a tab or line break) inside a string'],
];

/**
 * A JSON syntax error of the component's parser (`… is not valid JSON: <what> at line L column C`)
 * -> `{line, column, message}` in plain words; `null` when `text` is not such a message.
 */
export function jsonSyntaxError(text) {
  const m = /is not valid JSON: (.*) at line (\d+) column (\d+)$/s.exec(text);
  if (!m) return null;
  const what = m[1];
  const words = SYNTAX_WORDS.find(([re]) => re.test(what));
  return { line: Number(m[2]), column: Number(m[3]), message: words ? words[1] : what };
}

/** `contract, line 61, column 3` (the column when known). */
export function placeWords(editor, line, column) {
  if (!line) return editor;
  return `${editor}, line ${line}${column ? `, column ${column}` : ''}`;
}

/**
 * Parses editor text. Returns `{value}` or `{error: {message, line}}`. JSON goes through
 * JSON.parse (the wire's own syntax); YAML through the `yaml` package (YAML 1.2, unique keys).
 */
export function parseText(text, format) {
  if (format === 'json') {
    try {
      return { value: JSON.parse(text) };
    } catch (error) {
      // V8 says "... at position N" or "(line L column C)"; point at the line when it does.
      const lc = /line (\d+) column (\d+)/.exec(error.message);
      const pos = /position (\d+)/.exec(error.message);
      const line = lc ? Number(lc[1]) : pos ? lineOf(text, Number(pos[1])) : undefined;
      return { error: { message: error.message, line, column: lc ? Number(lc[2]) : undefined } };
    }
  }
  const doc = parseDocument(text, { uniqueKeys: true, prettyErrors: false });
  if (doc.errors.length > 0) {
    const first = doc.errors[0];
    const offset = first.pos[0];
    const column = offset - text.lastIndexOf('\n', offset - 1);
    return { error: { message: first.message.split('\n')[0], line: lineOf(text, offset), column } };
  }
  return { value: doc.toJS({ maxAliasCount: 100 }) };
}

/** A value as editor text in `format`. */
export function printText(value, format) {
  if (format === 'json') return `${JSON.stringify(value, null, 2)}\n`;
  const doc = parseDocument('{}');
  doc.contents = doc.createNode(value);
  return doc.toString({ lineWidth: 0 });
}

/**
 * Sets `segments` to `value` in the text, keeping a YAML document's comments and layout. `undefined`
 * deletes the field. Returns the new text, or the old one when it does not parse.
 */
export function editText(text, format, segments, value) {
  if (format === 'json') {
    const parsed = parseText(text, 'json');
    if (parsed.error) return text;
    let node = parsed.value;
    for (const s of segments.slice(0, -1)) {
      if (node[s] === null || typeof node[s] !== 'object') node[s] = {};
      node = node[s];
    }
    const last = segments[segments.length - 1];
    if (value === undefined) delete node[last];
    else node[last] = value;
    return `${JSON.stringify(parsed.value, null, 2)}\n`;
  }
  const doc = parseDocument(text, { uniqueKeys: true });
  if (doc.errors.length > 0) return text;
  if (value === undefined) doc.deleteIn(segments);
  else doc.setIn(segments, value);
  return doc.toString({ lineWidth: 0 });
}

/**
 * The 1-based line where `segments` sits in the text, or that of its deepest ancestor that exists
 * (a missing field points at the object that lacks it). Works for JSON too: it is YAML's flow style.
 */
export function locate(text, segments) {
  const doc = parseDocument(text, { uniqueKeys: false, keepSourceTokens: false });
  let node = doc.contents;
  let best = node?.range ? node.range[0] : 0;
  for (const s of segments) {
    if (isMap(node)) {
      const pair = node.items.find((p) => (p.key?.value ?? p.key) === s);
      if (!pair) break;
      if (pair.key?.range) best = pair.key.range[0];
      node = pair.value;
    } else if (isSeq(node) && typeof s === 'number' && s < node.items.length) {
      node = node.items[s];
      if (node?.range) best = node.range[0];
    } else break;
  }
  return lineOf(text, best);
}
