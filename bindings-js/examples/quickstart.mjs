// node bindings-js/examples/quickstart.mjs — one evaluation through the npm package.
import { readFileSync } from 'node:fs';
import { componentDigest, evaluate } from 'scale-units';

const request = JSON.parse(readFileSync(new URL('./request.json', import.meta.url), 'utf8'));
const decision = evaluate(request); // the SPEC's snake_case wire objects, as the CLI reads them
console.log(decision.action, decision.current_replicas, '->', decision.desired_replicas, decision.reasons, componentDigest);
