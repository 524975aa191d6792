//! `Policy::evaluate_batch` and `evaluate_batch_json` (the WIT `evaluate-batch` and
//! `evaluate-batch-json`): one batch of every vector's request gives, in order, exactly what the
//! single calls and the native core give, errors included; and the contract cache inside the
//! component does not change a result when the same contracts come back.
#![allow(
    clippy::panic,
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "test code: a failed expectation is a test failure"
)]

mod common;

use std::path::Path;

use common::policy;
use scale_units_core::conformance::Vector;
use scale_units_host::HostError;

fn vector_requests() -> Vec<String> {
    scale_units_host::vector_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/vectors"))
        .expect("the vector folder")
        .iter()
        .filter_map(|file| Vector::parse(&std::fs::read_to_string(file).ok()?).ok())
        .map(|vector| vector.request_text)
        .collect()
}

type Outcome = Result<String, (String, String, String)>;

fn native(request: &str) -> Outcome {
    scale_units_core::evaluate_json(request).map_err(|e| (e.code().to_string(), e.message().into(), e.path().into()))
}

#[test]
fn a_json_batch_of_every_vector_matches_single_calls_and_the_core() {
    let requests = vector_requests();
    assert!(requests.len() >= 12, "found {} vectors", requests.len());
    // Twice: the second batch finds every valid contract in the component's cache.
    for round in ["first", "second"] {
        let batch = policy().evaluate_batch_json(&requests).expect("no host error");
        assert_eq!(batch.len(), requests.len());
        for (request, outcome) in requests.iter().zip(batch) {
            let outcome: Outcome = outcome
                .map(|evaluated| evaluated.decision)
                .map_err(|e| (e.code().to_string(), e.message().into(), e.path().into()));
            let single: Outcome = policy()
                .evaluate_json(request)
                .expect("no host error")
                .map(|evaluated| evaluated.decision)
                .map_err(|e| (e.code().to_string(), e.message().into(), e.path().into()));
            assert_eq!(outcome, single, "{round} batch vs single call:\n{request}");
            assert_eq!(outcome, native(request), "{round} batch vs native core:\n{request}");
        }
    }
}

#[test]
fn a_typed_batch_matches_the_core() {
    let requests: Vec<_> =
        vector_requests().iter().filter_map(|text| scale_units_core::parse_request(text).ok()).collect();
    assert!(requests.len() >= 12);
    let batch = policy().evaluate_batch(&requests).expect("no host error");
    assert_eq!(batch.len(), requests.len());
    for (request, outcome) in requests.iter().zip(batch) {
        assert_eq!(outcome.map(|evaluated| evaluated.decision), scale_units_core::evaluate(request));
    }
    assert!(policy().evaluate_batch(&[]).expect("no host error").is_empty());
}

#[test]
fn a_json_batch_refuses_an_oversized_text_before_the_component() {
    let huge = " ".repeat(scale_units_host::MAX_REQUEST_BYTES + 1);
    let requests = [common::good_request(), huge];
    assert!(matches!(policy().evaluate_batch_json(&requests), Err(HostError::RequestTooLarge { .. })));
}
