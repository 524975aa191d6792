//! The evidence store: each unit's observations, one store key per observation expiring with
//! it (in this process or in Redis), written by pushes and collectors and read in one round trip
//! for a decision; and the replica count a decision stands on.

use std::time::Duration;

use scale_units_core::{ErrorCode, EvaluationError};
use serde_json::{Map, Value};

use super::catalog::Contract;
use super::store::{Fence, Store, Write};
use super::{Clock, UnitError, UnitKey, timestamp};

/// How long an observation is kept at most, whatever its `expires_at`: a day.
const MAX_OBSERVATION_KEEP_MS: i64 = 24 * 3600 * 1000;

/// The store key of the count the webhook admitted for `key`. Not `…:admitted`: with Redis that
/// key is the ledger's record of the unit's last admission (`ledger`), which must outlive the
/// admitted count and must not be replaced by it.
fn admitted_slot(key: &UnitKey) -> String {
    format!("{}admitted-count", key.store_prefix())
}

/// The observations of every unit.
pub(crate) struct Evidence {
    pub(crate) store: Store,
    clock: Clock,
    /// The default max age of a pushed or admitted replica count.
    pub(crate) replicas_max_age: Duration,
}

impl Evidence {
    pub(crate) fn new(store: Store, clock: Clock, replicas_max_age: Duration) -> Self {
        Self { store, clock, replicas_max_age }
    }

    fn now_ms(&self) -> i64 {
        timestamp((self.clock)()).as_millisecond()
    }

    /// A replica count observed now, expiring after the unit's replicas max age.
    pub(crate) fn replicas_now(&self, count: u64, source_ref: &str, max_age_s: u64) -> (Value, i64) {
        let observed = timestamp((self.clock)());
        let max_age = i64::try_from(max_age_s).unwrap_or(i64::MAX);
        let expires = jiff::Timestamp::from_second(observed.as_second().saturating_add(max_age)).unwrap_or(observed);
        let text = |at: jiff::Timestamp| at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
        let value = serde_json::json!({
            "count": count,
            "observed_at": text(observed),
            "expires_at": text(expires),
            "source_ref": source_ref,
        });
        (value, expires.as_millisecond())
    }

    /// Stores a collected replica count (`{"count", "observed_at", "expires_at", "source_ref",
    /// …}`) until its `expires_at`, unless the stored count was observed later, or is a count
    /// the webhook admitted that this one does not confirm (the workload and the metrics lag
    /// behind an admitted change): returns the count that stands, and whether it is a kept
    /// admitted count that this one confirms.
    ///
    /// # Errors
    /// [`UnitError::UnknownUnit`] without a contract, [`UnitError::InvalidObservations`] for a
    /// count above 10 000 or unreadable times, [`UnitError::Store`].
    pub(crate) async fn put_replicas(
        &self,
        key: &UnitKey,
        evidence: Value,
        fence: Option<&Fence>,
    ) -> Result<(Value, bool), UnitError> {
        let invalid = |message: &str| {
            UnitError::InvalidObservations(EvaluationError::new(
                ErrorCode::InvalidField,
                message.to_owned(),
                "replicas",
            ))
        };
        let time = |value: &Value, field: &str| {
            value.get(field).and_then(Value::as_str).and_then(|text| text.parse::<jiff::Timestamp>().ok())
        };
        if evidence
            .get("count")
            .and_then(Value::as_u64)
            .is_none_or(|count| count > scale_units_core::LIMITS.max_replicas)
        {
            return Err(invalid("the replica count must be 0..=10000"));
        }
        let observed = time(&evidence, "observed_at").ok_or_else(|| invalid("observed_at cannot be read"))?;
        let expires = time(&evidence, "expires_at").ok_or_else(|| invalid("expires_at cannot be read"))?;
        let slot = format!("{}replicas", key.store_prefix());
        let slots = [slot.clone(), admitted_slot(key)];
        let stored = self.store.read(&slots, self.now_ms()).await?;
        let mut stored = stored.into_iter().map(|text| text.and_then(|text| serde_json::from_str::<Value>(&text).ok()));
        let (current, admitted) = (stored.next().flatten(), stored.next().flatten());
        // A count the webhook admitted overrules reads that contradict it for the contract's
        // cooldown (the workload and its metrics lag behind the change): nothing is stored, and
        // once the admitted count's own evidence expires there is no count at all.
        let confirms = match admitted {
            Some(admitted) if admitted.get("count") != evidence.get("count") => return Ok((admitted, false)),
            Some(_) => true,
            None => false,
        };
        // A count observed later than this one stands.
        if let Some(current) = current
            && time(&current, "observed_at").is_some_and(|at| at > observed)
        {
            return Ok((current, confirms));
        }
        let write =
            Write { key: slot, value: Some(evidence.to_string()), expires_at_ms: Some(expires.as_millisecond()) };
        self.store.write(vec![write], self.now_ms(), fence).await?;
        Ok((evidence, confirms))
    }

    /// The count the webhook admitted for the unit, while it is kept.
    ///
    /// # Errors
    /// [`UnitError::Store`] when the store cannot be read.
    pub(crate) async fn admitted_count(&self, key: &UnitKey) -> Result<Option<u64>, UnitError> {
        let text = self.store.read(&[admitted_slot(key)], self.now_ms()).await?.into_iter().flatten().next();
        Ok(text
            .and_then(|text| serde_json::from_str::<Value>(&text).ok())
            .and_then(|value| value.get("count").and_then(Value::as_u64)))
    }

    /// Records that the webhook admitted `count` replicas now: the unit's count at once
    /// (observed now, expiring after the unit's replicas max age), and for the longer of the
    /// contract's cooldowns no collected count that contradicts it is stored
    /// ([`Self::put_replicas`]), so that no decision, KEDA's included, goes back to the old count.
    ///
    /// # Errors
    /// [`UnitError::Store`] when the store cannot be written.
    pub(crate) async fn record_admitted_count(
        &self,
        key: &UnitKey,
        count: u64,
        cooldown_s: u64,
        max_age_s: u64,
    ) -> Result<(), UnitError> {
        let (value, expires_at_ms) =
            self.replicas_now(count, &format!("admission:{}/{}", key.namespace, key.name), max_age_s);
        let overrules_ms = i64::try_from(cooldown_s.saturating_mul(1000)).unwrap_or(i64::MAX);
        let writes = vec![
            Write {
                key: format!("{}replicas", key.store_prefix()),
                value: Some(value.to_string()),
                expires_at_ms: Some(expires_at_ms),
            },
            Write {
                key: admitted_slot(key),
                value: Some(value.to_string()),
                expires_at_ms: Some(expires_at_ms.max(self.now_ms().saturating_add(overrules_ms))),
            },
        ];
        self.store.write(writes, self.now_ms(), None).await
    }

    /// One read of everything the unit's decision depends on (a single store round trip), so
    /// that a decision and the evidence shown beside it are the same observations.
    pub(crate) async fn read_stored(
        &self,
        key: &UnitKey,
        contract: &Contract,
        now_ms: i64,
    ) -> Result<Stored, UnitError> {
        let prefix = key.store_prefix();
        let mut keys: Vec<String> = ["signal", "continuity", "safety", "replicas", "last_action"]
            .iter()
            .map(|slot| format!("{prefix}{slot}"))
            .collect();
        keys.extend(contract.axes.iter().map(|axis| format!("{prefix}capacity:{axis}")));
        keys.extend(contract.quota_refs.iter().map(|quota| format!("{prefix}quota:{quota}")));
        keys.push(admitted_slot(key));
        let mut values = self.store.read(&keys, now_ms).await?.into_iter();
        let mut next = || values.next().flatten();
        let (signal, continuity, safety, replicas, last_action) = (next(), next(), next(), next(), next());
        let capacities = contract.axes.iter().map(|_| next()).collect();
        let quotas = contract.quota_refs.iter().map(|_| next()).collect();
        let admitted = next();
        Ok(Stored { signal, continuity, safety, replicas, last_action, capacities, quotas, admitted })
    }

    /// Writes the observations of a push the component accepted (see
    /// [`Units::put_observations`](super::Units::put_observations)).
    pub(crate) async fn write_push(
        &self,
        key: &UnitKey,
        contract: &Contract,
        push: &Map<String, Value>,
        replicas: Option<u64>,
        replicas_max_age_s: u64,
        fence: Option<&Fence>,
    ) -> Result<(usize, usize), UnitError> {
        let invalid = |code, message: String, path: &str| {
            UnitError::InvalidObservations(EvaluationError::new(code, message, path.to_owned()))
        };
        let prefix = key.store_prefix();
        let mut writes = Vec::new();
        let (mut written, mut forgotten) = (0, 0);
        // However far its `expires_at`, an observation is kept at most a day (issue 19): past it,
        // it is missing and the unit blocks until the collector pushes again.
        let horizon_ms = self.now_ms().saturating_add(MAX_OBSERVATION_KEEP_MS);
        let mut put = |slot: String, value: &Value| -> Result<(), UnitError> {
            if value.is_null() {
                forgotten += 1;
                writes.push(Write { key: format!("{prefix}{slot}"), value: None, expires_at_ms: None });
                return Ok(());
            }
            let expires_at = value
                .get("expires_at")
                .and_then(Value::as_str)
                .and_then(|text| text.parse::<jiff::Timestamp>().ok())
                .ok_or_else(|| invalid(ErrorCode::InvalidTime, "expires_at cannot be read".to_owned(), &slot))?;
            written += 1;
            writes.push(Write {
                key: format!("{prefix}{slot}"),
                value: Some(value.to_string()),
                expires_at_ms: Some(expires_at.as_millisecond().min(horizon_ms)),
            });
            Ok(())
        };
        for kind in ["signal", "continuity", "safety"] {
            if let Some(value) = push.get(kind) {
                put(kind.to_owned(), value)?;
            }
        }
        for (list, field, slot, named) in
            [("capacities", "axis", "capacity", &contract.axes), ("quotas", "quota_ref", "quota", &contract.quota_refs)]
        {
            for value in push.get(list).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default() {
                let name = value.get(field).and_then(Value::as_str).unwrap_or_default();
                // Only what the contract reads is stored: an axis or quota it does not name would
                // only take room (issue 19).
                if !named.iter().any(|known| known == name) {
                    continue;
                }
                put(format!("{slot}:{name}"), value)?;
            }
        }
        // A pushed count is evidence like any other: it expires after the unit's replicas max age.
        // A count the webhook admitted overrules a push that contradicts it (as it does the
        // collectors' reads, [`Self::put_replicas`]): the pusher has not seen the change yet.
        let admitted = match replicas {
            Some(_) => self.admitted_count(key).await?,
            None => None,
        };
        if let Some(count) = replicas.filter(|count| admitted.is_none_or(|admitted| admitted == *count)) {
            let (value, expires_at_ms) = self.replicas_now(count, "push", replicas_max_age_s);
            writes.push(Write {
                key: format!("{prefix}replicas"),
                value: Some(value.to_string()),
                expires_at_ms: Some(expires_at_ms),
            });
        }
        // Checked by the component above as the request's `last_action_at` (a time or null).
        match push.get("last_action_at") {
            None => {}
            Some(Value::Null) => {
                forgotten += 1;
                writes.push(Write { key: format!("{prefix}last_action"), value: None, expires_at_ms: None });
            }
            Some(value) => {
                written += 1;
                writes.push(Write {
                    key: format!("{prefix}last_action"),
                    value: Some(value.to_string()),
                    expires_at_ms: None,
                });
            }
        }
        self.store.write(writes, self.now_ms(), fence).await?;
        Ok((written, forgotten))
    }
}

/// The replica count a decision stands on, from the stored count and the count the webhook
/// admitted (kept for the contract's cooldown): each counts only while fresh by this replica's
/// clock (`observed_at <= now < expires_at`, as the evaluator reads every observation), whatever
/// the store's own expiry (another replica's clock wrote it); and while an admitted count is
/// kept, a stored count that contradicts it does not stand ([`Units::put_replicas`] refuses to
/// store one, but a collector that read before the admission may write after it: checked here,
/// where no race can pass it).
/// The stored texts a unit's decision reads, in one snapshot.
pub(crate) struct Stored {
    pub(crate) signal: Option<String>,
    pub(crate) continuity: Option<String>,
    pub(crate) safety: Option<String>,
    pub(crate) replicas: Option<String>,
    pub(crate) last_action: Option<String>,
    pub(crate) capacities: Vec<Option<String>>,
    pub(crate) quotas: Vec<Option<String>>,
    pub(crate) admitted: Option<String>,
}

impl Stored {
    /// The evidence as the unit routes show it: each observation with its age in seconds
    /// (`null` or `[]` for what is missing or expired).
    pub(crate) fn view(&self, now_ms: i64) -> Value {
        let aged = |value: Option<Value>| -> Value {
            let Some(mut value) = value else { return Value::Null };
            let observed =
                value.get("observed_at").and_then(Value::as_str).and_then(|at| at.parse::<jiff::Timestamp>().ok());
            if let (Some(observed), Some(object)) = (observed, value.as_object_mut()) {
                object.insert("age_s".to_owned(), Value::from((now_ms - observed.as_millisecond()).div_euclid(1000)));
            }
            value
        };
        let parsed = |text: &Option<String>| aged(text.as_deref().and_then(|text| serde_json::from_str(text).ok()));
        let replicas = aged(standing_count(self.replicas.as_deref(), self.admitted.as_deref(), now_ms));
        let present = |texts: &[Option<String>]| -> Vec<Value> {
            texts.iter().map(parsed).filter(|value| !value.is_null()).collect()
        };
        serde_json::json!({
            "replicas": replicas,
            "signal": parsed(&self.signal),
            "capacities": present(&self.capacities),
            "quotas": present(&self.quotas),
            "continuity": parsed(&self.continuity),
            "safety": parsed(&self.safety),
            "last_action_at": parsed(&self.last_action),
        })
    }
}

pub(crate) fn standing_count(replicas: Option<&str>, admitted: Option<&str>, now_ms: i64) -> Option<Value> {
    let parse = |text: Option<&str>| text.and_then(|text| serde_json::from_str::<Value>(text).ok());
    let fresh = |value: &Value| {
        let time = |field: &str| {
            value
                .get(field)
                .and_then(Value::as_str)
                .and_then(|text| text.parse::<jiff::Timestamp>().ok())
                .map(jiff::Timestamp::as_millisecond)
        };
        matches!((time("observed_at"), time("expires_at")), (Some(observed), Some(expires)) if observed <= now_ms && now_ms < expires)
    };
    let (replicas, admitted) = (parse(replicas), parse(admitted));
    match admitted {
        Some(admitted) if replicas.as_ref().and_then(|value| value.get("count")) != admitted.get("count") => {
            fresh(&admitted).then_some(admitted)
        }
        Some(admitted) => replicas.filter(fresh).or_else(|| fresh(&admitted).then_some(admitted)),
        None => replicas.filter(fresh),
    }
}
