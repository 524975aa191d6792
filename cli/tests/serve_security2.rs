//! The attacks of issue 25 ("security, round two"), performed against the real binary
//! (`scale-units serve`) on loopback, each seen to fail, with its figure: idle sockets held against
//! the webhook's port from one address and from many, padded reviews posted at once, anonymous
//! reviews claiming the break-glass group or a recovery (answered like any review, recorded
//! nowhere, audited as unauthenticated), one role's token on another role's
//! routes, unbounded pins, caches and sources files, and JSON with duplicate keys.
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
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use binary::Serve;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Bytes;
use kubernetes::{certificate, gateway_contract, gateway_push, scale_review, temp_dir, verdict, write_contract};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::{Value, json};
use tls::{Authority, https};

/// The API server's webhook timeout in the shipped `webhook.yaml` (and its default ceiling).
const REVIEW_DEADLINE: Duration = Duration::from_secs(3);

/// A folder with `shop/gateway`'s contract, a server certificate, the API server's client CA and
/// one token file per role.
struct Setup {
    dir: PathBuf,
    server: CertificateDer<'static>,
    apiserver: Authority,
}

impl Setup {
    fn new(name: &str) -> Self {
        let dir = temp_dir(name);
        std::fs::create_dir_all(dir.join("contracts")).unwrap();
        std::fs::create_dir_all(dir.join("state")).unwrap();
        write_contract(&dir.join("contracts"), "shop/gateway", &gateway_contract());
        let (cert_pem, key_pem, server) = certificate();
        std::fs::write(dir.join("tls.crt"), cert_pem).unwrap();
        std::fs::write(dir.join("tls.key"), key_pem).unwrap();
        let apiserver = Authority::new("kube-apiserver client CA");
        std::fs::write(dir.join("client-ca.crt"), apiserver.issuer.pem()).unwrap();
        for role in ["admin", "push", "read"] {
            std::fs::write(dir.join(role), format!("{role}-token\n")).unwrap();
        }
        Self { dir, server, apiserver }
    }

    fn path(&self, name: &str) -> String {
        self.dir.join(name).display().to_string()
    }

    /// The webhook's arguments: HTTPS outside loopback with the API server's client CA, the
    /// units, the state folder and the three roles' tokens.
    fn webhook_args(&self) -> Vec<String> {
        let mut args: Vec<String> = ["--listen", "0.0.0.0:0", "--webhook"].map(str::to_owned).to_vec();
        for (flag, file) in [
            ("--units", "contracts"),
            ("--state-dir", "state"),
            ("--tls-cert", "tls.crt"),
            ("--tls-key", "tls.key"),
            ("--webhook-client-ca", "client-ca.crt"),
            ("--token-file", "admin"),
            ("--push-token-file", "push"),
            ("--read-token-file", "read"),
        ] {
            args.extend([flag.to_owned(), self.path(file)]);
        }
        args
    }
}

/// The listener limits and the override group of the shipped Deployment (its configuration,
/// `serve.yaml` of `deploy/kubernetes/serve-config.yaml`), as `--flag value` pairs.
fn deployment_limits() -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/kubernetes/serve-config.yaml");
    let config_map: serde_json::Value = serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let config: serde_json::Value = serde_saphyr::from_str(config_map["data"]["serve.yaml"].as_str().unwrap()).unwrap();
    let mut limits = Vec::new();
    for (flag, field) in [
        ("--handshake-timeout-ms", "handshake_timeout_ms"),
        ("--header-timeout-ms", "header_timeout_ms"),
        ("--request-timeout-ms", "request_timeout_ms"),
        ("--max-connections", "max_connections"),
        ("--reserved-connections", "reserved_connections"),
        ("--max-connections-per-peer", "max_connections_per_peer"),
    ] {
        let value = config[field].as_u64().unwrap_or_else(|| panic!("the Deployment sets {field}"));
        limits.extend([flag.to_owned(), value.to_string()]);
    }
    let group = config["override_groups"][0].as_str().expect("the Deployment sets override_groups");
    limits.extend(["--override-group".to_owned(), group.to_owned()]);
    limits
}

/// A request over plain HTTP on a connection of its own: the status and the body.
async fn http(address: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> (u16, String) {
    let tcp = tokio::net::TcpStream::connect(address).await.unwrap();
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tcp)).await.unwrap();
    tokio::spawn(connection);
    let mut request = hyper::Request::builder().method(method).uri(path).header("host", "loopback");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = sender.send_request(request.body(Full::new(Bytes::from(body.to_vec()))).unwrap()).await.unwrap();
    let status = response.status().as_u16();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

/// The value of a `/metrics` sample (`name` with its labels), 0 when absent.
fn sample(metrics: &str, name: &str) -> f64 {
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(name).and_then(|rest| rest.strip_prefix(' ')))
        .map_or(0.0, |value| value.trim().parse().unwrap())
}

/// Idle sockets against `target`: `count` connections from `sources` (round robin), each sending
/// nothing and reopened as soon as the service drops it (after `backoff`), until `stop`. Counts
/// the connections made and how long the service held each.
struct Flood {
    stop: Arc<AtomicBool>,
    opened: Arc<AtomicUsize>,
    tasks: Vec<tokio::task::JoinHandle<Vec<Duration>>>,
}

impl Flood {
    fn start(target: SocketAddr, sources: &[Ipv4Addr], count: usize, backoff: Duration) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let opened = Arc::new(AtomicUsize::new(0));
        let tasks = (0..count)
            .map(|index| {
                let source = sources[index % sources.len()];
                let (stop, opened) = (Arc::clone(&stop), Arc::clone(&opened));
                tokio::spawn(async move {
                    let mut held = Vec::new();
                    while !stop.load(Ordering::Relaxed) {
                        let socket = tokio::net::TcpSocket::new_v4().unwrap();
                        socket.bind(SocketAddr::new(IpAddr::V4(source), 0)).unwrap();
                        let connected = tokio::time::timeout(Duration::from_secs(5), socket.connect(target)).await;
                        let Ok(Ok(mut stream)) = connected else { continue };
                        opened.fetch_add(1, Ordering::Relaxed);
                        let since = Instant::now();
                        let mut byte = [0u8; 1];
                        // Until the service closes it (or the flood stops): it never sends a byte.
                        tokio::select! {
                            _ = tokio::io::AsyncReadExt::read(&mut stream, &mut byte) => held.push(since.elapsed()),
                            () = async { while !stop.load(Ordering::Relaxed) {
                                tokio::time::sleep(Duration::from_millis(100)).await;
                            } } => {}
                        }
                        drop(stream);
                        tokio::time::sleep(backoff).await;
                    }
                    held
                })
            })
            .collect();
        Self { stop, opened, tasks }
    }

    /// Stops it: the connections made, and the longest time the service held an idle one.
    async fn stop(self) -> (usize, Option<Duration>) {
        self.stop.store(true, Ordering::Relaxed);
        let mut held = Vec::new();
        for task in self.tasks {
            held.extend(task.await.unwrap());
        }
        held.sort_unstable();
        (self.opened.load(Ordering::Relaxed), held.last().copied())
    }
}

/// `n` reviews one after the other, each on a connection of its own (with `identity`, the API
/// server's certificate): how many were answered within the API server's timeout, and the slowest.
async fn reviews_in_time(
    address: SocketAddr,
    server: &CertificateDer<'static>,
    identity: Option<&(CertificateDer<'static>, PrivateKeyDer<'static>)>,
    n: usize,
) -> (usize, Duration) {
    let mut answered = 0;
    let mut slowest = Duration::ZERO;
    for index in 0..n {
        let review = scale_review(&format!("uid-flood-{index}"), "shop", "gateway", "deployments", 3, 4).to_string();
        let started = Instant::now();
        let call = https(
            address,
            server,
            identity.map(|(cert, key)| (cert.clone(), key.clone_key())),
            "POST",
            "/v1/admission",
            &[],
            &review,
        );
        if let Ok(Ok((200, body))) = tokio::time::timeout(REVIEW_DEADLINE, call).await {
            assert!(body.contains("AdmissionReview"), "{body}");
            answered += 1;
        }
        slowest = slowest.max(started.elapsed());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    (answered, slowest)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_sockets_from_one_address_or_many_do_not_keep_the_api_server_out() {
    let setup = Setup::new("security2-idle");
    let served = Serve::new(setup.webhook_args()).args(deployment_limits()).owning(&setup.dir).start();
    let target = served.http;
    let apiserver = setup.apiserver.client("kube-apiserver");
    const IDLE: usize = 1100;
    const REVIEWS: usize = 10;
    // The attacker reopens each connection the service drops, a quarter of a second later.
    let backoff = Duration::from_millis(250);

    // From one address (a pod of its own): the cap per peer holds it; the API server, with its
    // certificate or without one (the shipped Deployment asks for none), is answered in time.
    let flood = Flood::start(target, &[Ipv4Addr::new(127, 0, 0, 2)], IDLE, backoff);
    tokio::time::sleep(Duration::from_secs(4)).await;
    let (with_certificate, slowest_certified) = reviews_in_time(target, &setup.server, Some(&apiserver), REVIEWS).await;
    let (anonymous, slowest_anonymous) = reviews_in_time(target, &setup.server, None, REVIEWS).await;
    let (opened, held) = flood.stop().await;
    eprintln!(
        "{IDLE} idle sockets from one address ({opened} opened): {with_certificate}/{REVIEWS} reviews with the API \
         server's certificate answered within 3 s (slowest {slowest_certified:?}), {anonymous}/{REVIEWS} without \
         (slowest {slowest_anonymous:?}); an idle socket held at most {held:?}"
    );
    assert_eq!(with_certificate, REVIEWS, "reviews with the client certificate missed the webhook's timeout");
    assert_eq!(anonymous, REVIEWS, "reviews from another address missed the webhook's timeout");
    // Idle sockets go at the first-bytes deadline (3 s), long before the 10 s head deadline.
    assert!(held.is_some_and(|held| held < Duration::from_secs(10)), "{held:?}");

    // From 40 addresses (under the cap per peer each, over the connection cap together): the
    // reserve keeps room for the API server's certificate.
    let sources: Vec<Ipv4Addr> = (10..50).map(|last| Ipv4Addr::new(127, 0, 1, last)).collect();
    let flood = Flood::start(target, &sources, IDLE, backoff);
    tokio::time::sleep(Duration::from_secs(4)).await;
    let (with_certificate, slowest_certified) = reviews_in_time(target, &setup.server, Some(&apiserver), REVIEWS).await;
    let (opened, _) = flood.stop().await;
    eprintln!(
        "{IDLE} idle sockets from {} addresses ({opened} opened): {with_certificate}/{REVIEWS} reviews with the API \
         server's certificate answered within 3 s (slowest {slowest_certified:?})",
        sources.len()
    );
    assert_eq!(with_certificate, REVIEWS, "the reserve did not keep room for the API server");
    // Counted: the connections closed over an address's cap and at the first-bytes deadline.
    let (status, metrics) = https(target, &setup.server, None, "GET", "/metrics", &[], "").await.unwrap();
    assert_eq!(status, 200);
    let closed =
        |reason: &str| sample(&metrics, &format!("scale_units_connections_closed_total{{reason=\"{reason}\"}}"));
    let (peer_cap, no_certificate, first_bytes) = (closed("peer_cap"), closed("no_certificate"), closed("first_bytes"));
    eprintln!(
        "closed by the service: {peer_cap} over an address's cap, {no_certificate} in the reserve without a certificate, {first_bytes} at the first-bytes deadline"
    );
    assert!(peer_cap > 0.0 && first_bytes > 0.0, "{metrics}");
    drop(served);
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

/// A review 3 -> 4 of `shop/gateway` padded to `size` bytes with a long array in its object, as
/// an attacker pads one to make parsing cost memory.
fn padded_review(uid: &str, size: usize) -> Vec<u8> {
    let mut review = scale_review(uid, "shop", "gateway", "deployments", 3, 4);
    review["request"]["object"]["status"]["padding"] = json!([]);
    let text = review.to_string();
    let (head, tail) = text.split_once("\"padding\":[]").unwrap();
    let elements = (size - head.len() - tail.len() - "\"padding\":[0]".len()) / 2;
    let mut body = Vec::with_capacity(size);
    body.extend_from_slice(head.as_bytes());
    body.extend_from_slice(b"\"padding\":[0");
    for _ in 0..elements {
        body.extend_from_slice(b",0");
    }
    body.extend_from_slice(b"]");
    body.extend_from_slice(tail.as_bytes());
    body
}

/// Posts `body` to `/v1/admission` over plain HTTP: the answer's head and body.
fn post_review(address: SocketAddr, body: &[u8]) -> String {
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    let head = format!(
        "POST /v1/admission HTTP/1.1\r\nhost: loopback\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    let _ = stream.write_all(body);
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer).into_owned()
}

#[test]
fn padded_reviews_at_once_raise_peak_memory_by_a_bounded_figure() {
    let dir = temp_dir("security2-padded");
    let contracts = dir.join("contracts");
    std::fs::create_dir_all(&contracts).unwrap();
    write_contract(&contracts, "shop/gateway", &gateway_contract());
    let served =
        Serve::new(["--listen", "127.0.0.1:0", "--units", &contracts.display().to_string()]).owning(&dir).start();
    let (pid, address) = (served.pid(), served.http);
    // Just under the cap (3 MiB + 64 KiB): about 1.6 million array elements each.
    let size = 3_200_000;
    let bodies: Vec<Arc<Vec<u8>>> = (0..8).map(|i| Arc::new(padded_review(&format!("uid-pad-{i}"), size))).collect();
    assert!(bodies.iter().all(|body| body.len() <= size), "{}", bodies[0].len());
    // The peak so far (the start) is forgotten: from here the peak is the attack's.
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").unwrap();
    let before = status_kib(pid, "VmHWM:");
    let alone = post_review(address, &bodies[0]);
    assert!(alone.starts_with("HTTP/1.1 200") && alone.contains("\"uid\":\"uid-pad-0\""), "judged: {alone:.400}");
    let after_one = status_kib(pid, "VmHWM:");
    let posts: Vec<_> = bodies
        .iter()
        .map(|body| {
            let body = Arc::clone(body);
            std::thread::spawn(move || post_review(address, &body))
        })
        .collect();
    for (index, post) in posts.into_iter().enumerate() {
        let answer = post.join().unwrap();
        // Read and judged (its uid echoed), not refused as malformed.
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer:.400}");
        assert!(answer.contains(&format!("\"uid\":\"uid-pad-{index}\"")), "{answer:.400}");
        assert!(!answer.contains("is not an admission.k8s.io/v1 AdmissionReview"), "{answer:.400}");
    }
    let after = status_kib(pid, "VmHWM:");
    eprintln!(
        "peak RSS: {before} kB; one padded review of {size} bytes: +{} kB; eight at once: +{} kB",
        after_one.saturating_sub(before),
        after.saturating_sub(before)
    );
    // Before: +137 MB for one, +291-402 MB for eight (a tree of the padding). Now the bodies
    // themselves (8 x 3.05 MiB) and little more.
    assert!(after.saturating_sub(before) < 64 << 10, "peak RSS grew from {before} kB to {after} kB");
    // Past the cap: not read, answered a well-formed denial.
    let over = padded_review("uid-over", 2 * (3 << 19) + (64 << 10) + 1);
    let answer = post_review(address, &over);
    assert!(answer.contains("AdmissionReview") && answer.contains("\"allowed\":false"), "{answer:.400}");
}

/// The audit log's admission lines.
fn admission_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|line| line["source"] == "admission")
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anonymous_reviews_are_answered_like_any_other_record_nothing_and_are_logged_with_their_address() {
    let setup = Setup::new("security2-anonymous");
    let audit = setup.dir.join("audit.jsonl");
    let served = Serve::audited(&audit, setup.webhook_args()).args(deployment_limits()).owning(&setup.dir).start();
    let address = served.http;
    let metrics = || async {
        let (status, text) = https(address, &setup.server, None, "GET", "/metrics", &[], "").await.unwrap();
        assert_eq!(status, 200);
        text
    };
    let overrides = r#"scale_units_admission_overrides_total{group="scale-units:break-glass"}"#;
    let recoveries = "scale_units_admission_recoveries_total";

    // Alice, claiming the break-glass group, 3 -> 12 (no evidence: blocked, denied); and a forged
    // 1 -> 2 (below min_replicas 2: a recovery) — both without the API server's certificate.
    // Since issue 37 a review records nothing, so the claim is judged from the review's userInfo
    // like any other: the override and the recovery are in their answers, which go only to their
    // sender (the override that counts is the one the Kubernetes watch sees applied).
    let mut glass = scale_review("uid-glass", "shop", "gateway", "deployments", 3, 12);
    glass["request"]["userInfo"] = json!({"username": "alice", "groups": ["scale-units:break-glass"]});
    let recovery = scale_review("uid-recovery", "shop", "gateway", "deployments", 1, 2);
    let (status, body) =
        https(address, &setup.server, None, "POST", "/v1/admission", &[], &glass.to_string()).await.unwrap();
    assert_eq!(status, 200);
    let (allowed, _, warnings, _) = verdict(&serde_json::from_str(&body).unwrap());
    assert!(allowed, "overridden in its answer: {body}");
    assert!(
        warnings.iter().any(|warning| warning.contains("OVERRIDE by alice (group scale-units:break-glass")),
        "{warnings:?}"
    );
    let (status, body) =
        https(address, &setup.server, None, "POST", "/v1/admission", &[], &recovery.to_string()).await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(verdict(&serde_json::from_str(&body).unwrap()).0, "a recovery in its answer: {body}");
    // A token of another role (the read role's) authenticates no review either.
    let read = [("authorization", "Bearer read-token")];
    let (status, _) =
        https(address, &setup.server, None, "POST", "/v1/admission", &read, &glass.to_string()).await.unwrap();
    assert_eq!(status, 200);
    let text = metrics().await;
    let counted = (sample(&text, overrides), sample(&text, recoveries));
    let attempts = sample(&text, "scale_units_admission_unauthenticated_total");
    eprintln!(
        "after 3 anonymous reviews: overrides {}, recoveries {}, unauthenticated {attempts}",
        counted.0, counted.1
    );
    // The counters count answers: two overrides answered (Alice twice), one recovery.
    assert_eq!(counted, (2.0, 1.0), "{text}");
    assert_eq!(attempts, 3.0);
    // Nothing recorded: the state folder's journal is empty, no last action known.
    let (status, unit) =
        https(address, &setup.server, None, "GET", "/v1/units/shop/gateway?replicas=3", &read, "").await.unwrap();
    assert_eq!(status, 200, "{unit}");
    let unit: Value = serde_json::from_str(&unit).unwrap();
    assert_eq!(unit["journal"]["store"], "state-dir", "{unit}");
    assert_eq!(unit["journal"]["entries"], json!([]), "{unit}");
    assert_eq!(unit["last_action"]["source"], "unknown", "{unit}");
    // The audit log: attempts with their address, Alice a claim — her override and the recovery
    // logged as what they were answered, on lines that say they did not authenticate.
    let lines = tokio::task::spawn_blocking({
        let audit = audit.clone();
        move || {
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                let lines = admission_lines(&audit);
                if lines.len() >= 3 || Instant::now() > deadline {
                    return lines;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    })
    .await
    .unwrap();
    assert_eq!(lines.len(), 3, "{lines:?}");
    for line in &lines {
        assert_eq!(line["allowed"], true, "{line}");
        assert_eq!(line["detail"]["authenticated"], false, "{line}");
        assert_eq!(line["detail"]["unauthenticated_attempt"], true, "{line}");
        assert!(line["caller"]["address"].as_str().is_some_and(|peer| peer.starts_with("127.0.0.1:")), "{line}");
        assert!(line["caller"]["username"].is_null(), "the user is a claim, not the caller: {line}");
    }
    for glass in [&lines[0], &lines[2]] {
        assert_eq!(glass["detail"]["claimed_user"]["username"], "alice", "{glass}");
        assert_eq!(glass["detail"]["claimed_override"], true, "{glass}");
        assert_eq!(glass["override"]["group"], "scale-units:break-glass", "{glass}");
        assert_eq!(glass["detail"]["recovery"], false, "{glass}");
    }
    assert_eq!(lines[1]["detail"]["recovery"], true, "{}", lines[1]);
    assert!(lines[1]["override"].is_null(), "{}", lines[1]);

    // The same reviews with the API server's certificate: the same answers, counted and audited
    // as authenticated (the user the caller's, no claim).
    let apiserver = setup.apiserver.client("kube-apiserver");
    glass["request"]["uid"] = json!("uid-glass-2");
    let (_, body) = https(
        address,
        &setup.server,
        Some((apiserver.0.clone(), apiserver.1.clone_key())),
        "POST",
        "/v1/admission",
        &[],
        &glass.to_string(),
    )
    .await
    .unwrap();
    assert!(verdict(&serde_json::from_str(&body).unwrap()).0, "overridden: {body}");
    let (_, body) = https(address, &setup.server, Some(apiserver), "POST", "/v1/admission", &[], &recovery.to_string())
        .await
        .unwrap();
    assert!(verdict(&serde_json::from_str(&body).unwrap()).0, "recovered: {body}");
    let text = metrics().await;
    assert_eq!((sample(&text, overrides), sample(&text, recoveries)), (3.0, 2.0), "{text}");
    assert_eq!(sample(&text, "scale_units_admission_unauthenticated_total"), 3.0, "{text}");
    let lines = tokio::task::spawn_blocking(move || {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let lines = admission_lines(&audit);
            if lines.len() >= 5 || Instant::now() > deadline {
                return lines;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    })
    .await
    .unwrap();
    assert_eq!(lines.len(), 5, "{lines:?}");
    for line in &lines[3..] {
        assert_eq!(line["detail"]["authenticated"], true, "{line}");
        assert!(line["detail"]["claimed_user"].is_null(), "{line}");
    }
    assert_eq!(lines[3]["caller"]["username"], "alice", "{}", lines[3]);
    assert_eq!(lines[3]["override"]["by"], "alice", "{}", lines[3]);
}

/// The bearer header of a role's token (the files of [`Setup`]).
fn bearer(role: &str) -> String {
    format!("Bearer {role}-token")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_roles_token_is_refused_on_the_other_roles_routes() {
    let setup = Setup::new("security2-roles");
    let mut args: Vec<String> = ["--listen", "0.0.0.0:0"].map(str::to_owned).to_vec();
    for (flag, file) in [
        ("--units", "contracts"),
        ("--token-file", "admin"),
        ("--push-token-file", "push"),
        ("--read-token-file", "read"),
    ] {
        args.extend([flag.to_owned(), setup.path(file)]);
    }
    let audit = setup.dir.join("audit.jsonl");
    let served = Serve::audited(&audit, &args).owning(&setup.dir).start();
    let address = served.http;
    let (status, listing) = http(address, "GET", "/v1/policies", &[("authorization", &bearer("read"))], b"").await;
    assert_eq!(status, 200, "{listing}");
    let active = serde_json::from_str::<Value>(&listing).unwrap()["active"]["digest"].as_str().unwrap().to_owned();
    let push = gateway_push(640).to_string();
    let pin = json!({"unit_ref": "unit:shop/gateway"}).to_string();
    let evaluate = json!({}).to_string();
    let routes: [(&str, &str, String, &str); 7] = [
        ("push", "PUT", "/v1/units/shop/gateway/observations".to_owned(), push.as_str()),
        ("read", "GET", "/v1/units".to_owned(), ""),
        ("read", "GET", "/v1/units/shop/gateway".to_owned(), ""),
        ("read", "GET", "/v1/policies".to_owned(), ""),
        ("read", "POST", "/v1/evaluate".to_owned(), evaluate.as_str()),
        ("admin", "POST", format!("/v1/policies/{active}/pin"), pin.as_str()),
        ("admin", "POST", "/v1/policies/rollback".to_owned(), ""),
    ];
    let mut refused = 0;
    for token in ["push", "read", "admin"] {
        for (role, method, path, body) in &routes {
            let (status, answer) =
                http(address, method, path, &[("authorization", &bearer(token))], body.as_bytes()).await;
            if token == *role {
                assert_ne!(status, 401, "{token} on its own {method} {path}: {answer}");
            } else {
                assert_eq!(status, 401, "{token}'s token on {role}'s {method} {path}: {answer}");
                refused += 1;
            }
        }
    }
    eprintln!("{refused} calls with another role's token, {refused} refused");
    // An admission review authenticates with the push role's token, not with the admin's: each
    // is answered alike, and its audit line says which authenticated.
    let tokens = [("admin", false), ("read", false), ("push", true)];
    for (token, _) in tokens {
        let review = scale_review(&format!("uid-{token}"), "shop", "gateway", "deployments", 3, 3).to_string();
        let (status, answer) =
            http(address, "POST", "/v1/admission", &[("authorization", &bearer(token))], review.as_bytes()).await;
        assert_eq!(status, 200);
        assert!(verdict(&serde_json::from_str(&answer).unwrap()).0, "{token}: {answer}");
    }
    let lines = tokio::task::spawn_blocking(move || {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let lines = admission_lines(&audit);
            if lines.len() >= tokens.len() || Instant::now() > deadline {
                return lines;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    })
    .await
    .unwrap();
    assert_eq!(lines.len(), tokens.len(), "{lines:?}");
    for (line, (token, authenticated)) in lines.iter().zip(tokens) {
        assert_eq!(line["detail"]["uid"], format!("uid-{token}"), "{line}");
        assert_eq!(line["detail"]["authenticated"], authenticated, "{token}: {line}");
    }

    // One token for two roles would open both's routes: refused before anything is bound.
    std::fs::write(setup.dir.join("same"), "read-token\n").unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_scale-units"))
        .args(["serve", "--listen", "127.0.0.1:0", "--read-token-file", &setup.path("read"), "--push-token-file"])
        .arg(setup.dir.join("same"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(64), "{stderr}");
    assert!(stderr.contains("same token"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pins_are_bounded_in_number() {
    let setup = Setup::new("security2-pins");
    let args = ["--listen", "127.0.0.1:0", "--token-file", &setup.path("admin"), "--max-pins", "4"];
    let served = Serve::new(args).owning(&setup.dir).start();
    let address = served.http;
    let admin = bearer("admin");
    let auth = [("authorization", admin.as_str())];
    let (_, listing) = http(address, "GET", "/v1/policies", &auth, b"").await;
    let active = serde_json::from_str::<Value>(&listing).unwrap()["active"]["digest"].as_str().unwrap().to_owned();
    let pin = |unit: &str| json!({"unit_ref": format!("unit:shop/{unit}")}).to_string();
    let path = format!("/v1/policies/{active}/pin");
    for unit in ["a", "b", "c", "d"] {
        assert_eq!(http(address, "POST", &path, &auth, pin(unit).as_bytes()).await.0, 200);
    }
    // A fifth unit: refused, typed; a pinned one pinned again, and room made by an unpin.
    let (status, refused) = http(address, "POST", &path, &auth, pin("e").as_bytes()).await;
    let code = serde_json::from_str::<Value>(&refused).unwrap()["error"]["code"].clone();
    eprintln!("the fifth pin under --max-pins 4: {status} {code}");
    assert_eq!((status, code.as_str()), (409, Some("pins_full")), "{refused}");
    assert_eq!(http(address, "POST", &path, &auth, pin("a").as_bytes()).await.0, 200);
    assert_eq!(http(address, "POST", "/v1/policies/unpin", &auth, pin("a").as_bytes()).await.0, 200);
    assert_eq!(http(address, "POST", &path, &auth, pin("e").as_bytes()).await.0, 200);
    let (_, listing) = http(address, "GET", "/v1/policies", &auth, b"").await;
    assert_eq!(serde_json::from_str::<Value>(&listing).unwrap()["pins"].as_object().unwrap().len(), 4);
}

/// Waits until `file` (the service's standard error) holds `text`, for at most 60 s.
fn logged(file: &Path, text: &str) -> String {
    let started = Instant::now();
    loop {
        let log = std::fs::read_to_string(file).unwrap_or_default();
        if log.contains(text) {
            return log;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "never logged {text:?}: {log}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_huge_sources_file_is_not_read_whole() {
    let dir = temp_dir("security2-sources");
    let contracts = dir.join("contracts");
    std::fs::create_dir_all(&contracts).unwrap();
    write_contract(&contracts, "shop/gateway", &gateway_contract());
    // 512 MiB, sparse: read whole it would raise resident memory by as much.
    std::fs::File::create(contracts.join("shop.gateway.sources.json")).unwrap().set_len(512 << 20).unwrap();
    let log = dir.join("stderr");
    let served = Serve::new(["--listen", "127.0.0.1:0", "--units", &contracts.display().to_string()])
        .stderr_to(&log)
        .owning(&dir)
        .start();
    let text = logged(&log, "shop.gateway.sources.json refused");
    assert!(text.contains("larger than 1048576 bytes"), "{text}");
    let peak = status_kib(served.pid(), "VmHWM:");
    eprintln!("peak RSS with a 512 MiB sources file in the folder: {peak} kB");
    assert!(peak < 256 << 10, "{peak} kB");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicate_keys_are_refused_on_every_json_the_service_accepts() {
    let setup = Setup::new("security2-duplicates");
    let contracts = setup.dir.join("contracts");
    // A contract whose max_replicas is 12 and then 500, and a sources file naming a server twice
    // (a map: serde_json would keep the second).
    let text = gateway_contract().to_string();
    let twice = text.replacen("\"max_replicas\":12", "\"max_replicas\":12,\"max_replicas\":500", 1);
    assert_ne!(twice, text);
    std::fs::write(contracts.join("shop.twice.json"), twice.replace("shop/gateway", "shop/twice")).unwrap();
    std::fs::write(
        contracts.join("shop.gateway.sources.json"),
        r#"{"prometheus": {"main": {"url": "http://a:9090"}, "main": {"url": "http://b:9090"}}}"#,
    )
    .unwrap();
    let log = setup.dir.join("stderr");
    let args =
        ["--listen", "127.0.0.1:0", "--units", &contracts.display().to_string(), "--token-file", &setup.path("admin")];
    let served = Serve::new(args).stderr_to(&log).owning(&setup.dir).start();
    let address = served.http;
    let admin = bearer("admin");
    let auth = [("authorization", admin.as_str())];
    let text = logged(&log, "shop.gateway.sources.json refused");
    assert!(text.contains("duplicate key `main`"), "{text}");
    let text = logged(&log, "shop.twice.json refused");
    assert!(text.contains("duplicate key `max_replicas`"), "{text}");
    let (_, units) = http(address, "GET", "/v1/units", &[], b"").await;
    assert!(units.contains("gateway") && !units.contains("\"twice\""), "the contract loaded: {units}");

    // A push whose current_replicas is 3 and then 9.
    let push = gateway_push(640).to_string();
    let twice = push.replacen('{', "{\"current_replicas\":3,\"current_replicas\":9,", 1);
    let (status, answer) = http(address, "PUT", "/v1/units/shop/gateway/observations", &auth, twice.as_bytes()).await;
    assert_eq!(status, 400, "{answer}");
    assert!(answer.contains("invalid_json") && answer.contains("duplicate key"), "{answer}");
    // A pin's body naming unit_ref twice.
    let (_, listing) = http(address, "GET", "/v1/policies", &auth, b"").await;
    let active = serde_json::from_str::<Value>(&listing).unwrap()["active"]["digest"].as_str().unwrap().to_owned();
    let pin = br#"{"unit_ref": "unit:shop/a", "unit_ref": "unit:shop/b"}"#;
    let (status, answer) = http(address, "POST", &format!("/v1/policies/{active}/pin"), &auth, pin).await;
    assert_eq!(status, 400, "{answer}");
    // An evaluation request naming a key twice (the core's reader).
    let evaluate = br#"{"contract": {}, "contract": {}}"#;
    let (status, answer) = http(address, "POST", "/v1/evaluate", &[], evaluate).await;
    assert_eq!(status, 400, "{answer}");
    assert!(answer.contains("invalid_json"), "{answer}");
    // A review naming its uid twice, or a key of its object twice.
    let review = scale_review("uid-a", "shop", "gateway", "deployments", 3, 4).to_string();
    for twice in [
        review.replacen("\"uid\":\"uid-a\"", "\"uid\":\"uid-a\",\"uid\":\"uid-b\"", 1),
        review.replacen("\"replicas\":4", "\"replicas\":4,\"replicas\":3", 1),
    ] {
        assert_ne!(twice, review);
        let (status, answer) = http(address, "POST", "/v1/admission", &[], twice.as_bytes()).await;
        assert_eq!(status, 200);
        assert!(answer.contains("\"allowed\":false") && answer.contains("duplicate key"), "{answer}");
    }
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

/// The compilations in the cache folder `dir`.
fn compilations(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries.flatten().filter(|entry| entry.path().extension().is_some_and(|ext| ext == "cwasm")).count()
        })
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_precompiled_cache_is_pruned_as_policies_are_staged() {
    let setup = Setup::new("security2-cache");
    let cache = setup.dir.join("cache");
    // Staging compiles in this debug build, on a shared machine: no request deadline in the way.
    let args = [
        "--listen",
        "127.0.0.1:0",
        "--token-file",
        &setup.path("admin"),
        "--cache-max-entries",
        "2",
        "--request-timeout-ms",
        "600000",
    ];
    let served = Serve::new(args).env("SCALE_UNITS_CACHE_DIR", &cache).owning(&setup.dir).start();
    let address = served.http;
    assert_eq!(compilations(&cache), 1, "the active policy, compiled at start");
    let admin = bearer("admin");
    let auth = [("authorization", admin.as_str())];
    let component = std::fs::read(scale_units_host::default_component_path().unwrap()).unwrap();
    for (staged, name) in ["a", "b", "c"].into_iter().enumerate() {
        let (status, answer) = http(address, "POST", "/v1/policies", &auth, &variant(&component, name)).await;
        assert_eq!(status, 201, "{answer}");
        assert!(answer.contains("\"cache\":\"stored\""), "{answer}");
        let kept = compilations(&cache);
        eprintln!("{} compilations stored, {kept} kept under --cache-max-entries 2", staged + 2);
        assert_eq!(kept, (staged + 2).min(2));
    }
}
