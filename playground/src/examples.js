// The gallery: every examples/<surface>/ folder, read at build time (the texts are bundled, so the
// site needs no server-side listing). Descriptions come from the table in examples/README.md.
import { parseDocument } from 'yaml';
import readme from '../../examples/README.md?raw';

const files = import.meta.glob('../../examples/*/*.{json,yaml}', { query: '?raw', import: 'default', eager: true });

// `| `folder/` or `folder/file.json` | `surface` | what it shows | decision |`
function describe() {
  const rows = new Map();
  for (const line of readme.split('\n')) {
    const m = /^\|\s*`([^`]+)`\s*\|\s*`([a-z_]+)`\s*\|(.*)\|(.*)\|\s*$/.exec(line);
    if (m) rows.set(m[1].replace(/\/$/, ''), { surface: m[2], what: m[3].trim(), decision: m[4].trim().replaceAll('`', '') });
  }
  return rows;
}

/** A request's text without its `contract` field, in the same format (YAML keeps its comments). */
function withoutContract(text, format) {
  if (format === 'json') {
    const { contract: _, ...rest } = JSON.parse(text);
    return `${JSON.stringify(rest, null, 2)}\n`;
  }
  const doc = parseDocument(text);
  // A comment above the first key is the file's own; keep it when that key is `contract`.
  const first = doc.contents?.items?.[0];
  if (first?.key?.value === 'contract' && first.key.commentBefore) {
    doc.commentBefore = [doc.commentBefore, first.key.commentBefore].filter(Boolean).join('\n');
  }
  doc.deleteIn(['contract']);
  return doc.toString({ lineWidth: 0 });
}

function contractOf(text, format) {
  if (format === 'json') return `${JSON.stringify(JSON.parse(text).contract, null, 2)}\n`;
  const doc = parseDocument(text);
  const out = parseDocument('{}');
  out.contents = doc.getIn(['contract'], true);
  return out.toString({ lineWidth: 0 });
}

/**
 * `[{id, folder, surface, title, what, decision, contract: {text, format}, request: {text, format}}]`:
 * one entry per request file; `request.json` first, then its variants (`request-*.json`, `request.yaml`).
 */
export function loadExamples() {
  const rows = describe();
  const byFolder = new Map();
  for (const [path, text] of Object.entries(files)) {
    const [, folder, file] = /examples\/([^/]+)\/([^/]+)$/.exec(path);
    if (!byFolder.has(folder)) byFolder.set(folder, {});
    byFolder.get(folder)[file] = text;
  }
  const out = [];
  for (const [folder, folderFiles] of [...byFolder].sort(([a], [b]) => a.localeCompare(b))) {
    const contract = folderFiles['contract.json'];
    const requests = Object.keys(folderFiles)
      .filter((f) => f.startsWith('request'))
      .sort((a, b) => (a === 'request.json' ? -1 : b === 'request.json' ? 1 : a.localeCompare(b)));
    for (const file of requests) {
      const format = file.endsWith('.yaml') ? 'yaml' : 'json';
      const variant = file.replace(/^request-?/, '').replace(/\.(json|yaml)$/, '');
      const id = file === 'request.json' ? folder : `${folder}/${file}`;
      const row = rows.get(id) ?? rows.get(folder) ?? {};
      out.push({
        id,
        folder,
        surface: row.surface ?? folder,
        title: [folder, variant.replaceAll('-', ' ')].filter(Boolean).join(' · ') + (format === 'yaml' ? ' (YAML)' : ''),
        what: row.what ?? '',
        decision: row.decision ?? '',
        contract:
          format === 'yaml'
            ? { text: contractOf(folderFiles[file], 'yaml'), format: 'yaml' }
            : { text: contract ?? contractOf(folderFiles[file], 'json'), format: 'json' },
        request: { text: withoutContract(folderFiles[file], format), format },
      });
    }
  }
  return out;
}
