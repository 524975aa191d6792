//! `scale-units conformance DIR...`: every vector below the folders, through the component (or
//! the native core with `--native`), judged by the core's one set of rules
//! (`scale_units_core::conformance`).

use std::collections::BTreeMap;
use std::path::Path;

use scale_units_core::conformance::Vector;
use scale_units_host::{Policy, vector_files};

use crate::{Failure, Options, exit, load_policy};

/// A JSON answer, or an error's code and message.
type Outcome = Result<String, (String, String)>;

/// What runs the vectors.
enum Evaluator {
    Component(Box<Policy>),
    Native,
}

impl Evaluator {
    /// The decision JSON, or the error's code and message; `Err` for a host failure.
    fn evaluate(&self, request: &str) -> Result<Result<String, (String, String)>, String> {
        let outcome = match self {
            Self::Native => scale_units_core::evaluate_json(request),
            Self::Component(policy) => match policy.evaluate_json(request) {
                Ok(outcome) => outcome.map(|evaluated| evaluated.decision),
                Err(error) => return Err(error.to_string()),
            },
        };
        Ok(outcome.map_err(|error| (error.code().as_str().to_owned(), error.message().to_owned())))
    }

    /// The derivation JSON, or the error's code and message; `Err` for a host failure (a
    /// component of WIT 0.1 lacks `derive-json`).
    fn derive(&self, request: &str) -> Result<Result<String, (String, String)>, String> {
        let outcome = match self {
            Self::Native => scale_units_core::derive_json(request),
            Self::Component(policy) => policy.derive_json(request).map_err(|error| error.to_string())?,
        };
        Ok(outcome.map_err(|error| (error.code().as_str().to_owned(), error.message().to_owned())))
    }

    /// The diagnosis JSON of a request; `Err` for a host failure.
    fn diagnose(&self, request: &str) -> Result<String, String> {
        match self {
            Self::Native => Ok(scale_units_core::diagnose_request_json(request).to_json()),
            Self::Component(policy) => policy
                .diagnose_request_json(request)
                .map(|diagnosis| diagnosis.to_json())
                .map_err(|error| error.to_string()),
        }
    }

    /// The gate's verdict JSON and the scaler's reading JSON (SPEC §12); `Err` for a host
    /// failure (a component before WIT 0.3 lacks them).
    fn gate(&self, request: &str, change: &str) -> Result<(Outcome, String), String> {
        let (verdict, reading) = match self {
            Self::Native => {
                (scale_units_core::gate_json(request, change), scale_units_core::scaler_reading_json(request))
            }
            Self::Component(policy) => (
                policy.gate_json(request, change).map_err(|error| error.to_string())?,
                policy.scaler_reading_json(request).map_err(|error| error.to_string())?,
            ),
        };
        Ok((verdict.map_err(|error| (error.code().as_str().to_owned(), error.message().to_owned())), reading))
    }

    fn contract_digest(&self, contract: &str) -> Result<Result<String, String>, String> {
        let outcome = match self {
            Self::Native => scale_units_core::validate_contract_json(contract),
            Self::Component(policy) => policy.validate_contract_json(contract).map_err(|error| error.to_string())?,
        };
        Ok(outcome.map(|identity| identity.contract_digest).map_err(|error| error.to_string()))
    }
}

pub(crate) fn run(options: &Options) -> Result<u8, Failure> {
    if options.operands.is_empty() {
        return Err(Failure::Usage("conformance needs at least one folder".to_owned()));
    }
    let mut files = Vec::new();
    for dir in &options.operands {
        files.extend(
            vector_files(Path::new(dir)).map_err(|error| Failure::Host(format!("cannot read {dir}: {error}")))?,
        );
    }
    files.sort();
    files.dedup();
    let mut known = match &options.known_failures {
        Some(path) => known_failures(path)?,
        None => BTreeMap::new(),
    };
    let evaluator =
        if options.native { Evaluator::Native } else { Evaluator::Component(Box::new(load_policy(options, None)?)) };

    let (mut passed, mut failed) = (0usize, 0usize);
    for file in &files {
        let (id, verdict) = judge(&evaluator, file);
        match (verdict, known.remove(&id)) {
            (Ok(()), None) => passed += 1,
            (Err(reason), None) => {
                failed += 1;
                out!("FAIL {id} ({}): {reason}", file.display());
            }
            (Err(_), Some(_)) => passed += 1,
            (Ok(()), Some(reason)) => {
                failed += 1;
                out!("FAIL {id}: listed as a known failure ({reason}) but passes; remove it from the list");
            }
        }
    }
    for (id, _) in known {
        failed += 1;
        out!("FAIL {id}: listed as a known failure but no such vector was run");
    }
    out!("{passed} passed, {failed} failed");
    Ok(if failed == 0 && passed > 0 { 0 } else { exit::FAILURE })
}

/// The vector's id (or its file name when it has none) and whether it passed.
fn judge(evaluator: &Evaluator, file: &Path) -> (String, Result<(), String>) {
    let fallback_id = file.display().to_string();
    let text = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(error) => return (fallback_id, Err(format!("cannot read: {error}"))),
    };
    let vector = match Vector::parse(&text) {
        Ok(vector) => vector,
        Err(error) => return (fallback_id, Err(error)),
    };
    let verdict = match evaluator.evaluate(&vector.request_text) {
        Err(host) => Err(format!("host error: {host}")),
        Ok(outcome) => {
            let outcome = outcome.as_deref().map_err(|(code, message)| (code.as_str(), message.as_str()));
            vector.check(outcome)
        }
    };
    let verdict = verdict.and_then(|()| match Vector::contract_digest(&text) {
        None => Ok(()),
        Some(expected) => check_contract_digest(evaluator, &vector, &expected),
    });
    // The `derivation/` group's `expect.derivation`, through the same evaluator.
    let verdict = verdict.and_then(|()| {
        if vector.derivation.is_none() {
            return Ok(());
        }
        match evaluator.derive(&vector.request_text) {
            Err(host) => Err(format!("host error: {host}")),
            Ok(outcome) => {
                vector.check_derivation(outcome.as_deref().map_err(|(code, message)| (code.as_str(), message.as_str())))
            }
        }
    });
    // The `diagnosis/` group's `expect.diagnosis`.
    let verdict = verdict.and_then(|()| {
        if vector.diagnosis.is_none() {
            return Ok(());
        }
        match evaluator.diagnose(&vector.request_text) {
            Err(host) => Err(format!("host error: {host}")),
            Ok(diagnosis) => vector.check_diagnosis(&diagnosis),
        }
    });
    // The `gate/` group's `expect.gate` and `expect.scaler`.
    let verdict = verdict.and_then(|()| {
        let Some(case) = &vector.gate else { return Ok(()) };
        match evaluator.gate(&vector.request_text, &case.change_text) {
            Err(host) => Err(format!("host error: {host}")),
            Ok((outcome, reading)) => {
                vector.check_gate(outcome.as_deref().map_err(|(code, message)| (code.as_str(), message.as_str())))?;
                vector.check_scaler(&reading)
            }
        }
    });
    (vector.id, verdict)
}

fn check_contract_digest(evaluator: &Evaluator, vector: &Vector, expected: &str) -> Result<(), String> {
    let contract =
        vector.contract_text().ok_or("expect.contract_digest given, but the request has no readable contract")?;
    match evaluator.contract_digest(&contract) {
        Err(host) => Err(format!("host error: {host}")),
        Ok(Err(error)) => Err(format!("contract_digest: validating the contract failed: {error}")),
        Ok(Ok(digest)) if digest == expected => Ok(()),
        Ok(Ok(digest)) => Err(format!("contract_digest: expected {expected}, got {digest}")),
    }
}

/// `<id> <reason>` a line; `#` starts a comment.
fn known_failures(path: &Path) -> Result<BTreeMap<String, String>, Failure> {
    let text = std::fs::read_to_string(path)
        .map_err(|error| Failure::Host(format!("cannot read {}: {error}", path.display())))?;
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(|line| {
            let (id, reason) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
            (id.to_owned(), reason.trim().to_owned())
        })
        .collect())
}
