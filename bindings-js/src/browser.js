// The browser (and default) entry: fetches the core module beside the package. No Node API.
import { createApi, instantiateEvaluator } from './facade.js';

export { MAX_REQUEST_BYTES, RequestTooLargeError, ScaleUnitsError, UnsupportedError } from './error.js';

async function fetchCore(name) {
  const response = await fetch(new URL(`../generated/${name}`, import.meta.url));
  if (!response.ok) throw new Error(`scale-units: fetching ${name} failed with HTTP ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
}

const api = createApi(await instantiateEvaluator(fetchCore));

export const {
  componentDigest,
  evaluate,
  evaluateJson,
  evaluateBatch,
  evaluateBatchJson,
  evaluateTyped,
  validateContract,
  validateContractJson,
  explain,
  surfaceProfile,
  info,
  simulate,
  simulateJson,
  derive,
  deriveJson,
  diagnose,
  diagnoseContract,
  gate,
  gateJson,
  gateTyped,
  scalerReading,
  scalerReadingJson,
  validateObservations,
  validateObservationsJson,
  derivationText,
  limits,
  limitsJson,
} = api;
