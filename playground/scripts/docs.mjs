// The repository's documents as pages of the site (docs/*.html, listed in src/docs.js), rendered
// at build time with markdown-it. Headings get GitHub's anchors; the SPEC's algorithm section gets
// `#algorithm` and one `#reason-<reason>` per reason of the decision schema, at the first place the
// section names it; a relative link to another listed document becomes a link to its page, and
// one to any other file of the repository links to `sourceBase` (PLAYGROUND_SOURCE_URL) or, with
// none, stays plain text: the built site holds no link that leads nowhere.
import { readFileSync } from 'node:fs';
import { dirname, join, normalize, posix } from 'node:path';
import MarkdownIt from 'markdown-it';
import anchor from 'markdown-it-anchor';
import { DOC_PAGES } from '../src/docs.js';

/** GitHub's heading anchor: lower case, punctuation dropped, each space a hyphen. */
export function slugify(text) {
  return text
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

const escapeHtml = (s) => s.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;');

/** Gives `#algorithm` and the `#reason-*` anchors to the SPEC's algorithm section; throws when it has none. */
function reasonAnchors(md, reasons) {
  md.core.ruler.push('scale_units_reasons', (state) => {
    const tokens = state.tokens;
    const start = tokens.findIndex((t, i) => t.type === 'heading_open' && t.tag === 'h2' && /the algorithm\s*$/i.test(tokens[i + 1]?.content ?? ''));
    if (start < 0) throw new Error('docs: the SPEC has no "The algorithm" section for the reason links');
    let end = tokens.findIndex((t, i) => i > start && t.type === 'heading_open' && t.tag === 'h2');
    if (end < 0) end = tokens.length;
    const placed = new Set();
    for (let i = start; i < end; i++) {
      const t = tokens[i];
      for (const child of t.type === 'inline' ? t.children : []) {
        if (child.type === 'code_inline' && reasons.includes(child.content) && !placed.has(child.content)) {
          child.attrSet('id', `reason-${child.content}`);
          placed.add(child.content);
        }
      }
    }
    // A reason the section names only in a code block or prose: an anchor on the block that
    // names it, else at the section's start.
    const word = (r) => new RegExp(`\\b${r}\\b`);
    const fallback = [];
    for (const reason of reasons.filter((r) => !placed.has(r))) {
      const block = tokens.slice(start, end).find((t) => t.type === 'fence' && !t.attrGet('id') && word(reason).test(t.content));
      if (block) block.attrSet('id', `reason-${reason}`);
      else fallback.push(reason);
    }
    const close = tokens.findIndex((t, i) => i > start && t.type === 'heading_close');
    const html = new state.Token('html_block', '', 0);
    html.content = `${['algorithm', ...fallback.map((r) => `reason-${r}`)].map((id) => `<span id="${id}"></span>`).join('')}\n`;
    tokens.splice(close + 1, 0, html);
  });
}

/** Wide tables scroll inside a box of their own, never the page. */
function scrollingTables(md) {
  md.renderer.rules.table_open = () => '<div class="table-scroll"><table>\n';
  md.renderer.rules.table_close = () => '</table></div>\n';
}

/** Relative links: to a listed document -> its page; to another repository file -> `sourceBase` or plain text. */
function repositoryLinks(md, source, sourceBase) {
  const pages = new Map(DOC_PAGES.map((p) => [p.source, posix.basename(p.page)]));
  const open = [];
  md.renderer.rules.link_open = (tokens, i, options, _env, self) => {
    const token = tokens[i];
    const href = token.attrGet('href') ?? '';
    if (/^[a-z][a-z0-9+.-]*:|^#/i.test(href)) {
      open.push(true);
      return self.renderToken(tokens, i, options);
    }
    const [path, hash = ''] = href.split('#');
    const target = normalize(join(dirname(source), path)).replaceAll('\\', '/');
    if (pages.has(target)) token.attrSet('href', `${pages.get(target)}${hash ? `#${hash}` : ''}`);
    else if (sourceBase) token.attrSet('href', `${sourceBase.replace(/\/$/, '')}/${target}${hash ? `#${hash}` : ''}`);
    else {
      open.push(false);
      return `<span class="repo-path" title="${escapeHtml(`in the repository: ${target}`)}">`;
    }
    open.push(true);
    return self.renderToken(tokens, i, options);
  };
  md.renderer.rules.link_close = (tokens, i, options, _env, self) => (open.pop() ? self.renderToken(tokens, i, options) : '</span>');
}

const STYLE = `
:root { color-scheme: light; --fg: #1d2330; --muted: #5d6677; --line: #d9dee7; }
* { box-sizing: border-box; }
[id] { scroll-margin-top: 48px; }
body { margin: 0; padding: 0 16px 48px; font: 15px/1.55 system-ui, -apple-system, 'Segoe UI', sans-serif; color: var(--fg); background: #f6f7f9; }
main { max-width: 860px; margin: 0 auto; background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 8px 28px 24px; overflow-wrap: break-word; }
nav { max-width: 860px; margin: 0 auto; padding: 14px 0; display: flex; flex-wrap: wrap; gap: 6px 16px; font-size: 14px; }
nav a[aria-current='page'] { font-weight: 700; color: var(--fg); text-decoration: none; }
a { color: #2d6cdf; }
code { font: 13px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; background: #f1f3f7; padding: 0 3px; border-radius: 3px; overflow-wrap: anywhere; }
pre { background: #f1f3f7; padding: 10px 12px; border-radius: 6px; overflow-x: auto; }
pre code { background: none; padding: 0; overflow-wrap: normal; }
.table-scroll { overflow-x: auto; margin: 12px 0; }
table { border-collapse: collapse; font-size: 13.5px; }
th, td { border: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; }
h1 { font-size: 26px; } h2 { font-size: 20px; margin-top: 32px; } h3 { font-size: 16px; }
:target, [id^='reason-']:target { background: #fff3bf; outline: 2px solid #f0c000; }
.header-anchor { color: var(--muted); text-decoration: none; margin-left: 6px; font-weight: 400; }
.repo-path { text-decoration: underline dotted; }
.source { color: var(--muted); font-size: 13px; }
@media (max-width: 600px) { body { padding: 0 8px 32px; } main { padding: 4px 14px 16px; } }
`;

/**
 * `[{fileName, html}]`: each page of DOC_PAGES from the repository at `root`. `reasons`: the
 * decision schema's reasons (each gets an anchor in the SPEC). `sourceBase`: where other files of
 * the repository are browsed (optional).
 */
export function renderDocs(root, { reasons, sourceBase } = {}) {
  return DOC_PAGES.map((page) => {
    const md = new MarkdownIt({ html: false, linkify: false, typographer: false });
    md.use(anchor, { slugify, tabIndex: false, permalink: anchor.permalink.linkInsideHeader({ symbol: '#', placement: 'after', ariaHidden: true }) });
    scrollingTables(md);
    repositoryLinks(md, page.source, sourceBase);
    if (page.id === 'spec') reasonAnchors(md, reasons ?? []);
    const text = readFileSync(join(root, page.source), 'utf8');
    const body = md.render(text);
    const title = /^#\s+(.+)$/m.exec(text)?.[1] ?? page.label;
    const here = posix.dirname(page.page);
    const nav = [
      `<a href="${posix.relative(here, 'index.html')}">← Playground</a>`,
      ...DOC_PAGES.map((p) => `<a href="${posix.relative(here, p.page)}"${p.id === page.id ? ' aria-current="page"' : ''}>${escapeHtml(p.label)}</a>`),
    ].join('\n');
    const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · Scale Units</title>
<link rel="icon" href="data:,">
<style>${STYLE}</style>
</head>
<body>
<nav aria-label="documents">
${nav}
</nav>
<main>
<p class="source">From <code>${escapeHtml(page.source)}</code> in the repository, as of this build.</p>
${body}</main>
</body>
</html>
`;
    return { fileName: page.page, html, source: page.source };
  });
}

/** The listed documents' paths in the repository at `root` (for the build to watch). */
export const docSources = (root) => DOC_PAGES.map((p) => join(root, p.source));
