// Controls a person can play with. Each one edits the request text (the editor stays the one
// source of truth) through `edit([[segments, value], ...])`; none of them decides anything.
import { h } from './dom.js';

const iso = (ms) => new Date(ms).toISOString().replace('.000Z', 'Z');
const time = (text) => (typeof text === 'string' ? Date.parse(text) : Number.NaN);
const clamp = (v, lo, hi) => Math.min(hi, Math.max(lo, v));

/** Every observation of a request with its label, path and window. */
function observations(request) {
  const out = [];
  const add = (label, path, o) => {
    if (o && typeof o === 'object') out.push({ label, path, o, from: time(o.observed_at), to: time(o.expires_at) });
  };
  add(`signal ${request.signal?.signal ?? ''}`, ['signal'], request.signal);
  (Array.isArray(request.capacities) ? request.capacities : []).forEach((o, i) => add(`capacity ${o?.axis ?? i}`, ['capacities', i], o));
  (Array.isArray(request.quotas) ? request.quotas : []).forEach((o, i) => add(`quota ${o?.quota_ref ?? i}`, ['quotas', i], o));
  add('continuity', ['continuity'], request.continuity);
  add('safety', ['safety'], request.safety);
  return out;
}

/**
 * The largest step no greater than `ideal` that divides `value`: a slider over the multiples of it
 * holds both 0 and `value`, so a drag can always come back to `value` exactly.
 */
export function stepThrough(value, ideal) {
  const v = Math.abs(Math.round(value));
  for (let step = Math.max(1, Math.floor(ideal)); step > 1; step--) if (v % step === 0) return step;
  return 1;
}

/**
 * The `now` slider's window `[lo, hi]` (ms): it covers `[from, to]` and starts a whole number of
 * steps before `now`, so `now` itself is one of the slider's positions.
 */
export function nowWindow(now, from, to, stepMs) {
  return [now - Math.ceil(Math.max(0, now - from) / stepMs) * stepMs, now + Math.ceil(Math.max(0, to - now) / stepMs) * stepMs];
}

const NOW_STEP_S = 5;

function range(label, attrs) {
  return h('input', { type: 'range', 'aria-label': label, ...attrs });
}

export class Controls {
  constructor(root, edit) {
    this.edit = edit;
    this.stash = {}; // a removed signal, to bring back
    this.window = null; // [lo, hi] of the `now` slider, ms
    this.anchor = null; // the `now` the window was laid out around: {ms, text}
    // The value each slider last wrote. A slider keeps its grid while the request holds that value
    // and lays a new one through any value that came from elsewhere (an example, the editor, the
    // number box): every position of a drag is then a whole number of steps from where it began.
    this.wrote = {};

    this.replicas = range('current replicas', { id: 'ctl-replicas', min: 0, max: 20, step: 1 });
    this.replicasNumber = h('input', { type: 'number', id: 'ctl-replicas-value', min: 0, max: 10000, step: 1, 'aria-label': 'current replicas' });
    const setReplicas = (v) => Number.isInteger(v) && this.edit([[['current_replicas'], v]]);
    this.replicas.addEventListener('input', () => setReplicas((this.wrote.replicas = Number(this.replicas.value))));
    this.replicasNumber.addEventListener('change', () => setReplicas(Number(this.replicasNumber.value)));

    this.signalPresent = h('input', { type: 'checkbox', id: 'ctl-signal-present' });
    this.signal = range('signal value', { id: 'ctl-signal', min: 0, max: 1000, step: 1 });
    this.signalNumber = h('input', { type: 'number', id: 'ctl-signal-value', min: 0, step: 1, 'aria-label': 'signal value' });
    const setSignal = (v) => Number.isInteger(v) && v >= 0 && this.edit([[['signal', 'value'], v]]);
    this.signal.addEventListener('input', () => setSignal((this.wrote.signal = Number(this.signal.value))));
    this.signalNumber.addEventListener('change', () => setSignal(Number(this.signalNumber.value)));
    this.signalPresent.addEventListener('change', () => this.toggleSignal(this.signalPresent.checked));

    this.now = range('now', { id: 'ctl-now', min: 0, max: 600, step: NOW_STEP_S });
    this.nowLabel = h('output', { id: 'ctl-now-label', htmlFor: 'ctl-now' });
    this.now.addEventListener('input', () => {
      if (!this.window) return;
      const ms = this.window[0] + Number(this.now.value) * 1000;
      // Back at the anchor: its own text, so the request is byte for byte what it was.
      const text = ms === this.anchor.ms ? this.anchor.text : iso(ms);
      this.wrote.now = text;
      this.edit([[['now'], text]]);
    });
    this.timeline = h('div', { className: 'timeline', id: 'timeline' });

    this.flags = {};
    const flag = (id, label, path, extra) => {
      const box = h('input', { type: 'checkbox', id });
      box.addEventListener('change', () => this.edit([[path, box.checked], ...(box.checked ? extra() : [])]));
      this.flags[id] = { box, path };
      return h('label', { className: 'flag' }, box, ` ${label}`);
    };
    const reason = () => (this.request?.safety?.reason_ref ? [] : [[['safety', 'reason_ref'], 'incident:playground']]);
    this.sessions = h('input', { type: 'number', id: 'ctl-sessions', min: 0, step: 1, 'aria-label': 'active sessions' });
    this.sessions.addEventListener('change', () => {
      const v = Number(this.sessions.value);
      if (Number.isInteger(v) && v >= 0) this.edit([[['continuity', 'active_sessions'], v]]);
    });

    root.replaceChildren(
      h('div', { className: 'control' }, h('label', { htmlFor: 'ctl-replicas' }, 'Current replicas'), h('div', { className: 'row' }, this.replicas, this.replicasNumber)),
      h(
        'div',
        { className: 'control' },
        h('label', { htmlFor: 'ctl-signal' }, 'Signal value ', h('span', { id: 'ctl-signal-kind', className: 'muted' })),
        h('div', { className: 'row' }, this.signal, this.signalNumber),
        h('label', { className: 'flag' }, this.signalPresent, ' the signal was read (untick: the metric read failed)'),
      ),
      h(
        'div',
        { className: 'control' },
        h('label', { htmlFor: 'ctl-now' }, 'Now ', this.nowLabel),
        this.now,
        this.timeline,
      ),
      h(
        'div',
        { className: 'control flags' },
        h('span', { className: 'control-title' }, 'Safety and continuity'),
        flag('ctl-overloaded', 'overloaded (shedding load)', ['safety', 'overloaded'], reason),
        flag('ctl-noisy', 'noisy neighbour', ['safety', 'noisy_neighbor'], reason),
        flag('ctl-ready', 'continuity store ready', ['continuity', 'ready'], () => []),
        h('label', { className: 'flag' }, 'active sessions ', this.sessions),
      ),
    );
  }

  toggleSignal(on) {
    if (!on) {
      this.stash.signal = this.request?.signal;
      this.edit([[['signal'], null]]);
      return;
    }
    const target = this.contract?.policy?.target_signal ?? 'request_rate';
    const now = time(this.request?.now);
    const restored = this.stash.signal ?? {
      signal: target,
      value: Number(this.contract?.policy?.target) || 1,
      observed_at: iso(now - 30_000),
      expires_at: iso(now + 90_000),
      source_ref: `metrics:playground/${target}`,
      source_digest: `sha256:${'0'.repeat(64)}`,
    };
    this.edit([[['signal'], restored]]);
  }

  /** Brings every control in line with the request; leaves the one being dragged alone. */
  update(request, contract, decision) {
    this.request = request;
    this.contract = contract;
    const active = document.activeElement;
    const set = (el, value) => {
      if (el !== active) el.value = String(value);
    };
    const policy = contract?.policy ?? {};
    const replicas = Number(request.current_replicas) || 0;
    if (replicas !== this.wrote.replicas) {
      this.wrote.replicas = undefined;
      this.replicas.max = String(Math.max(Number(policy.max_replicas) || 1, replicas) + 2);
    }
    set(this.replicas, replicas);
    set(this.replicasNumber, replicas);

    const signal = request.signal && typeof request.signal === 'object' ? request.signal : null;
    this.signalPresent.checked = Boolean(signal);
    this.signal.disabled = this.signalNumber.disabled = !signal;
    document.getElementById('ctl-signal-kind').textContent = signal ? `(${signal.signal}, target ${policy.target ?? '?'} per replica)` : '(no signal)';
    if (signal) {
      const value = Number(signal.value) || 0;
      if (value !== this.wrote.signal) {
        this.wrote.signal = undefined;
        const top = Math.max(value * 2, (Number(policy.target) || 1) * ((Number(policy.max_replicas) || 1) + 2));
        const step = stepThrough(value, Math.max(1, Math.round(top / 400)));
        this.signal.step = String(step);
        this.signal.max = String(Math.ceil(top / step) * step);
      }
      set(this.signal, value);
      set(this.signalNumber, value);
    }

    for (const { box, path } of Object.values(this.flags)) {
      const owner = request[path[0]];
      box.disabled = !owner || typeof owner !== 'object';
      box.checked = Boolean(owner?.[path[1]]);
    }
    this.sessions.disabled = !request.continuity || typeof request.continuity !== 'object';
    set(this.sessions, request.continuity?.active_sessions ?? 0);

    this.renderTime(request, decision);
  }

  renderTime(request, decision) {
    const list = observations(request);
    const now = time(request.now);
    const spans = list.flatMap((o) => [o.from, o.to]).filter(Number.isFinite);
    const last = time(request.last_action_at);
    if (Number.isFinite(last)) spans.push(last);
    if (spans.length === 0 || !Number.isFinite(now)) {
      this.now.disabled = true;
      this.nowLabel.textContent = String(request.now ?? '');
      this.timeline.replaceChildren();
      return;
    }
    this.now.disabled = false;
    // The slider spans every window with a margin, laid out around a `now` that came from elsewhere
    // and kept while the slider moves it, so a drag never shifts the scale under the pointer.
    if (!this.window || request.now !== this.wrote.now) {
      this.wrote.now = undefined;
      const lo0 = Math.min(...spans);
      const hi0 = Math.max(...spans);
      const margin = Math.max(120_000, (hi0 - lo0) / 4);
      this.anchor = { ms: now, text: request.now };
      this.window = nowWindow(now, Math.min(lo0, now) - margin, Math.max(hi0, now) + margin, NOW_STEP_S * 1000);
      this.now.max = String(Math.round((this.window[1] - this.window[0]) / 1000));
    }
    const [lo, hi] = this.window;
    const at = (ms) => `${clamp(((ms - lo) / (hi - lo)) * 100, 0, 100)}%`;
    this.now.value = String(Math.round((now - lo) / 1000));
    const offset = Math.round((now - this.anchor.ms) / 1000);
    this.nowLabel.textContent = offset ? `${request.now} (${offset > 0 ? '+' : '−'}${Math.abs(offset)} s)` : request.now;
    this.nowLabel.dataset.now = request.now;

    const statusOf = (o) => {
      if (!decision) return '';
      const kind = o.path[0] === 'capacities' ? 'capacity' : o.path[0] === 'quotas' ? 'quota' : o.path[0];
      const e = decision.evidence.find((x) => x.kind === kind && x.ref === o.o.source_ref);
      return e ? e.status : 'not-used';
    };
    this.timeline.replaceChildren(
      ...list.map((o) => {
        const status = statusOf(o);
        return h(
          'div',
          { className: 'tl-row', dataset: { path: o.path.join('.'), status } },
          h('span', { className: 'tl-label', title: `${o.o.observed_at} → ${o.o.expires_at}` }, o.label),
          h(
            'span',
            { className: 'tl-track' },
            Number.isFinite(o.from) && Number.isFinite(o.to)
              ? h('span', { className: `tl-window ${status}`, style: `left:${at(o.from)};width:calc(${at(o.to)} - ${at(o.from)})` })
              : null,
            h('span', { className: 'tl-now', style: `left:${at(now)}` }),
          ),
          h('span', { className: `tl-status ${status}` }, status.replace('-', ' ')),
        );
      }),
    );
  }
}
