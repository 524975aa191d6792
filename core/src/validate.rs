//! Checks of the typed model (SPEC §3–§6), in the SPEC's order where it names one. Produces a
//! [`Checked`] request whose times are parsed and whose contract identity is computed.

use crate::cache::ContractCache;
use crate::error::{ErrorCode, EvaluationError};
use crate::identity;
use crate::json::{Path, field_name, invalid_field};
use crate::model::{
    CapacityObservation, ContinuityObservation, ContractIdentity, EvaluationRequest, QuotaObservation,
    SafetyObservation, ScaleUnitContract, SignalObservation,
};
use crate::scalar;
use crate::time::{self, TimeError};
use crate::vocab::{ContinuityMode, QuotaScope, SignalKind};

pub(crate) const MAX_SIGNALS: usize = 16;
pub(crate) const MAX_CAPACITY_AXES: usize = 32;
pub(crate) const MAX_DEMANDS: usize = 32;
pub(crate) const MAX_QUOTAS: usize = 16;
pub(crate) const MAX_OBSERVATIONS: usize = 64;
pub(crate) const MAX_REPLICAS: u64 = 10_000;
pub(crate) const MAX_SECONDS: u64 = 86_400;
const MAX_AMOUNT: u64 = 1_000_000_000_000_000;
const MAX_TARGET: u64 = 1_000_000_000_000;
const MAX_SESSIONS: u64 = 1_000_000_000_000;
const MAX_PARTITIONS: u64 = 1_000_000;
const MAX_VERSION: u64 = 2_147_483_647;
const MAX_CONTRACT_ID_CHARS: usize = 100;
const ONE_MILLION_PPM: i64 = 1_000_000;

/// An observation's freshness window, in microseconds since the epoch.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Window {
    observed_at: i64,
    expires_at: i64,
}

impl Window {
    /// Fresh means `observed_at <= now < expires_at` (SPEC §5).
    pub(crate) fn is_fresh(self, now: i64) -> bool {
        self.observed_at <= now && now < self.expires_at
    }

    /// `(observed_at, expires_at)`, for a derivation.
    pub(crate) fn bounds(self) -> (i64, i64) {
        (self.observed_at, self.expires_at)
    }
}

/// A request that passed every precondition, with its times parsed.
pub(crate) struct Checked<'a> {
    pub request: &'a EvaluationRequest,
    pub contract_id: String,
    pub now: i64,
    pub last_action_at: Option<i64>,
    pub signal: Option<Window>,
    /// One window per entry of `request.capacities`, same order.
    pub capacities: Vec<Window>,
    /// One window per entry of `request.quotas`, same order.
    pub quotas: Vec<Window>,
    pub continuity: Option<Window>,
    pub safety: Option<Window>,
}

fn error(code: ErrorCode, path: &Path<'_>, message: impl Into<String>) -> EvaluationError {
    EvaluationError::new(code, message, path.render())
}

/// An error whose message names the last field of its path.
fn named_error(code: ErrorCode, path: &Path<'_>, message: impl FnOnce(&str) -> String) -> EvaluationError {
    let path = path.render();
    let message = message(field_name(&path));
    EvaluationError::new(code, message, path)
}

fn bounded(value: u64, low: u64, high: u64, path: &Path<'_>) -> Result<(), EvaluationError> {
    if (low..=high).contains(&value) {
        Ok(())
    } else {
        Err(named_error(ErrorCode::InvalidField, path, |name| format!("{name} must be in {low}..={high}, not {value}")))
    }
}

fn at_most(len: usize, max: usize, path: &Path<'_>) -> Result<(), EvaluationError> {
    if len <= max {
        Ok(())
    } else {
        Err(named_error(ErrorCode::InvalidField, path, |name| {
            format!("{name} may hold at most {max} entries, not {len}")
        }))
    }
}

fn check_ref(value: &str, path: &Path<'_>) -> Result<(), EvaluationError> {
    if !scalar::is_ref(value) {
        return Err(named_error(ErrorCode::InvalidRef, path, |name| {
            format!("{name} must be a bounded opaque reference")
        }));
    }
    if scalar::looks_like_credential(value) {
        return Err(named_error(ErrorCode::CredentialInRef, path, |name| {
            format!("{name} must not contain credentials or raw payloads")
        }));
    }
    Ok(())
}

fn check_digest(value: &str, path: &Path<'_>) -> Result<(), EvaluationError> {
    if scalar::is_digest(value) {
        Ok(())
    } else {
        Err(named_error(ErrorCode::InvalidDigest, path, |name| {
            format!("{name} must be sha256: followed by 64 lower-case hex digits")
        }))
    }
}

/// Parses a wire time found at `path`.
pub(crate) fn check_time(value: &str, path: &Path<'_>) -> Result<i64, EvaluationError> {
    time::parse(value).map_err(|fault| {
        let path = path.render();
        let name = field_name(&path);
        let message = match fault {
            TimeError::Naive => format!("{name} must be timezone-aware"),
            TimeError::OutOfRange => format!("{name} is outside the supported time range"),
            TimeError::Malformed => {
                format!("{name} must be an RFC 3339 time such as 2026-08-19T12:00:00Z")
            }
        };
        EvaluationError::new(ErrorCode::InvalidTime, message, path)
    })
}

fn policy_error(path: &Path<'_>, message: &str) -> EvaluationError {
    error(ErrorCode::InvalidPolicy, path, message)
}

fn contract_error(path: &Path<'_>, message: impl Into<String>) -> EvaluationError {
    error(ErrorCode::InvalidContract, path, message)
}

/// Whether two items are equal. Quadratic, on lists already bounded to at most 64 entries: no
/// allocation of a set, and less code in the component than a sorted set.
fn has_duplicates<T: PartialEq>(items: impl IntoIterator<Item = T>) -> bool {
    let items: Vec<T> = items.into_iter().collect();
    items.iter().enumerate().any(|(i, item)| items.get(..i).is_some_and(|before| before.contains(item)))
}

/// Validates a contract found at `path` (SPEC §4) and returns its computed identity.
pub(crate) fn contract(contract: &ScaleUnitContract, path: &Path<'_>) -> Result<ContractIdentity, EvaluationError> {
    let at = |name: &'static str| path.field(name);
    let c = contract;

    if c.schema_version != crate::SCHEMA_VERSION {
        return Err(invalid_field(at("schema_version").render(), "schema_version must be \"1\""));
    }
    check_ref(&c.unit_ref, &at("unit_ref"))?;
    bounded(c.version, 1, MAX_VERSION, &at("version"))?;

    // §4.1 ScalePolicy: bounds, then the rules in order.
    let policy_path = at("policy");
    let p = &c.policy;
    let pp = |name: &'static str| policy_path.field(name);
    bounded(p.min_replicas, 0, MAX_REPLICAS, &pp("min_replicas"))?;
    bounded(p.max_replicas, 1, MAX_REPLICAS, &pp("max_replicas"))?;
    bounded(p.target, 1, MAX_TARGET, &pp("target"))?;
    bounded(p.scale_up_step, 1, MAX_REPLICAS, &pp("scale_up_step"))?;
    bounded(p.scale_down_step, 1, MAX_REPLICAS, &pp("scale_down_step"))?;
    bounded(p.scale_up_cooldown_s, 0, MAX_SECONDS, &pp("scale_up_cooldown_s"))?;
    bounded(p.scale_down_cooldown_s, 0, MAX_SECONDS, &pp("scale_down_cooldown_s"))?;
    bounded(p.drain_seconds, 0, MAX_SECONDS, &pp("drain_seconds"))?;
    if p.min_replicas > p.max_replicas {
        return Err(policy_error(&policy_path, "min_replicas cannot exceed max_replicas"));
    }
    if p.allow_scale_to_zero && p.min_replicas != 0 {
        return Err(policy_error(&policy_path, "scale-to-zero requires min_replicas=0"));
    }
    if p.scale_up_step > p.max_replicas {
        return Err(policy_error(&policy_path, "scale_up_step cannot exceed max_replicas"));
    }
    if p.scale_down_step > p.max_replicas {
        return Err(policy_error(&policy_path, "scale_down_step cannot exceed max_replicas"));
    }

    at_most(c.allowed_signals.len(), MAX_SIGNALS, &at("allowed_signals"))?;
    at_most(c.required_capacity_axes.len(), MAX_CAPACITY_AXES, &at("required_capacity_axes"))?;
    at_most(c.replica_demands.len(), MAX_DEMANDS, &at("replica_demands"))?;
    at_most(c.quotas.len(), MAX_QUOTAS, &at("quotas"))?;
    at_most(c.engine_authority_axes.len(), MAX_CAPACITY_AXES, &at("engine_authority_axes"))?;

    // §4.2 parts.
    let demands_path = at("replica_demands");
    for (i, demand) in c.replica_demands.iter().enumerate() {
        bounded(demand.per_replica, 0, MAX_AMOUNT, &demands_path.index(i).field("per_replica"))?;
    }
    let quotas_path = at("quotas");
    for (i, binding) in c.quotas.iter().enumerate() {
        let binding_path = quotas_path.index(i);
        check_ref(&binding.quota_ref, &binding_path.field("quota_ref"))?;
        bounded(binding.per_replica, 0, MAX_AMOUNT, &binding_path.field("per_replica"))?;
        if binding.scope == QuotaScope::ProviderGlobal && binding.multiplicative {
            return Err(contract_error(&binding_path, "provider-global quota cannot be multiplied per replica"));
        }
        if binding.scope == QuotaScope::ProviderGlobal && binding.per_replica == 0 {
            return Err(contract_error(&binding_path, "provider-global quota requires a declared per-replica demand"));
        }
    }
    let lease_path = at("partition_lease");
    let lease = &c.partition_lease;
    bounded(lease.partitions_per_replica, 0, MAX_PARTITIONS, &lease_path.field("partitions_per_replica"))?;
    bounded(lease.lease_ttl_s, 0, MAX_SECONDS, &lease_path.field("lease_ttl_s"))?;
    if lease.partitioned && lease.partitions_per_replica < 1 {
        return Err(contract_error(&lease_path, "partitioned surfaces require partitions_per_replica"));
    }
    if lease.lease_required && (lease.lease_ttl_s < 1 || !lease.fencing_required) {
        return Err(contract_error(&lease_path, "leased surfaces require a TTL and fencing"));
    }
    if lease.fencing_required && !lease.lease_required {
        return Err(contract_error(&lease_path, "fencing cannot be declared without leases"));
    }
    let continuity_path = at("continuity");
    let continuity = &c.continuity;
    if let Some(store) = &continuity.external_store_ref {
        check_ref(store, &continuity_path.field("external_store_ref"))?;
    }
    bounded(continuity.max_drain_seconds, 0, MAX_SECONDS, &continuity_path.field("max_drain_seconds"))?;
    match (continuity.mode, &continuity.external_store_ref) {
        (ContinuityMode::Externalized, None) => {
            return Err(contract_error(&continuity_path, "externalized continuity requires a store reference"));
        }
        (ContinuityMode::Stateless | ContinuityMode::SessionAffine, Some(_)) => {
            return Err(contract_error(&continuity_path, "only externalized continuity may declare a store reference"));
        }
        _ => {}
    }
    if continuity.mode == ContinuityMode::Stateless && continuity.block_scale_down_with_active {
        return Err(contract_error(
            &continuity_path,
            "stateless continuity cannot block scale-down on active sessions",
        ));
    }

    if c.contract_id.chars().count() > MAX_CONTRACT_ID_CHARS {
        return Err(invalid_field(at("contract_id").render(), "contract_id may be at most 100 characters"));
    }
    if !c.contract_digest.is_empty() {
        check_digest(&c.contract_digest, &at("contract_digest"))?;
    }

    // §4.3 contract checks, in this exact order.
    let here = path;
    let surface = c.surface.as_str();
    let profile = c.surface.profile();
    if has_duplicates(&c.allowed_signals) {
        return Err(contract_error(here, "allowed signal names must be unique"));
    }
    if has_duplicates(&c.required_capacity_axes) {
        return Err(contract_error(here, "required capacity axes must be unique"));
    }
    if c.allowed_signals.is_empty() || !c.allowed_signals.iter().all(|s| profile.allowed_signals.contains(s)) {
        return Err(contract_error(
            here,
            format!("{surface} contract declares a signal outside its allowed vocabulary"),
        ));
    }
    if !c.allowed_signals.contains(&p.target_signal) {
        return Err(contract_error(here, "target_signal must be in allowed_signals"));
    }
    if !profile.required_capacity_axes.iter().all(|a| c.required_capacity_axes.contains(a)) {
        return Err(contract_error(here, format!("{surface} contract omitted a required hard capacity axis")));
    }
    if !profile.engine_authority_axes.iter().all(|a| c.required_capacity_axes.contains(a)) {
        return Err(contract_error(here, format!("{surface} engine authority axes must be hard capacity axes")));
    }
    if has_duplicates(&c.engine_authority_axes) {
        return Err(contract_error(here, "engine authority axes must be unique"));
    }
    // The same sets (neither list repeats an axis).
    let same = c.engine_authority_axes.iter().all(|a| profile.engine_authority_axes.contains(a))
        && profile.engine_authority_axes.iter().all(|a| c.engine_authority_axes.contains(a));
    if !same {
        return Err(contract_error(here, "engine_authority_axes must match the surface profile"));
    }
    if !profile.continuity_modes.contains(&continuity.mode) {
        return Err(contract_error(here, format!("{surface} does not support continuity mode {}", continuity.mode)));
    }
    if profile.partition_and_fenced_lease && !(lease.partitioned && lease.lease_required && lease.fencing_required) {
        return Err(contract_error(here, format!("{surface} requires partition and fenced lease contracts")));
    }
    if has_duplicates(c.replica_demands.iter().map(|d| d.axis)) {
        return Err(contract_error(here, "replica demand axes must be unique"));
    }
    if !c.required_capacity_axes.iter().all(|axis| c.replica_demands.iter().any(|d| d.axis == *axis)) {
        return Err(contract_error(here, "every required capacity axis needs a per-replica demand"));
    }
    if has_duplicates(c.quotas.iter().map(|q| q.quota_ref.as_str())) {
        return Err(contract_error(here, "quota bindings must be unique"));
    }
    if !profile.provider_quota_axes.is_empty() {
        let mut provider = c.quotas.iter().filter(|q| q.scope == QuotaScope::ProviderGlobal).peekable();
        if provider.peek().is_none() {
            return Err(contract_error(here, format!("{surface} requires one provider-global quota binding")));
        }
        if !provider.any(|q| profile.provider_quota_axes.contains(&q.axis)) {
            return Err(contract_error(here, format!("{surface} provider quota binding has an unsupported axis")));
        }
    }

    let identity = identity::contract(c);
    if !c.contract_id.is_empty() && c.contract_id != identity.contract_id {
        return Err(error(
            ErrorCode::IdentityMismatch,
            &at("contract_id"),
            "contract_id does not match immutable identity",
        ));
    }
    if !c.contract_digest.is_empty() && c.contract_digest != identity.contract_digest {
        return Err(error(
            ErrorCode::IdentityMismatch,
            &at("contract_digest"),
            "contract_digest does not match immutable identity",
        ));
    }
    Ok(identity)
}

/// Checks the four fields every observation carries and returns its window.
fn window(
    kind: &str,
    path: &Path<'_>,
    observed_at: &str,
    expires_at: &str,
    source_ref: &str,
    source_digest: &str,
) -> Result<Window, EvaluationError> {
    check_ref(source_ref, &path.field("source_ref"))?;
    check_digest(source_digest, &path.field("source_digest"))?;
    let observed_at = check_time(observed_at, &path.field("observed_at"))?;
    let expires_at = check_time(expires_at, &path.field("expires_at"))?;
    if expires_at <= observed_at {
        return Err(error(ErrorCode::InvalidObservation, path, format!("{kind} expires_at must follow observed_at")));
    }
    Ok(Window { observed_at, expires_at })
}

fn signal(s: &SignalObservation, path: &Path<'_>) -> Result<Window, EvaluationError> {
    let window = window("signal", path, &s.observed_at, &s.expires_at, &s.source_ref, &s.source_digest)?;
    let value_path = path.field("value");
    if s.value < 0 {
        return Err(error(
            ErrorCode::InvalidObservation,
            &value_path,
            "scale signal values must be finite non-negative integers",
        ));
    }
    if matches!(s.signal, SignalKind::ErrorRatePpm | SignalKind::GpuUtilizationPpm) && s.value > ONE_MILLION_PPM {
        return Err(error(
            ErrorCode::InvalidObservation,
            &value_path,
            format!("{} must be bounded to one million ppm", s.signal),
        ));
    }
    bounded(s.value.unsigned_abs(), 0, MAX_AMOUNT, &value_path)?;
    Ok(window)
}

fn capacity(o: &CapacityObservation, path: &Path<'_>) -> Result<Window, EvaluationError> {
    let window = window("capacity", path, &o.observed_at, &o.expires_at, &o.source_ref, &o.source_digest)?;
    bounded(o.allocatable, 0, MAX_AMOUNT, &path.field("allocatable"))?;
    bounded(o.reserved, 0, MAX_AMOUNT, &path.field("reserved"))?;
    bounded(o.used, 0, MAX_AMOUNT, &path.field("used"))?;
    if !(o.used <= o.reserved && o.reserved <= o.allocatable) {
        return Err(error(
            ErrorCode::InvalidObservation,
            path,
            "capacity must satisfy used <= reserved <= allocatable",
        ));
    }
    Ok(window)
}

fn quota(o: &QuotaObservation, path: &Path<'_>) -> Result<Window, EvaluationError> {
    check_ref(&o.quota_ref, &path.field("quota_ref"))?;
    let window = window("quota", path, &o.observed_at, &o.expires_at, &o.source_ref, &o.source_digest)?;
    bounded(o.limit, 0, MAX_AMOUNT, &path.field("limit"))?;
    bounded(o.used, 0, MAX_AMOUNT, &path.field("used"))?;
    if o.used > o.limit {
        return Err(error(ErrorCode::InvalidObservation, path, "quota usage cannot exceed its limit"));
    }
    Ok(window)
}

fn continuity(o: &ContinuityObservation, path: &Path<'_>) -> Result<Window, EvaluationError> {
    let window = window("continuity", path, &o.observed_at, &o.expires_at, &o.source_ref, &o.source_digest)?;
    bounded(o.active_sessions, 0, MAX_SESSIONS, &path.field("active_sessions"))?;
    bounded(o.active_streams, 0, MAX_SESSIONS, &path.field("active_streams"))?;
    Ok(window)
}

fn safety(o: &SafetyObservation, path: &Path<'_>) -> Result<Window, EvaluationError> {
    if let Some(reason_ref) = &o.reason_ref {
        check_ref(reason_ref, &path.field("reason_ref"))?;
    }
    let window = window("safety", path, &o.observed_at, &o.expires_at, &o.source_ref, &o.source_digest)?;
    if (o.overloaded || o.noisy_neighbor) && o.reason_ref.is_none() {
        return Err(error(
            ErrorCode::InvalidObservation,
            path,
            "overload and noisy-neighbor evidence require a reason reference",
        ));
    }
    Ok(window)
}

/// Checks every precondition of SPEC §6 and returns the request ready to evaluate.
pub(crate) fn request(request: &EvaluationRequest) -> Result<Checked<'_>, EvaluationError> {
    request_with(request, None)
}

/// [`request`], the contract's validation and identity taken from `cache` when it has them.
pub(crate) fn request_with<'r>(
    request: &'r EvaluationRequest,
    cache: Option<&mut ContractCache>,
) -> Result<Checked<'r>, EvaluationError> {
    let r = request;
    let contract_path = Path::Text("contract");
    let identity = match cache {
        Some(cache) => cache.identity(&r.contract, &contract_path)?,
        None => contract(&r.contract, &contract_path)?,
    };

    let signal = r.signal.as_ref().map(|s| signal(s, &Path::Text("signal"))).transpose()?;
    let capacities_path = Path::Text("capacities");
    at_most(r.capacities.len(), MAX_OBSERVATIONS, &capacities_path)?;
    let capacities = r
        .capacities
        .iter()
        .enumerate()
        .map(|(i, o)| capacity(o, &capacities_path.index(i)))
        .collect::<Result<Vec<_>, _>>()?;
    let quotas_path = Path::Text("quotas");
    at_most(r.quotas.len(), MAX_OBSERVATIONS, &quotas_path)?;
    let quotas =
        r.quotas.iter().enumerate().map(|(i, o)| quota(o, &quotas_path.index(i))).collect::<Result<Vec<_>, _>>()?;
    let continuity = r.continuity.as_ref().map(|o| continuity(o, &Path::Text("continuity"))).transpose()?;
    let safety = r.safety.as_ref().map(|o| safety(o, &Path::Text("safety"))).transpose()?;
    let now = check_time(&r.now, &Path::Text("now"))?;

    let replicas_path = Path::Text("current_replicas");
    let within = u64::try_from(r.current_replicas).is_ok_and(|n| n <= MAX_REPLICAS);
    if !within {
        return Err(error(ErrorCode::ReplicasOutOfBounds, &replicas_path, "current_replicas is outside bounds"));
    }
    if r.current_replicas.unsigned_abs() < r.contract.policy.min_replicas {
        return Err(error(
            ErrorCode::ReplicasOutOfBounds,
            &replicas_path,
            "current_replicas is below the contract floor",
        ));
    }
    if has_duplicates(r.capacities.iter().map(|o| o.axis)) {
        return Err(error(ErrorCode::DuplicateObservation, &capacities_path, "duplicate capacity axis observation"));
    }
    if has_duplicates(r.quotas.iter().map(|o| o.quota_ref.as_str())) {
        return Err(error(ErrorCode::DuplicateObservation, &quotas_path, "duplicate quota observation"));
    }
    let last_action_at =
        r.last_action_at.as_deref().map(|t| check_time(t, &Path::Text("last_action_at"))).transpose()?;

    Ok(Checked {
        request,
        contract_id: identity.contract_id,
        now,
        last_action_at,
        signal,
        capacities,
        quotas,
        continuity,
        safety,
    })
}
