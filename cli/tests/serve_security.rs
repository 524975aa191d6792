//! The attacks of issue 19, performed against the real binary (`scale-units serve`) on loopback,
//! each seen to fail: a forged admission review that would start a cooldown (without a token,
//! with a wrong one, under `--webhook-dry-run`, without the API server's client certificate), a
//! KEDA listener outside loopback without client certificates, open reads of internals,
//! oversized bodies sent in parallel to grow the process, a unit defined by two contract files,
//! and a FIFO and a link to a device in the watched folder.
//!
//! Since issue 37 a review records nothing, authenticated or not (the Kubernetes watch is the
//! record), so a forged review is answered like any other — its answer, reasons and decision id
//! included, goes only to whoever sent it — and the audit log says whether it authenticated.
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
mod tls;

use std::io::{Read as _, Write as _};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use binary::{Serve, Served};
use http_body_util::{BodyExt as _, Full};
use hyper::body::Bytes;
use kubernetes::{Http, certificate, gateway_contract, gateway_push, scale_review, temp_dir, verdict, write_contract};
use rustls::pki_types::CertificateDer;
use serde_json::{Value, json};
use tls::{Authority, https};

const TOKEN: &str = "security-test-token";
const BEARER: &str = "Bearer security-test-token";

/// `scale-units serve ARGS`, owning `dir`.
fn serve(dir: &Path, args: &[&str]) -> Served {
    Serve::new(args).owning(dir).start()
}

/// `scale-units serve ARGS`, owning `dir`, its audit log in `dir/audit.jsonl`.
fn serve_audited(dir: &Path, args: &[&str]) -> Served {
    Serve::audited(&dir.join("audit.jsonl"), args).owning(dir).start()
}

/// The first `count` admission lines of `dir/audit.jsonl` (written by a task of their own: waited
/// for, at most 10 s).
async fn admission_lines(dir: &Path, count: usize) -> Vec<Value> {
    let audit = dir.join("audit.jsonl");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let lines: Vec<Value> = std::fs::read_to_string(&audit)
            .unwrap_or_default()
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|line| line["source"] == "admission")
            .collect();
        if lines.len() >= count {
            return lines;
        }
        assert!(Instant::now() < deadline, "{} admission lines of {count}: {lines:?}", lines.len());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A folder with `shop/gateway`'s contract (the example's cooldowns: 60 s up, 300 s down), a
/// server certificate and the token.
fn webhook_dir(name: &str) -> (PathBuf, CertificateDer<'static>) {
    let dir = temp_dir(name);
    let contracts = dir.join("contracts");
    std::fs::create_dir_all(&contracts).unwrap();
    // Cooldowns short enough to wait out: a new service cannot vouch for the units' past, so its
    // cooldowns count from its start (docs/DECISIONS.md § State); a recorded action restarts them.
    let mut contract = gateway_contract();
    contract["policy"]["scale_up_cooldown_s"] = serde_json::json!(COOLDOWN_S);
    contract["policy"]["scale_down_cooldown_s"] = serde_json::json!(COOLDOWN_S);
    write_contract(&contracts, "shop/gateway", &contract);
    let (cert_pem, key_pem, cert) = certificate();
    std::fs::write(dir.join("tls.crt"), cert_pem).unwrap();
    std::fs::write(dir.join("tls.key"), key_pem).unwrap();
    std::fs::write(dir.join("token"), format!("{TOKEN}\n")).unwrap();
    (dir, cert)
}

fn path_arg(dir: &Path, name: &str) -> String {
    dir.join(name).display().to_string()
}

/// The contract's cooldowns in these tests, in seconds: every check that a review recorded
/// nothing runs within them, well before a recorded action would have elapsed.
const COOLDOWN_S: u64 = 15;

/// Waits out the cooldowns that count from the service's start: `shop/gateway` decides
/// `scale_up` at 3 replicas (within a minute).
async fn until_scale_up(address: SocketAddr, server: &CertificateDer<'static>, token: bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (action, _, reasons) = decision_at_3(address, server, token).await;
        if action == "scale_up" {
            return;
        }
        assert!(Instant::now() < deadline, "still {action} a minute after the start: {reasons}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The action and desired count of `shop/gateway`'s decision at 3 replicas, read with the token.
async fn decision_at_3(address: SocketAddr, server: &CertificateDer<'static>, token: bool) -> (String, u64, String) {
    let headers: &[(&str, &str)] = if token { &[("authorization", BEARER)] } else { &[] };
    let (status, body) =
        https(address, server, None, "GET", "/v1/units/shop/gateway?replicas=3", headers, "").await.unwrap();
    assert_eq!(status, 200, "{body}");
    let answer: Value = serde_json::from_str(&body).unwrap();
    let decision = &answer["decision"];
    (
        decision["action"].as_str().unwrap().to_owned(),
        decision["desired_replicas"].as_u64().unwrap(),
        decision["reasons"].to_string(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admission_review_without_the_token_starts_no_cooldown_and_is_audited_as_unauthenticated() {
    let (dir, cert) = webhook_dir("security-token");
    // Outside loopback (every address): the token is required, here on the webhook too.
    let served = serve_audited(
        &dir,
        &[
            "--listen",
            "0.0.0.0:0",
            "--webhook",
            "--units",
            &path_arg(&dir, "contracts"),
            "--tls-cert",
            &path_arg(&dir, "tls.crt"),
            "--tls-key",
            &path_arg(&dir, "tls.key"),
            "--token-file",
            &path_arg(&dir, "token"),
        ],
    );
    let address = served.http;
    let auth = [("authorization", BEARER)];
    let push = gateway_push(640).to_string();
    let (status, body) =
        https(address, &cert, None, "PUT", "/v1/units/shop/gateway/observations", &auth, &push).await.unwrap();
    assert_eq!(status, 200, "{body}");
    until_scale_up(address, &cert, true).await;

    // The attack: a forged review 3 -> 4, without a token and with a wrong one. It is judged
    // (allowed: the decision goes up) and answered like any review, with the decision's id, but
    // recorded nowhere.
    let forged = scale_review("uid-forged", "shop", "gateway", "deployments", 3, 4).to_string();
    for headers in [&[][..], &[("authorization", "Bearer not-the-token")][..]] {
        let (status, body) = https(address, &cert, None, "POST", "/v1/admission", headers, &forged).await.unwrap();
        assert_eq!(status, 200, "{body}");
        let (allowed, _, warnings, id) = verdict(&serde_json::from_str(&body).unwrap());
        assert!(allowed && id.as_deref().is_some_and(|id| id.starts_with("scale-decision:")), "{body}");
        assert!(warnings.is_empty(), "{warnings:?}");
    }
    // A forged review the decision denies: the denial carries the decision's reasons, bound and
    // id, as any review's does (the answer goes only to its sender).
    let probe = scale_review("uid-probe", "shop", "gateway", "deployments", 3, 12).to_string();
    let (status, body) = https(address, &cert, None, "POST", "/v1/admission", &[], &probe).await.unwrap();
    assert_eq!(status, 200, "{body}");
    let (allowed, message, _, id) = verdict(&serde_json::from_str(&body).unwrap());
    let id = id.unwrap_or_else(|| panic!("no decision id: {body}"));
    assert!(!allowed, "{body}");
    assert!(message.contains("3 -> 12 replicas denied: the decision is scale_up to at most"), "{message}");
    assert!(message.contains("; reasons: ") && message.contains(&format!("decision {id}")), "{message}");
    // No cooldown started: the decision is still the scale-up.
    let (action, desired, reasons) = decision_at_3(address, &cert, true).await;
    assert_eq!(action, "scale_up", "a forged review changed the decision: {reasons}");

    // The API server, with the token: its genuine 3 -> desired is judged and allowed ...
    let genuine = scale_review("uid-genuine", "shop", "gateway", "deployments", 3, i64::try_from(desired).unwrap());
    let (status, body) =
        https(address, &cert, None, "POST", "/v1/admission", &auth, &genuine.to_string()).await.unwrap();
    assert_eq!(status, 200, "{body}");
    let (allowed, message, _, id) = verdict(&serde_json::from_str(&body).unwrap());
    assert!(allowed && id.is_some(), "{message}");
    // ... and records nothing either: the cooldown starts from the change the watch sees, never
    // from a review.
    let (action, _, reasons) = decision_at_3(address, &cert, true).await;
    assert_eq!(action, "scale_up", "a review started a cooldown: {reasons}");

    // The audit log tells them apart: the three forged reviews did not authenticate (their user
    // a claim, the caller its address), the genuine one did.
    let lines = admission_lines(&dir, 4).await;
    assert_eq!(lines.len(), 4, "{lines:?}");
    for (line, uid) in lines[..3].iter().zip(["uid-forged", "uid-forged", "uid-probe"]) {
        assert_eq!(line["detail"]["uid"], uid, "{line}");
        assert_eq!(line["detail"]["authenticated"], false, "{line}");
        assert_eq!(line["detail"]["unauthenticated_attempt"], true, "{line}");
        assert_eq!(
            line["detail"]["claimed_user"]["username"], "system:serviceaccount:kube-system:horizontal-pod-autoscaler",
            "{line}"
        );
        assert!(line["caller"]["username"].is_null(), "the user is a claim, not the caller: {line}");
        assert!(line["caller"]["address"].as_str().is_some_and(|peer| peer.starts_with("127.0.0.1:")), "{line}");
    }
    assert_eq!(lines[2]["allowed"], false, "{}", lines[2]);
    assert_eq!(
        (lines[3]["detail"]["uid"].as_str(), lines[3]["detail"]["authenticated"].as_bool()),
        (Some("uid-genuine"), Some(true))
    );
    assert!(lines[3]["detail"]["claimed_user"].is_null(), "{}", lines[3]);

    // Open reads: health, readiness and metrics only; policies and units need the token.
    for (path, expected) in
        [("/health", 200), ("/ready", 200), ("/v1/policies", 401), ("/v1/units", 401), ("/v1/units/shop/gateway", 401)]
    {
        let (status, body) = https(address, &cert, None, "GET", path, &[], "").await.unwrap();
        assert_eq!(status, expected, "{path}: {body}");
    }
    let (status, metrics) = https(address, &cert, None, "GET", "/metrics", &[], "").await.unwrap();
    assert_eq!(status, 200);
    assert!(metrics.contains("scale_units_admission_unauthenticated_total 3"), "{metrics}");
    let (status, body) = https(address, &cert, None, "GET", "/v1/policies", &auth, "").await.unwrap();
    assert_eq!(status, 200, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dry_run_review_never_starts_a_cooldown() {
    let (dir, cert) = webhook_dir("security-dry-run");
    let served = serve(
        &dir,
        &[
            "--listen",
            "127.0.0.1:0",
            "--webhook",
            "--webhook-dry-run",
            "--units",
            &path_arg(&dir, "contracts"),
            "--tls-cert",
            &path_arg(&dir, "tls.crt"),
            "--tls-key",
            &path_arg(&dir, "tls.key"),
        ],
    );
    let address = served.http;
    let push = gateway_push(640).to_string();
    let (status, body) =
        https(address, &cert, None, "PUT", "/v1/units/shop/gateway/observations", &[], &push).await.unwrap();
    assert_eq!(status, 200, "{body}");
    until_scale_up(address, &cert, false).await;
    // A nonsense 9 -> 1 and a plausible 3 -> 4: both let through in dry run, neither recorded;
    // nor is a server-side dry run's 3 -> 5.
    let mut server_side = scale_review("uid-server-dry", "shop", "gateway", "deployments", 3, 5);
    server_side["request"]["dryRun"] = json!(true);
    for review in [
        scale_review("uid-nonsense", "shop", "gateway", "deployments", 9, 1),
        scale_review("uid-plausible", "shop", "gateway", "deployments", 3, 4),
        server_side,
    ] {
        let (status, body) =
            https(address, &cert, None, "POST", "/v1/admission", &[], &review.to_string()).await.unwrap();
        assert_eq!(status, 200, "{body}");
        let (allowed, _, warnings, _) = verdict(&serde_json::from_str(&body).unwrap());
        assert!(allowed, "dry run allows: {body}");
        // The enforced unit is answered as Warn: what would have been denied says so.
        let nonsense = review["request"]["uid"] == "uid-nonsense";
        let would_deny = warnings.iter().any(|warning| warning.starts_with("scale-units (Warn mode), would deny: "));
        assert_eq!(would_deny, nonsense, "{warnings:?}");
    }
    let (action, _, reasons) = decision_at_3(address, &cert, false).await;
    assert_eq!(action, "scale_up", "a dry run started a cooldown: {reasons}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_servers_client_certificate_authenticates_its_reviews() {
    let (dir, cert) = webhook_dir("security-client-ca");
    let authority = Authority::new("kube-apiserver client CA");
    std::fs::write(dir.join("client-ca.crt"), authority.issuer.pem()).unwrap();
    let served = serve_audited(
        &dir,
        &[
            "--listen",
            "127.0.0.1:0",
            "--webhook",
            "--units",
            &path_arg(&dir, "contracts"),
            "--tls-cert",
            &path_arg(&dir, "tls.crt"),
            "--tls-key",
            &path_arg(&dir, "tls.key"),
            "--webhook-client-ca",
            &path_arg(&dir, "client-ca.crt"),
        ],
    );
    let address = served.http;
    let push = gateway_push(640).to_string();
    let (status, body) =
        https(address, &cert, None, "PUT", "/v1/units/shop/gateway/observations", &[], &push).await.unwrap();
    assert_eq!(status, 200, "{body}");
    until_scale_up(address, &cert, false).await;
    let review = scale_review("uid-1", "shop", "gateway", "deployments", 3, 4).to_string();

    // Probes present no certificate and are answered; a review without one is judged and
    // answered like any other (with the decision's id), and not recorded.
    let (status, _) = https(address, &cert, None, "GET", "/health", &[], "").await.unwrap();
    assert_eq!(status, 200);
    let (status, body) = https(address, &cert, None, "POST", "/v1/admission", &[], &review).await.unwrap();
    assert_eq!(status, 200, "{body}");
    let (allowed, _, warnings, id) = verdict(&serde_json::from_str(&body).unwrap());
    assert!(allowed && id.is_some() && warnings.is_empty(), "{body}");
    // A certificate from another CA does not get past the handshake.
    let stranger = Authority::new("someone else").client("kube-apiserver");
    let refused = https(address, &cert, Some(stranger), "POST", "/v1/admission", &[], &review).await;
    assert!(refused.is_err(), "{refused:?}");
    assert_eq!(decision_at_3(address, &cert, false).await.0, "scale_up", "nothing was recorded");

    // The API server's certificate: judged, allowed, and recorded nowhere either (a review is a
    // question; the watch is the record).
    let apiserver = authority.client("kube-apiserver");
    let (status, body) = https(address, &cert, Some(apiserver), "POST", "/v1/admission", &[], &review).await.unwrap();
    assert_eq!(status, 200, "{body}");
    let (allowed, message, _, id) = verdict(&serde_json::from_str(&body).unwrap());
    assert!(allowed && id.is_some(), "{message}");
    assert_eq!(decision_at_3(address, &cert, false).await.0, "scale_up", "a review started a cooldown");

    // What the certificate changes is what the audit log can vouch for: the review without it
    // did not authenticate (its user a claim), the one with it did (its user the caller's).
    let lines = admission_lines(&dir, 2).await;
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(
        (lines[0]["detail"]["authenticated"].as_bool(), lines[1]["detail"]["authenticated"].as_bool()),
        (Some(false), Some(true))
    );
    assert_eq!(lines[0]["detail"]["unauthenticated_attempt"], true, "{}", lines[0]);
    assert!(lines[0]["caller"]["username"].is_null(), "{}", lines[0]);
    assert_eq!(
        lines[1]["caller"]["username"], "system:serviceaccount:kube-system:horizontal-pod-autoscaler",
        "{}",
        lines[1]
    );
    assert!(lines[1]["detail"]["claimed_user"].is_null(), "{}", lines[1]);
}

#[test]
fn a_keda_listener_outside_loopback_needs_client_certificates() {
    let dir = temp_dir("security-keda");
    let contracts = dir.join("contracts");
    std::fs::create_dir_all(&contracts).unwrap();
    write_contract(&contracts, "shop/gateway", &gateway_contract());
    std::fs::write(dir.join("token"), TOKEN).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_scale-units"))
        .args(["serve", "--listen", "127.0.0.1:0", "--keda-listen", "0.0.0.0:0", "--units"])
        .arg(&contracts)
        .arg("--token-file")
        .arg(dir.join("token"))
        .env("SCALE_UNITS_CACHE_DIR", std::env::temp_dir().join("scale-units-test-cache"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(64), "{stderr}");
    assert!(stderr.contains("not loopback") && stderr.contains("--keda-client-ca"), "{stderr}");
    assert!(!String::from_utf8_lossy(&output.stdout).contains("listening"), "it never listened");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A field of `/proc/PID/status`, in kB.
fn status_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in {status}"))
}

#[test]
fn parallel_oversized_bodies_do_not_grow_the_process() {
    let dir = temp_dir("security-bodies");
    let contracts = dir.join("contracts");
    std::fs::create_dir_all(&contracts).unwrap();
    write_contract(&contracts, "shop/gateway", &gateway_contract());
    let served = serve(&dir, &["--listen", "127.0.0.1:0", "--units", &contracts.display().to_string()]);
    let pid = served.pid();
    let address = served.http;
    // The peak so far (the start) is forgotten: from here the peak is the attack's.
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").unwrap();
    let before = status_kib(pid, "VmHWM:");
    // 8 parallel posts of 16 MiB (four times /v1/admission's 4 MiB limit, which was read in
    // whole to answer 413), each body sent until the service closes the connection.
    const BODY: usize = 16 << 20;
    let senders: Vec<_> = (0..8)
        .map(|_| {
            std::thread::spawn(move || {
                let mut stream = std::net::TcpStream::connect(address).unwrap();
                stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
                let head = format!(
                    "POST /v1/admission HTTP/1.1\r\nhost: loopback\r\ncontent-type: application/json\r\ncontent-length: {BODY}\r\n\r\n"
                );
                stream.write_all(head.as_bytes()).unwrap();
                let chunk = vec![b' '; 64 << 10];
                let mut sent = 0;
                while sent < BODY && stream.write_all(&chunk).is_ok() {
                    sent += chunk.len();
                }
                let mut answer = Vec::new();
                let _ = stream.read_to_end(&mut answer);
                String::from_utf8_lossy(&answer).into_owned()
            })
        })
        .collect();
    for sender in senders {
        let answer = sender.join().unwrap();
        // A reset, a 413, or (the webhook answers every body) a well-formed denial of an empty one.
        assert!(
            answer.is_empty() || answer.starts_with("HTTP/1.1 413") || answer.contains("AdmissionReview"),
            "{answer}"
        );
    }
    let after = status_kib(pid, "VmHWM:");
    eprintln!("peak RSS under 8 parallel 16 MiB posts: {before} kB -> {after} kB");
    // Before: 8 × 16 MiB buffered (+128 MiB and more). A generous bound: +32 MiB.
    assert!(after.saturating_sub(before) < 32 << 10, "peak RSS grew from {before} kB to {after} kB");
    let mut http = std::net::TcpStream::connect(address).unwrap();
    http.write_all(b"GET /health HTTP/1.1\r\nhost: loopback\r\nconnection: close\r\n\r\n").unwrap();
    let mut answer = String::new();
    http.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "still serving: {answer}");
}

/// Polls `check` until it holds (the folder is rescanned every 50 ms), for at most 60 s.
async fn eventually<F: std::future::Future<Output = bool>>(what: &str, mut check: impl FnMut() -> F) {
    let started = Instant::now();
    while !check().await {
        assert!(started.elapsed() < Duration::from_secs(60), "never: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn contract_ids(address: SocketAddr) -> Vec<String> {
    let (status, list) = Http::connect(address).await.send("GET", "/v1/units", &[], "").await;
    assert_eq!(status, 200, "{list}");
    list["units"].as_array().unwrap().iter().map(|unit| unit["contract_id"].as_str().unwrap().to_owned()).collect()
}

async fn defined_twice(address: SocketAddr) -> Option<u64> {
    let tcp = tokio::net::TcpStream::connect(address).await.unwrap();
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tcp)).await.unwrap();
    tokio::spawn(connection);
    let request = hyper::Request::get("/metrics").header("host", "loopback").body(Full::new(Bytes::new())).unwrap();
    let response = sender.send_request(request).await.unwrap();
    let text = String::from_utf8(response.into_body().collect().await.unwrap().to_bytes().to_vec()).unwrap();
    text.lines()
        .find_map(|line| line.strip_prefix("scale_units_units_defined_twice "))
        .and_then(|count| count.trim().parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unit_defined_twice_keeps_its_contract_and_is_rebuilt_from_the_file_left() {
    let dir = temp_dir("security-twice");
    let contracts = dir.join("contracts");
    std::fs::create_dir_all(&contracts).unwrap();
    write_contract(&contracts, "shop/gateway", &gateway_contract());
    let served = serve(
        &dir,
        &["--listen", "127.0.0.1:0", "--units", &contracts.display().to_string(), "--units-interval-ms", "50"],
    );
    let address = served.http;
    let first = contract_ids(address).await;
    assert_eq!(first.len(), 1);
    assert_eq!(defined_twice(address).await, Some(0));

    // A second file for the unit (JSON is YAML), with other bounds: refused, counted, the
    // contract of the first stays.
    let mut wider = gateway_contract();
    wider["policy"]["max_replicas"] = json!(20);
    std::fs::write(contracts.join("shop.gateway.yml"), wider.to_string()).unwrap();
    eventually("the unit counted as defined twice", || async { defined_twice(address).await == Some(1) }).await;
    assert_eq!(contract_ids(address).await, first, "neither file taken over");

    // The first file goes: the unit is rebuilt from the one left, never left without a contract.
    std::fs::remove_file(contracts.join("shop.gateway.json")).unwrap();
    eventually("the unit rebuilt from shop.gateway.yml", || async {
        let ids = contract_ids(address).await;
        assert_eq!(ids.len(), 1, "the unit has a contract throughout");
        ids != first
    })
    .await;
    assert_eq!(defined_twice(address).await, Some(0));
    // The webhook judges 3 -> 12 against that contract (no evidence: blocked, denied), never
    // "no scale-unit contract … not checked".
    let review = scale_review("uid-12", "shop", "gateway", "deployments", 3, 12).to_string();
    let (status, answer) = Http::connect(address).await.send("POST", "/v1/admission", &[], &review).await;
    assert_eq!(status, 200, "{answer}");
    let (allowed, message, warnings, _) = verdict(&answer);
    assert!(!allowed && message.contains("blocked"), "{message} {warnings:?}");

    // The last file goes: the unit goes.
    std::fs::remove_file(contracts.join("shop.gateway.yml")).unwrap();
    eventually("the unit removed", || async { contract_ids(address).await.is_empty() }).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watched_folder_reads_regular_files_only() {
    let dir = temp_dir("security-watch");
    let watched = dir.join("watched");
    std::fs::create_dir_all(&watched).unwrap();
    let served = serve(
        &dir,
        &["--listen", "127.0.0.1:0", "--watch", &watched.display().to_string(), "--watch-interval-ms", "50"],
    );
    let address = served.http;
    // A FIFO (read, it blocks until a writer comes: never), a link to an endless device and a
    // 1 GiB sparse file, all named *.wasm.
    let made = Command::new("mkfifo").arg(watched.join("fifo.wasm")).status().unwrap();
    assert!(made.success());
    std::os::unix::fs::symlink("/dev/zero", watched.join("zero.wasm")).unwrap();
    std::fs::File::create(watched.join("huge.wasm")).unwrap().set_len(1 << 30).unwrap();
    // Let the watcher meet them before the genuine component arrives (a stalled watcher never
    // stages it).
    tokio::time::sleep(Duration::from_millis(500)).await;
    let component = scale_units_host::default_component_path().unwrap();
    std::fs::copy(&component, watched.join("genuine.wasm.part")).unwrap();
    std::fs::rename(watched.join("genuine.wasm.part"), watched.join("genuine.wasm")).unwrap();
    // The same bytes as the active policy: staged again at once (history), nothing to compile.
    eventually("the genuine component staged", || async {
        let (status, policies) = Http::connect(address).await.send("GET", "/v1/policies", &[], "").await;
        assert_eq!(status, 200, "{policies}");
        policies["history"].as_array().unwrap().iter().any(|event| {
            event["event"] == "staged"
                && event["source"].as_str().is_some_and(|source| source.ends_with("genuine.wasm"))
        })
    })
    .await;
    let rss = status_kib(served.pid(), "VmHWM:");
    assert!(rss < 512 << 10, "the huge file was not read whole: peak {rss} kB");
}

/// The built component with a custom section naming `variant`: another digest, the same code.
fn variant(component: &[u8], variant: &str) -> Vec<u8> {
    let mut bytes = component.to_vec();
    let section = wasm_encoder::CustomSection {
        name: "scale-units-build".into(),
        data: std::borrow::Cow::Owned(variant.as_bytes().to_vec()),
    };
    wasm_encoder::ComponentSection::append_to_component(&section, &mut bytes);
    bytes
}

/// A request on a connection of its own: status and JSON body.
async fn call(address: SocketAddr, method: &str, path: &str, body: &[u8]) -> (u16, Value) {
    let tcp = tokio::net::TcpStream::connect(address).await.unwrap();
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tcp)).await.unwrap();
    tokio::spawn(connection);
    let request = hyper::Request::builder()
        .method(method)
        .uri(path)
        .header("host", "loopback")
        .header("authorization", BEARER)
        .body(Full::new(Bytes::from(body.to_vec())))
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    let status = response.status().as_u16();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap_or_else(|error| panic!("{error}: {bytes:?}")))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn staged_policies_are_capped_and_pins_are_references() {
    let dir = temp_dir("security-staged");
    std::fs::write(dir.join("token"), TOKEN).unwrap();
    // Staging compiles in this debug build, on a shared machine: no request deadline in the way.
    let token = path_arg(&dir, "token");
    let args =
        ["--listen", "127.0.0.1:0", "--token-file", &token, "--max-staged", "2", "--request-timeout-ms", "600000"];
    let served = serve(&dir, &args);
    let address = served.http;
    let component = std::fs::read(scale_units_host::default_component_path().unwrap()).unwrap();
    let (status, listing) = call(address, "GET", "/v1/policies", b"").await;
    assert_eq!(status, 200, "{listing}");
    let active = listing["active"]["digest"].as_str().unwrap().to_owned();
    let digests: Vec<String> =
        listing["staged"].as_array().unwrap().iter().map(|s| s["digest"].as_str().unwrap().to_owned()).collect();
    assert_eq!(digests, std::slice::from_ref(&active));

    // Two variants staged under a cap of 2: the first, unused, is evicted for the second.
    let (status, a) = call(address, "POST", "/v1/policies", &variant(&component, "a")).await;
    assert_eq!(status, 201, "{a}");
    let (status, b) = call(address, "POST", "/v1/policies", &variant(&component, "b")).await;
    assert_eq!(status, 201, "{b}");
    let (a, b) = (a["digest"].as_str().unwrap().to_owned(), b["digest"].as_str().unwrap().to_owned());
    let (_, listing) = call(address, "GET", "/v1/policies", b"").await;
    let mut staged: Vec<&str> =
        listing["staged"].as_array().unwrap().iter().map(|s| s["digest"].as_str().unwrap()).collect();
    staged.sort_unstable();
    let mut expected = vec![active.as_str(), b.as_str()];
    expected.sort_unstable();
    assert_eq!(staged, expected, "{listing}");
    assert!(
        listing["history"]
            .as_array()
            .unwrap()
            .iter()
            .any(|event| event["event"] == "unstaged" && event["digest"] == a.as_str() && event["evicted"] == true),
        "{listing}"
    );

    // Every staged policy in use (active, shadowed): a third is refused, and b cannot be dropped.
    assert_eq!(call(address, "POST", &format!("/v1/policies/{b}/shadow"), b"").await.0, 200);
    let (status, refused) = call(address, "POST", "/v1/policies", &variant(&component, "c")).await;
    assert_eq!((status, refused["error"]["code"].as_str()), (409, Some("staged_full")), "{refused}");
    let (status, refused) = call(address, "DELETE", &format!("/v1/policies/{b}"), b"").await;
    assert_eq!((status, refused["error"]["code"].as_str()), (409, Some("policy_in_use")), "{refused}");
    assert_eq!(call(address, "DELETE", "/v1/policies/shadow", b"").await.0, 200);
    let (status, dropped) = call(address, "DELETE", &format!("/v1/policies/{b}"), b"").await;
    assert_eq!(status, 200, "{dropped}");
    let (status, refused) = call(address, "DELETE", &format!("/v1/policies/{active}"), b"").await;
    assert_eq!((status, refused["error"]["code"].as_str()), (409, Some("policy_in_use")), "{refused}");

    // A pin's unit_ref is a bounded reference: a megabyte of it is refused, a reference pinned.
    let huge = json!({"unit_ref": "u".repeat(1 << 20)}).to_string();
    let (status, refused) = call(address, "POST", &format!("/v1/policies/{active}/pin"), huge.as_bytes()).await;
    assert_eq!(status, 413, "over the body limit: {refused}");
    let long = json!({"unit_ref": format!("unit:{}", "u".repeat(300))}).to_string();
    let (status, refused) = call(address, "POST", &format!("/v1/policies/{active}/pin"), long.as_bytes()).await;
    assert_eq!((status, refused["error"]["code"].as_str()), (400, Some("invalid_ref")), "{refused}");
    let spaced = json!({"unit_ref": "unit:shop gateway"}).to_string();
    assert_eq!(call(address, "POST", &format!("/v1/policies/{active}/pin"), spaced.as_bytes()).await.0, 400);
    let good = json!({"unit_ref": "unit:shop/gateway"}).to_string();
    assert_eq!(call(address, "POST", &format!("/v1/policies/{active}/pin"), good.as_bytes()).await.0, 200);
    let (_, listing) = call(address, "GET", "/v1/policies", b"").await;
    assert_eq!(listing["pins"].as_object().unwrap().len(), 1, "{listing}");
}

#[test]
fn the_redis_url_comes_from_a_file_and_no_message_shows_its_password() {
    let dir = temp_dir("security-redis");
    let contracts = dir.join("contracts");
    std::fs::create_dir_all(&contracts).unwrap();
    write_contract(&contracts, "shop/gateway", &gateway_contract());
    // Nothing listens on port 1: the connection fails, and the message names no password.
    std::fs::write(dir.join("redis-url"), "redis://scale-units:hunter2-secret@127.0.0.1:1/0\n").unwrap();
    let from_file = Command::new(env!("CARGO_BIN_EXE_scale-units"))
        .args(["serve", "--listen", "127.0.0.1:0", "--units"])
        .arg(&contracts)
        .arg("--redis-url-file")
        .arg(dir.join("redis-url"))
        .env("SCALE_UNITS_CACHE_DIR", std::env::temp_dir().join("scale-units-test-cache"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&from_file.stderr);
    assert!(!from_file.status.success(), "{stderr}");
    assert!(stderr.contains("Redis") && !stderr.contains("hunter2"), "{stderr}");
    // Unreadable as a URL, from the environment: the message shows the host, never the secret.
    let from_env = Command::new(env!("CARGO_BIN_EXE_scale-units"))
        .args(["serve", "--listen", "127.0.0.1:0", "--units"])
        .arg(&contracts)
        .env("SCALE_UNITS_REDIS_URL", "redis://user:hunter2-secret@[not-a-host/0")
        .env("SCALE_UNITS_CACHE_DIR", std::env::temp_dir().join("scale-units-test-cache"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&from_env.stderr);
    assert!(!from_env.status.success(), "{stderr}");
    assert!(stderr.contains("Redis") && !stderr.contains("hunter2"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}
