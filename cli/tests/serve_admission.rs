//! The real binary as an admission webhook (`serve --webhook --override-group …`) over HTTPS, with
//! `AdmissionReview` documents as the API server sends them: the audited break-glass override
//! (groups from `userInfo`, the workload's reason and expiry annotations, a non-member's
//! annotations granting nothing), recovery toward the contract's bounds on both sides, the
//! counters in `/metrics`, and the decision audit log written to a file, one line per decision.
#![allow(
    clippy::panic,
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "test code: a failed expectation is a test failure"
)]

#[path = "../../server/tests/kubernetes/mod.rs"]
mod kubernetes;

use std::io::BufRead;
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kubernetes::{
    Https, at, certificate, gateway_contract, gateway_push, scale_review, temp_dir, verdict, workload_review,
    write_contract,
};
use serde_json::{Value, json};

const GROUP: &str = "sre-oncall";
const REASON: &str = "scale-units/override-reason";
const EXPIRES: &str = "scale-units/override-expires";

struct Webhook {
    child: Child,
    client: Https,
    address: SocketAddr,
    cert: rustls::pki_types::CertificateDer<'static>,
    audit: std::path::PathBuf,
    dir: std::path::PathBuf,
}

impl Webhook {
    /// The binary over `shop/gateway` (min 2, max 12, no cooldowns), HTTPS, an override group, the
    /// audit log in a file.
    async fn start() -> Self {
        let dir = temp_dir("serve-admission");
        let contracts = dir.join("contracts");
        std::fs::create_dir_all(&contracts).unwrap();
        let mut gateway = gateway_contract();
        gateway["policy"]["scale_up_cooldown_s"] = json!(0);
        gateway["policy"]["scale_down_cooldown_s"] = json!(0);
        assert_eq!(
            (gateway["policy"]["min_replicas"].as_u64(), gateway["policy"]["max_replicas"].as_u64()),
            (Some(2), Some(12))
        );
        write_contract(&contracts, "shop/gateway", &gateway);
        let (cert_pem, key_pem, cert) = certificate();
        std::fs::write(dir.join("tls.crt"), cert_pem).unwrap();
        std::fs::write(dir.join("tls.key"), key_pem).unwrap();
        let audit = dir.join("audit.log");
        let mut child = Command::new(env!("CARGO_BIN_EXE_scale-units"))
            .args(["serve", "--listen", "127.0.0.1:0", "--webhook", "--override-group", GROUP])
            .args(["--override-group", "platform-admins", "--shutdown-delay-ms", "0", "--units"])
            .arg(&contracts)
            .arg("--tls-cert")
            .arg(dir.join("tls.crt"))
            .arg("--tls-key")
            .arg(dir.join("tls.key"))
            .arg("--audit-log")
            .arg(&audit)
            .env("SCALE_UNITS_CACHE_DIR", std::env::temp_dir().join("scale-units-test-cache"))
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let address: SocketAddr = line.trim().strip_prefix("listening on ").unwrap().parse().unwrap();
        let client = Https::connect(address, std::slice::from_ref(&cert)).await.unwrap();
        Self { child, client, address, cert, audit, dir }
    }

    async fn push(&mut self, body: Value) {
        let (status, answer) = self.client.send("PUT", "/v1/units/shop/gateway/observations", &body.to_string()).await;
        assert_eq!(status, 200, "{answer}");
    }

    async fn review(&mut self, review: &Value) -> (bool, String, Vec<String>, Option<String>) {
        let (status, answer) = self.client.send("POST", "/v1/admission", &review.to_string()).await;
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["response"]["uid"], review["request"]["uid"], "{answer}");
        verdict(&answer)
    }

    async fn metrics(&self) -> String {
        metrics_text(self.address, &self.cert).await
    }

    /// The audit log's lines, once `count` are written (the writer thread flushes when idle).
    fn audit_lines(&self, count: usize) -> Vec<Value> {
        let started = Instant::now();
        loop {
            let text = std::fs::read_to_string(&self.audit).unwrap_or_default();
            let lines: Vec<Value> = text.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
            if lines.len() >= count {
                return lines;
            }
            assert!(started.elapsed() < Duration::from_secs(30), "{} audit lines of {count}:\n{text}", lines.len());
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn stop(mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let exit = self.child.wait().unwrap();
        assert!(exit.success(), "{exit:?}");
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `GET /metrics` over HTTPS, as text.
async fn metrics_text(address: SocketAddr, cert: &rustls::pki_types::CertificateDer<'static>) -> String {
    use http_body_util::BodyExt as _;
    let mut store = rustls::RootCertStore::empty();
    store.add(cert.clone()).unwrap();
    let config =
        rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(store)
            .with_no_client_auth();
    let tcp = tokio::net::TcpStream::connect(address).await.unwrap();
    let tls = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config))
        .connect(rustls::pki_types::ServerName::try_from("localhost").unwrap(), tcp)
        .await
        .unwrap();
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tls)).await.unwrap();
    tokio::spawn(connection);
    let request = hyper::Request::get("/metrics")
        .header("host", "localhost")
        .body(http_body_util::Full::new(hyper::body::Bytes::new()))
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    assert_eq!(response.status(), 200);
    String::from_utf8(response.into_body().collect().await.unwrap().to_bytes().to_vec()).unwrap()
}

/// A review by `username` in `groups`.
fn by(mut review: Value, username: &str, groups: &[&str]) -> Value {
    review["request"]["userInfo"] =
        json!({"username": username, "uid": "6a7b8c9d-0000-4000-8000-000000000003", "groups": groups});
    review
}

/// A Deployment review carrying override annotations on the new object.
fn annotated(uid: &str, old: i64, new: i64, reason: &str, expires: &str) -> Value {
    let mut review = workload_review(uid, "shop", "gateway", "Deployment", Some(old), Some(new));
    review["request"]["object"]["metadata"]["annotations"] = json!({REASON: reason, EXPIRES: expires});
    review
}

fn metric(text: &str, name: &str) -> u64 {
    text.lines()
        .find_map(|line| line.strip_prefix(name).and_then(|rest| rest.trim().parse().ok()))
        .unwrap_or_else(|| panic!("no {name} in\n{text}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn break_glass_and_recovery_are_allowed_with_warnings_counted_and_audited() {
    let mut hook = Webhook::start().await;
    let hpa = "system:serviceaccount:kube-system:horizontal-pod-autoscaler";
    // Fresh evidence, then the signal forgotten (Prometheus is down): the decision is blocked.
    hook.push(gateway_push(640)).await;
    hook.push(json!({"signal": null})).await;

    // 1. Blocked: the HPA's change is denied.
    let (allowed, message, _, blocked_id) =
        hook.review(&scale_review("uid-1", "shop", "gateway", "deployments", 3, 5)).await;
    assert!(!allowed && message.contains("blocked") && message.contains("signal_missing"), "{message}");
    let blocked_id = blocked_id.unwrap();

    // 2. The on-call engineer's `kubectl scale` (a Scale: no annotations): overridden, never silently.
    let scale = by(
        scale_review("uid-2", "shop", "gateway", "deployments", 3, 8),
        "alice@example.com",
        &["system:authenticated", GROUP],
    );
    let (allowed, _, warnings, id) = hook.review(&scale).await;
    assert!(allowed, "{warnings:?}");
    assert!(id.unwrap().starts_with("scale-decision:"));
    let warning = &warnings[0];
    assert!(
        warning.contains("OVERRIDE by alice@example.com")
            && warning.contains(GROUP)
            && warning.contains("no reason given"),
        "{warning}"
    );
    assert!(warnings[1].contains("blocked"), "the overridden denial is shown: {warnings:?}");

    // 3. `kubectl patch` of the Deployment with the reason and an expiry: the warning names why.
    let review = by(annotated("uid-3", 3, 9, "INC-4211 prometheus down", &at(1800)), "alice@example.com", &[GROUP]);
    let (allowed, _, warnings, _) = hook.review(&review).await;
    assert!(allowed && warnings[0].contains("reason: INC-4211 prometheus down"), "{warnings:?}");

    // 4. The same annotations from someone outside the groups grant nothing.
    let review =
        by(annotated("uid-4", 3, 9, "trust me", &at(1800)), "bob@example.com", &["system:authenticated", "developers"]);
    let (allowed, message, _, _) = hook.review(&review).await;
    assert!(!allowed, "an annotation alone never overrides");
    assert!(message.contains("grant nothing") && message.contains("bob@example.com"), "{message}");

    // 5. A member's override whose annotation expired, or reaches too far, is refused.
    for (uid, expires, why) in [("uid-5", at(-60), "expired"), ("uid-6", at(48 * 3600), "ahead")] {
        let review = by(annotated(uid, 3, 9, "old incident", &expires), "alice@example.com", &[GROUP]);
        let (allowed, message, _, _) = hook.review(&review).await;
        assert!(!allowed && message.contains("override refused") && message.contains(why), "{message}");
    }

    // 6. Recovery below the floor (min 2): toward it is allowed while blocked, away or past is not.
    for (uid, old, new, allowed_expected) in
        [("uid-7", 0, 1, true), ("uid-8", 0, 2, true), ("uid-9", 1, 0, false), ("uid-10", 0, 3, false)]
    {
        let (allowed, message, warnings, _) =
            hook.review(&scale_review(uid, "shop", "gateway", "deployments", old, new)).await;
        assert_eq!(allowed, allowed_expected, "{old} -> {new}: {message} {warnings:?}");
        if allowed {
            assert!(warnings[0].contains("recovery") && warnings[0].contains("min_replicas 2"), "{warnings:?}");
        } else {
            assert!(message.contains("min_replicas 2"), "{message}");
        }
    }
    // Above the ceiling (max 12): down toward it is allowed although the decision is blocked.
    for (uid, old, new, allowed_expected) in
        [("uid-11", 15, 12, true), ("uid-12", 15, 16, false), ("uid-13", 15, 11, false)]
    {
        let (allowed, message, warnings, _) =
            hook.review(&scale_review(uid, "shop", "gateway", "deployments", old, new)).await;
        assert_eq!(allowed, allowed_expected, "{old} -> {new}: {message} {warnings:?}");
        if !allowed {
            assert!(message.contains("max_replicas 12"), "{message}");
        }
    }

    // 7. A server-side dry run of an override is allowed and audited as a dry run.
    let mut dry = by(scale_review("uid-14", "shop", "gateway", "deployments", 3, 4), "carol", &["platform-admins"]);
    dry["request"]["dryRun"] = json!(true);
    assert!(hook.review(&dry).await.0);

    let metrics = hook.metrics().await;
    assert_eq!(metric(&metrics, "scale_units_admission_overrides_total{group=\"sre-oncall\"}"), 2, "{metrics}");
    assert_eq!(metric(&metrics, "scale_units_admission_overrides_total{group=\"platform-admins\"}"), 1);
    assert_eq!(metric(&metrics, "scale_units_admission_recoveries_total"), 3);

    // The audit log: one line per review, in order, each naming the caller and the outcome.
    let lines = hook.audit_lines(14);
    let admissions: Vec<&Value> = lines.iter().filter(|line| line["source"] == "admission").collect();
    assert_eq!(admissions.len(), 14, "every admission is logged");
    let uids: Vec<&str> = admissions.iter().map(|line| line["detail"]["uid"].as_str().unwrap()).collect();
    assert_eq!(uids, (1..=14).map(|n| format!("uid-{n}")).collect::<Vec<_>>());
    let keys = [
        "time",
        "source",
        "unit",
        "caller",
        "action",
        "current",
        "desired",
        "reasons",
        "decision_id",
        "decision_digest",
        "component_digest",
        "allowed",
        "override",
        "error",
        "detail",
        "repeated",
    ];
    for line in &admissions {
        // Every key always there (serde_json's map sorts them; the line keeps the documented order).
        let mut present: Vec<&str> = line.as_object().unwrap().keys().map(String::as_str).collect();
        let mut expected = keys.to_vec();
        present.sort_unstable();
        expected.sort_unstable();
        assert_eq!(present, expected, "{line}");
        assert_eq!(line["unit"], "shop/gateway");
        assert!(line["time"].as_str().unwrap().parse::<jiff::Timestamp>().is_ok(), "{line}");
    }
    let raw = std::fs::read_to_string(&hook.audit).unwrap();
    let positions: Vec<usize> =
        keys.iter().map(|key| raw.lines().next().unwrap().find(&format!("\"{key}\":")).unwrap()).collect();
    assert!(positions.windows(2).all(|pair| pair[0] < pair[1]), "the documented key order: {raw}");
    let first = admissions[0];
    assert_eq!(first["allowed"], false);
    assert_eq!(first["caller"]["username"], hpa);
    assert_eq!(
        (first["action"].as_str(), first["current"].as_u64(), first["desired"].as_u64()),
        (Some("blocked"), Some(3), Some(3))
    );
    assert!(first["reasons"].as_array().unwrap().contains(&json!("signal_missing")), "{first}");
    assert_eq!(first["decision_id"], blocked_id.as_str());
    assert!(first["decision_digest"].as_str().unwrap().starts_with("sha256:"));
    assert!(first["component_digest"].as_str().unwrap().starts_with("sha256:"));
    assert_eq!(first["detail"]["change"], json!({"from": 3, "to": 5}));
    assert!(first["override"].is_null());
    let overridden = admissions[1];
    assert_eq!(overridden["allowed"], true);
    assert_eq!(
        overridden["override"],
        json!({"by": "alice@example.com", "group": GROUP, "reason": null, "expires": null})
    );
    assert_eq!(overridden["caller"]["groups"], json!(["system:authenticated", GROUP]));
    assert_eq!(admissions[2]["override"]["reason"], "INC-4211 prometheus down");
    assert_eq!((admissions[3]["allowed"].as_bool(), admissions[3]["override"].is_null()), (Some(false), true));
    let below = admissions[6];
    assert_eq!((below["allowed"].as_bool(), below["detail"]["recovery"].as_bool()), (Some(true), Some(true)));
    assert_eq!(below["error"]["code"], "replicas_out_of_bounds", "no decision below the floor: {below}");
    assert_eq!(admissions[10]["detail"]["recovery"], true);
    assert_eq!(admissions[10]["action"], "blocked");
    assert_eq!(admissions[13]["detail"]["dry_run"], true);
    assert_eq!(admissions[13]["override"]["group"], "platform-admins");

    // An evaluation and a unit's decision are logged too.
    let request =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/api-gateway/request.json")).unwrap();
    let (status, decision) = hook.client.send("POST", "/v1/evaluate", &request).await;
    assert_eq!(status, 200, "{decision}");
    let (status, _) = hook.client.send("GET", "/v1/units/shop/gateway?replicas=3", "").await;
    assert_eq!(status, 200);
    let lines = hook.audit_lines(16);
    let evaluate = lines.iter().find(|line| line["source"] == "evaluate").unwrap();
    assert_eq!(evaluate["decision_id"], decision["decision"]["decision_id"]);
    assert_eq!(evaluate["component_digest"], decision["policy"]["digest"]);
    assert_eq!(evaluate["unit"], decision_unit(&request));
    assert!(evaluate["caller"]["address"].as_str().unwrap().starts_with("127.0.0.1:"));
    let unit = lines.iter().find(|line| line["source"] == "unit").unwrap();
    assert_eq!((unit["unit"].as_str(), unit["action"].as_str()), (Some("shop/gateway"), Some("blocked")));
    hook.stop();
}

fn decision_unit(request: &str) -> Value {
    serde_json::from_str::<Value>(request).unwrap()["contract"]["unit_ref"].clone()
}
