// Types of the `scale-units` package: the SPEC's wire objects (snake_case fields, snake_case enum
// strings). Hand-written; jco's own declarations stay private in generated/.

/** A non-negative integer: a safe-integer `number` or a `bigint` (never a fraction, never beyond 2^53 as a number). */
export type Integer = number | bigint;
/** An RFC 3339 time with an offset, `2026-08-19T12:00:00Z` (SPEC §3). */
export type Time = string;
/** `sha256:` and 64 lower-case hex digits. */
export type Digest = string;

export type SurfaceKind =
  | 'ingest_worker' | 'dispatch_worker' | 'graphos_gateway' | 'mcp_gateway' | 'api_gateway'
  | 'query_reader' | 'connector_pool' | 'media_pool' | 'rlm_pool';
export type SignalKind =
  | 'queue_depth' | 'consumer_lag' | 'backlog_age_ms' | 'request_rate' | 'in_flight' | 'p95_latency_ms'
  | 'error_rate_ppm' | 'active_sessions' | 'continuity_load' | 'provider_in_flight' | 'gpu_utilization_ppm';
export type CapacityAxis =
  | 'cpu_milli' | 'memory_mib' | 'gpu_count' | 'gpu_memory_mib' | 'partition_slots' | 'lease_slots'
  | 'engine_bytes' | 'engine_write_bytes_per_s' | 'fsync_iops' | 'read_admission_slots' | 'session_slots'
  | 'continuity_slots' | 'upstream_rate' | 'provider_global_quota';
export type QuotaScope = 'unit' | 'tenant' | 'engine_global' | 'provider_global';
export type ContinuityMode = 'stateless' | 'session_affine' | 'externalized';
export type ActionKind = 'scale_up' | 'scale_down' | 'hold' | 'blocked';
export type EvidenceKind = 'signal' | 'capacity' | 'quota' | 'continuity' | 'safety';
export type EvidenceStatus = 'accepted' | 'missing' | 'stale' | 'blocked';
export type DecisionReason =
  | 'at_target' | 'cooldown' | 'signal_missing' | 'signal_stale' | 'signal_mismatch' | 'capacity_missing'
  | 'capacity_stale' | 'capacity_exhausted' | 'engine_authority_saturated' | 'provider_quota_missing'
  | 'provider_quota_stale' | 'provider_quota_exhausted' | 'provider_quota_not_multiplicative' | 'quota_missing'
  | 'quota_stale' | 'quota_scope_mismatch' | 'continuity_missing' | 'continuity_stale' | 'continuity_not_ready'
  | 'active_sessions_block_drain' | 'scale_from_zero_disabled' | 'scale_to_zero_disabled' | 'drain_required'
  | 'overload_shedding_active' | 'noisy_neighbor' | 'partition_lease_missing' | 'invalid_bounds' | 'target_tracking';
/** The stable error codes of SPEC §9. */
export type ErrorCode =
  | 'invalid_json' | 'invalid_field' | 'invalid_ref' | 'credential_in_ref' | 'invalid_digest' | 'invalid_time'
  | 'invalid_policy' | 'invalid_contract' | 'invalid_observation' | 'identity_mismatch' | 'duplicate_observation'
  | 'replicas_out_of_bounds';

/** SPEC §4.1. Optional fields take the SPEC's defaults through `evaluate`; `evaluateTyped` needs them all. */
export interface ScalePolicy {
  min_replicas?: Integer;
  max_replicas?: Integer;
  target: Integer;
  target_signal: SignalKind;
  scale_up_step?: Integer;
  scale_down_step?: Integer;
  scale_up_cooldown_s?: Integer;
  scale_down_cooldown_s?: Integer;
  drain_seconds?: Integer;
  allow_scale_to_zero?: boolean;
  allow_scale_from_zero?: boolean;
}
export interface CapacityDemand { axis: CapacityAxis; per_replica: Integer }
export interface QuotaBinding {
  quota_ref: string;
  axis: CapacityAxis;
  scope: QuotaScope;
  per_replica: Integer;
  multiplicative?: boolean;
}
export interface PartitionLeaseContract {
  partitioned?: boolean;
  partitions_per_replica?: Integer;
  lease_required?: boolean;
  lease_ttl_s?: Integer;
  fencing_required?: boolean;
}
export interface ContinuityContract {
  mode: ContinuityMode;
  external_store_ref?: string | null;
  drain_required?: boolean;
  block_scale_down_with_active?: boolean;
  max_drain_seconds?: Integer;
}
/** SPEC §4.3: the immutable contract of one scale unit. */
export interface ScaleUnitContract {
  schema_version?: '1';
  unit_ref: string;
  surface: SurfaceKind;
  version?: Integer;
  policy: ScalePolicy;
  allowed_signals: SignalKind[];
  required_capacity_axes: CapacityAxis[];
  replica_demands: CapacityDemand[];
  quotas?: QuotaBinding[];
  partition_lease?: PartitionLeaseContract;
  continuity: ContinuityContract;
  safety_required?: boolean;
  engine_authority_axes?: CapacityAxis[];
  contract_id?: string;
  contract_digest?: string;
}

/** Fields every observation carries (SPEC §5). */
export interface Observed {
  observed_at: Time;
  expires_at: Time;
  source_ref: string;
  source_digest: Digest;
}
export interface SignalObservation extends Observed { signal: SignalKind; value: Integer }
export interface CapacityObservation extends Observed { axis: CapacityAxis; allocatable: Integer; reserved: Integer; used: Integer }
export interface QuotaObservation extends Observed { quota_ref: string; scope: QuotaScope; limit: Integer; used: Integer }
export interface ContinuityObservation extends Observed { ready: boolean; active_sessions: Integer; active_streams: Integer }
export interface SafetyObservation extends Observed { overloaded: boolean; noisy_neighbor: boolean; reason_ref?: string | null }

/** SPEC §6: one evaluation request, exactly the CLI's JSON. */
export interface EvaluationRequest {
  contract: ScaleUnitContract;
  current_replicas: Integer;
  signal?: SignalObservation | null;
  capacities?: CapacityObservation[];
  quotas?: QuotaObservation[];
  continuity?: ContinuityObservation | null;
  safety?: SafetyObservation | null;
  now: Time;
  last_action_at?: Time | null;
}

export interface Evidence {
  kind: EvidenceKind;
  ref: string;
  digest: Digest;
  status: EvidenceStatus;
  /** A wire spelling naming what was accepted or what went wrong (`request_rate`, `signal_stale`). */
  code: string;
}
/** SPEC §9: the decision, field for field the wire JSON. */
export interface Decision {
  schema_version: '1';
  decision_id: string;
  decision_digest: Digest;
  contract_id: string;
  evaluated_at: string;
  current_replicas: number;
  desired_replicas: number;
  action: ActionKind;
  reasons: DecisionReason[];
  drain_required: boolean;
  evidence: Evidence[];
}
export interface ContractIdentity { contract_id: string; contract_digest: Digest }
export interface Profile {
  surface: SurfaceKind;
  allowed_signals: SignalKind[];
  required_capacity_axes: CapacityAxis[];
  engine_authority_axes: CapacityAxis[];
  continuity_modes: ContinuityMode[];
  partition_and_fenced_lease: boolean;
  provider_quota_axes: CapacityAxis[];
}
export interface Explanation {
  summary: string;
  reasons: { reason: DecisionReason; text: string }[];
  evidence: string[];
}
export interface EvaluatorInfo { evaluator_version: string; schema_version: string; wit_version: string }

/** A request the evaluator cannot decide on (SPEC §9). Traps and host faults are other errors. */
export class ScaleUnitsError extends Error {
  readonly name: 'ScaleUnitsError';
  /** The SPEC's wire spelling. */
  readonly code: ErrorCode;
  /** The JSON path of the offending field (`capacities[2].reserved`), or `""`. */
  readonly path: string;
  constructor(code: ErrorCode, message: string, path: string);
}

/** `sha256:<hex>` of the component this package was built from; the Rust host reports the same. */
export const componentDigest: Digest;
/** Evaluates a request (SPEC §6; omitted fields take their defaults). Throws ScaleUnitsError. */
export function evaluate(request: EvaluationRequest): Decision;
/** Evaluates JSON text; returns the decision's JSON text as the core writes it. Throws ScaleUnitsError (`invalid_json`, …). */
export function evaluateJson(requestJson: string): string;
/** The typed entry point: every field must be given (no defaults). Throws ScaleUnitsError. */
export function evaluateTyped(request: Required<EvaluationRequest>): Decision;
/** Validates a contract (SPEC §4) and returns its identity. Throws ScaleUnitsError. */
export function validateContract(contract: ScaleUnitContract): ContractIdentity;
/** Validates a contract given as JSON text. Throws ScaleUnitsError. */
export function validateContractJson(contractJson: string): ContractIdentity;
/** A decision in plain words. Throws ScaleUnitsError for a malformed decision. */
export function explain(decision: Decision): Explanation;
/** The static profile of a surface (SPEC §4.3). Throws ScaleUnitsError for an unknown surface. */
export function surfaceProfile(surface: SurfaceKind): Profile;
/** The evaluator, schema and WIT versions. Never throws. */
export function info(): EvaluatorInfo;
