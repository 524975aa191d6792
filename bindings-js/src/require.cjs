// `require('scale-units')` lands here (the package's `require` condition) and fails with words:
// the package is an ES module only, because it instantiates the WebAssembly component with
// top-level `await` on import, which a synchronous `require` cannot wait for.
'use strict';

const error = new Error(
  "scale-units is an ES module only: it instantiates the WebAssembly component with top-level await " +
    "when imported, which require() cannot wait for. Use `import { evaluate } from 'scale-units'` in an " +
    "ES module (a .mjs file, or \"type\": \"module\" in package.json), or from CommonJS " +
    "`const { evaluate } = await import('scale-units')` inside an async function.",
);
error.code = 'ERR_REQUIRE_ESM';
throw error;
