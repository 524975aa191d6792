//! [`PolicyRegistry`]: staged evaluator components, the one that is active, a shadow candidate,
//! per-unit pins and the history of every change.
//!
//! A component becomes a policy in four steps, each of which refuses it for good: its sha256 is
//! its identity (and must equal an expected digest when one is given); with a trust key, a
//! detached ed25519 signature over that digest is mandatory; the host loads it (no imports, the
//! right world, a supported schema and WIT version, compiled); and it must pass the conformance
//! gate. Only then is it staged, and only a staged policy can be activated, shadowed or pinned.
//!
//! Activation is one atomic pointer swap. An evaluation takes a snapshot of the active policy
//! when it starts and finishes on it, so a swap never fails an evaluation or mixes two versions
//! in one answer (a batch is evaluated on one snapshot).

mod error;
mod gate;

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use arc_swap::{ArcSwap, ArcSwapOption};
use ed25519_dalek::{Signature, VerifyingKey};
use scale_units_core::EvaluationError;
use serde::Deserialize;
use sha2::{Digest, Sha256};

pub use error::RegistryError;
pub use gate::{ConformanceSuite, vector_files};

use crate::{Evaluated, HostError, Policy, PolicyBuilder, cache};

/// The message a policy signature signs: the ASCII bytes of the component's digest,
/// `sha256:` and 64 lower-case hex digits.
pub fn signing_message(digest: &str) -> &[u8] {
    digest.as_bytes()
}

/// The digest of some bytes, as the registry names components: `sha256:` and 64 hex digits.
pub fn digest_of(bytes: &[u8]) -> String {
    let sha: [u8; 32] = Sha256::digest(bytes).into();
    format!("sha256:{}", cache::hex(&sha))
}

/// A component offered to [`PolicyRegistry::stage`], with what vouches for it.
#[derive(Clone, Debug)]
pub struct Candidate<'a> {
    bytes: &'a [u8],
    signature: Option<Vec<u8>>,
    expected_digest: Option<String>,
    source: String,
}

impl<'a> Candidate<'a> {
    /// A candidate from the component's bytes.
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, signature: None, expected_digest: None, source: "bytes".to_owned() }
    }

    /// The detached ed25519 signature (64 bytes) over [`signing_message`] of its digest.
    pub fn signature(mut self, signature: impl Into<Vec<u8>>) -> Self {
        self.signature = Some(signature.into());
        self
    }

    /// Refuses the candidate unless its digest is `digest`.
    pub fn expected_digest(mut self, digest: impl Into<String>) -> Self {
        self.expected_digest = Some(digest.into());
        self
    }

    /// Where it came from, for the history (`api`, a file name…).
    pub fn source(mut self, source: impl Into<String>) -> Self {
        self.source = source.into();
        self
    }
}

/// A staged policy: verified, compiled, and through the conformance gate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StagedPolicy {
    /// The component's digest.
    pub digest: String,
    /// The evaluator version its `info` reports.
    pub evaluator_version: String,
    /// Where it came from.
    pub source: String,
    /// Whether a signature was verified against the trust key.
    pub signed: bool,
    /// Conformance vectors it passed.
    pub vectors_passed: usize,
    /// When it was staged, in milliseconds since the Unix epoch.
    pub staged_at_ms: u64,
    /// Time spent loading (compiling, or reading the precompiled cache), in microseconds.
    pub load_micros: u64,
    /// Whether the compilation came from, or went into, the precompiled cache (a full disk shows
    /// here as `NotStored`; the policy serves all the same).
    pub cache: crate::CacheStatus,
    /// Time spent in the conformance gate, in microseconds.
    pub gate_micros: u64,
}

/// The active policy, as one evaluation sees it.
#[derive(Debug)]
pub struct ActivePolicy {
    /// The policy.
    pub policy: Arc<Policy>,
    /// Its activation number: 1 for the first activation, one more for each activation or rollback.
    pub activation: u64,
}

/// Which policy answered, and why that one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    /// The active policy, at this activation number.
    Active {
        /// The activation number (see [`ActivePolicy::activation`]).
        activation: u64,
    },
    /// A policy pinned for the request's `contract.unit_ref`.
    Pinned {
        /// The unit.
        unit_ref: String,
    },
}

/// A result of the registry: the evaluator's result with its provenance (the digest and version
/// of the component that produced it), and the route that chose that component.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Served<T> {
    /// The result and its provenance.
    pub evaluated: Evaluated<T>,
    /// How the policy was chosen.
    pub route: Route,
}

/// What one policy answered, in brief: what a shadow comparison compares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OutcomeSummary {
    /// A decision's action and reasons.
    Decision {
        /// `scale_up`, `scale_down`, `hold` or `blocked`.
        action: String,
        /// The reasons, in order.
        reasons: Vec<String>,
    },
    /// A typed evaluation error's code.
    Error {
        /// The SPEC error code.
        code: String,
    },
    /// The call failed (trap, fuel, memory).
    HostError {
        /// What failed.
        message: String,
    },
}

/// A request on which the shadow candidate disagreed with the active policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Divergence {
    /// The sha256 of the request text.
    pub request_digest: String,
    /// The active policy's digest and answer.
    pub active_digest: String,
    /// What the active policy answered (and returned).
    pub active: OutcomeSummary,
    /// The candidate's digest.
    pub candidate_digest: String,
    /// What the candidate would have answered.
    pub candidate: OutcomeSummary,
    /// When, in milliseconds since the Unix epoch.
    pub at_ms: u64,
}

/// One change to the registry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HistoryEvent {
    /// A candidate passed every check and was staged.
    Staged {
        /// Its digest.
        digest: String,
        /// Where it came from.
        source: String,
        /// Whether its signature was verified.
        signed: bool,
    },
    /// A candidate was refused.
    Refused {
        /// Its digest.
        digest: String,
        /// Where it came from.
        source: String,
        /// [`RegistryError::code`].
        code: String,
        /// Why.
        reason: String,
    },
    /// A policy was activated.
    Activated {
        /// Its digest.
        digest: String,
        /// The activation number.
        activation: u64,
    },
    /// The previous policy was activated again.
    RolledBack {
        /// The policy that was active.
        from: String,
        /// The policy active now.
        to: String,
        /// The activation number.
        activation: u64,
    },
    /// A candidate is shadowed from now on (`None`: shadowing stopped).
    Shadow {
        /// The candidate's digest.
        digest: Option<String>,
    },
    /// A unit is pinned to a policy (`None`: unpinned, it follows the active policy).
    Pinned {
        /// The unit.
        unit_ref: String,
        /// The policy.
        digest: Option<String>,
    },
    /// A staged policy was dropped: by an operator ([`PolicyRegistry::unstage`]) or evicted, the
    /// oldest unused one, to make room under [`RegistryBuilder::max_staged`].
    Unstaged {
        /// Its digest.
        digest: String,
        /// Whether it was evicted to make room.
        evicted: bool,
    },
}

/// A [`HistoryEvent`] and when it happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HistoryEntry {
    /// Milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// What happened.
    pub event: HistoryEvent,
}

/// How a [`PolicyRegistry`] checks and loads candidates. Start from [`PolicyRegistry::builder`].
#[derive(Clone, Debug)]
pub struct RegistryBuilder {
    policy: PolicyBuilder,
    trust_key: Option<VerifyingKey>,
    suite: Option<ConformanceSuite>,
    divergence_limit: usize,
    history_limit: usize,
    max_staged: usize,
    max_pins: usize,
}

impl Default for RegistryBuilder {
    fn default() -> Self {
        Self {
            policy: PolicyBuilder::default(),
            trust_key: None,
            suite: None,
            divergence_limit: 1000,
            history_limit: 10_000,
            max_staged: DEFAULT_MAX_STAGED,
            max_pins: DEFAULT_MAX_PINS,
        }
    }
}

/// How many policies stay staged by default (each holds its compiled code, a few MB).
pub const DEFAULT_MAX_STAGED: usize = 16;

/// How many units may be pinned at once by default (`GET /v1/policies` lists every pin).
pub const DEFAULT_MAX_PINS: usize = 1024;

impl RegistryBuilder {
    /// How each candidate is loaded (cache, fuel, memory, instances). An expected digest set
    /// here would refuse every other component; give it per candidate instead.
    pub fn policy_builder(mut self, builder: PolicyBuilder) -> Self {
        self.policy = builder;
        self
    }

    /// Makes a valid ed25519 signature over each candidate's digest mandatory.
    pub fn trust_key(mut self, key: VerifyingKey) -> Self {
        self.trust_key = Some(key);
        self
    }

    /// [`Self::trust_key`] from 64 hex digits (the 32 bytes of the public key).
    ///
    /// # Errors
    /// [`RegistryError::InvalidTrustKey`] when the text is not such a key.
    pub fn trust_key_hex(self, hex: &str) -> Result<Self, RegistryError> {
        let bytes = decode_hex(hex.trim()).ok_or_else(|| RegistryError::InvalidTrustKey("not hex".to_owned()))?;
        let bytes: [u8; 32] = bytes.try_into().map_err(|_| {
            RegistryError::InvalidTrustKey("an ed25519 public key is 32 bytes (64 hex digits)".to_owned())
        })?;
        let key =
            VerifyingKey::from_bytes(&bytes).map_err(|error| RegistryError::InvalidTrustKey(error.to_string()))?;
        Ok(self.trust_key(key))
    }

    /// The vectors of the conformance gate (default: [`ConformanceSuite::embedded`]).
    pub fn conformance(mut self, suite: ConformanceSuite) -> Self {
        self.suite = Some(suite);
        self
    }

    /// How many policies stay staged at most (default [`DEFAULT_MAX_STAGED`], at least 2): a new
    /// one evicts the oldest that is not active, the rollback target, shadowed or pinned, and is
    /// refused ([`RegistryError::StagedFull`]) when every one is in use.
    pub fn max_staged(mut self, limit: usize) -> Self {
        self.max_staged = limit.max(2);
        self
    }

    /// How many units may be pinned at once (default [`DEFAULT_MAX_PINS`], at least 1): a pin of
    /// one more unit is refused ([`RegistryError::PinsFull`]); a pinned unit may be pinned again
    /// or unpinned.
    pub fn max_pins(mut self, limit: usize) -> Self {
        self.max_pins = limit.max(1);
        self
    }

    /// How many shadow divergences are kept (the oldest are dropped; all are counted).
    pub fn divergence_limit(mut self, limit: usize) -> Self {
        self.divergence_limit = limit;
        self
    }

    /// An empty registry: nothing staged, nothing active.
    pub fn build(self) -> PolicyRegistry {
        PolicyRegistry {
            policy: self.policy,
            trust_key: self.trust_key,
            suite: self.suite.unwrap_or_else(ConformanceSuite::embedded),
            divergence_limit: self.divergence_limit,
            history_limit: self.history_limit,
            max_staged: self.max_staged,
            max_pins: self.max_pins,
            staged: RwLock::new(BTreeMap::new()),
            active: ArcSwapOption::empty(),
            shadow: ArcSwapOption::empty(),
            pins: ArcSwap::from_pointee(BTreeMap::new()),
            control: Mutex::new(Control::default()),
            divergences: Mutex::new(VecDeque::new()),
            divergence_count: AtomicU64::new(0),
            history: Mutex::new(VecDeque::new()),
        }
    }
}

struct Entry {
    policy: Arc<Policy>,
    staged: StagedPolicy,
}

/// Serializes activations, rollbacks and pins.
#[derive(Default)]
struct Control {
    activations: u64,
    /// Digests active before the current one, most recent last.
    previous: Vec<String>,
}

/// Staged components, the active one, a shadow candidate, pins and history. `Send + Sync`: share
/// it in an `Arc`.
pub struct PolicyRegistry {
    policy: PolicyBuilder,
    trust_key: Option<VerifyingKey>,
    suite: ConformanceSuite,
    divergence_limit: usize,
    history_limit: usize,
    max_staged: usize,
    max_pins: usize,
    staged: RwLock<BTreeMap<String, Arc<Entry>>>,
    active: ArcSwapOption<ActivePolicy>,
    shadow: ArcSwapOption<Entry>,
    pins: ArcSwap<BTreeMap<String, Arc<Entry>>>,
    control: Mutex<Control>,
    divergences: Mutex<VecDeque<Divergence>>,
    divergence_count: AtomicU64,
    history: Mutex<VecDeque<HistoryEntry>>,
}

impl PolicyRegistry {
    /// Settings: trust key, conformance suite, how policies are loaded.
    pub fn builder() -> RegistryBuilder {
        RegistryBuilder::default()
    }

    /// Whether candidates need a signature.
    pub fn requires_signature(&self) -> bool {
        self.trust_key.is_some()
    }

    /// The conformance gate's vectors.
    pub fn conformance_suite(&self) -> &ConformanceSuite {
        &self.suite
    }

    /// Verifies, loads and gates a candidate, then stages it. Staging the same component again
    /// returns what was staged (after checking its signature again).
    ///
    /// # Errors
    /// [`RegistryError::Host`] (wrong digest, invalid component, an import, another world, an
    /// unsupported version), [`RegistryError::SignatureMissing`], [`RegistryError::SignatureInvalid`],
    /// [`RegistryError::ConformanceFailed`], [`RegistryError::NoConformanceVectors`]. Every
    /// refusal is recorded in the history.
    pub fn stage(&self, candidate: Candidate<'_>) -> Result<StagedPolicy, RegistryError> {
        let digest = digest_of(candidate.bytes);
        let source = candidate.source.clone();
        let outcome = self.stage_checked(candidate, &digest);
        match &outcome {
            Ok(staged) => {
                self.record(HistoryEvent::Staged { digest: staged.digest.clone(), source, signed: staged.signed })
            }
            Err(error) => self.record(HistoryEvent::Refused {
                digest,
                source,
                code: error.code().to_owned(),
                reason: error.to_string(),
            }),
        }
        outcome
    }

    /// Stages the component at `path`, with the signature in `<path>.sig` (hex) when that file
    /// exists; at most [`MAX_COMPONENT_FILE_BYTES`] are read (see [`Self::stage_file_within`]).
    ///
    /// # Errors
    /// As [`Self::stage_file_within`].
    pub fn stage_file(&self, path: impl AsRef<Path>) -> Result<StagedPolicy, RegistryError> {
        self.stage_file_within(path, MAX_COMPONENT_FILE_BYTES)
    }

    /// Stages the component at `path`, with the signature in `<path>.sig` (hex) when that file
    /// exists. Both must be regular files (a symlink to one is followed): a FIFO, a device or a
    /// folder is refused without blocking, and a component larger than `max_bytes` is refused
    /// without being read whole.
    ///
    /// # Errors
    /// [`RegistryError::Host`] with [`HostError::Io`] when a file cannot be read, is not a regular
    /// file or is too large, and every error of [`Self::stage`].
    pub fn stage_file_within(&self, path: impl AsRef<Path>, max_bytes: u64) -> Result<StagedPolicy, RegistryError> {
        let path = path.as_ref();
        let bytes = read_regular(path, max_bytes).map_err(|source| HostError::Io { path: path.to_owned(), source })?;
        let mut signature_path = path.as_os_str().to_owned();
        signature_path.push(".sig");
        let signature_path = std::path::PathBuf::from(signature_path);
        let mut candidate = Candidate::new(&bytes).source(path.display().to_string());
        match read_regular(&signature_path, MAX_SIGNATURE_FILE_BYTES)
            .and_then(|bytes| String::from_utf8(bytes).map_err(std::io::Error::other))
        {
            Ok(text) => {
                let Some(signature) = decode_hex(text.trim()) else {
                    let digest = digest_of(&bytes);
                    let error = RegistryError::SignatureInvalid {
                        digest: digest.clone(),
                        reason: format!("{} is not hex", signature_path.display()),
                    };
                    self.record(HistoryEvent::Refused {
                        digest,
                        source: path.display().to_string(),
                        code: error.code().to_owned(),
                        reason: error.to_string(),
                    });
                    return Err(error);
                };
                candidate = candidate.signature(signature);
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(HostError::Io { path: signature_path, source }.into()),
        }
        self.stage(candidate)
    }

    fn stage_checked(&self, candidate: Candidate<'_>, digest: &str) -> Result<StagedPolicy, RegistryError> {
        if let Some(expected) = &candidate.expected_digest
            && expected != digest
        {
            return Err(HostError::DigestMismatch { expected: expected.clone(), actual: digest.to_owned() }.into());
        }
        let signed = self.verify_signature(digest, candidate.signature.as_deref())?;
        if let Some(entry) = self.entry(digest) {
            return Ok(entry.staged.clone());
        }
        if self.suite.is_empty() {
            return Err(RegistryError::NoConformanceVectors);
        }
        // Cheap before costly: no room, no compilation.
        let rollback_target = self.control().previous.last().cloned();
        if self.evictable(rollback_target.as_deref()).is_err() {
            return Err(RegistryError::StagedFull { limit: self.max_staged });
        }
        let started = Instant::now();
        // The compilation goes into the cache only once the candidate passed the gate.
        let (mut policy, pending) = self.policy.clone().load_unstored(candidate.bytes)?;
        let load_micros = micros(started);
        let started = Instant::now();
        let report = self.suite.run(&policy);
        let gate_micros = micros(started);
        if report.failed > 0 || report.passed == 0 {
            return Err(RegistryError::ConformanceFailed {
                digest: digest.to_owned(),
                passed: report.passed,
                failed: report.failed,
                failures: report.failures,
            });
        }
        policy.store_compilation(pending);
        let staged = StagedPolicy {
            digest: digest.to_owned(),
            evaluator_version: policy.info().evaluator_version.clone(),
            source: candidate.source,
            signed,
            vectors_passed: report.passed,
            staged_at_ms: now_ms(),
            load_micros,
            gate_micros,
            cache: policy.cache_status().clone(),
        };
        let entry = Arc::new(Entry { policy: Arc::new(policy), staged: staged.clone() });
        let control = self.control();
        let evicted = match self.evictable(control.previous.last().map(String::as_str)) {
            Ok(evicted) => evicted,
            Err(()) => return Err(RegistryError::StagedFull { limit: self.max_staged }),
        };
        let mut entries = self.staged.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(evicted) = &evicted {
            entries.remove(evicted);
        }
        entries.entry(digest.to_owned()).or_insert(entry);
        drop(entries);
        drop(control);
        if let Some(evicted) = evicted {
            self.record(HistoryEvent::Unstaged { digest: evicted, evicted: true });
        }
        Ok(staged)
    }

    /// What makes room for one more staged policy: `Ok(None)` when there is room, `Ok(Some)` the
    /// oldest staged policy not in use, `Err` when every one is in use.
    fn evictable(&self, rollback_target: Option<&str>) -> Result<Option<String>, ()> {
        let entries = self.staged.read().unwrap_or_else(PoisonError::into_inner);
        if entries.len() < self.max_staged {
            return Ok(None);
        }
        entries
            .values()
            .filter(|entry| self.in_use(&entry.staged.digest, rollback_target).is_none())
            .min_by_key(|entry| entry.staged.staged_at_ms)
            .map(|entry| Some(entry.staged.digest.clone()))
            .ok_or(())
    }

    /// Why the staged policy `digest` must stay, if it must.
    fn in_use(&self, digest: &str, rollback_target: Option<&str>) -> Option<&'static str> {
        if self.active.load().as_ref().is_some_and(|active| active.policy.digest() == digest) {
            return Some("active");
        }
        if self.shadow.load().as_ref().is_some_and(|entry| entry.staged.digest == digest) {
            return Some("shadowed");
        }
        if self.pins.load().values().any(|entry| entry.staged.digest == digest) {
            return Some("pinned");
        }
        (rollback_target == Some(digest)).then_some("the rollback target")
    }

    /// Drops the staged policy `digest` (`DELETE /v1/policies/{digest}`).
    ///
    /// # Errors
    /// [`RegistryError::UnknownPolicy`]; [`RegistryError::PolicyInUse`] when it is active, the
    /// rollback target, shadowed or pinned.
    pub fn unstage(&self, digest: &str) -> Result<(), RegistryError> {
        // Under the control lock: no activation or pin can take it meanwhile.
        let control = self.control();
        if let Some(why) = self.in_use(digest, control.previous.last().map(String::as_str)) {
            return Err(RegistryError::PolicyInUse { digest: digest.to_owned(), why });
        }
        let removed = self.staged.write().unwrap_or_else(PoisonError::into_inner).remove(digest);
        drop(control);
        if removed.is_none() {
            return Err(RegistryError::UnknownPolicy { digest: digest.to_owned() });
        }
        self.record(HistoryEvent::Unstaged { digest: digest.to_owned(), evicted: false });
        Ok(())
    }

    /// `Ok(true)` when a signature was verified, `Ok(false)` when none is required.
    fn verify_signature(&self, digest: &str, signature: Option<&[u8]>) -> Result<bool, RegistryError> {
        let Some(key) = &self.trust_key else { return Ok(false) };
        let signature = signature.ok_or_else(|| RegistryError::SignatureMissing { digest: digest.to_owned() })?;
        let invalid = |reason: String| RegistryError::SignatureInvalid { digest: digest.to_owned(), reason };
        let signature =
            Signature::from_slice(signature).map_err(|_| invalid("an ed25519 signature is 64 bytes".to_owned()))?;
        key.verify_strict(signing_message(digest), &signature)
            .map_err(|_| invalid("it does not verify against the trust key".to_owned()))?;
        Ok(true)
    }

    fn entry(&self, digest: &str) -> Option<Arc<Entry>> {
        self.staged.read().unwrap_or_else(PoisonError::into_inner).get(digest).cloned()
    }

    fn staged_entry(&self, digest: &str) -> Result<Arc<Entry>, RegistryError> {
        self.entry(digest).ok_or_else(|| RegistryError::UnknownPolicy { digest: digest.to_owned() })
    }

    /// Makes the staged policy `digest` the active one, atomically; returns its activation number.
    /// Evaluations already running finish on the policy they started with.
    ///
    /// # Errors
    /// [`RegistryError::UnknownPolicy`] when nothing staged has that digest.
    pub fn activate(&self, digest: &str) -> Result<u64, RegistryError> {
        let entry = self.staged_entry(digest)?;
        let mut control = self.control();
        control.activations += 1;
        let activation = control.activations;
        if let Some(current) = self.active.load_full() {
            control.previous.push(current.policy.digest().to_owned());
        }
        self.active.store(Some(Arc::new(ActivePolicy { policy: Arc::clone(&entry.policy), activation })));
        drop(control);
        self.record(HistoryEvent::Activated { digest: digest.to_owned(), activation });
        Ok(activation)
    }

    /// Activates again the policy that was active before the current one; returns its digest and
    /// the new activation number.
    ///
    /// # Errors
    /// [`RegistryError::NothingToRollBack`] when there was no earlier activation.
    pub fn rollback(&self) -> Result<(String, u64), RegistryError> {
        let mut control = self.control();
        let current = self.active.load_full().ok_or(RegistryError::NothingToRollBack)?;
        let previous = control.previous.pop().ok_or(RegistryError::NothingToRollBack)?;
        let entry = self.staged_entry(&previous)?;
        control.activations += 1;
        let activation = control.activations;
        self.active.store(Some(Arc::new(ActivePolicy { policy: Arc::clone(&entry.policy), activation })));
        drop(control);
        self.record(HistoryEvent::RolledBack {
            from: current.policy.digest().to_owned(),
            to: previous.clone(),
            activation,
        });
        Ok((previous, activation))
    }

    /// Evaluates every request with the staged candidate `digest` too (`None` stops shadowing),
    /// recording each request on which it disagrees with the active policy.
    ///
    /// # Errors
    /// [`RegistryError::UnknownPolicy`].
    pub fn shadow(&self, digest: Option<&str>) -> Result<(), RegistryError> {
        let entry = digest.map(|digest| self.staged_entry(digest)).transpose()?;
        self.shadow.store(entry);
        self.record(HistoryEvent::Shadow { digest: digest.map(str::to_owned) });
        Ok(())
    }

    /// Pins requests whose `contract.unit_ref` is `unit_ref` to the staged policy `digest`
    /// (`None` unpins: the unit follows the active policy again).
    ///
    /// # Errors
    /// [`RegistryError::UnknownPolicy`]; [`RegistryError::InvalidUnitRef`] unless `unit_ref` has a
    /// reference's form (SPEC §3: 1 to 256 bytes of `[A-Za-z0-9._:/@+-]`, starting with a letter
    /// or digit): a pin for anything else could never match a valid request.
    pub fn pin(&self, unit_ref: &str, digest: Option<&str>) -> Result<(), RegistryError> {
        if !is_unit_ref(unit_ref) {
            return Err(RegistryError::InvalidUnitRef { length: unit_ref.len() });
        }
        let entry = digest.map(|digest| self.staged_entry(digest)).transpose()?;
        let control = self.control();
        let mut pins = BTreeMap::clone(&self.pins.load());
        if entry.is_some() && !pins.contains_key(unit_ref) && pins.len() >= self.max_pins {
            return Err(RegistryError::PinsFull { limit: self.max_pins });
        }
        match entry {
            Some(entry) => pins.insert(unit_ref.to_owned(), entry),
            None => pins.remove(unit_ref),
        };
        self.pins.store(Arc::new(pins));
        drop(control);
        self.record(HistoryEvent::Pinned { unit_ref: unit_ref.to_owned(), digest: digest.map(str::to_owned) });
        Ok(())
    }

    /// The active policy, if any.
    pub fn active(&self) -> Option<Arc<ActivePolicy>> {
        self.active.load_full()
    }

    /// Every staged policy, by digest.
    pub fn staged(&self) -> Vec<StagedPolicy> {
        self.staged.read().unwrap_or_else(PoisonError::into_inner).values().map(|entry| entry.staged.clone()).collect()
    }

    /// The digest of the shadowed candidate, if any.
    pub fn shadowed(&self) -> Option<String> {
        self.shadow.load().as_ref().map(|entry| entry.staged.digest.clone())
    }

    /// The pins: unit and digest.
    pub fn pins(&self) -> Vec<(String, String)> {
        self.pins.load().iter().map(|(unit, entry)| (unit.clone(), entry.staged.digest.clone())).collect()
    }

    /// Every change, oldest first (the most recent 10 000).
    pub fn history(&self) -> Vec<HistoryEntry> {
        self.history.lock().unwrap_or_else(PoisonError::into_inner).iter().cloned().collect()
    }

    /// The recorded divergences (the most recent ones), and how many there were in all.
    pub fn divergences(&self) -> (Vec<Divergence>, u64) {
        let kept = self.divergences.lock().unwrap_or_else(PoisonError::into_inner).iter().cloned().collect();
        (kept, self.divergence_count.load(Ordering::Relaxed))
    }

    /// The policies one evaluation (or one batch) uses: the active one, the pins and the shadow
    /// candidate, all as they are now.
    pub fn snapshot(&self) -> Snapshot<'_> {
        Snapshot {
            registry: self,
            active: self.active.load_full(),
            pins: self.pins.load_full(),
            shadow: self.shadow.load_full(),
        }
    }

    /// Evaluates a request (JSON text) on a fresh [`snapshot`](Self::snapshot).
    ///
    /// # Errors
    /// See [`Snapshot::evaluate_json`].
    pub fn evaluate_json(&self, request: &str) -> Result<Result<Served<String>, EvaluationError>, RegistryError> {
        self.snapshot().evaluate_json(request)
    }

    fn control(&self) -> MutexGuard<'_, Control> {
        self.control.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn record(&self, event: HistoryEvent) {
        let mut history = self.history.lock().unwrap_or_else(PoisonError::into_inner);
        if history.len() >= self.history_limit {
            history.pop_front();
        }
        history.push_back(HistoryEntry { at_ms: now_ms(), event });
    }

    fn record_divergence(&self, divergence: Divergence) {
        self.divergence_count.fetch_add(1, Ordering::Relaxed);
        let mut divergences = self.divergences.lock().unwrap_or_else(PoisonError::into_inner);
        if divergences.len() >= self.divergence_limit {
            divergences.pop_front();
        }
        if self.divergence_limit > 0 {
            divergences.push_back(divergence);
        }
    }
}

impl std::fmt::Debug for PolicyRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicyRegistry")
            .field("active", &self.active.load().as_ref().map(|active| active.policy.digest().to_owned()))
            .field("staged", &self.staged().len())
            .field("requires_signature", &self.requires_signature())
            .finish_non_exhaustive()
    }
}

/// The policies as they were when the snapshot was taken; what one evaluation or batch uses.
pub struct Snapshot<'a> {
    registry: &'a PolicyRegistry,
    active: Option<Arc<ActivePolicy>>,
    pins: Arc<BTreeMap<String, Arc<Entry>>>,
    shadow: Option<Arc<Entry>>,
}

impl Snapshot<'_> {
    /// The active policy of this snapshot.
    pub fn active(&self) -> Option<&Arc<ActivePolicy>> {
        self.active.as_ref()
    }

    /// Evaluates a request (JSON text) on the policy pinned for its `contract.unit_ref`, else on
    /// the active policy; with a shadow candidate, evaluates it there too and records any
    /// divergence. The answer is always the chosen policy's.
    ///
    /// # Errors
    /// [`RegistryError::NoActivePolicy`], or [`RegistryError::Host`] when the call failed (trap,
    /// fuel, memory). The inner error is the evaluator's typed answer.
    pub fn evaluate_json(&self, request: &str) -> Result<Result<Served<String>, EvaluationError>, RegistryError> {
        if let Some(unit_ref) = unit_ref(&self.pins, request)
            && let Some(entry) = self.pins.get(&unit_ref)
        {
            let outcome = entry.policy.evaluate_json(request)?;
            return Ok(outcome.map(|evaluated| Served { evaluated, route: Route::Pinned { unit_ref } }));
        }
        let active = self.active.as_ref().ok_or(RegistryError::NoActivePolicy)?;
        let outcome = active.policy.evaluate_json(request);
        if let Some(shadow) = &self.shadow
            && shadow.staged.digest != active.policy.digest()
        {
            let candidate = shadow.policy.evaluate_json(request);
            let (active_summary, candidate_summary) = (summarize(&outcome), summarize(&candidate));
            if active_summary != candidate_summary {
                self.registry.record_divergence(Divergence {
                    request_digest: digest_of(request.as_bytes()),
                    active_digest: active.policy.digest().to_owned(),
                    active: active_summary,
                    candidate_digest: shadow.staged.digest.clone(),
                    candidate: candidate_summary,
                    at_ms: now_ms(),
                });
            }
        }
        let route = Route::Active { activation: active.activation };
        Ok(outcome?.map(|evaluated| Served { evaluated, route }))
    }
}

/// The request's `contract.unit_ref`, read only when some unit is pinned.
fn unit_ref(pins: &BTreeMap<String, Arc<Entry>>, request: &str) -> Option<String> {
    #[derive(Deserialize)]
    struct Request {
        contract: Option<Contract>,
    }
    #[derive(Deserialize)]
    struct Contract {
        unit_ref: Option<String>,
    }
    if pins.is_empty() {
        return None;
    }
    serde_json::from_str::<Request>(request).ok()?.contract?.unit_ref
}

fn summarize(outcome: &Result<Result<Evaluated<String>, EvaluationError>, HostError>) -> OutcomeSummary {
    #[derive(Deserialize)]
    struct Brief {
        action: String,
        reasons: Vec<String>,
    }
    match outcome {
        Ok(Ok(evaluated)) => match serde_json::from_str::<Brief>(&evaluated.decision) {
            Ok(brief) => OutcomeSummary::Decision { action: brief.action, reasons: brief.reasons },
            Err(error) => OutcomeSummary::HostError { message: format!("unreadable decision: {error}") },
        },
        Ok(Err(error)) => OutcomeSummary::Error { code: error.code().as_str().to_owned() },
        Err(error) => OutcomeSummary::HostError { message: error.to_string() },
    }
}

/// Lower- or upper-case hex to bytes (a signature as `stage` takes it); `None` for anything else.
#[must_use]
pub fn decode_hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    text.as_bytes()
        .chunks_exact(2)
        .map(|pair| {
            let digit = |byte: u8| char::from(byte).to_digit(16);
            let (high, low) = match pair {
                [high, low] => (digit(*high)?, digit(*low)?),
                _ => return None,
            };
            u8::try_from(high * 16 + low).ok()
        })
        .collect()
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX))
}

fn micros(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX)
}

const _: () = {
    const fn shareable<T: Send + Sync>() {}
    shareable::<PolicyRegistry>();
};

/// The largest component [`PolicyRegistry::stage_file`] reads: 32 MiB, the service's upload limit.
pub const MAX_COMPONENT_FILE_BYTES: u64 = 32 << 20;

/// The largest signature file read (an ed25519 signature is 128 hex digits).
const MAX_SIGNATURE_FILE_BYTES: u64 = 4096;

/// The bytes of `path` when it is a regular file of at most `limit` bytes. It is opened without
/// blocking (a FIFO never stalls the caller), its type and size are read from the open
/// descriptor, and no more than `limit` bytes are ever read (a file that grows meanwhile is
/// refused).
fn read_regular(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read as _;
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
    let file = options.open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a regular file"));
    }
    let too_large = || std::io::Error::new(std::io::ErrorKind::FileTooLarge, format!("larger than {limit} bytes"));
    if meta.len() > limit {
        return Err(too_large());
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > limit {
        return Err(too_large());
    }
    Ok(bytes)
}

/// Whether `text` has the form of a SPEC §3 reference: 1 to 256 bytes, a letter or digit, then
/// letters, digits and `._:/@+-`. (The evaluator also refuses credential words; a pin only has to
/// be bounded and able to match.)
fn is_unit_ref(text: &str) -> bool {
    let mut bytes = text.bytes();
    text.len() <= 256
        && bytes.next().is_some_and(|first| first.is_ascii_alphanumeric())
        && bytes.all(|byte| byte.is_ascii_alphanumeric() || b"._:/@+-".contains(&byte))
}
