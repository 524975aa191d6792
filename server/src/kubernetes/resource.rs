//! The `ScaleUnit` resource (`scale-units.dev/v1alpha1`, namespaced): a unit's contract, its
//! evidence sources and its scale target as a Kubernetes object, and the service's decision in
//! its status subresource.
//!
//! The spec's `contract` and `sources` are the documents of the contracts folder, unchanged
//! (`schema/scale-unit-contract.schema.json`, `schema/sources.schema.json`); the CRD's OpenAPI
//! schema is generated from those schemas ([`super::crd`]). The component stays the judge of the
//! contract: the API server refuses what the schema and its CEL rules can see, the service what
//! the component refuses (a `Ready` condition naming the path).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The API group of the service's resources.
pub const GROUP: &str = "scale-units.dev";
/// The version of [`ScaleUnit`].
pub const VERSION: &str = "v1alpha1";

/// What a `ScaleUnit` asks of the service (`spec`).
#[derive(CustomResource, Clone, Debug, PartialEq, Deserialize, Serialize)]
#[kube(
    group = "scale-units.dev",
    version = "v1alpha1",
    kind = "ScaleUnit",
    plural = "scaleunits",
    singular = "scaleunit",
    shortname = "su",
    category = "scale-units",
    namespaced,
    status = "ScaleUnitStatus",
    schema = "disabled",
    printcolumn = r#"{"name":"Target","type":"string","jsonPath":".status.target.ref","description":"The scale target, kind/name."}"#,
    printcolumn = r#"{"name":"Mode","type":"string","jsonPath":".spec.mode","description":"Monitor, Warn or Enforce."}"#,
    printcolumn = r#"{"name":"Decision","type":"string","jsonPath":".status.decision.action","description":"The service's decision."}"#,
    printcolumn = r#"{"name":"Current","type":"integer","jsonPath":".status.currentReplicas","description":"The target's spec.replicas, as the API server holds it."}"#,
    printcolumn = r#"{"name":"Desired","type":"integer","jsonPath":".status.desiredReplicas","description":"The replica count the decision asks for."}"#,
    printcolumn = r#"{"name":"Reason","type":"string","jsonPath":".status.decision.reason","description":"The decision's first reason."}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ScaleUnitSpec {
    /// The workload whose replica count the unit governs, named as a HorizontalPodAutoscaler
    /// names it: a Deployment, a StatefulSet or any resource with a `scale` subresource, in the
    /// ScaleUnit's namespace.
    pub scale_target_ref: ScaleTargetRef,
    /// The scale-unit contract (SPEC §4), as a contract file holds it.
    pub contract: Value,
    /// Where the unit's evidence comes from, as a sources file holds it (absent: observations
    /// are pushed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sources: Option<Value>,
    /// What a change the decision does not allow meets: `Enforce` (the default) denies it,
    /// `Warn` allows it with an admission warning, `Monitor` allows it; both record it (an
    /// Event, the audit log, a metric).
    #[serde(default)]
    pub mode: Mode,
}

/// `spec.scaleTargetRef`: as `autoscaling/v2`'s `CrossVersionObjectReference`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScaleTargetRef {
    /// The target's `apiVersion` (`apps/v1`).
    pub api_version: String,
    /// The target's kind (`Deployment`).
    pub kind: String,
    /// The target's name, in the ScaleUnit's namespace.
    pub name: String,
}

impl ScaleTargetRef {
    /// The API group of the target (`""` for the core group).
    pub fn group(&self) -> &str {
        self.api_version.rsplit_once('/').map_or("", |(group, _)| group)
    }

    /// `kind/name`, as `kubectl` prints a reference.
    pub fn display(&self) -> String {
        format!("{}/{}", self.kind, self.name)
    }
}

/// `spec.mode`: how a change the decision does not allow is answered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Deserialize, Serialize)]
pub enum Mode {
    /// Allowed; the would-be denial is recorded (an Event on the ScaleUnit and its target, the
    /// audit log, a metric).
    Monitor,
    /// Allowed with the would-be denial as an admission warning, and recorded as in `Monitor`.
    Warn,
    /// Denied.
    #[default]
    Enforce,
}

impl Mode {
    /// The mode's name, as the resource spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Monitor => "Monitor",
            Self::Warn => "Warn",
            Self::Enforce => "Enforce",
        }
    }
}

/// `status`: what the service decided for the unit, and what it knows of its target.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScaleUnitStatus {
    /// The `metadata.generation` of the ScaleUnit this status was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The scale target as the service watches it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<TargetStatus>,
    /// The target's `spec.replicas` as the API server holds it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_replicas: Option<u64>,
    /// The replica count the decision asks for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desired_replicas: Option<u64>,
    /// The decision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<DecisionStatus>,
    /// When the service saw the target's `spec.replicas` change last (whoever changed it): the
    /// contract's cooldowns count from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_scale_time: Option<Time>,
    /// From when the service vouches that it saw every change of the target's `spec.replicas`:
    /// before it nothing is known, and the cooldowns count from it at the latest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub known_since: Option<Time>,
    /// Each kind of evidence the contract reads: fresh, stale or missing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<EvidenceStatus>,
    /// `Ready`, `EvidenceFresh` and `ScalingBlocked`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// `status.target`: the scale target the service watches.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetStatus {
    /// `Kind/name`.
    #[serde(rename = "ref")]
    pub reference: String,
    /// The target's `metadata.uid` when it was seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// The target's `metadata.generation` when the service last saw it: a later one seen after a
    /// restart means its spec changed while nobody watched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
}

/// `status.decision`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DecisionStatus {
    /// `scale_up`, `scale_down`, `hold` or `blocked`; `error` when no decision could be made.
    pub action: String,
    /// The first reason, in the core's plain words (`kubectl get`'s column).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Every reason code, in the decision's order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
    /// The decision's id (changes with every evaluation's inputs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision_id: Option<String>,
    /// The digest of the component that decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub component_digest: Option<String>,
    /// When it was decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_at: Option<Time>,
}

/// `status.evidence[]`: one kind of evidence the contract reads.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EvidenceStatus {
    /// `signal`, `capacity:<axis>`, `quota:<quota_ref>`, `continuity` or `safety`.
    pub name: String,
    /// `Fresh`, `Stale` or `Missing`.
    pub state: String,
    /// When it was observed (its age is `now` minus this).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_at: Option<String>,
    /// Where it was read (`source_ref`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}
