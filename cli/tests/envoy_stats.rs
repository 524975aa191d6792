//! Issue 26: Envoy's own numbers as evidence. A gateway's in-flight requests are Envoy's
//! `envoy_cluster_upstream_rq_active` for its upstream cluster: the real Prometheus scrapes the
//! real Envoy's `/stats/prometheus`, and the real `scale-units serve` reads the gauge through the
//! sources file. Load the test holds in flight at the actuator raises it, and the unit decides
//! `scale_up`.
#![allow(
    clippy::panic,
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "test code: a failed expectation is a test failure"
)]

mod binary;
#[path = "../../server/tests/kubernetes/mod.rs"]
mod kubernetes;
mod proxy;
#[path = "../../server/tests/support/mod.rs"]
mod support;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use kubernetes::{gateway_contract, temp_dir, write_contract};
use proxy::{Actuator, Envoy, Prometheus, request};
use serde_json::json;
use support::Client;

/// The sources file of a gateway behind Envoy (docs/envoy.md, "Envoy's numbers as evidence"):
/// the signal is the actuator cluster's active upstream requests. The replica count is Prometheus'
/// `vector(3)` here; a real deployment reads its orchestrator's count.
fn sources(prometheus: u16) -> String {
    format!(
        r#"interval_s: 1
prometheus:
  local: {{url: "http://127.0.0.1:{prometheus}", timeout_ms: 1000}}
replicas:
  max_age_s: 10
  count: {{prometheus: {{server: local, query: 'vector(3)'}}}}
signal:
  signal: in_flight
  max_age_s: 4
  value: {{prometheus: {{server: local, query: 'sum(envoy_cluster_upstream_rq_active{{envoy_cluster_name="actuator"}})'}}}}
capacities:
  - {{axis: cpu_milli, allocatable: {{static: 16000}}, reserved: {{static: 3000}}, used: {{static: 2400}}, max_age_s: 600}}
  - {{axis: memory_mib, allocatable: {{static: 65536}}, reserved: {{static: 6144}}, used: {{static: 5100}}, max_age_s: 600}}
  - {{axis: session_slots, allocatable: {{static: 4000}}, reserved: {{static: 700}}, used: {{static: 640}}, max_age_s: 600}}
safety:
  server: local
  overloaded: [EnvoyOverloaded]
  max_age_s: 4
"#
    )
}

fn wait_for<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let started = Instant::now();
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(started.elapsed() < Duration::from_secs(90), "gave up waiting for: {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn envoys_in_flight_gauge_through_prometheus_makes_the_unit_scale_up() {
    let dir = temp_dir("envoy-stats");
    let units = dir.join("units");
    std::fs::create_dir_all(&units).unwrap();
    // The gateway example with a target of 10 in flight per replica, no cooldowns.
    let mut contract = gateway_contract();
    contract["policy"]["target"] = json!(10);
    contract["policy"]["scale_up_cooldown_s"] = json!(0);
    contract["policy"]["scale_down_cooldown_s"] = json!(0);
    write_contract(&units, "default/gateway", &contract);

    let actuator = Actuator::start();
    // Envoy first (Prometheus needs its admin port), asking a service that starts just after.
    let authz_port = proxy::free_port();
    let proxy = Envoy::start(std::net::SocketAddr::from(([127, 0, 0, 1], authz_port)), actuator.address);
    let rules =
        "groups:\n  - name: envoy\n    rules:\n      - alert: EnvoyOverloaded\n        expr: envoy_server_state > 10\n";
    let prometheus = Prometheus::start(&dir.join("prometheus"), proxy.admin, rules);
    std::fs::write(units.join("default.gateway.sources.yaml"), sources(prometheus.port)).unwrap();
    let serve = binary::Serve::new(["--listen", "127.0.0.1:0", "--collect-interval-ms", "300", "--units"])
        .arg(&units)
        .args(["--envoy-listen", &format!("127.0.0.1:{authz_port}")])
        .owning(&dir)
        .envoy()
        .quiet()
        .start();
    let mut client = Client::new(serve.http).retrying_stale_connections();
    let mut unit = || {
        let reply = client.get("/v1/units/default/gateway").unwrap();
        (reply.status == 200).then(|| reply.json())
    };

    // Idle: the gauge is 0, and the unit does not scale up.
    let idle = wait_for("the idle gauge as evidence", || unit().filter(|u| u["evidence"]["signal"]["value"] == 0));
    assert_ne!(idle["decision"]["action"], "scale_up", "{idle}");
    assert_eq!(idle["evidence"]["replicas"]["count"], 3, "{idle}");

    // 60 requests held in flight at the actuator: 20 per replica at 3 replicas against a target
    // of 10, so scale_up 3 -> 5 (step 2).
    actuator.hold.store(true, Ordering::SeqCst);
    let clients: Vec<_> = (0..60)
        .map(|i| {
            let address = proxy.address;
            std::thread::spawn(move || request(address, "GET", &format!("/v1.45/tasks?n={i}"), b"").status)
        })
        .collect();
    let busy = wait_for("scale_up from Envoy's gauge", || unit().filter(|u| u["decision"]["action"] == "scale_up"));
    let signal = busy["evidence"]["signal"]["value"].as_u64().unwrap();
    assert!((31..=60).contains(&signal), "the in-flight gauge rose with the load: {busy}");
    assert_eq!(
        (busy["decision"]["current_replicas"].as_u64(), busy["decision"]["desired_replicas"].as_u64()),
        (Some(3), Some(5)),
        "{busy}"
    );
    assert!(busy["evidence"]["signal"]["source_ref"].as_str().unwrap().starts_with("prometheus.local:"), "{busy}");

    actuator.hold.store(false, Ordering::SeqCst);
    let statuses: Vec<u16> = clients.into_iter().map(|client| client.join().unwrap()).collect();
    assert!(statuses.iter().all(|status| *status == 200), "{statuses:?}");
    drop(prometheus);
    drop(proxy);
    serve.stop();
}
