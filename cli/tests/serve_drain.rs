//! The real binary (`scale-units serve`) draining on SIGTERM: `/ready` flips first, `/health`
//! stays 200, and every request in flight is answered before the process exits 0.
#![allow(
    clippy::panic,
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "test code: a failed expectation is a test failure"
)]

#[path = "../../host-rs/tests/common/mod.rs"]
mod common;
#[path = "../../server/tests/support/mod.rs"]
mod support;

use std::io::BufRead;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::good_request;
use support::Client;

#[test]
fn sigterm_flips_ready_first_and_drains_every_request_in_flight() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_scale-units"))
        .args(["serve", "--listen", "127.0.0.1:0", "--shutdown-delay-ms", "1500", "--drain-timeout-ms", "20000"])
        .args(["--max-body-bytes", "67108864", "--max-batch", "16000"])
        .env("SCALE_UNITS_CACHE_DIR", std::env::temp_dir().join("scale-units-test-cache"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    stdout.read_line(&mut line).unwrap();
    let address: std::net::SocketAddr = line.trim().strip_prefix("listening on ").unwrap().parse().unwrap();
    // The rest of stdout is the decision audit log (read, as a container runtime does): one line
    // per evaluation, every one written before the process exits.
    let audit = std::thread::spawn(move || {
        let mut evaluations = 0usize;
        for line in stdout.lines() {
            let line = line.unwrap();
            if line.starts_with('{') && line.contains("\"source\":\"evaluate\"") {
                evaluations += 1;
            }
        }
        evaluations
    });

    // A batch that takes a while: it must be in flight when the listener closes (16 000 decisions,
    // about 50 MB: well over the 500 ms it needs even as evaluation gets faster).
    let big = format!("[{}]", vec![good_request(); 16000].join(","));
    let ready_flipped = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..3)
        .map(|_| {
            let ready_flipped = Arc::clone(&ready_flipped);
            std::thread::spawn(move || {
                let mut client = Client::new(address);
                let mut answered = 0;
                // Like a load balancer: new requests stop once /ready has been seen failing.
                while !ready_flipped.load(Ordering::SeqCst) {
                    let reply = client.post("/v1/evaluate", &[], good_request().as_bytes()).expect("not dropped");
                    assert_eq!(reply.status, 200);
                    answered += 1;
                }
                answered
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let signalled = Instant::now();
    let mut probe = Client::new(address);
    loop {
        let ready = probe.get("/ready").expect("the listener is open during the delay");
        if ready.status == 503 {
            break;
        }
        assert!(signalled.elapsed() < Duration::from_secs(5), "/ready never flipped");
    }
    assert_eq!(probe.get("/health").unwrap().status, 200, "/health stays 200");
    ready_flipped.store(true, Ordering::SeqCst);
    // Started during the delay (1500 ms from the signal), still running when the drain begins.
    // 500 ms before the listener closes; the batch takes longer than that (about 2 s in a debug
    // build on 2 cores; 4 000 requests stopped being enough once evaluation got 3x faster).
    std::thread::sleep((signalled + Duration::from_millis(1000)).saturating_duration_since(Instant::now()));
    let slow = std::thread::spawn(move || {
        let mut client = Client::new(address);
        let started = Instant::now();
        let reply = client.post("/v1/evaluate", &[], big.as_bytes()).expect("the request in flight is not dropped");
        (reply.status, reply.json()["results"].as_array().map(Vec::len), started.elapsed())
    });
    let answered: usize = clients.into_iter().map(|client| client.join().unwrap()).sum();
    let (status, results, took) = slow.join().unwrap();
    assert_eq!((status, results), (200, Some(16000)));
    let exit = child.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(exit.success(), "{exit:?}\n{stderr}");
    assert!(stderr.contains("drained, stopped"), "{stderr}");
    let in_flight: usize = stderr
        .split("draining ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|count| count.parse().ok())
        .expect("the drain line");
    assert!(in_flight >= 1, "the batch was in flight when the listener closed:\n{stderr}");
    assert!(answered > 0);
    let evaluations = audit.join().unwrap();
    assert!(evaluations >= answered + 16000, "{evaluations} audit lines for {answered} + 16000 decisions");
    eprintln!("{answered} answered before /ready flipped; the 16000-request batch took {took:?}\n{stderr}");
    // After the drain, nothing listens.
    assert!(Client::new(address).get("/health").is_err());
}
