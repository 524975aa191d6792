//! The evidence collectors: each unit's sources file ([`sources`]) read into SPEC §5
//! observations and stored in the unit registry ([`Units`]), as a push would be.
//!
//! - `prometheus`: an instant query answering exactly one sample, dated by the sample's own time
//!   (`timestamp()` of the query, [`prometheus::query_dated`]; never later than the collector's
//!   clock, floored to the second): that is `observed_at`, and a sample older than `max_age_s`
//!   is refused (`stale`).
//! - `redis`: `LLEN`, `XLEN`, `ZCARD`, `SCARD`, `GET`, `HGET`; `observed_at` is the read time.
//! - `static`: a configured value, combined with observed fields in one observation.
//! - safety: the firing alerts (`ALERTS{alertstate="firing"}`) among the named ones; the first
//!   by name is the `reason_ref` (`alert:<name>`).
//!
//! An observation combining several fields is as old as its oldest field; `expires_at` is
//! `observed_at + max_age_s`. Floats become the SPEC's integers by `scale` and a rounding in the
//! conservative direction unless the field says otherwise: up for what is consumed or demanded
//! (signal values, `reserved`, `used`, sessions, streams), down for what is available
//! (`allocatable`, a quota's `limit`); the replica count must be an exact integer.
//!
//! Fail closed: a query error, a timeout, an empty answer, more than one series, NaN, ±Inf, a
//! negative value, a value past the SPEC bound (10^15), a Redis error, or an observation the
//! evaluator refuses writes nothing for that observation — the stored one expires at its own
//! `expires_at` and the evaluator then blocks with its reason. Never a zero, never the last value
//! kept alive. Each refusal is counted by unit, source and cause ([`Stats`], `/metrics`) and
//! logged. `source_ref` names the unit, the observation and the servers by their names in the
//! file (never a URL); `source_digest` is the sha256 of the queries and the exact answers the
//! observation was built from.
//!
//! Several replicas of the service (with `--redis`) share the units: each shard of units is
//! collected by one replica at a time under a lease whose fencing token every write checks
//! ([`lease`]); a replica that stops loses its leases within the interval and the others take its
//! shards. Decisions read whatever evidence is fresh, whichever replica wrote it (the replica
//! count included: it stands only while fresh by the deciding replica's clock, and never against
//! a count the webhook admitted, [`Units::put_replicas`]).
//!
//! A field may read a shared query ([`sources::SeriesOf`]): one query for many units, run once
//! per round ([`shared`]), each unit given its own series.

pub mod lease;
pub(crate) mod prometheus;
mod redis;
mod round;
mod shared;
pub use crate::sources;

/// The collection counters (kept by the unit registry, [`Units::collect_stats`]).
pub use crate::units::EvidenceStats as Stats;

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::sources::{Flag, Number, PrometheusQuery, Round, Sources};
use crate::units::{Fence, UnitError, UnitKey, Units};

/// How many units [`Collector::run`] collects at once.
pub const CONCURRENT_UNITS: usize = 8;

/// Why a source's read wrote nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// A stable cause (`query_error`, `timeout`, `empty_result`, `several_series`, `nan`,
    /// `infinite`, `negative`, `past_bound`, `not_integer`, `not_a_number`, `bad_answer`,
    /// `undated`, `redis_error`, `missing_key`, `stale`, `refused`, `store_error`, `no_contract`, and for the
    /// replica count `unconfirmed`: a read contradicting a count the webhook admitted).
    pub cause: &'static str,
    /// What happened, for the log (no credentials).
    pub message: String,
}

impl Refusal {
    pub(crate) fn new(cause: &'static str, message: impl Into<String>) -> Self {
        Self { cause, message: message.into() }
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.cause, self.message)
    }
}

/// One observation's outcome in a collection.
#[derive(Clone, Debug)]
pub struct Collected {
    /// The observation: `replicas`, `signal`, `capacity.<axis>`, `quota.<quota_ref>`,
    /// `continuity` or `safety`.
    pub source: String,
    /// The observation stored (for `replicas`: `{"count", "observed_at", "expires_at",
    /// "source_ref"}`), or why nothing was.
    pub result: Result<Value, Refusal>,
    /// The shared queries that fed it (`prometheus.<server>: <query> [<label>=<value>]`).
    pub shared: Vec<String>,
}

/// Reads every unit's sources and stores the observations. `Send + Sync`: share it in an `Arc`.
pub struct Collector {
    units: Arc<Units>,
    redis: redis::RedisPool,
    /// Units collected at once by [`Self::run`]: a round of many units is spread out instead of
    /// sending every query at the same instant.
    permits: Arc<tokio::sync::Semaphore>,
    /// When each unit is next due, in milliseconds of the registry's clock.
    due: Mutex<HashMap<UnitKey, i64>>,
    /// Shared queries' answers, each asked once per round.
    shared: shared::SharedQueries,
    /// Units being collected now (a unit due again before it finished is skipped, counted).
    inflight: Mutex<std::collections::HashSet<UnitKey>>,
}

impl std::fmt::Debug for Collector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Collector").field("units", &self.units).finish_non_exhaustive()
    }
}

/// One field's reading.
struct Field {
    value: i128,
    /// When it was observed (milliseconds); `None` for a static value.
    at_ms: Option<i64>,
    /// `kind.server` (or `static`), for `source_ref`.
    origin: String,
    /// What it was read from and what was answered: origin, query, exact answer (the digest's input).
    read: (String, String, Vec<u8>),
}

impl Field {
    fn fixed(value: i128) -> Self {
        Self {
            value,
            at_ms: None,
            origin: "static".to_owned(),
            read: ("static".to_owned(), String::new(), value.to_string().into_bytes()),
        }
    }
}

impl Collector {
    /// A collector storing into `units` (whose folder holds the sources files).
    pub fn new(units: Arc<Units>) -> Self {
        Self {
            units,
            redis: redis::RedisPool::default(),
            permits: Arc::new(tokio::sync::Semaphore::new(CONCURRENT_UNITS)),
            due: Mutex::new(HashMap::new()),
            shared: shared::SharedQueries::default(),
            inflight: Mutex::new(std::collections::HashSet::new()),
        }
    }

    /// Collects one unit now: every observation of its sources, each stored or refused
    /// (counted and logged). `None` when the unit has no sources file.
    pub async fn collect(&self, key: &UnitKey) -> Option<Vec<Collected>> {
        self.collect_fenced(key, None).await
    }

    /// [`Self::collect`] under a lease: every write is refused (`fenced`) once the lease no
    /// longer holds the fence's value.
    pub async fn collect_fenced(&self, key: &UnitKey, fence: Option<&Fence>) -> Option<Vec<Collected>> {
        let sources = self.units.sources(key)?;
        let mut results = Vec::new();
        if let Some(replicas) = &sources.replicas {
            let result = self.replicas(key, &sources, replicas, fence).await;
            results.push(Collected { source: "replicas".to_owned(), result, shared: Vec::new() });
        }
        if let Some(signal) = &sources.signal {
            let result = async {
                let value = self.number(&sources, &signal.value, Round::Ceil, false).await?;
                let fields = [("value", value)];
                let mut observation = self.observation(key, "signal", &fields, signal.max_age_s)?;
                observation.insert("signal".to_owned(), json!(signal.signal.as_str()));
                Ok(json!({"signal": observation}))
            }
            .await;
            results.push(Collected { source: "signal".to_owned(), result, shared: Vec::new() });
        }
        for capacity in &sources.capacities {
            let source = format!("capacity.{}", capacity.axis.as_str());
            let result = async {
                let fields = [
                    ("allocatable", self.number(&sources, &capacity.allocatable, Round::Floor, false).await?),
                    ("reserved", self.number(&sources, &capacity.reserved, Round::Ceil, false).await?),
                    ("used", self.number(&sources, &capacity.used, Round::Ceil, false).await?),
                ];
                let mut observation = self.observation(key, &source, &fields, capacity.max_age_s)?;
                observation.insert("axis".to_owned(), json!(capacity.axis.as_str()));
                Ok(json!({"capacities": [observation]}))
            }
            .await;
            results.push(Collected { source, result, shared: Vec::new() });
        }
        for quota in &sources.quotas {
            let source = format!("quota.{}", quota.quota_ref);
            let result = async {
                let fields = [
                    ("limit", self.number(&sources, &quota.limit, Round::Floor, false).await?),
                    ("used", self.number(&sources, &quota.used, Round::Ceil, false).await?),
                ];
                let mut observation = self.observation(key, &source, &fields, quota.max_age_s)?;
                observation.insert("quota_ref".to_owned(), json!(quota.quota_ref));
                observation.insert("scope".to_owned(), json!(quota.scope.as_str()));
                Ok(json!({"quotas": [observation]}))
            }
            .await;
            results.push(Collected { source, result, shared: Vec::new() });
        }
        if let Some(continuity) = &sources.continuity {
            let result = async {
                let ready = match &continuity.ready {
                    Flag::Static(ready) => Field::fixed(i128::from(*ready)),
                    Flag::Prometheus(query) => {
                        let field = self.prometheus(&sources, query, Round::Floor, true).await?;
                        if field.value > 1 {
                            return Err(Refusal::new("past_bound", "ready must read 0 or 1"));
                        }
                        field
                    }
                };
                let fields = [
                    ("active_sessions", self.number(&sources, &continuity.active_sessions, Round::Ceil, false).await?),
                    ("active_streams", self.number(&sources, &continuity.active_streams, Round::Ceil, false).await?),
                ];
                let ready_value = ready.value == 1;
                let mut all: Vec<(&str, Field)> = fields.into_iter().collect();
                all.push(("ready", ready));
                let mut observation = self.observation(key, "continuity", &all, continuity.max_age_s)?;
                observation.insert("ready".to_owned(), json!(ready_value));
                Ok(json!({"continuity": observation}))
            }
            .await;
            results.push(Collected { source: "continuity".to_owned(), result, shared: Vec::new() });
        }
        if let Some(safety) = &sources.safety {
            let result = self.safety(key, &sources, safety).await;
            results.push(Collected { source: "safety".to_owned(), result, shared: Vec::new() });
        }
        // Every observation read (all but the count, stored above) in one push: one check by the
        // component and one write for the unit.
        self.store_all(key, &mut results, fence).await;
        for collected in &mut results {
            collected.shared = sources.shared_queries(&collected.source);
        }
        let now_ms = self.units.clock_ms();
        for collected in &results {
            if let Some(observed) = collected.result.as_ref().ok().and_then(observed_ms) {
                let age = u64::try_from(now_ms.saturating_sub(observed)).unwrap_or(0);
                self.units.collect_stats().rounds.aged(age);
            }
            let outcome = collected.result.as_ref().map(|_| ()).map_err(|refusal| refusal.cause);
            self.units.collect_stats().count(key, &collected.source, outcome);
            if let Err(refusal) = &collected.result {
                tracing::warn!(unit = %key, source = %collected.source, cause = refusal.cause, message = %refusal.message, "nothing stored");
            }
        }
        Some(results)
    }

    async fn replicas(
        &self,
        key: &UnitKey,
        sources: &Sources,
        replicas: &sources::ReplicasSource,
        fence: Option<&Fence>,
    ) -> Result<Value, Refusal> {
        let field = self.number(sources, &replicas.count, Round::Floor, true).await?;
        let count = u64::try_from(field.value).map_err(|_| Refusal::new("negative", "a negative count"))?;
        let max = scale_units_core::LIMITS.max_replicas;
        if count > max {
            return Err(Refusal::new("past_bound", format!("{count} replicas is past SPEC's {max}")));
        }
        let (observed_at, expires_at) = self.times(&[field.at_ms], replicas.max_age_s)?;
        let evidence = json!({
            "count": count,
            "observed_at": observed_at,
            "expires_at": expires_at,
            "source_ref": source_ref(key, "replicas", [field.origin.as_str()]),
            "source_digest": digest([field.read]),
        });
        match self.units.put_replicas_fenced(key, evidence, fence).await {
            Ok(stood) if stood.get("count").and_then(Value::as_u64) == Some(count) => Ok(stood),
            Ok(stood) => Err(Refusal::new(
                "unconfirmed",
                format!(
                    "read {count}, but the count {} from {} at {} stands (an admitted change not yet visible, or a later read)",
                    stood.get("count").unwrap_or(&Value::Null),
                    stood.get("source_ref").and_then(Value::as_str).unwrap_or("?"),
                    stood.get("observed_at").and_then(Value::as_str).unwrap_or("?"),
                ),
            )),
            Err(error) => Err(store_refusal(&error)),
        }
    }

    /// The safety observation from the firing alerts (to be stored with the others).
    async fn safety(&self, key: &UnitKey, sources: &Sources, safety: &sources::SafetySource) -> Result<Value, Refusal> {
        let server = sources
            .prometheus
            .get(&safety.server)
            .ok_or_else(|| Refusal::new("query_error", format!("no Prometheus server {}", safety.server)))?;
        let names: Vec<&str> = safety.overloaded.iter().chain(&safety.noisy_neighbor).map(String::as_str).collect();
        let query = prometheus::alerts_query(&names);
        let read_ms = self.units.clock_ms();
        let started = Instant::now();
        let answer = prometheus::query(server, &query).await;
        self.units.collect_stats().read_took(started.elapsed());
        let answer = answer?;
        let mut firing: Vec<String> = answer
            .samples
            .iter()
            .filter_map(|sample| sample.labels.get("alertname").and_then(Value::as_str).map(str::to_owned))
            .collect();
        firing.sort();
        firing.dedup();
        let overloaded = firing.iter().any(|name| safety.overloaded.contains(name));
        let noisy_neighbor = firing.iter().any(|name| safety.noisy_neighbor.contains(name));
        let at_ms = answer.samples.iter().map(|sample| sample.at_ms).min().unwrap_or(read_ms);
        let (observed_at, expires_at) = self.times(&[Some(at_ms)], safety.max_age_s)?;
        let digest = digest([(format!("prometheus.{}", safety.server), query, answer.body.to_vec())]);
        let observation = json!({
            "overloaded": overloaded,
            "noisy_neighbor": noisy_neighbor,
            "reason_ref": firing.first().map(|name| format!("alert:{name}")),
            "observed_at": observed_at,
            "expires_at": expires_at,
            "source_ref": source_ref(key, "safety", [format!("prometheus.{}", safety.server).as_str()]),
            "source_digest": digest,
        });
        Ok(json!({"safety": observation}))
    }

    /// The common fields of an observation over `fields` (each also written by name), its
    /// digest over every field's query and answer.
    fn observation(
        &self,
        key: &UnitKey,
        source: &str,
        fields: &[(&str, Field)],
        max_age_s: u64,
    ) -> Result<serde_json::Map<String, Value>, Refusal> {
        let times: Vec<Option<i64>> = fields.iter().map(|(_, field)| field.at_ms).collect();
        let (observed_at, expires_at) = self.times(&times, max_age_s)?;
        let mut observation = serde_json::Map::new();
        for (name, field) in fields {
            if *name != "ready" {
                observation.insert((*name).to_owned(), json!(field.value));
            }
        }
        let origins: Vec<&str> = fields.iter().map(|(_, field)| field.origin.as_str()).collect();
        observation.insert("observed_at".to_owned(), json!(observed_at));
        observation.insert("expires_at".to_owned(), json!(expires_at));
        observation.insert("source_ref".to_owned(), json!(source_ref(key, source, origins)));
        let reads = fields.iter().map(|(_, field)| field.read.clone());
        observation.insert("source_digest".to_owned(), json!(digest(reads)));
        Ok(observation)
    }

    /// `observed_at` (the oldest field, never after now, floored to the second; now for static
    /// fields alone) and `expires_at`, as SPEC times.
    fn times(&self, fields: &[Option<i64>], max_age_s: u64) -> Result<(String, String), Refusal> {
        let now_ms = self.units.clock_ms();
        let at_ms = fields.iter().flatten().copied().min().unwrap_or(now_ms).min(now_ms);
        let observed = at_ms.div_euclid(1000);
        let expires = observed.saturating_add(i64::try_from(max_age_s).unwrap_or(i64::MAX));
        if expires.saturating_mul(1000) <= now_ms {
            return Err(Refusal::new(
                "stale",
                format!("observed {}s ago, past max_age_s {max_age_s}", (now_ms / 1000) - observed),
            ));
        }
        let text = |seconds: i64| {
            jiff::Timestamp::from_second(seconds)
                .map(|at| at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
                .map_err(|error| Refusal::new("past_bound", format!("a time out of range: {error}")))
        };
        Ok((text(observed)?, text(expires)?))
    }

    /// Stores a push of one observation through [`Units::put_observations`] (the evaluator checks it).
    async fn store(&self, key: &UnitKey, push: Value, fence: Option<&Fence>) -> Result<Value, Refusal> {
        match self.units.put_observations_fenced(key, &push.to_string(), fence).await {
            Ok(_) => Ok(push),
            Err(error) => Err(store_refusal(&error)),
        }
    }

    /// Stores every observation of `results` that was read (each `Ok` but the count's, which
    /// [`Self::replicas`] stored) as one push: the component checks them together and the store
    /// takes them in one write. When the component refuses that push, each is stored alone, so that
    /// only the observations at fault are refused (with their own reason), as if pushed one by one;
    /// any other failure (fenced, the store down) is every observation's.
    async fn store_all(&self, key: &UnitKey, results: &mut [Collected], fence: Option<&Fence>) {
        let pending: Vec<usize> = (0..results.len())
            .filter(|&index| {
                results.get(index).is_some_and(|collected| collected.source != "replicas" && collected.result.is_ok())
            })
            .collect();
        if pending.is_empty() {
            return;
        }
        let mut push = serde_json::Map::new();
        for collected in pending.iter().filter_map(|&index| results.get(index)) {
            let Ok(Value::Object(fragment)) = &collected.result else { continue };
            for (field, value) in fragment {
                match (push.get_mut(field), value) {
                    (Some(Value::Array(list)), Value::Array(more)) => list.extend(more.iter().cloned()),
                    _ => {
                        push.insert(field.clone(), value.clone());
                    }
                }
            }
        }
        let error = match self.units.put_observations_fenced(key, &Value::Object(push).to_string(), fence).await {
            Ok(_) => return,
            Err(error) => error,
        };
        if pending.len() > 1 && matches!(error, UnitError::InvalidObservations(_)) {
            for index in pending {
                if let Some(collected) = results.get_mut(index)
                    && let Ok(fragment) = std::mem::replace(&mut collected.result, Ok(Value::Null))
                {
                    collected.result = self.store(key, fragment, fence).await;
                }
            }
            return;
        }
        let refusal = store_refusal(&error);
        for index in pending {
            if let Some(collected) = results.get_mut(index) {
                collected.result = Err(refusal.clone());
            }
        }
    }

    /// Reads one integer field.
    async fn number(&self, sources: &Sources, number: &Number, round: Round, exact: bool) -> Result<Field, Refusal> {
        match number {
            Number::Static(value) => Ok(Field::fixed(i128::from(*value))),
            Number::Prometheus(query) => self.prometheus(sources, query, round, exact).await,
            Number::Redis(read) => {
                let server = sources
                    .redis
                    .get(&read.server)
                    .ok_or_else(|| Refusal::new("redis_error", format!("no Redis server {}", read.server)))?;
                let read_ms = self.units.clock_ms();
                let started = Instant::now();
                let reply = self.redis.read(server, read).await;
                self.units.collect_stats().read_took(started.elapsed());
                let reply = reply?;
                let value = match reply.value {
                    Some(value) => value,
                    None if reply.text == "nil" => {
                        return Err(Refusal::new(
                            "missing_key",
                            format!("{} {}: no such key or field", read.command.as_str(), read.key),
                        ));
                    }
                    None => {
                        return Err(Refusal::new(
                            "not_a_number",
                            format!("{} {}: not an integer", read.command.as_str(), read.key),
                        ));
                    }
                };
                check_integer(i128::from(value))?;
                let origin = format!("redis.{}", read.server);
                let command = format!("{} {} {}", read.command.as_str(), read.key, read.field.as_deref().unwrap_or(""));
                let read = (origin.clone(), command, reply.text.into_bytes());
                Ok(Field { value: i128::from(value), at_ms: Some(read_ms), origin, read })
            }
        }
    }

    async fn prometheus(
        &self,
        sources: &Sources,
        query: &PrometheusQuery,
        round: Round,
        exact: bool,
    ) -> Result<Field, Refusal> {
        let server = sources
            .prometheus
            .get(&query.server)
            .ok_or_else(|| Refusal::new("query_error", format!("no Prometheus server {}", query.server)))?;
        let origin = format!("prometheus.{}", query.server);
        let (text, at_ms, read) = match &query.series {
            None => {
                let started = Instant::now();
                let answer = prometheus::query_dated(server, &query.query).await;
                self.units.collect_stats().read_took(started.elapsed());
                let answer = answer?;
                let sample = match answer.samples.as_slice() {
                    [] => return Err(Refusal::new("empty_result", "the query answered no series")),
                    [sample] => sample,
                    several => {
                        return Err(Refusal::new(
                            "several_series",
                            format!("the query answered {} series", several.len()),
                        ));
                    }
                };
                (sample.value.clone(), sample.at_ms, (origin.clone(), query.query.clone(), answer.read_bytes()))
            }
            Some(series) => {
                let stats = self.units.collect_stats();
                let own = self.shared.series(&query.server, server, &query.query, series, stats).await?;
                let asked = format!("{} [{}={}]", query.query, series.label, series.value);
                (own.value, own.at_ms, (origin.clone(), asked, own.bytes))
            }
        };
        let value = match text.as_str() {
            "NaN" => return Err(Refusal::new("nan", "the sample is NaN")),
            "+Inf" | "-Inf" | "Inf" => return Err(Refusal::new("infinite", format!("the sample is {text}"))),
            text => text
                .parse::<f64>()
                .map_err(|_| Refusal::new("bad_answer", format!("the sample {text:?} is not a number")))?,
        };
        let scaled = value * query.scale.unwrap_or(1.0);
        if scaled.is_nan() {
            return Err(Refusal::new("nan", "the sample is NaN"));
        }
        if scaled.is_infinite() {
            return Err(Refusal::new("infinite", "the scaled sample is infinite"));
        }
        if scaled < 0.0 {
            return Err(Refusal::new("negative", format!("the sample is negative ({value})")));
        }
        let rounded = match query.round.unwrap_or(round) {
            Round::Ceil => scaled.ceil(),
            Round::Floor => scaled.floor(),
        };
        if exact && (rounded - scaled).abs() > f64::EPSILON {
            return Err(Refusal::new("not_integer", format!("the sample {value} is not an integer")));
        }
        #[expect(clippy::cast_precision_loss, reason = "10^15 is exact in an f64")]
        let max = scale_units_core::LIMITS.max_amount as f64;
        if rounded > max {
            return Err(Refusal::new("past_bound", format!("{rounded} is past SPEC's 10^15")));
        }
        #[expect(clippy::cast_possible_truncation, reason = "finite, within 0..=10^15, integral")]
        let integer = rounded as i128;
        Ok(Field { value: integer, at_ms: Some(at_ms), origin, read })
    }
}

fn check_integer(value: i128) -> Result<(), Refusal> {
    if value < 0 {
        return Err(Refusal::new("negative", format!("the value is negative ({value})")));
    }
    if value > i128::from(scale_units_core::LIMITS.max_amount) {
        return Err(Refusal::new("past_bound", format!("{value} is past SPEC's 10^15")));
    }
    Ok(())
}

/// The `observed_at` of a stored push (`{"signal": {…}}`, `{"capacities": [{…}]}`) or count.
fn observed_ms(stored: &Value) -> Option<i64> {
    let inner = match stored.as_object() {
        Some(object) if object.len() == 1 => {
            let value = object.values().next()?;
            value.as_array().and_then(|list| list.first()).unwrap_or(value)
        }
        _ => stored,
    };
    let observed = inner.get("observed_at").or_else(|| stored.get("observed_at"))?.as_str()?;
    observed.parse::<jiff::Timestamp>().ok().map(jiff::Timestamp::as_millisecond)
}

fn store_refusal(error: &UnitError) -> Refusal {
    match error {
        UnitError::Fenced(_) => Refusal::new("fenced", error.to_string()),
        UnitError::UnknownUnit(_) => Refusal::new("no_contract", error.to_string()),
        UnitError::InvalidObservations(_) => Refusal::new("refused", error.to_string()),
        _ => Refusal::new("store_error", error.to_string()),
    }
}

/// `<origins>:<namespace>/<name>/<source>`, e.g. `prometheus.main+static:shop/api/quota.tokens`.
fn source_ref<'a>(key: &UnitKey, source: &str, origins: impl IntoIterator<Item = &'a str>) -> String {
    let mut names: Vec<&str> = origins.into_iter().collect();
    names.sort_unstable();
    names.dedup();
    format!("{}:{}/{}/{source}", names.join("+"), key.namespace, key.name)
}

/// `sha256:` of each read's origin, query and exact answer, each length-prefixed.
fn digest<I: IntoIterator<Item = (String, String, Vec<u8>)>>(reads: I) -> String {
    let mut hasher = Sha256::new();
    for (origin, query, answer) in reads {
        for part in [origin.as_bytes(), query.as_bytes(), answer.as_slice()] {
            hasher.update((part.len() as u64).to_be_bytes());
            hasher.update(part);
        }
    }
    let hash = hasher.finalize();
    let mut text = String::from("sha256:");
    for byte in hash {
        let _ = write!(text, "{byte:02x}");
    }
    text
}
