/**
 * Why a request could not be evaluated (SPEC §9): a domain error, carried as a value by the
 * component and thrown here. `code` is the SPEC's wire spelling (`invalid_field`), `path` the JSON
 * path of the offending field (`contract.policy.target`, `capacities[1]`) or `""`.
 *
 * A trap, a missing or tampered `.wasm`, a non-string given to a `…Json` function or a non-array
 * to a batch function is not a `ScaleUnitsError` but an ordinary `Error` (a `TypeError`, or a
 * `WebAssembly.RuntimeError` for a trap). The object functions (`evaluate`, `validateContract`,
 * `simulate`, `explain`) take any value and the evaluator refuses one that is not the object it
 * wants with a `ScaleUnitsError` (`invalid_field`).
 */
export class ScaleUnitsError extends Error {
  /**
   * @param {string} code
   * @param {string} message
   * @param {string} path
   */
  constructor(code, message, path) {
    super(message);
    this.name = 'ScaleUnitsError';
    this.code = code;
    this.path = path;
  }
}

/** The largest JSON text, in UTF-8 bytes, handed to the component: 1 MiB, as in the Rust host and
 * the service. The core has no limit of its own; a valid request is well under 200 KiB. */
export const MAX_REQUEST_BYTES = 1 << 20;

/**
 * JSON text over MAX_REQUEST_BYTES, refused before the component is called: a limit of the host,
 * not a verdict on the request (so not a ScaleUnitsError). `size` is the text's UTF-8 length.
 */
export class RequestTooLargeError extends RangeError {
  /**
   * @param {number} size
   * @param {number} limit
   */
  constructor(size, limit) {
    super(`the request is ${size} bytes, more than the limit of ${limit}`);
    this.name = 'RequestTooLargeError';
    this.code = 'request_too_large';
    this.size = size;
    this.limit = limit;
  }
}

/**
 * The component this package was built from predates the function called: one of WIT 0.2.x has no
 * `gate`, `gateJson`, `scalerReading`, `validateObservations`, `derivationText` or `limits`
 * (added in 0.3.0), one of 0.1.x no `derive` or `diagnose` either. A limit of the component, not a
 * verdict on the input (so not a ScaleUnitsError); every other function keeps serving.
 */
export class UnsupportedError extends Error {
  /**
   * @param {string} fn the WIT function the component lacks, such as `gate-json`
   * @param {string} witVersion the component's WIT version, such as `0.2.0`
   * @param {string} since the WIT version that added `fn`
   */
  constructor(fn, witVersion, since) {
    super(`the component (WIT ${witVersion}) does not export ${fn}; build the package from a component of WIT ${since} or later`);
    this.name = 'UnsupportedError';
    this.code = 'unsupported';
    this.function = fn;
    this.witVersion = witVersion;
  }
}
