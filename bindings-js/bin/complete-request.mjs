// For the vector runners and tests only: fills the fields a wire request may omit with the SPEC
// §4/§6 defaults, so the typed path (which has no defaults) can run every vector and be compared
// with the JSON path. The facade never does this; the component owns the defaults. Only absent
// keys are filled: a `null` stays `null`, as the wire rules are the component's to judge.
const fill = (object, defaults) => {
  if (object === null || typeof object !== 'object' || Array.isArray(object)) return object;
  const out = { ...object };
  for (const [key, value] of Object.entries(defaults)) if (!(key in out)) out[key] = structuredClone(value);
  return out;
};

const POLICY = {
  min_replicas: 1, max_replicas: 1, scale_up_step: 1, scale_down_step: 1, scale_up_cooldown_s: 30,
  scale_down_cooldown_s: 300, drain_seconds: 60, allow_scale_to_zero: false, allow_scale_from_zero: true,
};
const PARTITION_LEASE = { partitioned: false, partitions_per_replica: 0, lease_required: false, lease_ttl_s: 0, fencing_required: false };
const CONTINUITY = { external_store_ref: null, drain_required: true, block_scale_down_with_active: true, max_drain_seconds: 300 };
const CONTRACT = {
  schema_version: '1', version: 1, quotas: [], partition_lease: PARTITION_LEASE, safety_required: true,
  engine_authority_axes: [], contract_id: '', contract_digest: '',
};

export function completeContract(contract) {
  const out = fill(contract, CONTRACT);
  if (out === contract) return contract;
  out.policy = fill(out.policy, POLICY);
  out.partition_lease = fill(out.partition_lease, PARTITION_LEASE);
  out.continuity = fill(out.continuity, CONTINUITY);
  if (Array.isArray(out.quotas)) out.quotas = out.quotas.map((q) => fill(q, { multiplicative: false }));
  return out;
}

export function completeRequest(request) {
  const out = fill(request, { capacities: [], quotas: [] });
  if (out === request) return request;
  out.contract = completeContract(out.contract);
  return out;
}
