//! The decision service under faulty clients: clients that disconnect mid-request (in the
//! headers, in the body, while the answer is computed), clients that send one byte at a time, and
//! connections left open and idle. Nothing is lost: every good request afterwards, and alongside,
//! is decided by the active policy.
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

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{component_bytes, good_request};
use scale_units_host::{Candidate, Policy, PolicyRegistry};
use scale_units_server::service::{Service, ServiceConfig};

fn service() -> support::Running {
    let registry = PolicyRegistry::builder()
        .policy_builder(Policy::builder().cache_dir(std::env::temp_dir().join("scale-units-test-cache")))
        .build();
    let digest = registry.stage(Candidate::new(component_bytes())).expect("stages").digest;
    registry.activate(&digest).expect("activates");
    let config = ServiceConfig { shutdown_delay: Duration::ZERO, ..ServiceConfig::default() };
    support::Running::start(Service::new(Arc::new(registry), config), 2)
}

fn assert_decides(client: &mut support::Client) {
    let reply = client.post("/v1/evaluate", &[], good_request().as_bytes()).expect("a reply");
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.json()["decision"]["action"], "scale_up", "{}", reply.body);
}

fn head(length: usize) -> String {
    format!(
        "POST /v1/evaluate HTTP/1.1\r\nhost: loopback\r\ncontent-type: application/json\r\ncontent-length: {length}\r\n\r\n"
    )
}

#[test]
fn clients_that_disconnect_mid_request_lose_nothing() {
    let running = service();
    let mut client = support::Client::new(running.address);
    let request = good_request();
    let full = format!("{}{request}", head(request.len()));
    // Cut after a part of the headers, after the headers, halfway through the body, and after
    // the whole request but before reading the answer; a hundred times each.
    let cuts = [20, head(request.len()).len(), head(request.len()).len() + request.len() / 2, full.len()];
    for round in 0..100 {
        for &cut in &cuts {
            let mut stream = TcpStream::connect(running.address).expect("connects");
            stream.write_all(&full.as_bytes()[..cut]).expect("writes");
            drop(stream);
        }
        if round % 25 == 0 {
            assert_decides(&mut client);
        }
    }
    assert_decides(&mut client);
    let metrics = client.get("/metrics").expect("metrics").body;
    assert!(metrics.contains("scale_units_ready 1"), "{metrics}");
    running.stop();
}

#[test]
fn slow_and_idle_clients_do_not_hold_up_the_others() {
    let running = service();
    // Fifty connections: half send a partial header and go quiet, half stay idle.
    let idle: Vec<TcpStream> = (0..50)
        .map(|index| {
            let mut stream = TcpStream::connect(running.address).expect("connects");
            if index % 2 == 0 {
                stream.write_all(b"POST /v1/evaluate HTTP/1.1\r\nhost: lo").expect("writes");
            }
            stream
        })
        .collect();
    // One client sends its whole request a byte at a time, 2 ms apart, in a thread.
    let address = running.address;
    let slow = std::thread::spawn(move || {
        let request = good_request();
        let bytes = format!("{}{request}", head(request.len())).into_bytes();
        let mut stream = TcpStream::connect(address).expect("connects");
        stream.set_nodelay(true).expect("nodelay");
        let started = Instant::now();
        for chunk in bytes.chunks(16) {
            stream.write_all(chunk).expect("writes");
            std::thread::sleep(Duration::from_millis(2));
        }
        let mut answer = Vec::new();
        stream.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
        let mut buffer = [0u8; 4096];
        while !String::from_utf8_lossy(&answer).contains("\"scale_up\"") {
            let n = stream.read(&mut buffer).expect("the answer");
            assert!(n > 0, "closed before the answer: {}", String::from_utf8_lossy(&answer));
            answer.extend_from_slice(&buffer[..n]);
        }
        started.elapsed()
    });
    // Meanwhile, ordinary clients are served.
    let mut client = support::Client::new(running.address);
    let started = Instant::now();
    for _ in 0..20 {
        assert_decides(&mut client);
    }
    println!("20 requests beside 50 stalled connections and a slow client: {:?}", started.elapsed());
    let slow_elapsed = slow.join().expect("the slow client is answered");
    println!("the slow client, 16 bytes every 2 ms, answered after {slow_elapsed:?}");
    drop(idle);
    assert_decides(&mut client);
    running.stop();
}
