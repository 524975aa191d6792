// The contract shown as a ScaleUnit resource (scale-units.dev/v1alpha1) for `kubectl apply`: what
// `scale-units init --format scale-unit` writes, without its comments. The API server checks it
// against the CRD (deploy/kubernetes/scaleunit-crd.yaml, `scale-units crd`); the service judges the
// contract with the same component as this page. Nothing here decides or checks a rule.
import { stringify } from 'yaml';

export const API_VERSION = 'scale-units.dev/v1alpha1';

/** A DNS-1123 label from `text`: lowercase letters, digits and `-`, at most 63, alphanumeric ends. */
function label(text) {
  return String(text ?? '')
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .slice(0, 63)
    .replace(/^-+|-+$/g, '');
}

/** The resource's name: the last segment of the contract's `unit_ref`, else its surface. */
export function resourceName(contract) {
  const ref = typeof contract?.unit_ref === 'string' ? contract.unit_ref : '';
  return label(ref.split(/[/:]/).pop()) || label(String(contract?.surface ?? '').replaceAll('_', '-')) || 'scale-unit';
}

/**
 * `contract` (a value) inside a ScaleUnit, as YAML: a Deployment of the same name as its target,
 * the mode Enforce (the CRD's default) written out. YAML 1.1 quoting, as the API server's reader
 * is: a string such as `on` or `yes` stays a string.
 */
export function scaleUnitYaml(contract, { name = resourceName(contract), mode = 'Enforce' } = {}) {
  const resource = {
    apiVersion: API_VERSION,
    kind: 'ScaleUnit',
    metadata: { name },
    spec: {
      scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name },
      mode,
      contract,
    },
  };
  const header = [
    '# A ScaleUnit holding the contract of the Scale Units playground. Set the target (a Deployment of',
    '# the same name here) and, if you like, metadata.namespace; then: kubectl apply -f FILE',
    '# (the CRD first: scale-units crd | kubectl apply -f -). mode: Enforce denies what the decision',
    '# does not allow; Warn or Monitor allow it and record it.',
  ];
  return `${header.join('\n')}\n${stringify(resource, { version: '1.1', lineWidth: 0 })}`;
}
