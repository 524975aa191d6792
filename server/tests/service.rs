//! The decision service on loopback: swaps under load with zero failed requests and every answer
//! attributed to the policy active in its window; refusals over HTTP; limits; metrics. (The
//! real binary draining on SIGTERM: `cli/tests/serve_drain.rs`.)
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

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Behaviour, GOOD_INFO, component_bytes, good_request, hostile_component};
use scale_units_host::{Candidate, Policy, PolicyRegistry};
use scale_units_server::service::{Service, ServiceConfig};
use support::{Client, Running};

const TOKEN: &str = "test-token";
const AUTH: (&str, &str) = ("authorization", "Bearer test-token");

/// The service with the built component (A) active and its variant (B) staged.
fn service(config: ServiceConfig) -> (Running, String, String) {
    let registry = PolicyRegistry::builder()
        .policy_builder(Policy::builder().cache_dir(std::env::temp_dir().join("scale-units-test-cache")))
        .build();
    let a = registry.stage(Candidate::new(component_bytes())).unwrap().digest;
    let b = registry.stage(Candidate::new(&common::variant_build(component_bytes(), "b"))).unwrap().digest;
    assert_ne!(a, b);
    registry.activate(&a).unwrap();
    let config = ServiceConfig { token: Some(TOKEN.to_owned()), shutdown_delay: Duration::ZERO, ..config };
    (Running::start(Service::new(Arc::new(registry), config), 2), a, b)
}

#[test]
fn swapping_a_hundred_times_under_load_fails_nothing_and_attributes_every_answer() {
    let (running, a, b) = service(ServiceConfig::default());
    let address = running.address;
    let single = good_request();
    let batch = format!("[{single},{},{single}]", common::example("query-reader/request.json"));
    let done = Arc::new(AtomicBool::new(false));
    // activation number -> digest, as the swapper was told.
    let swaps = Arc::new(Mutex::new(BTreeMap::from([(1u64, a.clone())])));

    let clients: Vec<_> = (0..4)
        .map(|index| {
            let (done, single, batch) = (Arc::clone(&done), single.clone(), batch.clone());
            std::thread::spawn(move || {
                let mut client = Client::new(address);
                // (activation, digest) of every answer, in order.
                let mut seen = Vec::new();
                let mut sent = 0usize;
                while !done.load(Ordering::Relaxed) || sent < 20 {
                    let body = if (sent + index).is_multiple_of(3) { &batch } else { &single };
                    let reply = client.post("/v1/evaluate", &[], body.as_bytes()).expect("no failed request");
                    assert_eq!(reply.status, 200, "{}", reply.body);
                    let json = reply.json();
                    let results = match json.get("results") {
                        Some(results) => results.as_array().unwrap().clone(),
                        None => vec![json],
                    };
                    let policies: Vec<(u64, String)> = results
                        .iter()
                        .map(|result| {
                            assert!(result["decision"]["action"].is_string(), "{result}");
                            let policy = &result["policy"];
                            (policy["activation"].as_u64().unwrap(), policy["digest"].as_str().unwrap().to_owned())
                        })
                        .collect();
                    // A batch is answered by one policy.
                    assert!(policies.windows(2).all(|pair| pair[0] == pair[1]), "{policies:?}");
                    seen.push(policies[0].clone());
                    sent += 1;
                }
                seen
            })
        })
        .collect();

    let swapper = {
        let (swaps, a, b) = (Arc::clone(&swaps), a.clone(), b.clone());
        std::thread::spawn(move || {
            let mut client = Client::new(address);
            let mut micros = Vec::new();
            for round in 0..120 {
                let digest = if round % 2 == 0 { &b } else { &a };
                let reply = client.post(&format!("/v1/policies/{digest}/activate"), &[AUTH], b"").unwrap();
                assert_eq!(reply.status, 200, "{}", reply.body);
                let json = reply.json();
                swaps.lock().unwrap().insert(json["activation"].as_u64().unwrap(), digest.clone());
                micros.push(json["swap_micros"].as_u64().unwrap());
                std::thread::sleep(Duration::from_millis(2));
            }
            micros
        })
    };
    let micros = swapper.join().unwrap();
    done.store(true, Ordering::Relaxed);
    let swaps = swaps.lock().unwrap().clone();
    assert_eq!(swaps.len(), 121);
    let mut answers = 0;
    let mut activations_seen = std::collections::BTreeSet::new();
    for client in clients {
        let seen = client.join().unwrap();
        answers += seen.len();
        // Attribution: the digest is the one that activation installed, and a client never sees
        // an older activation after a newer one.
        for (activation, digest) in &seen {
            assert_eq!(swaps.get(activation), Some(digest), "activation {activation}");
            activations_seen.insert(*activation);
        }
        assert!(seen.windows(2).all(|pair| pair[0].0 <= pair[1].0), "out of order: {seen:?}");
    }
    assert!(activations_seen.len() > 2, "answers came from {} activations", activations_seen.len());
    eprintln!("{answers} answers over {} activations seen of 121; swap median {} µs", activations_seen.len(), {
        let mut m = micros.clone();
        m.sort_unstable();
        m[m.len() / 2]
    });
    let metrics = Client::new(address).get("/metrics").unwrap();
    assert!(metrics.body.contains(&format!("scale_units_active_policy_info{{digest=\"{a}\"")), "A is active last");
    assert!(metrics.body.contains("scale_units_policy_activation 121"));
    let report = running.stop();
    assert!(report.drained);
}

#[test]
fn policy_changes_need_the_token_and_refused_candidates_never_serve() {
    let (running, a, b) = service(ServiceConfig { max_body_bytes: 64 << 10, max_batch: 4, ..ServiceConfig::default() });
    let mut client = Client::new(running.address).retrying_stale_connections();
    let evaluate = |client: &mut Client| {
        let reply = client.post("/v1/evaluate", &[], good_request().as_bytes()).unwrap();
        assert_eq!(reply.status, 200, "{}", reply.body);
        reply.json()["policy"]["digest"].as_str().unwrap().to_owned()
    };
    assert_eq!(evaluate(&mut client), a);

    // Without or with a wrong token: 401, nothing changes.
    for headers in [&[][..], &[("authorization", "Bearer nope")][..]] {
        let reply = client.post(&format!("/v1/policies/{b}/activate"), headers, b"").unwrap();
        assert_eq!((reply.status, reply.json()["error"]["code"].as_str().unwrap()), (401, "unauthorized"));
        let reply = client.post("/v1/policies", headers, component_bytes()).unwrap();
        assert_eq!(reply.status, 401);
    }
    assert_eq!(evaluate(&mut client), a);

    // Refused candidates over HTTP: wrong digest, wrong answers, a trap, an import.
    let wrong = hostile_component(Behaviour::Answer(r#"{"action":"hold"}"#), &GOOD_INFO, None);
    let trap = hostile_component(Behaviour::Trap, &GOOD_INFO, None);
    let import = hostile_component(
        Behaviour::Trap,
        &GOOD_INFO,
        Some(
            "package test:hostile;\nworld with-clock {\n  import now: func() -> u64;\n  export scale-units:evaluator/evaluator@0.3.0;\n}\n",
        ),
    );
    let variant_c = common::variant_build(component_bytes(), "c");
    let zeros = format!("sha256:{}", "0".repeat(64));
    type Case<'a> = (&'a [u8], Vec<(&'a str, &'a str)>, &'a str);
    let cases: [Case<'_>; 4] = [
        (&variant_c, vec![AUTH, ("x-scale-units-expected-digest", &zeros)], "digest_mismatch"),
        (&wrong, vec![AUTH], "conformance_failed"),
        (&trap, vec![AUTH], "conformance_failed"),
        (&import, vec![AUTH], "component_imports"),
    ];
    for (bytes, headers, code) in cases {
        let reply = client.post("/v1/policies", &headers, bytes).unwrap();
        assert_eq!((reply.status, reply.json()["error"]["code"].as_str().unwrap()), (422, code), "{}", reply.body);
        let digest = scale_units_host::registry::digest_of(bytes);
        let reply = client.post(&format!("/v1/policies/{digest}/activate"), &[AUTH], b"").unwrap();
        assert_eq!((reply.status, reply.json()["error"]["code"].as_str().unwrap()), (404, "unknown_policy"));
        assert_eq!(evaluate(&mut client), a);
    }

    // Staging the variant again over HTTP is idempotent; activate, roll back.
    let variant = common::variant_build(component_bytes(), "b");
    let reply = client.post("/v1/policies", &[AUTH], &variant).unwrap();
    assert_eq!((reply.status, reply.json()["digest"].as_str().unwrap()), (201, b.as_str()));
    assert_eq!(client.post(&format!("/v1/policies/{b}/activate"), &[AUTH], b"").unwrap().status, 200);
    assert_eq!(evaluate(&mut client), b);
    let reply = client.post("/v1/policies/rollback", &[AUTH], b"").unwrap();
    assert_eq!((reply.status, reply.json()["digest"].as_str().unwrap()), (200, a.as_str()));
    assert_eq!(evaluate(&mut client), a);

    // Errors are JSON with the SPEC's codes; limits are JSON too.
    let reply = client.post("/v1/evaluate", &[], b"{\"contract\": ").unwrap();
    assert_eq!((reply.status, reply.json()["error"]["code"].as_str().unwrap()), (400, "invalid_json"));
    let reply = client.post("/v1/evaluate", &[], b"{}").unwrap();
    assert_eq!((reply.status, reply.json()["error"]["code"].as_str().unwrap()), (422, "invalid_field"));
    let reply = client.post("/v1/evaluate", &[], &vec![b' '; 65 << 10]).unwrap();
    assert_eq!((reply.status, reply.json()["error"]["code"].as_str().unwrap()), (413, "payload_too_large"));
    let five = format!("[{}]", ["{}"; 5].join(","));
    let reply = client.post("/v1/evaluate", &[], five.as_bytes()).unwrap();
    assert_eq!((reply.status, reply.json()["error"]["code"].as_str().unwrap()), (413, "batch_too_large"));
    let reply = client.post("/v1/validate", &[], b"{}").unwrap();
    assert_eq!((reply.status, reply.json()["error"]["code"].as_str().unwrap()), (422, "invalid_field"));

    // The listing shows history with every refusal.
    let listing = client.get("/v1/policies").unwrap().json();
    assert_eq!(listing["active"]["digest"].as_str(), Some(a.as_str()));
    let refused = listing["history"].as_array().unwrap().iter().filter(|event| event["event"] == "refused").count();
    assert_eq!(refused, 4);
    let metrics = client.get("/metrics").unwrap().body;
    for needle in [
        "scale_units_requests_in_flight ",
        "scale_units_request_duration_seconds_bucket{route=\"evaluate\",le=\"+Inf\"}",
        "scale_units_decisions_total{action=\"scale_up\",reason=\"target_tracking\"}",
        "scale_units_evaluation_errors_total{code=\"invalid_field\"}",
        "scale_units_ready 1",
    ] {
        assert!(metrics.contains(needle), "{needle} in\n{metrics}");
    }
    running.stop();
}
