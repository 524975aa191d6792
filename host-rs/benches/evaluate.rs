//! Criterion benchmarks of the host against the native core (`make bench-host`); the figures
//! and their ratios are written down in BENCHMARKS.md.
//!
//! The request is the one of `tests/vectors/reference/t01` (an MCP gateway scaling 1 → 3: four
//! capacity axes, a provider quota, continuity and safety), as the Node and Python benchmarks use.
#![allow(clippy::expect_used, reason = "a benchmark that cannot set up should stop at once")]
#![allow(missing_docs, reason = "criterion's macros generate undocumented items")]

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use scale_units_host::{Policy, default_component_path};

fn request() -> String {
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

fn evaluate(c: &mut Criterion) {
    let json = request();
    let typed = scale_units_core::parse_request(&json).expect("the example parses");
    let bytes = component();
    let policy = Policy::from_bytes(&bytes).expect("the component loads");
    let fresh = Policy::builder().max_idle_instances(0).load(&bytes).expect("the component loads");

    let mut group = c.benchmark_group("evaluate");
    group.bench_function("native typed", |b| b.iter(|| scale_units_core::evaluate(black_box(&typed))));
    group.bench_function("native json", |b| b.iter(|| scale_units_core::evaluate_json(black_box(&json))));
    group.bench_function("component typed", |b| b.iter(|| policy.evaluate(black_box(&typed))));
    group.bench_function("component json", |b| b.iter(|| policy.evaluate_json(black_box(&json))));
    group.bench_function("component json, fresh instance per call", |b| {
        b.iter(|| fresh.evaluate_json(black_box(&json)))
    });
    group.finish();
}

fn load(c: &mut Criterion) {
    let bytes = component();
    let policy = Policy::from_bytes(&bytes).expect("the component loads");
    let cache = std::env::temp_dir().join(format!("scale-units-bench-cache-{}", std::process::id()));
    Policy::builder().cache_dir(&cache).load(&bytes).expect("fills the cache");

    let mut group = c.benchmark_group("load");
    group.sample_size(10).measurement_time(Duration::from_secs(20));
    group.bench_function("compile (no cache)", |b| b.iter(|| Policy::from_bytes(black_box(&bytes))));
    group.finish();

    let mut group = c.benchmark_group("load");
    group.bench_function("precompiled (cache hit)", |b| {
        b.iter(|| Policy::builder().cache_dir(&cache).load(black_box(&bytes)))
    });
    group.bench_function("instantiate", |b| b.iter(|| policy.instantiate_once()));
    group.finish();
    let _ = std::fs::remove_dir_all(&cache);
}

criterion_group!(benches, evaluate, load);
criterion_main!(benches);
