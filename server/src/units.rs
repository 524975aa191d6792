//! [`Units`]: the unit registry of the decision service — a scale-unit contract per Kubernetes
//! workload (`namespace/name`) and the latest observations a collector pushed for it.
//!
//! Contracts come from a folder (a mounted ConfigMap), one file per unit named
//! `<namespace>.<name>.json` (or `.yaml`, `.yml`), reloaded when it changes. Each contract is
//! validated by the active policy (the component); a file it refuses is logged and the unit keeps
//! its previous contract; a deleted file removes the unit. A unit defined by two files
//! (`shop.gateway.json` and `shop.gateway.yml`) is refused: logged, counted
//! ([`Units::duplicated`]), its previous contract kept; when one of them goes, the unit is
//! rebuilt from the one left.
//!
//! Observations (SPEC §5) are pushed with [`Units::put_observations`]: a push replaces the kinds it
//! names and keeps the others; a capacity replaces the one on the same axis, a quota the one with
//! the same `quota_ref`; `null` for `signal`, `continuity` or `safety` forgets that observation.
//! Each is stored under its own key and disappears at its own `expires_at`, in this process or in
//! Redis. To decide, [`Units::evaluate`] builds the SPEC §6 request from the contract, the stored
//! observations and the service's clock (`now` in whole seconds, `Z`) and evaluates it through
//! the [`PolicyRegistry`]; a missing or expired observation is simply absent, so the evaluator
//! blocks. A store that cannot be read is an error, never an empty set of evidence.
//!
//! The cooldowns count from the latest of three times: the unit's last change the webhook
//! admitted ([`Units::record_admission`], kept by the ledger: a state folder, Redis or this
//! process), the `last_action_at` a collector pushed, and the ledger's epoch — the moment from
//! which it vouches for every admission. Unknown is never "no action ever".
//!
//! An admission is not yet a change: the API server may still refuse it. The next authenticated
//! review of the workload says what the API server holds ([`Units::reconcile_review`]): its
//! `oldObject` at the version the change was admitted against and at the old count retracts the
//! admission (its cooldown and its count), at the admitted count confirms it; a collected count
//! equal to the admitted one confirms it too.

mod catalog;
mod decide;
mod error;
mod evidence;
mod key;
mod ledger;
mod observed;
mod push;
mod stats;
mod store;

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use arc_swap::ArcSwap;

use scale_units_core::Decision;
use serde_json::Value;

use catalog::Catalog;
pub use decide::{ActionSource, LastAction};
pub use error::UnitError;
use evidence::Evidence;
pub use key::UnitKey;
pub use ledger::{Admission, JOURNAL_MAX_AGE_MS, JOURNAL_MAX_PER_UNIT, Recorded, STATE_FILE, Settled, Settlement};
use ledger::{Ledger, Word};
pub use observed::{Observed, SeenChange};
pub use stats::EvidenceStats;
pub use store::Fence;
use store::Store;

use crate::sources::Sources;

use scale_units_host::{PolicyRegistry, Provenance};

/// What [`Units::evaluate`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UnitVerdict {
    /// No contract is loaded for the unit: nothing to decide.
    NoContract,
    /// The evaluator's decision (possibly `blocked`) at `current_replicas`.
    Decided {
        /// The decision.
        decision: Decision,
        /// The replica count the decision was made at.
        current_replicas: u64,
    },
}

/// A decision with what produced it, for the service's `GET /v1/units/{namespace}/{name}`.
#[derive(Clone, Debug)]
pub struct UnitDecision {
    /// The verdict.
    pub verdict: UnitVerdict,
    /// The decision's JSON exactly as the component wrote it (`None` without a contract).
    pub decision_json: Option<String>,
    /// The component that decided (`None` without a contract).
    pub provenance: Option<Arc<Provenance>>,
    /// The time the cooldowns counted from, and why (`None` without a contract).
    pub last_action: Option<LastAction>,
    /// The stored evidence this decision was made on, as [`Units::evidence`] shows it, from the
    /// same read (`None` without a contract, or from [`Units::decide`], which does not read it:
    /// [`Units::decide_with_evidence`] does).
    pub evidence: Option<Value>,
}

/// An admitted change to record with [`Units::record_admission`].
#[derive(Clone, Copy, Debug)]
pub struct AdmittedChange<'a> {
    /// The replica count before.
    pub from: u64,
    /// The replica count admitted.
    pub to: u64,
    /// The decision that admitted it, if any.
    pub decision_id: Option<&'a str>,
    /// The `AdmissionReview`'s `request.uid`: a second record with it changes nothing.
    pub review_uid: &'a str,
    /// The `metadata.resourceVersion` of the review's `oldObject` (`None`: not a review, or none
    /// given): a later review of the object at this version and at `from` retracts the admission.
    pub resource_version: Option<&'a str>,
}

/// What one scan of the contracts folder changed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReloadReport {
    /// Units whose contract was loaded or replaced.
    pub loaded: Vec<UnitKey>,
    /// Files refused, with why (the unit keeps its previous contract or sources).
    pub refused: Vec<(PathBuf, String)>,
    /// Units whose file disappeared.
    pub removed: Vec<UnitKey>,
    /// Units newly found defined by two files or more (`shop.gateway.json` and
    /// `shop.gateway.yml`): neither file is taken, the unit keeps its previous contract.
    pub duplicated: Vec<UnitKey>,
    /// Units whose sources file (`<namespace>.<name>.sources.yaml|yml|json`) was loaded or replaced.
    pub sources_loaded: Vec<UnitKey>,
    /// Units whose sources file disappeared.
    pub sources_removed: Vec<UnitKey>,
}

/// The service's clock.
pub type Clock = Arc<dyn Fn() -> SystemTime + Send + Sync>;

/// How a [`Units`] registry is set up. Start from [`Units::builder`].
#[derive(Clone)]
pub struct UnitsBuilder {
    registry: Arc<PolicyRegistry>,
    dir: Option<PathBuf>,
    redis_url: Option<String>,
    redis_ca: Option<Vec<u8>>,
    state_dir: Option<PathBuf>,
    no_prior_actions: bool,
    reload_interval: Duration,
    clock: Clock,
    replicas_max_age: Duration,
    workers: Option<Arc<crate::workers::Workers>>,
    kubernetes: bool,
}

impl fmt::Debug for UnitsBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UnitsBuilder")
            .field("dir", &self.dir)
            .field("redis", &self.redis_url.is_some())
            .field("state_dir", &self.state_dir)
            .field("reload_interval", &self.reload_interval)
            .finish_non_exhaustive()
    }
}

impl UnitsBuilder {
    /// The contracts folder (`<namespace>.<name>.json|yaml|yml`), loaded by [`Self::build`] and
    /// rescanned by [`Units::watch`].
    pub fn contracts_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.dir = Some(dir.into());
        self
    }

    /// Keeps observations in Redis at `url` (`redis://host:port/db`) instead of in this process.
    pub fn redis(mut self, url: impl Into<String>) -> Self {
        self.redis_url = Some(url.into());
        self
    }

    /// Trusts only the certificates of `pem` (PEM, one or more CAs) for a `rediss://` Redis,
    /// instead of the system's roots.
    pub fn redis_ca(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.redis_ca = Some(pem.into());
        self
    }

    /// Keeps each unit's last admitted action and the journal of accepted decisions in a redb
    /// database in `dir` (created when missing), committed to disk before an admission is
    /// answered. Without it (and without Redis) they live in this process and are lost with it.
    pub fn state_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.state_dir = Some(dir.into());
        self
    }

    /// Vouches that no unit acted before this registry's store began: a unit without a recorded
    /// admission or pushed time then has no last action (its cooldowns have elapsed). By default
    /// the cooldowns count from the store's epoch (its creation, this process's start with the
    /// memory store, the moment a Redis that lost its data was found empty). For tests and for a
    /// cluster known to be new; never set by `scale-units serve`.
    pub fn no_prior_actions(mut self) -> Self {
        self.no_prior_actions = true;
        self
    }

    /// Kubernetes mode (issue 37): each unit's replica count and the time its cooldowns count
    /// from are what the Kubernetes watch saw of its scale target ([`Units::set_observed`]);
    /// until the watch has seen it, a unit's count is unknown (no decision). Reviews and
    /// collected counts carry no authority over either.
    pub fn kubernetes(mut self) -> Self {
        self.kubernetes = true;
        self
    }

    /// How often [`Units::watch`] rescans the contracts folder (default 2 s).
    pub fn reload_interval(mut self, interval: Duration) -> Self {
        self.reload_interval = interval;
        self
    }

    /// The clock `now` is read from (default: the system clock). For tests.
    pub fn clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// How long a pushed `current_replicas` or a count the webhook admitted stays evidence,
    /// unless the unit's sources file declares `replicas.max_age_s` (default 300 s; at least 1 s).
    pub fn replicas_max_age(mut self, max_age: Duration) -> Self {
        self.replicas_max_age = max_age.max(Duration::from_secs(1));
        self
    }

    /// The evaluation limit every component call of the registry waits for (default: one of its
    /// own, a call per CPU). The service evaluates through the same one ([`Units::workers`]), so
    /// that reviews, KEDA answers and collections count against `serve --workers` as
    /// `/v1/evaluate` does.
    pub fn workers(mut self, workers: Arc<crate::workers::Workers>) -> Self {
        self.workers = Some(workers);
        self
    }

    /// Connects to Redis (when set) and loads the contracts folder (when set).
    ///
    /// # Errors
    /// [`UnitError::Config`] for a bad Redis URL, an unreadable folder, a state folder that cannot
    /// be created or a state file that is not a redb database, or both Redis and a state folder;
    /// [`UnitError::Store`] when Redis cannot be reached or the state file cannot be written. A
    /// contract file that is refused is not an error: it is logged and reported by
    /// [`Units::reload`].
    pub async fn build(self) -> Result<Arc<Units>, UnitError> {
        let now_ms = timestamp((self.clock)()).as_millisecond();
        let no_prior = self.no_prior_actions;
        let (store, ledger) = match (&self.redis_url, &self.state_dir) {
            (Some(_), Some(_)) => {
                return Err(UnitError::Config(
                    "the state lives in Redis or in a state folder, not both (--redis or --state-dir)".to_owned(),
                ));
            }
            (Some(url), None) => {
                let store = Store::redis(url, self.redis_ca.as_deref()).await?;
                let ledger = match store.redis_manager() {
                    Some(manager) => Ledger::redis(manager, now_ms, no_prior).await?,
                    None => return Err(UnitError::Config("the Redis store has no connection".to_owned())),
                };
                (store, ledger)
            }
            (None, Some(dir)) => {
                let dir = dir.clone();
                let ledger = tokio::task::spawn_blocking(move || Ledger::open(&dir, now_ms, no_prior))
                    .await
                    .map_err(|error| UnitError::Store(format!("the state store task failed: {error}")))??;
                (Store::memory(), ledger)
            }
            (None, None) => (Store::memory(), Ledger::memory(now_ms, no_prior)?),
        };
        let workers = self.workers.unwrap_or_else(crate::workers::Workers::per_cpu);
        let units = Arc::new(Units {
            catalog: Catalog::new(self.registry, workers, self.dir, self.reload_interval),
            evidence: Evidence::new(store, Arc::clone(&self.clock), self.replicas_max_age),
            ledger,
            clock: self.clock,
            stats: EvidenceStats::default(),
            kubernetes: self.kubernetes,
            observed: ArcSwap::from_pointee(observed::ObservedMap::new()),
        });
        if let Some(dir) = &units.catalog.dir {
            std::fs::read_dir(dir).map_err(|error| {
                UnitError::Config(format!("cannot read the contracts folder {}: {error}", dir.display()))
            })?;
            let report = units.reload().await;
            catalog::log_report(&report);
        }
        Ok(units)
    }
}

/// The unit registry: a façade over the catalog (contracts and sources files), the evidence
/// store (observations) and the ledger (admissions and the decision journal).
/// `Send + Sync`: share it in an `Arc`.
pub struct Units {
    catalog: Catalog,
    evidence: Evidence,
    ledger: Ledger,
    clock: Clock,
    stats: EvidenceStats,
    /// Kubernetes mode ([`UnitsBuilder::kubernetes`]).
    kubernetes: bool,
    /// What the watch saw of each unit's target ([`Units::set_observed`]).
    observed: ArcSwap<observed::ObservedMap>,
}

impl fmt::Debug for Units {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Units")
            .field("units", &self.catalog.len())
            .field("store", &self.evidence.store.kind())
            .field("state", &self.ledger.kind())
            .field("dir", &self.catalog.dir)
            .finish_non_exhaustive()
    }
}

impl Units {
    /// A registry evaluating through `registry`, with observations in memory and no contracts.
    pub fn builder(registry: Arc<PolicyRegistry>) -> UnitsBuilder {
        UnitsBuilder {
            registry,
            dir: None,
            redis_url: None,
            redis_ca: None,
            state_dir: None,
            no_prior_actions: false,
            reload_interval: Duration::from_secs(2),
            clock: Arc::new(SystemTime::now),
            replicas_max_age: Duration::from_secs(300),
            workers: None,
            kubernetes: false,
        }
    }

    /// The evaluation limit the registry's component calls wait for.
    pub fn workers(&self) -> &Arc<crate::workers::Workers> {
        &self.catalog.workers
    }

    /// Where observations are kept: `"memory"` or `"redis"`.
    pub fn store_kind(&self) -> &'static str {
        self.evidence.store.kind()
    }

    /// Where the admitted actions and the decision journal are kept: `"memory"`, `"state-dir"` or
    /// `"redis"`.
    pub fn state_kind(&self) -> &'static str {
        self.ledger.kind()
    }

    /// The units with a contract, in order.
    pub fn keys(&self) -> Vec<UnitKey> {
        self.catalog.keys()
    }

    /// The `contract_id` of the unit's contract, when one is loaded.
    pub fn contract_id(&self, key: &UnitKey) -> Option<String> {
        self.catalog.contract(key).map(|contract| contract.contract_id.clone())
    }

    /// The `(min_replicas, max_replicas)` of the unit's contract, when one is loaded.
    pub fn bounds(&self, key: &UnitKey) -> Option<(u64, u64)> {
        self.catalog.contract(key).map(|contract| (contract.min_replicas, contract.max_replicas))
    }

    /// `now` as the evaluator receives it: the service's clock in whole seconds, UTC, `Z`.
    pub fn now(&self) -> String {
        timestamp((self.clock)()).strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
    }

    /// Sets the unit's contract (JSON text) without a file; a folder scan never removes it.
    ///
    /// # Errors
    /// [`UnitError::Evaluation`] when the active policy refuses the contract, [`UnitError::Policy`]
    /// when there is no active policy or the component fails.
    pub async fn set_contract(&self, key: UnitKey, contract: &str) -> Result<String, UnitError> {
        self.catalog.set_contract(key, contract).await
    }

    /// Sets the unit from a `ScaleUnit` resource: its contract (validated by the active policy),
    /// its sources and its mode; returns the contract's id.
    ///
    /// # Errors
    /// [`UnitError::Evaluation`] when the active policy refuses the contract (its code, message
    /// and path), [`UnitError::Config`] when a contract file defines the unit,
    /// [`UnitError::Policy`].
    pub async fn set_resource(
        &self,
        key: UnitKey,
        contract: &str,
        sources: Option<Sources>,
        mode: crate::kubernetes::resource::Mode,
    ) -> Result<String, UnitError> {
        self.catalog.set_resource(key, contract, sources, mode).await
    }

    /// Removes a unit a `ScaleUnit` defined, and what the watch knew of its target; returns
    /// whether it was there.
    pub fn remove_resource(&self, key: &UnitKey) -> bool {
        let removed = self.catalog.remove_resource(key);
        if removed {
            self.forget_observed(key);
        }
        removed
    }

    /// How a change the unit's decision does not allow is answered (`None` without a contract).
    pub fn mode(&self, key: &UnitKey) -> Option<crate::kubernetes::resource::Mode> {
        self.catalog.mode(key)
    }

    /// Scans the contracts folder once: loads new and changed files, drops units whose file is
    /// gone. Does nothing without a folder.
    pub async fn reload(&self) -> ReloadReport {
        self.catalog.reload().await
    }

    /// The units whose contract is defined by more than one file at the last scan (each keeps its
    /// previous contract, or has none).
    pub fn duplicated(&self) -> Vec<UnitKey> {
        self.catalog.duplicated()
    }

    /// The unit's sources (its `<namespace>.<name>.sources.*` file), when one is loaded.
    pub fn sources(&self, key: &UnitKey) -> Option<Arc<Sources>> {
        self.catalog.sources(key)
    }

    /// The units with a sources file, in order.
    pub fn source_keys(&self) -> Vec<UnitKey> {
        self.catalog.source_keys()
    }

    /// The collectors' counters (stored and refused observations), for `/metrics`.
    pub fn collect_stats(&self) -> &EvidenceStats {
        &self.stats
    }

    /// The registry's clock, in milliseconds since the Unix epoch.
    pub(crate) fn clock_ms(&self) -> i64 {
        let now = (self.clock)();
        match now.duration_since(UNIX_EPOCH) {
            Ok(elapsed) => i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX),
            Err(_) => 0,
        }
    }

    /// How long a pushed or admitted replica count stays evidence for the unit: its sources'
    /// `replicas.max_age_s`, else the registry's default.
    fn replicas_max_age_s(&self, key: &UnitKey) -> u64 {
        self.sources(key)
            .and_then(|sources| sources.replicas.as_ref().map(|replicas| replicas.max_age_s))
            .unwrap_or(self.evidence.replicas_max_age.as_secs())
    }

    /// Stores a collected replica count (`{"count", "observed_at", "expires_at", "source_ref",
    /// …}`) until its `expires_at`, unless the stored count was observed later, or is a count
    /// the webhook admitted that this one does not confirm (the workload and the metrics lag
    /// behind an admitted change): returns the count that stands.
    ///
    /// # Errors
    /// [`UnitError::UnknownUnit`] without a contract, [`UnitError::InvalidObservations`] for a
    /// count above 10 000 or unreadable times, [`UnitError::Store`].
    pub async fn put_replicas(&self, key: &UnitKey, evidence: Value) -> Result<Value, UnitError> {
        self.put_replicas_fenced(key, evidence, None).await
    }

    /// [`Self::put_replicas`] by a collector under a lease (see
    /// [`Self::put_observations_fenced`]).
    ///
    /// # Errors
    /// As [`Self::put_replicas`], and [`UnitError::Fenced`].
    pub async fn put_replicas_fenced(
        &self,
        key: &UnitKey,
        evidence: Value,
        fence: Option<&Fence>,
    ) -> Result<Value, UnitError> {
        if self.catalog.contract(key).is_none() {
            return Err(UnitError::UnknownUnit(key.clone()));
        }
        let source_ref = evidence.get("source_ref").and_then(Value::as_str).unwrap_or("collected").to_owned();
        let (standing, confirms) = self.evidence.put_replicas(key, evidence, fence).await?;
        // The workload reports the admitted count: the admission happened. A collected old count
        // never retracts one (it lags behind the change); only a review can.
        if confirms && let Some(count) = standing.get("count").and_then(Value::as_u64) {
            let word = Word { review_uid: None, resource_version: None, count, by: source_ref, at_ms: self.now_ms() };
            match self.ledger.settle(&key.to_string(), &word).await {
                Ok(ledger::Told::Settled(admission)) => tracing::info!(
                    unit = %key,
                    "the admitted change {} -> {} is confirmed by the collected count",
                    admission.from,
                    admission.to
                ),
                Ok(_) => {}
                Err(error) => {
                    tracing::warn!(unit = %key, "the admission cannot be confirmed by the collected count: {error}");
                }
            }
        }
        Ok(standing)
    }

    /// The Redis connection of the evidence store, when it is Redis (the collectors' leases).
    pub(crate) fn redis_manager(&self) -> Option<redis::aio::ConnectionManager> {
        self.evidence.store.redis_manager()
    }

    /// Records that the webhook admitted `count` replicas now: the unit's count at once
    /// (observed now, expiring after the unit's replicas max age), and for the longer of the
    /// contract's cooldowns no collected count that contradicts it is stored
    /// ([`Self::put_replicas`]), so that no decision, KEDA's included, goes back to the old count.
    ///
    /// # Errors
    /// [`UnitError::Store`] when the store cannot be written.
    pub async fn record_admitted_count(&self, key: &UnitKey, count: u64) -> Result<(), UnitError> {
        let cooldown_s = self.catalog.contract(key).map_or(0, |contract| contract.cooldown_s);
        self.evidence.record_admitted_count(key, count, cooldown_s, self.replicas_max_age_s(key)).await
    }

    /// The unit's stored evidence, each with its age in seconds: `{"replicas", "signal",
    /// "capacities", "quotas", "continuity", "safety", "last_action_at"}` (`null` or `[]` for
    /// what is missing or expired).
    ///
    /// # Errors
    /// [`UnitError::UnknownUnit`] without a contract, [`UnitError::Store`].
    pub async fn evidence(&self, key: &UnitKey) -> Result<Value, UnitError> {
        let contract = self.catalog.contract(key).ok_or_else(|| UnitError::UnknownUnit(key.clone()))?;
        let now_ms = self.now_ms();
        Ok(self.evidence.read_stored(key, &contract, now_ms).await?.view(now_ms))
    }

    /// Rescans the contracts folder every reload interval, forever (spawn it on the runtime).
    pub async fn watch(self: Arc<Self>) {
        let mut interval = tokio::time::interval(self.catalog.reload_interval);
        interval.tick().await;
        loop {
            interval.tick().await;
            catalog::log_report(&self.reload().await);
        }
    }

    /// Evaluates the unit at `current_replicas` (`None`: the last count the collector pushed).
    ///
    /// # Errors
    /// [`UnitError::UnknownReplicas`] when no count is given or known, [`UnitError::Store`] when
    /// the observations cannot be read (never evaluated as if there were none),
    /// [`UnitError::Evaluation`] when the evaluator refuses the request (a count below the
    /// contract's floor), [`UnitError::Policy`].
    pub async fn evaluate(&self, key: &UnitKey, current_replicas: Option<u64>) -> Result<UnitVerdict, UnitError> {
        self.decide(key, current_replicas).await.map(|decided| decided.verdict)
    }

    /// Records that the webhook admitted a change of the unit's replica count now, so that the
    /// contract's cooldowns apply to the next decision (on every replica of the service sharing
    /// the store, and after a restart with a state folder or Redis). The unit's last action only
    /// ever moves later; the decision is journaled once per decision id; a second record of the
    /// same review uid changes nothing ([`Recorded::Replayed`]). Durable before it returns: redb
    /// commits with an fsync, Redis as its AOF is set up.
    ///
    /// # Errors
    /// [`UnitError::Store`] when the store cannot be written (a full disk, Redis down): the
    /// action is not recorded, and a change whose cooldown cannot be kept must not be admitted.
    pub async fn record_admission(&self, key: &UnitKey, change: AdmittedChange<'_>) -> Result<Recorded, UnitError> {
        let at_ms = self.now_ms();
        let admission = Admission {
            at: self.now(),
            at_ms,
            from: change.from,
            to: change.to,
            decision_id: change.decision_id.map(str::to_owned),
            review_uid: change.review_uid.to_owned(),
            note: None,
            resource_version: change.resource_version.map(str::to_owned),
            settled: None,
        };
        self.ledger.record(&key.to_string(), admission).await
    }

    /// The admission recorded for review `uid` on the unit, if any (a retried review is answered
    /// as it was, and recorded once).
    ///
    /// # Errors
    /// [`UnitError::Store`] when the store cannot be read.
    pub async fn admitted_review(&self, key: &UnitKey, uid: &str) -> Result<Option<Admission>, UnitError> {
        self.ledger.review(&key.to_string(), uid).await
    }

    /// The unit's journal of accepted decisions, oldest first (at most [`JOURNAL_MAX_PER_UNIT`],
    /// none older than [`JOURNAL_MAX_AGE_MS`]).
    ///
    /// # Errors
    /// [`UnitError::Store`] when the store cannot be read.
    pub async fn journal(&self, key: &UnitKey) -> Result<Vec<Admission>, UnitError> {
        self.ledger.journal(&key.to_string()).await
    }

    fn now_ms(&self) -> i64 {
        timestamp((self.clock)()).as_millisecond()
    }
}

/// `ms` (since the Unix epoch) as the service writes times: whole seconds, UTC, `Z`.
pub fn format_time_ms(ms: i64) -> String {
    ledger::format_ms(ms)
}

pub(crate) fn timestamp(time: SystemTime) -> jiff::Timestamp {
    let seconds = match time.duration_since(UNIX_EPOCH) {
        Ok(elapsed) => i64::try_from(elapsed.as_secs()).unwrap_or(i64::MAX),
        Err(before) => i64::try_from(before.duration().as_secs()).map_or(i64::MIN, |seconds| -seconds),
    };
    jiff::Timestamp::from_second(seconds).unwrap_or(jiff::Timestamp::UNIX_EPOCH)
}
