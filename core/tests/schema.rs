//! The published JSON Schemas (`schema/`) are generated from the core's types; this test fails
//! when they drift. After an intended change: `SCALE_UNITS_BLESS=1 cargo test -p
//! scale-units-core --features schema --test schema`.
#![cfg(feature = "schema")]
#![allow(clippy::panic, clippy::indexing_slicing, reason = "test code: a failed expectation is a test failure")]
use std::path::Path;

use scale_units_core::{Decision, Derivation, EvaluationRequest, ScaleUnitContract};
use schemars::{JsonSchema, schema_for};

fn check<T: JsonSchema>(file: &str, title: &str) {
    let mut schema = schema_for!(T);
    schema.insert("$id".into(), format!("https://scale-units.dev/schema/1/{file}").into());
    schema.insert("title".into(), title.into());
    let text = serde_json::to_string_pretty(&schema).unwrap_or_default() + "\n";
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../schema").join(file);
    if std::env::var_os("SCALE_UNITS_BLESS").is_some() {
        std::fs::write(&path, &text).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
        return;
    }
    let current = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(current == text, "{} is out of date: rerun with SCALE_UNITS_BLESS=1", path.display());
}

#[test]
fn published_schemas_match_the_types() {
    check::<EvaluationRequest>("evaluation-request.schema.json", "Scale Units evaluation request (schema 1)");
    check::<ScaleUnitContract>("scale-unit-contract.schema.json", "Scale Units scale-unit contract (schema 1)");
    check::<Decision>("decision.schema.json", "Scale Units decision (schema 1)");
    check::<Derivation>("derivation.schema.json", "Scale Units derivation of a decision (schema 1)");
}

// ---- The schemas against the core: what the schema refuses, the core refuses; what the core
// accepts, the schema accepts; and every surface rule the schema states, the core enforces. ----

use jsonschema::Validator;
use scale_units_core::{
    CapacityAxis, ContinuityMode, QuotaScope, SignalKind, SurfaceKind, evaluate_json, validate_contract_json,
};
use serde_json::{Value, json};

fn root() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A validator for a published schema file (formats checked too: an editor may check them).
fn validator(file: &str) -> Validator {
    let path = root().join("schema").join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let schema: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
    jsonschema::options().should_validate_formats(true).build(&schema).unwrap_or_else(|e| panic!("{file}: {e}"))
}

fn contract_schema() -> Validator {
    validator("scale-unit-contract.schema.json")
}

/// The schema's complaints about `value`, one line each (for a failure message).
fn complaints(schema: &Validator, value: &Value) -> String {
    schema.iter_errors(value).map(|e| format!("{} at {}", e, e.instance_path())).collect::<Vec<_>>().join("; ")
}

fn vector_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())).flatten() {
        let path = entry.path();
        if path.is_dir() {
            vector_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "json") {
            out.push(path);
        }
    }
}

/// Every request text of the vectors and the examples, with its name.
fn request_texts() -> Vec<(String, String)> {
    let mut files = Vec::new();
    vector_files(&root().join("tests/vectors"), &mut files);
    files.sort();
    let mut texts: Vec<(String, String)> = files
        .iter()
        .map(|file| {
            let text = std::fs::read_to_string(file).unwrap_or_default();
            let vector = scale_units_core::conformance::Vector::parse(&text)
                .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            (vector.id, vector.request_text)
        })
        .collect();
    for surface in SurfaceKind::ALL {
        let dir = surface.as_str().replace('_', "-");
        let request = std::fs::read_to_string(root().join("examples").join(&dir).join("request.json"))
            .unwrap_or_else(|e| panic!("examples/{dir}: {e}"));
        texts.push((format!("examples/{dir}"), request));
    }
    texts
}

#[test]
fn the_schemas_accept_what_the_core_accepts_and_refuse_only_what_it_refuses() {
    let contracts = contract_schema();
    let requests = validator("evaluation-request.schema.json");
    let (mut accepted_contracts, mut accepted_requests, mut refused_by_both) = (0, 0, 0);
    for (id, text) in request_texts() {
        // Text that is not one JSON document is the reader's business, not the schema's.
        let Ok(request) = serde_json::from_str::<Value>(&text) else { continue };
        let core = evaluate_json(&text);
        let schema = requests.is_valid(&request);
        match (&core, schema) {
            (Ok(_), true) => accepted_requests += 1,
            (Ok(_), false) => {
                panic!("{id}: the core decides the request, the schema refuses it: {}", complaints(&requests, &request))
            }
            (Err(_), false) => refused_by_both += 1,
            (Err(_), true) => {}
        }
        if let Some(contract) = request.get("contract") {
            let core = validate_contract_json(&contract.to_string());
            match (core, contracts.is_valid(contract)) {
                (Ok(_), true) => accepted_contracts += 1,
                (Ok(_), false) => {
                    panic!(
                        "{id}: the core accepts the contract, the schema refuses it: {}",
                        complaints(&contracts, contract)
                    )
                }
                (Err(_), _) => {}
            }
        }
    }
    // The vectors decide hundreds of requests; a count far below means the loop judged nothing.
    assert!(accepted_requests >= 100 && accepted_contracts >= 100, "{accepted_requests} {accepted_contracts}");
    assert!(refused_by_both >= 50, "{refused_by_both}");
}

/// Each example's contract, by surface (`examples/<surface>/contract.json`, all valid).
fn example_contract(surface: SurfaceKind) -> Value {
    let dir = surface.as_str().replace('_', "-");
    let text = std::fs::read_to_string(root().join("examples").join(&dir).join("contract.json"))
        .unwrap_or_else(|e| panic!("examples/{dir}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("examples/{dir}: {e}"))
}

/// The verdicts of the schema and the core on one contract: (schema accepts, core accepts, the
/// core's error).
fn verdicts(schema: &Validator, contract: &Value) -> (bool, bool, String) {
    let core = validate_contract_json(&contract.to_string());
    (
        schema.is_valid(contract),
        core.is_ok(),
        core.err().map(|e| format!("{}: {}", e.code(), e.message())).unwrap_or_default(),
    )
}

/// Asserts that the schema and the core both refuse `contract` (a rule the schema states).
fn both_refuse(schema: &Validator, what: &str, contract: &Value) {
    let (by_schema, by_core, error) = verdicts(schema, contract);
    assert!(!by_core, "{what}: the core accepts it");
    assert!(!by_schema, "{what}: the core refuses it ({error}), the schema accepts it");
}

fn edited(contract: &Value, edit: impl FnOnce(&mut Value)) -> Value {
    let mut copy = contract.clone();
    edit(&mut copy);
    copy
}

fn array(value: &mut Value, field: &str) -> Vec<Value> {
    value[field].as_array().cloned().unwrap_or_default()
}

#[test]
fn each_surface_rule_the_schema_states_matches_the_core() {
    let schema = contract_schema();
    for &surface in SurfaceKind::ALL {
        let name = surface.as_str();
        let profile = surface.profile();
        let base = example_contract(surface);
        let (by_schema, by_core, error) = verdicts(&schema, &base);
        assert!(by_core && by_schema, "{name}: the example is valid ({error}): {}", complaints(&schema, &base));

        for axis in profile.required_capacity_axes {
            let missing = edited(&base, |c| {
                let axes = array(c, "required_capacity_axes").into_iter().filter(|a| a != axis.as_str()).collect();
                c["required_capacity_axes"] = Value::Array(axes);
            });
            both_refuse(&schema, &format!("{name} without the required axis {axis}"), &missing);
            let no_demand = edited(&base, |c| {
                let demands = array(c, "replica_demands").into_iter().filter(|d| d["axis"] != axis.as_str()).collect();
                c["replica_demands"] = Value::Array(demands);
            });
            both_refuse(&schema, &format!("{name} without a demand for {axis}"), &no_demand);
        }
        both_refuse(
            &schema,
            &format!("{name} allowing no signal"),
            &edited(&base, |c| c["allowed_signals"] = json!([])),
        );
        for signal in SignalKind::ALL.iter().filter(|s| !profile.allowed_signals.contains(s)) {
            let extra = edited(&base, |c| {
                let mut signals = array(c, "allowed_signals");
                signals.push(json!(signal.as_str()));
                c["allowed_signals"] = Value::Array(signals);
            });
            both_refuse(&schema, &format!("{name} allowing {signal}"), &extra);
            let target = edited(&base, |c| c["policy"]["target_signal"] = json!(signal.as_str()));
            both_refuse(&schema, &format!("{name} tracking {signal}"), &target);
        }
        for mode in ContinuityMode::ALL {
            // A continuity block consistent in itself, so that only the profile can refuse it.
            let continuity = match mode {
                ContinuityMode::Stateless => json!({"mode": "stateless", "block_scale_down_with_active": false}),
                ContinuityMode::SessionAffine => json!({"mode": "session_affine"}),
                ContinuityMode::Externalized => json!({"mode": "externalized", "external_store_ref": "redis:sessions"}),
            };
            let contract = edited(&base, |c| c["continuity"] = continuity);
            let (by_schema, by_core, error) = verdicts(&schema, &contract);
            let supported = profile.continuity_modes.contains(mode);
            assert_eq!(by_core, supported, "{name} in mode {mode}: {error}");
            assert_eq!(by_schema, supported, "{name} in mode {mode}: {}", complaints(&schema, &contract));
        }
        if profile.engine_authority_axes.is_empty() {
            let extra = edited(&base, |c| c["engine_authority_axes"] = json!(["cpu_milli"]));
            both_refuse(&schema, &format!("{name} with an engine authority axis"), &extra);
        } else {
            both_refuse(
                &schema,
                &format!("{name} without engine_authority_axes"),
                &edited(&base, |c| {
                    c.as_object_mut().map(|o| o.remove("engine_authority_axes"));
                }),
            );
            for axis in profile.engine_authority_axes {
                let fewer = edited(&base, |c| {
                    let axes = array(c, "engine_authority_axes").into_iter().filter(|a| a != axis.as_str()).collect();
                    c["engine_authority_axes"] = Value::Array(axes);
                });
                both_refuse(&schema, &format!("{name} without the engine axis {axis}"), &fewer);
            }
            let more = edited(&base, |c| {
                let mut axes = array(c, "engine_authority_axes");
                axes.push(json!("cpu_milli"));
                c["engine_authority_axes"] = Value::Array(axes);
            });
            both_refuse(&schema, &format!("{name} with cpu_milli as an engine axis"), &more);
        }
        let leased = json!({"partitioned": true, "partitions_per_replica": 2, "lease_required": true, "lease_ttl_s": 30, "fencing_required": true});
        if profile.partition_and_fenced_lease {
            both_refuse(
                &schema,
                &format!("{name} without partition_lease"),
                &edited(&base, |c| {
                    c.as_object_mut().map(|o| o.remove("partition_lease"));
                }),
            );
            let unpartitioned = edited(&base, |c| c["partition_lease"]["partitioned"] = json!(false));
            both_refuse(&schema, &format!("{name} not partitioned"), &unpartitioned);
            let unleased = edited(&base, |c| {
                c["partition_lease"] = json!({"partitioned": true, "partitions_per_replica": 1});
            });
            both_refuse(&schema, &format!("{name} without a lease"), &unleased);
        } else {
            // Partitions and a lease are allowed where the profile does not need them.
            let contract = edited(&base, |c| c["partition_lease"] = leased.clone());
            let (by_schema, by_core, error) = verdicts(&schema, &contract);
            assert!(by_core && by_schema, "{name} with a lease: {error} {}", complaints(&schema, &contract));
        }
        if profile.provider_quota_axes.is_empty() {
            // Not required, and not refused either.
            let contract = edited(&base, |c| {
                c["quotas"] = json!([{"quota_ref": "quota:x", "axis": "cpu_milli", "scope": "provider_global", "per_replica": 1}]);
            });
            let (by_schema, by_core, error) = verdicts(&schema, &contract);
            assert!(by_core && by_schema, "{name} with a provider quota: {error} {}", complaints(&schema, &contract));
        } else {
            both_refuse(&schema, &format!("{name} without quotas"), &edited(&base, |c| c["quotas"] = json!([])));
            let tenant = edited(&base, |c| {
                let quotas = array(c, "quotas")
                    .into_iter()
                    .map(|mut q| {
                        if q["scope"] == QuotaScope::ProviderGlobal.as_str() {
                            q["scope"] = json!("tenant");
                        }
                        q
                    })
                    .collect();
                c["quotas"] = Value::Array(quotas);
            });
            both_refuse(&schema, &format!("{name} without a provider-global quota"), &tenant);
            for axis in CapacityAxis::ALL.iter().filter(|a| !profile.provider_quota_axes.contains(a)) {
                let wrong = edited(&base, |c| {
                    let quotas = array(c, "quotas")
                        .into_iter()
                        .map(|mut q| {
                            if q["scope"] == QuotaScope::ProviderGlobal.as_str() {
                                q["axis"] = json!(axis.as_str());
                            }
                            q
                        })
                        .collect();
                    c["quotas"] = Value::Array(quotas);
                });
                both_refuse(&schema, &format!("{name} with its provider quota on {axis}"), &wrong);
            }
        }
        // Another surface's contract under this surface's name: refused by both or by neither
        // (every check such a swap can break is a profile check the schema states).
        for &other in SurfaceKind::ALL {
            let swapped = edited(&example_contract(other), |c| c["surface"] = json!(name));
            let (by_schema, by_core, error) = verdicts(&schema, &swapped);
            assert_eq!(
                by_schema,
                by_core,
                "the {other} example as {name}: core {error:?}, schema {}",
                complaints(&schema, &swapped)
            );
        }
    }
}

#[test]
fn the_rules_of_the_parts_match_the_core() {
    let schema = contract_schema();
    let base = example_contract(SurfaceKind::DispatchWorker);
    let stateless = base["continuity"]["mode"] == "stateless";
    assert!(stateless, "the dispatch_worker example is stateless");
    let refused: Vec<(&str, Value)> = vec![
        (
            "stateless without block_scale_down_with_active (its default, true, is refused)",
            edited(&base, |c| {
                c["continuity"].as_object_mut().map(|o| o.remove("block_scale_down_with_active"));
            }),
        ),
        (
            "stateless blocking on sessions",
            edited(&base, |c| c["continuity"]["block_scale_down_with_active"] = json!(true)),
        ),
        ("stateless with a store", edited(&base, |c| c["continuity"]["external_store_ref"] = json!("redis:s"))),
        ("externalized without a store", edited(&base, |c| c["continuity"] = json!({"mode": "externalized"}))),
        (
            "externalized with a null store",
            edited(&base, |c| c["continuity"] = json!({"mode": "externalized", "external_store_ref": null})),
        ),
        ("a duplicate signal", edited(&base, |c| c["allowed_signals"] = json!(["queue_depth", "queue_depth"]))),
        (
            "a duplicate axis",
            edited(&base, |c| {
                let mut axes = array(c, "required_capacity_axes");
                axes.push(json!("cpu_milli"));
                c["required_capacity_axes"] = Value::Array(axes);
            }),
        ),
        ("scale to zero from a floor of 1", edited(&base, |c| c["policy"]["allow_scale_to_zero"] = json!(true))),
        (
            "partitioned with no partitions",
            edited(&base, |c| c["partition_lease"]["partitions_per_replica"] = json!(0)),
        ),
        ("a lease without a TTL", edited(&base, |c| c["partition_lease"]["lease_ttl_s"] = json!(0))),
        (
            "fencing without a lease",
            edited(&base, |c| {
                c["partition_lease"]["lease_required"] = json!(false);
            }),
        ),
        (
            "a multiplied provider-global quota",
            edited(&base, |c| {
                c["quotas"] = json!([{"quota_ref": "q:p", "axis": "cpu_milli", "scope": "provider_global", "per_replica": 1, "multiplicative": true}]);
            }),
        ),
        (
            "a provider-global quota without a demand",
            edited(&base, |c| {
                c["quotas"] =
                    json!([{"quota_ref": "q:p", "axis": "cpu_milli", "scope": "provider_global", "per_replica": 0}]);
            }),
        ),
    ];
    for (what, contract) in &refused {
        both_refuse(&schema, what, contract);
    }
    let accepted = [
        edited(&base, |c| {
            c["policy"]["allow_scale_to_zero"] = json!(true);
            c["policy"]["min_replicas"] = json!(0);
        }),
        edited(&base, |c| c["continuity"] = json!({"mode": "externalized", "external_store_ref": "redis:s"})),
        edited(&base, |c| {
            c["quotas"] = json!([{"quota_ref": "q:t", "axis": "cpu_milli", "scope": "tenant", "per_replica": 0, "multiplicative": true}]);
        }),
    ];
    for contract in &accepted {
        let (by_schema, by_core, error) = verdicts(&schema, contract);
        assert!(by_core && by_schema, "{contract}: {error} {}", complaints(&schema, contract));
    }
}

/// Every value worth trying at a leaf: each word of every vocabulary, small numbers, both booleans.
fn replacements() -> Vec<Value> {
    let mut values: Vec<Value> = Vec::new();
    values.extend(SurfaceKind::ALL.iter().map(|w| json!(w.as_str())));
    values.extend(SignalKind::ALL.iter().map(|w| json!(w.as_str())));
    values.extend(CapacityAxis::ALL.iter().map(|w| json!(w.as_str())));
    values.extend(ContinuityMode::ALL.iter().map(|w| json!(w.as_str())));
    values.extend(QuotaScope::ALL.iter().map(|w| json!(w.as_str())));
    values.extend([json!(0), json!(1), json!(2), json!(true), json!(false), Value::Null]);
    values
}

#[derive(Clone)]
enum PathPart {
    Key(String),
    Index(usize),
}

enum Edit {
    Replace,
    Remove(PathPart),
    Repeat(usize),
}

/// Applies `f` to the node of `value` at `path`.
fn edit_at(value: &mut Value, path: &[PathPart], f: impl FnOnce(&mut Value)) {
    let mut node = value;
    for part in path {
        node = match part {
            PathPart::Key(key) => &mut node[key.as_str()],
            PathPart::Index(i) => &mut node[*i],
        };
    }
    f(node);
}

/// Every contract one edit away from `contract`: a leaf replaced (by every value of
/// [`replacements`]), a list entry removed or repeated, a field removed.
fn one_edit_away(contract: &Value) -> Vec<Value> {
    fn walk(value: &Value, at: &mut Vec<PathPart>, out: &mut Vec<(Vec<PathPart>, Edit)>) {
        match value {
            Value::Object(map) => {
                for (key, child) in map {
                    out.push((at.clone(), Edit::Remove(PathPart::Key(key.clone()))));
                    at.push(PathPart::Key(key.clone()));
                    walk(child, at, out);
                    at.pop();
                }
            }
            Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    out.push((at.clone(), Edit::Remove(PathPart::Index(i))));
                    out.push((at.clone(), Edit::Repeat(i)));
                    at.push(PathPart::Index(i));
                    walk(child, at, out);
                    at.pop();
                }
            }
            _ => out.push((at.clone(), Edit::Replace)),
        }
    }
    let mut edits = Vec::new();
    walk(contract, &mut Vec::new(), &mut edits);
    let mut out = Vec::new();
    for (path, edit) in edits {
        match edit {
            Edit::Replace => {
                for value in replacements() {
                    let mut copy = contract.clone();
                    edit_at(&mut copy, &path, |n| *n = value);
                    out.push(copy);
                }
            }
            Edit::Remove(part) => {
                let mut copy = contract.clone();
                edit_at(&mut copy, &path, |n| match part {
                    PathPart::Key(key) => drop(n.as_object_mut().map(|o| o.remove(&key))),
                    PathPart::Index(i) => drop(n.as_array_mut().map(|a| a.remove(i))),
                });
                out.push(copy);
            }
            Edit::Repeat(i) => {
                let mut copy = contract.clone();
                edit_at(&mut copy, &path, |n| {
                    if let Some(items) = n.as_array_mut() {
                        let item = items[i].clone();
                        items.push(item);
                    }
                });
                out.push(copy);
            }
        }
    }
    out
}

/// The schema is never stricter than the core: over every contract one edit away from each
/// example, what the core accepts the schema accepts. (The schema may accept what the core
/// refuses: it cannot state every rule.)
#[test]
fn the_schema_is_never_stricter_than_the_core_one_edit_away_from_each_example() {
    let schema = contract_schema();
    let (mut judged, mut refused_by_both, mut refused_by_core_only) = (0u32, 0u32, 0u32);
    for &surface in SurfaceKind::ALL {
        for contract in one_edit_away(&example_contract(surface)) {
            let (by_schema, by_core, _) = verdicts(&schema, &contract);
            assert!(
                by_schema || !by_core,
                "{surface}: the core accepts {contract}, the schema refuses it: {}",
                complaints(&schema, &contract)
            );
            judged += 1;
            match (by_schema, by_core) {
                (false, false) => refused_by_both += 1,
                (true, false) => refused_by_core_only += 1,
                _ => {}
            }
        }
    }
    // What an editor catches: of the single edits the core refuses, the schema refuses 99 %
    // (measured: 13 705 of 13 806; the rest break rules a schema cannot state, such as
    // `min_replicas <= max_replicas` or unique demand axes).
    assert!(judged > 10_000, "{judged}");
    assert!(
        refused_by_both > 50 * refused_by_core_only,
        "the schema flags {refused_by_both} of {} refused edits",
        refused_by_both + refused_by_core_only
    );
}
