//! Reads the wire model out of a strict [`Json`] tree. This layer checks shape only (fields,
//! types, vocabularies, `null`); bounds and rules are checked on the typed model by
//! [`crate::validate`], so typed callers get exactly the same checks.

use crate::error::EvaluationError;
use crate::json::{self, Fields, Json, Path};
use crate::model::{
    CapacityDemand, CapacityObservation, ContinuityContract, ContinuityObservation, EvaluationRequest,
    PartitionLeaseContract, QuotaBinding, QuotaObservation, SafetyObservation, ScalePolicy, ScaleUnitContract,
    SignalObservation,
};
use crate::vocab::{CapacityAxis, ContinuityMode, QuotaScope, SignalKind, SurfaceKind};

fn list<T>(
    fields: &mut Fields<'_, '_>,
    name: &'static str,
    required: bool,
    read: impl Fn(&Json<'_>, &Path<'_>) -> Result<T, EvaluationError>,
) -> Result<Vec<T>, EvaluationError> {
    let found = if required { Some(fields.required(name)?) } else { fields.optional(name)? };
    let Some((value, path)) = found else {
        return Ok(Vec::new());
    };
    json::array(value, &path)?.iter().enumerate().map(|(i, item)| read(item, &path.index(i))).collect()
}

fn opt_u64(fields: &mut Fields<'_, '_>, name: &'static str, default: u64) -> Result<u64, EvaluationError> {
    match fields.optional(name)? {
        Some((value, path)) => json::uint(value, &path),
        None => Ok(default),
    }
}

fn opt_bool(fields: &mut Fields<'_, '_>, name: &'static str, default: bool) -> Result<bool, EvaluationError> {
    match fields.optional(name)? {
        Some((value, path)) => json::boolean(value, &path),
        None => Ok(default),
    }
}

fn req_u64(fields: &mut Fields<'_, '_>, name: &'static str) -> Result<u64, EvaluationError> {
    let (value, path) = fields.required(name)?;
    json::uint(value, &path)
}

fn req_bool(fields: &mut Fields<'_, '_>, name: &'static str) -> Result<bool, EvaluationError> {
    let (value, path) = fields.required(name)?;
    json::boolean(value, &path)
}

fn req_string(fields: &mut Fields<'_, '_>, name: &'static str) -> Result<String, EvaluationError> {
    let (value, path) = fields.required(name)?;
    json::string(value, &path)
}

fn opt_string(fields: &mut Fields<'_, '_>, name: &'static str, default: &str) -> Result<String, EvaluationError> {
    match fields.optional(name)? {
        Some((value, path)) => json::string(value, &path),
        None => Ok(default.to_owned()),
    }
}

fn nullable_string(fields: &mut Fields<'_, '_>, name: &'static str) -> Result<Option<String>, EvaluationError> {
    fields.nullable(name).map(|(value, path)| json::string(value, &path)).transpose()
}

fn req_word<T>(
    fields: &mut Fields<'_, '_>,
    name: &'static str,
    parse: fn(&str) -> Option<T>,
) -> Result<T, EvaluationError> {
    let (value, path) = fields.required(name)?;
    json::word(value, &path, parse)
}

fn policy(value: &Json<'_>, path: &Path<'_>) -> Result<ScalePolicy, EvaluationError> {
    let mut f = Fields::new(value, path)?;
    let policy = ScalePolicy {
        min_replicas: opt_u64(&mut f, "min_replicas", 1)?,
        max_replicas: opt_u64(&mut f, "max_replicas", 1)?,
        target: req_u64(&mut f, "target")?,
        target_signal: req_word(&mut f, "target_signal", SignalKind::parse)?,
        scale_up_step: opt_u64(&mut f, "scale_up_step", 1)?,
        scale_down_step: opt_u64(&mut f, "scale_down_step", 1)?,
        scale_up_cooldown_s: opt_u64(&mut f, "scale_up_cooldown_s", 30)?,
        scale_down_cooldown_s: opt_u64(&mut f, "scale_down_cooldown_s", 300)?,
        drain_seconds: opt_u64(&mut f, "drain_seconds", 60)?,
        allow_scale_to_zero: opt_bool(&mut f, "allow_scale_to_zero", false)?,
        allow_scale_from_zero: opt_bool(&mut f, "allow_scale_from_zero", true)?,
    };
    f.finish()?;
    Ok(policy)
}

fn demand(value: &Json<'_>, path: &Path<'_>) -> Result<CapacityDemand, EvaluationError> {
    let mut f = Fields::new(value, path)?;
    let demand = CapacityDemand {
        axis: req_word(&mut f, "axis", CapacityAxis::parse)?,
        per_replica: req_u64(&mut f, "per_replica")?,
    };
    f.finish()?;
    Ok(demand)
}

fn binding(value: &Json<'_>, path: &Path<'_>) -> Result<QuotaBinding, EvaluationError> {
    let mut f = Fields::new(value, path)?;
    let binding = QuotaBinding {
        quota_ref: req_string(&mut f, "quota_ref")?,
        axis: req_word(&mut f, "axis", CapacityAxis::parse)?,
        scope: req_word(&mut f, "scope", QuotaScope::parse)?,
        per_replica: req_u64(&mut f, "per_replica")?,
        multiplicative: opt_bool(&mut f, "multiplicative", false)?,
    };
    f.finish()?;
    Ok(binding)
}

fn partition_lease(value: &Json<'_>, path: &Path<'_>) -> Result<PartitionLeaseContract, EvaluationError> {
    let mut f = Fields::new(value, path)?;
    let lease = PartitionLeaseContract {
        partitioned: opt_bool(&mut f, "partitioned", false)?,
        partitions_per_replica: opt_u64(&mut f, "partitions_per_replica", 0)?,
        lease_required: opt_bool(&mut f, "lease_required", false)?,
        lease_ttl_s: opt_u64(&mut f, "lease_ttl_s", 0)?,
        fencing_required: opt_bool(&mut f, "fencing_required", false)?,
    };
    f.finish()?;
    Ok(lease)
}

fn continuity_contract(value: &Json<'_>, path: &Path<'_>) -> Result<ContinuityContract, EvaluationError> {
    let mut f = Fields::new(value, path)?;
    let continuity = ContinuityContract {
        mode: req_word(&mut f, "mode", ContinuityMode::parse)?,
        external_store_ref: nullable_string(&mut f, "external_store_ref")?,
        drain_required: opt_bool(&mut f, "drain_required", true)?,
        block_scale_down_with_active: opt_bool(&mut f, "block_scale_down_with_active", true)?,
        max_drain_seconds: opt_u64(&mut f, "max_drain_seconds", 300)?,
    };
    f.finish()?;
    Ok(continuity)
}

/// Reads a contract found at `path` (`""` for a standalone contract document).
pub(crate) fn contract(value: &Json<'_>, path: &Path<'_>) -> Result<ScaleUnitContract, EvaluationError> {
    let mut f = Fields::new(value, path)?;
    let contract = ScaleUnitContract {
        schema_version: opt_string(&mut f, "schema_version", crate::SCHEMA_VERSION)?,
        unit_ref: req_string(&mut f, "unit_ref")?,
        surface: req_word(&mut f, "surface", SurfaceKind::parse)?,
        version: opt_u64(&mut f, "version", 1)?,
        policy: {
            let (value, path) = f.required("policy")?;
            policy(value, &path)?
        },
        allowed_signals: list(&mut f, "allowed_signals", true, |v, p| json::word(v, p, SignalKind::parse))?,
        required_capacity_axes: list(&mut f, "required_capacity_axes", true, |v, p| {
            json::word(v, p, CapacityAxis::parse)
        })?,
        replica_demands: list(&mut f, "replica_demands", true, demand)?,
        quotas: list(&mut f, "quotas", false, binding)?,
        partition_lease: match f.optional("partition_lease")? {
            Some((value, path)) => partition_lease(value, &path)?,
            None => PartitionLeaseContract::default(),
        },
        continuity: {
            let (value, path) = f.required("continuity")?;
            continuity_contract(value, &path)?
        },
        safety_required: opt_bool(&mut f, "safety_required", true)?,
        engine_authority_axes: list(&mut f, "engine_authority_axes", false, |v, p| {
            json::word(v, p, CapacityAxis::parse)
        })?,
        contract_id: opt_string(&mut f, "contract_id", "")?,
        contract_digest: opt_string(&mut f, "contract_digest", "")?,
    };
    f.finish()?;
    Ok(contract)
}

/// The four fields every observation carries, read in wire order.
struct Window {
    observed_at: String,
    expires_at: String,
    source_ref: String,
    source_digest: String,
}

fn window(f: &mut Fields<'_, '_>) -> Result<Window, EvaluationError> {
    Ok(Window {
        observed_at: req_string(f, "observed_at")?,
        expires_at: req_string(f, "expires_at")?,
        source_ref: req_string(f, "source_ref")?,
        source_digest: req_string(f, "source_digest")?,
    })
}

fn signal(value: &Json<'_>, path: &Path<'_>) -> Result<SignalObservation, EvaluationError> {
    let mut f = Fields::new(value, path)?;
    let signal = req_word(&mut f, "signal", SignalKind::parse)?;
    let value = {
        let (value, path) = f.required("value")?;
        json::sint(value, &path)?
    };
    let w = window(&mut f)?;
    f.finish()?;
    Ok(SignalObservation {
        signal,
        value,
        observed_at: w.observed_at,
        expires_at: w.expires_at,
        source_ref: w.source_ref,
        source_digest: w.source_digest,
    })
}

fn capacity(value: &Json<'_>, path: &Path<'_>) -> Result<CapacityObservation, EvaluationError> {
    let mut f = Fields::new(value, path)?;
    let axis = req_word(&mut f, "axis", CapacityAxis::parse)?;
    let allocatable = req_u64(&mut f, "allocatable")?;
    let reserved = req_u64(&mut f, "reserved")?;
    let used = req_u64(&mut f, "used")?;
    let w = window(&mut f)?;
    f.finish()?;
    Ok(CapacityObservation {
        axis,
        allocatable,
        reserved,
        used,
        observed_at: w.observed_at,
        expires_at: w.expires_at,
        source_ref: w.source_ref,
        source_digest: w.source_digest,
    })
}

fn quota(value: &Json<'_>, path: &Path<'_>) -> Result<QuotaObservation, EvaluationError> {
    let mut f = Fields::new(value, path)?;
    let quota_ref = req_string(&mut f, "quota_ref")?;
    let scope = req_word(&mut f, "scope", QuotaScope::parse)?;
    let limit = req_u64(&mut f, "limit")?;
    let used = req_u64(&mut f, "used")?;
    let w = window(&mut f)?;
    f.finish()?;
    Ok(QuotaObservation {
        quota_ref,
        scope,
        limit,
        used,
        observed_at: w.observed_at,
        expires_at: w.expires_at,
        source_ref: w.source_ref,
        source_digest: w.source_digest,
    })
}

fn continuity(value: &Json<'_>, path: &Path<'_>) -> Result<ContinuityObservation, EvaluationError> {
    let mut f = Fields::new(value, path)?;
    let ready = req_bool(&mut f, "ready")?;
    let active_sessions = req_u64(&mut f, "active_sessions")?;
    let active_streams = req_u64(&mut f, "active_streams")?;
    let w = window(&mut f)?;
    f.finish()?;
    Ok(ContinuityObservation {
        ready,
        active_sessions,
        active_streams,
        observed_at: w.observed_at,
        expires_at: w.expires_at,
        source_ref: w.source_ref,
        source_digest: w.source_digest,
    })
}

fn safety(value: &Json<'_>, path: &Path<'_>) -> Result<SafetyObservation, EvaluationError> {
    let mut f = Fields::new(value, path)?;
    let overloaded = req_bool(&mut f, "overloaded")?;
    let noisy_neighbor = req_bool(&mut f, "noisy_neighbor")?;
    let reason_ref = nullable_string(&mut f, "reason_ref")?;
    let w = window(&mut f)?;
    f.finish()?;
    Ok(SafetyObservation {
        overloaded,
        noisy_neighbor,
        reason_ref,
        observed_at: w.observed_at,
        expires_at: w.expires_at,
        source_ref: w.source_ref,
        source_digest: w.source_digest,
    })
}

/// Reads a whole evaluation request.
pub(crate) fn request(value: &Json) -> Result<EvaluationRequest, EvaluationError> {
    let mut f = Fields::new(value, &Path::Root)?;
    let contract = {
        let (value, path) = f.required("contract")?;
        contract(value, &path)?
    };
    let current_replicas = {
        let (value, path) = f.required("current_replicas")?;
        json::sint(value, &path)?
    };
    let signal = f.nullable("signal").map(|(v, p)| signal(v, &p)).transpose()?;
    let capacities = list(&mut f, "capacities", false, capacity)?;
    let quotas = list(&mut f, "quotas", false, quota)?;
    let continuity = f.nullable("continuity").map(|(v, p)| continuity(v, &p)).transpose()?;
    let safety = f.nullable("safety").map(|(v, p)| safety(v, &p)).transpose()?;
    let now = req_string(&mut f, "now")?;
    let last_action_at = nullable_string(&mut f, "last_action_at")?;
    f.finish()?;
    Ok(EvaluationRequest {
        contract,
        current_replicas,
        signal,
        capacities,
        quotas,
        continuity,
        safety,
        now,
        last_action_at,
    })
}
