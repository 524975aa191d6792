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
