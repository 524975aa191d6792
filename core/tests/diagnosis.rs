//! The diagnosis and the SPEC's error come from one rule set: the first fault of a diagnosis is
//! exactly (code, message, path) the error the evaluation returns for the same input, and an
//! input the evaluation accepts has no fault. Held on every vector (JSON text, contract alone,
//! typed) and on generated inputs: mutated vector requests and arbitrary text.

#![allow(clippy::panic, clippy::indexing_slicing, reason = "a test fails by panicking")]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use proptest::prelude::*;
use scale_units_core::conformance::Vector;
use scale_units_core::{
    Diagnosis, EvaluationError, diagnose_contract, diagnose_contract_json, diagnose_request, diagnose_request_json,
    diagnosis_to_json, evaluate, evaluate_json, parse_contract, parse_request, validate_contract,
    validate_contract_json,
};
use serde_json::Value;

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, out);
        } else if path.extension().is_some_and(|e| e == "json") {
            out.push(path);
        }
    }
}

/// Every vector's request text, sorted by file.
fn requests() -> &'static [(String, String)] {
    static REQUESTS: OnceLock<Vec<(String, String)>> = OnceLock::new();
    REQUESTS.get_or_init(|| {
        let mut files = Vec::new();
        collect(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/vectors"), &mut files);
        files.sort();
        files
            .iter()
            .filter_map(|file| {
                let vector = Vector::parse(&std::fs::read_to_string(file).ok()?).ok()?;
                Some((vector.id, vector.request_text))
            })
            .collect()
    })
}

/// The first fault against the evaluation's outcome; a message naming the difference.
fn agree<T>(what: &str, outcome: &Result<T, EvaluationError>, diagnosis: &Diagnosis) -> Result<(), String> {
    for fault in diagnosis.faults() {
        if fault.hint().trim().is_empty() {
            return Err(format!("{what}: fault without a hint: {fault:?}"));
        }
    }
    match (outcome, diagnosis.first()) {
        (Ok(_), None) => Ok(()),
        (Ok(_), Some(fault)) => Err(format!("{what}: accepted, but the diagnosis found {fault:?}")),
        (Err(error), None) => Err(format!("{what}: refused with {error}, but the diagnosis is empty")),
        (Err(error), Some(fault)) if fault.to_error() == *error => Ok(()),
        (Err(error), Some(fault)) => Err(format!("{what}: the error is {error:?}, the first fault {fault:?}")),
    }
}

/// The JSON text, the contract alone and the typed forms of one request.
fn check_all_forms(request: &str) -> Result<(), String> {
    agree("request", &evaluate_json(request), &diagnose_request_json(request))?;
    if let Ok(typed) = parse_request(request) {
        agree("typed request", &evaluate(&typed), &diagnose_request(&typed))?;
    }
    let contract = serde_json::from_str::<Value>(request).ok().and_then(|r| r.get("contract").map(Value::to_string));
    if let Some(contract) = contract {
        agree("contract", &validate_contract_json(&contract), &diagnose_contract_json(&contract))?;
        if let Ok(typed) = parse_contract(&contract) {
            agree("typed contract", &validate_contract(&typed), &diagnose_contract(&typed))?;
        }
    }
    Ok(())
}

#[test]
fn first_fault_is_the_spec_error_on_every_vector() {
    let requests = requests();
    let mut failures = Vec::new();
    let (mut refused, mut several) = (0, 0);
    for (id, request) in requests {
        if let Err(message) = check_all_forms(request) {
            failures.push(format!("{id}: {message}"));
        }
        let diagnosis = diagnose_request_json(request);
        refused += usize::from(!diagnosis.is_empty());
        several += usize::from(diagnosis.len() > 1);
    }
    assert!(requests.len() > 400, "only {} vectors read", requests.len());
    assert!(refused > 200, "only {refused} vectors had a fault");
    assert!(several >= 12, "only {several} vectors had more than one fault");
    assert!(failures.is_empty(), "{} vectors disagree:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn json_and_text_forms() {
    let request = requests().iter().find(|(id, _)| id == "validation/stateless-default-blocks-on-sessions");
    let Some((_, request)) = request else { panic!("vector not found") };
    let diagnosis = diagnose_request_json(request);
    let json: Value = serde_json::from_str(&diagnosis_to_json(&diagnosis)).unwrap_or_default();
    let faults = json["faults"].as_array().cloned().unwrap_or_default();
    assert_eq!(faults.len(), diagnosis.len());
    // Field order and escaping: what serde_json writes for the same value.
    assert_eq!(diagnosis.to_json(), serde_json::to_string(&diagnosis).unwrap_or_default());
    assert!(diagnosis.to_json().starts_with(r#"{"faults":[{"code":"invalid_contract","message":"#));
    assert_eq!(faults[0]["code"], "invalid_contract");
    assert_eq!(faults[0]["path"], "contract.continuity");
    assert_eq!(diagnosis_to_json(&diagnosis), diagnosis.to_json());
    assert_eq!(
        diagnosis.to_text(),
        "contract.continuity: stateless continuity cannot block scale-down on active sessions\n  hint: \
         `block_scale_down_with_active` is not written, so it takes its default true, which a stateless contract \
         refuses: write `\"block_scale_down_with_active\": false` in `continuity`\n"
    );
    let empty = diagnose_request_json(&requests()[0].1);
    assert!(empty.is_empty(), "{empty:?}");
    assert_eq!(empty.to_json(), r#"{"faults":[],"omitted":0}"#);
    assert_eq!(empty.to_text(), "");
}

#[test]
fn text_that_is_not_json_is_one_fault() {
    for (text, fragment) in [
        ("\u{feff}{}", "byte-order mark"),
        ("", "empty"),
        ("{\"a\": 1,}", "comma"),
        ("{\"a\": 1} {}", "follows the end"),
        ("{\"a\": ", "close every"),
    ] {
        let diagnosis = diagnose_request_json(text);
        assert_eq!(diagnosis.len(), 1, "{text:?}: {diagnosis:?}");
        let fault = &diagnosis.faults()[0];
        assert_eq!(fault.code().as_str(), "invalid_json");
        assert!(fault.hint().contains(fragment), "{text:?}: {}", fault.hint());
    }
}

#[test]
fn a_diagnosis_lists_at_most_max_faults() {
    let fields: Vec<String> = (0..3000).map(|i| format!("\"unknown{i}\": {i}")).collect();
    let text = format!("{{{}}}", fields.join(","));
    let diagnosis = diagnose_request_json(&text);
    // `contract`, `current_replicas` and `now` are missing, then 3000 unknown fields.
    assert_eq!(diagnosis.len(), Diagnosis::MAX_FAULTS);
    assert_eq!(diagnosis.omitted(), 3003 - 1000);
    assert_eq!(diagnosis.first().map(|f| f.to_error()), evaluate_json(&text).err());
    assert!(diagnosis.to_text().ends_with("… and 2003 more faults\n"));
    assert!(diagnosis.to_json().ends_with(r#"],"omitted":2003}"#));
    assert_eq!(diagnosis.to_json(), serde_json::to_string(&diagnosis).unwrap_or_default());
}

/// Fifty thousand unreadable words: every one is a fault (listed up to the limit), and each is
/// judged by set lookups, not by a scan of the faults before it.
#[test]
fn a_long_list_of_bad_words_is_diagnosed() {
    let Some((_, request)) =
        requests().iter().find(|(id, _)| id == "reference/t01-mcp-target-tracks-deterministically")
    else {
        panic!("vector not found")
    };
    let words = vec!["\"qqqq\""; 50_000].join(",");
    let text = request.replacen("\"allowed_signals\": [", &format!("\"allowed_signals\": [{words},"), 1);
    assert_ne!(&text, request);
    let diagnosis = diagnose_request_json(&text);
    assert_eq!(diagnosis.first().map(|f| f.to_error()), evaluate_json(&text).err());
    assert_eq!(diagnosis.len(), Diagnosis::MAX_FAULTS);
    // And one more: the list is over its limit of 16.
    assert_eq!(diagnosis.omitted(), 50_000 + 1 - 1000);
    assert_eq!(diagnosis.faults()[999].path(), "contract.allowed_signals[999]");
}

/// One edit of a JSON value, at a node picked by `route`.
#[derive(Clone, Debug)]
enum Edit {
    Replace(Value),
    Remove,
    Rename,
    AddUnknown,
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        prop_oneof![Just(0_u64), Just(1), Just(10_000), Just(10_001), Just(u64::MAX)].prop_map(Value::from),
        Just(serde_json::json!(1.5)),
        Just(serde_json::json!(100.0)),
        "[a-z_]{0,12}".prop_map(Value::from),
        prop_oneof![
            Just("stateless"),
            Just("statless"),
            Just("provider_global"),
            Just("cpu_mili"),
            Just("Request-Rate"),
            Just("2026-08-19T12:00:00"),
            Just("2026-08-19T12:00:00Z"),
            Just("sha256:XYZ"),
            Just("unit:password"),
            Just("has space"),
        ]
        .prop_map(Value::from),
        Just(serde_json::json!({})),
        Just(serde_json::json!([])),
        Just(serde_json::json!(["cpu_milli", "cpu_milli"])),
    ]
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        4 => leaf().prop_map(Edit::Replace),
        2 => Just(Edit::Remove),
        1 => Just(Edit::Rename),
        1 => Just(Edit::AddUnknown),
    ]
}

/// Applies `edit` below `value`, walking into a child while `route` says so.
fn apply(value: &mut Value, route: &[u16], edit: &Edit) {
    let Some((&step, rest)) = route.split_first() else { return };
    let deeper = step % 5 != 0;
    match value {
        Value::Object(map) if !map.is_empty() => {
            let keys: Vec<String> = map.keys().cloned().collect();
            let key = &keys[usize::from(step) % keys.len()];
            let child_is_leaf = !matches!(map.get(key), Some(Value::Object(_) | Value::Array(_)));
            if deeper && !child_is_leaf && !rest.is_empty() {
                if let Some(child) = map.get_mut(key) {
                    apply(child, rest, edit);
                }
                return;
            }
            match edit {
                Edit::Replace(new) => {
                    map.insert(key.clone(), new.clone());
                }
                Edit::Remove => {
                    map.remove(key);
                }
                Edit::Rename => {
                    if let Some(old) = map.remove(key) {
                        let mut renamed = key.clone();
                        renamed.pop();
                        map.insert(renamed, old);
                    }
                }
                Edit::AddUnknown => {
                    map.insert(format!("{key}x"), Value::from(1));
                }
            }
        }
        Value::Array(items) if !items.is_empty() => {
            let index = usize::from(step) % items.len();
            match (deeper && !rest.is_empty(), edit) {
                (true, _) => apply(&mut items[index], rest, edit),
                (false, Edit::Replace(new)) => items[index] = new.clone(),
                (false, Edit::Remove) => {
                    items.remove(index);
                }
                (false, _) => {
                    let copy = items[index].clone();
                    items.push(copy);
                }
            }
        }
        _ => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// Vector requests with one to six random edits: missing, unknown, renamed and duplicated
    /// fields, wrong types, misspelt words, out-of-bounds numbers, bad refs, times and digests.
    #[test]
    fn first_fault_is_the_spec_error_on_edited_vectors(
        pick in any::<prop::sample::Index>(),
        edits in proptest::collection::vec((proptest::collection::vec(any::<u16>(), 1..6), edit()), 1..7),
    ) {
        let (_, text) = pick.get(requests());
        let mut request: Value = serde_json::from_str(text).unwrap_or_default();
        for (route, edit) in &edits {
            apply(&mut request, route, edit);
        }
        let text = request.to_string();
        if let Err(message) = check_all_forms(&text) {
            prop_assert!(false, "{message}\n{text}");
        }
    }

    /// Text of any kind: never a panic, and the same first fault.
    #[test]
    fn first_fault_is_the_spec_error_on_any_text(text in any::<String>()) {
        if let Err(message) = check_all_forms(&text) {
            prop_assert!(false, "{message}");
        }
    }
}
