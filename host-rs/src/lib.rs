#![doc = include_str!("../README.md")]

mod bindings;
mod cache;
mod convert;
mod error;
mod exports;
mod inspect;
mod policy;
pub mod registry;

use std::path::PathBuf;

pub use cache::{CacheStatus, default_cache_dir};
pub use error::HostError;
pub use policy::{Evaluated, MAX_REQUEST_BYTES, Policy, PolicyBuilder, Provenance};
pub use registry::{Candidate, ConformanceSuite, PolicyRegistry, RegistryError, vector_files};
/// The request, contract, decision and error types: the core's, so that the component and the
/// native core speak exactly the same types.
pub use scale_units_core::{
    ActionKind, CapacityAxis, CapacityDemand, CapacityObservation, ContinuityContract, ContinuityMode,
    ContinuityObservation, ContractIdentity, Decision, Derivation, Diagnosis, ErrorCode, EvaluationError,
    EvaluationRequest, Evidence, EvidenceKind, EvidenceStatus, Explanation, Fault, PartitionLeaseContract,
    QuotaBinding, QuotaObservation, QuotaScope, Reason, ReasonText, SafetyObservation, ScalePolicy, ScaleUnitContract,
    SignalKind, SignalObservation, SurfaceKind,
};
/// The parts of a [`Derivation`] (WIT 0.2.0 `derive`): the core's types, as for the decision.
pub use scale_units_core::{
    Bound, Check, CooldownField, DemandCheck, DemandStatus, EngineCheck, EvidenceVerdict, Gate, Mismatch, QuotaCheck,
    StepCap, StepField, Target,
};

/// The file name of the evaluator component this workspace builds (`make component`).
pub const COMPONENT_FILE_NAME: &str = "scale_units_evaluator.wasm";

/// What a component says about itself (its `info` export).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EvaluatorInfo {
    /// The evaluator (core) version, such as `0.1.0`.
    pub evaluator_version: String,
    /// The wire schema it implements: `"1"`.
    pub schema_version: String,
    /// The version of its WIT package, such as `0.1.0`.
    pub wit_version: String,
}

/// The static profile of a surface (SPEC §4.3), as a component reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Profile {
    /// The surface described.
    pub surface: SurfaceKind,
    /// Signals a contract may allow (and track).
    pub allowed_signals: Vec<SignalKind>,
    /// Capacity axes a contract must declare as hard axes.
    pub required_capacity_axes: Vec<CapacityAxis>,
    /// Axes that must be declared as engine authority axes.
    pub engine_authority_axes: Vec<CapacityAxis>,
    /// Continuity modes the surface supports.
    pub continuity_modes: Vec<ContinuityMode>,
    /// Whether the surface needs partitions and a fenced lease.
    pub partition_and_fenced_lease: bool,
    /// Axes a provider-global quota binding may use; empty when none is required.
    pub provider_quota_axes: Vec<CapacityAxis>,
}

/// Where the evaluator component is found when none is named, in order:
///
/// 1. `$SCALE_UNITS_COMPONENT`, when set (and then only there);
/// 2. `scale-units/scale_units_evaluator.wasm` in the running executable's directory or one of
///    its three parents — so `target/release/scale-units` and test binaries in
///    `target/debug/deps/` find `target/scale-units/`, where `make component` writes it;
/// 3. the same file in the target directory of the workspace this crate was built in.
///
/// # Errors
/// [`HostError::ComponentNotFound`] with every place looked at.
pub fn default_component_path() -> Result<PathBuf, HostError> {
    if let Some(path) = std::env::var_os("SCALE_UNITS_COMPONENT").filter(|path| !path.is_empty()) {
        let path = PathBuf::from(path);
        return if path.is_file() { Ok(path) } else { Err(HostError::ComponentNotFound { searched: vec![path] }) };
    }
    let mut searched = Vec::new();
    if let Ok(exe) = std::env::current_exe() {
        for dir in exe.ancestors().skip(1).take(4) {
            searched.push(dir.join("scale-units").join(COMPONENT_FILE_NAME));
            searched.push(dir.join(COMPONENT_FILE_NAME));
        }
    }
    let target = option_env!("CARGO_TARGET_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").join("target"), PathBuf::from);
    searched.push(target.join("scale-units").join(COMPONENT_FILE_NAME));
    match searched.iter().find(|path| path.is_file()) {
        Some(path) => Ok(path.clone()),
        None => Err(HostError::ComponentNotFound { searched }),
    }
}

mod bundled {
    include!(concat!(env!("OUT_DIR"), "/bundled.rs"));
}

/// The evaluator component this crate carries, and the `sha256:` digest recorded when it was
/// bundled; `None` in a workspace build before `make component`.
#[must_use]
pub fn bundled_component() -> Option<(&'static [u8], &'static str)> {
    bundled::BUNDLED
}

impl Policy {
    /// Loads the evaluator component this crate carries, verified against the digest recorded
    /// when it was bundled, with the compiled artifact cached in [`default_cache_dir`] (when
    /// there is one). An embedder that depends on the crate needs nothing else.
    ///
    /// # Errors
    /// [`HostError::NotBundled`] in a workspace build before `make component`;
    /// [`HostError::DigestMismatch`] when the bytes are not those recorded; every error of
    /// [`PolicyBuilder::load`].
    pub fn bundled() -> Result<Self, HostError> {
        Self::bundled_with(Policy::builder())
    }

    /// [`Policy::bundled`] with a builder of your own (fuel, memory, cache); its expected digest,
    /// if any, is replaced by the recorded one.
    ///
    /// # Errors
    /// As [`Policy::bundled`].
    pub fn bundled_with(builder: PolicyBuilder) -> Result<Self, HostError> {
        let (bytes, digest) = bundled_component().ok_or(HostError::NotBundled)?;
        let builder = match (builder.has_cache_dir(), default_cache_dir()) {
            (false, Some(dir)) => builder.cache_dir(dir),
            _ => builder,
        };
        builder.expected_digest(digest).load(bytes)
    }

    /// Loads the component from [`default_component_path`], with the compiled artifact cached in
    /// [`default_cache_dir`].
    ///
    /// # Errors
    /// [`HostError::ComponentNotFound`], and every error of [`PolicyBuilder::load`].
    pub fn from_default_location() -> Result<Self, HostError> {
        let path = default_component_path()?;
        let builder = Policy::builder();
        let builder = match default_cache_dir() {
            Some(dir) => builder.cache_dir(dir),
            None => builder,
        };
        builder.load_file(path)
    }
}
