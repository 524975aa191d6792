// The playground: two editors, the live decision, the controls, the simulator and the share link,
// all over the one evaluator component (bindings-js's browser entry). Nothing here decides.
import { ScaleUnitsError, componentDigest, evaluate, info, validateContractJson } from 'scale-units';
import decisionSchema from '../../schema/decision.schema.json';
import { Controls } from './controls.js';
import { reasonCatalogue, renderDecision } from './decision.js';
import { h } from './dom.js';
import { Editor } from './editor.js';
import { loadExamples } from './examples.js';
import { schemaId, schemaProblems } from './schema.js';
import { decodeState, encodeState } from './share.js';
import { Simulator } from './simulator.js';
import { editText, locate, parseText, pathString, pathSegments, printText } from './wire.js';

const $ = (id) => document.getElementById(id);
const examples = loadExamples();
const catalogue = reasonCatalogue(decisionSchema.$defs.Reason.enum);

let exampleId = null;
let lastContractText = null;

// ---- editors ----------------------------------------------------------------------------------

const contractEditor = new Editor($('editor-contract'), 'contract', 'Contract', () => changed());
const requestEditor = new Editor($('editor-request'), 'request', 'Request (observations, replicas, now)', () => changed());
const editors = { contract: contractEditor, request: requestEditor };

/** A wire path (`contract.policy.target`, `capacities[1]`) -> the editor and line it points at. */
function place(segments) {
  const [editor, rest] = segments[0] === 'contract' ? ['contract', segments.slice(1)] : ['request', segments];
  return { editor, line: locate(editors[editor].text, rest) };
}

// ---- controls, simulator ----------------------------------------------------------------------

const controls = new Controls($('controls'), (edits) => {
  let text = requestEditor.text;
  for (const [segments, value] of edits) text = editText(text, requestEditor.format, segments, value);
  requestEditor.set(text);
  changed({ immediate: true });
});

const simulator = new Simulator($('sim-inputs'), $('sim-output'), catalogue, () => scheduleShare(), (id) => loadExample(id));

// ---- the one evaluation -----------------------------------------------------------------------

/**
 * JSON text through the component's own parser first: it names the line of a syntax error and
 * refuses a duplicate key (SPEC §1), which JSON.parse would let through with the last value.
 */
function parseEditor(editor) {
  if (editor.format === 'json') {
    try {
      validateContractJson(editor.text);
    } catch (error) {
      if (error instanceof ScaleUnitsError && error.code === 'invalid_json') {
        const at = /line (\d+) column (\d+)/.exec(error.message);
        return { error: { message: error.message.replace(/^.*? is not valid JSON: /, ''), line: at ? Number(at[1]) : undefined } };
      }
      // Any other refusal is about the contract's content, which the evaluation reports.
    }
  }
  return parseText(editor.text, editor.format);
}

function evaluateNow() {
  const problems = [];
  const contract = parseEditor(contractEditor);
  const request = parseEditor(requestEditor);
  if (contract.error) problems.push({ editor: 'contract', source: 'syntax', line: contract.error.line, message: contract.error.message });
  if (request.error) problems.push({ editor: 'request', source: 'syntax', line: request.error.line, message: request.error.message });

  // A whole request pasted into the request editor: its contract moves to the contract editor.
  if (!request.error && request.value && typeof request.value === 'object' && 'contract' in request.value && !Array.isArray(request.value)) {
    const { contract: moved, ...rest } = request.value;
    contractEditor.set(printText(moved, contractEditor.format));
    requestEditor.set(printText(rest, requestEditor.format));
    return evaluateNow();
  }

  let decision = null;
  let refusal = null;
  const contractValue = contract.error ? undefined : contract.value;
  const requestValue = request.error || !request.value || typeof request.value !== 'object' || Array.isArray(request.value) ? null : request.value;
  if (!request.error && !requestValue) problems.push({ editor: 'request', source: 'syntax', line: 1, message: 'the request must be an object' });

  if (!contract.error && requestValue) {
    const whole = { ...requestValue, contract: contractValue };
    for (const p of schemaProblems(whole)) {
      problems.push({ ...place(p.path), source: 'schema', path: pathString(p.path), message: p.message });
    }
    try {
      decision = evaluate(whole);
    } catch (error) {
      if (!(error instanceof ScaleUnitsError)) throw error;
      refusal = error;
      problems.unshift({ ...place(pathSegments(error.path)), source: 'component', code: error.code, path: error.path, message: error.message });
    }
  }

  renderProblems(problems);
  renderDecision($('decision'), decision, refusal ?? (decision ? null : { code: 'unparsed', path: '', message: 'Fix the problems listed under the editors.' }));
  if (requestValue) controls.update(requestValue, contractValue, decision);

  if (contractEditor.text !== lastContractText) {
    lastContractText = contractEditor.text;
    simulator.setContract(contract.error ? null : contractValue);
  }
}

function renderProblems(problems) {
  for (const [name, editor] of Object.entries(editors)) editor.mark(problems.filter((p) => p.editor === name));
  const root = $('problems');
  if (problems.length === 0) {
    root.replaceChildren(h('p', { className: 'ok', id: 'problems-none' }, 'The contract and the request are well formed.'));
    return;
  }
  root.replaceChildren(
    h(
      'ul',
      { id: 'problem-list' },
      problems.map((p) =>
        h(
          'li',
          { className: `problem ${p.source}`, dataset: { source: p.source, path: p.path ?? '', code: p.code ?? '', editor: p.editor, line: String(p.line ?? '') } },
          h(
            'button',
            { type: 'button', className: 'link', onclick: () => p.line && editors[p.editor].reveal(p.line), title: 'show in the editor' },
            `${p.editor}${p.line ? `:${p.line}` : ''}`,
          ),
          ' ',
          h('span', { className: 'source' }, { syntax: 'syntax', schema: 'schema', component: 'component' }[p.source]),
          ' ',
          p.code ? h('code', {}, p.code) : null,
          p.path ? [' at ', h('code', { className: 'path' }, p.path)] : null,
          `: ${p.message}`,
        ),
      ),
    ),
  );
}

let evalTimer;
function changed({ immediate = false } = {}) {
  clearTimeout(evalTimer);
  if (immediate) evaluateNow();
  else evalTimer = setTimeout(evaluateNow, 120);
  scheduleShare();
}

// ---- gallery ----------------------------------------------------------------------------------

function loadExample(id) {
  const example = examples.find((e) => e.id === id) ?? examples[0];
  exampleId = example.id;
  contractEditor.set(example.contract.text, example.contract.format, { keepScroll: false });
  requestEditor.set(example.request.text, example.request.format, { keepScroll: false });
  for (const card of $('gallery').children) card.setAttribute('aria-pressed', String(card.dataset.example === exampleId));
  changed({ immediate: true });
}

$('gallery').replaceChildren(
  ...examples.map((e) =>
    h(
      'button',
      { type: 'button', className: 'card', dataset: { example: e.id }, onclick: () => loadExample(e.id), 'aria-pressed': 'false' },
      h('strong', {}, e.title),
      h('code', { className: 'surface' }, e.surface),
      h('span', { className: 'what' }, e.what.replace(/`/g, '')),
      e.decision ? h('span', { className: 'expect' }, e.decision) : null,
    ),
  ),
);

// ---- share link -------------------------------------------------------------------------------

function currentState() {
  return {
    example: exampleId,
    contract: { text: contractEditor.text, format: contractEditor.format },
    request: { text: requestEditor.text, format: requestEditor.format },
    sim: simulator.state(),
  };
}

let shareTimer;
let shareWrite = Promise.resolve();
function scheduleShare() {
  clearTimeout(shareTimer);
  shareTimer = setTimeout(() => {
    shareWrite = encodeState(currentState()).then((fragment) => {
      history.replaceState(null, '', `#${fragment}`);
      document.body.dataset.shared = fragment.length;
    });
  }, 250);
}

async function restore(fragment) {
  const state = await decodeState(fragment);
  exampleId = state.example ?? null;
  for (const card of $('gallery').children) card.setAttribute('aria-pressed', String(card.dataset.example === exampleId));
  contractEditor.set(state.contract.text, state.contract.format, { keepScroll: false });
  requestEditor.set(state.request.text, state.request.format, { keepScroll: false });
  lastContractText = null;
  simulator.restore(state.sim);
  evaluateNow();
}

$('share').addEventListener('click', async () => {
  clearTimeout(shareTimer);
  const fragment = await encodeState(currentState());
  history.replaceState(null, '', `#${fragment}`);
  await shareWrite;
  let copied = false;
  try {
    await navigator.clipboard.writeText(location.href);
    copied = true;
  } catch {
    // No clipboard permission (a headless browser, an iframe): the address bar has the link.
  }
  $('share-status').textContent = `${copied ? 'Copied' : 'In the address bar'}: ${location.href.length} characters`;
});

// ---- the component that decides ---------------------------------------------------------------

const versions = info();
$('component').replaceChildren(
  h(
    'p',
    {},
    'Decided by the evaluator component ',
    h('code', { id: 'component-digest', title: 'sha256 of the component bytes; the Rust host, Node and Python report the same' }, componentDigest),
    ` · evaluator ${versions.evaluator_version} · schema "${versions.schema_version}" · WIT scale-units:evaluator@${versions.wit_version}`,
    h('span', { id: 'component-versions', hidden: true, dataset: versions }),
  ),
  h('p', { className: 'muted' }, 'Editor checks: ', h('code', {}, schemaId), ' (generated from the core’s types). The component is the judge.'),
);

// ---- start ------------------------------------------------------------------------------------

const initial = location.hash.slice(1);
if (initial) {
  try {
    await restore(initial);
  } catch (error) {
    $('boot-error').hidden = false;
    $('boot-error').textContent = `This share link could not be read (${error.message}); showing an example instead.`;
    simulator.restore({ trace: 'spike' });
    loadExample('api-gateway');
  }
} else {
  simulator.restore({ trace: 'spike' });
  loadExample('api-gateway');
}
window.addEventListener('hashchange', () => {
  const fragment = location.hash.slice(1);
  if (fragment) restore(fragment).catch(() => {});
});
document.body.dataset.ready = 'true';
