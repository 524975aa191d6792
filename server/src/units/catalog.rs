//! The catalog: each unit's contract and sources file, loaded from the contracts folder (a
//! mounted ConfigMap) and rescanned by [`Units::watch`](super::Units::watch). A contract is
//! validated by the active policy before it replaces the unit's previous one.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use arc_swap::ArcSwap;
use scale_units_core::{ErrorCode, EvaluationError};
use scale_units_host::PolicyRegistry;
use serde::Deserialize;
use serde_json::Value;

use super::{ReloadReport, UnitError, UnitKey};
use crate::kubernetes::resource::Mode;
use crate::sources::Sources;

/// A unit's sources, with the file they came from.
#[derive(Debug)]
pub(crate) struct LoadedSources {
    pub(crate) sources: Arc<Sources>,
    /// The file, or `None` for a `ScaleUnit`'s `spec.sources` (never removed by a folder scan).
    pub(crate) path: Option<PathBuf>,
}

/// A loaded, validated contract.
#[derive(Debug)]
pub(crate) struct Contract {
    /// The contract as compact JSON.
    pub(crate) text: String,
    pub(crate) contract_id: String,
    /// `policy.min_replicas`: a replica count every valid request accepts.
    pub(crate) min_replicas: u64,
    /// `policy.max_replicas` (the admission webhook's recovery toward bounds).
    pub(crate) max_replicas: u64,
    /// The longer of the policy's cooldowns: how long an admitted count overrules reads that
    /// contradict it.
    pub(crate) cooldown_s: u64,
    /// Axes whose capacity observations the evaluator reads (required, demand and engine axes).
    pub(crate) axes: Vec<String>,
    /// The `quota_ref` of each binding.
    pub(crate) quota_refs: Vec<String>,
    /// The file it came from (`None`: set through [`Units::set_contract`] or a `ScaleUnit`).
    pub(crate) source: Option<PathBuf>,
    /// It came from a `ScaleUnit` resource (issue 38): a file naming the same unit is refused.
    pub(crate) resource: bool,
    /// How a change its decision does not allow is answered (a file's: `Enforce`).
    pub(crate) mode: Mode,
}

/// The fields of a contract the registry needs, read after the component accepted it.
#[derive(Deserialize)]
pub(crate) struct ContractShape {
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
pub(crate) struct AxisOf {
    axis: String,
}

#[derive(Deserialize)]
pub(crate) struct QuotaOf {
    quota_ref: String,
}

#[derive(Deserialize)]
pub(crate) struct PolicyOf {
    #[serde(default = "one")]
    pub(crate) min_replicas: u64,
    #[serde(default = "one")]
    pub(crate) max_replicas: u64,
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

type Stamp = Option<(SystemTime, u64)>;

/// The contracts and sources files of every unit.
pub(crate) struct Catalog {
    pub(crate) registry: Arc<PolicyRegistry>,
    pub(crate) workers: Arc<crate::workers::Workers>,
    pub(crate) contracts: ArcSwap<BTreeMap<UnitKey, Arc<Contract>>>,
    pub(crate) dir: Option<PathBuf>,
    pub(crate) reload_interval: Duration,
    /// The stamp (modification time, length) of each contract file at its last scan.
    stamps: Mutex<HashMap<PathBuf, Stamp>>,
    /// Units defined by more than one file at the last scan.
    duplicated: Mutex<BTreeSet<UnitKey>>,
    /// Each unit's sources file, for the collectors (`crate::collect`).
    sources: ArcSwap<BTreeMap<UnitKey, Arc<LoadedSources>>>,
}

impl Catalog {
    pub(crate) fn new(
        registry: Arc<PolicyRegistry>,
        workers: Arc<crate::workers::Workers>,
        dir: Option<PathBuf>,
        reload_interval: Duration,
    ) -> Self {
        Self {
            registry,
            workers,
            contracts: ArcSwap::from_pointee(BTreeMap::new()),
            dir,
            reload_interval,
            stamps: Mutex::new(HashMap::new()),
            duplicated: Mutex::new(BTreeSet::new()),
            sources: ArcSwap::from_pointee(BTreeMap::new()),
        }
    }

    /// The unit's contract, when one is loaded.
    pub(crate) fn contract(&self, key: &UnitKey) -> Option<Arc<Contract>> {
        self.contracts.load().get(key).cloned()
    }

    /// The number of units with a contract.
    pub(crate) fn len(&self) -> usize {
        self.contracts.load().len()
    }

    pub(crate) fn keys(&self) -> Vec<UnitKey> {
        self.contracts.load().keys().cloned().collect()
    }

    pub(crate) async fn set_contract(&self, key: UnitKey, contract: &str) -> Result<String, UnitError> {
        let contract = self.validate(contract.to_owned(), None, false, Mode::Enforce).await?;
        let contract_id = contract.contract_id.clone();
        self.contracts.rcu(|contracts| {
            let mut contracts = BTreeMap::clone(contracts);
            contracts.insert(key.clone(), Arc::clone(&contract));
            contracts
        });
        Ok(contract_id)
    }

    /// Sets a unit from a `ScaleUnit` resource: its contract (validated by the active policy),
    /// its sources and its mode. A unit a contract file defines is refused (neither way in wins
    /// silently); the resource then keeps nothing.
    pub(crate) async fn set_resource(
        &self,
        key: UnitKey,
        contract: &str,
        sources: Option<Sources>,
        mode: Mode,
    ) -> Result<String, UnitError> {
        if self.contract(&key).is_some_and(|held| held.source.is_some()) {
            return Err(UnitError::Config(format!(
                "{key} is defined by a contract file of the contracts folder: remove the file or the ScaleUnit"
            )));
        }
        let contract = self.validate(contract.to_owned(), None, true, mode).await?;
        let contract_id = contract.contract_id.clone();
        self.contracts.rcu(|contracts| {
            let mut contracts = BTreeMap::clone(contracts);
            contracts.insert(key.clone(), Arc::clone(&contract));
            contracts
        });
        let loaded = sources.map(|sources| Arc::new(LoadedSources { sources: Arc::new(sources), path: None }));
        self.sources.rcu(|held| {
            let mut held = BTreeMap::clone(held);
            match &loaded {
                Some(loaded) => {
                    held.insert(key.clone(), Arc::clone(loaded));
                }
                None => {
                    if held.get(&key).is_some_and(|sources| sources.path.is_none()) {
                        held.remove(&key);
                    }
                }
            }
            held
        });
        Ok(contract_id)
    }

    /// Removes a unit a `ScaleUnit` resource defined (the resource was deleted, or refused).
    /// Returns whether it was there.
    pub(crate) fn remove_resource(&self, key: &UnitKey) -> bool {
        let mut removed = false;
        self.contracts.rcu(|contracts| {
            let mut contracts = BTreeMap::clone(contracts);
            removed = contracts.get(key).is_some_and(|contract| contract.resource);
            if removed {
                contracts.remove(key);
            }
            contracts
        });
        self.sources.rcu(|held| {
            let mut held = BTreeMap::clone(held);
            if held.get(key).is_some_and(|sources| sources.path.is_none()) {
                held.remove(key);
            }
            held
        });
        removed
    }

    /// The unit's mode (`None` without a contract).
    pub(crate) fn mode(&self, key: &UnitKey) -> Option<Mode> {
        self.contract(key).map(|contract| contract.mode)
    }

    pub(crate) async fn reload(&self) -> ReloadReport {
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
            if let Some((stem, yaml)) = crate::sources::unit_of_file(file_name) {
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
            if current.get(key).is_some_and(|contract| contract.resource) {
                duplicated.insert(key.clone());
                continue;
            }
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
                let reason = if current.get(key).is_some_and(|contract| contract.resource) {
                    format!("{key} is defined by a ScaleUnit resource: {} is not taken", names.join(", "))
                } else {
                    format!("{key} is defined twice ({}): neither is taken", names.join(", "))
                };
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
                if sources.get(key).is_some_and(|held| held.path.is_none()) {
                    continue;
                }
                sources.insert(key.clone(), Arc::clone(loaded));
            }
            sources_removed.clear();
            sources.retain(|key, loaded| {
                let kept = loaded.path.as_ref().is_none_or(|path| present.contains_key(path));
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
    pub(crate) fn duplicated(&self) -> Vec<UnitKey> {
        self.duplicated.lock().unwrap_or_else(PoisonError::into_inner).iter().cloned().collect()
    }

    /// The unit's sources (its `<namespace>.<name>.sources.*` file), when one is loaded.
    pub(crate) fn sources(&self, key: &UnitKey) -> Option<Arc<Sources>> {
        self.sources.load().get(key).map(|loaded| Arc::clone(&loaded.sources))
    }

    /// The units with a sources file, in order.
    pub(crate) fn source_keys(&self) -> Vec<UnitKey> {
        self.sources.load().keys().cloned().collect()
    }

    async fn load_file(&self, path: &Path) -> Result<Arc<Contract>, String> {
        let text = read_contract(path).map_err(|error| format!("cannot read: {error}"))?;
        let is_yaml = path.extension().is_some_and(|extension| extension == "yaml" || extension == "yml");
        let json = if is_yaml { yaml_to_json(&text)? } else { text };
        self.validate(json, Some(path.to_owned()), false, Mode::Enforce).await.map_err(|error| error.to_string())
    }

    /// Validates a contract through the active policy and reads what the registry needs from it.
    async fn validate(
        &self,
        text: String,
        source: Option<PathBuf>,
        resource: bool,
        mode: Mode,
    ) -> Result<Arc<Contract>, UnitError> {
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
            resource,
            mode,
        }))
    }
}

/// Reads a sources file named `<stem>.sources.<extension>`.
fn load_sources(path: &Path, stem: &str, yaml: bool) -> Result<(UnitKey, Arc<LoadedSources>), String> {
    let key = UnitKey::from_file_name(&format!("{stem}.json")).map_err(|error| error.to_string())?;
    // Read as a contract is: a regular file of at most 1 MiB, never read whole past it.
    let text = read_contract(path).map_err(|error| format!("cannot read: {error}"))?;
    let sources = Sources::parse(&text, yaml).map_err(|error| format!("sources refused: {error}"))?;
    Ok((key, Arc::new(LoadedSources { sources: Arc::new(sources), path: Some(path.to_owned()) })))
}

pub(crate) fn log_report(report: &ReloadReport) {
    for key in &report.sources_loaded {
        tracing::info!(unit = %key, "sources loaded");
    }
    for key in &report.sources_removed {
        tracing::info!(unit = %key, "sources removed (their file is gone)");
    }
    for key in &report.loaded {
        tracing::info!(unit = %key, "contract loaded");
    }
    for key in &report.removed {
        tracing::info!(unit = %key, "contract removed (its file is gone)");
    }
    for (path, reason) in &report.refused {
        // The file's name and the reason in the message itself: an operator reading text logs
        // (and the tests) sees which file and why on one line.
        let name =
            path.file_name().map_or_else(|| path.display().to_string(), |name| name.to_string_lossy().into_owned());
        tracing::warn!(file = %path.display(), "{name} refused (what it held before stays): {reason}");
    }
}

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
