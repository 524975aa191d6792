/**
 * Why a request could not be evaluated (SPEC §9): a domain error, carried as a value by the
 * component and thrown here. `code` is the SPEC's wire spelling (`invalid_field`), `path` the JSON
 * path of the offending field (`contract.policy.target`, `capacities[1]`) or `""`.
 *
 * A trap, a missing or tampered `.wasm` or a bad argument type of the host language is not a
 * `ScaleUnitsError` but an ordinary `Error` (a `WebAssembly.RuntimeError` for a trap).
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
