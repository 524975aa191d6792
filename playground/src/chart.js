// One uPlot chart over simulation steps, for the simulator and the comparison: time in UTC (like
// every time on the page), a legend of swatches with no hover placeholders, a one-line readout of
// the step under the pointer, shaded steps (blocked), and the width of its container, followed as
// it changes (ResizeObserver).
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { h } from './dom.js';

const pad = (n) => String(n).padStart(2, '0');

/** Seconds since the epoch -> `HH:MM`, or `HH:MM:SS` when `withSeconds`, in UTC. */
export function utcClock(seconds, withSeconds = false) {
  const d = new Date(seconds * 1000);
  const hm = `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}`;
  return withSeconds ? `${hm}:${pad(d.getUTCSeconds())}` : hm;
}

// Narrow charts get a lower plot and slimmer axes, so the plot keeps most of a phone's width.
const NARROW = 520;
const heightFor = (width) => (width < NARROW ? 240 : 300);
const axisSizes = (width) => (width < NARROW ? { size: 40, labelSize: 20 } : { size: 50, labelSize: 30 });

/**
 * A chart of steps in `root` (emptied). `spec`:
 * - `xs`: each step's time, seconds since the epoch;
 * - `scales`: `{id: {label, side: 'left'|'right', range(max) -> [lo, hi]}}`;
 * - `series`: `[{id, label, scale, stroke, values, width?, dash?, fill?, step?}]`, `step` `after` (a value
 *   holds from its step to the next) or `before` (it held up to its step);
 * - `shades`: `[{id, label, fill, steps: boolean[], band: [from, to]}]`, a step's span (to the next
 *   step) filled over that fraction of the plot's height;
 * - `readout(i)`: the words for step `i` under the pointer.
 * The box's `data-xticks` holds the time axis's labels as drawn, `data-width` the drawn width.
 */
export class StepChart {
  constructor(root, spec) {
    this.root = root;
    this.spec = spec;
    this.plotBox = h('div', { className: 'chart-plot' });
    this.readout = h('p', { className: 'chart-readout muted', 'aria-live': 'off' });
    const swatch = (style) => h('span', { className: 'swatch', style });
    this.legend = h(
      'ul',
      { className: 'chart-legend' },
      spec.series.map((s) =>
        h(
          'li',
          { dataset: { series: s.id } },
          swatch(`border-top: ${s.width ?? 2}px ${s.dash ? 'dashed' : 'solid'} ${s.stroke}; height: 10px; background: ${s.fill ?? 'none'}`),
          s.label,
        ),
      ),
      (spec.shades ?? []).map((s) => h('li', { dataset: { shade: s.id } }, swatch(`background: ${s.fill}; height: 10px`), s.label)),
    );
    root.replaceChildren(this.plotBox, this.legend, this.readout);
    this.showHint();

    this.width = this.measure();
    this.build();
    this.observer = new ResizeObserver(() => {
      const width = this.measure();
      if (width === this.width) return;
      const crossed = width < NARROW !== this.width < NARROW;
      this.width = width;
      if (crossed) this.build();
      else this.plot.setSize({ width, height: heightFor(width) });
      root.dataset.width = String(width);
    });
    this.observer.observe(root);
  }

  build() {
    this.plot?.destroy();
    this.plot = new uPlot(this.options(this.width), [this.spec.xs, ...this.spec.series.map((s) => s.values)], this.plotBox);
    this.root.dataset.width = String(this.width);
  }

  measure() {
    return Math.max(200, Math.floor(this.root.clientWidth || 800));
  }

  showHint() {
    this.readout.textContent = 'Point at the chart to read a step.';
    this.readout.classList.add('muted');
    delete this.readout.dataset.step;
  }

  options(width) {
    const { xs, series, scales, shades = [] } = this.spec;
    const utc = (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC');
    const first = xs.length ? new Date(xs[0] * 1000).toISOString().slice(0, 10) : '';
    const shade = (u) => {
      const { ctx, bbox } = u;
      const lastSpan = xs.length > 1 ? xs[xs.length - 1] - xs[xs.length - 2] : 60;
      ctx.save();
      for (const s of shades) {
        ctx.fillStyle = s.fill;
        const [from, to] = s.band ?? [0, 1];
        for (let i = 0; i < xs.length; i++) {
          if (!s.steps[i]) continue;
          const x0 = u.valToPos(xs[i], 'x', true);
          const x1 = u.valToPos(xs[i + 1] ?? xs[i] + lastSpan, 'x', true);
          ctx.fillRect(x0, bbox.top + from * bbox.height, Math.max(2, x1 - x0), (to - from) * bbox.height);
        }
      }
      ctx.restore();
    };
    const cursor = (u) => {
      const i = u.cursor.idx;
      if (i === null || i === undefined || u.cursor.left < 0) {
        this.showHint();
        return;
      }
      this.readout.textContent = this.spec.readout(i);
      this.readout.classList.remove('muted');
      this.readout.dataset.step = String(i);
    };
    const step = { after: uPlot.paths.stepped({ align: 1 }), before: uPlot.paths.stepped({ align: -1 }) };
    return {
      width,
      height: heightFor(width),
      tzDate: utc,
      legend: { show: false },
      scales: {
        x: { time: true },
        ...Object.fromEntries(Object.entries(scales).map(([id, s]) => [id, { range: (_u, _min, max) => s.range(max ?? 0) }])),
      },
      axes: [
        {
          label: `time (UTC${first ? `, ${first}` : ''})`,
          labelSize: axisSizes(width).labelSize,
          values: (_u, splits) => {
            const withSeconds = splits.some((s) => s % 60 !== 0);
            const labels = splits.map((s) => utcClock(s, withSeconds));
            this.root.dataset.xticks = labels.join(' ');
            return labels;
          },
        },
        ...Object.entries(scales).map(([id, s]) => ({ scale: id, label: s.label, side: s.side === 'right' ? 1 : 3, grid: { show: s.side !== 'right' }, ...axisSizes(width) })),
      ],
      series: [
        {},
        ...series.map((s) => ({
          label: s.label,
          scale: s.scale,
          stroke: s.stroke,
          width: s.width ?? 2,
          dash: s.dash,
          spanGaps: false,
          fill: s.fill,
          ...(s.step ? { points: { show: false } } : {}),
          paths: s.step ? step[s.step] : undefined,
        })),
      ],
      hooks: { drawClear: [shade], setCursor: [cursor] },
    };
  }

  destroy() {
    this.observer.disconnect();
    this.plot.destroy();
  }
}
