//! The conformance gate: a candidate component must decide every vector of a suite exactly as the
//! vector says (SPEC §11) before the registry stages it, and derive and diagnose it as the vector
//! says when the candidate exports those functions (WIT 0.2.0). The vectors are judged by the
//! core's one set of rules, [`scale_units_core::conformance::Vector`], as `scale-units
//! conformance` does.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use scale_units_core::conformance::Vector;

use super::RegistryError;
use crate::Policy;

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/vectors.rs"));
}

/// The gate stops after this many failures: a candidate that fails is refused either way.
const MAX_FAILURES: usize = 10;

/// A set of conformance vectors every candidate must pass.
#[derive(Clone, Debug)]
pub struct ConformanceSuite {
    vectors: Arc<Vec<SuiteVector>>,
    origin: String,
}

#[derive(Debug)]
struct SuiteVector {
    name: String,
    parsed: Result<Vector, String>,
    contract_digest: Option<String>,
}

/// What the gate found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct GateReport {
    pub(crate) passed: usize,
    pub(crate) failed: usize,
    pub(crate) failures: Vec<String>,
}

impl ConformanceSuite {
    /// The vectors shipped with this host: `tests/vectors/` of the workspace it was built in,
    /// embedded at build time.
    pub fn embedded() -> Self {
        Self::from_texts(
            "embedded tests/vectors",
            embedded::EMBEDDED.iter().map(|(name, text)| ((*name).to_owned(), (*text).to_owned())),
        )
    }

    /// Every `*.json` vector below `dir`.
    ///
    /// # Errors
    /// [`RegistryError::ConformanceSuite`] when the folder or a file cannot be read.
    pub fn from_dir(dir: impl AsRef<Path>) -> Result<Self, RegistryError> {
        let dir = dir.as_ref();
        let files = vector_files(dir)
            .map_err(|error| RegistryError::ConformanceSuite { reason: format!("{}: {error}", dir.display()) })?;
        let mut texts = Vec::with_capacity(files.len());
        for file in files {
            let text = std::fs::read_to_string(&file)
                .map_err(|error| RegistryError::ConformanceSuite { reason: format!("{}: {error}", file.display()) })?;
            texts.push((file.display().to_string(), text));
        }
        Ok(Self::from_texts(&dir.display().to_string(), texts))
    }

    fn from_texts(origin: &str, texts: impl IntoIterator<Item = (String, String)>) -> Self {
        let vectors = texts
            .into_iter()
            .map(|(name, text)| SuiteVector {
                contract_digest: Vector::contract_digest(&text),
                parsed: Vector::parse(&text),
                name,
            })
            .collect();
        Self { vectors: Arc::new(vectors), origin: origin.to_owned() }
    }

    /// How many vectors the suite holds.
    pub fn len(&self) -> usize {
        self.vectors.len()
    }

    /// Whether the suite is empty (an empty suite passes no candidate).
    pub fn is_empty(&self) -> bool {
        self.vectors.is_empty()
    }

    /// Where the vectors came from.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// Runs every vector through `policy`; stops at the first host failure (a trap, fuel) or after
    /// [`MAX_FAILURES`] failures.
    pub(crate) fn run(&self, policy: &Policy) -> GateReport {
        let mut report = GateReport::default();
        for vector in self.vectors.iter() {
            let (id, verdict) = match &vector.parsed {
                Err(error) => (vector.name.clone(), Err(Verdict::Wrong(error.clone()))),
                Ok(parsed) => (parsed.id.clone(), judge(policy, parsed, vector.contract_digest.as_deref())),
            };
            match verdict {
                Ok(()) => report.passed += 1,
                Err(verdict) => {
                    report.failed += 1;
                    let stop = matches!(verdict, Verdict::Host(_)) || report.failed >= MAX_FAILURES;
                    let (Verdict::Host(why) | Verdict::Wrong(why)) = verdict;
                    report.failures.push(format!("{id}: {why}"));
                    if stop {
                        break;
                    }
                }
            }
        }
        report
    }
}

enum Verdict {
    /// The call failed: the candidate trapped, ran out of fuel or memory.
    Host(String),
    /// The candidate answered, wrongly.
    Wrong(String),
}

fn judge(policy: &Policy, vector: &Vector, contract_digest: Option<&str>) -> Result<(), Verdict> {
    let outcome = policy.evaluate_json(&vector.request_text).map_err(|error| Verdict::Host(error.to_string()))?;
    let verdict = match &outcome {
        Ok(evaluated) => vector.check(Ok(&evaluated.decision)),
        Err(error) => vector.check(Err((error.code().as_str(), error.message()))),
    };
    verdict.map_err(Verdict::Wrong)?;
    // `expect.derivation` and `expect.diagnosis` are checked where the candidate has the
    // functions (WIT 0.2.0); a 0.1.x candidate is judged on what its version exports.
    if vector.derivation.is_some() && policy.supports("derive-json") {
        let derived = policy.derive_json(&vector.request_text).map_err(|error| Verdict::Host(error.to_string()))?;
        let outcome = match &derived {
            Ok(json) => Ok(json.as_str()),
            Err(error) => Err((error.code().as_str(), error.message())),
        };
        vector.check_derivation(outcome).map_err(Verdict::Wrong)?;
    }
    if vector.diagnosis.is_some() && policy.supports("diagnose-request-json") {
        let diagnosis =
            policy.diagnose_request_json(&vector.request_text).map_err(|error| Verdict::Host(error.to_string()))?;
        vector.check_diagnosis(&diagnosis.to_json()).map_err(Verdict::Wrong)?;
    }
    // `expect.gate` and `expect.scaler` (SPEC §12), where the candidate has them (WIT 0.3.0).
    if let Some(case) = &vector.gate
        && policy.supports("gate-json")
    {
        let verdict = policy
            .gate_json(&vector.request_text, &case.change_text)
            .map_err(|error| Verdict::Host(error.to_string()))?;
        let outcome = match &verdict {
            Ok(json) => Ok(json.as_str()),
            Err(error) => Err((error.code().as_str(), error.message())),
        };
        vector.check_gate(outcome).map_err(Verdict::Wrong)?;
        let reading =
            policy.scaler_reading_json(&vector.request_text).map_err(|error| Verdict::Host(error.to_string()))?;
        vector.check_scaler(&reading).map_err(Verdict::Wrong)?;
    }
    let Some(expected) = contract_digest else { return Ok(()) };
    let contract = vector
        .contract_text()
        .ok_or_else(|| Verdict::Wrong("expect.contract_digest given, but the request has no contract".to_owned()))?;
    match policy.validate_contract_json(&contract).map_err(|error| Verdict::Host(error.to_string()))? {
        Ok(identity) if identity.contract_digest == expected => Ok(()),
        Ok(identity) => {
            Err(Verdict::Wrong(format!("contract_digest: expected {expected}, got {}", identity.contract_digest)))
        }
        Err(error) => Err(Verdict::Wrong(format!("contract_digest: the contract was refused: {error}"))),
    }
}

/// Every `*.json` file below `dir` (or `dir` itself when it is a file), sorted: the vector files
/// a conformance run reads. Shared by the gate and the `conformance` command.
///
/// # Errors
/// The first folder or entry that cannot be read.
pub fn vector_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    fn walk(dir: &Path, files: &mut Vec<PathBuf>) -> std::io::Result<()> {
        if dir.is_file() {
            files.push(dir.to_owned());
            return Ok(());
        }
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            if path.is_dir() {
                walk(&path, files)?;
            } else if path.extension().is_some_and(|extension| extension == "json") {
                files.push(path);
            }
        }
        Ok(())
    }
    let mut files = Vec::new();
    walk(dir, &mut files)?;
    files.sort();
    Ok(files)
}
