//! Conformance vectors (SPEC §11): reading one and checking an outcome against it. Pure, so
//! that every runner — the native test, the CLI over the component, the bindings' runners —
//! judges a vector by the same rules; runners only find files and call an evaluator.

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

/// One parsed vector.
#[derive(Debug)]
pub struct Vector {
    /// `<group>/<name>`.
    pub id: String,
    /// One sentence: what the vector pins down.
    pub description: String,
    /// The exact request text to evaluate: the `request` value as written in the file, or the
    /// `request_json` string (for JSON-level faults a vector file cannot hold as a value).
    pub request_text: String,
    /// What must come out.
    pub expect: Expectation,
    /// The expected derivation of the decision (`expect.derivation`, the `derivation/` group),
    /// when the vector gives one; checked by [`Vector::check_derivation`].
    pub derivation: Option<Value>,
    /// The expected diagnosis (extension `expect.diagnosis`), for an error vector that lists
    /// every fault; `None` when the vector does not give one.
    pub diagnosis: Option<Vec<ExpectedFault>>,
    /// The gate case (extension `change` / `change_json` with `expect.gate` or
    /// `expect.gate_error`, and `expect.scaler`; SPEC §12), when the vector is one.
    pub gate: Option<GateCase>,
}

/// A gate vector's question and what must come out (SPEC §12).
#[derive(Debug)]
pub struct GateCase {
    /// The exact change text for a JSON gate entry point (`gate_json`).
    pub change_text: String,
    /// The change as a typed entry point takes it, `(to_replicas, kind)`; `None` for a
    /// `change_json` vector (a change only the JSON reader can be given).
    pub change: Option<(i64, String)>,
    /// The expected verdict, or the expected error.
    pub expect: GateExpectation,
    /// The expected external-scaler reading of the request, when given.
    pub scaler: Option<Value>,
}

/// What a gate must answer.
#[derive(Debug)]
pub enum GateExpectation {
    /// A verdict: every field exactly, except `message_contains` (a fragment of `message`) and
    /// `error` (compared by code and `message_contains`, as §11 compares errors).
    Verdict(Value),
    /// An error for a change that cannot be read.
    Error {
        /// The expected code.
        code: String,
        /// Text the message must contain.
        message_contains: Option<String>,
    },
}

/// One expected fault of a diagnosis: compared by code and path exactly, and by fragments of
/// its hint (and message, when given).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectedFault {
    /// The expected code.
    pub code: String,
    /// The expected JSON path.
    pub path: String,
    /// Text the hint must contain.
    pub hint_contains: String,
    /// Text the message must contain.
    #[serde(default)]
    pub message_contains: Option<String>,
}

/// The expected outcome of a vector.
#[derive(Debug)]
pub enum Expectation {
    /// A complete decision, compared field by field.
    Decision(Value),
    /// An error code, and optionally a fragment of the message.
    Error {
        /// The expected code.
        code: String,
        /// Text the message must contain.
        message_contains: Option<String>,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVector<'a> {
    id: String,
    description: String,
    #[serde(borrow, default)]
    request: Option<&'a RawValue>,
    #[serde(default)]
    request_json: Option<String>,
    #[serde(default)]
    change: Option<RawChange>,
    #[serde(default)]
    change_json: Option<String>,
    expect: RawExpect,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawChange {
    to_replicas: i64,
    #[serde(default)]
    kind: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExpect {
    #[serde(default)]
    decision: Option<Value>,
    #[serde(default)]
    contract_digest: Option<String>,
    #[serde(default)]
    error: Option<RawError>,
    #[serde(default)]
    derivation: Option<Value>,
    diagnosis: Option<Vec<ExpectedFault>>,
    #[serde(default)]
    gate: Option<Value>,
    #[serde(default)]
    gate_error: Option<RawError>,
    #[serde(default)]
    scaler: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawError {
    code: String,
    #[serde(default)]
    message_contains: Option<String>,
}

impl Vector {
    /// Reads a vector file's text.
    ///
    /// # Errors
    /// A message when the file is not a well-formed vector.
    pub fn parse(text: &str) -> Result<Self, String> {
        let raw: RawVector<'_> = serde_json::from_str(text).map_err(|e| format!("not a vector: {e}"))?;
        let request_text = match (raw.request, raw.request_json) {
            (Some(request), None) => request.get().to_owned(),
            (None, Some(text)) => text,
            _ => {
                return Err("a vector needs exactly one of `request` and `request_json`".to_owned());
            }
        };
        let expect = match (raw.expect.decision, raw.expect.error) {
            (Some(decision), None) => Expectation::Decision(decision),
            (None, Some(error)) => Expectation::Error { code: error.code, message_contains: error.message_contains },
            _ => return Err("`expect` needs exactly one of `decision` and `error`".to_owned()),
        };
        let derivation = raw.expect.derivation;
        if derivation.is_some() && !matches!(expect, Expectation::Decision(_)) {
            return Err("`expect.derivation` needs `expect.decision`".to_owned());
        }
        if let Some(faults) = &raw.expect.diagnosis {
            let first = faults.first().map(|f| f.code.as_str());
            match &expect {
                Expectation::Error { code, .. } if first == Some(code.as_str()) => {}
                Expectation::Error { .. } => {
                    return Err("`expect.diagnosis` must start with the fault of `expect.error`".to_owned());
                }
                Expectation::Decision(_) => return Err("`expect.diagnosis` goes with `expect.error`".to_owned()),
            }
        }
        // `contract_digest` is checked by runners that can validate contracts; see `contract_digest`.
        let _ = raw.expect.contract_digest;
        let gate = gate_case(raw.change, raw.change_json, raw.expect.gate, raw.expect.gate_error, raw.expect.scaler)?;
        Ok(Self {
            id: raw.id,
            description: raw.description,
            request_text,
            expect,
            derivation,
            diagnosis: raw.expect.diagnosis,
            gate,
        })
    }

    /// Checks what a gate entry point returned ([`crate::gate_json`], or a face's equivalent)
    /// against `expect.gate` or `expect.gate_error`: the verdict JSON text, or an error's code
    /// and message.
    ///
    /// # Errors
    /// A message naming the first difference, or that the vector is not a gate vector.
    pub fn check_gate(&self, outcome: Result<&str, (&str, &str)>) -> Result<(), String> {
        let Some(case) = &self.gate else {
            return Err(format!("{} is not a gate vector", self.id));
        };
        match (&case.expect, outcome) {
            (GateExpectation::Verdict(expected), Ok(text)) => {
                let actual: Value = serde_json::from_str(text).map_err(|e| format!("verdict is not JSON: {e}"))?;
                verdict_difference(expected, &actual, "gate").map_or(Ok(()), Err)
            }
            (GateExpectation::Verdict(_), Err((code, message))) => {
                Err(format!("expected a verdict, got error {code}: {message}"))
            }
            (GateExpectation::Error { code, .. }, Ok(text)) => {
                Err(format!("expected error {code}, got a verdict: {}", truncate(text, 200)))
            }
            (GateExpectation::Error { code, message_contains }, Err(actual)) => {
                check_error(code, message_contains.as_deref(), actual)
            }
        }
    }

    /// Checks an external-scaler reading ([`crate::scaler_reading_json`], or a face's
    /// equivalent) against `expect.scaler`, compared as a verdict is. A vector without
    /// `expect.scaler` passes.
    ///
    /// # Errors
    /// A message naming the first difference.
    pub fn check_scaler(&self, reading_json: &str) -> Result<(), String> {
        let Some(expected) = self.gate.as_ref().and_then(|case| case.scaler.as_ref()) else { return Ok(()) };
        let actual: Value = serde_json::from_str(reading_json).map_err(|e| format!("reading is not JSON: {e}"))?;
        verdict_difference(expected, &actual, "scaler").map_or(Ok(()), Err)
    }

    /// Checks a diagnosis of the request (the JSON of `diagnose-request-json`:
    /// `{"faults": [{"code", "message", "path", "hint"}, …]}`) against `expect.diagnosis`: the
    /// same number of faults, and each in order with the expected code and path and a hint (and
    /// message) containing the expected fragments. A vector without `expect.diagnosis` passes.
    ///
    /// # Errors
    /// A message naming the first difference.
    pub fn check_diagnosis(&self, diagnosis_json: &str) -> Result<(), String> {
        let Some(expected) = &self.diagnosis else { return Ok(()) };
        let actual: Value = serde_json::from_str(diagnosis_json).map_err(|e| format!("diagnosis is not JSON: {e}"))?;
        let faults = actual.get("faults").and_then(Value::as_array).ok_or("diagnosis has no `faults` array")?;
        let text = |fault: &Value, key: &str| fault.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
        for (i, (want, got)) in expected.iter().zip(faults).enumerate() {
            let (code, path, message, hint) =
                (text(got, "code"), text(got, "path"), text(got, "message"), text(got, "hint"));
            let at = format!("diagnosis[{i}]");
            if code != want.code || path != want.path {
                return Err(format!(
                    "{at}: expected {} at {:?}, got {code} at {path:?}: {message}",
                    want.code, want.path
                ));
            }
            if !hint.contains(&want.hint_contains) {
                return Err(format!(
                    "{at} ({code} at {path:?}): hint {hint:?} does not contain {:?}",
                    want.hint_contains
                ));
            }
            if let Some(fragment) = &want.message_contains
                && !message.contains(fragment)
            {
                return Err(format!("{at} ({code} at {path:?}): message {message:?} does not contain {fragment:?}"));
            }
        }
        if faults.len() != expected.len() {
            let extra = faults.get(expected.len()).map(|f| format!(", first extra: {f}")).unwrap_or_default();
            return Err(format!("diagnosis: expected {} faults, got {}{extra}", expected.len(), faults.len()));
        }
        Ok(())
    }

    /// The request's `contract` as JSON text, for checking `contract_digest`; `None` when the
    /// request text is not a JSON object with a contract.
    pub fn contract_text(&self) -> Option<String> {
        let request: Value = serde_json::from_str(&self.request_text).ok()?;
        request.get("contract").map(ToString::to_string)
    }

    /// The expected `contract_digest`, when the vector names one.
    pub fn contract_digest(text: &str) -> Option<String> {
        let value: Value = serde_json::from_str(text).ok()?;
        value.get("expect")?.get("contract_digest")?.as_str().map(str::to_owned)
    }

    /// Checks what a derivation entry point returned ([`crate::derive_json`], or a face's
    /// equivalent) against `expect.derivation`: the derivation JSON text, or an error's code and
    /// message. Compared field by field, every field (null ones included).
    ///
    /// # Errors
    /// A message naming the first difference (the field path), the error that came back, or
    /// that the vector has no `expect.derivation` (call it only when [`Vector::derivation`] is
    /// `Some`).
    pub fn check_derivation(&self, outcome: Result<&str, (&str, &str)>) -> Result<(), String> {
        let Some(expected) = &self.derivation else {
            return Err(format!("{} has no expect.derivation", self.id));
        };
        match outcome {
            Ok(text) => {
                let actual: Value = serde_json::from_str(text).map_err(|e| format!("derivation is not JSON: {e}"))?;
                first_difference(expected, &actual, "derivation").map_or(Ok(()), Err)
            }
            Err((code, message)) => Err(format!("expected a derivation, got error {code}: {message}")),
        }
    }

    /// Checks what an evaluator returned: the decision JSON text, or an error's code and message.
    ///
    /// # Errors
    /// A message naming the first difference (the field path for decisions).
    pub fn check(&self, outcome: Result<&str, (&str, &str)>) -> Result<(), String> {
        match (&self.expect, outcome) {
            (Expectation::Decision(expected), Ok(text)) => {
                let actual: Value = serde_json::from_str(text).map_err(|e| format!("decision is not JSON: {e}"))?;
                first_difference(expected, &actual, "decision").map_or(Ok(()), Err)
            }
            (Expectation::Decision(_), Err((code, message))) => {
                Err(format!("expected a decision, got error {code}: {message}"))
            }
            (Expectation::Error { code, .. }, Ok(text)) => {
                Err(format!("expected error {code}, got a decision: {}", truncate(text, 200)))
            }
            (Expectation::Error { code, message_contains }, Err(actual)) => {
                check_error(code, message_contains.as_deref(), actual)
            }
        }
    }
}

fn gate_case(
    change: Option<RawChange>,
    change_json: Option<String>,
    verdict: Option<Value>,
    error: Option<RawError>,
    scaler: Option<Value>,
) -> Result<Option<GateCase>, String> {
    let (change_text, change) = match (change, change_json) {
        (None, None) => {
            if verdict.is_some() || error.is_some() || scaler.is_some() {
                return Err("`expect.gate`, `expect.gate_error` and `expect.scaler` need a `change`".to_owned());
            }
            return Ok(None);
        }
        (Some(change), None) => {
            let kind = change.kind.unwrap_or_else(|| "scale".to_owned());
            let text = serde_json::json!({"to_replicas": change.to_replicas, "kind": kind}).to_string();
            (text, Some((change.to_replicas, kind)))
        }
        (None, Some(text)) => (text, None),
        (Some(_), Some(_)) => return Err("a vector has at most one of `change` and `change_json`".to_owned()),
    };
    let expect = match (verdict, error) {
        (Some(verdict), None) => GateExpectation::Verdict(verdict),
        (None, Some(error)) => GateExpectation::Error { code: error.code, message_contains: error.message_contains },
        _ => return Err("a gate vector needs exactly one of `expect.gate` and `expect.gate_error`".to_owned()),
    };
    Ok(Some(GateCase { change_text, change, expect, scaler }))
}

/// The first difference between an expected verdict (or reading) and the actual one: every field
/// exactly, except `message_contains` (a fragment of `message`) and `error` (by code and
/// `message_contains`).
fn verdict_difference(expected: &Value, actual: &Value, path: &str) -> Option<String> {
    let (Value::Object(want), Value::Object(got)) = (expected, actual) else {
        return Some(format!("{path}: expected an object, got {actual}"));
    };
    for (key, want_value) in want {
        let child = format!("{path}.{key}");
        if key == "message_contains" {
            let message = got.get("message").and_then(Value::as_str).unwrap_or_default();
            let fragment = want_value.as_str().unwrap_or_default();
            if !message.contains(fragment) {
                return Some(format!("{path}.message: {message:?} does not contain {fragment:?}"));
            }
            continue;
        }
        let Some(got_value) = got.get(key) else {
            return Some(format!("{child}: missing, expected {want_value}"));
        };
        if key == "error" && !want_value.is_null() {
            let text =
                |value: &Value, field: &str| value.get(field).and_then(Value::as_str).unwrap_or_default().to_owned();
            let code = text(want_value, "code");
            let fragment = want_value.get("message_contains").and_then(Value::as_str);
            if let Err(difference) =
                check_error(&code, fragment, (&text(got_value, "code"), &text(got_value, "message")))
            {
                return Some(format!("{child}: {difference}"));
            }
            continue;
        }
        if let Some(difference) = first_difference(want_value, got_value, &child) {
            return Some(difference);
        }
    }
    let known = |key: &str| want.contains_key(key) || (key == "message" && want.contains_key("message_contains"));
    got.keys().find(|key| !known(key)).map(|key| format!("{path}.{key}: unexpected field"))
}

/// An error matches when its code does and its message contains the expected fragment.
fn check_error(code: &str, message_contains: Option<&str>, (actual_code, message): (&str, &str)) -> Result<(), String> {
    if code != actual_code {
        return Err(format!("expected error {code}, got {actual_code}: {message}"));
    }
    match message_contains {
        Some(fragment) if !message.contains(fragment) => {
            Err(format!("error {code}: message {message:?} does not contain {fragment:?}"))
        }
        _ => Ok(()),
    }
}

fn truncate(text: &str, max: usize) -> &str {
    text.char_indices().nth(max).map_or(text, |(i, _)| text.get(..i).unwrap_or(text))
}

/// The path and values of the first place where `actual` differs from `expected`.
pub fn first_difference(expected: &Value, actual: &Value, path: &str) -> Option<String> {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            for (key, e_value) in e {
                let child = format!("{path}.{key}");
                match a.get(key) {
                    None => return Some(format!("{child}: missing, expected {e_value}")),
                    Some(a_value) => {
                        if let Some(difference) = first_difference(e_value, a_value, &child) {
                            return Some(difference);
                        }
                    }
                }
            }
            a.keys().find(|key| !e.contains_key(*key)).map(|key| format!("{path}.{key}: unexpected field"))
        }
        (Value::Array(e), Value::Array(a)) => {
            for (i, (e_item, a_item)) in e.iter().zip(a).enumerate() {
                if let Some(difference) = first_difference(e_item, a_item, &format!("{path}[{i}]")) {
                    return Some(difference);
                }
            }
            (e.len() != a.len()).then(|| format!("{path}: expected {} entries, got {}", e.len(), a.len()))
        }
        _ if expected == actual => None,
        _ => Some(format!("{path}: expected {expected}, got {actual}")),
    }
}

/// One simulation vector (`tests/vectors-sim/`): the input of
/// [`crate::simulate::simulate_json`] and what it must return.
#[derive(Debug)]
pub struct SimulationVector {
    /// `sim/<name>`.
    pub id: String,
    /// The exact input text to simulate.
    pub input_text: String,
    expect: SimulationExpectation,
}

#[derive(Debug)]
enum SimulationExpectation {
    /// Expected steps (each compared on the fields it gives) and the whole summary.
    Simulation { steps: Vec<Value>, summary: Value },
    /// An error code, and optionally a fragment of the message.
    Error { code: String, message_contains: Option<String> },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSimulationVector<'a> {
    id: String,
    #[allow(dead_code, reason = "read for the shape check; runners report the id")]
    description: String,
    #[serde(borrow)]
    input: &'a RawValue,
    expect: RawSimulationExpect,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSimulationExpect {
    #[serde(default)]
    steps: Option<Vec<Value>>,
    #[serde(default)]
    summary: Option<Value>,
    #[serde(default)]
    error: Option<RawError>,
}

impl SimulationVector {
    /// Reads a simulation vector file's text.
    ///
    /// # Errors
    /// A message when the file is not a well-formed simulation vector.
    pub fn parse(text: &str) -> Result<Self, String> {
        let raw: RawSimulationVector<'_> =
            serde_json::from_str(text).map_err(|e| format!("not a simulation vector: {e}"))?;
        let expect = match (raw.expect.steps, raw.expect.summary, raw.expect.error) {
            (Some(steps), Some(summary), None) => SimulationExpectation::Simulation { steps, summary },
            (None, None, Some(error)) => {
                SimulationExpectation::Error { code: error.code, message_contains: error.message_contains }
            }
            _ => return Err("`expect` needs `steps` and `summary`, or `error`".to_owned()),
        };
        Ok(Self { id: raw.id, input_text: raw.input.get().to_owned(), expect })
    }

    /// Checks what a simulator returned: the simulation JSON text, or an error's code and message.
    ///
    /// # Errors
    /// A message naming the first difference.
    pub fn check(&self, outcome: Result<&str, (&str, &str)>) -> Result<(), String> {
        match (&self.expect, outcome) {
            (SimulationExpectation::Simulation { steps, summary }, Ok(text)) => {
                let actual: Value = serde_json::from_str(text).map_err(|e| format!("simulation is not JSON: {e}"))?;
                let actual_steps = actual.get("steps").and_then(Value::as_array).ok_or("no `steps` array")?;
                if actual_steps.len() != steps.len() {
                    return Err(format!("expected {} steps, got {}", steps.len(), actual_steps.len()));
                }
                for (i, (expected, actual)) in steps.iter().zip(actual_steps).enumerate() {
                    // A step is compared on the fields the vector gives (not its decision_id).
                    let Value::Object(fields) = expected else { return Err(format!("steps[{i}] is not an object")) };
                    for (key, value) in fields {
                        let got = actual.get(key).unwrap_or(&Value::Null);
                        if let Some(difference) = first_difference(value, got, &format!("steps[{i}].{key}")) {
                            return Err(difference);
                        }
                    }
                }
                let actual_summary = actual.get("summary").unwrap_or(&Value::Null);
                first_difference(summary, actual_summary, "summary").map_or(Ok(()), Err)
            }
            (SimulationExpectation::Simulation { .. }, Err((code, message))) => {
                Err(format!("expected a simulation, got error {code}: {message}"))
            }
            (SimulationExpectation::Error { code, .. }, Ok(_)) => {
                Err(format!("expected error {code}, got a simulation"))
            }
            (SimulationExpectation::Error { code, message_contains }, Err(actual)) => {
                check_error(code, message_contains.as_deref(), actual)
            }
        }
    }
}
