//! The rules of SPEC §4 that a JSON Schema can state, added to the generated schemas (feature
//! `schema`) so that an editor flags what the evaluator refuses: per surface, from
//! [`SurfaceKind::profile`] (the one table), as `if`/`then` on `surface`; and the rules of the
//! parts that one field's value imposes on another (a stateless continuity must say
//! `block_scale_down_with_active: false`, a lease needs a TTL and fencing, …).
//!
//! Every rule here is one the core enforces: a document the schema refuses, the core refuses
//! (`core/tests/schema.rs` holds both directions on every vector and on one broken contract per
//! rule and surface). The schema cannot state every rule — `min_replicas <= max_replicas`,
//! unique demand axes or quota refs, identities — so a document it accepts may still be refused.

use schemars::Schema;
use serde_json::{Value, json};

use crate::vocab::{CapacityAxis, ContinuityMode, QuotaScope, SignalKind, SurfaceKind};

/// Adds `rules` to `schema` under `allOf` (after any there already).
fn add_all_of(schema: &mut Schema, rules: Vec<Value>) {
    if let Some(Value::Array(existing)) = schema.get_mut("allOf") {
        existing.extend(rules);
    } else {
        schema.insert("allOf".into(), Value::Array(rules));
    }
}

/// `if field == value then then_`, with a description saying so.
fn when(field: &str, value: &Value, description: &str, then: Value) -> Value {
    json!({
        "description": description,
        "if": { "properties": { field: { "const": value } }, "required": [field] },
        "then": then,
    })
}

fn words<T: Copy>(items: &[T], wire: fn(T) -> &'static str) -> Vec<&'static str> {
    items.iter().map(|&item| wire(item)).collect()
}

/// Each of `values` present in an array (of strings when `field` is `None`, of objects whose
/// `field` is the value otherwise), each with its own description: `rule` with the value in it.
fn contains_each(values: &[&str], field: Option<&str>, rule: impl Fn(&str) -> String) -> Vec<Value> {
    values
        .iter()
        .map(|value| match field {
            None => json!({ "description": rule(value), "contains": { "const": value } }),
            Some(field) => json!({
                "description": rule(value),
                "contains": { "properties": { field: { "const": value } }, "required": [field] },
            }),
        })
        .collect()
}

/// The `then` of one surface: what its profile (SPEC §4.3) requires of a contract. Each
/// constraint carries a description of its own (what an editor shows beside the fault).
fn surface_rule(surface: SurfaceKind) -> Value {
    let profile = surface.profile();
    let signals = words(profile.allowed_signals, SignalKind::as_str);
    let required = words(profile.required_capacity_axes, CapacityAxis::as_str);
    let engine = words(profile.engine_authority_axes, CapacityAxis::as_str);
    let modes = words(profile.continuity_modes, ContinuityMode::as_str);
    let provider = words(profile.provider_quota_axes, CapacityAxis::as_str);
    let name = surface.as_str();
    let signal_list = signals.join(", ");

    let mut properties = serde_json::Map::new();
    let mut required_fields: Vec<&str> = Vec::new();
    properties.insert(
        "allowed_signals".into(),
        json!({
            "description": format!("{name} allows one or more of the signals {signal_list}"),
            "minItems": 1,
            "items": { "description": format!("{name} allows the signals {signal_list}"), "enum": signals },
        }),
    );
    properties.insert(
        "policy".into(),
        json!({ "properties": { "target_signal": {
            "description": format!("{name} tracks one of {signal_list} (and it must be in allowed_signals)"),
            "enum": signals,
        } } }),
    );
    properties.insert(
        "required_capacity_axes".into(),
        json!({
            "allOf": contains_each(&required, None, |axis| format!(
                "{name} requires the hard capacity axis {axis} (it requires {})", required.join(", ")
            )),
        }),
    );
    properties.insert(
        "replica_demands".into(),
        json!({
            "allOf": contains_each(&required, Some("axis"), |axis| format!(
                "{name}: add a per-replica demand for {axis} (one for each of {})", required.join(", ")
            )),
        }),
    );
    let engine_rule = if engine.is_empty() {
        json!({ "description": format!("{name} has no engine authority axes: leave the list empty"), "maxItems": 0 })
    } else {
        required_fields.push("engine_authority_axes");
        json!({
            "items": {
                "description": format!("{name}: exactly the engine authority axes {}", engine.join(", ")),
                "enum": engine,
            },
            "allOf": contains_each(&engine, None, |axis| format!(
                "{name} requires {axis} among engine_authority_axes (exactly {})", engine.join(", ")
            )),
        })
    };
    properties.insert("engine_authority_axes".into(), engine_rule);
    properties.insert(
        "continuity".into(),
        json!({ "properties": { "mode": {
            "description": format!("{name} supports the continuity modes {}", modes.join(", ")),
            "enum": modes,
        } } }),
    );
    if profile.partition_and_fenced_lease {
        required_fields.push("partition_lease");
        let flag = |field: &str| json!({ "description": format!("{name} requires partitions and a fenced lease: {field}: true"), "const": true });
        properties.insert(
            "partition_lease".into(),
            json!({
                "properties": {
                    "partitioned": flag("partitioned"),
                    "lease_required": flag("lease_required"),
                    "fencing_required": flag("fencing_required"),
                },
                "required": ["partitioned", "lease_required", "fencing_required"],
            }),
        );
    }
    if !provider.is_empty() {
        required_fields.push("quotas");
        properties.insert(
            "quotas".into(),
            json!({
                "description": format!(
                    "{name} requires a quota binding with scope provider_global on one of the axes {}",
                    provider.join(", ")
                ),
                "contains": {
                    "properties": {
                        "scope": { "const": QuotaScope::ProviderGlobal.as_str() },
                        "axis": { "enum": provider },
                    },
                    "required": ["scope", "axis"],
                },
            }),
        );
    }
    let mut then = json!({ "properties": properties });
    if !required_fields.is_empty()
        && let Some(object) = then.as_object_mut()
    {
        object.insert("required".into(), json!(required_fields));
    }
    when("surface", &json!(name), &format!("The profile of {name} (SPEC §4.3)."), then)
}

/// The contract's schema: unique lists (§4.3 checks 1, 2, 7) and one rule per surface.
pub(crate) fn contract(schema: &mut Schema) {
    for list in ["allowed_signals", "required_capacity_axes", "engine_authority_axes"] {
        if let Some(Value::Object(property)) = schema.get_mut("properties").and_then(|p| p.get_mut(list)) {
            property.insert("uniqueItems".into(), Value::Bool(true));
        }
    }
    add_all_of(schema, SurfaceKind::ALL.iter().map(|&surface| surface_rule(surface)).collect());
}

/// The policy's schema: scale-to-zero needs `min_replicas: 0` (§4.1 check 2).
pub(crate) fn policy(schema: &mut Schema) {
    add_all_of(
        schema,
        vec![when(
            "allow_scale_to_zero",
            &json!(true),
            "scale-to-zero requires min_replicas: 0",
            json!({ "properties": { "min_replicas": { "const": 0 } }, "required": ["min_replicas"] }),
        )],
    );
}

/// The partition and lease contract's schema (SPEC §4.2).
pub(crate) fn partition_lease(schema: &mut Schema) {
    add_all_of(
        schema,
        vec![
            when(
                "partitioned",
                &json!(true),
                "partitioned surfaces require partitions_per_replica of 1 or more",
                json!({
                    "properties": { "partitions_per_replica": {
                        "description": "partitioned surfaces require partitions_per_replica of 1 or more",
                        "minimum": 1,
                    } },
                    "required": ["partitions_per_replica"],
                }),
            ),
            when(
                "lease_required",
                &json!(true),
                "leased surfaces require a TTL (lease_ttl_s of 1 or more) and fencing_required: true",
                json!({
                    "properties": {
                        "lease_ttl_s": { "description": "leased surfaces require lease_ttl_s of 1 or more", "minimum": 1 },
                        "fencing_required": { "description": "leased surfaces require fencing_required: true", "const": true },
                    },
                    "required": ["lease_ttl_s", "fencing_required"],
                }),
            ),
            when(
                "fencing_required",
                &json!(true),
                "fencing cannot be declared without leases (lease_required: true)",
                json!({
                    "properties": { "lease_required": {
                        "description": "fencing cannot be declared without leases: lease_required: true",
                        "const": true,
                    } },
                    "required": ["lease_required"],
                }),
            ),
        ],
    );
}

/// The continuity contract's schema (SPEC §4.2): the store reference and the stateless flag.
pub(crate) fn continuity(schema: &mut Schema) {
    add_all_of(
        schema,
        vec![
            when(
                "mode",
                &json!(ContinuityMode::Externalized.as_str()),
                "externalized continuity requires a store reference (external_store_ref)",
                json!({
                    "properties": { "external_store_ref": {
                        "description": "externalized continuity requires a store reference",
                        "type": "string",
                    } },
                    "required": ["external_store_ref"],
                }),
            ),
            when(
                "mode",
                &json!(ContinuityMode::SessionAffine.as_str()),
                "only externalized continuity may declare a store reference",
                json!({ "properties": { "external_store_ref": {
                    "description": "only externalized continuity may declare a store reference",
                    "type": "null",
                } } }),
            ),
            when(
                "mode",
                &json!(ContinuityMode::Stateless.as_str()),
                "stateless continuity: no store reference, and block_scale_down_with_active: false written out \
                 (its default, true, is refused)",
                json!({
                    "properties": {
                        "external_store_ref": {
                            "description": "only externalized continuity may declare a store reference",
                            "type": "null",
                        },
                        "block_scale_down_with_active": {
                            "description": "stateless continuity cannot block scale-down on active sessions: \
                                            write block_scale_down_with_active: false (the default is true)",
                            "const": false,
                        },
                    },
                    "required": ["block_scale_down_with_active"],
                }),
            ),
        ],
    );
}

/// A quota binding's schema (SPEC §4.2): a provider-global quota is never multiplied and has a
/// per-replica demand.
pub(crate) fn quota_binding(schema: &mut Schema) {
    add_all_of(
        schema,
        vec![when(
            "scope",
            &json!(QuotaScope::ProviderGlobal.as_str()),
            "a provider-global quota cannot be multiplied per replica and requires per_replica of 1 or more",
            json!({ "properties": {
                "multiplicative": {
                    "description": "provider-global quota cannot be multiplied per replica",
                    "const": false,
                },
                "per_replica": {
                    "description": "provider-global quota requires a declared per-replica demand (1 or more)",
                    "minimum": 1,
                },
            } }),
        )],
    );
}
