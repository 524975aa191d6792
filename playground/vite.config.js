// A static site: relative paths (any static host, any sub-folder), top-level await kept (the
// component is instantiated on import), and the workspace's examples/ and schema/ read at build time.
import { defineConfig } from 'vite';

export default defineConfig({
  base: './',
  build: {
    target: 'es2022',
    outDir: 'dist',
    emptyOutDir: true,
    assetsInlineLimit: 0,
    chunkSizeWarningLimit: 1024,
  },
  server: { fs: { allow: ['..'] } },
});
