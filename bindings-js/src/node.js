// The Node entry: reads the core module beside the package with node:fs.
import { readFile } from 'node:fs/promises';
import { createApi, instantiateEvaluator } from './facade.js';

export { MAX_REQUEST_BYTES, RequestTooLargeError, ScaleUnitsError, UnsupportedError } from './error.js';

const api = createApi(await instantiateEvaluator((name) => readFile(new URL(`../generated/${name}`, import.meta.url))));

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
