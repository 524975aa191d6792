//! The typed wire model (SPEC §4–§6, §9). Field names are the wire names; integers are wide
//! enough to hold any out-of-bounds value a caller may pass, so that [`crate::evaluate`] can
//! report it as a typed error instead of a caller's conversion failing first.

use serde::{Deserialize, Serialize};

use crate::vocab::{
    ActionKind, CapacityAxis, ContinuityMode, EvidenceKind, EvidenceStatus, QuotaScope, Reason, SignalKind, SurfaceKind,
};

/// Replica bounds, the tracked signal and target, steps, cooldowns and zero switches (SPEC §4.1).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(deny_unknown_fields, transform = crate::schema::policy))]
pub struct ScalePolicy {
    /// Floor, 0..=10000 (default 1).
    #[cfg_attr(feature = "schema", schemars(range(min = 0, max = 10000)))]
    #[cfg_attr(feature = "schema", schemars(default = "defaults::one"))]
    pub min_replicas: u64,
    /// Ceiling, 1..=10000 (default 1).
    #[cfg_attr(feature = "schema", schemars(range(min = 1, max = 10000)))]
    #[cfg_attr(feature = "schema", schemars(default = "defaults::one"))]
    pub max_replicas: u64,
    /// Signal value one replica should carry, 1..=10^12.
    #[cfg_attr(feature = "schema", schemars(range(min = 1, max = 1_000_000_000_000u64)))]
    pub target: u64,
    /// The signal the policy tracks; must be one of `allowed_signals`.
    pub target_signal: SignalKind,
    /// Most replicas added by one decision, 1..=10000 (default 1).
    #[cfg_attr(feature = "schema", schemars(range(min = 1, max = 10000)))]
    #[cfg_attr(feature = "schema", schemars(default = "defaults::one"))]
    pub scale_up_step: u64,
    /// Most replicas removed by one decision, 1..=10000 (default 1).
    #[cfg_attr(feature = "schema", schemars(range(min = 1, max = 10000)))]
    #[cfg_attr(feature = "schema", schemars(default = "defaults::one"))]
    pub scale_down_step: u64,
    /// Seconds after the last action before a scale-up, 0..=86400 (default 30).
    #[cfg_attr(feature = "schema", schemars(range(min = 0, max = 86400)))]
    #[cfg_attr(feature = "schema", schemars(default = "defaults::thirty"))]
    pub scale_up_cooldown_s: u64,
    /// Seconds after the last action before a scale-down, 0..=86400 (default 300).
    #[cfg_attr(feature = "schema", schemars(range(min = 0, max = 86400)))]
    #[cfg_attr(feature = "schema", schemars(default = "defaults::three_hundred"))]
    pub scale_down_cooldown_s: u64,
    /// Seconds a replica needs to drain, 0..=86400 (default 60).
    #[cfg_attr(feature = "schema", schemars(range(min = 0, max = 86400)))]
    #[cfg_attr(feature = "schema", schemars(default = "defaults::sixty"))]
    pub drain_seconds: u64,
    /// Whether the unit may go to zero replicas (requires `min_replicas == 0`).
    #[cfg_attr(feature = "schema", schemars(default))]
    pub allow_scale_to_zero: bool,
    /// Whether a unit at zero may start (default true).
    #[cfg_attr(feature = "schema", schemars(default = "defaults::yes"))]
    pub allow_scale_from_zero: bool,
}

impl ScalePolicy {
    /// A policy tracking `target_signal` at `target` per replica, every other field at its default.
    pub fn new(target_signal: SignalKind, target: u64) -> Self {
        Self {
            min_replicas: 1,
            max_replicas: 1,
            target,
            target_signal,
            scale_up_step: 1,
            scale_down_step: 1,
            scale_up_cooldown_s: 30,
            scale_down_cooldown_s: 300,
            drain_seconds: 60,
            allow_scale_to_zero: false,
            allow_scale_from_zero: true,
        }
    }
}

/// What one replica consumes of a hard capacity axis (SPEC §4.2).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(deny_unknown_fields))]
pub struct CapacityDemand {
    /// The axis.
    pub axis: CapacityAxis,
    /// Units per replica, 0..=10^15.
    #[cfg_attr(feature = "schema", schemars(range(min = 0, max = 1_000_000_000_000_000u64)))]
    pub per_replica: u64,
}

/// A quota the unit draws on, and what one replica draws (SPEC §4.2).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(deny_unknown_fields, transform = crate::schema::quota_binding))]
pub struct QuotaBinding {
    /// The quota's reference; observations are matched by it.
    #[cfg_attr(feature = "schema", schemars(extend("pattern" = "^[A-Za-z0-9][A-Za-z0-9._:/@+\\-]{0,255}$")))]
    pub quota_ref: String,
    /// The axis the quota limits.
    pub axis: CapacityAxis,
    /// Who shares the quota.
    pub scope: QuotaScope,
    /// Units per replica, 0..=10^15.
    #[cfg_attr(feature = "schema", schemars(range(min = 0, max = 1_000_000_000_000_000u64)))]
    pub per_replica: u64,
    /// Whether the limit grows with replicas; never allowed for `provider_global`.
    #[cfg_attr(feature = "schema", schemars(default))]
    pub multiplicative: bool,
}

/// Partition assignment and lease rules (SPEC §4.2).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(deny_unknown_fields, transform = crate::schema::partition_lease))]
pub struct PartitionLeaseContract {
    /// Whether work is partitioned across replicas.
    #[cfg_attr(feature = "schema", schemars(default))]
    pub partitioned: bool,
    /// Partitions each replica owns, 0..=10^6.
    #[cfg_attr(feature = "schema", schemars(range(min = 0, max = 1_000_000)))]
    #[cfg_attr(feature = "schema", schemars(default))]
    pub partitions_per_replica: u64,
    /// Whether a replica must hold a lease.
    #[cfg_attr(feature = "schema", schemars(default))]
    pub lease_required: bool,
    /// Lease time-to-live in seconds, 0..=86400.
    #[cfg_attr(feature = "schema", schemars(range(min = 0, max = 86400)))]
    #[cfg_attr(feature = "schema", schemars(default))]
    pub lease_ttl_s: u64,
    /// Whether leases are fenced.
    #[cfg_attr(feature = "schema", schemars(default))]
    pub fencing_required: bool,
}

/// Where session state lives and how replicas drain (SPEC §4.2).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(deny_unknown_fields, transform = crate::schema::continuity))]
pub struct ContinuityContract {
    /// The continuity mode.
    pub mode: ContinuityMode,
    /// The external store; required for `externalized` and forbidden otherwise.
    #[cfg_attr(feature = "schema", schemars(extend("pattern" = "^[A-Za-z0-9][A-Za-z0-9._:/@+\\-]{0,255}$")))]
    #[cfg_attr(feature = "schema", schemars(default))]
    pub external_store_ref: Option<String>,
    /// Whether a scale-down drains replicas (default true).
    #[cfg_attr(feature = "schema", schemars(default = "defaults::yes"))]
    pub drain_required: bool,
    /// Whether active sessions or streams block a scale-down (default true).
    #[cfg_attr(feature = "schema", schemars(default = "defaults::yes"))]
    pub block_scale_down_with_active: bool,
    /// Longest drain allowed, in seconds, 0..=86400 (default 300).
    #[cfg_attr(feature = "schema", schemars(range(min = 0, max = 86400)))]
    #[cfg_attr(feature = "schema", schemars(default = "defaults::three_hundred"))]
    pub max_drain_seconds: u64,
}

impl ContinuityContract {
    /// A contract in `mode` with every other field at its default.
    pub fn new(mode: ContinuityMode) -> Self {
        Self {
            mode,
            external_store_ref: None,
            drain_required: true,
            block_scale_down_with_active: true,
            max_drain_seconds: 300,
        }
    }
}

/// The scale-unit contract: everything a decision for one unit depends on (SPEC §4.3).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(deny_unknown_fields, transform = crate::schema::contract))]
pub struct ScaleUnitContract {
    /// Always `"1"`.
    #[cfg_attr(feature = "schema", schemars(extend("const" = "1")))]
    #[cfg_attr(feature = "schema", schemars(default = "defaults::schema_version"))]
    pub schema_version: String,
    /// The unit's stable reference.
    #[cfg_attr(feature = "schema", schemars(extend("pattern" = "^[A-Za-z0-9][A-Za-z0-9._:/@+\\-]{0,255}$")))]
    pub unit_ref: String,
    /// The surface; its profile constrains the rest.
    pub surface: SurfaceKind,
    /// Contract version, 1..=2^31−1 (default 1).
    #[cfg_attr(feature = "schema", schemars(range(min = 1, max = 2_147_483_647)))]
    #[cfg_attr(feature = "schema", schemars(default = "defaults::one"))]
    pub version: u64,
    /// Bounds, target, steps and cooldowns.
    pub policy: ScalePolicy,
    /// Signals the unit may be observed by, unique, at most 16.
    #[cfg_attr(feature = "schema", schemars(length(max = 16)))]
    pub allowed_signals: Vec<SignalKind>,
    /// Hard capacity axes, unique, at most 32.
    #[cfg_attr(feature = "schema", schemars(length(max = 32)))]
    pub required_capacity_axes: Vec<CapacityAxis>,
    /// Per-replica demand for each hard axis, at most 32.
    #[cfg_attr(feature = "schema", schemars(length(max = 32)))]
    pub replica_demands: Vec<CapacityDemand>,
    /// Quota bindings, at most 16.
    #[cfg_attr(feature = "schema", schemars(length(max = 16)))]
    #[cfg_attr(feature = "schema", schemars(default))]
    pub quotas: Vec<QuotaBinding>,
    /// Partition and lease rules.
    #[cfg_attr(feature = "schema", schemars(default))]
    pub partition_lease: PartitionLeaseContract,
    /// Continuity and drain rules.
    pub continuity: ContinuityContract,
    /// Whether safety evidence is required (default true).
    #[cfg_attr(feature = "schema", schemars(default = "defaults::yes"))]
    pub safety_required: bool,
    /// Axes whose exhaustion blocks front-end growth; must equal the profile's.
    #[cfg_attr(feature = "schema", schemars(length(max = 32)))]
    #[cfg_attr(feature = "schema", schemars(default))]
    pub engine_authority_axes: Vec<CapacityAxis>,
    /// The caller's claim of the computed id; `""` to skip the check.
    #[cfg_attr(feature = "schema", schemars(length(max = 100)))]
    #[cfg_attr(feature = "schema", schemars(default))]
    pub contract_id: String,
    /// The caller's claim of the computed digest; `""` to skip the check.
    #[cfg_attr(feature = "schema", schemars(extend("pattern" = "^(sha256:[0-9a-f]{64})?$")))]
    #[cfg_attr(feature = "schema", schemars(default))]
    pub contract_digest: String,
}

/// The demand signal observed for the unit (SPEC §5).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(deny_unknown_fields))]
pub struct SignalObservation {
    /// Which signal was observed.
    pub signal: SignalKind,
    /// Its value, 0..=10^15 (ppm signals at most 10^6). Negative values are refused.
    #[cfg_attr(feature = "schema", schemars(range(min = 0, max = 1_000_000_000_000_000i64)))]
    pub value: i64,
    /// When it was observed (RFC 3339 with an offset).
    #[cfg_attr(feature = "schema", schemars(extend("format" = "date-time", "pattern" = "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,6})?(Z|[+-][0-9]{2}:[0-9]{2})$")))]
    pub observed_at: String,
    /// When it stops being evidence (strictly after `observed_at`).
    #[cfg_attr(feature = "schema", schemars(extend("format" = "date-time", "pattern" = "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,6})?(Z|[+-][0-9]{2}:[0-9]{2})$")))]
    pub expires_at: String,
    /// Where it came from.
    #[cfg_attr(feature = "schema", schemars(extend("pattern" = "^[A-Za-z0-9][A-Za-z0-9._:/@+\\-]{0,255}$")))]
    pub source_ref: String,
    /// The digest of the source's content.
    #[cfg_attr(feature = "schema", schemars(extend("pattern" = "^sha256:[0-9a-f]{64}$")))]
    pub source_digest: String,
}

/// What is allocatable, reserved and used on one capacity axis (SPEC §5).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(deny_unknown_fields))]
pub struct CapacityObservation {
    /// The axis.
    pub axis: CapacityAxis,
    /// Total allocatable, 0..=10^15.
    #[cfg_attr(feature = "schema", schemars(range(min = 0, max = 1_000_000_000_000_000u64)))]
    pub allocatable: u64,
    /// Already reserved, at most `allocatable`.
    #[cfg_attr(feature = "schema", schemars(range(min = 0, max = 1_000_000_000_000_000u64)))]
    pub reserved: u64,
    /// Actually used, at most `reserved` (not headroom).
    #[cfg_attr(feature = "schema", schemars(range(min = 0, max = 1_000_000_000_000_000u64)))]
    pub used: u64,
    /// When it was observed.
    #[cfg_attr(feature = "schema", schemars(extend("format" = "date-time", "pattern" = "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,6})?(Z|[+-][0-9]{2}:[0-9]{2})$")))]
    pub observed_at: String,
    /// When it stops being evidence.
    #[cfg_attr(feature = "schema", schemars(extend("format" = "date-time", "pattern" = "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,6})?(Z|[+-][0-9]{2}:[0-9]{2})$")))]
    pub expires_at: String,
    /// Where it came from.
    #[cfg_attr(feature = "schema", schemars(extend("pattern" = "^[A-Za-z0-9][A-Za-z0-9._:/@+\\-]{0,255}$")))]
    pub source_ref: String,
    /// The digest of the source's content.
    #[cfg_attr(feature = "schema", schemars(extend("pattern" = "^sha256:[0-9a-f]{64}$")))]
    pub source_digest: String,
}

/// The limit and use of one quota (SPEC §5).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(deny_unknown_fields))]
pub struct QuotaObservation {
    /// The quota; matched against the contract's bindings.
    #[cfg_attr(feature = "schema", schemars(extend("pattern" = "^[A-Za-z0-9][A-Za-z0-9._:/@+\\-]{0,255}$")))]
    pub quota_ref: String,
    /// The scope the source reports; must equal the binding's.
    pub scope: QuotaScope,
    /// The limit, 0..=10^15.
    #[cfg_attr(feature = "schema", schemars(range(min = 0, max = 1_000_000_000_000_000u64)))]
    pub limit: u64,
    /// Current use, at most `limit`.
    #[cfg_attr(feature = "schema", schemars(range(min = 0, max = 1_000_000_000_000_000u64)))]
    pub used: u64,
    /// When it was observed.
    #[cfg_attr(feature = "schema", schemars(extend("format" = "date-time", "pattern" = "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,6})?(Z|[+-][0-9]{2}:[0-9]{2})$")))]
    pub observed_at: String,
    /// When it stops being evidence.
    #[cfg_attr(feature = "schema", schemars(extend("format" = "date-time", "pattern" = "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,6})?(Z|[+-][0-9]{2}:[0-9]{2})$")))]
    pub expires_at: String,
    /// Where it came from.
    #[cfg_attr(feature = "schema", schemars(extend("pattern" = "^[A-Za-z0-9][A-Za-z0-9._:/@+\\-]{0,255}$")))]
    pub source_ref: String,
    /// The digest of the source's content.
    #[cfg_attr(feature = "schema", schemars(extend("pattern" = "^sha256:[0-9a-f]{64}$")))]
    pub source_digest: String,
}

/// Continuity readiness and live sessions (SPEC §5).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(deny_unknown_fields))]
pub struct ContinuityObservation {
    /// Whether the continuity store is ready.
    pub ready: bool,
    /// Active sessions, 0..=10^12.
    #[cfg_attr(feature = "schema", schemars(range(min = 0, max = 1_000_000_000_000u64)))]
    pub active_sessions: u64,
    /// Active streams, 0..=10^12.
    #[cfg_attr(feature = "schema", schemars(range(min = 0, max = 1_000_000_000_000u64)))]
    pub active_streams: u64,
    /// When it was observed.
    #[cfg_attr(feature = "schema", schemars(extend("format" = "date-time", "pattern" = "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,6})?(Z|[+-][0-9]{2}:[0-9]{2})$")))]
    pub observed_at: String,
    /// When it stops being evidence.
    #[cfg_attr(feature = "schema", schemars(extend("format" = "date-time", "pattern" = "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,6})?(Z|[+-][0-9]{2}:[0-9]{2})$")))]
    pub expires_at: String,
    /// Where it came from.
    #[cfg_attr(feature = "schema", schemars(extend("pattern" = "^[A-Za-z0-9][A-Za-z0-9._:/@+\\-]{0,255}$")))]
    pub source_ref: String,
    /// The digest of the source's content.
    #[cfg_attr(feature = "schema", schemars(extend("pattern" = "^sha256:[0-9a-f]{64}$")))]
    pub source_digest: String,
}

/// Overload and noisy-neighbour evidence (SPEC §5).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(deny_unknown_fields))]
pub struct SafetyObservation {
    /// Whether the fleet is shedding load.
    pub overloaded: bool,
    /// Whether a noisy neighbour is degrading the fleet.
    pub noisy_neighbor: bool,
    /// The incident reference; required when either flag is set.
    #[cfg_attr(feature = "schema", schemars(extend("pattern" = "^[A-Za-z0-9][A-Za-z0-9._:/@+\\-]{0,255}$")))]
    #[cfg_attr(feature = "schema", schemars(default))]
    pub reason_ref: Option<String>,
    /// When it was observed.
    #[cfg_attr(feature = "schema", schemars(extend("format" = "date-time", "pattern" = "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,6})?(Z|[+-][0-9]{2}:[0-9]{2})$")))]
    pub observed_at: String,
    /// When it stops being evidence.
    #[cfg_attr(feature = "schema", schemars(extend("format" = "date-time", "pattern" = "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,6})?(Z|[+-][0-9]{2}:[0-9]{2})$")))]
    pub expires_at: String,
    /// Where it came from.
    #[cfg_attr(feature = "schema", schemars(extend("pattern" = "^[A-Za-z0-9][A-Za-z0-9._:/@+\\-]{0,255}$")))]
    pub source_ref: String,
    /// The digest of the source's content.
    #[cfg_attr(feature = "schema", schemars(extend("pattern" = "^sha256:[0-9a-f]{64}$")))]
    pub source_digest: String,
}

/// One evaluation: a contract, the current count, the observations and the time (SPEC §6).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(deny_unknown_fields))]
pub struct EvaluationRequest {
    /// The contract.
    pub contract: ScaleUnitContract,
    /// Replicas running now, 0..=10000 and at least `min_replicas`.
    #[cfg_attr(feature = "schema", schemars(range(min = 0, max = 10000)))]
    pub current_replicas: i64,
    /// The demand signal; `None` blocks.
    #[cfg_attr(feature = "schema", schemars(default))]
    pub signal: Option<SignalObservation>,
    /// Capacity observations, at most 64, one per axis.
    #[cfg_attr(feature = "schema", schemars(length(max = 64)))]
    #[cfg_attr(feature = "schema", schemars(default))]
    pub capacities: Vec<CapacityObservation>,
    /// Quota observations, at most 64, one per `quota_ref`.
    #[cfg_attr(feature = "schema", schemars(length(max = 64)))]
    #[cfg_attr(feature = "schema", schemars(default))]
    pub quotas: Vec<QuotaObservation>,
    /// Continuity evidence.
    #[cfg_attr(feature = "schema", schemars(default))]
    pub continuity: Option<ContinuityObservation>,
    /// Safety evidence.
    #[cfg_attr(feature = "schema", schemars(default))]
    pub safety: Option<SafetyObservation>,
    /// The evaluation time (RFC 3339 with an offset); the evaluator has no clock.
    #[cfg_attr(feature = "schema", schemars(extend("format" = "date-time", "pattern" = "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,6})?(Z|[+-][0-9]{2}:[0-9]{2})$")))]
    pub now: String,
    /// When the unit last scaled, for cooldowns.
    #[cfg_attr(feature = "schema", schemars(extend("format" = "date-time", "pattern" = "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,6})?(Z|[+-][0-9]{2}:[0-9]{2})$")))]
    #[cfg_attr(feature = "schema", schemars(default))]
    pub last_action_at: Option<String>,
}

/// One piece of evidence a decision rests on (SPEC §7, §9).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Evidence {
    /// What kind of evidence.
    pub kind: EvidenceKind,
    /// The observation's `source_ref`, or a fixed `kind:missing`-style reference when absent.
    #[serde(rename = "ref")]
    pub reference: String,
    /// The observation's `source_digest`, or the content digest of the "missing" marker.
    pub digest: String,
    /// How the evaluator judged it.
    pub status: EvidenceStatus,
    /// A code naming what was accepted (signal, axis, scope, mode, `safety`) or why not.
    pub code: String,
}

/// The outcome of an evaluation (SPEC §9). `blocked` and `hold` keep the current count.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Decision {
    /// Always `"1"`.
    pub schema_version: String,
    /// `scale-decision:` and 32 hex digits of the decision identity's sha256.
    pub decision_id: String,
    /// The content digest of the decision identity.
    pub decision_digest: String,
    /// The evaluated contract's computed id.
    pub contract_id: String,
    /// `now` in UTC, `YYYY-MM-DDTHH:MM:SS[.ffffff]+00:00`.
    pub evaluated_at: String,
    /// Replicas running at evaluation.
    pub current_replicas: u64,
    /// Replicas the decision asks for.
    pub desired_replicas: u64,
    /// What to do.
    pub action: ActionKind,
    /// Why, in evaluation order, de-duplicated, at most 16.
    pub reasons: Vec<Reason>,
    /// Whether the change drains replicas (or a drain blocks it).
    pub drain_required: bool,
    /// The evidence, in evaluation order, at most 64.
    pub evidence: Vec<Evidence>,
}

/// The computed identity of a valid contract (SPEC §8).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ContractIdentity {
    /// `scale-unit:` and 32 hex digits.
    pub contract_id: String,
    /// `sha256:` and 64 hex digits.
    pub contract_digest: String,
}

/// Defaults of SPEC §4, for the generated JSON Schema.
#[cfg(feature = "schema")]
mod defaults {
    pub(super) fn one() -> u64 {
        1
    }
    pub(super) fn thirty() -> u64 {
        30
    }
    pub(super) fn sixty() -> u64 {
        60
    }
    pub(super) fn three_hundred() -> u64 {
        300
    }
    pub(super) fn yes() -> bool {
        true
    }
    pub(super) fn schema_version() -> String {
        crate::SCHEMA_VERSION.to_owned()
    }
}
