// Editor-side validation against schema/evaluation-request.schema.json, the JSON Schema generated
// from the core's types. It catches shape errors early and all at once; the component stays the
// judge (its own typed error is shown beside these, and only it decides).
import Ajv2020 from 'ajv/dist/2020';
import schema from '../../schema/evaluation-request.schema.json';

// The schema's `format`s (int64, uint64, date-time) are annotations here: the patterns and bounds
// carry the checks, and the component checks times exactly. `verbose` gives each error its schema,
// whose description words a rule (the surface profiles and the parts' rules, under `allOf`).
const ajv = new Ajv2020({ allErrors: true, strict: false, validateFormats: false, verbose: true });
const validate = ajv.compile(schema);

export const schemaId = schema.$id;

/** `[{path: segments, message}]` for every schema violation of a request object; `[]` when it conforms. */
export function schemaProblems(request) {
  if (validate(request)) return [];
  const seen = new Set();
  const out = [];
  for (const error of validate.errors) {
    // `anyOf` of (object | null) reports each branch and then itself; the branches say more.
    if (error.keyword === 'anyOf') continue;
    // A rule's `if` fails with its `then`, which says more; a `contains` reports each item that is
    // not the one looked for, then itself, which names what is missing.
    if (error.keyword === 'if' || error.schemaPath.includes('/contains/')) continue;
    const path = error.instancePath
      .split('/')
      .slice(1)
      .map((s) => (/^\d+$/.test(s) ? Number(s) : s.replaceAll('~1', '/').replaceAll('~0', '~')));
    let message = error.message;
    if (error.keyword === 'required') path.push(error.params.missingProperty);
    if (error.keyword === 'additionalProperties') {
      path.push(error.params.additionalProperty);
      message = 'is not a field of this object';
    }
    if (error.keyword === 'enum') message = `must be one of ${error.params.allowedValues.join(', ')}`;
    // A rule of the schema's `allOf` (a surface profile, a part's rule) says what it wants in words.
    if (error.schemaPath.includes('/allOf/') && error.parentSchema?.description) message = error.parentSchema.description;
    if (error.keyword === 'type' && error.params.type === 'null') continue;
    const key = `${path.join('/')}|${message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ path, message });
  }
  return out;
}
