// The live decision: action, replicas, each reason in plain words (the component's own catalogue,
// through `explain`), the evidence, and the identities.
import { explain } from 'scale-units';
import { h, shortDigest } from './dom.js';

const ACTION_WORDS = { scale_up: 'scale up', scale_down: 'scale down', hold: 'hold', blocked: 'blocked' };

/** Renders `decision` (or the refusal `error`) into `root`. */
export function renderDecision(root, decision, error) {
  if (error) {
    root.replaceChildren(
      h(
        'div',
        { className: 'verdict refused', dataset: { testid: 'verdict', action: 'error', code: error.code ?? 'error' } },
        h('span', { className: 'badge error' }, 'no decision'),
        h('p', {}, 'The component refused the request: ', h('code', {}, error.code ?? 'error'), error.path ? ` at ${error.path}` : '', '.'),
        h('p', { className: 'muted' }, error.message),
      ),
    );
    return;
  }
  const words = explain(decision);
  const moved = decision.desired_replicas !== decision.current_replicas;
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
      words.reasons.map(({ reason, text }) => h('li', { dataset: { reason } }, h('code', {}, reason), ' ', text)),
    ),
    h('h3', {}, 'Evidence'),
    h(
      'table',
      { className: 'evidence', id: 'evidence' },
      h('thead', {}, h('tr', {}, ['kind', 'status', 'code', 'ref', 'digest'].map((c) => h('th', {}, c)))),
      h(
        'tbody',
        {},
        decision.evidence.map((e) =>
          h(
            'tr',
            { className: e.status, dataset: { kind: e.kind, status: e.status } },
            h('td', {}, e.kind),
            h('td', {}, h('span', { className: `status ${e.status}` }, e.status)),
            h('td', {}, h('code', {}, e.code)),
            h('td', { className: 'ref' }, e.ref),
            h('td', { title: e.digest }, h('code', {}, shortDigest(e.digest))),
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
  );
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
