// The playground: two editors, the live decision, the controls, the simulator, the comparison and
// the share link, all over the one evaluator component (bindings-js's browser entry). Nothing here
// decides.
import { ScaleUnitsError, componentDigest, derivationText, diagnose, evaluate, gate, info, scalerReading, validateContractJson } from 'scale-units';
import decisionSchema from '../../schema/decision.schema.json';
import { Compare } from './compare.js';
import { Controls } from './controls.js';
import { reasonCatalogue, renderDecision } from './decision.js';
import { DOC_PAGES } from './docs.js';
import { h } from './dom.js';
import { Editor } from './editor.js';
import { loadExamples } from './examples.js';
import { scaleUnitYaml } from './scaleunit.js';
import { schemaId, schemaProblems } from './schema.js';
import { decodeState, encodeState } from './share.js';
import { Simulator } from './simulator.js';
import { editText, jsonSyntaxError, locate, parseText, pathSegments, pathString, placeWords, printText } from './wire.js';

const $ = (id) => document.getElementById(id);
const examples = loadExamples();
const catalogue = reasonCatalogue(decisionSchema.$defs.Reason.enum);

let exampleId = null;
let lastContractText = null;

/** Copies `text`; says in `status` whether it could (a page without clipboard permission cannot). */
async function copyText(text, status, what) {
  try {
    await navigator.clipboard.writeText(text);
    status.textContent = `Copied ${what}.`;
    return true;
  } catch {
    status.textContent = `Could not copy ${what} (no clipboard permission): select it and copy by hand.`;
    return false;
  }
}

// ---- links ------------------------------------------------------------------------------------

$('doc-links').replaceChildren(...DOC_PAGES.map((p) => h('a', { href: p.page, dataset: { doc: p.id } }, p.label)));

// ---- editors ----------------------------------------------------------------------------------

// The comparison reads the contract editor's text when it runs, so every edit of it schedules a
// run: the evaluation passes a contract on to the simulator (whose runs also schedule one) only
// when the text differs from the text it evaluated last, and an edit undone within the
// evaluation's debounce never reaches it, while the comparison may have run in between.
const contractEditor = new Editor($('editor-contract'), 'contract', 'Contract', () => {
  changed();
  compare.schedule();
});
const requestEditor = new Editor($('editor-request'), 'request', 'Request (observations, replicas, now)', () => changed());
const editors = { contract: contractEditor, request: requestEditor };

/** A wire path (`contract.policy.target`, `capacities[1]`) -> the editor and line it points at. */
function place(segments) {
  const [editor, rest] = segments[0] === 'contract' ? ['contract', segments.slice(1)] : ['request', segments];
  return { editor, line: locate(editors[editor].text, rest) };
}

// The contract as a ScaleUnit for kubectl: copied as shown, with a word when the component refuses
// it (the service would report that refusal in the resource's Ready condition).
$('copy-scale-unit').addEventListener('click', async () => {
  const status = $('scale-unit-status');
  const parsed = parseEditor(contractEditor);
  if (parsed.error) {
    status.textContent = `Fix the contract first: ${placeWords('contract', parsed.error.line, parsed.error.column)}: ${parsed.error.message}`;
    return;
  }
  const copied = await copyText(scaleUnitYaml(parsed.value), status, 'the contract as a ScaleUnit (kubectl apply -f FILE)');
  try {
    validateContractJson(JSON.stringify(parsed.value));
  } catch (error) {
    if (copied) status.textContent += ` The component refuses this contract: ${error.message}`;
  }
});

// ---- controls, simulator, comparison ----------------------------------------------------------

const controls = new Controls($('controls'), (edits) => {
  let text = requestEditor.text;
  for (const [segments, value] of edits) text = editText(text, requestEditor.format, segments, value);
  requestEditor.set(text);
  changed({ immediate: true });
});

const simulator = new Simulator(
  $('sim-inputs'),
  $('sim-output'),
  catalogue,
  () => scheduleShare(),
  (id) => loadExample(id),
  () => compare.schedule(),
);

const compare = new Compare(
  $('compare'),
  {
    editor: () => ({ text: contractEditor.text, format: contractEditor.format }),
    origin: () => exampleId,
    examples,
    trace: () => simulator.traceInput(),
    traceTitle: () => simulator.traceTitle(),
  },
  () => scheduleShare(),
  ({ text, format }) => {
    contractEditor.set(text, format, { keepScroll: false });
    changed({ immediate: true });
    contractEditor.area.scrollIntoView({ block: 'center' });
  },
);

// ---- the one evaluation -----------------------------------------------------------------------

/**
 * Editor text -> `{value}` or `{error: {line, column, message}}` in words. JSON goes through the
 * component's own parser first: it names the line and column of a syntax error and refuses a
 * duplicate key (SPEC §1), which JSON.parse would let through with the last value.
 */
function parseEditor(editor) {
  if (editor.text.trim() === '') return { error: { line: 1, message: `the ${editor.name} editor is empty` } };
  if (editor.format === 'json') {
    try {
      validateContractJson(editor.text);
    } catch (error) {
      const syntax = error instanceof ScaleUnitsError && error.code === 'invalid_json' ? jsonSyntaxError(error.message) : null;
      if (syntax) return { error: syntax };
      // Any other refusal is about the contract's content, which the evaluation reports.
    }
  }
  return parseText(editor.text, editor.format);
}

function evaluateNow() {
  const problems = [];
  const contract = parseEditor(contractEditor);
  const request = parseEditor(requestEditor);
  for (const [name, parsed] of [
    ['contract', contract],
    ['request', request],
  ]) {
    if (parsed.error) problems.push({ editor: name, source: 'syntax', ...parsed.error });
  }

  // A whole request pasted into the request editor: its contract moves to the contract editor.
  if (!request.error && request.value && typeof request.value === 'object' && 'contract' in request.value && !Array.isArray(request.value)) {
    const { contract: moved, ...rest } = request.value;
    contractEditor.set(printText(moved, contractEditor.format));
    requestEditor.set(printText(rest, requestEditor.format));
    return evaluateNow();
  }

  let decision = null;
  let refusal = null;
  let derivation = null;
  let reading = null;
  let permits = null;
  let faults = [];
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
      // The numbers behind it, in the core's own words: the same request, the same decision path.
      derivation = derivationText(whole);
      reading = scalerReading(whole);
      permits = (to) => gate(whole, { to_replicas: to });
    } catch (error) {
      if (!(error instanceof ScaleUnitsError)) throw error;
      refusal = error;
      faults = diagnose(whole);
      problems.unshift({ ...place(pathSegments(error.path)), source: 'component', code: error.code, path: error.path, message: error.message });
    }
  }

  renderProblems(problems);
  renderDecision($('decision'), decision, {
    refusal,
    unreadable: problems.filter((p) => p.source === 'syntax'),
    derivation,
    permits,
    reading,
    faults,
    onCopy: (json) => copyText(json, $('decision-status'), 'the decision as JSON'),
  });
  if (requestValue) controls.update(requestValue, contractValue, decision);

  if (contractEditor.text !== lastContractText) {
    lastContractText = contractEditor.text;
    simulator.setContract(contract.error ? null : contractValue);
  }
}

const SOURCE_WORDS = { syntax: 'syntax error', schema: 'schema', component: 'refused by the component' };

/** Each editor's problems right under it, and marked in its gutter. */
function renderProblems(problems) {
  for (const [name, editor] of Object.entries(editors)) {
    const mine = problems.filter((p) => p.editor === name);
    editor.mark(mine);
    const root = $(`problems-${name}`);
    if (mine.length === 0) {
      root.replaceChildren(h('p', { className: 'ok', dataset: { editor: name } }, `The ${name} is well formed.`));
      continue;
    }
    root.replaceChildren(
      h(
        'ul',
        { className: 'problem-list' },
        mine.map((p) =>
          h(
            'li',
            {
              className: `problem ${p.source}`,
              dataset: { source: p.source, path: p.path ?? '', code: p.code ?? '', editor: p.editor, line: String(p.line ?? ''), column: String(p.column ?? '') },
            },
            h('span', { className: 'source' }, SOURCE_WORDS[p.source]),
            ' ',
            h(
              'button',
              { type: 'button', className: 'link', onclick: () => p.line && editors[p.editor].reveal(p.line), title: 'show it in the editor' },
              placeWords(p.editor, p.line, p.column),
            ),
            p.code ? [' · ', h('code', {}, p.code)] : null,
            p.path ? [' at ', h('code', { className: 'path' }, p.path)] : null,
            h('span', { className: 'message' }, `: ${p.message}`),
          ),
        ),
      ),
    );
  }
}

let evalTimer;
function changed({ immediate = false } = {}) {
  clearTimeout(evalTimer);
  if (immediate) evaluateNow();
  else evalTimer = setTimeout(evaluateNow, 120);
  scheduleShare();
}

// ---- gallery ----------------------------------------------------------------------------------

function markExample() {
  for (const card of $('gallery').children) card.querySelector('.card-pick').setAttribute('aria-pressed', String(card.dataset.example === exampleId));
}

function loadExample(id) {
  const example = examples.find((e) => e.id === id) ?? examples[0];
  exampleId = example.id;
  contractEditor.set(example.contract.text, example.contract.format, { keepScroll: false });
  requestEditor.set(example.request.text, example.request.format, { keepScroll: false });
  markExample();
  changed({ immediate: true });
}

/** A card: the button that loads the example, and its whole description behind "more". */
function card(e) {
  const what = h('span', { className: 'what', id: `what-${e.id.replace(/[^a-z0-9]+/gi, '-')}` }, e.what.replace(/`/g, ''));
  const more = h('button', { type: 'button', className: 'link more', 'aria-expanded': 'false', 'aria-controls': what.id, hidden: true }, 'more');
  const root = h(
    'div',
    { className: 'card', dataset: { example: e.id } },
    h(
      'button',
      { type: 'button', className: 'card-pick', onclick: () => loadExample(e.id), 'aria-pressed': 'false' },
      h('strong', {}, e.title),
      h('code', { className: 'surface' }, e.surface),
    ),
    what,
    more,
    e.decision ? h('span', { className: 'expect' }, e.decision) : null,
  );
  more.addEventListener('click', () => {
    const open = root.classList.toggle('expanded');
    more.setAttribute('aria-expanded', String(open));
    more.textContent = open ? 'less' : 'more';
  });
  return root;
}

$('gallery').replaceChildren(...examples.map(card));
// "more" only where the description is cut, which depends on the width: checked as it changes.
new ResizeObserver(() => {
  for (const c of $('gallery').children) {
    if (c.classList.contains('expanded')) continue;
    const what = c.querySelector('.what');
    c.querySelector('.more').hidden = what.scrollHeight <= what.clientHeight + 1;
  }
}).observe($('gallery'));

// ---- share link -------------------------------------------------------------------------------

function currentState() {
  return {
    example: exampleId,
    contract: { text: contractEditor.text, format: contractEditor.format },
    request: { text: requestEditor.text, format: requestEditor.format },
    sim: simulator.state(),
    compare: compare.state(),
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

/** A state from `encodeState`; links written before a field existed lack it and get its default. */
async function restore(fragment) {
  const state = await decodeState(fragment);
  exampleId = state.example ?? null;
  markExample();
  contractEditor.set(state.contract.text, state.contract.format, { keepScroll: false });
  requestEditor.set(state.request.text, state.request.format, { keepScroll: false });
  lastContractText = null;
  simulator.restore(state.sim);
  compare.restore(state.compare);
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
const digestStatus = h('span', { id: 'component-digest-status', className: 'muted', role: 'status' });
$('component').replaceChildren(
  h(
    'p',
    { className: 'component-line' },
    'Decided by the evaluator component ',
    h(
      'span',
      { className: 'digest-box' },
      h('code', { id: 'component-digest', title: `${componentDigest}: sha256 of the component bytes; the Rust host, Node and Python report the same` }, componentDigest),
      h('button', { type: 'button', id: 'component-digest-copy', onclick: () => copyText(componentDigest, digestStatus, 'the component digest') }, 'Copy'),
    ),
    ' ',
    digestStatus,
  ),
  h(
    'p',
    {},
    `evaluator ${versions.evaluator_version} · schema "${versions.schema_version}" · WIT scale-units:evaluator@${versions.wit_version}`,
    h('span', { id: 'component-versions', hidden: true, dataset: versions }),
  ),
  h('p', { className: 'muted' }, 'Editor checks: ', h('code', {}, schemaId), ' (generated from the core’s types). The component is the judge.'),
  h('p', { className: 'muted' }, 'Documents: ', DOC_PAGES.flatMap((p, i) => [i ? ' · ' : '', h('a', { href: p.page }, p.label)])),
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
