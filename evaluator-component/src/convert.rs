//! WIT values ⇄ core values. Field for field, case for case; no rule is decided here.

use crate::core;
use crate::wit;

// The enum conversions, from the one list in the core.
scale_units_core::wit_enum_bridges!(wit);

pub(crate) fn error(error: core::EvaluationError) -> wit::EvaluationError {
    wit::EvaluationError {
        code: error_code_to_wit(error.code()),
        message: error.message().to_owned(),
        path: error.path().to_owned(),
    }
}

/// A core diagnosis as the WIT record: each fault with its code, message, path and hint.
pub(crate) fn diagnosis(diagnosis: &core::Diagnosis) -> wit::Diagnosis {
    wit::Diagnosis {
        faults: diagnosis
            .faults()
            .iter()
            .map(|fault| wit::Fault {
                code: error_code_to_wit(fault.code()),
                message: fault.message().to_owned(),
                path: fault.path().to_owned(),
                hint: fault.hint().to_owned(),
            })
            .collect(),
        omitted: diagnosis.omitted(),
    }
}

pub(crate) fn identity(identity: core::ContractIdentity) -> wit::ContractIdentity {
    wit::ContractIdentity { contract_id: identity.contract_id, contract_digest: identity.contract_digest }
}

pub(crate) fn contract(contract: wit::ScaleUnitContract) -> core::ScaleUnitContract {
    let policy = contract.policy;
    let lease = contract.partition_lease;
    let continuity = contract.continuity;
    core::ScaleUnitContract {
        schema_version: contract.schema_version,
        unit_ref: contract.unit_ref,
        surface: surface(contract.surface),
        version: contract.version,
        policy: core::ScalePolicy {
            min_replicas: policy.min_replicas,
            max_replicas: policy.max_replicas,
            target: policy.target,
            target_signal: signal(policy.target_signal),
            scale_up_step: policy.scale_up_step,
            scale_down_step: policy.scale_down_step,
            scale_up_cooldown_s: policy.scale_up_cooldown_s,
            scale_down_cooldown_s: policy.scale_down_cooldown_s,
            drain_seconds: policy.drain_seconds,
            allow_scale_to_zero: policy.allow_scale_to_zero,
            allow_scale_from_zero: policy.allow_scale_from_zero,
        },
        allowed_signals: contract.allowed_signals.into_iter().map(signal).collect(),
        required_capacity_axes: contract.required_capacity_axes.into_iter().map(axis).collect(),
        replica_demands: contract
            .replica_demands
            .into_iter()
            .map(|demand| core::CapacityDemand { axis: axis(demand.axis), per_replica: demand.per_replica })
            .collect(),
        quotas: contract
            .quotas
            .into_iter()
            .map(|binding| core::QuotaBinding {
                quota_ref: binding.quota_ref,
                axis: axis(binding.axis),
                scope: scope(binding.scope),
                per_replica: binding.per_replica,
                multiplicative: binding.multiplicative,
            })
            .collect(),
        partition_lease: core::PartitionLeaseContract {
            partitioned: lease.partitioned,
            partitions_per_replica: lease.partitions_per_replica,
            lease_required: lease.lease_required,
            lease_ttl_s: lease.lease_ttl_s,
            fencing_required: lease.fencing_required,
        },
        continuity: core::ContinuityContract {
            mode: mode(continuity.mode),
            external_store_ref: continuity.external_store_ref,
            drain_required: continuity.drain_required,
            block_scale_down_with_active: continuity.block_scale_down_with_active,
            max_drain_seconds: continuity.max_drain_seconds,
        },
        safety_required: contract.safety_required,
        engine_authority_axes: contract.engine_authority_axes.into_iter().map(axis).collect(),
        contract_id: contract.contract_id,
        contract_digest: contract.contract_digest,
    }
}

pub(crate) fn request(request: wit::EvaluationRequest) -> core::EvaluationRequest {
    core::EvaluationRequest {
        contract: contract(request.contract),
        current_replicas: request.current_replicas,
        signal: request.signal.map(|o| core::SignalObservation {
            signal: signal(o.signal),
            value: o.value,
            observed_at: o.observed_at,
            expires_at: o.expires_at,
            source_ref: o.source_ref,
            source_digest: o.source_digest,
        }),
        capacities: request
            .capacities
            .into_iter()
            .map(|o| core::CapacityObservation {
                axis: axis(o.axis),
                allocatable: o.allocatable,
                reserved: o.reserved,
                used: o.used,
                observed_at: o.observed_at,
                expires_at: o.expires_at,
                source_ref: o.source_ref,
                source_digest: o.source_digest,
            })
            .collect(),
        quotas: request
            .quotas
            .into_iter()
            .map(|o| core::QuotaObservation {
                quota_ref: o.quota_ref,
                scope: scope(o.scope),
                limit: o.limit,
                used: o.used,
                observed_at: o.observed_at,
                expires_at: o.expires_at,
                source_ref: o.source_ref,
                source_digest: o.source_digest,
            })
            .collect(),
        continuity: request.continuity.map(|o| core::ContinuityObservation {
            ready: o.ready,
            active_sessions: o.active_sessions,
            active_streams: o.active_streams,
            observed_at: o.observed_at,
            expires_at: o.expires_at,
            source_ref: o.source_ref,
            source_digest: o.source_digest,
        }),
        safety: request.safety.map(|o| core::SafetyObservation {
            overloaded: o.overloaded,
            noisy_neighbor: o.noisy_neighbor,
            reason_ref: o.reason_ref,
            observed_at: o.observed_at,
            expires_at: o.expires_at,
            source_ref: o.source_ref,
            source_digest: o.source_digest,
        }),
        now: request.now,
        last_action_at: request.last_action_at,
    }
}

pub(crate) fn decision_to_wit(decision: core::Decision) -> wit::Decision {
    wit::Decision {
        schema_version: decision.schema_version,
        decision_id: decision.decision_id,
        decision_digest: decision.decision_digest,
        contract_id: decision.contract_id,
        evaluated_at: decision.evaluated_at,
        current_replicas: decision.current_replicas,
        desired_replicas: decision.desired_replicas,
        action: action_to_wit(decision.action),
        reasons: decision.reasons.into_iter().map(reason_to_wit).collect(),
        drain_required: decision.drain_required,
        evidence: decision
            .evidence
            .into_iter()
            .map(|e| wit::Evidence {
                kind: evidence_kind_to_wit(e.kind),
                ref_: e.reference,
                digest: e.digest,
                status: evidence_status_to_wit(e.status),
                code: e.code,
            })
            .collect(),
    }
}

pub(crate) fn decision_from_wit(decision: wit::Decision) -> core::Decision {
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

pub(crate) fn profile(surface_kind: wit::SurfaceKind) -> wit::Profile {
    let profile = surface(surface_kind).profile();
    wit::Profile {
        surface: surface_kind,
        allowed_signals: profile.allowed_signals.iter().copied().map(signal_to_wit).collect(),
        required_capacity_axes: profile.required_capacity_axes.iter().copied().map(axis_to_wit).collect(),
        engine_authority_axes: profile.engine_authority_axes.iter().copied().map(axis_to_wit).collect(),
        continuity_modes: profile.continuity_modes.iter().copied().map(mode_to_wit).collect(),
        partition_and_fenced_lease: profile.partition_and_fenced_lease,
        provider_quota_axes: profile.provider_quota_axes.iter().copied().map(axis_to_wit).collect(),
    }
}

pub(crate) fn explanation(explanation: &core::Explanation) -> wit::Explanation {
    wit::Explanation {
        summary: explanation.summary.clone(),
        reasons: explanation
            .reasons
            .iter()
            .map(|line| wit::ReasonText { reason: reason_to_wit(line.reason), text: line.text.clone() })
            .collect(),
        evidence: explanation.evidence.clone(),
    }
}

/// A core gate verdict as the WIT record.
pub(crate) fn verdict(verdict: core::GateVerdict) -> wit::GateVerdict {
    wit::GateVerdict {
        allowed: verdict.allowed,
        reason: gate_reason_to_wit(verdict.reason),
        message: verdict.message,
        from_replicas: verdict.from_replicas,
        to_replicas: verdict.to_replicas,
        decision: verdict.decision.map(decision_to_wit),
        error: verdict.error.map(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every WIT case is the core's wire spelling in another case style: one spelling everywhere.
    #[test]
    fn wit_cases_are_the_wire_spellings() {
        fn check<C: Copy, W: std::fmt::Debug>(all: &[C], to_wit: fn(C) -> W, wire: fn(C) -> &'static str) {
            for &case in all {
                let camel: String = wire(case)
                    .split('_')
                    .flat_map(|word| {
                        let mut chars = word.chars();
                        chars.next().map(|first| first.to_ascii_uppercase()).into_iter().chain(chars)
                    })
                    .collect();
                // wit-bindgen's Debug prints `Type::Case`.
                let debug = format!("{:?}", to_wit(case));
                assert_eq!(debug.rsplit("::").next(), Some(camel.as_str()), "{debug}");
            }
        }
        check(core::SurfaceKind::ALL, surface_to_wit, core::SurfaceKind::as_str);
        check(core::SignalKind::ALL, signal_to_wit, core::SignalKind::as_str);
        check(core::CapacityAxis::ALL, axis_to_wit, core::CapacityAxis::as_str);
        check(core::QuotaScope::ALL, scope_to_wit, core::QuotaScope::as_str);
        check(core::ContinuityMode::ALL, mode_to_wit, core::ContinuityMode::as_str);
        check(core::ActionKind::ALL, action_to_wit, core::ActionKind::as_str);
        check(core::EvidenceKind::ALL, evidence_kind_to_wit, core::EvidenceKind::as_str);
        check(core::EvidenceStatus::ALL, evidence_status_to_wit, core::EvidenceStatus::as_str);
        check(core::Reason::ALL, reason_to_wit, core::Reason::as_str);
        check(core::ErrorCode::ALL, error_code_to_wit, core::ErrorCode::as_str);
    }
}
