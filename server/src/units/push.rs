//! Observations pushed to the service (`PUT /v1/units/{namespace}/{name}/observations`) or
//! stored by a collector: checked by the component, then written to the evidence store.

use std::sync::Arc;

use scale_units_core::{ErrorCode, EvaluationError};
use scale_units_host::{HostError, RegistryError};
use serde_json::{Map, Value};

use super::{Fence, UnitError, UnitKey, Units};

/// The fields of an observations push.
const PUSH_FIELDS: [&str; 7] =
    ["signal", "capacities", "quotas", "continuity", "safety", "current_replicas", "last_action_at"];

impl Units {
    /// Stores the observations of a collector's push (a JSON object with any of `signal`,
    /// `capacities`, `quotas`, `continuity`, `safety`, `current_replicas` and `last_action_at`,
    /// the time of the workload's last scale action, for the contract's cooldowns: it can only make
    /// a cooldown later, never earlier than a recorded admission or the store's epoch, and `null`
    /// forgets only the collector's own time). Each
    /// observation is checked by the active policy before anything is stored; it expires at its
    /// `expires_at`. `current_replicas` expires after the unit's replicas max age, and is not
    /// stored while it contradicts a count the webhook admitted within the contract's cooldown.
    /// Returns how many observations were written and how many forgotten (`null`).
    ///
    /// # Errors
    /// [`UnitError::UnknownUnit`] without a contract, [`UnitError::InvalidObservations`] for a body
    /// that is not such an object or an observation the evaluator refuses (nothing is stored),
    /// [`UnitError::Policy`], [`UnitError::Store`].
    pub async fn put_observations(&self, key: &UnitKey, body: &str) -> Result<(usize, usize), UnitError> {
        self.put_observations_fenced(key, body, None).await
    }

    /// [`Self::put_observations`] by a collector under a lease: written only while the lease
    /// holds the fence's value, else nothing is ([`UnitError::Fenced`]).
    ///
    /// # Errors
    /// As [`Self::put_observations`], and [`UnitError::Fenced`].
    pub async fn put_observations_fenced(
        &self,
        key: &UnitKey,
        body: &str,
        fence: Option<&Fence>,
    ) -> Result<(usize, usize), UnitError> {
        let contract = self.catalog.contract(key).ok_or_else(|| UnitError::UnknownUnit(key.clone()))?;
        let invalid = |code, message: String, path: &str| {
            UnitError::InvalidObservations(EvaluationError::new(code, message, path.to_owned()))
        };
        if let Err(error) = crate::strict::check(body.as_bytes()) {
            return Err(invalid(ErrorCode::InvalidJson, error.to_string(), ""));
        }
        let push: Map<String, Value> = match serde_json::from_str::<Value>(body) {
            Ok(Value::Object(map)) => map,
            Ok(_) => return Err(invalid(ErrorCode::InvalidField, "the push must be a JSON object".to_owned(), "")),
            Err(error) => return Err(invalid(ErrorCode::InvalidJson, error.to_string(), "")),
        };
        if let Some(field) = push.keys().find(|field| !PUSH_FIELDS.contains(&field.as_str())) {
            return Err(invalid(ErrorCode::InvalidField, format!("unknown field {field}"), field));
        }
        let replicas = match push.get("current_replicas") {
            None => None,
            Some(value) => match value.as_u64() {
                Some(count) if count <= scale_units_core::LIMITS.max_replicas => Some(count),
                Some(_) => {
                    return Err(invalid(
                        ErrorCode::ReplicasOutOfBounds,
                        "current_replicas is outside bounds".to_owned(),
                        "current_replicas",
                    ));
                }
                None => {
                    return Err(invalid(
                        ErrorCode::InvalidField,
                        "current_replicas must be a non-negative integer".to_owned(),
                        "current_replicas",
                    ));
                }
            },
        };

        // The component checks the contract and every observation (SPEC §5, duplicates of §6)
        // without deciding (WIT 0.3.0 `validate-observations-json`); a component of an earlier WIT
        // checks them by evaluating the request at the contract's floor, nothing of the decision used.
        let mut request = Map::new();
        let contract_value: Value = serde_json::from_str(&contract.text)
            .map_err(|error| invalid(ErrorCode::InvalidJson, error.to_string(), "contract"))?;
        request.insert("contract".to_owned(), contract_value);
        request.insert("current_replicas".to_owned(), Value::from(contract.min_replicas));
        request.insert("now".to_owned(), Value::String(self.now()));
        for field in ["signal", "capacities", "quotas", "continuity", "safety", "last_action_at"] {
            if let Some(value) = push.get(field) {
                request.insert(field.to_owned(), value.clone());
            }
        }
        let request = Value::Object(request).to_string();
        let registry = Arc::clone(&self.catalog.registry);
        let check = move || match registry.active() {
            Some(active) => match active.policy.validate_observations_json(&request) {
                Err(HostError::Unsupported { .. }) => registry.evaluate_json(&request).map(|outcome| outcome.map(drop)),
                checked => checked.map_err(RegistryError::Host),
            },
            None => registry.evaluate_json(&request).map(|outcome| outcome.map(drop)),
        };
        match self.catalog.workers.run(check).await {
            Ok(Ok(Ok(()))) => {}
            Ok(Ok(Err(error))) => return Err(UnitError::InvalidObservations(error)),
            Ok(Err(error)) => return Err(UnitError::Policy(error)),
            Err(error) => return Err(UnitError::Store(format!("the validation task failed: {error}"))),
        }

        self.evidence.write_push(key, &contract, &push, replicas, self.replicas_max_age_s(key), fence).await
    }
}
