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

mod durable;
mod error;
mod store;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use arc_swap::ArcSwap;
use scale_units_core::{Decision, ErrorCode, EvaluationError};
use serde::Deserialize;
use serde_json::{Map, Value};

pub use durable::{Admission, JOURNAL_MAX_AGE_MS, JOURNAL_MAX_PER_UNIT, Recorded, STATE_FILE};
use durable::{Known, Ledger, format_ms};
pub use error::UnitError;
use store::{Store, Write};

use crate::collect::sources::Sources;

use scale_units_host::{HostError, PolicyRegistry, Provenance, RegistryError};

/// The key of a unit: the workload's namespace and name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct UnitKey {
    /// The namespace (a DNS label).
    pub namespace: String,
    /// The workload's name (a DNS subdomain).
    pub name: String,
}

impl UnitKey {
    /// A key from a namespace and a name.
    ///
    /// # Errors
    /// [`UnitError::InvalidKey`] unless the namespace is a DNS label (RFC 1123: 1 to 63 lower-case
    /// letters, digits and `-`, starting and ending with a letter or digit) and the name a DNS
    /// subdomain (1 to 253 characters, dot-separated labels).
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Result<Self, UnitError> {
        let (namespace, name) = (namespace.into(), name.into());
        if !is_dns_label(&namespace) {
            return Err(UnitError::InvalidKey(format!("namespace {namespace:?} is not a DNS label")));
        }
        if name.is_empty() || name.len() > 253 || !name.split('.').all(is_dns_label) {
            return Err(UnitError::InvalidKey(format!("name {name:?} is not a DNS subdomain")));
        }
        Ok(Self { namespace, name })
    }

    /// The key of a contract file named `<namespace>.<name>.<json|yaml|yml>` (the namespace has no
    /// `.`, so the first `.` splits).
    ///
    /// # Errors
    /// [`UnitError::InvalidKey`] for another extension or an invalid namespace or name.
    pub fn from_file_name(file_name: &str) -> Result<Self, UnitError> {
        let stem = [".json", ".yaml", ".yml"]
            .iter()
            .find_map(|extension| file_name.strip_suffix(extension))
            .ok_or_else(|| UnitError::InvalidKey(format!("{file_name}: not a .json, .yaml or .yml file")))?;
        let (namespace, name) = stem
            .split_once('.')
            .ok_or_else(|| UnitError::InvalidKey(format!("{file_name}: not named <namespace>.<name>.<extension>")))?;
        Self::new(namespace, name)
    }

    /// The prefix of every store key of this unit; the braces make it a Redis Cluster hash tag,
    /// so that one unit's keys live on one shard.
    fn store_prefix(&self) -> String {
        format!("scale-units:{{{}/{}}}:", self.namespace, self.name)
    }
}

impl fmt::Display for UnitKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// The store key of the count the webhook admitted for `key`. Not `…:admitted`: with Redis that
/// key is the ledger's record of the unit's last admission (`durable`), which must outlive the
/// admitted count and must not be replaced by it.
fn admitted_slot(key: &UnitKey) -> String {
    format!("{}admitted-count", key.store_prefix())
}

fn is_dns_label(text: &str) -> bool {
    let bytes = text.as_bytes();
    let edge = |byte: Option<&u8>| byte.is_some_and(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit());
    !bytes.is_empty()
        && bytes.len() <= 63
        && edge(bytes.first())
        && edge(bytes.last())
        && bytes.iter().all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || *byte == b'-')
}

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
    /// same read (`None` without a contract).
    pub evidence: Option<Value>,
}

/// Where the time a unit's cooldowns count from came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ActionSource {
    /// A change this service admitted and recorded.
    Admission,
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
    /// The last admission recorded for the unit.
    pub admission: Option<Admission>,
    /// The `last_action_at` the collector pushed, as pushed.
    pub pushed: Option<String>,
    /// From when the store vouches for every admission (`None`: no prior actions assumed).
    pub known_since: Option<String>,
}

impl LastAction {
    /// As the service's JSON.
    pub fn to_json(&self) -> Value {
        serde_json::json!({
            "at": self.at,
            "source": self.source.as_str(),
            "admission": self.admission,
            "pushed": self.pushed,
            "known_since": self.known_since,
        })
    }

    fn of(known: Known, pushed: Option<String>) -> Self {
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
            ActionSource::None => None,
        };
        Self { at, source: best.1, admission: known.last, pushed, known_since: known.epoch_ms.map(format_ms) }
    }
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

/// A unit's sources, with the file they came from.
#[derive(Debug)]
struct LoadedSources {
    sources: Arc<Sources>,
    path: PathBuf,
}

/// A loaded, validated contract.
#[derive(Debug)]
struct Contract {
    /// The contract as compact JSON.
    text: String,
    contract_id: String,
    /// `policy.min_replicas`: a replica count every valid request accepts.
    min_replicas: u64,
    /// `policy.max_replicas` (the admission webhook's recovery toward bounds).
    max_replicas: u64,
    /// The longer of the policy's cooldowns: how long an admitted count overrules reads that
    /// contradict it.
    cooldown_s: u64,
    /// Axes whose capacity observations the evaluator reads (required, demand and engine axes).
    axes: Vec<String>,
    /// The `quota_ref` of each binding.
    quota_refs: Vec<String>,
    /// The file it came from (`None`: set through [`Units::set_contract`]).
    source: Option<PathBuf>,
}

/// The fields of a contract the registry needs, read after the component accepted it.
#[derive(Deserialize)]
struct ContractShape {
    #[serde(default)]
    required_capacity_axes: Vec<String>,
    #[serde(default)]
    replica_demands: Vec<AxisOf>,
    #[serde(default)]
    engine_authority_axes: Vec<String>,
    #[serde(default)]
    quotas: Vec<QuotaOf>,
    policy: PolicyOf,
}

#[derive(Deserialize)]
struct AxisOf {
    axis: String,
}

#[derive(Deserialize)]
struct QuotaOf {
    quota_ref: String,
}

#[derive(Deserialize)]
struct PolicyOf {
    #[serde(default = "one")]
    min_replicas: u64,
    #[serde(default = "one")]
    max_replicas: u64,
    #[serde(default = "thirty")]
    scale_up_cooldown_s: u64,
    #[serde(default = "three_hundred")]
    scale_down_cooldown_s: u64,
}

fn thirty() -> u64 {
    30
}

fn three_hundred() -> u64 {
    300
}

fn one() -> u64 {
    1
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
        let units = Arc::new(Units {
            registry: self.registry,
            contracts: ArcSwap::from_pointee(BTreeMap::new()),
            store,
            ledger,
            dir: self.dir,
            reload_interval: self.reload_interval,
            stamps: Mutex::new(HashMap::new()),
            duplicated: Mutex::new(BTreeSet::new()),
            clock: self.clock,
            sources: ArcSwap::from_pointee(BTreeMap::new()),
            collect_stats: crate::collect::Stats::default(),
            replicas_max_age: self.replicas_max_age,
            workers: self.workers.unwrap_or_else(crate::workers::Workers::per_cpu),
        });
        if let Some(dir) = &units.dir {
            std::fs::read_dir(dir).map_err(|error| {
                UnitError::Config(format!("cannot read the contracts folder {}: {error}", dir.display()))
            })?;
            let report = units.reload().await;
            log_report(&report);
        }
        Ok(units)
    }
}

type Stamp = Option<(SystemTime, u64)>;

/// The unit registry: contracts by `namespace/name` and the latest observations per unit.
/// `Send + Sync`: share it in an `Arc`.
pub struct Units {
    registry: Arc<PolicyRegistry>,
    contracts: ArcSwap<BTreeMap<UnitKey, Arc<Contract>>>,
    store: Store,
    ledger: Ledger,
    dir: Option<PathBuf>,
    reload_interval: Duration,
    /// The stamp (modification time, length) of each contract file at its last scan.
    stamps: Mutex<HashMap<PathBuf, Stamp>>,
    /// Units defined by more than one file at the last scan.
    duplicated: Mutex<BTreeSet<UnitKey>>,
    clock: Clock,
    /// Each unit's sources file, for the collectors (`crate::collect`).
    sources: ArcSwap<BTreeMap<UnitKey, Arc<LoadedSources>>>,
    collect_stats: crate::collect::Stats,
    replicas_max_age: Duration,
    /// The evaluation limit of every component call.
    workers: Arc<crate::workers::Workers>,
}

impl fmt::Debug for Units {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Units")
            .field("units", &self.contracts.load().len())
            .field("store", &self.store.kind())
            .field("state", &self.ledger.kind())
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

/// The fields of an observations push.
const PUSH_FIELDS: [&str; 7] =
    ["signal", "capacities", "quotas", "continuity", "safety", "current_replicas", "last_action_at"];

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
        }
    }

    /// The evaluation limit the registry's component calls wait for.
    pub fn workers(&self) -> &Arc<crate::workers::Workers> {
        &self.workers
    }

    /// Where observations are kept: `"memory"` or `"redis"`.
    pub fn store_kind(&self) -> &'static str {
        self.store.kind()
    }

    /// Where the admitted actions and the decision journal are kept: `"memory"`, `"state-dir"` or
    /// `"redis"`.
    pub fn state_kind(&self) -> &'static str {
        self.ledger.kind()
    }

    /// The units with a contract, in order.
    pub fn keys(&self) -> Vec<UnitKey> {
        self.contracts.load().keys().cloned().collect()
    }

    /// The `contract_id` of the unit's contract, when one is loaded.
    pub fn contract_id(&self, key: &UnitKey) -> Option<String> {
        self.contracts.load().get(key).map(|contract| contract.contract_id.clone())
    }

    /// The `(min_replicas, max_replicas)` of the unit's contract, when one is loaded.
    pub fn bounds(&self, key: &UnitKey) -> Option<(u64, u64)> {
        self.contracts.load().get(key).map(|contract| (contract.min_replicas, contract.max_replicas))
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
        let contract = self.validate(contract.to_owned(), None).await?;
        let contract_id = contract.contract_id.clone();
        self.contracts.rcu(|contracts| {
            let mut contracts = BTreeMap::clone(contracts);
            contracts.insert(key.clone(), Arc::clone(&contract));
            contracts
        });
        Ok(contract_id)
    }

    /// Scans the contracts folder once: loads new and changed files, drops units whose file is
    /// gone. Does nothing without a folder.
    pub async fn reload(&self) -> ReloadReport {
        let mut report = ReloadReport::default();
        let Some(dir) = &self.dir else { return report };
        let Ok(entries) = std::fs::read_dir(dir) else {
            report.refused.push((dir.clone(), "cannot read the folder".to_owned()));
            return report;
        };
        let mut present: HashMap<PathBuf, Stamp> = HashMap::new();
        for entry in entries.flatten() {
            let path = entry.path();
            let Some(file_name) = path.file_name().and_then(|name| name.to_str()) else { continue };
            // A ConfigMap volume holds `..data` and timestamped folders beside the keys.
            if file_name.starts_with('.') || !path.is_file() {
                continue;
            }
            let stamp = std::fs::metadata(&path).ok().and_then(|meta| Some((meta.modified().ok()?, meta.len())));
            present.insert(path, stamp);
        }
        let previous = std::mem::take(&mut *self.stamps.lock().unwrap_or_else(PoisonError::into_inner));
        // The files of each unit: one is its contract; two (`shop.gateway.json` and
        // `shop.gateway.yml`) define it twice, and neither is taken.
        let mut files: BTreeMap<UnitKey, Vec<PathBuf>> = BTreeMap::new();
        let mut sources_loaded: Vec<(UnitKey, Arc<LoadedSources>)> = Vec::new();
        for (path, stamp) in &present {
            let file_name = path.file_name().and_then(|name| name.to_str()).unwrap_or_default();
            if let Some((stem, yaml)) = crate::collect::sources::unit_of_file(file_name) {
                if previous.get(path) != Some(stamp) {
                    match load_sources(path, stem, yaml) {
                        Ok(loaded) => sources_loaded.push(loaded),
                        Err(reason) => report.refused.push((path.clone(), reason)),
                    }
                }
                continue;
            }
            match UnitKey::from_file_name(file_name) {
                Ok(key) => files.entry(key).or_default().push(path.clone()),
                Err(error) if previous.get(path) != Some(stamp) => {
                    report.refused.push((path.clone(), error.to_string()))
                }
                Err(_) => {}
            }
        }
        let current = self.contracts.load_full();
        let mut changed: Vec<(PathBuf, UnitKey)> = Vec::new();
        let mut duplicated = BTreeSet::new();
        for (key, paths) in &mut files {
            paths.sort();
            let [path] = paths.as_slice() else {
                duplicated.insert(key.clone());
                continue;
            };
            // Changed, or the unit's contract came from another file that was there at the last
            // scan and is gone: this one is the unit's contract from now on (tried once; refused,
            // the previous contract stays).
            let from_another = current.get(key).is_some_and(|contract| {
                contract.source.as_ref().is_some_and(|source| source != path && previous.contains_key(source))
            });
            if previous.get(path) != present.get(path) || from_another {
                changed.push((path.clone(), key.clone()));
            }
        }
        {
            let mut known = self.duplicated.lock().unwrap_or_else(PoisonError::into_inner);
            for key in duplicated.difference(&known) {
                let names: Vec<String> =
                    files.get(key).into_iter().flatten().map(|path| path.display().to_string()).collect();
                let reason = format!("{key} is defined twice ({}): neither is taken", names.join(", "));
                for path in files.get(key).into_iter().flatten() {
                    report.refused.push((path.clone(), reason.clone()));
                }
                report.duplicated.push(key.clone());
            }
            *known = duplicated;
        }
        changed.sort();
        let mut loaded: Vec<(UnitKey, Arc<Contract>)> = Vec::new();
        for (path, key) in changed {
            match self.load_file(&path).await {
                Ok(contract) => loaded.push((key, contract)),
                Err(reason) => report.refused.push((path, reason)),
            }
        }
        *self.stamps.lock().unwrap_or_else(PoisonError::into_inner) = present.clone();
        let mut removed = Vec::new();
        self.contracts.rcu(|contracts| {
            let mut contracts = BTreeMap::clone(contracts);
            for (key, contract) in &loaded {
                contracts.insert(key.clone(), Arc::clone(contract));
            }
            removed.clear();
            // A unit goes with the last of its files; while one is left it keeps its contract
            // (replaced above when that file loads).
            contracts.retain(|key, contract| {
                if contract.source.is_some() && !files.contains_key(key) {
                    removed.push(key.clone());
                    false
                } else {
                    true
                }
            });
            contracts
        });
        report.loaded = loaded.into_iter().map(|(key, _)| key).collect();
        report.removed = removed;
        let mut sources_removed = Vec::new();
        self.sources.rcu(|sources| {
            let mut sources = BTreeMap::clone(sources);
            for (key, loaded) in &sources_loaded {
                sources.insert(key.clone(), Arc::clone(loaded));
            }
            sources_removed.clear();
            sources.retain(|key, loaded| {
                let kept = present.contains_key(&loaded.path);
                if !kept {
                    sources_removed.push(key.clone());
                }
                kept
            });
            sources
        });
        report.sources_loaded = sources_loaded.into_iter().map(|(key, _)| key).collect();
        report.sources_removed = sources_removed;
        report
    }

    /// The units whose contract is defined by more than one file at the last scan (each keeps its
    /// previous contract, or has none).
    pub fn duplicated(&self) -> Vec<UnitKey> {
        self.duplicated.lock().unwrap_or_else(PoisonError::into_inner).iter().cloned().collect()
    }

    /// The unit's sources (its `<namespace>.<name>.sources.*` file), when one is loaded.
    pub fn sources(&self, key: &UnitKey) -> Option<Arc<Sources>> {
        self.sources.load().get(key).map(|loaded| Arc::clone(&loaded.sources))
    }

    /// The units with a sources file, in order.
    pub fn source_keys(&self) -> Vec<UnitKey> {
        self.sources.load().keys().cloned().collect()
    }

    /// The collectors' counters (stored and refused observations), for `/metrics`.
    pub fn collect_stats(&self) -> &crate::collect::Stats {
        &self.collect_stats
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
            .unwrap_or(self.replicas_max_age.as_secs())
    }

    /// A replica count observed now, expiring after the unit's replicas max age.
    fn replicas_now(&self, key: &UnitKey, count: u64, source_ref: &str) -> (Value, i64) {
        let observed = timestamp((self.clock)());
        let max_age = i64::try_from(self.replicas_max_age_s(key)).unwrap_or(i64::MAX);
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
    /// behind an admitted change): returns the count that stands.
    ///
    /// # Errors
    /// [`UnitError::UnknownUnit`] without a contract, [`UnitError::InvalidObservations`] for a
    /// count above 10 000 or unreadable times, [`UnitError::Store`].
    pub async fn put_replicas(&self, key: &UnitKey, evidence: Value) -> Result<Value, UnitError> {
        if !self.contracts.load().contains_key(key) {
            return Err(UnitError::UnknownUnit(key.clone()));
        }
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
        if let Some(admitted) = admitted
            && admitted.get("count") != evidence.get("count")
        {
            return Ok(admitted);
        }
        // A count observed later than this one stands.
        if let Some(current) = current
            && time(&current, "observed_at").is_some_and(|at| at > observed)
        {
            return Ok(current);
        }
        let write =
            Write { key: slot, value: Some(evidence.to_string()), expires_at_ms: Some(expires.as_millisecond()) };
        self.store.write(vec![write], self.now_ms()).await?;
        Ok(evidence)
    }

    /// Records that the webhook admitted `count` replicas now: the unit's count at once
    /// (observed now, expiring after the unit's replicas max age), and for the longer of the
    /// contract's cooldowns no collected count that contradicts it is stored
    /// ([`Self::put_replicas`]), so that no decision, KEDA's included, goes back to the old count.
    ///
    /// # Errors
    /// [`UnitError::Store`] when the store cannot be written.
    pub async fn record_admitted_count(&self, key: &UnitKey, count: u64) -> Result<(), UnitError> {
        let (value, expires_at_ms) =
            self.replicas_now(key, count, &format!("admission:{}/{}", key.namespace, key.name));
        let cooldown_s = self.contracts.load().get(key).map_or(0, |contract| contract.cooldown_s);
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
        self.store.write(writes, self.now_ms()).await
    }

    /// The unit's stored evidence, each with its age in seconds: `{"replicas", "signal",
    /// "capacities", "quotas", "continuity", "safety", "last_action_at"}` (`null` or `[]` for
    /// what is missing or expired).
    ///
    /// # Errors
    /// [`UnitError::UnknownUnit`] without a contract, [`UnitError::Store`].
    pub async fn evidence(&self, key: &UnitKey) -> Result<Value, UnitError> {
        let contract = self.contracts.load().get(key).cloned().ok_or_else(|| UnitError::UnknownUnit(key.clone()))?;
        let now_ms = self.now_ms();
        Ok(self.read_stored(key, &contract, now_ms).await?.view(now_ms))
    }

    /// One read of everything the unit's decision depends on (a single store round trip), so
    /// that a decision and the evidence shown beside it are the same observations.
    async fn read_stored(&self, key: &UnitKey, contract: &Contract, now_ms: i64) -> Result<Stored, UnitError> {
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

    /// Rescans the contracts folder every reload interval, forever (spawn it on the runtime).
    pub async fn watch(self: Arc<Self>) {
        let mut interval = tokio::time::interval(self.reload_interval);
        interval.tick().await;
        loop {
            interval.tick().await;
            log_report(&self.reload().await);
        }
    }

    async fn load_file(&self, path: &Path) -> Result<Arc<Contract>, String> {
        let text = read_contract(path).map_err(|error| format!("cannot read: {error}"))?;
        let is_yaml = path.extension().is_some_and(|extension| extension == "yaml" || extension == "yml");
        let json = if is_yaml { yaml_to_json(&text)? } else { text };
        self.validate(json, Some(path.to_owned())).await.map_err(|error| error.to_string())
    }

    /// Validates a contract through the active policy and reads what the registry needs from it.
    async fn validate(&self, text: String, source: Option<PathBuf>) -> Result<Arc<Contract>, UnitError> {
        // A key twice would be kept once below (the last): refused, as the core refuses it.
        crate::strict::check(text.as_bytes()).map_err(|error| {
            UnitError::Evaluation(EvaluationError::new(ErrorCode::InvalidJson, error.to_string(), ""))
        })?;
        let value: Value = serde_json::from_str(&text).map_err(|error| {
            UnitError::Evaluation(EvaluationError::new(ErrorCode::InvalidJson, error.to_string(), ""))
        })?;
        let compact = value.to_string();
        let registry = Arc::clone(&self.registry);
        let checked = compact.clone();
        let identity = self
            .workers
            .run(move || {
                let active = registry.active().ok_or(scale_units_host::RegistryError::NoActivePolicy)?;
                active.policy.validate_contract_json(&checked).map_err(scale_units_host::RegistryError::Host)
            })
            .await
            .map_err(|error| UnitError::Store(format!("the validation task failed: {error}")))?
            .map_err(UnitError::Policy)?
            .map_err(UnitError::Evaluation)?;
        let shape: ContractShape = serde_json::from_value(value).map_err(|error| {
            UnitError::Evaluation(EvaluationError::new(ErrorCode::InvalidField, error.to_string(), "contract"))
        })?;
        let mut axes: Vec<String> = Vec::new();
        let demand_axes = shape.replica_demands.into_iter().map(|demand| demand.axis);
        for axis in shape.required_capacity_axes.into_iter().chain(demand_axes).chain(shape.engine_authority_axes) {
            if !axes.contains(&axis) {
                axes.push(axis);
            }
        }
        let mut quota_refs: Vec<String> = Vec::new();
        for quota in shape.quotas {
            if !quota_refs.contains(&quota.quota_ref) {
                quota_refs.push(quota.quota_ref);
            }
        }
        Ok(Arc::new(Contract {
            text: compact,
            contract_id: identity.contract_id,
            min_replicas: shape.policy.min_replicas,
            max_replicas: shape.policy.max_replicas,
            cooldown_s: shape.policy.scale_up_cooldown_s.max(shape.policy.scale_down_cooldown_s),
            axes,
            quota_refs,
            source,
        }))
    }

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
        let contract = self.contracts.load().get(key).cloned().ok_or_else(|| UnitError::UnknownUnit(key.clone()))?;
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
        let registry = Arc::clone(&self.registry);
        let check = move || match registry.active() {
            Some(active) => match active.policy.validate_observations_json(&request) {
                Err(HostError::Unsupported { .. }) => registry.evaluate_json(&request).map(|outcome| outcome.map(drop)),
                checked => checked.map_err(RegistryError::Host),
            },
            None => registry.evaluate_json(&request).map(|outcome| outcome.map(drop)),
        };
        match self.workers.run(check).await {
            Ok(Ok(Ok(()))) => {}
            Ok(Ok(Err(error))) => return Err(UnitError::InvalidObservations(error)),
            Ok(Err(error)) => return Err(UnitError::Policy(error)),
            Err(error) => return Err(UnitError::Store(format!("the validation task failed: {error}"))),
        }

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
            Some(_) => self.store.read(&[admitted_slot(key)], self.now_ms()).await?.into_iter().flatten().next(),
            None => None,
        };
        let admitted = admitted
            .and_then(|text| serde_json::from_str::<Value>(&text).ok())
            .and_then(|value| value.get("count").and_then(Value::as_u64));
        if let Some(count) = replicas.filter(|count| admitted.is_none_or(|admitted| admitted == *count)) {
            let (value, expires_at_ms) = self.replicas_now(key, count, "push");
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
        self.store.write(writes, self.now_ms()).await?;
        Ok((written, forgotten))
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

    /// [`Self::evaluate`], with the decision's JSON as the component wrote it and its provenance.
    ///
    /// # Errors
    /// As [`Self::evaluate`].
    pub async fn decide(&self, key: &UnitKey, current_replicas: Option<u64>) -> Result<UnitDecision, UnitError> {
        let Some(contract) = self.contracts.load().get(key).cloned() else {
            return Ok(UnitDecision {
                verdict: UnitVerdict::NoContract,
                decision_json: None,
                provenance: None,
                last_action: None,
                evidence: None,
            });
        };
        let now_ms = self.now_ms();
        let stored = self.read_stored(key, &contract, now_ms).await?;
        let evidence = stored.view(now_ms);
        let Stored { signal, continuity, safety, replicas, last_action: pushed, capacities, quotas, admitted } = stored;
        let known = self.ledger.known(&key.to_string(), now_ms).await?;
        let last_action = LastAction::of(known, pushed);
        let current = match current_replicas {
            Some(count) => count,
            None => standing_count(replicas.as_deref(), admitted.as_deref(), now_ms)
                .and_then(|value| value.get("count").and_then(Value::as_u64))
                .ok_or_else(|| UnitError::UnknownReplicas(key.clone()))?,
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
                    eprintln!("scale-units serve: the stored {what} of {key} is not one JSON object: taken as missing");
                    return None;
                }
            };
            if let Some((field, name)) = field
                && value.get(field).and_then(Value::as_str) != Some(name)
            {
                eprintln!("scale-units serve: the stored {what} of {key} names another {field}: taken as missing");
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
        let contract_value: Value = serde_json::from_str(&contract.text).map_err(|error| {
            UnitError::Evaluation(EvaluationError::new(ErrorCode::InvalidJson, error.to_string(), "contract"))
        })?;
        let mut request = Map::new();
        request.insert("contract".to_owned(), contract_value);
        request.insert("current_replicas".to_owned(), Value::from(current));
        request.insert("now".to_owned(), Value::String(self.now()));
        request.insert("signal".to_owned(), slot(signal, "signal", None).unwrap_or(Value::Null));
        request.insert("capacities".to_owned(), Value::Array(capacities));
        request.insert("quotas".to_owned(), Value::Array(quotas));
        request.insert("continuity".to_owned(), slot(continuity, "continuity", None).unwrap_or(Value::Null));
        request.insert("safety".to_owned(), slot(safety, "safety", None).unwrap_or(Value::Null));
        request.insert("last_action_at".to_owned(), last_action.at.clone().map_or(Value::Null, Value::String));
        let request = Value::Object(request).to_string();
        let registry = Arc::clone(&self.registry);
        let served = match self.workers.run(move || registry.evaluate_json(&request)).await {
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
            evidence: Some(evidence),
        })
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

/// The replica count a decision stands on, from the stored count and the count the webhook
/// admitted (kept for the contract's cooldown): each counts only while fresh by this replica's
/// clock (`observed_at <= now < expires_at`, as the evaluator reads every observation), whatever
/// the store's own expiry (another replica's clock wrote it); and while an admitted count is
/// kept, a stored count that contradicts it does not stand ([`Units::put_replicas`] refuses to
/// store one, but a collector that read before the admission may write after it: checked here,
/// where no race can pass it).
/// The stored texts a unit's decision reads, in one snapshot.
struct Stored {
    signal: Option<String>,
    continuity: Option<String>,
    safety: Option<String>,
    replicas: Option<String>,
    last_action: Option<String>,
    capacities: Vec<Option<String>>,
    quotas: Vec<Option<String>>,
    admitted: Option<String>,
}

impl Stored {
    /// The evidence as the unit routes show it: each observation with its age in seconds
    /// (`null` or `[]` for what is missing or expired).
    fn view(&self, now_ms: i64) -> Value {
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

fn standing_count(replicas: Option<&str>, admitted: Option<&str>, now_ms: i64) -> Option<Value> {
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

fn timestamp(time: SystemTime) -> jiff::Timestamp {
    let seconds = match time.duration_since(UNIX_EPOCH) {
        Ok(elapsed) => i64::try_from(elapsed.as_secs()).unwrap_or(i64::MAX),
        Err(before) => i64::try_from(before.duration().as_secs()).map_or(i64::MIN, |seconds| -seconds),
    };
    jiff::Timestamp::from_second(seconds).unwrap_or(jiff::Timestamp::UNIX_EPOCH)
}

/// Reads a sources file named `<stem>.sources.<extension>`.
fn load_sources(path: &Path, stem: &str, yaml: bool) -> Result<(UnitKey, Arc<LoadedSources>), String> {
    let key = UnitKey::from_file_name(&format!("{stem}.json")).map_err(|error| error.to_string())?;
    // Read as a contract is: a regular file of at most 1 MiB, never read whole past it.
    let text = read_contract(path).map_err(|error| format!("cannot read: {error}"))?;
    let sources = Sources::parse(&text, yaml).map_err(|error| format!("sources refused: {error}"))?;
    Ok((key, Arc::new(LoadedSources { sources: Arc::new(sources), path: path.to_owned() })))
}

fn log_report(report: &ReloadReport) {
    for key in &report.sources_loaded {
        eprintln!("scale-units serve: sources of {key} loaded");
    }
    for key in &report.sources_removed {
        eprintln!("scale-units serve: sources of {key} removed (their file is gone)");
    }
    for key in &report.loaded {
        eprintln!("scale-units serve: contract of {key} loaded");
    }
    for key in &report.removed {
        eprintln!("scale-units serve: contract of {key} removed (its file is gone)");
    }
    for (path, reason) in &report.refused {
        eprintln!("scale-units serve: contract {} refused, the previous one stays: {reason}", path.display());
    }
}

/// How long an observation is kept at most, whatever its `expires_at`: a day.
const MAX_OBSERVATION_KEEP_MS: i64 = 24 * 3600 * 1000;

/// The largest contract or sources file read: a ConfigMap holds at most 1 MiB.
const MAX_CONTRACT_BYTES: u64 = 1 << 20;

/// A contract or sources file's text, when it is a regular file of at most [`MAX_CONTRACT_BYTES`].
fn read_contract(path: &Path) -> std::io::Result<String> {
    use std::io::Read as _;
    let file = std::fs::File::open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a regular file"));
    }
    let mut text = String::new();
    file.take(MAX_CONTRACT_BYTES.saturating_add(1)).read_to_string(&mut text)?;
    if u64::try_from(text.len()).unwrap_or(u64::MAX) > MAX_CONTRACT_BYTES {
        return Err(std::io::Error::new(
            std::io::ErrorKind::FileTooLarge,
            format!("larger than {MAX_CONTRACT_BYTES} bytes"),
        ));
    }
    Ok(text)
}

fn yaml_to_json(text: &str) -> Result<String, String> {
    // As the CLI reads YAML: YAML 1.2 booleans only, a duplicate key is an error.
    let options = serde_saphyr::options! {
        strict_booleans: true,
        duplicate_keys: serde_saphyr::DuplicateKeyPolicy::Error,
    };
    let value: Value = serde_saphyr::from_str_with_options(text, options)
        .map_err(|error| format!("the document is not valid YAML: {error}"))?;
    Ok(value.to_string())
}

#[cfg(test)]
mod tests {
    use super::UnitKey;

    #[test]
    fn file_names_split_at_the_first_dot() {
        let key = UnitKey::from_file_name("shop.api.v2.yaml").unwrap();
        assert_eq!((key.namespace.as_str(), key.name.as_str()), ("shop", "api.v2"));
        assert!(UnitKey::from_file_name("shop.json").is_err());
        assert!(UnitKey::from_file_name("Shop.api.json").is_err());
        assert!(UnitKey::from_file_name("shop.api.txt").is_err());
        assert!(UnitKey::new("-shop", "api").is_err());
        assert!(UnitKey::new("shop", "api..x").is_err());
    }
}
