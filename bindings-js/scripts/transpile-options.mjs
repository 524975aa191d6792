// The one set of jco options the build uses; the digest test re-transpiles with it to prove that
// generated/ comes from the component whose digest the package reports.

/** @type {import('@bytecodealliance/jco-transpile').TranspilationOptions} */
// jco writes into the options it is given: pass a copy.
export const TRANSPILE_OPTIONS = Object.freeze({
  name: 'evaluator',
  // Instantiation mode: the facade compiles the core module itself (after checking its sha256),
  // so one generated folder serves Node (file read) and browsers (fetch).
  instantiation: 'async',
  // No base64 inlining: the core module stays a separate .wasm that is hashed before use.
  base64Cutoff: 0,
  // The component imports nothing: no WASI shim, no Node compatibility code.
  wasiShim: false,
  nodejsCompat: false,
  namespacedExports: false,
  // An `evaluation-error` is thrown as jco's ComponentError with the record in `payload`, which
  // keeps it apart from a trap or a TypeError (the default of this option varies by jco layer).
  noComponentErrorWrapping: false,
  emitTypescriptDeclarations: true,
  minify: false,
  optimize: false,
});
