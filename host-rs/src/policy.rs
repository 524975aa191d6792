//! [`Policy`]: one verified, compiled evaluator component, and the calls into it.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use scale_units_core::{
    ContractIdentity, Decision, Derivation, Diagnosis, EvaluationError, EvaluationRequest, ScaleUnitContract,
    SurfaceKind,
};
use sha2::{Digest, Sha256};
use wasmtime::component::{Component, InstancePre, Linker};
use wasmtime::{Config, Engine, ResourceLimiter, Store, StoreLimits, StoreLimitsBuilder, Trap};

use crate::bindings::wit;
use crate::cache::CacheStatus;
use crate::exports::{self, ExportIndices, Funcs};
use crate::{EvaluatorInfo, Explanation, HostError, Profile, cache, convert};

/// The schema version this host speaks.
const SUPPORTED_SCHEMA: &str = "1";

/// The largest JSON text, in bytes, the `*_json` calls pass to the component (1 MiB); longer
/// text is refused with [`HostError::RequestTooLarge`] before the component sees it. The core has
/// no limit of its own; the largest valid request (64 observations of each kind, every reference
/// at its 256-byte bound) is well under 200 KiB. The service's default body limit is the same.
pub const MAX_REQUEST_BYTES: usize = 1 << 20;

/// Refuses JSON text longer than [`MAX_REQUEST_BYTES`].
fn within_limit(text: &str) -> Result<(), HostError> {
    if text.len() > MAX_REQUEST_BYTES {
        return Err(HostError::RequestTooLarge { bytes: text.len(), limit: MAX_REQUEST_BYTES });
    }
    Ok(())
}

/// Where a result came from: the component that computed it and the evaluator inside.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Provenance {
    /// `sha256:` and the hex sha256 of the component's bytes: the evaluator's identity.
    pub component_digest: String,
    /// The evaluator version the component reported through `info`.
    pub evaluator_version: String,
}

/// A result with its [`Provenance`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Evaluated<T> {
    /// The decision (typed, or its JSON text).
    pub decision: T,
    /// The component and evaluator that produced it.
    pub provenance: Arc<Provenance>,
}

/// How a [`Policy`] is loaded and run. Start from [`Policy::builder`].
#[derive(Clone, Debug)]
pub struct PolicyBuilder {
    expected_digest: Option<String>,
    cache_dir: Option<PathBuf>,
    cache_max_entries: usize,
    fuel: u64,
    memory_limit: usize,
    max_idle_instances: usize,
}

impl Default for PolicyBuilder {
    fn default() -> Self {
        Self {
            expected_digest: None,
            cache_dir: None,
            cache_max_entries: PolicyBuilder::DEFAULT_CACHE_MAX_ENTRIES,
            fuel: PolicyBuilder::DEFAULT_FUEL,
            memory_limit: PolicyBuilder::DEFAULT_MEMORY_LIMIT,
            max_idle_instances: PolicyBuilder::DEFAULT_MAX_IDLE_INSTANCES,
        }
    }
}

impl PolicyBuilder {
    /// Fuel per call: about a thousand times what the largest valid request needs.
    pub const DEFAULT_FUEL: u64 = 1_000_000_000;
    /// Linear-memory limit per instance: 64 MiB.
    pub const DEFAULT_MEMORY_LIMIT: usize = 64 << 20;
    /// Idle instances kept for reuse.
    pub const DEFAULT_MAX_IDLE_INSTANCES: usize = 8;
    /// Compilations kept in the cache folder: twice the registry's default staged policies
    /// (about 40 MB).
    pub const DEFAULT_CACHE_MAX_ENTRIES: usize = 32;

    /// Refuses a component whose sha256 is not `digest` (`sha256:` and 64 lower-case hex digits).
    pub fn expected_digest(mut self, digest: impl Into<String>) -> Self {
        self.expected_digest = Some(digest.into());
        self
    }

    /// Keeps compiled components in `dir` (see [`default_cache_dir`](crate::default_cache_dir));
    /// without it every load compiles.
    pub fn cache_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cache_dir = Some(dir.into());
        self
    }

    /// Keeps at most `entries` compilations in the cache folder (at least 1): each store removes
    /// the least recently written past it.
    pub fn cache_max_entries(mut self, entries: usize) -> Self {
        self.cache_max_entries = entries.max(1);
        self
    }

    /// Whether a cache folder was set.
    pub(crate) fn has_cache_dir(&self) -> bool {
        self.cache_dir.is_some()
    }

    /// The fuel budget of one call; a call that runs out fails with [`HostError::OutOfFuel`].
    pub fn fuel(mut self, fuel: u64) -> Self {
        self.fuel = fuel;
        self
    }

    /// The linear-memory limit of one instance, in bytes; growing past it fails the call with
    /// [`HostError::MemoryLimit`].
    pub fn memory_limit(mut self, bytes: usize) -> Self {
        self.memory_limit = bytes;
        self
    }

    /// How many idle instances are kept for reuse (0: a fresh instance for every call).
    pub fn max_idle_instances(mut self, count: usize) -> Self {
        self.max_idle_instances = count;
        self
    }

    /// Loads the component at `path`.
    ///
    /// # Errors
    /// [`HostError::Io`] when the file cannot be read, and every error of [`Self::load`].
    pub fn load_file(self, path: impl AsRef<Path>) -> Result<Policy, HostError> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|source| HostError::Io { path: path.to_owned(), source })?;
        self.load(&bytes)
    }

    /// Verifies, compiles (or loads from the cache) and checks the component in `bytes`.
    ///
    /// # Errors
    /// [`HostError::InvalidExpectedDigest`], [`HostError::DigestMismatch`],
    /// [`HostError::InvalidComponent`], [`HostError::Imports`], [`HostError::WrongWorld`],
    /// [`HostError::Incompatible`], and the call errors of `info`.
    pub fn load(self, bytes: &[u8]) -> Result<Policy, HostError> {
        let (mut policy, pending) = self.load_unstored(bytes)?;
        policy.store_compilation(pending);
        Ok(policy)
    }

    /// [`Self::load`] without storing the compilation: the caller stores it (with
    /// [`PendingStore::store`]) once it accepts the component, so that nothing it refuses is
    /// cached. Everything that can be checked without compiling is checked first.
    pub(crate) fn load_unstored(self, bytes: &[u8]) -> Result<(Policy, Option<PendingStore>), HostError> {
        let sha: [u8; 32] = Sha256::digest(bytes).into();
        let digest = format!("sha256:{}", cache::hex(&sha));
        if let Some(expected) = &self.expected_digest {
            let well_formed = expected.strip_prefix("sha256:").is_some_and(|hex| {
                hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            });
            if !well_formed {
                return Err(HostError::InvalidExpectedDigest(expected.clone()));
            }
            if *expected != digest {
                return Err(HostError::DigestMismatch { expected: expected.clone(), actual: digest });
            }
        }

        // Cheap before costly: a core module, an import or no evaluator export is refused before
        // cranelift runs or the cache is touched.
        crate::inspect::inspect(bytes, &digest)?;
        let engine = engine()?;
        let (component, cache_status, pending) = self.compile(&engine, bytes, &sha, &digest)?;

        let component_type = component.component_type();
        let imports: Vec<String> = component_type.imports(&engine).map(|(name, _)| name.to_owned()).collect();
        if !imports.is_empty() {
            return Err(HostError::Imports { imports });
        }
        let linker = Linker::<Limits>::new(&engine);
        let pre = linker
            .instantiate_pre(&component)
            .map_err(|error| HostError::WrongWorld { reason: format!("{error:#}") })?;
        let exports = ExportIndices::new(&component).map_err(|reason| HostError::WrongWorld { reason })?;

        let mut policy = Policy {
            engine,
            pre,
            exports,
            fuel: self.fuel,
            memory_limit: self.memory_limit,
            max_idle_instances: self.max_idle_instances,
            idle: Mutex::new(Vec::new()),
            info: EvaluatorInfo::default(),
            provenance: Arc::new(Provenance { component_digest: digest, evaluator_version: String::new() }),
            cache_status,
        };
        // The first instance type-checks every export: a mismatch refuses the component.
        let instance = policy.instantiate()?;
        policy.idle.lock().unwrap_or_else(PoisonError::into_inner).push(instance);
        let info = policy.call(|store, funcs| funcs.info.call(store, ()).map(|(info,)| info))?;
        let info = convert::info(info);
        if info.schema_version != SUPPORTED_SCHEMA {
            let reason = format!("schema {:?} (this host speaks {SUPPORTED_SCHEMA:?})", info.schema_version);
            return Err(HostError::Incompatible { info, reason });
        }
        // The interface name found fixes the WIT minor; `info` must report that same minor.
        let wit_prefix = policy.exports.wit_prefix;
        if !info.wit_version.starts_with(wit_prefix) {
            let reason = format!(
                "WIT {:?} (the component exports {}, so this host expects {wit_prefix}x)",
                info.wit_version, policy.exports.interface
            );
            return Err(HostError::Incompatible { info, reason });
        }
        policy.provenance = Arc::new(Provenance {
            component_digest: policy.provenance.component_digest.clone(),
            evaluator_version: info.evaluator_version.clone(),
        });
        policy.info = info;
        Ok((policy, pending))
    }

    /// The compiled component (from the cache when an entry there matches), its cache status
    /// and, when it was compiled here, the store into the cache still to do.
    fn compile(
        &self,
        engine: &Engine,
        bytes: &[u8],
        sha: &[u8; 32],
        digest: &str,
    ) -> Result<(Component, CacheStatus, Option<PendingStore>), HostError> {
        let cached = self.cache_dir.as_deref().map(|dir| cache::path(dir, sha, engine));
        if let Some(file) = &cached
            && let Some(component) = cache::load(file, sha, engine)
        {
            return Ok((component, CacheStatus::Loaded, None));
        }
        let component = Component::new(engine, bytes)
            .map_err(|error| HostError::InvalidComponent { digest: digest.to_owned(), reason: format!("{error:#}") })?;
        let keep = self.cache_max_entries;
        let pending = cached.map(|file| PendingStore { file, sha: *sha, component: component.clone(), keep });
        Ok((component, CacheStatus::Disabled, pending))
    }
}

/// A compilation not yet written to the cache (see [`PolicyBuilder::load_unstored`]).
pub(crate) struct PendingStore {
    file: PathBuf,
    sha: [u8; 32],
    component: Component,
    keep: usize,
}

impl PendingStore {
    /// Writes the compilation into the cache: `Stored`, or `NotStored` with the reason.
    pub(crate) fn store(self) -> CacheStatus {
        cache::store(&self.file, &self.sha, &self.component, self.keep)
    }
}

/// Reads the derivation JSON the component wrote.
fn parse_derivation(json: &str) -> Result<Derivation, HostError> {
    serde_json::from_str(json).map_err(|error| HostError::Trap {
        message: format!("the component returned an unreadable derivation: {error}"),
    })
}

/// The one engine configuration: Cranelift, fuel metering, no WASI, no threads.
fn engine() -> Result<Engine, HostError> {
    let mut config = Config::new();
    config.consume_fuel(true);
    Engine::new(&config).map_err(|error| HostError::Engine { message: format!("{error:#}") })
}

/// A loaded evaluator component: verified, compiled once, and called under a fuel budget and a
/// memory limit.
///
/// `Policy` is `Send + Sync`: share it (in an `Arc`) between threads. Idle instances are reused
/// across calls, which is sound because the evaluator keeps no state between calls; an instance
/// whose call failed in any way (trap, fuel, memory) is dropped, never reused.
pub struct Policy {
    engine: Engine,
    pre: InstancePre<Limits>,
    exports: ExportIndices,
    fuel: u64,
    memory_limit: usize,
    max_idle_instances: usize,
    idle: Mutex<Vec<Instance>>,
    info: EvaluatorInfo,
    provenance: Arc<Provenance>,
    cache_status: CacheStatus,
}

struct Instance {
    store: Store<Limits>,
    funcs: Funcs,
}

/// The store's resource limiter: wasmtime's [`StoreLimits`], plus a record of whether a memory
/// growth was refused, so that the failure is reported as [`HostError::MemoryLimit`].
struct Limits {
    limits: StoreLimits,
    memory_refused: bool,
}

impl ResourceLimiter for Limits {
    fn memory_growing(&mut self, current: usize, desired: usize, maximum: Option<usize>) -> wasmtime::Result<bool> {
        let allowed = self.limits.memory_growing(current, desired, maximum)?;
        if !allowed {
            // Trap rather than let `memory.grow` return -1: the call fails at the growth.
            self.memory_refused = true;
            wasmtime::bail!("memory limit reached: {desired} bytes requested");
        }
        Ok(true)
    }

    fn table_growing(&mut self, current: usize, desired: usize, maximum: Option<usize>) -> wasmtime::Result<bool> {
        self.limits.table_growing(current, desired, maximum)
    }

    fn instances(&self) -> usize {
        self.limits.instances()
    }

    fn tables(&self) -> usize {
        self.limits.tables()
    }

    fn memories(&self) -> usize {
        self.limits.memories()
    }
}

impl Policy {
    /// Loads a component from bytes with the default settings (no cache, no expected digest).
    ///
    /// # Errors
    /// See [`PolicyBuilder::load`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, HostError> {
        PolicyBuilder::default().load(bytes)
    }

    /// Loads a component file with the default settings.
    ///
    /// # Errors
    /// See [`PolicyBuilder::load_file`].
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, HostError> {
        PolicyBuilder::default().load_file(path)
    }

    /// Settings for loading: expected digest, cache, fuel, memory, instance reuse.
    pub fn builder() -> PolicyBuilder {
        PolicyBuilder::default()
    }

    /// The component's digest, `sha256:` and 64 hex digits.
    pub fn digest(&self) -> &str {
        &self.provenance.component_digest
    }

    /// Writes a compilation [`PolicyBuilder::load_unstored`] left pending into the cache.
    pub(crate) fn store_compilation(&mut self, pending: Option<PendingStore>) {
        if let Some(pending) = pending {
            self.cache_status = pending.store();
        }
    }

    /// Whether the compilation came from, or went into, the precompiled cache.
    pub fn cache_status(&self) -> &CacheStatus {
        &self.cache_status
    }

    /// What the component reported about itself when it was loaded.
    pub fn info(&self) -> &EvaluatorInfo {
        &self.info
    }

    /// The provenance every result of this policy carries.
    pub fn provenance(&self) -> &Arc<Provenance> {
        &self.provenance
    }

    /// Evaluates a typed request inside the component.
    ///
    /// # Errors
    /// The outer `Err` is a [`HostError`] (the call failed: fuel, memory, trap); the inner `Err`
    /// is the evaluator's typed [`EvaluationError`] for a request it cannot decide on.
    pub fn evaluate(
        &self,
        request: &EvaluationRequest,
    ) -> Result<Result<Evaluated<Decision>, EvaluationError>, HostError> {
        let request = convert::request(request);
        let outcome = self.call(|store, funcs| exports::call(&funcs.evaluate, store, request))?;
        Ok(outcome.map(|decision| self.evaluated(convert::decision(decision))).map_err(convert::error))
    }

    /// Evaluates a request given as JSON text, parsed inside the component; the decision comes
    /// back as the compact JSON the core writes.
    ///
    /// # Errors
    /// As [`Self::evaluate`]; the inner error includes `invalid_json`; text over
    /// [`MAX_REQUEST_BYTES`] is [`HostError::RequestTooLarge`].
    pub fn evaluate_json(&self, request: &str) -> Result<Result<Evaluated<String>, EvaluationError>, HostError> {
        within_limit(request)?;
        let outcome = self.call(|store, funcs| exports::call(&funcs.evaluate_json, store, request.to_owned()))?;
        Ok(outcome.map(|decision| self.evaluated(decision.json)).map_err(convert::error))
    }

    /// Evaluates many typed requests in one call into the component (the WIT `evaluate-batch`):
    /// one result per request, in order, each what [`Self::evaluate`] gives for it. One instance,
    /// one crossing and one fuel budget ([`PolicyBuilder::fuel`]) serve the whole batch.
    ///
    /// # Errors
    /// The outer `Err` is a [`HostError`] for the whole call (fuel, memory, trap); each inner
    /// `Err` is the evaluator's typed [`EvaluationError`] for that request.
    pub fn evaluate_batch(
        &self,
        requests: &[EvaluationRequest],
    ) -> Result<Vec<Result<Evaluated<Decision>, EvaluationError>>, HostError> {
        let requests: Vec<wit::EvaluationRequest> = requests.iter().map(convert::request).collect();
        let outcomes = self.call(|store, funcs| exports::call(&funcs.evaluate_batch, store, requests))?;
        Ok(outcomes
            .into_iter()
            .map(|outcome| outcome.map(|decision| self.evaluated(convert::decision(decision))).map_err(convert::error))
            .collect())
    }

    /// Evaluates many requests given as JSON texts in one call (the WIT `evaluate-batch-json`):
    /// one result per text, in order, each what [`Self::evaluate_json`] gives for it.
    ///
    /// # Errors
    /// As [`Self::evaluate_batch`]; a text over [`MAX_REQUEST_BYTES`] fails the whole call with
    /// [`HostError::RequestTooLarge`] before the component sees any.
    pub fn evaluate_batch_json<S: AsRef<str>>(
        &self,
        requests: &[S],
    ) -> Result<Vec<Result<Evaluated<String>, EvaluationError>>, HostError> {
        let requests: Vec<String> = requests
            .iter()
            .map(|text| within_limit(text.as_ref()).map(|()| text.as_ref().to_owned()))
            .collect::<Result<_, _>>()?;
        let outcomes = self.call(|store, funcs| exports::call(&funcs.evaluate_batch_json, store, requests))?;
        Ok(outcomes
            .into_iter()
            .map(|outcome| outcome.map(|decision| self.evaluated(decision.json)).map_err(convert::error))
            .collect())
    }

    /// Validates a typed contract inside the component and returns its identity.
    ///
    /// # Errors
    /// As [`Self::evaluate`].
    pub fn validate_contract(
        &self,
        contract: &ScaleUnitContract,
    ) -> Result<Result<ContractIdentity, EvaluationError>, HostError> {
        let contract = convert::contract(contract);
        let outcome = self.call(|store, funcs| exports::call(&funcs.validate_contract, store, contract))?;
        Ok(outcome.map(convert::identity).map_err(convert::error))
    }

    /// Validates a contract given as JSON text inside the component and returns its identity.
    ///
    /// # Errors
    /// As [`Self::evaluate`]; the inner error includes `invalid_json`; text over
    /// [`MAX_REQUEST_BYTES`] is [`HostError::RequestTooLarge`].
    pub fn validate_contract_json(
        &self,
        contract: &str,
    ) -> Result<Result<ContractIdentity, EvaluationError>, HostError> {
        within_limit(contract)?;
        let outcome =
            self.call(|store, funcs| exports::call(&funcs.validate_contract_json, store, contract.to_owned()))?;
        Ok(outcome.map(convert::identity).map_err(convert::error))
    }

    /// Replays a contract over a trace inside the component (the WIT `simulate-json`): input and
    /// output are the JSON documents that function describes.
    ///
    /// # Errors
    /// As [`Self::evaluate`]; the inner error names the trace row and column of a bad cell; text
    /// over [`MAX_REQUEST_BYTES`] is [`HostError::RequestTooLarge`].
    pub fn simulate_json(&self, input: &str) -> Result<Result<String, EvaluationError>, HostError> {
        within_limit(input)?;
        let outcome = self.call(|store, funcs| exports::call(&funcs.simulate_json, store, input.to_owned()))?;
        Ok(outcome.map(|simulation| simulation.json).map_err(convert::error))
    }

    /// The static profile of a surface (SPEC §4.3), as the component knows it.
    ///
    /// # Errors
    /// A [`HostError`] when the call fails.
    pub fn surface_profile(&self, surface: SurfaceKind) -> Result<Profile, HostError> {
        let surface = convert::surface_to_wit(surface);
        self.call(|store, funcs| exports::call(&funcs.surface_profile, store, surface)).map(convert::profile)
    }

    /// A decision in plain words, from the catalogue inside the component.
    ///
    /// # Errors
    /// A [`HostError`] when the call fails.
    pub fn explain(&self, decision: &Decision) -> Result<Explanation, HostError> {
        let decision = convert::decision_to_wit(decision);
        self.call(|store, funcs| exports::call(&funcs.explain, store, decision)).map(convert::explanation)
    }

    /// Whether the component exports `function` (a WIT name such as `derive-json`): always for
    /// the functions of WIT 0.1.0, and for later ones when the component's WIT has them.
    pub fn supports(&self, function: &str) -> bool {
        self.exports.has(function)
    }

    /// Refuses a call to `function` when the component predates it.
    fn require(&self, function: &'static str) -> Result<(), HostError> {
        if self.exports.has(function) {
            return Ok(());
        }
        Err(HostError::Unsupported { function, wit_version: self.info.wit_version.clone() })
    }

    /// The derivation of a typed request's decision, computed inside the component (WIT
    /// `derive`, 0.2.0): each evidence verdict, the target arithmetic and each gate with its
    /// numbers. It never disagrees with [`Self::evaluate`] for the same request.
    ///
    /// # Errors
    /// [`HostError::Unsupported`] for a component of WIT 0.1; otherwise as [`Self::evaluate`];
    /// [`HostError::Trap`] when the component returns a derivation the host cannot read.
    pub fn derive(&self, request: &EvaluationRequest) -> Result<Result<Derivation, EvaluationError>, HostError> {
        self.require("derive")?;
        let request = convert::request(request);
        let outcome = self.call(|store, funcs| match &funcs.derive {
            Some(func) => exports::call(func, store, request).map(Some),
            None => Ok(None),
        })?;
        let outcome = outcome.ok_or_else(|| self.unsupported("derive"))?;
        match outcome {
            Ok(derivation) => parse_derivation(&derivation.json).map(Ok),
            Err(error) => Ok(Err(convert::error(error))),
        }
    }

    /// The derivation of a request given as JSON text, as the compact JSON the core writes (WIT
    /// `derive-json`, 0.2.0). Parse it with `serde_json` into [`Derivation`] for the typed form.
    ///
    /// # Errors
    /// [`HostError::Unsupported`] for a component of WIT 0.1; otherwise as
    /// [`Self::evaluate_json`].
    pub fn derive_json(&self, request: &str) -> Result<Result<String, EvaluationError>, HostError> {
        self.require("derive-json")?;
        within_limit(request)?;
        let outcome = self.call(|store, funcs| match &funcs.derive_json {
            Some(func) => exports::call(func, store, request.to_owned()).map(Some),
            None => Ok(None),
        })?;
        let outcome = outcome.ok_or_else(|| self.unsupported("derive-json"))?;
        Ok(outcome.map(|derivation| derivation.json).map_err(convert::error))
    }

    /// Every fault of a request given as JSON text, each with a hint (WIT
    /// `diagnose-request-json`, 0.2.0); the first is the error [`Self::evaluate_json`] returns.
    /// Empty for a request that evaluates.
    ///
    /// # Errors
    /// [`HostError::Unsupported`] for a component of WIT 0.1; a [`HostError`] when the call
    /// fails; text over [`MAX_REQUEST_BYTES`] is [`HostError::RequestTooLarge`].
    pub fn diagnose_request_json(&self, request: &str) -> Result<Diagnosis, HostError> {
        self.diagnose("diagnose-request-json", request, |funcs| funcs.diagnose_request_json.as_ref())
    }

    /// Every fault of a contract given as JSON text, each with a hint (WIT
    /// `diagnose-contract-json`, 0.2.0); the first is the error [`Self::validate_contract_json`]
    /// returns. Empty for a contract that validates.
    ///
    /// # Errors
    /// As [`Self::diagnose_request_json`].
    pub fn diagnose_contract_json(&self, contract: &str) -> Result<Diagnosis, HostError> {
        self.diagnose("diagnose-contract-json", contract, |funcs| funcs.diagnose_contract_json.as_ref())
    }

    fn diagnose(
        &self,
        function: &'static str,
        text: &str,
        pick: impl FnOnce(&Funcs) -> Option<&exports::DiagnoseFunc>,
    ) -> Result<Diagnosis, HostError> {
        self.require(function)?;
        within_limit(text)?;
        let diagnosis = self.call(|store, funcs| match pick(funcs) {
            Some(func) => exports::call(func, store, text.to_owned()).map(Some),
            None => Ok(None),
        })?;
        diagnosis.map(convert::diagnosis).ok_or_else(|| self.unsupported(function))
    }

    /// Judges a proposed replica change against a typed request's decision, inside the component
    /// (WIT `gate`, 0.3.0; SPEC §12.1): allowed or denied, why, and the numbers.
    ///
    /// # Errors
    /// [`HostError::Unsupported`] for a component before WIT 0.3; an [`EvaluationError`] only for
    /// a `to_replicas` outside 0..=10000 (a request that cannot be evaluated is a denial).
    pub fn gate(
        &self,
        request: &EvaluationRequest,
        change: &scale_units_core::ProposedChange,
    ) -> Result<Result<scale_units_core::GateVerdict, EvaluationError>, HostError> {
        self.require("gate")?;
        let (request, change) = (convert::request(request), convert::change(change));
        let outcome = self.call(|store, funcs| match &funcs.gate {
            Some(func) => func.call(store, (request, change)).map(|(result,)| Some(result)),
            None => Ok(None),
        })?;
        let outcome = outcome.ok_or_else(|| self.unsupported("gate"))?;
        Ok(outcome.map(convert::verdict).map_err(convert::error))
    }

    /// [`Self::gate`] over JSON texts (WIT `gate-json`, 0.3.0): the request as
    /// [`Self::evaluate_json`] reads it, the change as `{"to_replicas", "kind"?}`; the verdict as
    /// the compact JSON the core writes.
    ///
    /// # Errors
    /// [`HostError::Unsupported`] for a component before WIT 0.3; an [`EvaluationError`] for a
    /// change that cannot be read; text over [`MAX_REQUEST_BYTES`] is
    /// [`HostError::RequestTooLarge`].
    pub fn gate_json(&self, request: &str, change: &str) -> Result<Result<String, EvaluationError>, HostError> {
        self.require("gate-json")?;
        within_limit(request)?;
        within_limit(change)?;
        let outcome = self.call(|store, funcs| match &funcs.gate_json {
            Some(func) => func.call(store, (request.to_owned(), change.to_owned())).map(|(result,)| Some(result)),
            None => Ok(None),
        })?;
        let outcome = outcome.ok_or_else(|| self.unsupported("gate-json"))?;
        Ok(outcome.map_err(convert::error))
    }

    /// What an external scaler reports for a request given as JSON text (WIT
    /// `scaler-reading-json`, 0.3.0; SPEC §12.2), as compact JSON.
    ///
    /// # Errors
    /// [`HostError::Unsupported`] for a component before WIT 0.3; a [`HostError`] when the call
    /// fails.
    pub fn scaler_reading_json(&self, request: &str) -> Result<String, HostError> {
        self.text_call("scaler-reading-json", request, |funcs| funcs.scaler_reading_json.as_ref())
    }

    /// Checks a request's contract and observations as [`Self::evaluate_json`] does, without the
    /// bounds of `current_replicas` and without deciding (WIT `validate-observations-json`, 0.3.0).
    ///
    /// # Errors
    /// [`HostError::Unsupported`] for a component before WIT 0.3; the inner error as
    /// [`Self::evaluate_json`]'s, never `replicas_out_of_bounds`.
    pub fn validate_observations_json(&self, request: &str) -> Result<Result<(), EvaluationError>, HostError> {
        self.require("validate-observations-json")?;
        within_limit(request)?;
        let outcome = self.call(|store, funcs| match &funcs.validate_observations_json {
            Some(func) => exports::call(func, store, request.to_owned()).map(Some),
            None => Ok(None),
        })?;
        let outcome = outcome.ok_or_else(|| self.unsupported("validate-observations-json"))?;
        Ok(outcome.map_err(convert::error))
    }

    /// The derivation of a request given as JSON text in the core's plain words, one step a
    /// line (WIT `derivation-text`, 0.3.0).
    ///
    /// # Errors
    /// [`HostError::Unsupported`] for a component before WIT 0.3; otherwise as
    /// [`Self::derive_json`].
    pub fn derivation_text(&self, request: &str) -> Result<Result<String, EvaluationError>, HostError> {
        self.require("derivation-text")?;
        within_limit(request)?;
        let outcome = self.call(|store, funcs| match &funcs.derivation_text {
            Some(func) => exports::call(func, store, request.to_owned()).map(Some),
            None => Ok(None),
        })?;
        let outcome = outcome.ok_or_else(|| self.unsupported("derivation-text"))?;
        Ok(outcome.map_err(convert::error))
    }

    /// The bounds the component enforces, as compact JSON (WIT `limits-json`, 0.3.0).
    ///
    /// # Errors
    /// [`HostError::Unsupported`] for a component before WIT 0.3; a [`HostError`] when the call
    /// fails.
    pub fn limits_json(&self) -> Result<String, HostError> {
        self.require("limits-json")?;
        let outcome = self.call(|store, funcs| match &funcs.limits_json {
            Some(func) => func.call(store, ()).map(|(result,)| Some(result)),
            None => Ok(None),
        })?;
        outcome.ok_or_else(|| self.unsupported("limits-json"))
    }

    fn text_call(
        &self,
        function: &'static str,
        text: &str,
        pick: impl FnOnce(&Funcs) -> Option<&exports::TextFunc>,
    ) -> Result<String, HostError> {
        self.require(function)?;
        within_limit(text)?;
        let outcome = self.call(|store, funcs| match pick(funcs) {
            Some(func) => exports::call(func, store, text.to_owned()).map(Some),
            None => Ok(None),
        })?;
        outcome.ok_or_else(|| self.unsupported(function))
    }

    fn unsupported(&self, function: &'static str) -> HostError {
        HostError::Unsupported { function, wit_version: self.info.wit_version.clone() }
    }

    /// Instantiates the component once and drops the instance: what a call pays when no idle
    /// instance is left. For benchmarks.
    ///
    /// # Errors
    /// A [`HostError`] when instantiation fails.
    #[doc(hidden)]
    pub fn instantiate_once(&self) -> Result<(), HostError> {
        self.instantiate().map(drop)
    }

    fn evaluated<T>(&self, decision: T) -> Evaluated<T> {
        Evaluated { decision, provenance: Arc::clone(&self.provenance) }
    }

    fn instantiate(&self) -> Result<Instance, HostError> {
        let limits = StoreLimitsBuilder::new()
            .memory_size(self.memory_limit)
            .instances(4)
            .memories(2)
            .tables(4)
            .table_elements(10_000)
            .build();
        let mut store = Store::new(&self.engine, Limits { limits, memory_refused: false });
        store.limiter(|limits| limits);
        store.set_fuel(self.fuel).map_err(|error| HostError::Engine { message: format!("{error:#}") })?;
        match self.pre.instantiate(&mut store) {
            Ok(instance) => {
                let funcs = Funcs::new(&mut store, &instance, &self.exports)
                    .map_err(|reason| HostError::WrongWorld { reason })?;
                Ok(Instance { store, funcs })
            }
            Err(error) => Err(self.classify(error, &store)),
        }
    }

    /// Runs `f` on an idle instance (or a fresh one) with a full fuel budget. The instance goes
    /// back to the idle list only when the call succeeded at the wasm level.
    fn call<R>(&self, f: impl FnOnce(&mut Store<Limits>, &Funcs) -> wasmtime::Result<R>) -> Result<R, HostError> {
        let idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner).pop();
        let mut instance = match idle {
            Some(instance) => instance,
            None => self.instantiate()?,
        };
        instance.store.set_fuel(self.fuel).map_err(|error| HostError::Engine { message: format!("{error:#}") })?;
        let Instance { store, funcs } = &mut instance;
        match f(store, funcs) {
            Ok(value) => {
                let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
                if idle.len() < self.max_idle_instances {
                    idle.push(instance);
                }
                Ok(value)
            }
            // The failed instance is dropped here, whatever state it was left in.
            Err(error) => Err(self.classify(error, &instance.store)),
        }
    }

    fn classify(&self, error: wasmtime::Error, store: &Store<Limits>) -> HostError {
        if store.data().memory_refused {
            return HostError::MemoryLimit { limit_bytes: self.memory_limit };
        }
        match error.downcast_ref::<Trap>() {
            Some(Trap::OutOfFuel) => HostError::OutOfFuel { budget: self.fuel },
            _ => HostError::Trap { message: format!("{error:#}") },
        }
    }
}

impl std::fmt::Debug for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Policy")
            .field("digest", &self.provenance.component_digest)
            .field("info", &self.info)
            .field("fuel", &self.fuel)
            .field("memory_limit", &self.memory_limit)
            .finish_non_exhaustive()
    }
}

const _: () = {
    const fn shareable<T: Send + Sync>() {}
    shareable::<Policy>();
};
