//! Admitted, then refused (issue 28), through the real binary: two `scale-units serve --redis`
//! replicas on one real `redis-server`. Replica A admits 3 -> 5; the API server refuses it (another
//! webhook said no). The next review, on replica B, carries the object at the version 3 -> 5 was
//! admitted against and at 3: the change never happened. On both replicas `GET /v1/units/…` and
//! KEDA's metric are then those of 3, without the cooldown of 3 -> 5; the API server's retry of the
//! refused review changes nothing; the retried 3 -> 5 is admitted; a later review at 5 confirms it.
//! Needs `redis-server` (`.ci/run` and `make test-cli` install it).
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
#[path = "../../server/tests/support/mod.rs"]
mod support;

use std::net::SocketAddr;

use binary::{Redis, Serve};
use kubernetes::{gateway_contract, gateway_push, scale_review, signal, temp_dir, verdict, write_contract};
use scale_units_server::keda::METRIC_NAME;
use scale_units_server::keda::proto::external_scaler_client::ExternalScalerClient;
use scale_units_server::keda::proto::{GetMetricsRequest, ScaledObjectRef};
use serde_json::{Value, json};
use support::Client;

struct Replica {
    _served: binary::Served,
    http: SocketAddr,
    keda: SocketAddr,
}

impl Replica {
    fn start(contracts: &std::path::Path, url: &str) -> Self {
        let served = Serve::new(["--listen", "127.0.0.1:0", "--keda-listen", "127.0.0.1:0", "--redis", url, "--units"])
            .arg(contracts)
            .keda()
            .start();
        Self { http: served.http, keda: served.keda(), _served: served }
    }

    fn push(&self, body: &Value) {
        let reply = Client::new(self.http)
            .send("PUT", "/v1/units/shop/gateway/observations", &[], body.to_string().as_bytes())
            .unwrap();
        assert_eq!(reply.status, 200, "{}", reply.body);
    }

    /// A `deployments/scale` review, its `oldObject` at `version`: (allowed, message, warnings).
    fn review(&self, uid: &str, version: &str, old: i64, new: i64) -> (bool, String, Vec<String>) {
        let mut review = scale_review(uid, "shop", "gateway", "deployments", old, new);
        review["request"]["oldObject"]["metadata"]["resourceVersion"] = json!(version);
        review["request"]["object"]["metadata"]["resourceVersion"] = json!(version);
        let reply = Client::new(self.http).post("/v1/admission", &[], review.to_string().as_bytes()).unwrap();
        assert_eq!(reply.status, 200, "{}", reply.body);
        let (allowed, message, warnings, _) = verdict(&reply.json());
        (allowed, message, warnings)
    }

    fn unit(&self) -> Value {
        let reply = Client::new(self.http).get("/v1/units/shop/gateway").unwrap();
        assert_eq!(reply.status, 200, "{}", reply.body);
        reply.json()
    }

    async fn metric(&self) -> i64 {
        let mut client = ExternalScalerClient::connect(format!("http://{}", self.keda)).await.unwrap();
        let reference = ScaledObjectRef {
            name: "gateway".into(),
            namespace: "shop".into(),
            scaler_metadata: std::collections::HashMap::new(),
        };
        let request = GetMetricsRequest { scaled_object_ref: Some(reference), metric_name: METRIC_NAME.into() };
        client.get_metrics(request).await.unwrap().into_inner().metric_values[0].metric_value
    }

    /// The unit as its route and KEDA see it: (count decided at, action, reasons, metric).
    async fn seen(&self) -> (u64, String, Vec<String>, i64) {
        let unit = self.unit();
        let decision = &unit["decision"];
        let reasons = decision["reasons"].as_array().unwrap().iter().map(|r| r.as_str().unwrap().to_owned()).collect();
        let current = unit["evidence"]["replicas"]["count"].as_u64().unwrap();
        assert_eq!(decision["current_replicas"].as_u64(), Some(current), "{unit}");
        (current, decision["action"].as_str().unwrap().to_owned(), reasons, self.metric().await)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_admission_is_retracted_on_every_replica_by_the_next_review() {
    let dir = temp_dir("serve-rejected");
    let contracts = dir.join("contracts");
    std::fs::create_dir_all(&contracts).unwrap();
    // The API gateway example: 60 s up, 300 s down.
    write_contract(&contracts, "shop/gateway", &gateway_contract());
    let redis = Redis::start(&dir);
    // A Redis that has vouched for every admission for an hour: no cooldown from the start.
    let epoch = jiff::Timestamp::now().as_millisecond() - 3_600_000;
    assert_eq!(redis.command(&["SET", "scale-units:epoch", &epoch.to_string()]), "+OK");
    let url = format!("redis://127.0.0.1:{}/0", redis.port);
    let (a, b) =
        tokio::task::spawn_blocking(move || (Replica::start(&contracts, &url), Replica::start(&contracts, &url)))
            .await
            .unwrap();

    // 640 in flight at 3: 3 -> 5. A admits it against version 100; both stand on 5 at once, in
    // the cooldown (at 300 in flight: a scale-down to 3 that the cooldown holds).
    a.push(&gateway_push(640));
    let (allowed, message, _) = a.review("uid-a", "100", 3, 5);
    assert!(allowed, "{message}");
    a.push(&json!({"signal": signal(300, 120)}));
    for replica in [&a, &b] {
        let (current, action, reasons, metric) = replica.seen().await;
        assert_eq!((current, action.as_str(), metric), (5, "hold", 5), "{reasons:?}");
        assert!(reasons.iter().any(|reason| reason == "cooldown"), "{reasons:?}");
    }

    // Another webhook refused 3 -> 5. The next review reaches B: version 100, 3 replicas. The
    // object has not changed: judged at 3 without the cooldown (denied as at target, for that
    // alone), and both replicas stand on 3 again.
    let (allowed, message, _) = b.review("uid-r", "100", 3, 4);
    assert!(!allowed && !message.contains("cooldown"), "{message}");
    for replica in [&a, &b] {
        let (current, action, reasons, metric) = replica.seen().await;
        assert_eq!((current, action.as_str(), metric), (3, "hold", 3), "{reasons:?}");
        assert!(!reasons.iter().any(|reason| reason == "cooldown"), "{reasons:?}");
        let unit = replica.unit();
        let last = &unit["last_action"];
        assert_eq!(last["source"], "unknown", "the cooldowns count from the epoch again: {unit}");
        assert_eq!(last["retracted"]["review_uid"], "uid-a", "{unit}");
        assert_eq!(last["retracted"]["settled"]["state"], "retracted", "{unit}");
        assert_eq!(last["retracted"]["settled"]["by"], "review:uid-r", "{unit}");
        assert_eq!(unit["journal"]["entries"][0]["settled"]["state"], "retracted", "{unit}");
        assert_eq!(unit["evidence"]["replicas"]["source_ref"], "review:shop/gateway", "{unit}");
    }

    // The API server retries the refused review on A (same uid): answered as before, and nothing
    // of it comes back.
    let (allowed, _, warnings) = a.review("uid-a", "100", 3, 5);
    assert!(allowed && warnings.iter().any(|warning| warning.contains("answered again")), "{warnings:?}");
    assert_eq!((a.seen().await.0, b.seen().await.3), (3, 3));

    // The refused change retried, the other webhook gone: 3 -> 5 is admitted (no cooldown of a
    // change that never happened), and a later review at 5 (version 101) confirms it.
    a.push(&gateway_push(640));
    let (allowed, message, _) = b.review("uid-b", "100", 3, 5);
    assert!(allowed, "{message}");
    let (allowed, message, _) = a.review("uid-c", "101", 5, 7);
    assert!(!allowed && message.contains("cooldown"), "{message}");
    for replica in [&a, &b] {
        let unit = replica.unit();
        let last = &unit["last_action"];
        assert_eq!(
            (last["source"].as_str(), last["admission"]["review_uid"].as_str()),
            (Some("admission"), Some("uid-b"))
        );
        assert_eq!(last["admission"]["settled"]["state"], "confirmed", "{unit}");
        assert_eq!(last["retracted"], Value::Null, "{unit}");
        assert_eq!(replica.seen().await.3, 5);
    }
    drop((a, b));
    let _ = std::fs::remove_dir_all(&dir);
}
