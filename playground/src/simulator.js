// The simulator: the component's simulate-json over the contract in the editor and a trace (a
// ready one shaped to the contract, an edited one, or an uploaded CSV), drawn with uPlot.
import * as scaleUnits from 'scale-units';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { h } from './dom.js';
import { ALL_TRACES as TRACES } from './traces.js';

const ROWS_SHOWN = 400;

export class Simulator {
  /**
   * `onChange()` is called when the simulator's own state changes (for the share link);
   * `loadExample(id)` loads a gallery example (a trace file names the one it was made for).
   */
  constructor(inputsRoot, outputRoot, catalogue, onChange, loadExample) {
    this.loadExample = loadExample;
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

  simulate() {
    if (!this.available) return;
    if (!this.contract) {
      this.out.replaceChildren(h('p', { className: 'problem' }, 'Fix the contract above to simulate it.'));
      return;
    }
    const input = { contract: this.contract, actuation_delay_s: Number(this.delay.value) || 0, trace_csv: this.csv.value };
    if (this.initial.value !== '') input.initial_replicas = Number(this.initial.value);
    let result;
    try {
      result = scaleUnits.simulate(input);
    } catch (error) {
      this.out.replaceChildren(
        h('p', { className: 'problem', id: 'sim-error', dataset: { code: error.code ?? 'error', path: error.path ?? '' } }, h('code', {}, error.code ?? 'error'), error.path ? ` at ${error.path}: ` : ': ', error.message),
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
    const stat = (label, value, id) => h('div', { className: 'stat', id }, h('span', { className: 'stat-value' }, String(value)), h('span', { className: 'stat-label' }, label));
    this.out.replaceChildren(
      chartBox,
      h('p', { className: 'legend muted' }, 'Signal (left axis, its target per replica dashed), replicas running (right axis, stepped); shaded: blocked steps.'),
      h(
        'div',
        { className: 'stats', id: 'sim-summary' },
        stat('steps', summary.steps, 'sum-steps'),
        stat('scale-ups', summary.scale_ups, 'sum-ups'),
        stat('scale-downs', summary.scale_downs, 'sum-downs'),
        stat('blocked steps', summary.blocked_steps, 'sum-blocked'),
        stat('blocked seconds', summary.blocked_seconds, 'sum-blocked-s'),
        stat('seconds over target', summary.seconds_over_target, 'sum-over'),
        stat('seconds under target', summary.seconds_under_target, 'sum-under'),
        stat('peak replicas', summary.peak_replicas, 'sum-peak'),
        stat('final replicas', summary.final_replicas, 'sum-final'),
      ),
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
          'table',
          { id: 'sim-steps' },
          h('thead', {}, h('tr', {}, ['at', 'signal', 'replicas', 'action', 'desired', 'reasons'].map((c) => h('th', {}, c)))),
          h(
            'tbody',
            {},
            steps.slice(0, ROWS_SHOWN).map((s) =>
              h(
                'tr',
                { className: s.action, dataset: { action: s.action } },
                h('td', {}, s.at),
                h('td', {}, s.signal === null ? 'missing' : String(s.signal)),
                h('td', {}, s.replicas_before === s.replicas_after ? String(s.replicas_after) : `${s.replicas_before} → ${s.replicas_after}`),
                h('td', {}, h('span', { className: `badge small ${s.action}` }, s.action)),
                h('td', {}, String(s.desired_replicas)),
                h('td', {}, s.reasons.map((r) => h('code', { title: text(r) }, r)).flatMap((c, i) => (i ? [' ', c] : [c]))),
              ),
            ),
          ),
        ),
      ),
    );
    this.draw(chartBox, steps, target);
    this.ran = true;
  }

  draw(box, steps, target) {
    const xs = steps.map((s) => Date.parse(s.at) / 1000);
    const signal = steps.map((s) => s.signal);
    const replicas = steps.map((s) => s.replicas_after);
    const blocked = steps.map((s) => s.action === 'blocked');
    const shade = (u) => {
      const { ctx, bbox } = u;
      ctx.save();
      ctx.fillStyle = 'rgba(214, 48, 49, 0.14)';
      const last = xs.length > 1 ? xs[xs.length - 1] - xs[xs.length - 2] : 60;
      for (let i = 0; i < xs.length; i++) {
        if (!blocked[i]) continue;
        const x0 = u.valToPos(xs[i], 'x', true);
        const x1 = u.valToPos(xs[i + 1] ?? xs[i] + last, 'x', true);
        ctx.fillRect(x0, bbox.top, Math.max(2, x1 - x0), bbox.height);
      }
      ctx.restore();
    };
    const width = Math.max(320, box.parentElement?.clientWidth || 800);
    this.chart?.destroy();
    this.chart = new uPlot(
      {
        width,
        height: 300,
        scales: { x: { time: true }, signal: { range: (_u, _min, max) => [0, Math.max(target, max ?? 0) * 1.1] }, replicas: { range: (_u, _min, max) => [0, Math.max(1, max ?? 0) + 1] } },
        axes: [
          {},
          { scale: 'signal', label: 'signal' },
          { scale: 'replicas', side: 1, label: 'replicas', grid: { show: false } },
        ],
        series: [
          {},
          { label: 'signal', scale: 'signal', stroke: '#2d6cdf', width: 2, spanGaps: false },
          { label: 'replicas', scale: 'replicas', stroke: '#1b9e5a', width: 2, paths: uPlot.paths.stepped({ align: 1 }) },
          { label: 'target per replica', scale: 'signal', stroke: '#888', dash: [6, 4], width: 1, points: { show: false } },
        ],
        hooks: { drawClear: [shade] },
      },
      [xs, signal, replicas, xs.map(() => target)],
      box,
    );
  }
}
