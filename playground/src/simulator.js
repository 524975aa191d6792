// The simulator: the component's simulate-json over the contract in the editor and a trace (a
// ready one shaped to the contract, an edited one, or an uploaded CSV), drawn with uPlot.
import * as scaleUnits from 'scale-units';
import { StepChart, utcClock } from './chart.js';
import { breakable, h } from './dom.js';
import { ALL_TRACES as TRACES } from './traces.js';

const ROWS_SHOWN = 400;

export class Simulator {
  /**
   * `onChange()` is called when the simulator's own state changes (for the share link);
   * `loadExample(id)` loads a gallery example (a trace file names the one it was made for).
   */
  constructor(inputsRoot, outputRoot, catalogue, onChange, loadExample, onRun = () => {}) {
    this.loadExample = loadExample;
    this.onRun = onRun;
    this.out = outputRoot;
    this.catalogue = catalogue;
    this.onChange = onChange;
    this.contract = null;
    this.chart = null;
    this.available = typeof scaleUnits.simulate === 'function';

    this.select = h('select', { id: 'sim-trace', 'aria-label': 'trace' });
    const shaped = h('optgroup', { label: 'Shaped to this contract' });
    const files = h('optgroup', { label: 'From examples/traces/' });
    for (const t of TRACES) (t.file ? files : shaped).append(h('option', { value: t.id }, t.title));
    this.select.append(shaped, files);
    this.select.append(h('option', { value: 'custom' }, 'Your own trace (edited or uploaded)'));
    this.story = h('p', { className: 'muted story', id: 'sim-story' });
    this.csv = h('textarea', { id: 'sim-csv', spellcheck: false, wrap: 'off', rows: 10, 'aria-label': 'trace CSV' });
    this.file = h('input', { type: 'file', id: 'sim-file', accept: '.csv,text/csv,text/plain' });
    this.initial = h('input', { type: 'number', id: 'sim-initial', min: 0, max: 10000, step: 1 });
    this.delay = h('input', { type: 'number', id: 'sim-delay', min: 0, max: 86400, step: 1, value: '0' });
    this.run = h('button', { type: 'button', id: 'sim-run', className: 'primary' }, 'Run simulation');

    this.select.addEventListener('change', () => {
      this.applyTrace();
      this.changed();
    });
    this.csv.addEventListener('input', () => {
      this.select.value = 'custom';
      this.describe();
      this.changed();
    });
    this.file.addEventListener('change', async () => {
      const file = this.file.files?.[0];
      if (!file) return;
      this.csv.value = await file.text();
      this.select.value = 'custom';
      this.describe();
      this.changed();
    });
    for (const input of [this.initial, this.delay]) input.addEventListener('change', () => this.changed());
    this.run.addEventListener('click', () => this.simulate());

    inputsRoot.replaceChildren(
      h(
        'div',
        { className: 'sim-form' },
        h('label', {}, 'Trace ', this.select),
        h('label', {}, 'Initial replicas ', this.initial),
        h('label', {}, 'Actuation delay (s) ', this.delay),
        h('label', { className: 'upload' }, 'Upload CSV ', this.file),
        this.run,
      ),
      this.story,
      h(
        'details',
        { className: 'csv', open: false },
        h('summary', {}, 'Trace CSV (columns: time, signal, and optionally capacity_headroom, quota_headroom, active_sessions, ready, overloaded, noisy_neighbor)'),
        this.csv,
      ),
    );
    if (!this.available) {
      this.run.disabled = true;
      outputRoot.replaceChildren(h('p', { className: 'problem' }, 'This build of the component does not export simulate-json yet; rebuild bindings-js (make js-build).'));
    }
  }

  changed() {
    this.ran = false;
    this.onChange();
    this.schedule();
  }

  describe() {
    const t = TRACES.find((x) => x.id === this.select.value);
    this.story.replaceChildren(t ? t.story : 'Your own trace: one row a step; an empty signal cell is a failed read.');
    if (t?.example) {
      const load = h('button', { type: 'button', className: 'link', id: 'sim-load-example' }, `load the ${t.example} example`);
      load.addEventListener('click', () => {
        this.loadExample(t.example);
        this.initial.value = String(t.make().initialReplicas);
        this.changed();
      });
      this.story.append(' ', load);
    }
  }

  /** Regenerates the ready trace for the current contract. */
  applyTrace() {
    const t = TRACES.find((x) => x.id === this.select.value);
    this.describe();
    if (!t) return;
    const { csv, initialReplicas } = t.make(this.contract?.policy);
    this.csv.value = csv;
    this.initial.value = String(initialReplicas);
  }

  /** The contract changed: reshape a ready trace to it and run again. */
  setContract(contract) {
    this.contract = contract;
    if (this.select.value !== 'custom') this.applyTrace();
    // A restored state keeps its own initial count over the trace's suggestion, once.
    if (this.restoredInitial !== undefined) {
      this.initial.value = this.restoredInitial;
      this.restoredInitial = undefined;
    }
    this.schedule();
  }

  state() {
    return { trace: this.select.value, csv: this.select.value === 'custom' ? this.csv.value : undefined, initial: this.initial.value, delay: this.delay.value };
  }

  restore(state) {
    if (!state) return;
    this.select.value = TRACES.some((t) => t.id === state.trace) || state.trace === 'custom' ? state.trace : TRACES[0].id;
    if (this.select.value === 'custom') this.csv.value = state.csv ?? '';
    else this.applyTrace();
    this.describe();
    if (state.initial !== undefined) this.initial.value = this.restoredInitial = state.initial;
    if (state.delay !== undefined) this.delay.value = state.delay;
  }

  schedule() {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.simulate(), 200);
  }

  /** The trace and settings every run uses (the comparison replays the same): simulate's input less the contract. */
  traceInput() {
    const input = { actuation_delay_s: Number(this.delay.value) || 0, trace_csv: this.csv.value };
    if (this.initial.value !== '') input.initial_replicas = Number(this.initial.value);
    return input;
  }

  /** The trace's name as the select shows it, and whether it was shaped to the editor's contract. */
  traceTitle() {
    const title = this.select.selectedOptions[0]?.textContent ?? this.select.value;
    return { title, shaped: TRACES.some((t) => t.id === this.select.value && !t.file) };
  }

  simulate() {
    if (!this.available) return;
    this.onRun();
    if (!this.contract) {
      this.chart?.destroy();
      this.chart = null;
      this.out.replaceChildren(h('p', { className: 'problem' }, 'Fix the contract above to simulate it.'));
      return;
    }
    const input = { contract: this.contract, ...this.traceInput() };
    let result;
    try {
      result = scaleUnits.simulate(input);
    } catch (error) {
      this.chart?.destroy();
      this.chart = null;
      this.out.replaceChildren(
        h('p', { className: 'problem', id: 'sim-error', dataset: { code: error.code ?? 'error', path: error.path ?? '', trace: this.select.value } }, h('code', {}, error.code ?? 'error'), error.path ? ` at ${error.path}: ` : ': ', error.message),
      );
      return;
    }
    this.render(result);
  }

  render({ steps, summary }) {
    const chartBox = h('div', {
      id: 'sim-chart',
      className: 'chart',
      dataset: { trace: this.select.value, initial: this.initial.value, steps: String(steps.length), blocked: String(summary.blocked_steps) },
    });
    const target = Number(this.contract?.policy?.target) || 1;
    const text = (r) => this.catalogue.get(r) ?? r;
    // Steps of one UTC day show their clock time under a header that names the day.
    const times = steps.map((s) => Date.parse(s.at));
    const days = new Set(times.map((t) => (Number.isFinite(t) ? new Date(t).toISOString().slice(0, 10) : null)));
    const day = days.size === 1 && !days.has(null) ? [...days][0] : null;
    const at = (s) => (day ? utcClock(Date.parse(s.at) / 1000, true) : s.at);
    this.out.replaceChildren(
      chartBox,
      summaryTiles(summary),
      pendingAtEnd(summary),
      summary.blocked_by_reason.length
        ? h(
            'ul',
            { className: 'reasons', id: 'sim-blocked-reasons' },
            summary.blocked_by_reason.map((b) => h('li', { dataset: { reason: b.reason } }, h('code', {}, b.reason), ` ${b.seconds} s blocked: ${text(b.reason)}`)),
          )
        : h('p', { className: 'muted' }, 'Never blocked.'),
      h(
        'details',
        { className: 'steps' },
        h('summary', {}, `Steps (${steps.length}${steps.length > ROWS_SHOWN ? `, first ${ROWS_SHOWN} shown` : ''})`),
        h(
          'div',
          { className: 'table-scroll' },
          h(
            'table',
            { id: 'sim-steps' },
            day ? h('caption', {}, `Times in UTC, ${day}`) : null,
            h(
              'thead',
              {},
              h('tr', {}, ['at', 'signal', 'decision', 'running', 'pending', 'reasons'].map((c) => h('th', { className: `col-${c}` }, c))),
            ),
            h(
              'tbody',
              {},
              steps.slice(0, ROWS_SHOWN).map((s, i) => {
                // What ran changes at a step by its own scale, or by a pending one carried out when it came.
                const previous = i === 0 ? s.replicas_before : steps[i - 1].replicas_after;
                const pending = s.pending_replicas === null ? '–' : String(s.pending_replicas);
                return h(
                  'tr',
                  { className: s.action, dataset: { action: s.action, current: String(s.current_replicas), desired: String(s.desired_replicas), pending: s.pending_replicas === null ? '' : String(s.pending_replicas) } },
                  h('td', { className: 'col-at', title: s.at }, at(s)),
                  h('td', {}, s.signal === null ? 'missing' : String(s.signal)),
                  // The decision: the count it was made for, the count it asks for, and its action.
                  h('td', { className: 'col-decision' }, `${s.current_replicas} → ${s.desired_replicas} `, h('span', { className: `badge small ${s.action}` }, s.action)),
                  h(
                    'td',
                    { className: 'col-running' },
                    previous === s.replicas_after ? String(s.replicas_after) : `${previous} → ${s.replicas_after}`,
                    // Where the pending column is hidden (a phone), a scale still to come shows here.
                    s.pending_replicas === null ? null : h('span', { className: 'asked' }, ` (${s.pending_replicas} pending)`),
                  ),
                  h('td', { className: 'col-pending' }, pending),
                  h('td', { className: 'col-reasons' }, s.reasons.map((r) => h('code', { title: text(r) }, breakable(r))).flatMap((c, i) => (i ? [' ', c] : [c]))),
                );
              }),
            ),
          ),
        ),
      ),
    );
    this.draw(chartBox, steps, target);
    this.ran = true;
  }

  draw(box, steps, target) {
    this.chart?.destroy();
    const xs = steps.map((s) => Date.parse(s.at) / 1000);
    // The two axes are one scale: a replica on the right stands at `target` of signal on the left,
    // so the replicas line is also target × replicas, the signal the running replicas handle at
    // target. The signal above it is over target (ceil(signal / target) > replicas running).
    const top = Math.max(target, ...steps.map((s) => Math.max(s.signal ?? 0, s.replicas_before * target, s.replicas_after * target))) * 1.1;
    box.dataset.signalTop = String(top);
    box.dataset.replicasTop = String(top / target);
    this.chart = new StepChart(box, {
      xs,
      scales: {
        signal: { label: 'signal (total)', side: 'left', range: () => [0, top] },
        replicas: { label: `replicas (1 = ${target} of signal)`, side: 'right', range: () => [0, top / target] },
      },
      series: [
        { id: 'signal', label: 'signal', scale: 'signal', stroke: '#2d6cdf', values: steps.map((s) => s.signal) },
        {
          id: 'replicas',
          label: `replicas running (right axis), which on the left axis is target × replicas (${target} a replica): signal above it is over target`,
          scale: 'replicas',
          stroke: '#1b9e5a',
          fill: 'rgba(27, 158, 90, 0.10)',
          step: 'after',
          values: steps.map((s) => s.replicas_after),
        },
      ],
      shades: [{ id: 'blocked', label: 'blocked steps', fill: 'rgba(214, 48, 49, 0.14)', steps: steps.map((s) => s.action === 'blocked') }],
      readout: (i) => {
        const s = steps[i];
        const moved = s.replicas_before === s.replicas_after ? `${s.replicas_after} running` : `running ${s.replicas_before} → ${s.replicas_after}`;
        const reasons = s.reasons.length ? ` (${s.reasons.join(', ')})` : '';
        const pending = s.pending_replicas === null ? '' : ` · ${s.pending_replicas} pending`;
        return `${utcClock(xs[i], true)} UTC · signal ${s.signal ?? 'missing'} against target × replicas ${s.replicas_before * target} · ${moved} · decision ${s.current_replicas} → ${s.desired_replicas} ${s.action}${reasons}${pending}`;
      },
    });
  }
}

/**
 * The summary as tiles: decisions apart from changes carried out and from decisions replaced while
 * pending, and the replicas running at the end beside the final count (a pending scale included).
 * Twelve tiles: four rows of three, or two rows of six when there is room (never one alone).
 */
export function summaryTiles(summary, id = 'sim-summary', prefix = 'sum') {
  const stat = (label, value, key, title) => h('div', { className: 'stat', id: `${prefix}-${key}`, title }, h('span', { className: 'stat-value' }, String(value)), h('span', { className: 'stat-label' }, label));
  return h(
    'div',
    { className: 'stats', id },
    stat('scale-up decisions', summary.scale_ups, 'ups', 'every scale_up decision, carried out or not'),
    stat('scale-down decisions', summary.scale_downs, 'downs', 'every scale_down decision, carried out or not'),
    stat('scale-ups carried out', summary.scale_ups_carried_out, 'ups-done', 'changes that raised the running count'),
    stat('scale-downs carried out', summary.scale_downs_carried_out, 'downs-done', 'changes that lowered the running count'),
    stat('replaced while pending', summary.replaced_scales, 'replaced', 'scale decisions a later one replaced before they were carried out'),
    stat('blocked steps', summary.blocked_steps, 'blocked'),
    stat('blocked seconds', summary.blocked_seconds, 'blocked-s'),
    stat('seconds over target', summary.seconds_over_target, 'over'),
    stat('seconds under target', summary.seconds_under_target, 'under'),
    stat('peak replicas', summary.peak_replicas, 'peak'),
    stat('running at the end', summary.running_replicas_at_end, 'running', 'replicas running after the last step'),
    stat('final replicas', summary.final_replicas, 'final', 'replicas after the last step, a scale still pending included'),
  );
}

/** The scale still pending when the trace ended (an actuation delay), named; or that none was. */
export function pendingAtEnd(summary) {
  const p = summary.pending_at_end;
  if (!p) return h('p', { className: 'muted', id: 'sim-pending', dataset: { pending: 'none' } }, 'Nothing pending at the end of the trace.');
  return h(
    'p',
    { id: 'sim-pending', dataset: { pending: p.action, from: String(p.from_replicas), to: String(p.to_replicas) } },
    'Pending at the end of the trace: ',
    h('span', { className: `badge small ${p.action}` }, p.action),
    ` ${p.from_replicas} → ${p.to_replicas}, decided at ${p.decided_at}, due at ${p.due_at}; the final count (${summary.final_replicas}) includes it, the ${summary.running_replicas_at_end} running do not.`,
  );
}
