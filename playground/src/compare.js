// Compare two contracts over the simulator's trace: the contract in the editor against the example
// it came from, another example, or a saved snapshot (any two of them). Both runs are the
// component's `simulate` over the same trace and settings; the page draws both decision paths on
// one chart, puts the summaries side by side and lists what differs between the two contracts.
import { ScaleUnitsError, simulate, validateContract } from 'scale-units';
import { StepChart, utcClock } from './chart.js';
import { diffValues } from './diff.js';
import { breakable, h } from './dom.js';
import { parseText } from './wire.js';

const SNAPSHOTS_KEPT = 8;
const COLORS = { a: '#d9822b', b: '#1b9e5a' };
const SUMMARY_ROWS = [
  ['steps', 'steps'],
  ['scale_ups', 'scale-up decisions'],
  ['scale_downs', 'scale-down decisions'],
  ['scale_ups_carried_out', 'scale-ups carried out'],
  ['scale_downs_carried_out', 'scale-downs carried out'],
  ['replaced_scales', 'decisions replaced while pending'],
  ['blocked_steps', 'blocked steps'],
  ['blocked_seconds', 'blocked seconds'],
  ['seconds_over_target', 'seconds over target'],
  ['seconds_under_target', 'seconds under target'],
  ['peak_replicas', 'peak replicas'],
  ['running_replicas_at_end', 'running at the end'],
  ['final_replicas', 'final replicas (pending included)'],
];

const show = (v) => (v === undefined ? '' : JSON.stringify(v));

export class Compare {
  /**
   * `sources`: `{editor() -> {text, format}, origin() -> example id or null, examples, trace() ->
   * simulate's input less the contract, traceTitle() -> {title, shaped}}`; `onChange()` when its own state changes
   * (for the share link); `loadIntoEditor({text, format})`.
   */
  constructor(root, sources, onChange, loadIntoEditor) {
    this.sources = sources;
    this.onChange = onChange;
    this.loadIntoEditor = loadIntoEditor;
    this.snapshots = [];
    this.nextSnapshot = 1;
    this.chart = null;

    this.a = h('select', { id: 'cmp-a', 'aria-label': 'contract A' });
    this.b = h('select', { id: 'cmp-b', 'aria-label': 'contract B' });
    for (const select of [this.a, this.b]) {
      select.addEventListener('change', () => {
        this.changed();
      });
    }
    const swap = h('button', { type: 'button', id: 'cmp-swap', title: 'swap A and B' }, 'Swap A and B');
    swap.addEventListener('click', () => {
      [this.a.value, this.b.value] = [this.b.value, this.a.value];
      this.changed();
    });
    const save = h('button', { type: 'button', id: 'cmp-snapshot' }, 'Save this contract as a snapshot');
    save.addEventListener('click', () => this.saveSnapshot());
    this.status = h('span', { id: 'cmp-status', className: 'muted', role: 'status' });
    this.snapshotList = h('ul', { id: 'cmp-snapshots', className: 'snapshots' });
    this.out = h('div', { id: 'cmp-output' });

    root.replaceChildren(
      h('h2', { id: 'cmp-title' }, 'Compare two contracts'),
      h(
        'p',
        { className: 'muted' },
        'Replays two contracts over the simulator’s trace above, with its initial replicas and actuation delay: the contract in the editor against the example it came from, another example or a snapshot you saved. Both paths are the component’s own simulations.',
      ),
      h(
        'div',
        { className: 'compare-form' },
        h('label', { className: 'side a' }, h('span', { className: 'side-tag a' }, 'A'), this.a),
        h('label', { className: 'side b' }, h('span', { className: 'side-tag b' }, 'B'), this.b),
        swap,
        save,
        this.status,
      ),
      this.snapshotList,
      this.out,
    );
    this.fillOptions('origin', 'editor');
  }

  /** The contracts one can pick, as `[value, label, group]`. */
  options() {
    const origin = this.sources.origin();
    const out = [
      ['origin', origin ? `The example it came from (${origin})` : 'The example it came from (none: not loaded from an example)', ''],
      ['editor', 'The contract in the editor', ''],
    ];
    for (const s of this.snapshots) out.push([`snapshot:${s.id}`, s.label, 'Snapshots']);
    for (const e of this.sources.examples) out.push([`example:${e.id}`, e.title, 'Examples']);
    return out;
  }

  fillOptions(a = this.a.value, b = this.b.value) {
    const options = this.options();
    const key = JSON.stringify(options);
    if (key === this.optionsKey && this.a.value === a && this.b.value === b) return;
    this.optionsKey = key;
    for (const [select, want] of [
      [this.a, a],
      [this.b, b],
    ]) {
      const groups = new Map();
      const top = [];
      for (const [value, label, group] of options) {
        const option = h('option', { value }, label);
        if (!group) top.push(option);
        else {
          if (!groups.has(group)) groups.set(group, h('optgroup', { label: group }));
          groups.get(group).append(option);
        }
      }
      select.replaceChildren(...top, ...groups.values());
      select.value = options.some(([value]) => value === want) ? want : select === this.a ? 'origin' : 'editor';
    }
  }

  /** `{text, format}` of a choice, or `{missing: why}`. */
  resolve(choice) {
    if (choice === 'editor') return this.sources.editor();
    if (choice === 'origin') {
      const origin = this.sources.origin();
      const example = this.sources.examples.find((e) => e.id === origin);
      return example ? example.contract : { missing: 'this contract was not loaded from an example: pick a snapshot or an example' };
    }
    if (choice.startsWith('example:')) {
      const example = this.sources.examples.find((e) => e.id === choice.slice('example:'.length));
      return example ? example.contract : { missing: 'no such example' };
    }
    const snapshot = this.snapshots.find((s) => `snapshot:${s.id}` === choice);
    return snapshot ? { text: snapshot.text, format: snapshot.format } : { missing: 'no such snapshot' };
  }

  label(select) {
    return select.selectedOptions[0]?.textContent ?? select.value;
  }

  saveSnapshot() {
    const { text, format } = this.sources.editor();
    const at = new Date().toISOString();
    const origin = this.sources.origin();
    const id = this.nextSnapshot++;
    this.snapshots.push({ id, label: `Snapshot ${id}${origin ? ` (from ${origin})` : ''}, ${at.slice(11, 19)} UTC`, text, format, at });
    while (this.snapshots.length > SNAPSHOTS_KEPT) this.snapshots.shift();
    this.fillOptions(`snapshot:${id}`, 'editor');
    this.status.textContent = `Saved snapshot ${id}; A shows it.`;
    this.changed();
  }

  renderSnapshots() {
    this.snapshotList.replaceChildren(
      ...this.snapshots.map((s) =>
        h(
          'li',
          { dataset: { snapshot: String(s.id) } },
          h('span', {}, s.label),
          ' ',
          h('button', { type: 'button', className: 'link', onclick: () => this.loadIntoEditor({ text: s.text, format: s.format }) }, 'load into the editor'),
          ' ',
          h(
            'button',
            {
              type: 'button',
              className: 'link',
              onclick: () => {
                this.snapshots = this.snapshots.filter((x) => x !== s);
                this.fillOptions();
                this.changed();
              },
            },
            'remove',
          ),
        ),
      ),
    );
  }

  changed() {
    this.onChange();
    this.schedule();
  }

  schedule() {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.run(), 150);
  }

  state() {
    return { a: this.a.value, b: this.b.value, snapshots: this.snapshots, next: this.nextSnapshot };
  }

  restore(state) {
    this.snapshots = Array.isArray(state?.snapshots) ? state.snapshots.slice(-SNAPSHOTS_KEPT) : [];
    this.nextSnapshot = Number(state?.next) || Math.max(0, ...this.snapshots.map((s) => s.id)) + 1;
    this.fillOptions(state?.a ?? 'origin', state?.b ?? 'editor');
    this.schedule();
  }

  /** One side: its contract value, identity and simulation, or why there is none. */
  side(choice, trace) {
    const source = this.resolve(choice);
    if (source.missing) return { error: source.missing };
    const parsed = parseText(source.text, source.format);
    if (parsed.error) return { error: `its text does not parse: ${parsed.error.message}` };
    try {
      const identity = validateContract(parsed.value);
      return { contract: parsed.value, identity, result: simulate({ contract: parsed.value, ...trace }) };
    } catch (error) {
      if (!(error instanceof ScaleUnitsError)) throw error;
      return { contract: parsed.value, error: `${error.code}${error.path ? ` at ${error.path}` : ''}: ${error.message}` };
    }
  }

  run() {
    this.fillOptions();
    this.renderSnapshots();
    const trace = this.sources.trace();
    const sides = { a: this.side(this.a.value, trace), b: this.side(this.b.value, trace) };
    const names = { a: this.label(this.a), b: this.label(this.b) };
    const delay = trace.actuation_delay_s ?? 0;
    const { title, shaped } = this.sources.traceTitle();
    const over = h(
      'p',
      { id: 'cmp-trace', className: 'muted' },
      `Over the trace “${title}”${shaped ? ' (shaped to the contract in the editor)' : ''}, from ${trace.initial_replicas ?? 'the contract’s minimum'} replicas, actuation delay ${delay} s.`,
    );
    const problems = ['a', 'b']
      .filter((k) => sides[k].error)
      .map((k) => h('p', { className: 'problem', dataset: { side: k } }, h('strong', {}, k.toUpperCase()), ` (${names[k]}): ${sides[k].error}`));

    this.chart?.destroy();
    this.chart = null;
    const ran = sides.a.result && sides.b.result;
    const chartBox = ran ? h('div', { id: 'cmp-chart', className: 'chart', dataset: { steps: String(sides.a.result.steps.length) } }) : null;
    // replaceChildren writes a null as the text "null": only the parts there are.
    const parts = [over, ...problems, chartBox, ran ? this.summaryTable(sides, names) : null, this.contractDiff(sides, names)];
    this.out.replaceChildren(...parts.filter((part) => part !== null && part !== undefined));
    if (ran) this.draw(chartBox, sides.a.result.steps, sides.b.result.steps);
    this.runs = (this.runs ?? 0) + 1;
    this.out.dataset.runs = String(this.runs);
  }

  draw(box, a, b) {
    const xs = a.map((s) => Date.parse(s.at) / 1000);
    this.chart = new StepChart(box, {
      xs,
      scales: {
        signal: { label: 'signal (total)', side: 'left', range: (max) => [0, max * 1.15 || 1] },
        replicas: { label: 'replicas', side: 'right', range: (max) => [0, Math.max(1, max) + 1] },
      },
      series: [
        { id: 'signal', label: 'signal (the same trace for both)', scale: 'signal', stroke: '#2d6cdf', width: 1.5, values: a.map((s) => s.signal) },
        { id: 'a', label: 'A: replicas running (right axis)', scale: 'replicas', stroke: COLORS.a, width: 2.5, step: 'after', values: a.map((s) => s.replicas_after) },
        { id: 'b', label: 'B: replicas running (right axis)', scale: 'replicas', stroke: COLORS.b, width: 2, dash: [7, 4], step: 'after', values: b.map((s) => s.replicas_after) },
      ],
      shades: [
        { id: 'a-blocked', label: 'A blocked (top band)', fill: 'rgba(217, 130, 43, 0.45)', band: [0, 0.05], steps: a.map((s) => s.action === 'blocked') },
        { id: 'b-blocked', label: 'B blocked (second band)', fill: 'rgba(27, 158, 90, 0.45)', band: [0.05, 0.1], steps: b.map((s) => s.action === 'blocked') },
      ],
      readout: (i) => {
        const one = (tag, s) => `${tag} ${s.replicas_after} (${s.action}${s.reasons.length ? `: ${s.reasons.join(', ')}` : ''})`;
        return `${utcClock(xs[i], true)} UTC · signal ${a[i].signal ?? 'missing'} · ${one('A', a[i])} · ${one('B', b[i])}`;
      },
    });
  }

  summaryTable(sides, names) {
    const a = sides.a.result.summary;
    const b = sides.b.result.summary;
    const rows = SUMMARY_ROWS.map(([key, label]) => [key, label, a[key], b[key]]);
    const reasons = [...new Set([...a.blocked_by_reason, ...b.blocked_by_reason].map((x) => x.reason))];
    const seconds = (summary, reason) => summary.blocked_by_reason.find((x) => x.reason === reason)?.seconds ?? 0;
    for (const reason of reasons) rows.push([`blocked:${reason}`, h('span', {}, 'blocked by ', h('code', {}, reason), ' (s)'), seconds(a, reason), seconds(b, reason)]);
    return h(
      'div',
      { className: 'table-scroll' },
      h(
        'table',
        { id: 'cmp-summary', className: 'cmp-summary' },
        h(
          'thead',
          {},
          h('tr', {}, h('th', {}, 'summary'), h('th', { className: 'a', title: names.a }, 'A'), h('th', { className: 'b', title: names.b }, 'B'), h('th', {}, 'B − A')),
        ),
        h(
          'tbody',
          {},
          rows.map(([key, label, va, vb]) =>
            h(
              'tr',
              { dataset: { key, same: String(va === vb) } },
              h('th', { scope: 'row' }, label),
              h('td', { className: 'a' }, String(va)),
              h('td', { className: 'b' }, String(vb)),
              h('td', { className: 'delta' }, va === vb ? '=' : `${vb - va > 0 ? '+' : '−'}${Math.abs(vb - va)}`),
            ),
          ),
        ),
      ),
      h('p', { className: 'muted small' }, h('strong', {}, 'A'), `: ${names.a}. `, h('strong', {}, 'B'), `: ${names.b}.`),
    );
  }

  contractDiff(sides, names) {
    const title = h('h3', {}, 'What differs between the contracts');
    if (!sides.a.contract || !sides.b.contract) return h('div', { id: 'cmp-diff' }, title, h('p', { className: 'muted' }, 'One side has no contract to compare.'));
    const rows = diffValues(sides.a.contract, sides.b.contract);
    const ids = [sides.a.identity, sides.b.identity].every(Boolean)
      ? h(
          'dl',
          { className: 'ids' },
          h('dt', {}, 'A contract_id'),
          h('dd', {}, h('code', { dataset: { side: 'a' } }, sides.a.identity.contract_id)),
          h('dt', {}, 'B contract_id'),
          h('dd', {}, h('code', { dataset: { side: 'b' } }, sides.b.identity.contract_id)),
        )
      : null;
    if (rows.length === 0) {
      return h('div', { id: 'cmp-diff', dataset: { changes: '0' } }, title, h('p', { id: 'cmp-same' }, 'A and B are the same contract: no field differs, and the contract_id is the same.'), ids);
    }
    return h(
      'div',
      { id: 'cmp-diff', dataset: { changes: String(rows.length) } },
      title,
      h('p', { className: 'muted' }, `${rows.length} ${rows.length === 1 ? 'field differs' : 'fields differ'}, by path in the contract:`),
      h(
        'div',
        { className: 'table-scroll' },
        h(
          'table',
          { className: 'diff' },
          h('thead', {}, h('tr', {}, h('th', {}, 'path'), h('th', { className: 'a' }, 'A'), h('th', { className: 'b' }, 'B'))),
          h(
            'tbody',
            {},
            rows.map((r) =>
              h(
                'tr',
                { className: r.kind, dataset: { path: r.path, kind: r.kind } },
                h('td', { className: 'path' }, h('code', {}, r.path ? breakable(r.path) : '(the whole contract)')),
                h('td', { className: 'a' }, r.kind === 'added' ? h('span', { className: 'muted' }, 'absent') : h('code', {}, breakable(show(r.a)))),
                h('td', { className: 'b' }, r.kind === 'removed' ? h('span', { className: 'muted' }, 'absent') : h('code', {}, breakable(show(r.b)))),
              ),
            ),
          ),
        ),
      ),
      ids,
    );
  }
}
