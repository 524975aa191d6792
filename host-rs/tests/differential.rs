//! The component and the native core agree byte for byte: on every vector, and on generated
//! requests (mutations of the examples and vectors), through the JSON and the typed entry points,
//! and on contract validation.
#![allow(
    clippy::panic,
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "test code: a failed expectation is a test failure"
)]

mod common;

use std::path::{Path, PathBuf};

use common::policy;
use scale_units_core::conformance::Vector;
use serde_json::{Value, json};

/// What an evaluation produced, in a form that compares every byte: the decision JSON, or the
/// error's code, message and path.
type Outcome = Result<String, (String, String, String)>;

fn native_json(request: &str) -> Outcome {
    scale_units_core::evaluate_json(request).map_err(|e| (e.code().to_string(), e.message().into(), e.path().into()))
}

fn component_json(request: &str) -> Outcome {
    policy()
        .evaluate_json(request)
        .expect("no host error")
        .map(|evaluated| evaluated.decision)
        .map_err(|e| (e.code().to_string(), e.message().into(), e.path().into()))
}

/// Compares both entry points; returns whether the request was decided.
fn assert_same(request: &str, label: &str) -> bool {
    let native = native_json(request);
    let component = component_json(request);
    assert_eq!(native, component, "evaluate-json differs for {label}:\n{request}");
    // The typed path, for every request the core can parse into its types.
    if let Ok(typed) = scale_units_core::parse_request(request) {
        let native = scale_units_core::evaluate(&typed)
            .map_err(|e| (e.code().to_string(), e.message().to_owned(), e.path().to_owned()));
        let component = policy()
            .evaluate(&typed)
            .expect("no host error")
            .map(|evaluated| evaluated.decision)
            .map_err(|e| (e.code().to_string(), e.message().to_owned(), e.path().to_owned()));
        assert_eq!(native, component, "evaluate (typed) differs for {label}:\n{request}");
        if let Ok(decision) = &component {
            assert_eq!(Ok(scale_units_core::decision_to_json(decision)), native_json(request), "{label}");
        }
    }
    // The contract on its own, when there is one to validate.
    if let Some(contract) =
        serde_json::from_str::<Value>(request).ok().and_then(|value| value.get("contract").map(Value::to_string))
    {
        let native = scale_units_core::validate_contract_json(&contract)
            .map_err(|e| (e.code().to_string(), e.message().to_owned(), e.path().to_owned()));
        let component = policy()
            .validate_contract_json(&contract)
            .expect("no host error")
            .map_err(|e| (e.code().to_string(), e.message().to_owned(), e.path().to_owned()));
        assert_eq!(native, component, "validate-contract-json differs for {label}:\n{contract}");
    }
    native.is_ok()
}

fn vector_files() -> Vec<PathBuf> {
    scale_units_host::vector_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/vectors"))
        .expect("the vector folder")
}

fn vectors() -> Vec<Vector> {
    vector_files()
        .iter()
        .filter_map(|file| Vector::parse(&std::fs::read_to_string(file).expect("readable")).ok())
        .collect()
}

#[test]
fn every_vector_gives_the_same_bytes() {
    let vectors = vectors();
    assert!(vectors.len() >= 12, "found {} vectors", vectors.len());
    for vector in &vectors {
        assert_same(&vector.request_text, &vector.id);
    }
}

/// xorshift64*: deterministic, so a failure reproduces from its index.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % u64::try_from(n.max(1)).expect("fits")).expect("fits")
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

const WORDS: &[&str] = &[
    "scale_up",
    "in_flight",
    "queue_depth",
    "request_rate",
    "cpu_milli",
    "memory_mib",
    "session_slots",
    "provider_global",
    "tenant",
    "unit",
    "stateless",
    "externalized",
    "session_affine",
    "api_gateway",
    "mcp_gateway",
    "rlm_pool",
    "gpu_utilization_ppm",
    "error_rate_ppm",
    "upstream_rate",
    "fsync_iops",
    "engine_bytes",
    "bogus",
    "",
    "metrics:x",
    "token=abc",
    "UPPER",
    "1",
];

const TIMES: &[&str] = &[
    "2026-08-19T12:00:00Z",
    "2026-08-19T11:59:00Z",
    "2026-08-19T12:05:00Z",
    "2026-08-19T12:00:00.000001Z",
    "2026-08-19T13:00:00+01:00",
    "2026-08-19T12:00:00",
    "1999-12-31T23:59:59Z",
    "2300-12-31T23:59:59Z",
    "2026-02-30T00:00:00Z",
    "2026-08-19T11:00:00-01:00",
    "not a time",
    "2026-08-19t12:00:00z",
];

fn integer(rng: &mut Rng) -> Value {
    let edges: &[i128] = &[
        0,
        1,
        2,
        3,
        5,
        7,
        10,
        50,
        100,
        1000,
        9_999,
        10_000,
        10_001,
        86_400,
        86_401,
        1_000_000,
        1_000_001,
        2_147_483_647,
        1_000_000_000_000,
        1_000_000_000_000_000,
        1_000_000_000_000_001,
        -1,
        18_446_744_073_709_551_615,
    ];
    let value = if rng.chance(60) { *rng.pick(edges) } else { i128::from(rng.below(500) as u16) };
    serde_json::from_str(&value.to_string()).unwrap_or(json!(0))
}

/// One random change somewhere in `value`.
fn mutate(value: &mut Value, rng: &mut Rng) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            let keys: Vec<String> = map.keys().cloned().collect();
            let key = rng.pick(&keys).clone();
            match rng.below(10) {
                0 => {
                    map.remove(&key);
                }
                1 => {
                    map.insert(key, Value::Null);
                }
                2 => {
                    map.insert(format!("{key}_extra"), json!(1));
                }
                _ => mutate(map.get_mut(&key).expect("present"), rng),
            }
        }
        Value::Array(items) if !items.is_empty() => match rng.below(6) {
            0 => {
                let index = rng.below(items.len());
                items.remove(index);
            }
            1 => {
                let index = rng.below(items.len());
                let copy = items[index].clone();
                items.push(copy);
            }
            2 => items.reverse(),
            _ => {
                let index = rng.below(items.len());
                mutate(&mut items[index], rng);
            }
        },
        Value::Number(_) => {
            *value = match rng.below(12) {
                0 => json!(1.0),
                1 => json!(true),
                2 => json!("7"),
                _ => integer(rng),
            };
        }
        Value::String(text) => {
            *value = match rng.below(8) {
                0 | 1 => json!(*rng.pick(TIMES)),
                2 => json!(format!("{text}x")),
                3 => json!(text.to_uppercase()),
                4 => json!(7),
                _ => json!(*rng.pick(WORDS)),
            };
        }
        Value::Bool(flag) => {
            *value = if rng.chance(85) { json!(!*flag) } else { json!(0) };
        }
        _ => {
            *value = integer(rng);
        }
    }
}

/// A few targeted, mostly valid changes that move a decision around: the signal value, the
/// replica count, the clock and the observed capacities.
fn nudge(request: &mut Value, rng: &mut Rng) {
    if let Some(signal) = request.get_mut("signal").and_then(Value::as_object_mut) {
        signal.insert("value".into(), json!(rng.below(5000)));
    }
    if rng.chance(50) {
        request["current_replicas"] = json!(rng.below(14));
    }
    if rng.chance(30) {
        request["now"] = json!(*rng.pick(TIMES));
    }
    if rng.chance(30) {
        request["last_action_at"] = json!(*rng.pick(TIMES));
    }
    if let Some(capacities) = request.get_mut("capacities").and_then(Value::as_array_mut)
        && !capacities.is_empty()
    {
        let index = rng.below(capacities.len());
        let reserved = rng.below(20_000);
        capacities[index]["allocatable"] = json!(reserved + rng.below(20_000));
        capacities[index]["reserved"] = json!(reserved);
        capacities[index]["used"] = json!(rng.below(reserved + 1));
    }
}

/// Text-level damage: what JSON parsing must catch (identically) inside and outside the sandbox.
fn damage(text: &str, rng: &mut Rng) -> String {
    match rng.below(5) {
        0 => text.get(..rng.below(text.len())).unwrap_or(text).to_owned(),
        1 => format!("\u{feff}{text}"),
        2 => text.replacen("\"now\"", "\"now\":\"2026-08-19T12:00:00Z\",\"now\"", 1),
        3 => text.replacen(':', ": NaN, \"x\":", 1),
        _ => format!("{text} {{}}"),
    }
}

#[test]
fn ten_thousand_generated_requests_give_the_same_bytes() {
    let mut bases: Vec<Value> = vectors()
        .iter()
        .filter_map(|vector| serde_json::from_str::<Value>(&vector.request_text).ok())
        .filter(Value::is_object)
        .collect();
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    for entry in std::fs::read_dir(&examples).expect("examples") {
        let dir = entry.expect("entry").path();
        // `traces/` holds CSV traces for `simulate`, not an example unit.
        if dir.is_dir() && !dir.ends_with("traces") {
            let text = std::fs::read_to_string(dir.join("request.json")).expect("request.json");
            bases.push(serde_json::from_str(&text).expect("JSON"));
        }
    }
    assert!(!bases.is_empty());

    let mut rng = Rng(0x5ca1_e5ee_d000_0001);
    let (mut decided, mut refused) = (0usize, 0usize);
    let total = 10_000;
    for index in 0..total {
        let mut request = rng.pick(&bases).clone();
        match rng.below(10) {
            // Valid-looking requests whose decision moves around.
            0..=4 => nudge(&mut request, &mut rng),
            // Structural and scalar mutations, one to four of them.
            5..=8 => {
                for _ in 0..=rng.below(4) {
                    mutate(&mut request, &mut rng);
                }
            }
            _ => {}
        }
        let mut text = serde_json::to_string(&request).expect("serializes");
        if rng.chance(5) {
            text = damage(&text, &mut rng);
        }
        if assert_same(&text, &format!("generated request #{index}")) {
            decided += 1;
        } else {
            refused += 1;
        }
    }
    println!("{total} generated requests: {decided} decided, {refused} refused, all identical");
    assert!(decided > total / 5, "too few decisions ({decided}) to exercise the algorithm");
    assert!(refused > total / 5, "too few errors ({refused}) to exercise validation");
}
