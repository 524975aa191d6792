// A static site: relative paths (any static host, any sub-folder), top-level await kept (the
// component is instantiated on import), and the workspace's examples/ and schema/ read at build time.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';
import { docSources, renderDocs } from './scripts/docs.mjs';

// `scale-units` is the workspace's bindings-js, through the browser entry its package.json declares
// (an alias rather than a `file:` dependency, so this lock file does not track that package's).
const bindings = new URL('../bindings-js/', import.meta.url);
const browserEntry = JSON.parse(readFileSync(new URL('package.json', bindings), 'utf8')).exports['.'].browser;

// bindings-js fetches `../generated/${name}` for each core module its manifest lists; Vite turns
// that template into a glob over the whole folder. Only the .wasm files are ever fetched, so the
// other files of generated/ (already bundled as modules) are not shipped a second time as assets.
const generatedAssetsOnlyWasm = {
  name: 'scale-units-generated-assets',
  generateBundle(_options, bundle) {
    for (const [file, output] of Object.entries(bundle)) {
      const sources = output.type === 'asset' ? (output.originalFileNames ?? []) : [];
      if (sources.some((s) => s.includes('bindings-js/generated/')) && !file.endsWith('.wasm')) delete bundle[file];
    }
  },
};

// The documents the page links to (src/docs.js) as pages of the site: docs/*.html. Links to other
// files of the repository go to PLAYGROUND_SOURCE_URL (e.g. a repository browser's tree of this
// commit) when it is set at build time, and stay plain text when it is not.
const repository = fileURLToPath(new URL('../', import.meta.url));
const reasons = JSON.parse(readFileSync(new URL('../schema/decision.schema.json', import.meta.url), 'utf8')).$defs.Reason.enum;
const docsOptions = { reasons, sourceBase: process.env.PLAYGROUND_SOURCE_URL || undefined };
const docs = {
  name: 'scale-units-docs',
  buildStart() {
    for (const file of docSources(repository)) this.addWatchFile(file);
  },
  generateBundle() {
    for (const { fileName, html } of renderDocs(repository, docsOptions)) this.emitFile({ type: 'asset', fileName, source: html });
  },
  configureServer(server) {
    server.middlewares.use((req, res, next) => {
      const page = renderDocs(repository, docsOptions).find((p) => req.url?.split(/[?#]/)[0].endsWith(`/${p.fileName}`));
      if (!page) return next();
      res.setHeader('content-type', 'text/html; charset=utf-8');
      res.end(page.html);
    });
  },
};

export default defineConfig({
  base: './',
  plugins: [generatedAssetsOnlyWasm, docs],
  resolve: { alias: { 'scale-units': fileURLToPath(new URL(browserEntry, bindings)) } },
  build: {
    target: 'es2022',
    outDir: 'dist',
    emptyOutDir: true,
    assetsInlineLimit: 0,
    chunkSizeWarningLimit: 1024,
  },
  server: { fs: { allow: ['..'] } },
});
