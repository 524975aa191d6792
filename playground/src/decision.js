// The live decision: action, replicas, each reason in plain words (the component's own catalogue,
// through `explain`) linked to its place in the SPEC, the evidence, the identities, and the
// decision as JSON to copy or download. When there is no decision, why not, in words.
import { ScaleUnitsError, explain } from 'scale-units';
import { DOCS, reasonHref } from './docs.js';
import { breakable, h, shortDigest } from './dom.js';
import { placeWords } from './wire.js';

const ACTION_WORDS = { scale_up: 'scale up', scale_down: 'scale down', hold: 'hold', blocked: 'blocked' };

/**
 * Renders into `root` the decision, or why there is none: `refusal` (the component's typed error)
 * or `unreadable` (syntax problems: the component never saw the text). `onCopy(json)` copies.
 */
export function renderDecision(root, decision, { refusal = null, unreadable = [], derivation = null, faults = [], permits = null, reading = null, onCopy } = {}) {
  if (!decision) {
    root.replaceChildren(noDecision(refusal, unreadable), diagnosisList(refusal ? faults : []));
    return;
  }
  const words = explain(decision);
  const moved = decision.desired_replicas !== decision.current_replicas;
  const json = `${JSON.stringify(decision, null, 2)}\n`;
  root.replaceChildren(
    h(
      'div',
      { className: `verdict ${decision.action}`, dataset: { testid: 'verdict', action: decision.action } },
      h('span', { className: `badge ${decision.action}`, id: 'action' }, ACTION_WORDS[decision.action] ?? decision.action),
      h(
        'span',
        { className: 'replicas', id: 'replicas' },
        moved ? `${decision.current_replicas} → ${decision.desired_replicas} replicas` : `stays at ${decision.current_replicas} replicas`,
      ),
      decision.drain_required ? h('span', { className: 'badge drain' }, 'drain required') : null,
    ),
    h('p', { className: 'summary' }, words.summary),
    h(
      'ul',
      { className: 'reasons', id: 'reasons' },
      words.reasons.map(({ reason, text }) =>
        h(
          'li',
          { dataset: { reason } },
          h('a', { href: reasonHref(reason), className: 'reason-link', title: `${reason} in the SPEC (§7, the algorithm)` }, h('code', {}, reason)),
          ' ',
          text,
        ),
      ),
    ),
    h('p', { className: 'muted small' }, 'Each reason links to the step of the ', h('a', { href: DOCS.algorithm }, 'SPEC’s algorithm (§7)'), ' that gives it.'),
    // The derivation: how the numbers came out (the component's `derivation-text`, the same path).
    derivation ? derivationSection(derivation) : null,
    // What a gate in front of the actuator would let through (the component's `gate`, SPEC §12).
    permits ? gateSection(decision, permits, reading) : null,
    h('h3', {}, 'Evidence'),
    h(
      'table',
      { className: 'evidence', id: 'evidence' },
      h('thead', {}, h('tr', {}, ['kind', 'status', 'code', 'ref and digest'].map((c) => h('th', {}, c)))),
      h(
        'tbody',
        {},
        decision.evidence.map((e) =>
          h(
            'tr',
            { className: e.status, dataset: { kind: e.kind, status: e.status } },
            h('td', { className: 'kind' }, e.kind),
            h('td', { className: 'status-cell' }, h('span', { className: `status ${e.status}` }, e.status)),
            h('td', { className: 'code' }, h('code', {}, e.code)),
            h(
              'td',
              { className: 'ref' },
              h('span', { className: 'ref-text' }, breakable(e.ref)),
              h('code', { className: 'digest', title: e.digest }, shortDigest(e.digest)),
            ),
          ),
        ),
      ),
    ),
    h(
      'dl',
      { className: 'ids' },
      ...[
        ['decision_id', decision.decision_id],
        ['decision_digest', decision.decision_digest],
        ['contract_id', decision.contract_id],
        ['evaluated_at', decision.evaluated_at],
      ].flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, h('code', { dataset: { field: k } }, v))]),
    ),
    h(
      'div',
      { className: 'decision-actions' },
      h('button', { type: 'button', id: 'decision-copy', onclick: () => onCopy?.(json) }, 'Copy JSON'),
      h('button', { type: 'button', id: 'decision-download', onclick: () => download(json, `${decision.decision_id.replace(':', '-')}.json`) }, 'Download JSON'),
      h('span', { id: 'decision-status', className: 'muted', role: 'status' }),
    ),
  );
}

/**
 * The core's derivation text, one step a line, each line shown exactly as the core wrote it: the
 * words before the first `: ` name the step (`target`, `capacity cpu_milli`), the rest are its
 * numbers. The playground words nothing itself.
 */
function derivationSection(text) {
  const lines = text.split('\n').filter((line) => line !== '');
  return h(
    'section',
    { className: 'derivation', id: 'derivation', 'aria-label': 'How the numbers came out' },
    h('h3', {}, 'How the numbers came out'),
    h(
      'ol',
      { className: 'derivation-steps' },
      lines.map((line) => {
        const cut = line.indexOf(': ');
        const step = cut < 0 ? line : line.slice(0, cut);
        const numbers = cut < 0 ? '' : line.slice(cut);
        return h('li', { dataset: { step } }, h('span', { className: 'step' }, step), h('code', { className: 'numbers' }, breakable(numbers)));
      }),
    ),
  );
}

/**
 * What the decision permits: a proposed count, judged by `permits(to)` (the component's gate), in
 * the core's words; and what an external scaler (KEDA) would report, from `reading`.
 */
function gateSection(decision, permits, reading) {
  const verdict = h('p', { className: 'gate-verdict', id: 'gate-verdict', role: 'status' });
  const judge = (to) => {
    try {
      const v = permits(to);
      verdict.dataset.allowed = String(v.allowed);
      verdict.dataset.reason = v.reason;
      verdict.replaceChildren(h('span', { className: `badge small ${v.allowed ? 'allowed' : 'denied'}` }, v.allowed ? 'allowed' : 'denied'), ' ', h('code', {}, v.reason), ' ', ...breakable(v.message));
    } catch (error) {
      if (!(error instanceof ScaleUnitsError)) throw error;
      verdict.dataset.allowed = '';
      verdict.dataset.reason = error.code;
      verdict.replaceChildren(h('span', { className: 'badge small error' }, error.code), ' ', error.message);
    }
  };
  const input = h('input', {
    type: 'number',
    id: 'gate-to',
    min: '0',
    step: '1',
    value: String(decision.desired_replicas),
    'aria-label': 'replicas to propose',
    oninput: (event) => {
      const text = event.target.value;
      if (text !== '' && Number.isInteger(Number(text))) judge(Number(text));
    },
  });
  judge(decision.desired_replicas);
  return h(
    'section',
    { className: 'gate', id: 'gate', 'aria-label': 'What the decision permits' },
    h('h3', {}, 'What it permits'),
    h('label', { className: 'gate-change' }, `A change from ${decision.current_replicas} to `, input, ' replicas:'),
    verdict,
    reading
      ? h(
          'p',
          { className: 'muted small', id: 'scaler-reading', dataset: { metric: String(reading.metric_value), active: String(reading.active) } },
          `An external scaler (KEDA) reports the metric ${reading.metric_value} (an HPA with an AverageValue target of 1 settles there), ${reading.active ? 'active' : 'not active'}.`,
        )
      : null,
  );
}

/** Every fault the component's diagnosis found, each with its hint; nothing when there is none. */
function diagnosisList(faults) {
  if (faults.length === 0) return '';
  return h(
    'section',
    { className: 'diagnosis', id: 'diagnosis', 'aria-label': 'Every fault found' },
    h('h3', {}, faults.length === 1 ? 'The fault, and what to change' : `All ${faults.length} faults, and what to change`),
    h(
      'ol',
      { className: 'fault-list' },
      faults.map((f) =>
        h(
          'li',
          { className: 'fault', dataset: { code: f.code, path: f.path } },
          h('code', { className: 'code' }, f.code),
          f.path ? [' at ', h('code', { className: 'path' }, breakable(f.path))] : null,
          h('span', { className: 'message' }, `: ${f.message}`),
          h('p', { className: 'hint' }, 'Hint: ', f.hint),
        ),
      ),
    ),
  );
}

function noDecision(refusal, unreadable) {
  if (unreadable.length > 0) {
    const first = unreadable[0];
    const which = [...new Set(unreadable.map((p) => p.editor))].join(' and the ');
    return h(
      'div',
      { className: 'verdict refused', dataset: { testid: 'verdict', action: 'error', code: 'syntax' } },
      h('span', { className: 'badge error' }, 'no decision'),
      h('p', {}, `The ${which} cannot be read, so there is nothing to evaluate yet.`),
      h(
        'p',
        { className: 'muted', id: 'no-decision-why' },
        `${placeWords(first.editor, first.line, first.column)}: ${first.message}. `,
        `The component has not seen this text: fix it where the ${first.editor} editor marks it.`,
      ),
    );
  }
  const error = refusal ?? { code: 'error', path: '', message: '' };
  return h(
    'div',
    { className: 'verdict refused', dataset: { testid: 'verdict', action: 'error', code: error.code ?? 'error' } },
    h('span', { className: 'badge error' }, 'no decision'),
    h('p', {}, 'The component refused the request: ', h('code', {}, error.code ?? 'error'), error.path ? [' at ', h('code', {}, error.path)] : '', '.'),
    h('p', { className: 'muted' }, error.message),
  );
}

/** Saves `text` as a file named `name` (an object URL, released once the browser has it). */
function download(text, name) {
  const url = URL.createObjectURL(new Blob([text], { type: 'application/json' }));
  const a = h('a', { href: url, download: name, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** Every reason's plain words from the component's catalogue: `Map(reason -> text)`. */
export function reasonCatalogue(reasons) {
  const out = new Map();
  // A decision carries at most 16 reasons (SPEC §3); ask in chunks.
  for (let i = 0; i < reasons.length; i += 16) {
    const words = explain({
      schema_version: '1',
      decision_id: `scale-decision:${'0'.repeat(32)}`,
      decision_digest: `sha256:${'0'.repeat(64)}`,
      contract_id: `scale-unit:${'0'.repeat(32)}`,
      evaluated_at: '2026-01-01T00:00:00+00:00',
      current_replicas: 1,
      desired_replicas: 1,
      action: 'blocked',
      reasons: reasons.slice(i, i + 16),
      drain_required: false,
      evidence: [],
    });
    for (const { reason, text } of words.reasons) out.set(reason, text);
  }
  return out;
}
