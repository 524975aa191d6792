//! Contract and decision identities (SPEC §8).

use crate::canonical::{CanonWriter, id_and_digest};
use crate::model::{ContractIdentity, Evidence, ScaleUnitContract};
use crate::vocab::{ActionKind, Reason};

/// The canonical text of the contract identity object: exactly the keys SPEC §8 lists, each
/// object's keys written in ascending order.
fn contract_identity(contract: &ScaleUnitContract) -> CanonWriter {
    let policy = &contract.policy;
    let lease = &contract.partition_lease;
    let continuity = &contract.continuity;
    let mut w = CanonWriter::with_capacity(1024);
    w.begin_object();
    w.sorted_words("allowed_signals", contract.allowed_signals.iter().map(|s| s.as_str()).collect());
    w.key("continuity").begin_object();
    w.key("block_scale_down_with_active").bool(continuity.block_scale_down_with_active);
    w.key("drain_required").bool(continuity.drain_required);
    w.key("external_store_ref").opt_str(continuity.external_store_ref.as_deref());
    w.key("max_drain_seconds").uint(continuity.max_drain_seconds);
    w.key("mode").str(continuity.mode.as_str());
    w.end_object();
    w.sorted_words("engine_authority_axes", contract.engine_authority_axes.iter().map(|a| a.as_str()).collect());
    w.key("partition_lease").begin_object();
    w.key("fencing_required").bool(lease.fencing_required);
    w.key("lease_required").bool(lease.lease_required);
    w.key("lease_ttl_s").uint(lease.lease_ttl_s);
    w.key("partitioned").bool(lease.partitioned);
    w.key("partitions_per_replica").uint(lease.partitions_per_replica);
    w.end_object();
    w.key("policy").begin_object();
    w.key("allow_scale_from_zero").bool(policy.allow_scale_from_zero);
    w.key("allow_scale_to_zero").bool(policy.allow_scale_to_zero);
    w.key("drain_seconds").uint(policy.drain_seconds);
    w.key("max_replicas").uint(policy.max_replicas);
    w.key("min_replicas").uint(policy.min_replicas);
    w.key("scale_down_cooldown_s").uint(policy.scale_down_cooldown_s);
    w.key("scale_down_step").uint(policy.scale_down_step);
    w.key("scale_up_cooldown_s").uint(policy.scale_up_cooldown_s);
    w.key("scale_up_step").uint(policy.scale_up_step);
    w.key("target").uint(policy.target);
    w.key("target_signal").str(policy.target_signal.as_str());
    w.end_object();
    w.key("quotas").begin_array();
    for q in &contract.quotas {
        w.begin_object();
        w.key("axis").str(q.axis.as_str());
        w.key("multiplicative").bool(q.multiplicative);
        w.key("per_replica").uint(q.per_replica);
        w.key("quota_ref").str(&q.quota_ref);
        w.key("scope").str(q.scope.as_str());
        w.end_object();
    }
    w.end_array();
    w.key("replica_demands").begin_array();
    for d in &contract.replica_demands {
        w.begin_object().key("axis").str(d.axis.as_str()).key("per_replica").uint(d.per_replica).end_object();
    }
    w.end_array();
    w.sorted_words("required_capacity_axes", contract.required_capacity_axes.iter().map(|a| a.as_str()).collect());
    w.key("safety_required").bool(contract.safety_required);
    w.key("schema_version").str(&contract.schema_version);
    w.key("surface").str(contract.surface.as_str());
    w.key("unit_ref").str(&contract.unit_ref);
    w.key("version").uint(contract.version);
    w.end_object();
    w
}

/// `contract_id` and `contract_digest` of a contract (its supplied claims are not part of it).
pub(crate) fn contract(contract: &ScaleUnitContract) -> ContractIdentity {
    let identity = contract_identity(contract);
    let (contract_id, contract_digest) = id_and_digest("scale-unit:", identity.text(), "scale_unit_contract");
    ContractIdentity { contract_id, contract_digest }
}

/// The fields of a decision its identity covers.
pub(crate) struct DecisionFields<'a> {
    pub contract_id: &'a str,
    pub evaluated_at: &'a str,
    pub current_replicas: u64,
    pub desired_replicas: u64,
    pub action: ActionKind,
    pub reasons: &'a [Reason],
    pub drain_required: bool,
    pub evidence: &'a [Evidence],
}

/// `decision_id` and `decision_digest` of a decision.
pub(crate) fn decision(fields: &DecisionFields<'_>) -> (String, String) {
    id_and_digest("scale-decision:", decision_identity(fields).text(), "scale_decision")
}

/// The canonical text of the contract identity object.
pub(crate) fn contract_text(contract: &ScaleUnitContract) -> String {
    contract_identity(contract).text().to_owned()
}

/// The canonical text of the decision identity object.
pub(crate) fn decision_text(fields: &DecisionFields<'_>) -> String {
    decision_identity(fields).text().to_owned()
}

/// The decision identity object: exactly the keys SPEC §8 lists, in ascending order.
fn decision_identity(fields: &DecisionFields<'_>) -> CanonWriter {
    let mut w = CanonWriter::with_capacity(512 + 256 * fields.evidence.len());
    w.begin_object();
    w.key("action").str(fields.action.as_str());
    w.key("contract_id").str(fields.contract_id);
    w.key("current_replicas").uint(fields.current_replicas);
    w.key("desired_replicas").uint(fields.desired_replicas);
    w.key("drain_required").bool(fields.drain_required);
    w.key("evaluated_at").str(fields.evaluated_at);
    w.key("evidence").begin_array();
    for e in fields.evidence {
        w.begin_object();
        w.key("code").str(&e.code);
        w.key("digest").str(&e.digest);
        w.key("kind").str(e.kind.as_str());
        w.key("ref").str(&e.reference);
        w.key("status").str(e.status.as_str());
        w.end_object();
    }
    w.end_array();
    w.sorted_words("reasons", fields.reasons.iter().map(|r| r.as_str()).collect());
    w.key("schema_version").str(crate::SCHEMA_VERSION);
    w.end_object();
    w
}
