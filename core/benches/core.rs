//! Native core costs, the baseline every face is compared with (BENCHMARKS.md).

#![allow(clippy::unwrap_used, missing_docs, reason = "a benchmark fails by panicking")]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use scale_units_core::conformance::Vector;
use scale_units_core::{
    derive, derive_json, diagnose_request_json, evaluate, evaluate_json, parse_request, validate_contract,
};

const T01: &str = include_str!("../../tests/vectors/reference/t01-mcp-target-tracks-deterministically.json");
/// A request refused by a late check of SPEC §4.3 (a required axis without a demand): the
/// first-fault path through nearly the whole contract validation.
const LATE_FAULT: &str = include_str!("../../tests/vectors/validation/required-axis-without-demand.json");

fn core(c: &mut Criterion) {
    let request = Vector::parse(T01).unwrap().request_text;
    let typed = parse_request(&request).unwrap();
    let mut group = c.benchmark_group("native");
    group.bench_function("evaluate_json", |b| b.iter(|| evaluate_json(black_box(&request)).unwrap()));
    group.bench_function("evaluate_typed", |b| b.iter(|| evaluate(black_box(&typed)).unwrap()));
    group.bench_function("derive_json", |b| b.iter(|| derive_json(black_box(&request)).unwrap()));
    group.bench_function("derive_typed", |b| b.iter(|| derive(black_box(&typed)).unwrap()));
    group.bench_function("parse_request", |b| b.iter(|| parse_request(black_box(&request)).unwrap()));
    group.bench_function("validate_contract", |b| b.iter(|| validate_contract(black_box(&typed.contract)).unwrap()));
    let invalid = Vector::parse(LATE_FAULT).unwrap().request_text;
    group.bench_function("evaluate_json_invalid", |b| b.iter(|| evaluate_json(black_box(&invalid)).unwrap_err()));
    // The diagnosis: every check, every fault with its hint (not on the evaluation path).
    group.bench_function("diagnose_request_json_valid", |b| b.iter(|| diagnose_request_json(black_box(&request))));
    group.bench_function("diagnose_request_json_invalid", |b| b.iter(|| diagnose_request_json(black_box(&invalid))));
    group.bench_function("sha256_1KiB", |b| {
        use sha2::Digest;
        let bytes = vec![b'x'; 1024];
        b.iter(|| sha2::Sha256::digest(black_box(&bytes)))
    });
    group.finish();
}

criterion_group!(benches, core);
criterion_main!(benches);
