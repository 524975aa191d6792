//! The admission webhook over HTTPS with real `AdmissionReview` documents: allowed, denied for
//! each class of reason, no change, unknown unit, dry run, malformed reviews, and a certificate
//! replaced while serving.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "tests")]

mod kubernetes;

use std::sync::Arc;
use std::time::Duration;

use kubernetes::*;
use scale_units_host::PolicyRegistry;
use scale_units_server::listen::tls::TlsFiles;
use scale_units_server::service::ServiceConfig;
use scale_units_server::units::Units;
use serde_json::{Value, json};

struct Webhook {
    served: Served,
    client: Https,
    units: Arc<Units>,
    cert: rustls::pki_types::CertificateDer<'static>,
    dir: std::path::PathBuf,
}

/// A webhook over a contracts folder holding `shop/gateway` (without cooldowns, so that one test
/// can try many moves from one count) and `shop/sessions`.
async fn webhook(dry_run: bool) -> Webhook {
    let mut gateway = gateway_contract();
    gateway["policy"]["scale_up_cooldown_s"] = json!(0);
    gateway["policy"]["scale_down_cooldown_s"] = json!(0);
    webhook_with(dry_run, &gateway).await
}

/// A webhook over a contracts folder holding `gateway` as `shop/gateway`, and `shop/sessions`.
async fn webhook_with(dry_run: bool, gateway: &Value) -> Webhook {
    let registry: Arc<PolicyRegistry> = registry();
    let dir = temp_dir("webhook");
    let contracts = dir.join("contracts");
    std::fs::create_dir_all(&contracts).unwrap();
    write_contract(&contracts, "shop/gateway", gateway);
    write_contract(&contracts, "shop/sessions", &sessions_contract());
    let units = units(&registry, &contracts).await;
    let (cert_pem, key_pem, cert) = certificate();
    std::fs::write(dir.join("tls.crt"), cert_pem).unwrap();
    std::fs::write(dir.join("tls.key"), key_pem).unwrap();
    let mut files = TlsFiles::new(dir.join("tls.crt"), dir.join("tls.key"));
    files.reload_interval = Duration::from_millis(50);
    let config = ServiceConfig {
        units: Some(Arc::clone(&units)),
        tls: Some(files),
        admission_dry_run: dry_run,
        ..ServiceConfig::default()
    };
    let served = Served::start(config, registry).await;
    let client = Https::connect(served.address, std::slice::from_ref(&cert)).await.unwrap();
    Webhook { served, client, units, cert, dir }
}

impl Webhook {
    async fn push(&self, unit: &str, push: Value) {
        self.units.put_observations(&key(unit), &push.to_string()).await.unwrap();
    }

    async fn review(&mut self, review: Value) -> (bool, String, Vec<String>, Option<String>) {
        let uid = review["request"]["uid"].clone();
        let (status, answer) = self.client.send("POST", "/v1/admission", &review.to_string()).await;
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["response"]["uid"], uid, "the uid is echoed: {answer}");
        verdict(&answer)
    }

    async fn scale(&mut self, unit: &str, old: i64, new: i64) -> (bool, String, Vec<String>, Option<String>) {
        let (namespace, name) = unit.split_once('/').unwrap();
        self.review(scale_review("705ab4f5-6393-11e8-b7cc-42010a800002", namespace, name, "deployments", old, new))
            .await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn moves_in_the_decisions_direction_up_to_desired_are_allowed_and_others_denied() {
    let mut hook = webhook(false).await;
    hook.push("shop/gateway", gateway_push(640)).await;

    // The decision at 3 replicas: scale_up to 5.
    for new in [4, 5] {
        let (allowed, message, _, id) = hook.scale("shop/gateway", 3, new).await;
        assert!(allowed, "3 -> {new}: {message}");
        assert!(id.unwrap().starts_with("scale-decision:"));
    }
    let (allowed, message, _, id) = hook.scale("shop/gateway", 3, 6).await;
    assert!(!allowed);
    let id = id.unwrap();
    assert!(message.contains("at most 5") && message.contains(&id) && message.contains("target_tracking"), "{message}");
    let (allowed, message, _, _) = hook.scale("shop/gateway", 3, 2).await;
    assert!(!allowed);
    assert!(message.contains("not down"), "{message}");

    // No change is always allowed, even with no evidence at all.
    let (allowed, _, warnings, _) = hook.scale("shop/empty-but-unknown", 3, 3).await;
    assert!(allowed && warnings.is_empty());

    // The workload itself (apps/v1), as `kubectl edit` sends it.
    let deployment = workload_review("uid-d", "shop", "gateway", "Deployment", Some(3), Some(5));
    assert!(hook.review(deployment).await.0);
    let deployment = workload_review("uid-d2", "shop", "gateway", "Deployment", Some(3), Some(9));
    assert!(!hook.review(deployment).await.0);
    // Absent spec.replicas is 1 (the Kubernetes default): 1 -> 1 is no change.
    let unchanged = workload_review("uid-d3", "shop", "gateway", "Deployment", None, Some(1));
    assert!(hook.review(unchanged).await.0);
    let set = workload_review("uid-s", "shop", "gateway", "StatefulSet", Some(3), Some(8));
    let (allowed, message, _, _) = hook.review(set).await;
    assert!(!allowed, "{message}");
    let (namespace, name) = ("shop", "gateway");
    let set_scale = scale_review("uid-ss", namespace, name, "statefulsets", 3, 4);
    assert!(hook.review(set_scale).await.0);

    // At 5, the same evidence holds: at target? 640 / 100 -> 7, up by 2 from 5 -> 7.
    let (allowed, _, _, _) = hook.scale("shop/gateway", 5, 7).await;
    assert!(allowed);
    hook.served.stop().await;
    let _ = std::fs::remove_dir_all(&hook.dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_review_records_nothing_and_the_collectors_time_still_counts() {
    // The example's cooldowns: 60 s up, 300 s down. No action is known before this registry.
    let mut hook = webhook_with(false, &gateway_contract()).await;
    hook.push("shop/gateway", gateway_push(640)).await;

    // A review is a question (issue 37): an admitted 3 -> 4, a server dry run, the same review
    // retried — none of them starts the cooldown, none is journaled. Only what the watch sees
    // (in Kubernetes) or what a collector pushes moves the time the cooldowns count from.
    let mut dry = scale_review("uid-dry", "shop", "gateway", "deployments", 3, 4);
    dry["request"]["dryRun"] = json!(true);
    assert!(hook.review(dry).await.0);
    for _ in 0..2 {
        let (allowed, message, _, _) = hook.scale("shop/gateway", 3, 4).await;
        assert!(allowed, "{message}");
    }
    let (allowed, message, _, _) = hook.scale("shop/gateway", 4, 5).await;
    assert!(allowed, "an admitted review started a cooldown: {message}");
    assert!(hook.units.journal(&key("shop/gateway")).await.unwrap().is_empty());
    let unit = hook.units.decide(&key("shop/gateway"), Some(4)).await.unwrap();
    assert_eq!(unit.last_action.unwrap().source.as_str(), "none");

    // A collector's time starts the cooldown; its `null` forgets it; an unreadable time is
    // refused with its path.
    hook.push("shop/gateway", json!({"last_action_at": at(-5)})).await;
    let (allowed, message, _, _) = hook.scale("shop/gateway", 4, 5).await;
    assert!(!allowed && message.contains("hold") && message.contains("cooldown"), "{message}");
    hook.push("shop/gateway", json!({"last_action_at": null})).await;
    let (allowed, message, _, _) = hook.scale("shop/gateway", 4, 5).await;
    assert!(allowed, "{message}");
    let error = hook.units.put_observations(&key("shop/gateway"), r#"{"last_action_at": "yesterday"}"#).await;
    let error = error.unwrap_err().to_string();
    assert!(error.contains("last_action_at"), "{error}");
    hook.served.stop().await;
    let _ = std::fs::remove_dir_all(&hook.dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_class_of_blocking_reason_denies_any_change() {
    let mut hook = webhook(false).await;
    let check = |reason: &'static str| {
        move |(allowed, message, _, id): (bool, String, Vec<String>, Option<String>)| {
            assert!(!allowed, "{reason}: {message}");
            assert!(message.contains("blocked") && message.contains(reason), "{reason}: {message}");
            assert!(message.contains(&id.unwrap()), "{message}");
        }
    };

    // Missing signal.
    let mut push = gateway_push(640);
    push.as_object_mut().unwrap().remove("signal");
    hook.push("shop/gateway", push).await;
    check("signal_missing")(hook.scale("shop/gateway", 3, 4).await);
    check("signal_missing")(hook.scale("shop/gateway", 3, 2).await);

    // Stale signal: observed in the future.
    let mut stale = signal(640, 120);
    stale["observed_at"] = json!(at(60));
    hook.push("shop/gateway", json!({"signal": stale})).await;
    check("signal_stale")(hook.scale("shop/gateway", 3, 4).await);

    // Capacity exhausted: no room for one more replica's CPU.
    hook.push("shop/gateway", json!({"signal": signal(640, 120), "capacities": [capacity("cpu_milli", 500, 120)]}))
        .await;
    check("capacity_exhausted")(hook.scale("shop/gateway", 3, 4).await);

    // Missing capacity and missing quota: a unit with neither pushed.
    let mut push = gateway_push(100);
    push["capacities"].as_array_mut().unwrap().pop();
    push["continuity"] = continuity(5, 120);
    hook.push("shop/sessions", push).await;
    let verdict = hook.scale("shop/sessions", 3, 2).await;
    check("capacity_missing")(verdict.clone());
    check("quota_missing")(verdict);

    // Safety: overload shedding.
    hook.push("shop/gateway", gateway_push(640)).await;
    hook.push("shop/gateway", json!({"safety": safety(true, 120)})).await;
    check("overload_shedding_active")(hook.scale("shop/gateway", 3, 4).await);

    // Continuity: a scale-down while sessions are open.
    hook.push("shop/sessions", gateway_push(100)).await;
    hook.push("shop/sessions", json!({"quotas": [quota(100_000, 120)]})).await;
    check("active_sessions_block_drain")(hook.scale("shop/sessions", 3, 2).await);
    // Sessions drained: the scale-down is allowed, with the drain warning.
    hook.push("shop/sessions", json!({"continuity": continuity(0, 120)})).await;
    let (allowed, message, warnings, _) = hook.scale("shop/sessions", 3, 2).await;
    assert!(allowed, "{message}");
    assert!(warnings.iter().any(|warning| warning.contains("drain")), "{warnings:?}");

    // Expired evidence: a signal living one second.
    hook.push("shop/gateway", json!({"signal": signal(640, 1), "safety": safety(false, 120)})).await;
    tokio::time::sleep(Duration::from_millis(2100)).await;
    hook.client = Https::connect(hook.served.address, std::slice::from_ref(&hook.cert)).await.unwrap();
    check("signal_missing")(hook.scale("shop/gateway", 3, 4).await);
    hook.served.stop().await;
    let _ = std::fs::remove_dir_all(&hook.dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_units_are_allowed_with_a_warning_and_dry_run_only_warns() {
    let mut hook = webhook(false).await;
    let (allowed, _, warnings, _) = hook.scale("shop/no-contract", 3, 30).await;
    assert!(allowed);
    assert!(warnings[0].contains("shop/no-contract has no scale-unit contract"), "{warnings:?}");
    // A unit with a contract and no replica evidence at all: blocked, denied.
    assert!(!hook.scale("shop/gateway", 3, 4).await.0);
    hook.served.stop().await;
    let _ = std::fs::remove_dir_all(&hook.dir);

    let mut hook = webhook(true).await;
    let (allowed, _, warnings, id) = hook.scale("shop/gateway", 3, 4).await;
    assert!(allowed, "dry run");
    assert!(warnings[0].starts_with("scale-units (Warn mode), would deny:") && warnings[0].contains("signal_missing"));
    assert!(warnings[0].contains(&id.unwrap()));
    hook.served.stop().await;
    let _ = std::fs::remove_dir_all(&hook.dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_reviews_get_a_well_formed_denial_never_a_500() {
    let mut hook = webhook(false).await;
    let broken_object = {
        let mut review = scale_review("uid-broken", "shop", "gateway", "deployments", 3, 4);
        review["request"]["object"]["spec"]["replicas"] = json!("four");
        review
    };
    let no_old_object = {
        let mut review = scale_review("uid-no-old", "shop", "gateway", "deployments", 3, 4);
        review["request"].as_object_mut().unwrap().remove("oldObject");
        review
    };
    let bodies: Vec<(String, &str)> = vec![
        ("not json".to_owned(), ""),
        ("[]".to_owned(), ""),
        (json!({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1"}).to_string(), ""),
        (json!({"request": {"uid": "uid-partial"}}).to_string(), "uid-partial"),
        (broken_object.to_string(), "uid-broken"),
        (no_old_object.to_string(), "uid-no-old"),
        ("{".repeat(100_000), ""),
    ];
    for (body, uid) in bodies {
        let (status, answer) = hook.client.send("POST", "/v1/admission", &body).await;
        assert_eq!(status, 200, "{answer}");
        let (allowed, message, _, _) = verdict(&answer);
        assert!(!allowed, "{body:.80}: {answer}");
        assert!(message.starts_with("scale-units:"), "{message}");
        assert_eq!(answer["response"]["uid"], uid, "{answer}");
    }
    hook.served.stop().await;
    let _ = std::fs::remove_dir_all(&hook.dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replaced_certificate_is_served_to_new_connections() {
    let mut hook = webhook(false).await;
    assert_eq!(hook.client.peer, hook.cert);
    let (cert_pem, key_pem, renewed) = certificate();
    // Key first, then certificate: in between, the pair does not match and the old one stays.
    std::fs::write(hook.dir.join("tls.key"), key_pem).unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let between = Https::connect(hook.served.address, std::slice::from_ref(&hook.cert)).await.unwrap();
    assert_eq!(between.peer, hook.cert);
    std::fs::write(hook.dir.join("tls.crt"), cert_pem).unwrap();
    let mut seen = None;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        if let Ok(client) = Https::connect(hook.served.address, std::slice::from_ref(&renewed)).await {
            seen = Some(client);
            break;
        }
    }
    let mut client = seen.expect("the renewed certificate is served");
    assert_eq!(client.peer, renewed);
    // A client trusting only the old certificate no longer connects.
    assert!(Https::connect(hook.served.address, std::slice::from_ref(&hook.cert)).await.is_err());
    // The connection opened before the renewal still works, and so does the new one.
    let review = scale_review("uid-after", "shop", "other", "deployments", 2, 3);
    assert!(verdict(&hook.client.send("POST", "/v1/admission", &review.to_string()).await.1).0);
    assert!(verdict(&client.send("POST", "/v1/admission", &review.to_string()).await.1).0);
    hook.served.stop().await;
    let _ = std::fs::remove_dir_all(&hook.dir);
}
