//! The service while its watched policy folder changes under it: files half-written, replaced,
//! renamed and deleted between and during swaps. Nothing is lost: every evaluation is answered
//! by a staged, gated policy, and what is not a whole component is never staged.
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

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::{component_bytes, good_request};
use scale_units_host::{Candidate, Policy, PolicyRegistry};
use scale_units_server::service::{Service, ServiceConfig};
use sha2::{Digest, Sha256};
use support::Client;

const AUTH: (&str, &str) = ("authorization", "Bearer test-token");

fn digest(bytes: &[u8]) -> String {
    format!("sha256:{:x}", Sha256::digest(bytes))
}

fn staged(client: &mut Client) -> BTreeSet<String> {
    let reply = client.get("/v1/policies").unwrap();
    assert_eq!(reply.status, 200, "{}", reply.body);
    reply.json()["staged"].as_array().unwrap().iter().map(|s| s["digest"].as_str().unwrap().to_owned()).collect()
}

#[test]
fn a_policy_folder_that_changes_during_swaps_loses_nothing() {
    let folder = std::env::temp_dir().join(format!("scale-units-watch-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&folder);
    std::fs::create_dir_all(&folder).unwrap();

    let a_bytes = component_bytes().to_vec();
    let b_bytes = common::variant_build(&a_bytes, "watched");
    let (a, b) = (digest(&a_bytes), digest(&b_bytes));
    let half = &b_bytes[..b_bytes.len() / 2];

    let registry = PolicyRegistry::builder()
        .policy_builder(Policy::builder().cache_dir(std::env::temp_dir().join("scale-units-test-cache")))
        .build();
    assert_eq!(registry.stage(Candidate::new(&a_bytes)).unwrap().digest, a);
    registry.activate(&a).unwrap();
    let config = ServiceConfig {
        token: Some("test-token".to_owned()),
        shutdown_delay: Duration::ZERO,
        watch_dir: Some(folder.clone()),
        watch_interval: Duration::from_millis(50),
        ..ServiceConfig::default()
    };
    let running = support::Running::start(Service::new(Arc::new(registry), config), 2);
    let address = running.address;

    // Clients evaluate throughout; every answer must come from A or B.
    let done = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..3)
        .map(|_| {
            let done = Arc::clone(&done);
            let (a, b, request) = (a.clone(), b.clone(), good_request());
            std::thread::spawn(move || {
                let mut client = Client::new(address);
                let mut answers = 0usize;
                while !done.load(Ordering::Relaxed) || answers < 10 {
                    let reply = client.post("/v1/evaluate", &[], request.as_bytes()).expect("no failed request");
                    assert_eq!(reply.status, 200, "{}", reply.body);
                    let policy = reply.json()["policy"]["digest"].as_str().unwrap().to_owned();
                    assert!(policy == a || policy == b, "answered by {policy}");
                    answers += 1;
                }
                answers
            })
        })
        .collect();

    // A component copied in slowly: half of it first, junk beside it, then the whole file.
    let candidate = folder.join("candidate.wasm");
    std::fs::write(&candidate, half).unwrap();
    std::fs::write(folder.join("junk.wasm"), b"\0asm not really").unwrap();
    std::thread::sleep(Duration::from_millis(300));
    std::fs::write(&candidate, &b_bytes).unwrap();
    let mut client = Client::new(address).retrying_stale_connections();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !staged(&mut client).contains(&b) {
        assert!(Instant::now() < deadline, "the whole candidate was never staged");
        std::thread::sleep(Duration::from_millis(100));
    }

    // Swap back and forth while the folder keeps changing.
    let mut last = a.clone();
    for round in 0..20 {
        match round % 4 {
            0 => std::fs::write(&candidate, half).unwrap(),
            1 => std::fs::write(&candidate, &b_bytes).unwrap(),
            2 => std::fs::rename(&candidate, folder.join("renamed.wasm")).unwrap(),
            _ => {
                std::fs::remove_file(folder.join("renamed.wasm")).unwrap();
                std::fs::write(folder.join("junk.wasm"), format!("junk {round}")).unwrap();
            }
        }
        last = if round % 2 == 0 { b.clone() } else { a.clone() };
        let reply = client.post(&format!("/v1/policies/{last}/activate"), &[AUTH], b"").unwrap();
        assert_eq!(reply.status, 200, "{}", reply.body);
        std::thread::sleep(Duration::from_millis(60));
    }
    done.store(true, Ordering::Relaxed);
    let answers: usize = clients.into_iter().map(|client| client.join().unwrap()).sum();

    // Only whole, gated components were ever staged; the last activation is the one serving.
    let staged = staged(&mut client);
    assert_eq!(staged, BTreeSet::from([a.clone(), b.clone()]), "only A and B are staged");
    assert!(!staged.contains(&digest(half)));
    let reply = client.post("/v1/evaluate", &[], good_request().as_bytes()).unwrap();
    assert_eq!(reply.json()["policy"]["digest"].as_str().unwrap(), last);
    eprintln!("{answers} answers while the folder changed 20 times around 20 swaps");
    running.stop();
    let _ = std::fs::remove_dir_all(&folder);
}
