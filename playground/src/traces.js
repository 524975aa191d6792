// Ready traces for the simulator: four shaped to the contract in the editor (its target and
// replica bounds) so each tells its story on any surface, and the CSV files of examples/traces/
// (read at build time) with the contract and initial count their README suggests. Plain CSV, the
// format `trace_csv` reads.
import readme from '../../examples/README.md?raw';

const traceFiles = import.meta.glob('../../examples/traces/*.csv', { query: '?raw', import: 'default', eager: true });

const START = Date.parse('2026-08-19T12:00:00Z');
const STEP_S = 60;
const STEPS = 40;

const at = (i) => new Date(START + i * STEP_S * 1000).toISOString().replace('.000Z', 'Z');

// Demand in "replicas' worth of signal": a quiet start, a climb, a plateau, a fall.
function spikeLevel(i, peak) {
  if (i < 5) return 1.6;
  if (i < 10) return 1.6 + ((peak - 1.6) * (i - 4)) / 5;
  if (i < 20) return peak;
  if (i < 27) return peak - ((peak - 1) * (i - 19)) / 7;
  return 1;
}

function csv(columns, rows) {
  return `${columns.join(',')}\n${rows.map((r) => columns.map((c) => r[c] ?? '').join(',')).join('\n')}\n`;
}

function shape(policy) {
  const target = Math.max(1, Number(policy?.target) || 100);
  const max = Math.max(1, Number(policy?.max_replicas) || 10);
  const min = Math.max(0, Number(policy?.min_replicas) || 0);
  return { target, max, min, peak: Math.max(3, Math.min(max, 10) - 0.4) };
}

/**
 * The ready traces: `{id, title, story, make(policy) -> {csv, initialReplicas}}`. `story` says what
 * to look for, and which contracts show it (a trace cannot make a stateless unit hold sessions).
 */
export const TRACES = [
  {
    id: 'spike',
    title: 'A spike',
    story: 'Demand climbs to near max_replicas and falls back: watch the step cap and the scale-up cooldown pace the climb, and the longer scale-down cooldown slow the way down.',
    make(policy) {
      const { target, peak, min } = shape(policy);
      const rows = Array.from({ length: STEPS }, (_, i) => ({ time: at(i), signal: Math.round(spikeLevel(i, peak) * target * 0.95) }));
      return { csv: csv(['time', 'signal'], rows), initialReplicas: Math.max(min, 2) };
    },
  },
  {
    id: 'outage',
    title: 'A metrics outage mid-spike',
    story: 'The same spike, but the metric read fails for seven minutes while demand climbs: every step without a signal is blocked (signal_missing). A missing metric is never read as an empty queue.',
    make(policy) {
      const { target, peak, min } = shape(policy);
      const rows = Array.from({ length: STEPS }, (_, i) => ({
        time: at(i),
        signal: i >= 7 && i < 14 ? '' : Math.round(spikeLevel(i, peak) * target * 0.95),
      }));
      return { csv: csv(['time', 'signal'], rows), initialReplicas: Math.max(min, 2) };
    },
  },
  {
    id: 'quota',
    title: 'A provider quota running dry',
    story: 'Demand keeps rising while the quota (quota_headroom, in replicas) shrinks to nothing: growth is refused (provider_quota_exhausted or capacity_exhausted) though the signal asks for more. Shows on contracts that bind a quota (connector-pool, mcp-gateway).',
    make(policy) {
      const { target, max, min } = shape(policy);
      const rows = Array.from({ length: STEPS }, (_, i) => ({
        time: at(i),
        signal: Math.round(target * (1.5 + ((max - 1) * i) / (STEPS - 1))),
        quota_headroom: Math.max(0, 6 - Math.floor(i / 3)),
      }));
      return { csv: csv(['time', 'signal', 'quota_headroom'], rows), initialReplicas: Math.max(min, 1) };
    },
  },
  {
    id: 'drain',
    title: 'A drain with sessions open',
    story: 'Demand falls while sessions are still open: a scale-down is blocked (active_sessions_block_drain) until they drain to zero. Shows on contracts whose continuity blocks scale-down with active sessions (mcp-gateway, rlm-pool, graphos-gateway).',
    make(policy) {
      const { target, max, min } = shape(policy);
      const high = Math.min(max, 6);
      const rows = Array.from({ length: STEPS }, (_, i) => ({
        time: at(i),
        signal: Math.round(target * (i < 4 ? high - 0.2 : 1)),
        active_sessions: i < 4 ? 60 : Math.max(0, 60 - 4 * (i - 4)),
      }));
      return { csv: csv(['time', 'signal', 'active_sessions'], rows), initialReplicas: Math.max(min, high) };
    },
  },
];

// `| `name.csv` | `surface/contract.json --initial N` | what it shows |` in examples/README.md.
function exampleTraces() {
  const rows = new Map();
  for (const line of readme.split('\n')) {
    const m = /^\|\s*`([^`]+\.csv)`\s*\|\s*`([^`/]+)\/contract\.json(?:\s+--initial\s+(\d+))?`\s*\|(.*)\|\s*$/.exec(line);
    if (m) rows.set(m[1], { example: m[2], initial: m[3], what: m[4].trim().replaceAll('`', '') });
  }
  return Object.entries(traceFiles)
    .map(([path, text]) => {
      const file = path.split('/').pop();
      const row = rows.get(file) ?? {};
      return {
        id: `examples/traces/${file}`,
        title: file,
        file: true,
        example: row.example,
        story: `${row.what ?? 'A trace from examples/traces/.'}${row.example ? ` Made for the ${row.example} example${row.initial ? `, from ${row.initial} replicas` : ''}.` : ''}`,
        make: () => ({ csv: text, initialReplicas: Number(row.initial ?? 1) }),
      };
    })
    .sort((a, b) => a.id.localeCompare(b.id));
}

/** Every ready trace: the shaped ones, then the files of examples/traces/. */
export const ALL_TRACES = [...TRACES, ...exampleTraces()];
