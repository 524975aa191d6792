//! Loopback HTTPS load on the admission webhook (`POST /v1/admission`): 4 clients on keep-alive
//! TLS connections sending `deployments/scale` reviews for a unit with fresh evidence, in memory.
//! Prints requests/s and p50/p99/max latency (figures go into BENCHMARKS.md, "Webhook").
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "benchmark")]

#[path = "../tests/kubernetes/mod.rs"]
mod kubernetes;

use std::sync::Arc;
use std::time::{Duration, Instant};

use kubernetes::*;
use scale_units_server::listen::tls::TlsFiles;
use scale_units_server::service::ServiceConfig;

const CLIENTS: usize = 4;
const SECONDS: u64 = 10;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let registry = registry();
        let dir = temp_dir("bench-webhook");
        let contracts = dir.join("contracts");
        std::fs::create_dir_all(&contracts).unwrap();
        write_contract(&contracts, "shop/gateway", &gateway_contract());
        let units = units(&registry, &contracts).await;
        units.put_observations(&key("shop/gateway"), &gateway_push(640).to_string()).await.unwrap();
        let (cert_pem, key_pem, cert) = certificate();
        std::fs::write(dir.join("tls.crt"), cert_pem).unwrap();
        std::fs::write(dir.join("tls.key"), key_pem).unwrap();
        let config = ServiceConfig {
            units: Some(Arc::clone(&units)),
            tls: Some(TlsFiles::new(dir.join("tls.crt"), dir.join("tls.key"))),
            ..ServiceConfig::default()
        };
        let served = Served::start(config, registry).await;
        let mut tasks = Vec::new();
        let until = Instant::now() + Duration::from_secs(SECONDS);
        for client in 0..CLIENTS {
            let cert = cert.clone();
            let address = served.address;
            tasks.push(tokio::spawn(async move {
                let mut https = Https::connect(address, &[cert]).await.unwrap();
                let mut latencies = Vec::new();
                let mut index = 0u64;
                while Instant::now() < until {
                    // Allowed (3 -> 4) and denied (3 -> 9) in turn.
                    let new = if index.is_multiple_of(2) { 4 } else { 9 };
                    let review = scale_review(&format!("uid-{client}-{index}"), "shop", "gateway", "deployments", 3, new);
                    let body = review.to_string();
                    let started = Instant::now();
                    let (status, answer) = https.send("POST", "/v1/admission", &body).await;
                    latencies.push(started.elapsed());
                    assert_eq!(status, 200);
                    assert_eq!(verdict(&answer).0, new == 4, "{answer}");
                    index += 1;
                }
                latencies
            }));
        }
        let mut latencies = Vec::new();
        for task in tasks {
            latencies.extend(task.await.unwrap());
        }
        latencies.sort();
        let at = |q: f64| latencies[((latencies.len() as f64 * q) as usize).min(latencies.len() - 1)];
        println!(
            "webhook over HTTPS, {CLIENTS} clients, {SECONDS} s: {} reviews, {:.0} reviews/s, p50 {:?}, p99 {:?}, max {:?}",
            latencies.len(),
            latencies.len() as f64 / SECONDS as f64,
            at(0.50),
            at(0.99),
            latencies[latencies.len() - 1]
        );
        served.stop().await;
        let _ = std::fs::remove_dir_all(&dir);
    });
}
