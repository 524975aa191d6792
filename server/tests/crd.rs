//! The ScaleUnit CRD (`server/src/kubernetes/crd.rs`): the committed YAML files are what the
//! generator writes; its schema is structural; and, read as the API server reads it (the schema
//! as JSON Schema with unknown fields refused, as `kubectl`'s strict field validation does; each
//! CEL rule evaluated where it sits; list keys unique), it accepts every contract the core
//! accepts (examples, vectors, deploy/) and every sources file the service accepts, and each
//! rule it adds refuses a contract that breaks it — one the core refuses too.
//!
//! After an intended change of the types: `SCALE_UNITS_BLESS=1 cargo test -p
//! scale-units-server --test crd` rewrites the YAML files.
#![allow(
    clippy::panic,
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "test code: a failed expectation is a test failure"
)]

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResourceExt as _;
use scale_units_core::validate_contract_json;
use scale_units_server::kubernetes::crd::{open_api_schema, scale_unit_crd, scale_unit_crd_yaml};
use scale_units_server::kubernetes::resource::{
    DecisionStatus, EvidenceStatus, Mode, ScaleUnit, ScaleUnitStatus, TargetStatus,
};
use serde_json::{Value, json};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The files the generator writes (the kustomization's, the Helm chart's `crds/`).
const FILES: [&str; 2] =
    ["deploy/kubernetes/scaleunit-crd.yaml", "deploy/helm/scale-units/crds/scaleunits.scale-units.dev.yaml"];

#[test]
fn the_committed_crd_files_are_what_the_generator_writes() {
    let text = scale_unit_crd_yaml().unwrap();
    for file in FILES {
        let path = root().join(file);
        if std::env::var_os("SCALE_UNITS_BLESS").is_some() {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &text).unwrap_or_else(|e| panic!("writing {file}: {e}"));
            continue;
        }
        let current = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(current == text, "{file} is out of date: rerun with SCALE_UNITS_BLESS=1");
    }
    // The YAML reads back as the same CustomResourceDefinition.
    let read: CustomResourceDefinition = serde_saphyr::from_str(&text).unwrap();
    assert_eq!(read, scale_unit_crd());
}

#[test]
fn names_scope_columns_and_subresources_come_from_the_resource() {
    let crd = scale_unit_crd();
    let derived = ScaleUnit::crd();
    assert_eq!(crd.metadata.name.as_deref(), Some("scaleunits.scale-units.dev"));
    assert_eq!(crd.spec.group, "scale-units.dev");
    assert_eq!(crd.spec.scope, "Namespaced");
    assert_eq!(crd.spec.names, derived.spec.names);
    assert_eq!(crd.spec.names.short_names.as_deref(), Some(&["su".to_owned()][..]));
    assert_eq!(crd.spec.names.categories.as_deref(), Some(&["scale-units".to_owned()][..]));
    assert_eq!(crd.spec.versions.len(), 1);
    let (version, derived) = (&crd.spec.versions[0], &derived.spec.versions[0]);
    assert_eq!((version.name.as_str(), version.served, version.storage), ("v1alpha1", true, true));
    assert_eq!(version.subresources, derived.subresources);
    assert!(version.subresources.as_ref().unwrap().status.is_some(), "a status subresource");
    assert_eq!(version.additional_printer_columns, derived.additional_printer_columns);
    let columns: Vec<&str> =
        version.additional_printer_columns.iter().flatten().map(|column| column.name.as_str()).collect();
    assert_eq!(columns, ["Target", "Mode", "Decision", "Current", "Desired", "Reason", "Age"]);
    // Each column's path is one the schema declares.
    let schema = schema();
    for column in version.additional_printer_columns.iter().flatten() {
        let path = column.json_path.trim_start_matches('.');
        if path.starts_with("metadata.") {
            continue;
        }
        let mut node = &schema;
        for step in path.split('.') {
            node = node.properties.as_ref().and_then(|p| p.get(step)).unwrap_or_else(|| panic!("{path}"));
        }
        let expected = if column.type_ == "integer" { "integer" } else { "string" };
        assert_eq!(node.type_.as_deref(), Some(expected), "{path}");
    }
}

fn schema() -> JSONSchemaProps {
    scale_unit_crd().spec.versions[0].schema.as_ref().unwrap().open_api_v3_schema.clone().unwrap()
}

fn child<'s>(schema: &'s JSONSchemaProps, path: &str) -> &'s JSONSchemaProps {
    path.split('.').fold(schema, |node, step| {
        node.properties.as_ref().and_then(|p| p.get(step)).unwrap_or_else(|| panic!("no {step} in {path}"))
    })
}

#[test]
fn mode_is_an_enum_of_the_resources_modes_defaulting_to_enforce() {
    let schema = schema();
    let mode = child(&schema, "spec.mode");
    let words: Vec<Value> = mode.enum_.iter().flatten().map(|word| word.0.clone()).collect();
    let serialized: Vec<Value> =
        [Mode::Monitor, Mode::Warn, Mode::Enforce].iter().map(|mode| serde_json::to_value(mode).unwrap()).collect();
    assert_eq!(words, serialized);
    assert_eq!(mode.default.as_ref().map(|d| d.0.clone()), Some(json!("Enforce")));
    assert_eq!(serde_json::to_value(Mode::default()).unwrap(), json!("Enforce"));
    assert_eq!(
        child(&schema, "spec").required.as_deref(),
        Some(&["scaleTargetRef".to_owned(), "contract".to_owned()][..])
    );
}

// ---- Structural: what the API server demands of a CRD's schema. ----

/// Every violation of the structural rules (and of what the API server refuses besides) below
/// `node`, with its path.
fn structural_faults(node: &JSONSchemaProps, path: &str, inside_list: bool, faults: &mut Vec<String>) {
    let preserved = node.x_kubernetes_preserve_unknown_fields == Some(true);
    if node.type_.is_none() && !preserved && node.x_kubernetes_int_or_string != Some(true) {
        faults.push(format!("{path}: no type"));
    }
    if node.properties.is_some() && node.additional_properties.is_some() {
        faults.push(format!("{path}: properties and additionalProperties"));
    }
    if node.ref_path.is_some() || node.definitions.is_some() || node.schema.is_some() || node.id.is_some() {
        faults.push(format!("{path}: $ref, definitions, $schema or id"));
    }
    if node.unique_items == Some(true) {
        faults.push(format!("{path}: uniqueItems (the API server refuses it)"));
    }
    if node.default.is_some() && path != ".spec.mode" {
        faults.push(format!("{path}: a default"));
    }
    if node.x_kubernetes_validations.is_some() && inside_list {
        // A rule under a list is costed once per item: the list must be bounded.
        faults.push(format!("{path}: CEL under an unbounded list"));
    }
    for rule in node.x_kubernetes_validations.iter().flatten() {
        if rule.message.as_deref().is_none_or(|m| m.contains('\n') || m.is_empty()) {
            faults.push(format!("{path}: rule {} without a one-line message", rule.rule));
        }
    }
    for junction in
        [&node.all_of, &node.any_of, &node.one_of].into_iter().flatten().flatten().chain(node.not.as_deref())
    {
        if junction.type_.is_some()
            || junction.description.is_some()
            || junction.default.is_some()
            || junction.nullable.is_some()
            || junction.additional_properties.is_some()
        {
            faults.push(format!("{path}: type, description, default, nullable or additionalProperties in a junction"));
        }
        for name in junction.required.iter().flatten().chain(junction.properties.iter().flat_map(|p| p.keys())) {
            if !node.properties.as_ref().is_some_and(|p| p.contains_key(name)) {
                faults.push(format!("{path}: a junction names {name}, which the node does not declare"));
            }
        }
    }
    match node.x_kubernetes_list_type.as_deref() {
        None | Some("atomic") => {}
        Some("set") => {
            let items = items_of(node).unwrap();
            if !matches!(items.type_.as_deref(), Some("string" | "integer" | "number" | "boolean")) {
                faults.push(format!("{path}: a set of non-scalars"));
            }
        }
        Some("map") => {
            let items = items_of(node).unwrap();
            for key in node.x_kubernetes_list_map_keys.iter().flatten() {
                if !items.required.iter().flatten().any(|name| name == key) {
                    faults.push(format!("{path}: map key {key} not required in the items"));
                }
            }
        }
        Some(other) => faults.push(format!("{path}: list type {other}")),
    }
    for (name, property) in node.properties.iter().flatten() {
        structural_faults(property, &format!("{path}.{name}"), inside_list, faults);
    }
    if let Some(JSONSchemaPropsOrBool::Schema(values)) = &node.additional_properties {
        structural_faults(values, &format!("{path}.*"), true, faults);
    }
    if let Some(items) = items_of(node) {
        structural_faults(items, &format!("{path}[]"), inside_list || node.max_items.is_none(), faults);
    }
}

fn items_of(node: &JSONSchemaProps) -> Option<&JSONSchemaProps> {
    match &node.items {
        Some(JSONSchemaPropsOrArray::Schema(items)) => Some(items),
        _ => None,
    }
}

#[test]
fn the_schema_is_structural() {
    let schema = schema();
    let mut faults = Vec::new();
    structural_faults(&schema, "", false, &mut faults);
    let faults: Vec<String> = faults.into_iter().map(|f| f.trim_start_matches('.').to_owned()).collect();
    assert!(faults.is_empty(), "{faults:#?}");
    assert_eq!(schema.type_.as_deref(), Some("object"));
    // Unknown fields are pruned, not kept, everywhere but where the conversion fell back.
    let preserved = preserved_paths(&schema, "");
    assert!(preserved.is_empty(), "the contract and sources schemas fall back nowhere today: {preserved:?}");
}

fn preserved_paths(node: &JSONSchemaProps, path: &str) -> Vec<String> {
    let mut found = Vec::new();
    if node.x_kubernetes_preserve_unknown_fields == Some(true) {
        found.push(path.to_owned());
    }
    for (name, property) in node.properties.iter().flatten() {
        found.extend(preserved_paths(property, &format!("{path}.{name}")));
    }
    if let Some(items) = items_of(node) {
        found.extend(preserved_paths(items, &format!("{path}[]")));
    }
    if let Some(JSONSchemaPropsOrBool::Schema(values)) = &node.additional_properties {
        found.extend(preserved_paths(values, &format!("{path}.*")));
    }
    found
}

// ---- The schema read as the API server reads it. ----

/// The OpenAPI schema as JSON Schema (draft 2020-12), as the API server applies it: `nullable`
/// admits null, unknown fields are refused (kubectl's strict field validation) unless preserved,
/// a `set` has unique items. CEL rules and list-map keys are checked apart ([`ApiServer`]).
fn json_schema(node: &JSONSchemaProps) -> Value {
    let mut out = serde_json::Map::new();
    let nullable = node.nullable == Some(true);
    if let Some(type_) = &node.type_ {
        out.insert("type".into(), if nullable { json!([type_, "null"]) } else { json!(type_) });
    }
    if let Some(properties) = &node.properties {
        out.insert(
            "properties".into(),
            Value::Object(properties.iter().map(|(name, p)| (name.clone(), json_schema(p))).collect()),
        );
        if node.x_kubernetes_preserve_unknown_fields != Some(true) {
            out.insert("additionalProperties".into(), json!(false));
        }
    }
    if let Some(JSONSchemaPropsOrBool::Schema(values)) = &node.additional_properties {
        out.insert("additionalProperties".into(), json_schema(values));
    }
    if let Some(required) = &node.required {
        out.insert("required".into(), json!(required));
    }
    if let Some(words) = &node.enum_ {
        let mut words: Vec<Value> = words.iter().map(|word| word.0.clone()).collect();
        if nullable {
            words.push(Value::Null);
        }
        out.insert("enum".into(), Value::Array(words));
    }
    let mut number = |key: &str, value: Option<f64>| {
        if let Some(value) = value {
            let value = if value.fract() == 0.0 { json!(value as i64) } else { json!(value) };
            out.insert(key.into(), value);
        }
    };
    let exclusive = |flag: Option<bool>| flag == Some(true);
    number(if exclusive(node.exclusive_minimum) { "exclusiveMinimum" } else { "minimum" }, node.minimum);
    number(if exclusive(node.exclusive_maximum) { "exclusiveMaximum" } else { "maximum" }, node.maximum);
    number("multipleOf", node.multiple_of);
    for (key, value) in [
        ("minLength", node.min_length),
        ("maxLength", node.max_length),
        ("minItems", node.min_items),
        ("maxItems", node.max_items),
    ] {
        if let Some(value) = value {
            out.insert(key.into(), json!(value));
        }
    }
    if let Some(pattern) = &node.pattern {
        out.insert("pattern".into(), json!(pattern));
    }
    if let Some(items) = items_of(node) {
        out.insert("items".into(), json_schema(items));
    }
    if node.x_kubernetes_list_type.as_deref() == Some("set") {
        out.insert("uniqueItems".into(), json!(true));
    }
    for (key, list) in [("allOf", &node.all_of), ("anyOf", &node.any_of), ("oneOf", &node.one_of)] {
        if let Some(list) = list {
            out.insert(key.into(), Value::Array(list.iter().map(json_schema).collect()));
        }
    }
    Value::Object(out)
}

/// A JSON value as CEL sees a field of a structural schema (integers are `int`).
fn cel_value(value: &Value) -> cel::Value {
    match value {
        Value::Null => cel::Value::Null,
        Value::Bool(flag) => cel::Value::Bool(*flag),
        Value::Number(n) => match n.as_i64() {
            Some(int) => cel::Value::Int(int),
            None => cel::Value::Float(n.as_f64().unwrap()),
        },
        Value::String(text) => cel::Value::String(Arc::new(text.clone())),
        Value::Array(items) => cel::Value::List(Arc::new(items.iter().map(cel_value).collect())),
        // The API server's CEL sees a null field as absent (`has` is false).
        Value::Object(fields) => {
            let map: HashMap<String, cel::Value> = fields
                .iter()
                .filter(|(_, field)| !field.is_null())
                .map(|(name, field)| (name.clone(), cel_value(field)))
                .collect();
            cel::Value::Map(map.into())
        }
    }
}

/// The API server's checks of a ScaleUnit object: the schema, its CEL rules, its list keys.
struct ApiServer {
    schema: JSONSchemaProps,
    validator: jsonschema::Validator,
    programs: Programs,
}

/// Each CEL rule of the schema, compiled once.
type Programs = HashMap<String, cel::Program>;

fn compile_rules(node: &JSONSchemaProps, programs: &mut Programs) {
    for rule in node.x_kubernetes_validations.iter().flatten() {
        let program = cel::Program::compile(&rule.rule).unwrap_or_else(|e| panic!("{}: {e}", rule.rule));
        programs.insert(rule.rule.clone(), program);
    }
    for property in node.properties.iter().flat_map(|p| p.values()) {
        compile_rules(property, programs);
    }
    if let Some(items) = items_of(node) {
        compile_rules(items, programs);
    }
    if let Some(JSONSchemaPropsOrBool::Schema(values)) = &node.additional_properties {
        compile_rules(values, programs);
    }
}

impl ApiServer {
    fn new() -> Self {
        let schema = schema();
        let validator = jsonschema::validator_for(&json_schema(&schema)).unwrap();
        let mut programs = HashMap::new();
        compile_rules(&schema, &mut programs);
        Self { schema, validator, programs }
    }

    /// Why the API server would refuse `object`, one line each (empty: it accepts it).
    fn refusals(&self, object: &Value) -> Vec<String> {
        let mut refusals: Vec<String> =
            self.validator.iter_errors(object).map(|e| format!("{} at {}", e, e.instance_path())).collect();
        // As the API server: rules run on a value the schema accepts.
        if refusals.is_empty() {
            rule_refusals(&self.programs, &self.schema, object, "", &mut refusals);
        }
        refusals
    }
}

/// Each CEL rule of `node` and below on `value`, and each list-map's keys; what refuses.
fn rule_refusals(programs: &Programs, node: &JSONSchemaProps, value: &Value, path: &str, refusals: &mut Vec<String>) {
    for rule in node.x_kubernetes_validations.iter().flatten() {
        let program = &programs[&rule.rule];
        let mut context = cel::Context::default();
        context.add_variable_from_value("self", cel_value(value));
        match program.execute(&context) {
            Ok(cel::Value::Bool(true)) => {}
            Ok(cel::Value::Bool(false)) => refusals.push(format!("{path}: {}", rule.message.as_deref().unwrap_or(""))),
            other => refusals.push(format!("{path}: {} evaluates to {other:?}", rule.rule)),
        }
    }
    if node.x_kubernetes_list_type.as_deref() == Some("map")
        && let Some(items) = value.as_array()
    {
        let keys = node.x_kubernetes_list_map_keys.clone().unwrap_or_default();
        let mut seen = HashSet::new();
        for item in items {
            let key: Vec<String> = keys.iter().map(|k| item[k].to_string()).collect();
            if !seen.insert(key.clone()) {
                refusals.push(format!("{path}: Duplicate value: {key:?}"));
            }
        }
    }
    match value {
        Value::Object(fields) => {
            for (name, field) in fields {
                if let Some(property) = node.properties.as_ref().and_then(|p| p.get(name)) {
                    rule_refusals(programs, property, field, &format!("{path}.{name}"), refusals);
                } else if let Some(JSONSchemaPropsOrBool::Schema(values)) = &node.additional_properties {
                    rule_refusals(programs, values, field, &format!("{path}.{name}"), refusals);
                }
            }
        }
        Value::Array(items) => {
            if let Some(schema) = items_of(node) {
                for (i, item) in items.iter().enumerate() {
                    rule_refusals(programs, schema, item, &format!("{path}[{i}]"), refusals);
                }
            }
        }
        _ => {}
    }
}

/// A ScaleUnit holding `contract` (and `sources`, when given).
fn scale_unit(contract: &Value, sources: Option<&Value>) -> Value {
    let mut spec = json!({
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "worker"},
        "contract": contract,
    });
    if let Some(sources) = sources {
        spec["sources"] = sources.clone();
    }
    json!({"apiVersion": "scale-units.dev/v1alpha1", "kind": "ScaleUnit", "metadata": {"name": "worker"}, "spec": spec})
}

fn vector_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())).flatten() {
        let path = entry.path();
        if path.is_dir() {
            vector_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "json") {
            out.push(path);
        }
    }
}

/// Every contract of the examples, the vectors and deploy/kubernetes's ConfigMap, by name.
fn contracts() -> Vec<(String, Value)> {
    let mut contracts = Vec::new();
    let mut examples: Vec<PathBuf> = std::fs::read_dir(root().join("examples"))
        .unwrap()
        .flatten()
        .map(|entry| entry.path().join("contract.json"))
        .filter(|path| path.exists())
        .collect();
    examples.sort();
    assert_eq!(examples.len(), 9, "one example per surface");
    for path in examples {
        let text = std::fs::read_to_string(&path).unwrap();
        contracts.push((path.display().to_string(), serde_json::from_str(&text).unwrap()));
    }
    let mut files = Vec::new();
    vector_files(&root().join("tests/vectors"), &mut files);
    files.sort();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let vector =
            scale_units_core::conformance::Vector::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        if let Ok(request) = serde_json::from_str::<Value>(&vector.request_text)
            && let Some(contract) = request.get("contract")
        {
            contracts.push((vector.id, contract.clone()));
        }
    }
    for (name, text) in configmap_files(".json") {
        contracts.push((name, serde_json::from_str(&text).unwrap()));
    }
    contracts
}

/// The files of deploy/kubernetes's contracts ConfigMap whose name ends with `suffix`.
fn configmap_files(suffix: &str) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(root().join("deploy/kubernetes/contracts-configmap.yaml")).unwrap();
    let configmap: Value = serde_saphyr::from_str(&text).unwrap();
    let files: Vec<(String, String)> = configmap["data"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(name, _)| name.ends_with(suffix))
        .map(|(name, text)| (name.clone(), text.as_str().unwrap().to_owned()))
        .collect();
    assert!(!files.is_empty(), "no {suffix} in the ConfigMap");
    files
}

#[test]
fn every_contract_the_core_accepts_the_api_server_accepts() {
    let api = ApiServer::new();
    let (mut accepted, mut refused_by_both, mut refused_by_core_only) = (0, 0, 0);
    for (name, contract) in contracts() {
        let core = validate_contract_json(&contract.to_string());
        let refusals = api.refusals(&scale_unit(&contract, None));
        match (core, refusals.is_empty()) {
            (Ok(_), true) => accepted += 1,
            (Ok(_), false) => {
                panic!("{name}: the core accepts the contract, the API server would refuse it: {refusals:?}")
            }
            (Err(_), false) => refused_by_both += 1,
            (Err(_), true) => refused_by_core_only += 1,
        }
    }
    println!("accepted {accepted}, refused by both {refused_by_both}, by the core alone {refused_by_core_only}");
    assert!(accepted >= 100, "{accepted} accepted contracts: the vectors were not read");
    // The schema sees a good share of what the core refuses (the rest is the core's condition).
    assert!(refused_by_both >= 20, "{refused_by_both}");
}

#[test]
fn every_sources_file_the_service_accepts_the_api_server_accepts() {
    let api = ApiServer::new();
    let contract: Value =
        serde_json::from_str(&std::fs::read_to_string(root().join("examples/dispatch-worker/contract.json")).unwrap())
            .unwrap();
    let files = configmap_files(".sources.yaml");
    for (name, text) in &files {
        scale_units_server::sources::Sources::parse(text, true).unwrap_or_else(|e| panic!("{name}: {e}"));
        let sources: Value = serde_saphyr::from_str(text).unwrap();
        let refusals = api.refusals(&scale_unit(&contract, Some(&sources)));
        assert!(refusals.is_empty(), "{name}: {refusals:?}");
    }
    // Each field's source is one of static, prometheus, redis: two is refused, as the service
    // refuses it.
    let (name, text) = &files[0];
    let mut sources: Value = serde_saphyr::from_str(text).unwrap();
    sources["signal"]["value"]["static"] = json!(3);
    let yaml = serde_json::to_string(&sources).unwrap();
    assert!(scale_units_server::sources::Sources::parse(&yaml, false).is_err(), "{name}");
    let refusals = api.refusals(&scale_unit(&contract, Some(&sources)));
    assert!(refusals.iter().any(|r| r.contains("oneOf") || r.contains("more than one")), "{name}: {refusals:?}");
    // An unknown field is refused (kubectl's strict field validation; pruned otherwise).
    let mut sources: Value = serde_saphyr::from_str(text).unwrap();
    sources["signal"]["max_age"] = json!(60);
    assert!(!api.refusals(&scale_unit(&contract, Some(&sources))).is_empty());
}

/// The example contract of `surface` (its folder's name), edited by `edit`.
fn example(folder: &str, edit: impl FnOnce(&mut Value)) -> Value {
    let path = root().join("examples").join(folder).join("contract.json");
    let mut contract: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    edit(&mut contract);
    contract
}

/// `contract` is refused by the core, and by the API server with a refusal containing `words`.
fn refused_by_both(api: &ApiServer, what: &str, contract: &Value, words: &str) {
    assert!(validate_contract_json(&contract.to_string()).is_err(), "{what}: the core accepts it");
    let refusals = api.refusals(&scale_unit(contract, None));
    assert!(refusals.iter().any(|r| r.contains(words)), "{what}: expected a refusal with {words:?}, got {refusals:?}");
}

#[test]
fn each_rule_refuses_what_breaks_it_and_the_core_refuses_it_too() {
    let api = ApiServer::new();
    // The core's rules stated in crd.rs.
    let bounds = example("dispatch-worker", |c| {
        c["policy"]["min_replicas"] = json!(5);
        c["policy"]["max_replicas"] = json!(4);
    });
    refused_by_both(&api, "min above max", &bounds, "min_replicas cannot exceed max_replicas");
    // max_replicas left out is 1, the core's default.
    let defaulted = example("dispatch-worker", |c| {
        c["policy"]["min_replicas"] = json!(2);
        c["policy"].as_object_mut().unwrap().remove("max_replicas");
    });
    refused_by_both(&api, "min above the default max", &defaulted, "min_replicas cannot exceed max_replicas");
    let step = example("dispatch-worker", |c| c["policy"]["scale_up_step"] = json!(1000));
    refused_by_both(&api, "step above max", &step, "scale_up_step cannot exceed max_replicas");
    let step = example("dispatch-worker", |c| c["policy"]["scale_down_step"] = json!(1000));
    refused_by_both(&api, "step above max", &step, "scale_down_step cannot exceed max_replicas");
    let signal = example("dispatch-worker", |c| c["allowed_signals"] = json!(["consumer_lag"]));
    refused_by_both(&api, "target outside allowed", &signal, "target_signal must be in allowed_signals");
    let demand = example("dispatch-worker", |c| {
        c["replica_demands"].as_array_mut().unwrap().pop();
    });
    refused_by_both(&api, "an axis without demand", &demand, "every required capacity axis needs a per-replica demand");
    let duplicate = example("dispatch-worker", |c| {
        let first = c["replica_demands"][0].clone();
        c["replica_demands"].as_array_mut().unwrap().push(first);
    });
    refused_by_both(&api, "a repeated demand axis", &duplicate, "Duplicate value");
    let quota = example("connector-pool", |c| {
        let first = c["quotas"][0].clone();
        c["quotas"].as_array_mut().unwrap().push(first);
    });
    refused_by_both(&api, "a repeated quota_ref", &quota, "Duplicate value");
    let unique = example("dispatch-worker", |c| {
        let first = c["allowed_signals"][0].clone();
        c["allowed_signals"].as_array_mut().unwrap().push(first);
    });
    refused_by_both(&api, "a repeated signal", &unique, "unique");

    // core/src/schema.rs's rules, as CEL.
    let to_zero = example("dispatch-worker", |c| {
        c["policy"]["allow_scale_to_zero"] = json!(true);
        c["policy"]["min_replicas"] = json!(1);
    });
    refused_by_both(&api, "scale to zero", &to_zero, "scale-to-zero requires min_replicas: 0");
    let lease = example("ingest-worker", |c| c["partition_lease"]["fencing_required"] = json!(false));
    refused_by_both(&api, "lease without fencing", &lease, "leased surfaces require");
    let stateless = example("dispatch-worker", |c| {
        c["continuity"] = json!({"mode": "stateless", "block_scale_down_with_active": true});
    });
    refused_by_both(&api, "stateless blocking", &stateless, "stateless continuity");
    let externalized = example("rlm-pool", |c| {
        c["continuity"].as_object_mut().unwrap().remove("external_store_ref");
    });
    refused_by_both(&api, "externalized without a store", &externalized, "externalized continuity requires a store");
    let null_store = example("rlm-pool", |c| c["continuity"]["external_store_ref"] = Value::Null);
    refused_by_both(&api, "externalized with a null store", &null_store, "externalized continuity requires a store");
    let affine = example("graphos-gateway", |c| c["continuity"]["external_store_ref"] = json!("store:x"));
    refused_by_both(&api, "session_affine with a store", &affine, "only externalized continuity may declare");
    let provider = example("connector-pool", |c| {
        let quotas = c["quotas"].as_array_mut().unwrap();
        for quota in quotas.iter_mut().filter(|q| q["scope"] == "provider_global") {
            quota["multiplicative"] = json!(true);
        }
    });
    refused_by_both(&api, "a multiplied provider quota", &provider, "provider-global quota");
    // Each surface's profile.
    let ingest = example("ingest-worker", |c| {
        c.as_object_mut().unwrap().remove("partition_lease");
    });
    refused_by_both(&api, "ingest without a lease", &ingest, "The profile of ingest_worker");
    let signal = example("dispatch-worker", |c| {
        c["allowed_signals"] = json!(["gpu_utilization_ppm"]);
        c["policy"]["target_signal"] = json!("gpu_utilization_ppm");
    });
    refused_by_both(&api, "a signal outside the profile", &signal, "dispatch_worker allows one or more of the signals");

    // Beside the rules: bounds, vocabulary, unknown fields, the contract's own shape.
    let bound = example("dispatch-worker", |c| c["policy"]["max_replicas"] = json!(10_001));
    refused_by_both(&api, "max above 10 000", &bound, "maximum");
    let word = example("dispatch-worker", |c| c["surface"] = json!("dispatch"));
    refused_by_both(&api, "an unknown surface", &word, "is not one of");
    let unknown = example("dispatch-worker", |c| c["policy"]["max_replica"] = json!(3));
    refused_by_both(&api, "a misspelt field", &unknown, "Additional properties");
}

#[test]
fn the_scale_target_needs_each_of_its_fields() {
    let api = ApiServer::new();
    let contract = example("dispatch-worker", |_| {});
    let mut object = scale_unit(&contract, None);
    assert!(api.refusals(&object).is_empty());
    for field in ["apiVersion", "kind", "name"] {
        let mut empty = object.clone();
        empty["spec"]["scaleTargetRef"][field] = json!("");
        assert!(!api.refusals(&empty).is_empty(), "an empty {field}");
        let mut missing = object.clone();
        missing["spec"]["scaleTargetRef"].as_object_mut().unwrap().remove(field);
        assert!(!api.refusals(&missing).is_empty(), "no {field}");
    }
    object["spec"]["mode"] = json!("Audit");
    assert!(!api.refusals(&object).is_empty(), "an unknown mode");
    for mode in ["Monitor", "Warn", "Enforce"] {
        object["spec"]["mode"] = json!(mode);
        assert!(api.refusals(&object).is_empty(), "{mode}");
    }
    object["spec"].as_object_mut().unwrap().remove("contract");
    assert!(!api.refusals(&object).is_empty(), "no contract");
}

#[test]
fn a_full_status_fits_the_status_schema() {
    let time = Time(jiff::Timestamp::from_second(1_700_000_000).unwrap());
    let condition = |type_: &str| Condition {
        type_: type_.to_owned(),
        status: "True".to_owned(),
        reason: "Decided".to_owned(),
        message: "hold: within target".to_owned(),
        last_transition_time: time.clone(),
        observed_generation: Some(3),
    };
    let status = ScaleUnitStatus {
        observed_generation: Some(3),
        target: Some(TargetStatus {
            reference: "Deployment/worker".to_owned(),
            uid: Some("0c5f6f8e-9b4b-4b53-a0c8-3f1c9fb0d7a1".to_owned()),
            generation: Some(7),
        }),
        current_replicas: Some(3),
        desired_replicas: Some(4),
        decision: Some(DecisionStatus {
            action: "scale_up".to_owned(),
            reason: Some("load above target".to_owned()),
            reasons: vec!["target_exceeded".to_owned()],
            decision_id: Some("dec_0123".to_owned()),
            component_digest: Some(format!("sha256:{}", "a".repeat(64))),
            decided_at: Some(time.clone()),
        }),
        last_scale_time: Some(time.clone()),
        known_since: Some(time.clone()),
        evidence: vec![EvidenceStatus {
            name: "signal".to_owned(),
            state: "Fresh".to_owned(),
            observed_at: Some("2023-11-14T22:13:20Z".to_owned()),
            source: Some("prometheus:cluster".to_owned()),
        }],
        conditions: vec![condition("Ready"), condition("EvidenceFresh"), condition("ScalingBlocked")],
    };
    let value = serde_json::to_value(&status).unwrap();
    // Every field of the status is set: a field added to the type without the schema fails here.
    fn count_nulls(value: &Value) -> usize {
        match value {
            Value::Null => 1,
            Value::Array(items) => items.iter().map(count_nulls).sum(),
            Value::Object(fields) => fields.values().map(count_nulls).sum(),
            _ => 0,
        }
    }
    assert_eq!(count_nulls(&value), 0);
    let api = ApiServer::new();
    let mut object = scale_unit(&example("dispatch-worker", |_| {}), None);
    object["status"] = value;
    let refusals = api.refusals(&object);
    assert!(refusals.is_empty(), "{refusals:?}");
    // Two conditions of one type are refused (a list keyed by type).
    object["status"]["conditions"][1]["type"] = json!("Ready");
    assert!(api.refusals(&object).iter().any(|r| r.contains("Duplicate value")));
}

// ---- The conversion on its own. ----

#[test]
fn the_conversion_inlines_references_and_writes_nullable_enums_and_tagged_unions() {
    let schema = json!({
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "maybe": {"type": ["string", "null"], "description": "A string or null."},
            "node": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}], "description": "A node."},
            "word": {"oneOf": [{"const": "up", "type": "string"}, {"const": "down", "type": "string"}]},
            "source": {"oneOf": [
                {"type": "object", "additionalProperties": false, "properties": {"static": {"type": "integer", "format": "uint64", "minimum": 0}}, "required": ["static"], "description": "Fixed."},
                {"type": "object", "additionalProperties": false, "properties": {"query": {"type": "string"}}, "required": ["query"]}
            ]},
            "mixed": {"anyOf": [{"type": "string"}, {"type": "integer"}], "description": "Either."},
            "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": true, "maxItems": 4},
            "one": {"const": "1", "type": "string", "default": "1"},
            "map": {"type": "object", "additionalProperties": {"$ref": "#/$defs/Node"}}
        },
        "required": ["word"],
        "$defs": {"Node": {"type": "object", "additionalProperties": false, "properties": {"n": {"type": "integer", "maximum": 9}}}}
    });
    let converted = serde_json::to_value(open_api_schema(&schema)).unwrap();
    let properties = &converted["properties"];
    assert_eq!(properties["maybe"], json!({"type": "string", "nullable": true, "description": "A string or null."}));
    assert_eq!(
        properties["node"],
        json!({"type": "object", "nullable": true, "description": "A node.", "properties": {"n": {"type": "integer", "format": "int64", "maximum": 9.0}}})
    );
    assert_eq!(properties["word"], json!({"type": "string", "enum": ["up", "down"], "maxLength": 4}));
    assert_eq!(
        properties["source"],
        json!({
            "type": "object",
            "properties": {
                "static": {"type": "integer", "format": "int64", "minimum": 0.0, "description": "Fixed."},
                "query": {"type": "string"}
            },
            "oneOf": [{"required": ["static"]}, {"required": ["query"]}]
        })
    );
    assert_eq!(properties["mixed"], json!({"x-kubernetes-preserve-unknown-fields": true, "description": "Either."}));
    assert_eq!(
        properties["tags"],
        json!({"type": "array", "items": {"type": "string"}, "maxItems": 4, "x-kubernetes-list-type": "set"})
    );
    assert_eq!(properties["one"], json!({"type": "string", "enum": ["1"], "maxLength": 1}));
    assert_eq!(properties["map"]["additionalProperties"]["properties"]["n"]["maximum"], json!(9.0));
    assert_eq!(converted["required"], json!(["word"]));
    assert!(converted.get("$defs").is_none() && converted.get("additionalProperties").is_none());
}

#[test]
fn if_then_rules_become_cel_and_a_condition_on_a_nullable_field_is_left_to_the_core() {
    let schema = json!({
        "type": "object",
        "properties": {
            "mode": {"type": "string", "enum": ["a", "b"]},
            "flag": {"type": "boolean"},
            "n": {"type": "integer"},
            "list": {"type": "array", "items": {"type": "string"}, "maxItems": 8},
            "store": {"type": ["string", "null"]}
        },
        "allOf": [
            {"description": "a needs flag: false", "if": {"properties": {"mode": {"const": "a"}}, "required": ["mode"]},
             "then": {"properties": {"flag": {"const": false}, "store": {"type": "null"}}, "required": ["flag"]}},
            {"description": "b needs n >= 2 and x in list", "if": {"properties": {"mode": {"const": "b"}}, "required": ["mode"]},
             "then": {"properties": {"n": {"minimum": 2}, "list": {"contains": {"const": "x"}, "items": {"enum": ["x", "y"]}}}}},
            {"description": "only about store", "if": {"properties": {"mode": {"const": "a"}}, "required": ["mode"]},
             "then": {"properties": {"store": {"type": "string"}}, "required": ["store"]}},
            {"description": "a condition on store", "if": {"properties": {"store": {"const": "s"}}, "required": ["store"]},
             "then": {"required": ["n"]}}
        ]
    });
    let converted = open_api_schema(&schema);
    let rules: Vec<(String, String)> = converted
        .x_kubernetes_validations
        .iter()
        .flatten()
        .map(|rule| (rule.rule.clone(), rule.message.clone().unwrap_or_default()))
        .collect();
    // One rule per constraint of a `then`, each with its own words; the fourth's condition reads
    // a nullable field: no exact translation, left out.
    let messages: Vec<&str> = rules.iter().map(|(_, message)| message.as_str()).collect();
    assert_eq!(
        messages,
        [
            "a needs flag: false",
            "a needs flag: false",
            "a needs flag: false: flag required",
            "b needs n >= 2 and x in list",
            "b needs n >= 2 and x in list",
            "only about store: store required",
        ],
        "{rules:#?}"
    );
    // A rule group passes when each of its rules does.
    let group = |prefix: &str| -> Vec<String> {
        rules.iter().filter(|(_, message)| message.starts_with(prefix)).map(|(rule, _)| rule.clone()).collect()
    };
    let passes = |rules: &Vec<String>, value: Value| {
        let mut context = cel::Context::default();
        context.add_variable_from_value("self", cel_value(&value));
        rules
            .iter()
            .all(|rule| cel::Program::compile(rule).unwrap().execute(&context).unwrap() == cel::Value::Bool(true))
    };
    let rules = [group("a needs"), group("b needs"), group("only about")];
    let first = &rules[0];
    assert!(passes(first, json!({"mode": "a", "flag": false})));
    assert!(passes(first, json!({"mode": "a", "flag": false, "store": null})));
    assert!(!passes(first, json!({"mode": "a", "flag": false, "store": "s"})));
    assert!(!passes(first, json!({"mode": "a", "flag": true})));
    assert!(!passes(first, json!({"mode": "a"})));
    assert!(passes(first, json!({"mode": "b"})));
    assert!(passes(first, json!({})));
    let second = &rules[1];
    assert!(passes(second, json!({"mode": "b", "n": 2, "list": ["x"]})));
    assert!(passes(second, json!({"mode": "b"})));
    assert!(!passes(second, json!({"mode": "b", "n": 1})));
    assert!(!passes(second, json!({"mode": "b", "list": ["y"]})));
    assert!(!passes(second, json!({"mode": "b", "list": ["x", "z"]})));
    assert!(passes(second, json!({"mode": "a", "n": 1, "list": ["z"]})));
    let third = &rules[2];
    assert!(passes(third, json!({"mode": "a", "store": "s"})));
    assert!(!passes(third, json!({"mode": "a", "store": null})));
    assert!(!passes(third, json!({"mode": "a"})));
    assert!(passes(third, json!({"mode": "b"})));
}

#[test]
fn the_contract_schema_is_the_published_one() {
    // The CRD is generated from the types that write schema/ (checked there against the file).
    let published: Value =
        serde_json::from_str(&std::fs::read_to_string(root().join("schema/scale-unit-contract.schema.json")).unwrap())
            .unwrap();
    let mut generated = scale_units_server::kubernetes::crd::contract_json_schema();
    let object = generated.as_object_mut().unwrap();
    for key in ["$id", "title"] {
        object.insert(key.to_owned(), published[key].clone());
    }
    let published: BTreeMap<String, Value> = serde_json::from_value(published).unwrap();
    let generated: BTreeMap<String, Value> = serde_json::from_value(generated).unwrap();
    assert_eq!(generated, published);
}
