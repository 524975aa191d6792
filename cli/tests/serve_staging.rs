//! Staging through the real binary (issue 19, item 4): a candidate is checked for what can be
//! checked without compiling (a component, importing nothing, exporting the evaluator) before
//! wasmtime compiles it, and nothing a candidate that is refused leaves in the precompiled cache.
#![allow(
    clippy::panic,
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "test code: a failed expectation is a test failure"
)]

mod binary;
#[path = "../../host-rs/tests/common/mod.rs"]
mod common;

use std::net::SocketAddr;
use std::path::Path;
use std::time::Instant;

use binary::{Serve, Served};
use common::{Behaviour, GOOD_INFO, hostile_component, other_world_component, variant_build};
use http_body_util::{BodyExt as _, Full};
use hyper::body::Bytes;
use serde_json::Value;

const TOKEN: &str = "staging-test-token";

/// `scale-units serve` with its own precompiled cache folder `dir/cache`, owning `dir`.
fn serve(dir: &Path) -> Served {
    std::fs::write(dir.join("token"), TOKEN).unwrap();
    Serve::new(["--listen", "127.0.0.1:0", "--request-timeout-ms", "600000", "--token-file"])
        .arg(dir.join("token"))
        .env("SCALE_UNITS_CACHE_DIR", dir.join("cache"))
        .owning(dir)
        .start()
}

/// `POST /v1/policies` with `body`: status, JSON answer and the time until the answer.
async fn stage(address: SocketAddr, body: &[u8]) -> (u16, Value, f64) {
    let started = Instant::now();
    let tcp = tokio::net::TcpStream::connect(address).await.unwrap();
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tcp)).await.unwrap();
    tokio::spawn(connection);
    let request = hyper::Request::builder()
        .method("POST")
        .uri("/v1/policies")
        .header("host", "loopback")
        .header("authorization", format!("Bearer {TOKEN}"))
        .body(Full::new(Bytes::from(body.to_vec())))
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    let status = response.status().as_u16();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let answer = serde_json::from_slice(&bytes).unwrap_or_else(|error| panic!("{error}: {bytes:?}"));
    (status, answer, started.elapsed().as_secs_f64() * 1000.0)
}

/// A decision with an action and a reason SPEC does not have.
const INVENTED: &str = r#"{"schema_version":"1","action":"teleport","current_replicas":3,"desired_replicas":3,"reasons":["invented_reason"]}"#;

/// `GET /metrics` (public on loopback).
fn metrics(address: SocketAddr) -> String {
    use std::io::{Read as _, Write as _};
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    stream.write_all(b"GET /metrics HTTP/1.1\r\nhost: loopback\r\nconnection: close\r\n\r\n").unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    text
}

/// The names in the cache folder, sorted.
fn cached(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir.join("cache"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_candidates_are_never_compiled_into_the_cache() {
    let dir = std::env::temp_dir().join(format!("scale-units-staging-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let served = serve(&dir);
    // The active policy, compiled at start, is the one entry.
    let before = cached(&dir);
    assert_eq!(before.len(), 1, "{before:?}");

    let wasi = "package test:hostile;\n\
         package wasi:random@0.2.0 { interface random { get-random-u64: func() -> u64; } }\n\
         world with-wasi {\n  import wasi:random/random@0.2.0;\n  export scale-units:evaluator/evaluator@0.3.0;\n}\n";
    let core_module = wat::parse_str("(module (func (export \"evaluate-json\")))").unwrap();
    let cases: [(&str, Vec<u8>, &str, &str); 5] = [
        (
            "imports WASI",
            hostile_component(Behaviour::Trap, &GOOD_INFO, Some(wasi)),
            "component_imports",
            "wasi:random/random@0.2.0",
        ),
        ("a core module", core_module, "invalid_component", "core WebAssembly module"),
        ("another world", other_world_component(), "wrong_world", "other:thing/api@1.0.0"),
        // Passes every check of the load, fails the conformance gate: compiled, never cached.
        ("traps on every call", hostile_component(Behaviour::Trap, &GOOD_INFO, None), "conformance_failed", ""),
        // Invents an action and a reason (issue 19: the decision metric's labels): refused by
        // the gate before it can serve; the labels are closed lists besides (metrics.rs).
        (
            "invents its reasons",
            hostile_component(Behaviour::Answer(INVENTED), &GOOD_INFO, None),
            "conformance_failed",
            "",
        ),
    ];
    for (case, bytes, code, says) in cases {
        let (status, answer, ms) = stage(served.http, &bytes).await;
        eprintln!("{case:<24} {status} {code:<20} {ms:>8.1} ms");
        assert_eq!((status, answer["error"]["code"].as_str()), (422, Some(code)), "{case}: {answer}");
        assert!(answer["error"]["message"].as_str().unwrap().contains(says), "{case}: {answer}");
        assert_eq!(cached(&dir), before, "{case} left something in the cache");
    }

    let metrics = metrics(served.http);
    assert!(metrics.contains("scale_units_responses_total"), "{metrics}");
    assert!(!metrics.contains("teleport") && !metrics.contains("invented_reason"), "{metrics}");

    // A candidate that passes is stored: the folder above is the one the service writes.
    let component = std::fs::read(scale_units_host::default_component_path().unwrap()).unwrap();
    let (status, answer, ms) = stage(served.http, &variant_build(&component, "staging")).await;
    eprintln!("{:<24} {status} {:<20} {ms:>8.1} ms", "a variant of the build", "staged");
    assert_eq!(status, 201, "{answer}");
    assert_eq!(answer["cache"], "stored", "{answer}");
    let after = cached(&dir);
    assert_eq!(after.len(), 2, "{after:?}");
    let digest = answer["digest"].as_str().unwrap().strip_prefix("sha256:").unwrap();
    assert!(after.iter().any(|name| name.starts_with(digest)), "{after:?}");
}
