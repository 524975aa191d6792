//! A unit's decision: the SPEC §6 request built from its contract, its stored evidence, the
//! service's clock and the time its cooldowns count from, evaluated by the component.

use std::sync::Arc;

use scale_units_core::{Decision, ErrorCode, EvaluationError};
use serde_json::Value;

use super::ledger::{Admission, Known, format_ms};
use super::{Observed, SeenChange, UnitDecision, UnitError, UnitKey, UnitVerdict, Units, evidence};
use crate::units::evidence::Stored;

/// Where the time a unit's cooldowns count from came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ActionSource {
    /// A change this service admitted and recorded.
    Admission,
    /// A change of the scale target's `spec.replicas` the Kubernetes watch saw (issue 37).
    Watch,
    /// The `last_action_at` a collector pushed (later than any recorded admission).
    Collector,
    /// The store cannot vouch for the unit before its epoch (a new state folder, a new process
    /// with the memory store, a Redis that lost its data): the cooldowns count from the epoch.
    Unknown,
    /// No action is known and none is assumed ([`UnitsBuilder::no_prior_actions`]).
    None,
}

impl ActionSource {
    /// The source's name in the service's JSON: `admission`, `collector`, `unknown` or `none`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Admission => "admission",
            Self::Watch => "watch",
            Self::Collector => "collector",
            Self::Unknown => "unknown",
            Self::None => "none",
        }
    }
}

/// The time a unit's cooldowns count from: the latest of its recorded admission, the collector's
/// pushed `last_action_at` and the store's epoch.
#[derive(Clone, Debug)]
pub struct LastAction {
    /// The time given to the evaluator as `last_action_at` (`None` only with
    /// [`ActionSource::None`]).
    pub at: Option<String>,
    /// Which of the three it is.
    pub source: ActionSource,
    /// The admission the cooldowns count from: the unit's last, or the one before it when the
    /// last was retracted.
    pub admission: Option<Admission>,
    /// The unit's last admission, when the API server's later word showed it never happened.
    pub retracted: Option<Admission>,
    /// The `last_action_at` the collector pushed, as pushed.
    pub pushed: Option<String>,
    /// From when the store vouches for every admission (`None`: no prior actions assumed); in
    /// Kubernetes mode, from when the watch vouches for every change of the target.
    pub known_since: Option<String>,
    /// The last change of the target the Kubernetes watch saw.
    pub seen: Option<SeenChange>,
}

impl LastAction {
    /// As the service's JSON.
    pub fn to_json(&self) -> Value {
        serde_json::json!({
            "at": self.at,
            "source": self.source.as_str(),
            "admission": self.admission,
            "retracted": self.retracted,
            "pushed": self.pushed,
            "known_since": self.known_since,
            "seen": self.seen.map(|seen| serde_json::json!({
                "at": format_ms(seen.at_ms), "from": seen.from, "to": seen.to,
            })),
        })
    }

    pub(crate) fn of(known: Known, pushed: Option<String>) -> Self {
        let pushed_ms = pushed
            .as_deref()
            .and_then(|text| serde_json::from_str::<String>(text).ok())
            .and_then(|text| text.parse::<jiff::Timestamp>().ok())
            .map(|time| time.as_millisecond());
        let pushed = pushed.and_then(|text| serde_json::from_str::<String>(&text).ok());
        // The epoch counts from its next whole second: never a shorter cooldown than the truth.
        let epoch_ms = known.epoch_ms.map(|ms| ms.saturating_add(999).div_euclid(1000).saturating_mul(1000));
        let mut best: (Option<i64>, ActionSource) = (None, ActionSource::None);
        for (at, source) in [
            (epoch_ms, ActionSource::Unknown),
            (pushed_ms, ActionSource::Collector),
            (known.last.as_ref().map(|admission| admission.at_ms), ActionSource::Admission),
        ] {
            if let Some(at) = at
                && best.0.is_none_or(|held| at >= held)
            {
                best = (Some(at), source);
            }
        }
        let at = match best.1 {
            ActionSource::Admission => known.last.as_ref().map(|admission| admission.at.clone()),
            ActionSource::Collector => pushed.clone(),
            ActionSource::Unknown => epoch_ms.map(format_ms),
            // Not among the three above: set by `watched` only.
            ActionSource::Watch | ActionSource::None => None,
        };
        Self {
            at,
            source: best.1,
            admission: known.last,
            retracted: known.retracted,
            pushed,
            known_since: known.epoch_ms.map(format_ms),
            seen: None,
        }
    }

    /// In Kubernetes mode: the latest of the change the watch saw last, the moment from which it
    /// vouches for every change (the epoch of this unit), an admission the ledger holds (the
    /// Envoy gate's) and the collector's pushed time.
    pub(crate) fn watched(observed: Option<&Observed>, known: Known, pushed: Option<String>, now_ms: i64) -> Self {
        // The watch has not seen the target yet: nothing is known before now.
        let known_since_ms = observed.map_or(now_ms, |observed| observed.known_since_ms);
        let seen = observed.and_then(|observed| observed.last_change);
        let mut action = Self::of(Known { epoch_ms: Some(known_since_ms), ..known }, pushed);
        if let Some(seen) = seen {
            // Counted from its next whole second: never a shorter cooldown than the truth.
            let seen_s = seen.at_ms.saturating_add(999).div_euclid(1000).saturating_mul(1000);
            let held_ms =
                action.at.as_deref().and_then(|at| at.parse::<jiff::Timestamp>().ok()).map(|at| at.as_millisecond());
            if held_ms.is_none_or(|held| seen_s >= held) {
                action.at = Some(format_ms(seen_s));
                action.source = ActionSource::Watch;
            }
        }
        action.seen = seen;
        action
    }
}

impl Units {
    /// [`Self::evaluate`], with the decision's JSON as the component wrote it and its provenance.
    ///
    /// # Errors
    /// As [`Self::evaluate`].
    pub async fn decide(&self, key: &UnitKey, current_replicas: Option<u64>) -> Result<UnitDecision, UnitError> {
        self.decide_reading(key, current_replicas, false).await
    }

    /// [`Self::decide`], with the stored evidence the decision was made on, as
    /// [`Self::evidence`] shows it, from the same read (`GET /v1/units/…`, a ScaleUnit's status).
    ///
    /// # Errors
    /// As [`Self::evaluate`].
    pub async fn decide_with_evidence(
        &self,
        key: &UnitKey,
        current_replicas: Option<u64>,
    ) -> Result<UnitDecision, UnitError> {
        self.decide_reading(key, current_replicas, true).await
    }

    /// The decision; the evidence's view (a second reading of every stored observation) only when
    /// asked: the gates' paths (webhook, Envoy, KEDA) never read it.
    async fn decide_reading(
        &self,
        key: &UnitKey,
        current_replicas: Option<u64>,
        with_evidence: bool,
    ) -> Result<UnitDecision, UnitError> {
        let Some(contract) = self.catalog.contract(key) else {
            return Ok(UnitDecision {
                verdict: UnitVerdict::NoContract,
                decision_json: None,
                provenance: None,
                last_action: None,
                evidence: None,
            });
        };
        let now_ms = self.now_ms();
        let stored = self.evidence.read_stored(key, &contract, now_ms).await?;
        let evidence = with_evidence.then(|| stored.view(now_ms));
        let Stored { signal, continuity, safety, replicas, last_action: pushed, capacities, quotas, admitted } = stored;
        let known = self.ledger.known(&key.to_string(), now_ms).await?;
        // In Kubernetes mode the API server's count, as the watch saw it, and the cooldowns from
        // the changes the watch saw; otherwise the collector's count (or an admitted one).
        let (last_action, current) = if self.kubernetes {
            let observed = self.observed(key);
            let last_action = LastAction::watched(observed.as_deref(), known, pushed, now_ms);
            let current = match current_replicas {
                Some(count) => count,
                None => self.observed_count(key)?,
            };
            (last_action, current)
        } else {
            let last_action = LastAction::of(known, pushed);
            let current = match current_replicas {
                Some(count) => count,
                None => evidence::standing_count(replicas.as_deref(), admitted.as_deref(), now_ms)
                    .and_then(|value| value.get("count").and_then(Value::as_u64))
                    .ok_or_else(|| UnitError::UnknownReplicas(key.clone()))?,
            };
            (last_action, current)
        };
        // The request is built from values, never by splicing the stored texts (issue 19): each
        // stored observation must read as one JSON object, a capacity must name its axis and a quota
        // its reference, else it counts as missing (logged), so a value written straight into the
        // store can change no other field of the request.
        let slot = |text: Option<String>, what: &str, field: Option<(&str, &str)>| -> Option<Value> {
            let text = text?;
            let value = match serde_json::from_str::<Value>(&text) {
                Ok(value @ Value::Object(_)) => value,
                Ok(_) | Err(_) => {
                    tracing::warn!(unit = %key, what, "a stored observation is not one JSON object: taken as missing");
                    return None;
                }
            };
            if let Some((field, name)) = field
                && value.get(field).and_then(Value::as_str) != Some(name)
            {
                tracing::warn!(unit = %key, what, field, "a stored observation names another one: taken as missing");
                return None;
            }
            Some(value)
        };
        let capacities: Vec<Value> = contract
            .axes
            .iter()
            .zip(capacities)
            .filter_map(|(axis, text)| slot(text, "capacity", Some(("axis", axis.as_str()))))
            .collect();
        let quotas: Vec<Value> = contract
            .quota_refs
            .iter()
            .zip(quotas)
            .filter_map(|(quota, text)| slot(text, "quota", Some(("quota_ref", quota.as_str()))))
            .collect();
        // The contract's text is spliced as it is: it is the compact JSON this service wrote of
        // the value the component accepted (never a stored text of anyone else's); every other
        // field is a value written out here. Not parsing the contract again on every decision is
        // most of what building the request costs (issue 40's profile). Keys in the order a
        // serde_json map writes them.
        let value = |value: Value| value.to_string();
        let fields: [(&str, String); 9] = [
            ("capacities", value(Value::Array(capacities))),
            ("continuity", value(slot(continuity, "continuity", None).unwrap_or(Value::Null))),
            ("contract", contract.text.clone()),
            ("current_replicas", current.to_string()),
            ("last_action_at", value(last_action.at.clone().map_or(Value::Null, Value::String))),
            ("now", value(Value::String(self.now()))),
            ("quotas", value(Value::Array(quotas))),
            ("safety", value(slot(safety, "safety", None).unwrap_or(Value::Null))),
            ("signal", value(slot(signal, "signal", None).unwrap_or(Value::Null))),
        ];
        let mut request = String::with_capacity(fields.iter().map(|(_, text)| text.len().saturating_add(24)).sum());
        for (index, (name, text)) in fields.iter().enumerate() {
            request.push_str(if index == 0 { "{\"" } else { ",\"" });
            request.push_str(name);
            request.push_str("\":");
            request.push_str(text);
        }
        request.push('}');
        let registry = Arc::clone(&self.catalog.registry);
        let served = match self.catalog.workers.run(move || registry.evaluate_json(&request)).await {
            Ok(Ok(Ok(served))) => served,
            Ok(Ok(Err(error))) => return Err(UnitError::Evaluation(error)),
            Ok(Err(error)) => return Err(UnitError::Policy(error)),
            Err(error) => return Err(UnitError::Store(format!("the evaluation task failed: {error}"))),
        };
        let decision: Decision = serde_json::from_str(&served.evaluated.decision).map_err(|error| {
            UnitError::Evaluation(EvaluationError::new(
                ErrorCode::InvalidJson,
                format!("the component's decision cannot be read: {error}"),
                "",
            ))
        })?;
        Ok(UnitDecision {
            verdict: UnitVerdict::Decided { decision, current_replicas: current },
            decision_json: Some(served.evaluated.decision),
            provenance: Some(served.evaluated.provenance),
            last_action: Some(last_action),
            evidence,
        })
    }
}
