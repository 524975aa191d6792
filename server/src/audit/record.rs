//! What one audit line holds: the caller, the decision, an override, an error
//! ([`AuditRecord`] and its parts), and its JSON.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::listen::Peer;

/// Who asked for a decision: a review's user, or a connection's peer. A connection's caller
/// always carries `address` and `client_certificate` (`null` when absent); a review's carries
/// `username` and `groups`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Caller {
    /// The review's `userInfo.username`.
    pub username: Option<String>,
    /// The review's `userInfo.groups`.
    pub groups: Option<Vec<String>>,
    /// The remote address of the connection.
    pub address: Option<String>,
    /// The client certificate's `sha256:` digest, when one was presented.
    pub client_certificate: Option<String>,
    /// Asked over a connection (HTTP or gRPC): `address` and `client_certificate` are written
    /// even when absent.
    pub connection: bool,
}

impl Caller {
    /// The peer of a connection.
    pub fn peer(peer: Option<&Peer>) -> Self {
        Self {
            address: peer.map(|peer| peer.address.to_string()),
            client_certificate: peer.and_then(|peer| peer.client_certificate.clone()),
            connection: true,
            ..Self::default()
        }
    }
}

impl Serialize for Caller {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap as _;
        let mut map = serializer.serialize_map(None)?;
        if let Some(username) = &self.username {
            map.serialize_entry("username", username)?;
        }
        if let Some(groups) = &self.groups {
            map.serialize_entry("groups", groups)?;
        }
        if self.connection || self.address.is_some() {
            map.serialize_entry("address", &self.address)?;
        }
        if self.connection || self.client_certificate.is_some() {
            map.serialize_entry("client_certificate", &self.client_certificate)?;
        }
        map.end()
    }
}

/// What the audit log keeps of a decision.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct DecisionFacts {
    /// `scale_up`, `scale_down`, `hold` or `blocked`.
    pub action: String,
    /// `current_replicas`.
    pub current_replicas: u64,
    /// `desired_replicas`.
    pub desired_replicas: u64,
    /// Reason codes, in order.
    pub reasons: Vec<String>,
    /// `decision_id`.
    pub decision_id: String,
    /// `decision_digest`.
    pub decision_digest: String,
}

impl DecisionFacts {
    /// The facts of a decision's JSON as the component wrote it; `None` when it cannot be read.
    pub fn from_json(decision: &str) -> Option<Self> {
        serde_json::from_str(decision).ok()
    }

    /// The facts of a typed decision.
    pub fn of(decision: &scale_units_core::Decision) -> Self {
        Self {
            action: decision.action.as_str().to_owned(),
            current_replicas: decision.current_replicas,
            desired_replicas: decision.desired_replicas,
            reasons: decision.reasons.iter().map(|reason| reason.as_str().to_owned()).collect(),
            decision_id: decision.decision_id.clone(),
            decision_digest: decision.decision_digest.clone(),
        }
    }
}

/// A break-glass override, as the audit log records it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OverrideFacts {
    /// The username of the review.
    pub by: String,
    /// The configured override group the user is a member of.
    pub group: String,
    /// The workload's `scale-units/override-reason` annotation, when given.
    pub reason: Option<String>,
    /// The workload's `scale-units/override-expires` annotation, when given.
    pub expires: Option<String>,
}

/// Why no decision was made.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ErrorFacts {
    /// A stable code (`replicas_out_of_bounds`, `evidence_unavailable`, …).
    pub code: String,
    /// What went wrong.
    pub message: String,
}

/// One line of the audit log (the module's table).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AuditRecord {
    /// RFC 3339 UTC, milliseconds.
    pub time: String,
    /// `evaluate`, `unit`, `admission` or `keda`.
    pub source: &'static str,
    /// `namespace/name`, or the contract's `unit_ref` for an evaluation.
    pub unit: Option<String>,
    /// Who asked.
    pub caller: Caller,
    /// The decision's action.
    pub action: Option<String>,
    /// The decision's `current_replicas`.
    pub current: Option<u64>,
    /// The decision's `desired_replicas`.
    pub desired: Option<u64>,
    /// The decision's reason codes.
    pub reasons: Vec<String>,
    /// The decision's id.
    pub decision_id: Option<String>,
    /// The decision's digest.
    pub decision_digest: Option<String>,
    /// The component that decided.
    pub component_digest: Option<String>,
    /// Admission: allowed or denied.
    pub allowed: Option<bool>,
    /// Admission: the override that allowed a denied change.
    #[serde(rename = "override")]
    pub overridden: Option<OverrideFacts>,
    /// Why no decision was made.
    pub error: Option<ErrorFacts>,
    /// What the source adds.
    pub detail: Value,
    /// KEDA: identical answers left out since this unit's previous line.
    pub repeated: u64,
}

impl AuditRecord {
    /// A record of `source` at the current time, with nothing else filled in.
    pub fn new(source: &'static str) -> Self {
        Self {
            time: now(),
            source,
            unit: None,
            caller: Caller::default(),
            action: None,
            current: None,
            desired: None,
            reasons: Vec::new(),
            decision_id: None,
            decision_digest: None,
            component_digest: None,
            allowed: None,
            overridden: None,
            error: None,
            detail: Value::Null,
            repeated: 0,
        }
    }

    /// Fills in a decision's facts.
    #[must_use]
    pub fn decision(mut self, facts: Option<DecisionFacts>) -> Self {
        if let Some(facts) = facts {
            self.action = Some(facts.action);
            self.current = Some(facts.current_replicas);
            self.desired = Some(facts.desired_replicas);
            self.reasons = facts.reasons;
            self.decision_id = Some(facts.decision_id);
            self.decision_digest = Some(facts.decision_digest);
        }
        self
    }

    /// What a KEDA line is compared on to be summarized: everything but the time, the decision's
    /// identity (which changes with the clock) and the caller's address.
    pub(super) fn summary_key(&self) -> String {
        serde_json::json!([
            self.action,
            self.current,
            self.desired,
            self.reasons,
            self.component_digest,
            self.error,
            self.detail
        ])
        .to_string()
    }
}

/// The current time, RFC 3339 UTC with milliseconds.
fn now() -> String {
    jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}
