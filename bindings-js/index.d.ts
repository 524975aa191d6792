// Types of the `scale-units` package: the SPEC's wire objects (snake_case fields, snake_case enum
// strings). Hand-written; jco's own declarations stay private in generated/.

/** An integer: a `number` with an integer value or a `bigint` (never a fraction; past 2^53 prefer a `bigint`, which is exact). */
export type Integer = number | bigint;
/** An RFC 3339 time with an offset, `2026-08-19T12:00:00Z` (SPEC §3). */
export type Time = string;
/** A time given to the evaluator: its text, or a `Date` (written as its ISO 8601 text in UTC). */
export type TimeInput = Time | Date;
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
  observed_at: TimeInput;
  expires_at: TimeInput;
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
  now: TimeInput;
  last_action_at?: TimeInput | null;
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

/** One step of a simulation trace: `at` and any of the other columns; absent evidence is synthesized fresh. */
export interface TraceStep {
  /** The step's time; steps must not go back in time. */
  at: TimeInput;
  /** The target signal's value; absent or `null` is a failed read (a missing observation), never zero. */
  signal?: Integer | null;
  /** Extra replicas that still fit on every capacity axis (default ample; `0` saturates engine axes). */
  capacity_headroom?: Integer | null;
  /** Extra replicas every bound quota still allows (default ample; `0`: the quota ran dry). */
  quota_headroom?: Integer | null;
  /** Active sessions in the continuity store (default 0). */
  active_sessions?: Integer | null;
  /** Whether the continuity store is ready (default true). */
  ready?: boolean | null;
  /** Whether the fleet is shedding load (default false). */
  overloaded?: boolean | null;
  /** Whether a noisy neighbour degrades the fleet (default false). */
  noisy_neighbor?: boolean | null;
}
/** The input of `simulate`: a contract and a trace, as CSV text (`trace_csv`) or steps (`trace`), exactly one. */
export interface SimulationInput {
  contract: ScaleUnitContract;
  /** Replicas before the first step, 0..=10000 (default: the contract's `min_replicas`). */
  initial_replicas?: Integer;
  /** Seconds between accepting a scale and the replicas being there, 0..=86400 (default 0). */
  actuation_delay_s?: Integer;
  /** A header (`time` or `at`, `signal`, and any TraceStep column) and one row a step; `#` comments. */
  trace_csv?: string;
  trace?: TraceStep[];
}
/**
 * What happened at one step: the real decision, and the replicas around it. Show the decision as
 * `current_replicas->desired_replicas action` (`1->4 scale_up`) and what ran as
 * `replicas_before->replicas_after`; with an actuation delay the two differ until the scale is
 * carried out (`pending_replicas`).
 */
export interface SimulationStep {
  at: Time;
  /** Whole seconds since the first step. */
  elapsed_s: number;
  /** `null` when the read failed. */
  signal: number | null;
  /** Replicas running when the step was evaluated (a pending scale due by then carried out). */
  replicas_before: number;
  /** Replicas running after the step: its scale when carried out at once, else unchanged. */
  replicas_after: number;
  /** The decision's current count: the replicas it was made for (equals `replicas_before`). */
  current_replicas: number;
  action: ActionKind;
  /** The decision's desired count (equals `current_replicas` for `hold` and `blocked`). */
  desired_replicas: number;
  /** After the step, the count a scale accepted but not carried out yet will bring; `null` when nothing is pending. */
  pending_replicas: number | null;
  reasons: DecisionReason[];
  decision_id: string;
}
/** A scale accepted but not carried out when the trace ended (an actuation delay). */
export interface PendingScale {
  action: 'scale_up' | 'scale_down';
  /** Replicas running when it was decided (and still at the end). */
  from_replicas: number;
  /** Replicas it will bring. */
  to_replicas: number;
  /** The step time it was decided at, as given. */
  decided_at: Time;
  /** The decision's time plus the actuation delay (UTC). */
  due_at: Time;
}
/**
 * Totals; a step lasts until the next step, the last one zero seconds. Decisions and changes are
 * counted apart: with an actuation delay a later decision may replace a pending one before it is
 * carried out (`replaced_scales`), so `scale_ups` can exceed `scale_ups_carried_out`.
 */
export interface SimulationSummary {
  steps: number;
  /** Decisions to scale up, carried out or not. */
  scale_ups: number;
  /** Decisions to scale down, carried out or not. */
  scale_downs: number;
  /** Scales carried out that raised the running count. */
  scale_ups_carried_out: number;
  /** Scales carried out that lowered the running count. */
  scale_downs_carried_out: number;
  /** Scale decisions replaced by a later one while still pending (never carried out). */
  replaced_scales: number;
  blocked_steps: number;
  blocked_seconds: number;
  /** Blocked seconds per reason, in first-seen order. */
  blocked_by_reason: { reason: DecisionReason; seconds: number }[];
  /** Seconds during which the signal needed more replicas than were running. */
  seconds_over_target: number;
  /** Seconds during which more replicas ran than the signal needed (above the floor). */
  seconds_under_target: number;
  /** Most replicas running at any step. */
  peak_replicas: number;
  /** Replicas after the last step, a still-pending scale included (`pending_at_end`). */
  final_replicas: number;
  /** Replicas running after the last step, without a pending scale. */
  running_replicas_at_end: number;
  /** The scale still pending after the last step, `null` when there is none. */
  pending_at_end: PendingScale | null;
}
export interface Simulation { steps: SimulationStep[]; summary: SimulationSummary }

/**
 * The derivation of a decision (WIT 0.2.0 `derive`): the numbers SPEC §7 compared on the way to
 * it, in evaluation order, then the decision's outcome. Integers past 2^53 (the growth gate's
 * products reach about 10^19) are `bigint`, never rounded; smaller ones are numbers.
 */
export interface Derivation {
  decision_id: string;
  decision_digest: Digest;
  contract_id: string;
  evaluated_at: Time;
  current_replicas: Integer;
  /** One verdict per evidence entry of the decision, in the same order. */
  evidence: EvidenceVerdict[];
  /** Phase-A checks that add a reason without an evidence entry of their own. */
  checks: DerivationCheck[];
  /** The target arithmetic; `null` when phase A blocked. */
  target: DerivationTarget | null;
  /** Each gate that applied, in SPEC order; the last one fired when the decision is not the tracked one. */
  gates: Gate[];
  action: ActionKind;
  desired_replicas: Integer;
  reasons: DecisionReason[];
  drain_required: boolean;
}
export interface EvidenceVerdict {
  kind: EvidenceKind;
  ref: string;
  status: EvidenceStatus;
  code: string;
  /** `null` when the observation was missing. */
  observed_at: Time | null;
  expires_at: Time | null;
  /** For `signal_mismatch` and `quota_scope_mismatch`: expected against found. */
  mismatch: { expected: string; found: string } | null;
}
export type DerivationCheck =
  | { check: 'continuity_stale'; observed_at: Time; expires_at: Time }
  | { check: 'overloaded'; reason_ref: string | null }
  | { check: 'noisy_neighbor'; reason_ref: string | null }
  | { check: 'last_action_in_future'; last_action_at: Time; ahead_us: Integer };
/** Target tracking: `ceil(value / target)`, clamped to [floor, max_replicas], then step-capped. */
export interface DerivationTarget {
  signal: SignalKind;
  value: Integer;
  target: Integer;
  ceil: Integer;
  min_replicas: Integer;
  floor: Integer;
  max_replicas: Integer;
  /** Which bound moved `ceil`, if one did. */
  clamp: 'floor' | 'max_replicas' | null;
  raw: Integer;
  action: ActionKind;
  step: { name: 'scale_up_step' | 'scale_down_step'; size: Integer; limit: Integer; capped: boolean } | null;
  desired: Integer;
}
export interface DemandCheck {
  axis: CapacityAxis;
  per_replica: Integer;
  needed: Integer;
  status: 'fits' | 'exhausted' | 'missing' | 'stale';
  allocatable: Integer | null;
  reserved: Integer | null;
  available: Integer | null;
  shortfall: Integer | null;
}
export interface QuotaCheck {
  quota_ref: string;
  scope: QuotaScope;
  axis: CapacityAxis;
  multiplicative: boolean;
  per_replica: Integer;
  used: Integer;
  limit: Integer;
  projected: Integer;
  over: boolean;
}
export interface EngineCheck { axis: CapacityAxis; allocatable: Integer; reserved: Integer; available: Integer; saturated: boolean }
/** A gate of phase C with its numbers; `fired` says whether it returned the decision. */
export type Gate =
  | { gate: 'scale_from_zero'; allow_scale_from_zero: boolean; fired: boolean }
  | { gate: 'scale_to_zero'; min_replicas: Integer; desired: Integer; fired: boolean }
  | {
      gate: 'active_sessions';
      block_scale_down_with_active: boolean;
      active_sessions: Integer | null;
      active_streams: Integer | null;
      fired: boolean;
    }
  | {
      gate: 'cooldown';
      cooldown: 'scale_up_cooldown_s' | 'scale_down_cooldown_s';
      cooldown_s: Integer;
      last_action_at: Time;
      elapsed_us: Integer;
      remaining_us: Integer;
      fired: boolean;
    }
  | {
      gate: 'growth';
      additional: Integer;
      capacity: DemandCheck[];
      provider_quota_at_limit: boolean;
      local_quota_at_limit: boolean;
      quotas: QuotaCheck[];
      engine_authority: EngineCheck[];
      fired: boolean;
    }
  | { gate: 'drain_bound'; drain_required: boolean; drain_seconds: Integer; max_drain_seconds: Integer; fired: boolean };

/** One fault of a diagnosis (WIT 0.2.0): the SPEC's error for it and what to change. */
export interface Fault {
  code: ErrorCode;
  /** What is wrong, as the SPEC's error says it. */
  message: string;
  /** The JSON path of the offending field, or `""` for the input as a whole. */
  path: string;
  /** What to add or change; never empty. */
  hint: string;
}

/** What kind of change a gate judges (SPEC §12.1, WIT 0.3.0). */
export type ChangeKind = 'scale' | 'break_glass';

/** A proposed replica change from the request's `current_replicas` (SPEC §12.1). */
export interface ProposedChange {
  /** The count the change asks for, 0..=10000 (else `invalid_field`). */
  to_replicas: Integer;
  /** `break_glass` only when the gate's own identity policy authorised the override. `gate` and `gateJson` default it to `scale`; `gateTyped` requires it. */
  kind?: ChangeKind;
}

/** Why a change is allowed or denied (SPEC §12.1): a closed list. */
export type GateReason =
  | 'no_change'
  | 'within_decision'
  | 'recovery_toward_min'
  | 'recovery_toward_max'
  | 'break_glass'
  | 'decision_blocked'
  | 'decision_hold'
  | 'wrong_direction'
  | 'past_desired'
  | 'away_from_bounds'
  | 'past_bound'
  | 'request_invalid';

/** The SPEC's error as a value inside a verdict or reading (not thrown). */
export interface ErrorValue {
  code: ErrorCode;
  message: string;
  path: string;
}

/** A gate's answer (SPEC §12.1). */
export interface GateVerdict {
  allowed: boolean;
  reason: GateReason;
  /** One sentence naming the change, the decision and the numbers. */
  message: string;
  /** The count the change moves from; `null` when the request cannot be evaluated. */
  from_replicas: number | null;
  to_replicas: number;
  /** The decision judged, or `null` when there is none. */
  decision: Decision | null;
  /** Why there is no decision (`reason` `request_invalid`), else `null`. */
  error: ErrorValue | null;
}

/** What an external scaler (KEDA) reports for a request (SPEC §12.2). */
export interface ScalerReading {
  /** The metric that makes an HPA with an `AverageValue` target of 1 settle on the decision; `null` without a decision. */
  metric_value: number | null;
  /** Whether the unit stays active (always, without a decision). */
  active: boolean;
  decision: Decision | null;
  error: ErrorValue | null;
}

/** The bounds the evaluator enforces (WIT 0.3.0 `limits-json`), so that no host writes its own. */
export interface Limits {
  max_replicas: number;
  max_amount: number;
  max_seconds: number;
  max_observations: number;
}

/** A request the evaluator cannot decide on (SPEC §9). Traps and host faults are other errors. */
export class ScaleUnitsError extends Error {
  readonly name: 'ScaleUnitsError';
  /** The SPEC's wire spelling. */
  readonly code: ErrorCode;
  /** The JSON path of the offending field (`capacities[2].reserved`), or `""`. */
  readonly path: string;
  constructor(code: ErrorCode, message: string, path: string);
}

/**
 * The component this package was built from predates the function called (a WIT 0.2.x component
 * has no gate, 0.1.x no derive or diagnose either): a limit of the component, not a
 * ScaleUnitsError. Every other function keeps serving.
 */
export class UnsupportedError extends Error {
  readonly name: 'UnsupportedError';
  readonly code: 'unsupported';
  /** The WIT function the component lacks, such as `gate-json`. */
  readonly function: string;
  /** The component's WIT version, such as `0.2.0`. */
  readonly witVersion: string;
  constructor(fn: string, witVersion: string, since: string);
}

/** The largest JSON text, in UTF-8 bytes, the JSON entry points hand to the component (1 MiB). */
export const MAX_REQUEST_BYTES: number;

/** JSON text over MAX_REQUEST_BYTES, refused before the component: a host limit, not a ScaleUnitsError. */
export class RequestTooLargeError extends RangeError {
  readonly name: 'RequestTooLargeError';
  readonly code: 'request_too_large';
  /** The text's UTF-8 length. */
  readonly size: number;
  readonly limit: number;
  constructor(size: number, limit: number);
}

/** `sha256:<hex>` of the component this package was built from; the Rust host reports the same. */
export const componentDigest: Digest;
/** Evaluates a request (SPEC §6; omitted fields take their defaults). Throws ScaleUnitsError. */
export function evaluate(request: EvaluationRequest): Decision;
/** Evaluates JSON text; returns the decision's JSON text as the core writes it. Throws ScaleUnitsError (`invalid_json`, …). */
export function evaluateJson(requestJson: string): string;
/**
 * Evaluates many requests in one call of the component: one entry per request, in order, its
 * decision or the ScaleUnitsError of that request (returned, not thrown: one bad request does not
 * stop the others). Throws RequestTooLargeError when a request is over MAX_REQUEST_BYTES.
 */
export function evaluateBatch(requests: EvaluationRequest[]): Array<Decision | ScaleUnitsError>;
/** `evaluateBatch` over JSON texts: each entry is the decision's JSON text or a ScaleUnitsError. */
export function evaluateBatchJson(requestsJson: string[]): Array<string | ScaleUnitsError>;
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
/**
 * Replays a contract over a trace in the component (every step a real decision). Throws
 * ScaleUnitsError: the contract's errors, `invalid_field` at the trace cell (`trace[3].signal`),
 * `invalid_time` for a malformed step time.
 */
export function simulate(input: SimulationInput): Simulation;
/** `simulate` on JSON text; returns the simulation's JSON text as the core writes it. Throws ScaleUnitsError, TypeError for a non-string. */
export function simulateJson(inputJson: string): string;
/** The evaluator, schema and WIT versions. Never throws. */
export function info(): EvaluatorInfo;
/**
 * The derivation of a request's decision (omitted fields take their defaults): the numbers behind
 * it. Throws ScaleUnitsError exactly as `evaluate` does for the same request.
 */
export function derive(request: EvaluationRequest): Derivation;
/** `derive` on JSON text; returns the derivation's compact JSON text as the core writes it. */
export function deriveJson(requestJson: string): string;
/**
 * Every fault of a request (JSON text, or an object written as JSON), each with a hint; the first
 * is the error `evaluateJson` throws for it. `[]` for a request that evaluates. At most 1000 faults
 * are listed. Throws only for input that cannot be handed over: a ScaleUnitsError for an object
 * value JSON cannot carry (NaN, a Map), RequestTooLargeError, TypeError.
 */
export function diagnose(request: string | EvaluationRequest): Fault[];
/** Every fault of a contract (JSON text or an object), as `diagnose`; paths are relative to the contract. */
export function diagnoseContract(contract: string | ScaleUnitContract): Fault[];
/**
 * Judges a proposed change against the request's decision (SPEC §12.1; WIT 0.3.0), both objects
 * written as JSON (the request's omitted fields and the change's `kind` take their defaults). A
 * request that cannot be evaluated is a denial (`request_invalid`), never a throw. Throws
 * ScaleUnitsError (`invalid_field`) for a change that cannot be read, UnsupportedError for a
 * component before WIT 0.3.0.
 */
export function gate(request: EvaluationRequest, change: ProposedChange): GateVerdict;
/** `gate` on JSON texts; returns the verdict's compact JSON text. Throws ScaleUnitsError (`invalid_json`, `invalid_field`) for a change that cannot be read. */
export function gateJson(requestJson: string, changeJson: string): string;
/** The typed `gate`: every request field and the change's `kind` must be given (no defaults). Throws as `gate`, and `invalid_field` for a missing field. */
export function gateTyped(request: Required<EvaluationRequest>, change: Required<ProposedChange>): GateVerdict;
/** What an external scaler (KEDA) reports for a request (SPEC §12.2). Never throws a ScaleUnitsError: a request that cannot be evaluated is a reading with `error`. */
export function scalerReading(request: EvaluationRequest): ScalerReading;
/** `scalerReading` on JSON text; returns the reading's compact JSON text. */
export function scalerReadingJson(requestJson: string): string;
/** Checks the request's contract and observations as `evaluate` does, without `current_replicas`'s bounds and without deciding. Throws ScaleUnitsError (never `replicas_out_of_bounds`). */
export function validateObservations(request: EvaluationRequest): void;
/** `validateObservations` on JSON text. */
export function validateObservationsJson(requestJson: string): void;
/** The derivation in plain words, one step a line: the words every face shows. Throws ScaleUnitsError as `derive` does. */
export function derivationText(request: string | EvaluationRequest): string;
/** The bounds the evaluator enforces. Throws only UnsupportedError (a component before WIT 0.3.0). */
export function limits(): Limits;
/** `limits` as the component's compact JSON text. */
export function limitsJson(): string;
