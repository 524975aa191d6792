//! Core values ⇄ the component's WIT values. Field for field, case for case; no rule here.

use scale_units_core as core;

use crate::bindings::wit;

// The enum conversions, from the one list in the core.
scale_units_core::wit_enum_bridges!(wit);

pub(crate) fn error(error: wit::EvaluationError) -> core::EvaluationError {
    core::EvaluationError::new(error_code(error.code), error.message, error.path)
}

pub(crate) fn diagnosis(diagnosis: wit::Diagnosis) -> core::Diagnosis {
    let faults = diagnosis
        .faults
        .into_iter()
        .map(|fault| core::Fault::new(error_code(fault.code), fault.message, fault.path, fault.hint))
        .collect();
    core::Diagnosis::new(faults, diagnosis.omitted)
}

pub(crate) fn identity(identity: wit::ContractIdentity) -> core::ContractIdentity {
    core::ContractIdentity { contract_id: identity.contract_id, contract_digest: identity.contract_digest }
}

pub(crate) fn contract(contract: &core::ScaleUnitContract) -> wit::ScaleUnitContract {
    let policy = &contract.policy;
    let lease = &contract.partition_lease;
    let continuity = &contract.continuity;
    wit::ScaleUnitContract {
        schema_version: contract.schema_version.clone(),
        unit_ref: contract.unit_ref.clone(),
        surface: surface_to_wit(contract.surface),
        version: contract.version,
        policy: wit::ScalePolicy {
            min_replicas: policy.min_replicas,
            max_replicas: policy.max_replicas,
            target: policy.target,
            target_signal: signal_to_wit(policy.target_signal),
            scale_up_step: policy.scale_up_step,
            scale_down_step: policy.scale_down_step,
            scale_up_cooldown_s: policy.scale_up_cooldown_s,
            scale_down_cooldown_s: policy.scale_down_cooldown_s,
            drain_seconds: policy.drain_seconds,
            allow_scale_to_zero: policy.allow_scale_to_zero,
            allow_scale_from_zero: policy.allow_scale_from_zero,
        },
        allowed_signals: contract.allowed_signals.iter().copied().map(signal_to_wit).collect(),
        required_capacity_axes: contract.required_capacity_axes.iter().copied().map(axis_to_wit).collect(),
        replica_demands: contract
            .replica_demands
            .iter()
            .map(|demand| wit::CapacityDemand { axis: axis_to_wit(demand.axis), per_replica: demand.per_replica })
            .collect(),
        quotas: contract
            .quotas
            .iter()
            .map(|binding| wit::QuotaBinding {
                quota_ref: binding.quota_ref.clone(),
                axis: axis_to_wit(binding.axis),
                scope: scope_to_wit(binding.scope),
                per_replica: binding.per_replica,
                multiplicative: binding.multiplicative,
            })
            .collect(),
        partition_lease: wit::PartitionLeaseContract {
            partitioned: lease.partitioned,
            partitions_per_replica: lease.partitions_per_replica,
            lease_required: lease.lease_required,
            lease_ttl_s: lease.lease_ttl_s,
            fencing_required: lease.fencing_required,
        },
        continuity: wit::ContinuityContract {
            mode: mode_to_wit(continuity.mode),
            external_store_ref: continuity.external_store_ref.clone(),
            drain_required: continuity.drain_required,
            block_scale_down_with_active: continuity.block_scale_down_with_active,
            max_drain_seconds: continuity.max_drain_seconds,
        },
        safety_required: contract.safety_required,
        engine_authority_axes: contract.engine_authority_axes.iter().copied().map(axis_to_wit).collect(),
        contract_id: contract.contract_id.clone(),
        contract_digest: contract.contract_digest.clone(),
    }
}

pub(crate) fn request(request: &core::EvaluationRequest) -> wit::EvaluationRequest {
    wit::EvaluationRequest {
        contract: contract(&request.contract),
        current_replicas: request.current_replicas,
        signal: request.signal.as_ref().map(|o| wit::SignalObservation {
            signal: signal_to_wit(o.signal),
            value: o.value,
            observed_at: o.observed_at.clone(),
            expires_at: o.expires_at.clone(),
            source_ref: o.source_ref.clone(),
            source_digest: o.source_digest.clone(),
        }),
        capacities: request
            .capacities
            .iter()
            .map(|o| wit::CapacityObservation {
                axis: axis_to_wit(o.axis),
                allocatable: o.allocatable,
                reserved: o.reserved,
                used: o.used,
                observed_at: o.observed_at.clone(),
                expires_at: o.expires_at.clone(),
                source_ref: o.source_ref.clone(),
                source_digest: o.source_digest.clone(),
            })
            .collect(),
        quotas: request
            .quotas
            .iter()
            .map(|o| wit::QuotaObservation {
                quota_ref: o.quota_ref.clone(),
                scope: scope_to_wit(o.scope),
                limit: o.limit,
                used: o.used,
                observed_at: o.observed_at.clone(),
                expires_at: o.expires_at.clone(),
                source_ref: o.source_ref.clone(),
                source_digest: o.source_digest.clone(),
            })
            .collect(),
        continuity: request.continuity.as_ref().map(|o| wit::ContinuityObservation {
            ready: o.ready,
            active_sessions: o.active_sessions,
            active_streams: o.active_streams,
            observed_at: o.observed_at.clone(),
            expires_at: o.expires_at.clone(),
            source_ref: o.source_ref.clone(),
            source_digest: o.source_digest.clone(),
        }),
        safety: request.safety.as_ref().map(|o| wit::SafetyObservation {
            overloaded: o.overloaded,
            noisy_neighbor: o.noisy_neighbor,
            reason_ref: o.reason_ref.clone(),
            observed_at: o.observed_at.clone(),
            expires_at: o.expires_at.clone(),
            source_ref: o.source_ref.clone(),
            source_digest: o.source_digest.clone(),
        }),
        now: request.now.clone(),
        last_action_at: request.last_action_at.clone(),
    }
}

pub(crate) fn decision(decision: wit::Decision) -> core::Decision {
    core::Decision {
        schema_version: decision.schema_version,
        decision_id: decision.decision_id,
        decision_digest: decision.decision_digest,
        contract_id: decision.contract_id,
        evaluated_at: decision.evaluated_at,
        current_replicas: decision.current_replicas,
        desired_replicas: decision.desired_replicas,
        action: action(decision.action),
        reasons: decision.reasons.into_iter().map(reason).collect(),
        drain_required: decision.drain_required,
        evidence: decision
            .evidence
            .into_iter()
            .map(|e| core::Evidence {
                kind: evidence_kind(e.kind),
                reference: e.ref_,
                digest: e.digest,
                status: evidence_status(e.status),
                code: e.code,
            })
            .collect(),
    }
}

pub(crate) fn decision_to_wit(decision: &core::Decision) -> wit::Decision {
    wit::Decision {
        schema_version: decision.schema_version.clone(),
        decision_id: decision.decision_id.clone(),
        decision_digest: decision.decision_digest.clone(),
        contract_id: decision.contract_id.clone(),
        evaluated_at: decision.evaluated_at.clone(),
        current_replicas: decision.current_replicas,
        desired_replicas: decision.desired_replicas,
        action: action_to_wit(decision.action),
        reasons: decision.reasons.iter().copied().map(reason_to_wit).collect(),
        drain_required: decision.drain_required,
        evidence: decision
            .evidence
            .iter()
            .map(|e| wit::Evidence {
                kind: evidence_kind_to_wit(e.kind),
                ref_: e.reference.clone(),
                digest: e.digest.clone(),
                status: evidence_status_to_wit(e.status),
                code: e.code.clone(),
            })
            .collect(),
    }
}

pub(crate) fn profile(profile: wit::Profile) -> crate::Profile {
    crate::Profile {
        surface: surface(profile.surface),
        allowed_signals: profile.allowed_signals.into_iter().map(signal).collect(),
        required_capacity_axes: profile.required_capacity_axes.into_iter().map(axis).collect(),
        engine_authority_axes: profile.engine_authority_axes.into_iter().map(axis).collect(),
        continuity_modes: profile.continuity_modes.into_iter().map(mode).collect(),
        partition_and_fenced_lease: profile.partition_and_fenced_lease,
        provider_quota_axes: profile.provider_quota_axes.into_iter().map(axis).collect(),
    }
}

pub(crate) fn explanation(explanation: wit::Explanation) -> crate::Explanation {
    crate::Explanation {
        summary: explanation.summary,
        reasons: explanation
            .reasons
            .into_iter()
            .map(|line| core::ReasonText { reason: reason(line.reason), text: line.text })
            .collect(),
        evidence: explanation.evidence,
    }
}

pub(crate) fn info(info: wit::EvaluatorInfo) -> crate::EvaluatorInfo {
    crate::EvaluatorInfo {
        evaluator_version: info.evaluator_version,
        schema_version: info.schema_version,
        wit_version: info.wit_version,
    }
}

/// A WIT gate verdict as the core's.
pub(crate) fn verdict(verdict: wit::GateVerdict) -> core::GateVerdict {
    core::GateVerdict {
        allowed: verdict.allowed,
        reason: gate_reason(verdict.reason),
        message: verdict.message,
        from_replicas: verdict.from_replicas,
        to_replicas: verdict.to_replicas,
        decision: verdict.decision.map(decision),
        error: verdict.error.map(error),
    }
}

/// A core proposed change as the WIT record.
pub(crate) fn change(change: &core::ProposedChange) -> wit::ProposedChange {
    wit::ProposedChange { to_replicas: change.to_replicas, kind: change_kind_to_wit(change.kind) }
}
