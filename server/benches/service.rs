//! Loopback load against the decision service (`make bench-service`): closed-loop clients
//! evaluating the API gateway example, first with one policy, then while the policy is swapped
//! between two builds every 10 ms; and the swap itself. Prints the figures of BENCHMARKS.md.
//! Bounded: 127.0.0.1 only, a few seconds per phase (`SCALE_UNITS_BENCH_SECONDS`).
#![allow(
    clippy::panic,
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    missing_docs,
    reason = "benchmark code"
)]

#[path = "../../host-rs/tests/common/mod.rs"]
mod common;
#[path = "../tests/support/mod.rs"]
mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use scale_units_host::{Candidate, Policy, PolicyRegistry, default_cache_dir};
use scale_units_server::service::{Service, ServiceConfig};
use support::{Client, Running};

fn main() {
    let seconds: u64 = std::env::var("SCALE_UNITS_BENCH_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(5);
    let clients: usize = std::env::var("SCALE_UNITS_BENCH_CLIENTS").ok().and_then(|s| s.parse().ok()).unwrap_or(4);
    let mut builder = Policy::builder();
    if let Some(dir) = default_cache_dir() {
        builder = builder.cache_dir(dir);
    }
    let registry = Arc::new(PolicyRegistry::builder().policy_builder(builder).build());
    let started = Instant::now();
    let a = registry.stage(Candidate::new(common::component_bytes())).unwrap();
    let stage_a = started.elapsed();
    let variant = common::variant_build(common::component_bytes(), "b");
    let started = Instant::now();
    let b = registry.stage(Candidate::new(&variant)).unwrap();
    let stage_b = started.elapsed();
    registry.activate(&a.digest).unwrap();
    println!(
        "stage (load + gate of {} vectors): A {:.0} ms (gate {:.0} ms), B {:.0} ms (gate {:.0} ms)",
        a.vectors_passed,
        stage_a.as_secs_f64() * 1e3,
        a.gate_micros as f64 / 1e3,
        stage_b.as_secs_f64() * 1e3,
        b.gate_micros as f64 / 1e3
    );

    // The swap alone, in-process: activate() and nothing else.
    let mut swaps = Vec::new();
    for round in 0..10_000 {
        let digest = if round % 2 == 0 { &b.digest } else { &a.digest };
        let started = Instant::now();
        registry.activate(digest).unwrap();
        swaps.push(started.elapsed());
    }
    registry.activate(&a.digest).unwrap();
    let (p50, p99) = percentiles(&mut swaps);
    println!("activate() in-process, 10000 swaps: p50 {:.2} µs, p99 {:.2} µs", micros(p50), micros(p99));

    let config =
        ServiceConfig { token: Some("bench".to_owned()), shutdown_delay: Duration::ZERO, ..ServiceConfig::default() };
    let running = Running::start(Service::new(Arc::clone(&registry), config), 2);
    let request = common::good_request();
    for swapping in [false, true] {
        let stop = Arc::new(AtomicBool::new(false));
        let swapper = swapping.then(|| {
            let (stop, address, a, b) = (Arc::clone(&stop), running.address, a.digest.clone(), b.digest.clone());
            std::thread::spawn(move || {
                let mut client = Client::new(address);
                let mut round_trips = Vec::new();
                let mut round = 0;
                while !stop.load(Ordering::Relaxed) {
                    let digest = if round % 2 == 0 { &b } else { &a };
                    let started = Instant::now();
                    let reply = client
                        .post(&format!("/v1/policies/{digest}/activate"), &[("authorization", "Bearer bench")], b"")
                        .unwrap();
                    assert_eq!(reply.status, 200);
                    round_trips.push(started.elapsed());
                    round += 1;
                    std::thread::sleep(Duration::from_millis(10));
                }
                round_trips
            })
        });
        let deadline = Instant::now() + Duration::from_secs(seconds);
        let workers: Vec<_> = (0..clients)
            .map(|_| {
                let (address, request) = (running.address, request.clone());
                std::thread::spawn(move || {
                    let mut client = Client::new(address);
                    let mut latencies = Vec::new();
                    let mut failed = 0usize;
                    while Instant::now() < deadline {
                        let started = Instant::now();
                        match client.post("/v1/evaluate", &[], request.as_bytes()) {
                            Ok(reply) if reply.status == 200 => latencies.push(started.elapsed()),
                            _ => failed += 1,
                        }
                    }
                    (latencies, failed)
                })
            })
            .collect();
        let (mut latencies, mut failed) = (Vec::new(), 0);
        for worker in workers {
            let (mine, mine_failed) = worker.join().unwrap();
            latencies.extend(mine);
            failed += mine_failed;
        }
        stop.store(true, Ordering::Relaxed);
        let count = latencies.len();
        let (p50, p99) = percentiles(&mut latencies);
        println!(
            "{} clients, {}: {:.0} requests/s, p50 {:.0} µs, p99 {:.0} µs, {failed} failed",
            clients,
            if swapping { "policy swapped every 10 ms" } else { "one policy" },
            count as f64 / seconds as f64,
            micros(p50),
            micros(p99)
        );
        if let Some(swapper) = swapper {
            let mut round_trips = swapper.join().unwrap();
            let swapped = round_trips.len();
            let (p50, p99) = percentiles(&mut round_trips);
            println!(
                "  {swapped} swaps over HTTP (POST …/activate round trip): p50 {:.0} µs, p99 {:.0} µs",
                micros(p50),
                micros(p99)
            );
        }
    }
    running.stop();
}

fn percentiles(samples: &mut [Duration]) -> (Duration, Duration) {
    samples.sort_unstable();
    let at = |fraction: f64| samples[((samples.len() as f64 * fraction) as usize).min(samples.len() - 1)];
    (at(0.50), at(0.99))
}

fn micros(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}
