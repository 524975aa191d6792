//! Reads the wire model out of a strict [`Json`] tree. This layer checks shape only (fields,
//! types, vocabularies, `null`); bounds and rules are checked on the typed model by
//! [`crate::validate`], so typed callers get exactly the same checks.
//!
//! Every reader reports to a [`Sink`]: the first fault stops it ([`crate::diagnose::First`]), or
//! every fault is collected and a stand-in value takes the faulty one's place.

use crate::diagnose::Sink;
use crate::json::{self, Fields, Json, Path};
use crate::model::{
    CapacityDemand, CapacityObservation, ContinuityContract, ContinuityObservation, EvaluationRequest,
    PartitionLeaseContract, QuotaBinding, QuotaObservation, SafetyObservation, ScalePolicy, ScaleUnitContract,
    SignalObservation,
};
use crate::vocab::{CapacityAxis, ContinuityMode, QuotaScope, SignalKind, SurfaceKind, Word};

fn list<T, S: Sink>(
    fields: &mut Fields<'_, '_>,
    sink: &mut S,
    name: &'static str,
    required: bool,
    read: impl Fn(&Json<'_>, &Path<'_>, &mut S) -> Result<T, S::Stop>,
) -> Result<Vec<T>, S::Stop> {
    let found = if required { Some(fields.required(name, sink)?) } else { fields.optional(name, sink)? };
    let Some((value, path)) = found else {
        return Ok(Vec::new());
    };
    let items = json::array(value, &path, sink)?;
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        out.push(read(item, &path.index(i), sink)?);
    }
    Ok(out)
}

fn opt_u64<S: Sink>(f: &mut Fields<'_, '_>, sink: &mut S, name: &'static str, default: u64) -> Result<u64, S::Stop> {
    match f.optional(name, sink)? {
        Some((value, path)) => json::uint(value, &path, sink),
        None => Ok(default),
    }
}

fn opt_bool<S: Sink>(f: &mut Fields<'_, '_>, sink: &mut S, name: &'static str, default: bool) -> Result<bool, S::Stop> {
    match f.optional(name, sink)? {
        Some((value, path)) => json::boolean(value, &path, sink),
        None => Ok(default),
    }
}

fn req_u64<S: Sink>(f: &mut Fields<'_, '_>, sink: &mut S, name: &'static str) -> Result<u64, S::Stop> {
    let (value, path) = f.required(name, sink)?;
    json::uint(value, &path, sink)
}

fn req_bool<S: Sink>(f: &mut Fields<'_, '_>, sink: &mut S, name: &'static str) -> Result<bool, S::Stop> {
    let (value, path) = f.required(name, sink)?;
    json::boolean(value, &path, sink)
}

fn req_string<S: Sink>(f: &mut Fields<'_, '_>, sink: &mut S, name: &'static str) -> Result<String, S::Stop> {
    let (value, path) = f.required(name, sink)?;
    json::string(value, &path, sink)
}

fn opt_string<S: Sink>(
    f: &mut Fields<'_, '_>,
    sink: &mut S,
    name: &'static str,
    default: &str,
) -> Result<String, S::Stop> {
    match f.optional(name, sink)? {
        Some((value, path)) => json::string(value, &path, sink),
        None => Ok(default.to_owned()),
    }
}

fn nullable_string<S: Sink>(
    f: &mut Fields<'_, '_>,
    sink: &mut S,
    name: &'static str,
) -> Result<Option<String>, S::Stop> {
    match f.nullable(name, sink) {
        Some((value, path)) => json::string(value, &path, sink).map(Some),
        None => Ok(None),
    }
}

fn req_word<T: Word, S: Sink>(f: &mut Fields<'_, '_>, sink: &mut S, name: &'static str) -> Result<T, S::Stop> {
    let (value, path) = f.required(name, sink)?;
    json::word(value, &path, sink)
}

fn policy<S: Sink>(value: &Json<'_>, path: &Path<'_>, sink: &mut S) -> Result<ScalePolicy, S::Stop> {
    let mut f = Fields::new(value, path, sink)?;
    let policy = ScalePolicy {
        min_replicas: opt_u64(&mut f, sink, "min_replicas", 1)?,
        max_replicas: opt_u64(&mut f, sink, "max_replicas", 1)?,
        target: req_u64(&mut f, sink, "target")?,
        target_signal: req_word(&mut f, sink, "target_signal")?,
        scale_up_step: opt_u64(&mut f, sink, "scale_up_step", 1)?,
        scale_down_step: opt_u64(&mut f, sink, "scale_down_step", 1)?,
        scale_up_cooldown_s: opt_u64(&mut f, sink, "scale_up_cooldown_s", 30)?,
        scale_down_cooldown_s: opt_u64(&mut f, sink, "scale_down_cooldown_s", 300)?,
        drain_seconds: opt_u64(&mut f, sink, "drain_seconds", 60)?,
        allow_scale_to_zero: opt_bool(&mut f, sink, "allow_scale_to_zero", false)?,
        allow_scale_from_zero: opt_bool(&mut f, sink, "allow_scale_from_zero", true)?,
    };
    f.finish(sink)?;
    Ok(policy)
}

fn demand<S: Sink>(value: &Json<'_>, path: &Path<'_>, sink: &mut S) -> Result<CapacityDemand, S::Stop> {
    let mut f = Fields::new(value, path, sink)?;
    let demand =
        CapacityDemand { axis: req_word(&mut f, sink, "axis")?, per_replica: req_u64(&mut f, sink, "per_replica")? };
    f.finish(sink)?;
    Ok(demand)
}

fn binding<S: Sink>(value: &Json<'_>, path: &Path<'_>, sink: &mut S) -> Result<QuotaBinding, S::Stop> {
    let mut f = Fields::new(value, path, sink)?;
    let binding = QuotaBinding {
        quota_ref: req_string(&mut f, sink, "quota_ref")?,
        axis: req_word(&mut f, sink, "axis")?,
        scope: req_word(&mut f, sink, "scope")?,
        per_replica: req_u64(&mut f, sink, "per_replica")?,
        multiplicative: opt_bool(&mut f, sink, "multiplicative", false)?,
    };
    f.finish(sink)?;
    Ok(binding)
}

fn partition_lease<S: Sink>(
    value: &Json<'_>,
    path: &Path<'_>,
    sink: &mut S,
) -> Result<PartitionLeaseContract, S::Stop> {
    let mut f = Fields::new(value, path, sink)?;
    let lease = PartitionLeaseContract {
        partitioned: opt_bool(&mut f, sink, "partitioned", false)?,
        partitions_per_replica: opt_u64(&mut f, sink, "partitions_per_replica", 0)?,
        lease_required: opt_bool(&mut f, sink, "lease_required", false)?,
        lease_ttl_s: opt_u64(&mut f, sink, "lease_ttl_s", 0)?,
        fencing_required: opt_bool(&mut f, sink, "fencing_required", false)?,
    };
    f.finish(sink)?;
    Ok(lease)
}

fn continuity_contract<S: Sink>(
    value: &Json<'_>,
    path: &Path<'_>,
    sink: &mut S,
) -> Result<ContinuityContract, S::Stop> {
    let mut f = Fields::new(value, path, sink)?;
    let continuity = ContinuityContract {
        mode: req_word::<ContinuityMode, S>(&mut f, sink, "mode")?,
        external_store_ref: nullable_string(&mut f, sink, "external_store_ref")?,
        drain_required: opt_bool(&mut f, sink, "drain_required", true)?,
        block_scale_down_with_active: opt_bool(&mut f, sink, "block_scale_down_with_active", true)?,
        max_drain_seconds: opt_u64(&mut f, sink, "max_drain_seconds", 300)?,
    };
    f.finish(sink)?;
    Ok(continuity)
}

/// Reads a contract found at `path` (`""` for a standalone contract document).
pub(crate) fn contract<S: Sink>(value: &Json<'_>, path: &Path<'_>, sink: &mut S) -> Result<ScaleUnitContract, S::Stop> {
    let mut f = Fields::new(value, path, sink)?;
    let contract = ScaleUnitContract {
        schema_version: opt_string(&mut f, sink, "schema_version", crate::SCHEMA_VERSION)?,
        unit_ref: req_string(&mut f, sink, "unit_ref")?,
        surface: req_word::<SurfaceKind, S>(&mut f, sink, "surface")?,
        version: opt_u64(&mut f, sink, "version", 1)?,
        policy: {
            let (value, path) = f.required("policy", sink)?;
            policy(value, &path, sink)?
        },
        allowed_signals: list(&mut f, sink, "allowed_signals", true, json::word::<SignalKind, S>)?,
        required_capacity_axes: list(&mut f, sink, "required_capacity_axes", true, json::word::<CapacityAxis, S>)?,
        replica_demands: list(&mut f, sink, "replica_demands", true, demand)?,
        quotas: list(&mut f, sink, "quotas", false, binding)?,
        partition_lease: match f.optional("partition_lease", sink)? {
            Some((value, path)) => partition_lease(value, &path, sink)?,
            None => PartitionLeaseContract::default(),
        },
        continuity: {
            let (value, path) = f.required("continuity", sink)?;
            continuity_contract(value, &path, sink)?
        },
        safety_required: opt_bool(&mut f, sink, "safety_required", true)?,
        engine_authority_axes: list(&mut f, sink, "engine_authority_axes", false, json::word::<CapacityAxis, S>)?,
        contract_id: opt_string(&mut f, sink, "contract_id", "")?,
        contract_digest: opt_string(&mut f, sink, "contract_digest", "")?,
    };
    f.finish(sink)?;
    Ok(contract)
}

/// The four fields every observation carries, read in wire order.
struct Window {
    observed_at: String,
    expires_at: String,
    source_ref: String,
    source_digest: String,
}

fn window<S: Sink>(f: &mut Fields<'_, '_>, sink: &mut S) -> Result<Window, S::Stop> {
    Ok(Window {
        observed_at: req_string(f, sink, "observed_at")?,
        expires_at: req_string(f, sink, "expires_at")?,
        source_ref: req_string(f, sink, "source_ref")?,
        source_digest: req_string(f, sink, "source_digest")?,
    })
}

fn signal<S: Sink>(value: &Json<'_>, path: &Path<'_>, sink: &mut S) -> Result<SignalObservation, S::Stop> {
    let mut f = Fields::new(value, path, sink)?;
    let signal = req_word::<SignalKind, S>(&mut f, sink, "signal")?;
    let value = {
        let (value, path) = f.required("value", sink)?;
        json::sint(value, &path, sink)?
    };
    let w = window(&mut f, sink)?;
    f.finish(sink)?;
    Ok(SignalObservation {
        signal,
        value,
        observed_at: w.observed_at,
        expires_at: w.expires_at,
        source_ref: w.source_ref,
        source_digest: w.source_digest,
    })
}

fn capacity<S: Sink>(value: &Json<'_>, path: &Path<'_>, sink: &mut S) -> Result<CapacityObservation, S::Stop> {
    let mut f = Fields::new(value, path, sink)?;
    let axis = req_word::<CapacityAxis, S>(&mut f, sink, "axis")?;
    let allocatable = req_u64(&mut f, sink, "allocatable")?;
    let reserved = req_u64(&mut f, sink, "reserved")?;
    let used = req_u64(&mut f, sink, "used")?;
    let w = window(&mut f, sink)?;
    f.finish(sink)?;
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

fn quota<S: Sink>(value: &Json<'_>, path: &Path<'_>, sink: &mut S) -> Result<QuotaObservation, S::Stop> {
    let mut f = Fields::new(value, path, sink)?;
    let quota_ref = req_string(&mut f, sink, "quota_ref")?;
    let scope = req_word::<QuotaScope, S>(&mut f, sink, "scope")?;
    let limit = req_u64(&mut f, sink, "limit")?;
    let used = req_u64(&mut f, sink, "used")?;
    let w = window(&mut f, sink)?;
    f.finish(sink)?;
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

fn continuity<S: Sink>(value: &Json<'_>, path: &Path<'_>, sink: &mut S) -> Result<ContinuityObservation, S::Stop> {
    let mut f = Fields::new(value, path, sink)?;
    let ready = req_bool(&mut f, sink, "ready")?;
    let active_sessions = req_u64(&mut f, sink, "active_sessions")?;
    let active_streams = req_u64(&mut f, sink, "active_streams")?;
    let w = window(&mut f, sink)?;
    f.finish(sink)?;
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

fn safety<S: Sink>(value: &Json<'_>, path: &Path<'_>, sink: &mut S) -> Result<SafetyObservation, S::Stop> {
    let mut f = Fields::new(value, path, sink)?;
    let overloaded = req_bool(&mut f, sink, "overloaded")?;
    let noisy_neighbor = req_bool(&mut f, sink, "noisy_neighbor")?;
    let reason_ref = nullable_string(&mut f, sink, "reason_ref")?;
    let w = window(&mut f, sink)?;
    f.finish(sink)?;
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

/// A nullable observation: `None` when omitted or `null`.
fn observation<T, S: Sink>(
    f: &mut Fields<'_, '_>,
    sink: &mut S,
    name: &'static str,
    read: impl Fn(&Json<'_>, &Path<'_>, &mut S) -> Result<T, S::Stop>,
) -> Result<Option<T>, S::Stop> {
    match f.nullable(name, sink) {
        Some((value, path)) => read(value, &path, sink).map(Some),
        None => Ok(None),
    }
}

/// Reads a whole evaluation request.
pub(crate) fn request<S: Sink>(value: &Json<'_>, sink: &mut S) -> Result<EvaluationRequest, S::Stop> {
    let mut f = Fields::new(value, &Path::Root, sink)?;
    let contract = {
        let (value, path) = f.required("contract", sink)?;
        contract(value, &path, sink)?
    };
    let current_replicas = {
        let (value, path) = f.required("current_replicas", sink)?;
        json::sint(value, &path, sink)?
    };
    let signal = observation(&mut f, sink, "signal", signal)?;
    let capacities = list(&mut f, sink, "capacities", false, capacity)?;
    let quotas = list(&mut f, sink, "quotas", false, quota)?;
    let continuity = observation(&mut f, sink, "continuity", continuity)?;
    let safety = observation(&mut f, sink, "safety", safety)?;
    let now = req_string(&mut f, sink, "now")?;
    let last_action_at = nullable_string(&mut f, sink, "last_action_at")?;
    f.finish(sink)?;
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
