// A static site: relative paths (any static host, any sub-folder), top-level await kept (the
// component is instantiated on import), and the workspace's examples/ and schema/ read at build time.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

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

export default defineConfig({
  base: './',
  plugins: [generatedAssetsOnlyWasm],
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
