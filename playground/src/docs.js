// The repository's documents the page links to, rendered into the site at build time
// (scripts/docs.mjs, through vite.config.js), so every link stays inside the site and works on any
// static host, in any folder, offline. Paths are relative to index.html.

/** `[{id, source, page, label}]`: `source` is the file in the repository, `page` the site's page. */
export const DOC_PAGES = [
  { id: 'spec', source: 'docs/SPEC.md', page: 'docs/spec.html', label: 'SPEC' },
  { id: 'readme', source: 'README.md', page: 'docs/readme.html', label: 'README' },
  { id: 'playground', source: 'playground/README.md', page: 'docs/playground.html', label: 'Playground guide' },
  { id: 'decisions', source: 'docs/DECISIONS.md', page: 'docs/decisions.html', label: 'Decisions' },
  { id: 'examples', source: 'examples/README.md', page: 'docs/examples.html', label: 'Examples' },
];

/** Page ids -> hrefs; `algorithm` is the SPEC's §7, where every reason is given. */
export const DOCS = { ...Object.fromEntries(DOC_PAGES.map((p) => [p.id, p.page])), algorithm: 'docs/spec.html#algorithm' };

/** The SPEC at the step that gives `reason` (every reason of the schema has an anchor there). */
export const reasonHref = (reason) => `docs/spec.html#reason-${reason}`;
