//! Criterion benchmarks of the component in the host against the native core (`make bench-host`);
//! the figures and their ratios are written down in BENCHMARKS.md ("Rust host").
//!
//! The request is the one of `tests/vectors/reference/t01` (an MCP gateway scaling 1 → 3: four
//! capacity axes, a provider quota, continuity and safety), as the Node and Python benchmarks use.
//! Bench ids (group/function) are stable; the cross-language table reads them:
//!
//! - `native/*` and `component/*`: `evaluate_typed`, `evaluate_json` (the same request again and
//!   again: the contract cache hits), `evaluate_typed_distinct` and `evaluate_json_distinct`
//!   (2 048 contracts in turn: every call misses the cache), `evaluate_typed_cached` (native with a
//!   `ContractCache`, like for like with the component), `single_1000_typed`/`_json` (1 000 calls
//!   of one unit each) against `batch_1000_typed`/`_json` (one call of 1 000 units), and
//!   `evaluate_json_fresh_instance`.
//! - `sha256/*`: the exact messages a t01 decision hashes (contract identity twice, decision
//!   identity twice; `*_decision_only` when the contract cache hits), natively and compiled to
//!   wasm (`cargo xtask sha256-wasm`, the same sha2 and profile as the component).
//! - `load/*`: compile, precompiled load, instantiation, and `precompiled_load_and_first_decision`
//!   (the cold start: a new engine, the component from the precompiled cache, one decision).
//! - `scaling_contract_native`/`_component`: `axes_A_quotas_Q`; `scaling_batch_native`/`_component`:
//!   `batch_N` (throughput in units).
#![allow(clippy::expect_used, reason = "a benchmark that cannot set up should stop at once")]
#![allow(missing_docs, reason = "criterion's macros generate undocumented items")]

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use scale_units_core::{ContractCache, EvaluationRequest};
use scale_units_host::{Policy, default_component_path};
use serde_json::{Value, json};

fn t01_json() -> String {
    let vector = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/vectors/reference/t01-mcp-target-tracks-deterministically.json"
    ))
    .expect("the t01 vector");
    scale_units_core::conformance::Vector::parse(&vector).expect("a vector").request_text
}

fn component() -> Vec<u8> {
    let path = default_component_path().expect("build the component first: make component");
    std::fs::read(path).expect("the component")
}

/// `count` copies of t01, each with a contract of its own (`unit_ref` numbered), as JSON texts.
fn t01_units(count: usize) -> Vec<String> {
    let base: Value = serde_json::from_str(&t01_json()).expect("t01 is JSON");
    (0..count)
        .map(|i| {
            let mut request = base.clone();
            *request.pointer_mut("/contract/unit_ref").expect("t01 names its unit") =
                json!(format!("unit:mcp-gateway-{i}"));
            request.to_string()
        })
        .collect()
}

fn typed(texts: &[String]) -> Vec<EvaluationRequest> {
    texts.iter().map(|text| scale_units_core::parse_request(text).expect("the request parses")).collect()
}

/// Every capacity axis, the three an API gateway requires first.
const AXES: [&str; 14] = [
    "cpu_milli",
    "memory_mib",
    "session_slots",
    "gpu_count",
    "gpu_memory_mib",
    "partition_slots",
    "lease_slots",
    "engine_bytes",
    "engine_write_bytes_per_s",
    "fsync_iops",
    "read_admission_slots",
    "continuity_slots",
    "upstream_rate",
    "provider_global_quota",
];

/// An API-gateway request (scale up 2 → 3) with `axes` capacity axes (3..=14: the gateway requires
/// three, the vocabulary holds fourteen) and `quotas` unit quotas, every observation fresh.
fn scaled(axes: usize, quotas: usize) -> String {
    let fresh = |source: String| {
        json!({
            "observed_at": "2026-08-19T11:59:00Z", "expires_at": "2026-08-19T12:05:00Z",
            "source_ref": source,
            "source_digest": "sha256:8983d2cf111527b9be4d220c76d6ca9c50dec8ea9c2d9a5f81180d46a2358d78",
        })
    };
    let with = |mut base: Value, extra: Value| {
        if let (Some(base), Value::Object(extra)) = (base.as_object_mut(), extra) {
            base.extend(extra);
        }
        base
    };
    let axes: Vec<&str> = AXES.iter().copied().take(axes).collect();
    let request = json!({
        "contract": {
            "unit_ref": format!("unit:api-gateway-a{}-q{quotas}", axes.len()),
            "surface": "api_gateway",
            "policy": {"min_replicas": 1, "max_replicas": 16, "target": 100, "target_signal": "request_rate"},
            "allowed_signals": ["request_rate", "in_flight"],
            "required_capacity_axes": axes,
            "replica_demands": axes.iter().map(|a| json!({"axis": a, "per_replica": 10})).collect::<Vec<_>>(),
            "quotas": (0..quotas).map(|q| json!({
                "quota_ref": format!("quota:q{q}"), "axis": "cpu_milli", "scope": "unit", "per_replica": 1
            })).collect::<Vec<_>>(),
            "continuity": {"mode": "stateless", "block_scale_down_with_active": false},
            "safety_required": true,
        },
        "current_replicas": 2,
        "signal": with(json!({"signal": "request_rate", "value": 250}), fresh("metrics:rate".into())),
        "capacities": axes.iter().map(|a| with(
            json!({"axis": a, "allocatable": 10_000, "reserved": 1_000, "used": 0}),
            fresh(format!("capacity:{a}")),
        )).collect::<Vec<_>>(),
        "quotas": (0..quotas).map(|q| with(
            json!({"quota_ref": format!("quota:q{q}"), "scope": "unit", "limit": 1_000, "used": 0}),
            fresh(format!("quota:source-{q}")),
        )).collect::<Vec<_>>(),
        "safety": with(json!({"overloaded": false, "noisy_neighbor": false}), fresh("safety:gateway".into())),
        "now": "2026-08-19T12:00:00Z",
    });
    request.to_string()
}

fn quick(group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    group.warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
}

fn evaluate(c: &mut Criterion) {
    let json = t01_json();
    let typed_one = scale_units_core::parse_request(&json).expect("t01 parses");
    let distinct_json = t01_units(2 * ContractCache::DEFAULT_CAPACITY);
    let distinct = typed(&distinct_json);
    let units_json = t01_units(1000);
    let units = typed(&units_json);
    let bytes = component();
    let policy = Policy::from_bytes(&bytes).expect("the component loads");
    let fresh = Policy::builder().max_idle_instances(0).load(&bytes).expect("the component loads");

    let mut group = c.benchmark_group("native");
    quick(&mut group);
    group.bench_function("evaluate_typed", |b| b.iter(|| scale_units_core::evaluate(black_box(&typed_one))));
    group.bench_function("evaluate_json", |b| b.iter(|| scale_units_core::evaluate_json(black_box(&json))));
    group.bench_function("derive_json", |b| b.iter(|| scale_units_core::derive_json(black_box(&json))));
    let mut cache = ContractCache::new();
    group.bench_function("evaluate_typed_cached", |b| b.iter(|| cache.evaluate(black_box(&typed_one))));
    group.bench_function("evaluate_json_cached", |b| b.iter(|| cache.evaluate_json(black_box(&json))));
    let mut next = distinct.iter().cycle();
    group.bench_function("evaluate_typed_distinct", |b| {
        b.iter(|| scale_units_core::evaluate(black_box(next.next().expect("cycle"))))
    });
    let mut next = distinct_json.iter().cycle();
    group.bench_function("evaluate_json_distinct", |b| {
        b.iter(|| scale_units_core::evaluate_json(black_box(next.next().expect("cycle"))))
    });
    group.throughput(Throughput::Elements(1000));
    group.bench_function("batch_1000_typed", |b| {
        b.iter(|| units.iter().map(|r| scale_units_core::evaluate(black_box(r))).collect::<Vec<_>>())
    });
    group.bench_function("batch_1000_typed_cached", |b| {
        b.iter(|| units.iter().map(|r| cache.evaluate(black_box(r))).collect::<Vec<_>>())
    });
    group.finish();

    let mut group = c.benchmark_group("component");
    quick(&mut group);
    group.bench_function("evaluate_typed", |b| b.iter(|| policy.evaluate(black_box(&typed_one))));
    group.bench_function("evaluate_json", |b| b.iter(|| policy.evaluate_json(black_box(&json))));
    // WIT 0.2.0: the derivation of the same request (its decision path, recording), as JSON.
    group.bench_function("derive_json", |b| b.iter(|| policy.derive_json(black_box(&json))));
    group.bench_function("diagnose_request_json", |b| b.iter(|| policy.diagnose_request_json(black_box(&json))));
    let mut next = distinct.iter().cycle();
    group.bench_function("evaluate_typed_distinct", |b| {
        b.iter(|| policy.evaluate(black_box(next.next().expect("cycle"))))
    });
    let mut next = distinct_json.iter().cycle();
    group.bench_function("evaluate_json_distinct", |b| {
        b.iter(|| policy.evaluate_json(black_box(next.next().expect("cycle"))))
    });
    group.bench_function("evaluate_json_fresh_instance", |b| b.iter(|| fresh.evaluate_json(black_box(&json))));
    group.throughput(Throughput::Elements(1000));
    group.bench_function("single_1000_typed", |b| {
        b.iter(|| units.iter().map(|r| policy.evaluate(black_box(r)).expect("no host error")).collect::<Vec<_>>())
    });
    group.bench_function("batch_1000_typed", |b| b.iter(|| policy.evaluate_batch(black_box(&units))));
    group.bench_function("single_1000_json", |b| {
        b.iter(|| {
            units_json.iter().map(|r| policy.evaluate_json(black_box(r)).expect("no host error")).collect::<Vec<_>>()
        })
    });
    group.bench_function("batch_1000_json", |b| b.iter(|| policy.evaluate_batch_json(black_box(&units_json))));
    group.finish();
}

/// The messages one t01 decision hashes, in bytes: the contract identity text and its
/// `{"identity":…,"kind":…}` wrapping, then the same for the decision identity.
fn hashed_messages() -> [u32; 4] {
    let request = scale_units_core::parse_request(&t01_json()).expect("t01 parses");
    let decision = scale_units_core::evaluate(&request).expect("t01 decides");
    assert!(
        decision.evidence.iter().all(|e| e.status != scale_units_core::EvidenceStatus::Missing),
        "missing evidence adds digests this count leaves out"
    );
    let wrapped = |text: usize, kind: &str| text + r#"{"identity":"#.len() + format!(r#","kind":"{kind}"}}"#).len();
    let contract = scale_units_core::contract_identity_text(&request.contract).len();
    let decision = scale_units_core::decision_identity_text(&decision).len();
    [contract, wrapped(contract, "scale_unit_contract"), decision, wrapped(decision, "scale_decision")]
        .map(|len| u32::try_from(len).expect("small"))
}

fn sha256(c: &mut Criterion) {
    use sha2::{Digest, Sha256};
    let [a, b, cc, d] = hashed_messages();
    eprintln!("t01 hashes messages of {a}, {b}, {cc} and {d} bytes");
    let buffer = vec![b'a'; 65_536];
    let native =
        |lens: [u32; 4]| lens.map(|len| Sha256::digest(buffer.get(..len as usize).expect("short")).first().copied());

    let path = default_component_path().expect("the component path").with_file_name("sha256_bench.wasm");
    let module_bytes = std::fs::read(&path).expect("build the sha256 module first: cargo xtask sha256-wasm");
    let mut config = wasmtime::Config::new();
    config.consume_fuel(true);
    let engine = wasmtime::Engine::new(&config).expect("an engine");
    let module = wasmtime::Module::new(&engine, &module_bytes).expect("the sha256 module");
    let mut store = wasmtime::Store::new(&engine, ());
    let instance = wasmtime::Instance::new(&mut store, &module, &[]).expect("instantiates");
    let hash4 = instance.get_typed_func::<(u32, u32, u32, u32), u32>(&mut store, "hash4").expect("the hash4 export");

    let mut group = c.benchmark_group("sha256");
    quick(&mut group);
    group.bench_function("native_t01", |bench| bench.iter(|| native(black_box([a, b, cc, d]))));
    group.bench_function("native_t01_decision_only", |bench| bench.iter(|| native(black_box([0, 0, cc, d]))));
    group.bench_function("wasm_t01", |bench| {
        bench.iter(|| {
            store.set_fuel(u64::MAX).expect("fuel");
            hash4.call(&mut store, black_box((a, b, cc, d))).expect("hashes")
        })
    });
    group.bench_function("wasm_t01_decision_only", |bench| {
        bench.iter(|| {
            store.set_fuel(u64::MAX).expect("fuel");
            hash4.call(&mut store, black_box((0, 0, cc, d))).expect("hashes")
        })
    });
    group.finish();
}

fn load(c: &mut Criterion) {
    let bytes = component();
    let typed_one = scale_units_core::parse_request(&t01_json()).expect("t01 parses");
    let policy = Policy::from_bytes(&bytes).expect("the component loads");
    let cache = std::env::temp_dir().join(format!("scale-units-bench-cache-{}", std::process::id()));
    Policy::builder().cache_dir(&cache).load(&bytes).expect("fills the cache");

    let mut group = c.benchmark_group("load");
    group.sample_size(10).measurement_time(Duration::from_secs(20));
    group.bench_function("compile_no_cache", |b| b.iter(|| Policy::from_bytes(black_box(&bytes))));
    group.finish();

    let mut group = c.benchmark_group("load");
    quick(&mut group);
    group.bench_function("precompiled_cache_hit", |b| {
        b.iter(|| Policy::builder().cache_dir(&cache).load(black_box(&bytes)))
    });
    group.bench_function("precompiled_load_and_first_decision", |b| {
        b.iter(|| {
            let policy = Policy::builder().cache_dir(&cache).load(black_box(&bytes)).expect("loads");
            policy.evaluate(black_box(&typed_one)).expect("no host error").expect("decides")
        })
    });
    group.bench_function("instantiate", |b| b.iter(|| policy.instantiate_once()));
    group.finish();
    let _ = std::fs::remove_dir_all(&cache);
}

fn scaling(c: &mut Criterion) {
    let bytes = component();
    let policy = Policy::from_bytes(&bytes).expect("the component loads");
    let shapes: Vec<(usize, usize)> =
        [3, 6, 10, 14].into_iter().flat_map(|axes| [0, 4, 16].map(|quotas| (axes, quotas))).collect();
    let requests: Vec<(String, EvaluationRequest)> = shapes
        .iter()
        .map(|&(axes, quotas)| {
            let text = scaled(axes, quotas);
            let request = scale_units_core::parse_request(&text).expect("the generated request parses");
            let decision = scale_units_core::evaluate(&request).expect("the generated request decides");
            assert_eq!(decision.action, scale_units_core::ActionKind::ScaleUp, "{axes} axes, {quotas} quotas");
            (format!("axes_{axes}_quotas_{quotas}"), request)
        })
        .collect();

    let mut group = c.benchmark_group("scaling_contract_native");
    quick(&mut group);
    for (id, request) in &requests {
        group.bench_function(id, |b| b.iter(|| scale_units_core::evaluate(black_box(request))));
    }
    group.finish();
    let mut group = c.benchmark_group("scaling_contract_component");
    quick(&mut group);
    for (id, request) in &requests {
        group.bench_function(id, |b| b.iter(|| policy.evaluate(black_box(request))));
    }
    group.finish();

    let units = typed(&t01_units(1000));
    for (name, native) in [("scaling_batch_native", true), ("scaling_batch_component", false)] {
        let mut group = c.benchmark_group(name);
        quick(&mut group);
        for size in [1_usize, 10, 100, 1000] {
            let batch = units.get(..size).expect("1000 units");
            group.throughput(Throughput::Elements(size as u64));
            group.bench_with_input(BenchmarkId::new("batch", size), batch, |b, batch| {
                if native {
                    b.iter(|| batch.iter().map(|r| scale_units_core::evaluate(black_box(r))).collect::<Vec<_>>())
                } else {
                    b.iter(|| policy.evaluate_batch(black_box(batch)).expect("no host error"))
                }
            });
        }
        group.finish();
    }
}

criterion_group!(benches, evaluate, sha256, load, scaling);
criterion_main!(benches);
