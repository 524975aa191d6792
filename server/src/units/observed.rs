//! What the Kubernetes watch saw of each unit's scale target (issue 37): the API server's
//! `spec.replicas`, and when the watch saw it change. In Kubernetes mode
//! ([`UnitsBuilder::kubernetes`](super::UnitsBuilder::kubernetes)) this is the unit's replica
//! count in every decision, unit read and KEDA answer, and the time its cooldowns count from;
//! reviews and collected counts carry no authority over it.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use super::ledger::format_ms;
use super::{UnitError, UnitKey, Units};

/// A change of the target's `spec.replicas` the watch saw, whoever made it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeenChange {
    /// When the watch saw it, in milliseconds since the Unix epoch.
    pub at_ms: i64,
    /// The count before.
    pub from: u64,
    /// The count after.
    pub to: u64,
}

/// What the watch knows of a unit's scale target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observed {
    /// The target's `spec.replicas` as the API server holds it (`None`: the target is not found,
    /// or the watch is not in step with the API server: no decision then).
    pub count: Option<u64>,
    /// The target's `metadata.generation` when it was seen.
    pub generation: Option<i64>,
    /// From when every change of the target's `spec.replicas` is known (the first sight of the
    /// target by a watch, this one or one before it that kept its status): the cooldowns count
    /// from it at the latest.
    pub known_since_ms: i64,
    /// The last change seen since `known_since_ms`.
    pub last_change: Option<SeenChange>,
}

impl Observed {
    /// As the service's JSON (`GET /v1/units/…`'s `observed`).
    pub fn to_json(&self) -> Value {
        serde_json::json!({
            "count": self.count,
            "generation": self.generation,
            "known_since": format_ms(self.known_since_ms),
            "last_change": self.last_change.map(|change| serde_json::json!({
                "at": format_ms(change.at_ms), "from": change.from, "to": change.to,
            })),
        })
    }
}

/// Each unit's observed target, swapped whole by the watch.
pub(crate) type ObservedMap = BTreeMap<UnitKey, Arc<Observed>>;

impl Units {
    /// Whether the units' replica counts and cooldowns come from the Kubernetes watch.
    pub fn is_kubernetes(&self) -> bool {
        self.kubernetes
    }

    /// What the watch knows of the unit's target (`None`: nothing yet, or not in Kubernetes
    /// mode).
    pub fn observed(&self, key: &UnitKey) -> Option<Arc<Observed>> {
        self.observed.load().get(key).cloned()
    }

    /// Sets what the watch knows of the unit's target.
    pub fn set_observed(&self, key: &UnitKey, observed: Observed) {
        let observed = Arc::new(observed);
        self.observed.rcu(|map| {
            let mut map = ObservedMap::clone(map);
            map.insert(key.clone(), Arc::clone(&observed));
            map
        });
    }

    /// Forgets what the watch knew of the unit's target (the unit went).
    pub fn forget_observed(&self, key: &UnitKey) {
        self.observed.rcu(|map| {
            let mut map = ObservedMap::clone(map);
            map.remove(key);
            map
        });
    }

    /// The replica count a decision stands on in Kubernetes mode: the watch's.
    pub(crate) fn observed_count(&self, key: &UnitKey) -> Result<u64, UnitError> {
        self.observed(key).and_then(|observed| observed.count).ok_or_else(|| UnitError::UnknownReplicas(key.clone()))
    }
}
