//! Hostile candidate components posted to the decision service: each is refused with its code
//! within the hang bound, and the service keeps serving the good policy.
#![allow(
    clippy::panic,
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "test code: a failed expectation is a test failure"
)]

#[path = "../../host-rs/tests/common/mod.rs"]
mod common;
mod support;

use std::time::{Duration, Instant};

use common::{Behaviour, GOOD_INFO, Info, component_bytes, good_request, hostile_component};
use scale_units_host::Policy;

/// Far above any refusal (as in `host-rs/tests/hostile.rs`); a hang would be caught here.
const HANG: Duration = Duration::from_secs(60);

#[test]
fn hostile_candidates_are_refused_by_the_service_which_keeps_serving() {
    use scale_units_host::{Candidate, PolicyRegistry};
    use scale_units_server::service::{Service, ServiceConfig};
    let registry = PolicyRegistry::builder()
        .policy_builder(Policy::builder().cache_dir(std::env::temp_dir().join("scale-units-test-cache")))
        .build();
    let good = registry.stage(Candidate::new(component_bytes())).expect("stages").digest;
    registry.activate(&good).expect("activates");
    let config =
        ServiceConfig { token: Some("t".to_owned()), shutdown_delay: Duration::ZERO, ..ServiceConfig::default() };
    let running = support::Running::start(Service::new(std::sync::Arc::new(registry), config), 2);
    let mut client = support::Client::new(running.address).retrying_stale_connections();
    let auth = [("authorization", "Bearer t")];

    let wasi = "package test:hostile;\n\
         package wasi:random@0.2.0 { interface random { get-random-u64: func() -> u64; } }\n\
         world with-wasi {\n  import wasi:random/random@0.2.0;\n  export scale-units:evaluator/evaluator@0.3.0;\n}\n";
    let mut truncated = component_bytes().to_vec();
    truncated.truncate(truncated.len() / 3);
    let call_time = ["conformance_failed", "component_trap"];
    let cases: Vec<(&str, Vec<u8>, &[&str])> = vec![
        ("infinite loop", hostile_component(Behaviour::Loop, &GOOD_INFO, None), &call_time),
        ("unbounded memory growth", hostile_component(Behaviour::GrowMemory, &GOOD_INFO, None), &call_time),
        ("deep recursion", hostile_component(Behaviour::Recurse, &GOOD_INFO, None), &call_time),
        (
            "100 MB output",
            hostile_component(Behaviour::HugeOutput { pages: 1600, len: 100_000_000 }, &GOOD_INFO, None),
            &call_time,
        ),
        ("output not UTF-8", hostile_component(Behaviour::BadUtf8Output, &GOOD_INFO, None), &call_time),
        ("WASI import", hostile_component(Behaviour::Trap, &GOOD_INFO, Some(wasi)), &["component_imports"]),
        ("another world", common::other_world_component(), &["wrong_world"]),
        (
            "schema version \"2\"",
            hostile_component(Behaviour::Trap, &Info { schema_version: "2", ..GOOD_INFO }, None),
            &["incompatible"],
        ),
        ("truncated bytes", truncated, &["invalid_component"]),
        ("not wasm", b"\0asm but not really".to_vec(), &["invalid_component"]),
    ];
    for (case, bytes, codes) in cases {
        let started = Instant::now();
        let reply = client.post("/v1/policies", &auth, &bytes).expect("a reply");
        let elapsed = started.elapsed();
        let code = reply.json()["error"]["code"].as_str().unwrap_or_default().to_owned();
        println!(
            "{:<58} {:>9.1} ms  {} {code}",
            format!("service: {case}"),
            elapsed.as_secs_f64() * 1000.0,
            reply.status
        );
        assert!(elapsed < HANG, "{case} took {elapsed:?}");
        assert_eq!(reply.status, 422, "{case}: {}", reply.body);
        assert!(codes.contains(&code.as_str()), "{case}: {}", reply.body);
        let reply = client.post("/v1/evaluate", &[], good_request().as_bytes()).expect("a reply");
        assert_eq!(reply.status, 200, "{case}: still serving: {}", reply.body);
        assert_eq!(reply.json()["policy"]["digest"].as_str(), Some(good.as_str()), "{case}");
    }
    running.stop();
}
