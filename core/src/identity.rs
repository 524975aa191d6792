//! Contract and decision identities (SPEC §8).

use crate::canonical::{Canon, content_digest, sha256_hex};
use crate::model::{ContractIdentity, Evidence, ScaleUnitContract};
use crate::vocab::{ActionKind, Reason};

fn sorted_words<T: Copy>(items: &[T], as_str: fn(T) -> &'static str) -> Canon<'static> {
    let mut words: Vec<&'static str> = items.iter().map(|&item| as_str(item)).collect();
    words.sort_unstable();
    Canon::List(words.into_iter().map(Canon::Str).collect())
}

fn int(value: u64) -> Canon<'static> {
    Canon::Int(i128::from(value))
}

/// The contract identity object: exactly the keys SPEC §8 lists.
fn contract_identity(contract: &ScaleUnitContract) -> Canon<'_> {
    let policy = &contract.policy;
    let lease = &contract.partition_lease;
    let continuity = &contract.continuity;
    Canon::Map(vec![
        ("schema_version", Canon::Str(&contract.schema_version)),
        ("unit_ref", Canon::Str(&contract.unit_ref)),
        ("surface", Canon::Str(contract.surface.as_str())),
        ("version", int(contract.version)),
        (
            "policy",
            Canon::Map(vec![
                ("min_replicas", int(policy.min_replicas)),
                ("max_replicas", int(policy.max_replicas)),
                ("target", int(policy.target)),
                ("target_signal", Canon::Str(policy.target_signal.as_str())),
                ("scale_up_step", int(policy.scale_up_step)),
                ("scale_down_step", int(policy.scale_down_step)),
                ("scale_up_cooldown_s", int(policy.scale_up_cooldown_s)),
                ("scale_down_cooldown_s", int(policy.scale_down_cooldown_s)),
                ("drain_seconds", int(policy.drain_seconds)),
                ("allow_scale_to_zero", Canon::Bool(policy.allow_scale_to_zero)),
                ("allow_scale_from_zero", Canon::Bool(policy.allow_scale_from_zero)),
            ]),
        ),
        ("allowed_signals", sorted_words(&contract.allowed_signals, |s| s.as_str())),
        ("required_capacity_axes", sorted_words(&contract.required_capacity_axes, |a| a.as_str())),
        (
            "replica_demands",
            Canon::List(
                contract
                    .replica_demands
                    .iter()
                    .map(|d| {
                        Canon::Map(vec![("axis", Canon::Str(d.axis.as_str())), ("per_replica", int(d.per_replica))])
                    })
                    .collect(),
            ),
        ),
        (
            "quotas",
            Canon::List(
                contract
                    .quotas
                    .iter()
                    .map(|q| {
                        Canon::Map(vec![
                            ("quota_ref", Canon::Str(&q.quota_ref)),
                            ("axis", Canon::Str(q.axis.as_str())),
                            ("scope", Canon::Str(q.scope.as_str())),
                            ("per_replica", int(q.per_replica)),
                            ("multiplicative", Canon::Bool(q.multiplicative)),
                        ])
                    })
                    .collect(),
            ),
        ),
        (
            "partition_lease",
            Canon::Map(vec![
                ("partitioned", Canon::Bool(lease.partitioned)),
                ("partitions_per_replica", int(lease.partitions_per_replica)),
                ("lease_required", Canon::Bool(lease.lease_required)),
                ("lease_ttl_s", int(lease.lease_ttl_s)),
                ("fencing_required", Canon::Bool(lease.fencing_required)),
            ]),
        ),
        (
            "continuity",
            Canon::Map(vec![
                ("mode", Canon::Str(continuity.mode.as_str())),
                ("external_store_ref", continuity.external_store_ref.as_deref().map_or(Canon::Null, Canon::Str)),
                ("drain_required", Canon::Bool(continuity.drain_required)),
                ("block_scale_down_with_active", Canon::Bool(continuity.block_scale_down_with_active)),
                ("max_drain_seconds", int(continuity.max_drain_seconds)),
            ]),
        ),
        ("safety_required", Canon::Bool(contract.safety_required)),
        ("engine_authority_axes", sorted_words(&contract.engine_authority_axes, |a| a.as_str())),
    ])
}

/// `contract_id` and `contract_digest` of a contract (its supplied claims are not part of it).
pub(crate) fn contract(contract: &ScaleUnitContract) -> ContractIdentity {
    let identity = contract_identity(contract);
    let hex = sha256_hex(identity.to_text().as_bytes());
    let contract_id = format!("scale-unit:{}", hex.get(..32).unwrap_or_default());
    let contract_digest =
        content_digest(&Canon::Map(vec![("kind", Canon::Str("scale_unit_contract")), ("identity", identity)]));
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
    let mut reasons: Vec<&'static str> = fields.reasons.iter().map(|r| r.as_str()).collect();
    reasons.sort_unstable();
    let identity = Canon::Map(vec![
        ("schema_version", Canon::Str(crate::SCHEMA_VERSION)),
        ("contract_id", Canon::Str(fields.contract_id)),
        ("evaluated_at", Canon::Str(fields.evaluated_at)),
        ("current_replicas", int(fields.current_replicas)),
        ("desired_replicas", int(fields.desired_replicas)),
        ("action", Canon::Str(fields.action.as_str())),
        ("reasons", Canon::List(reasons.into_iter().map(Canon::Str).collect())),
        ("drain_required", Canon::Bool(fields.drain_required)),
        (
            "evidence",
            Canon::List(
                fields
                    .evidence
                    .iter()
                    .map(|e| {
                        Canon::Map(vec![
                            ("kind", Canon::Str(e.kind.as_str())),
                            ("ref", Canon::Str(&e.reference)),
                            ("digest", Canon::Str(&e.digest)),
                            ("status", Canon::Str(e.status.as_str())),
                            ("code", Canon::Str(&e.code)),
                        ])
                    })
                    .collect(),
            ),
        ),
    ]);
    let hex = sha256_hex(identity.to_text().as_bytes());
    let decision_id = format!("scale-decision:{}", hex.get(..32).unwrap_or_default());
    let decision_digest =
        content_digest(&Canon::Map(vec![("kind", Canon::Str("scale_decision")), ("identity", identity)]));
    (decision_id, decision_digest)
}
