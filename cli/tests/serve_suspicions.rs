//! The suspicions of issue 19, each attack performed against the real binary (`scale-units
//! serve`) on loopback: KEDA streams held open past any cap while other callers wait, KEDA and
//! admission evaluations outside `--workers`, a StatefulSet named like a Deployment's unit
//! reading its decision (a review records nothing since issue 37: what starts a cooldown here is
//! a change the Envoy gate admits), and `SCALE_UNITS_TOKEN` with a line feed.
#![allow(
    clippy::panic,
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "test code: a failed expectation is a test failure"
)]

mod binary;
mod ext_authz;
#[path = "../../server/tests/support/mod.rs"]
mod support;

#[path = "../../server/tests/kubernetes/mod.rs"]
mod kubernetes;

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use binary::{Serve, Served};
use kubernetes::{gateway_contract, gateway_push, scale_review, temp_dir, verdict, write_contract};
use scale_units_server::keda::METRIC_NAME;
use scale_units_server::keda::proto::GetMetricsRequest;
use scale_units_server::keda::proto::external_scaler_client::ExternalScalerClient;
use serde_json::{Value, json};
use support::Client;
use support::keda::{contracts_dir, fresh_observations, next, push, transcode};

const TOKEN: &str = "suspicions-test-token";
const BEARER: &str = "Bearer suspicions-test-token";

/// `scale-units serve ARGS` with `env`, owning `dir`; with `keda`, ARGS include `--keda-listen`.
fn serve(dir: &Path, args: &[&str], env: &[(&str, &str)], keda: bool) -> Served {
    let mut serve = Serve::new(args).owning(dir);
    for (name, value) in env {
        serve = serve.env(name, value);
    }
    if keda {
        serve = serve.keda();
    }
    serve.start()
}

/// One HTTP request on a connection of its own: status and body.
async fn http(address: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
    let (method, path, body) = (method.to_owned(), path.to_owned(), body.to_owned());
    let headers: Vec<(String, String)> =
        headers.iter().map(|(name, value)| ((*name).to_owned(), (*value).to_owned())).collect();
    tokio::task::spawn_blocking(move || {
        let headers: Vec<(&str, &str)> = headers.iter().map(|(name, value)| (name.as_str(), value.as_str())).collect();
        let reply = Client::new(address).send(&method, &path, &headers, body.as_bytes()).unwrap();
        (reply.status, reply.body)
    })
    .await
    .unwrap()
}

/// The value of the metric line starting `name ` in `/metrics`.
async fn metric(address: SocketAddr, name: &str) -> u64 {
    let (status, text) = http(address, "GET", "/metrics", &[], "").await;
    assert_eq!(status, 200, "{text}");
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no {name} in\n{text}"))
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keda_streams_are_capped_and_every_keda_evaluation_waits_for_the_workers() {
    const MAX_STREAMS: usize = 16;
    const ATTEMPTS: usize = 64;
    let dir = contracts_dir();
    let max_streams = MAX_STREAMS.to_string();
    let served = serve(
        &dir,
        &[
            "--listen",
            "127.0.0.1:0",
            "--keda-listen",
            "127.0.0.1:0",
            "--units",
            dir.to_str().unwrap(),
            "--workers",
            "2",
            "--keda-stream-interval-ms",
            "10",
            "--keda-max-streams",
            &max_streams,
        ],
        &[],
        true,
    );
    let (address, keda) = (served.http, served.keda.unwrap());
    assert_eq!(metric(address, "scale_units_workers").await, 2);
    push(address, "media", "transcode", &fresh_observations("media-pool", 1, 75)).await;
    let calls_before = metric(address, "scale_units_worker_calls_total").await;

    // The attack: 64 StreamIsActive streams, 16 on each of 4 connections, each polling every
    // 10 ms. The first 16 open; every further one is refused ResourceExhausted.
    let mut clients = Vec::new();
    for _ in 0..4 {
        clients.push(ExternalScalerClient::connect(format!("http://{keda}")).await.unwrap());
    }
    let mut open = Vec::new();
    let mut refused = 0;
    for attempt in 0..ATTEMPTS {
        let client = &mut clients[attempt % 4];
        match client.stream_is_active(transcode()).await {
            Ok(response) => {
                let mut stream = response.into_inner();
                assert!(next(&mut stream).await.unwrap().unwrap().result, "the first answer of stream {attempt}");
                open.push(stream);
            }
            Err(status) => {
                assert_eq!(status.code(), tonic::Code::ResourceExhausted, "{status:?}");
                refused += 1;
            }
        }
    }
    assert_eq!((open.len(), refused), (MAX_STREAMS, ATTEMPTS - MAX_STREAMS));

    // Other callers are served while the 16 poll: GetMetrics on a connection of its own, the HTTP
    // probes and an evaluation route.
    let mut other = ExternalScalerClient::connect(format!("http://{keda}")).await.unwrap();
    let request = GetMetricsRequest { scaled_object_ref: Some(transcode()), metric_name: METRIC_NAME.into() };
    for _ in 0..5 {
        let metric_value = other.get_metrics(request.clone()).await.unwrap().into_inner().metric_values[0].metric_value;
        assert_eq!(metric_value, 3, "1 -> 3 replicas for a queue of 75");
    }
    assert_eq!(http(address, "GET", "/health", &[], "").await.0, 200);
    let (status, body) = http(address, "GET", "/v1/units/media/transcode?replicas=1", &[], "").await;
    assert_eq!(status, 200, "{body}");

    // Every poll of the streams ran through the workers, never more than 2 at once.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let calls = metric(address, "scale_units_worker_calls_total").await - calls_before;
    let busy_max = metric(address, "scale_units_workers_busy_max").await;
    assert!(calls > MAX_STREAMS as u64, "the streams' polls are not counted by the workers: {calls} calls");
    assert!((1..=2).contains(&busy_max), "{busy_max} component calls at once with --workers 2");
    eprintln!("{} streams held open: {calls} worker calls, busy at most {busy_max} of 2", open.len());

    // A closed stream gives its slot back.
    drop(open.pop());
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match other.stream_is_active(transcode()).await {
            Ok(response) => {
                open.push(response.into_inner());
                break;
            }
            Err(status) => assert_eq!(status.code(), tonic::Code::ResourceExhausted, "{status:?}"),
        }
        assert!(Instant::now() < deadline, "the closed stream's slot never came back");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(open.len(), MAX_STREAMS);
}

/// The decision of `unit` at 3 replicas: action and desired count.
async fn decision_at_3(address: SocketAddr, unit: &str) -> (String, u64, String) {
    let path = format!("/v1/units/{unit}?replicas=3");
    let (status, body) = http(address, "GET", &path, &[("authorization", BEARER)], "").await;
    assert_eq!(status, 200, "{body}");
    let answer: Value = serde_json::from_str(&body).unwrap();
    let decision = &answer["decision"];
    (
        decision["action"].as_str().unwrap().to_owned(),
        decision["desired_replicas"].as_u64().unwrap(),
        decision["reasons"].to_string(),
    )
}

/// Posts a review with the token (authenticated: since issue 37 it records nothing either way).
async fn review(address: SocketAddr, review: &Value) -> (bool, String, Vec<String>, Option<String>) {
    let (status, body) =
        http(address, "POST", "/v1/admission", &[("authorization", BEARER)], &review.to_string()).await;
    assert_eq!(status, 200, "{body}");
    verdict(&serde_json::from_str(&body).unwrap())
}

/// The Envoy gate's answer to `PUT …/{resource}/{name}/scale` of `unit` to `replicas`.
async fn gate(envoy: SocketAddr, id: &str, resource: &str, unit: &str, replicas: i64) -> ext_authz::Checked {
    let request = ext_authz::workload_scale_request(id, resource, unit, u64::try_from(replicas).unwrap());
    ext_authz::check(envoy, request).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statefulset_named_like_a_deployments_unit_neither_reads_its_decision_nor_starts_its_cooldown() {
    let dir = temp_dir("suspicions-kind");
    let contracts = dir.join("contracts");
    std::fs::create_dir_all(&contracts).unwrap();
    // `shop/gateway` declares its workload, a Deployment; `shop/legacy` declares none, and both
    // kinds of its name share its contract (docs/DECISIONS.md).
    for (unit, sources) in [("gateway", Some("workload: Deployment\n")), ("legacy", None)] {
        let mut contract = gateway_contract();
        contract["unit_ref"] = json!(format!("unit:shop/{unit}"));
        contract["policy"]["scale_up_cooldown_s"] = json!(10);
        contract["policy"]["scale_down_cooldown_s"] = json!(10);
        write_contract(&contracts, &format!("shop/{unit}"), &contract);
        if let Some(sources) = sources {
            std::fs::write(contracts.join(format!("shop.{unit}.sources.yaml")), sources).unwrap();
        }
    }
    std::fs::write(dir.join("token"), TOKEN).unwrap();
    let served = Serve::new([
        "--listen",
        "127.0.0.1:0",
        "--envoy-listen",
        "127.0.0.1:0",
        "--units",
        contracts.to_str().unwrap(),
        "--token-file",
        dir.join("token").to_str().unwrap(),
    ])
    .owning(&dir)
    .envoy()
    .start();
    let (address, envoy) = (served.http, served.envoy.unwrap());
    for unit in ["gateway", "legacy"] {
        let path = format!("/v1/units/shop/{unit}/observations");
        let (status, body) =
            http(address, "PUT", &path, &[("authorization", BEARER)], &gateway_push(640).to_string()).await;
        assert_eq!(status, 200, "{body}");
    }
    // The cooldowns count from the service's start: wait for the scale-up of both.
    let deadline = Instant::now() + Duration::from_secs(60);
    for unit in ["shop/gateway", "shop/legacy"] {
        loop {
            let (action, _, reasons) = decision_at_3(address, unit).await;
            if action == "scale_up" {
                break;
            }
            assert!(Instant::now() < deadline, "{unit} still {action}: {reasons}");
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
    let (_, desired, _) = decision_at_3(address, "shop/gateway").await;
    let desired = i64::try_from(desired).unwrap();

    // The attack: the StatefulSet `shop/gateway`, scaled 3 -> desired as the API server sends it.
    // It is no unit of the Deployment's contract: allowed with a warning, no decision id.
    let statefulset = scale_review("uid-sts-1", "shop", "gateway", "statefulsets", 3, desired);
    let (allowed, message, warnings, id) = review(address, &statefulset).await;
    assert!(allowed && id.is_none(), "{message} {warnings:?}");
    assert!(warnings.len() == 1 && warnings[0].contains("not checked"), "{warnings:?}");
    // Nor does it read the Deployment's decision: a move the decision would deny is not denied
    // by it either (the StatefulSet has no contract).
    let (allowed, _, warnings, id) =
        review(address, &scale_review("uid-sts-2", "shop", "gateway", "statefulsets", 3, 12)).await;
    assert!(allowed && id.is_none(), "{warnings:?}");

    // The Deployment's own review is judged by the contract (its decision's id; past
    // desired_replicas denied) and, as every review since issue 37, records nothing.
    let deployment = scale_review("uid-deploy", "shop", "gateway", "deployments", 3, desired);
    let (allowed, message, _, id) = review(address, &deployment).await;
    assert!(allowed && id.is_some(), "{message}");
    let denied = scale_review("uid-deploy-2", "shop", "gateway", "deployments", 3, 12);
    assert!(!review(address, &denied).await.0, "past desired_replicas is denied for the Deployment");
    let (action, _, reasons) = decision_at_3(address, "shop/gateway").await;
    assert_eq!(action, "scale_up", "a review started the Deployment's cooldown: {reasons}");

    // Without a declared kind, the StatefulSet of the unit's name is judged by its contract: the
    // documented sharing the declaration removes.
    let legacy = scale_review("uid-legacy", "shop", "legacy", "statefulsets", 3, desired);
    let (allowed, message, _, id) = review(address, &legacy).await;
    assert!(allowed && id.is_some(), "{message}");
    let past = scale_review("uid-legacy-2", "shop", "legacy", "statefulsets", 3, 12);
    assert!(!review(address, &past).await.0, "past desired_replicas is denied for the legacy StatefulSet");
    assert_eq!(decision_at_3(address, "shop/legacy").await.0, "scale_up", "a review recorded");

    // What starts a cooldown outside Kubernetes is a change the Envoy gate admits: the
    // Deployment's scale starts the Deployment's unit's, and the legacy StatefulSet's its unit's.
    gate(envoy, "req-deploy", "deployments", "shop/gateway", desired).await.allowed();
    let (action, _, reasons) = decision_at_3(address, "shop/gateway").await;
    assert_eq!((action.as_str(), reasons.contains("cooldown")), ("hold", true), "{reasons}");
    gate(envoy, "req-legacy", "statefulsets", "shop/legacy", desired).await.allowed();
    let (action, _, reasons) = decision_at_3(address, "shop/legacy").await;
    assert_eq!((action.as_str(), reasons.contains("cooldown")), ("hold", true), "{reasons}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_from_the_environment_is_trimmed_as_the_files_is() {
    // Outside loopback every route but the probes needs the token: `GET /v1/policies` shows
    // which token the service holds.
    let dir = temp_dir("suspicions-token-env");
    let served = serve(&dir, &["--listen", "0.0.0.0:0"], &[("SCALE_UNITS_TOKEN", &format!("{TOKEN}\n"))], false);
    let address = served.http;
    assert_eq!(http(address, "GET", "/v1/policies", &[("authorization", BEARER)], "").await.0, 200);
    assert_eq!(http(address, "GET", "/v1/policies", &[("authorization", "Bearer other")], "").await.0, 401);
    assert_eq!(http(address, "GET", "/v1/policies", &[], "").await.0, 401);
    drop(served);

    let dir = temp_dir("suspicions-token-file");
    std::fs::write(dir.join("token"), format!("  {TOKEN}\r\n")).unwrap();
    let token = dir.join("token").display().to_string();
    let served = serve(&dir, &["--listen", "0.0.0.0:0", "--token-file", &token], &[], false);
    assert_eq!(http(served.http, "GET", "/v1/policies", &[("authorization", BEARER)], "").await.0, 200);
    drop(served);

    // A token of white space only is no token: outside loopback the service refuses to start.
    let exit = Command::new(env!("CARGO_BIN_EXE_scale-units"))
        .args(["serve", "--listen", "0.0.0.0:0"])
        .env("SCALE_UNITS_TOKEN", " \n")
        .env("SCALE_UNITS_CACHE_DIR", std::env::temp_dir().join("scale-units-test-cache"))
        .output()
        .unwrap();
    assert!(!exit.status.success());
    let stderr = String::from_utf8_lossy(&exit.stderr);
    assert!(stderr.contains("give a token"), "{stderr}");
}

/// A self-signed pair for `localhost` and 127.0.0.1 valid until `until` (year, month, day).
fn pair(until: (i32, u8, u8)) -> (String, String, rustls::pki_types::CertificateDer<'static>) {
    let mut params = rcgen::CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).unwrap();
    params.not_before = rcgen::date_time_ymd(2000, 1, 1);
    params.not_after = rcgen::date_time_ymd(until.0, until.1, until.2);
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    (cert.pem(), key.serialize_pem(), cert.der().clone())
}

/// Writes `cert` and `key` into `dir/<version>/` and points `dir/current` at it in one rename, as
/// the kubelet updates a mounted Secret (`tls.crt` and `tls.key` are links through `current`).
fn publish(dir: &Path, version: &str, cert: &str, key: &str) {
    let folder = dir.join(version);
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("tls.crt"), cert).unwrap();
    std::fs::write(folder.join("tls.key"), key).unwrap();
    let next = dir.join("current.next");
    let _ = std::fs::remove_file(&next);
    std::os::unix::fs::symlink(version, &next).unwrap();
    std::fs::rename(&next, dir.join("current")).unwrap();
    for file in ["tls.crt", "tls.key"] {
        if std::fs::symlink_metadata(dir.join(file)).is_err() {
            std::os::unix::fs::symlink(Path::new("current").join(file), dir.join(file)).unwrap();
        }
    }
}

/// `GET path` over HTTPS on a connection of its own, trusting `server` only.
async fn https_get(
    address: SocketAddr,
    server: &rustls::pki_types::CertificateDer<'static>,
    path: &str,
) -> std::io::Result<(u16, String)> {
    use http_body_util::BodyExt as _;
    let mut roots = rustls::RootCertStore::empty();
    roots.add(server.clone()).unwrap();
    let config =
        rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
    let tcp = tokio::net::TcpStream::connect(address).await?;
    let tls = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config))
        .connect(rustls::pki_types::ServerName::try_from("localhost").unwrap(), tcp)
        .await?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tls))
        .await
        .map_err(std::io::Error::other)?;
    tokio::spawn(connection);
    let request = hyper::Request::builder()
        .uri(path)
        .header("host", "localhost")
        .body(http_body_util::Full::new(hyper::body::Bytes::new()))
        .unwrap();
    let response = sender.send_request(request).await.map_err(std::io::Error::other)?;
    let status = response.status().as_u16();
    let bytes = response.into_body().collect().await.map_err(std::io::Error::other)?.to_bytes();
    Ok((status, String::from_utf8(bytes.to_vec()).unwrap()))
}

/// The value of `name{listener="…"}` in the HTTPS `/metrics`, if present.
async fn tls_metric(
    address: SocketAddr,
    server: &rustls::pki_types::CertificateDer<'static>,
    name: &str,
    listener: &str,
) -> Option<i64> {
    let (status, text) = https_get(address, server, "/metrics").await.unwrap();
    assert_eq!(status, 200, "{text}");
    let prefix = format!("{name}{{listener=\"{listener}\"}} ");
    text.lines().find_map(|line| line.strip_prefix(&prefix)?.parse().ok())
}

fn unix_now() -> i64 {
    i64::try_from(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renewed_pair_that_does_not_load_is_counted_and_the_served_certificates_expiry_shown() {
    const EXPIRY: &str = "scale_units_tls_certificate_expiry_seconds";
    const FAILURES: &str = "scale_units_tls_reload_failures_total";
    let dir = temp_dir("suspicions-tls");
    let contracts = dir.join("contracts");
    std::fs::create_dir_all(&contracts).unwrap();
    write_contract(&contracts, "shop/gateway", &gateway_contract());
    let webhook = dir.join("webhook");
    std::fs::create_dir_all(&webhook).unwrap();
    // The webhook's pair until 2100-01-01; the KEDA listener's expired on 2001-01-01.
    let (cert_pem, key_pem, cert) = pair((2100, 1, 1));
    publish(&webhook, "v1", &cert_pem, &key_pem);
    let (expired_pem, expired_key, _) = pair((2001, 1, 1));
    std::fs::write(dir.join("keda.crt"), expired_pem).unwrap();
    std::fs::write(dir.join("keda.key"), expired_key).unwrap();
    let path = |path: std::path::PathBuf| path.display().to_string();
    let served = serve(
        &dir,
        &[
            "--listen",
            "127.0.0.1:0",
            "--webhook",
            "--units",
            &path(contracts),
            "--tls-cert",
            &path(webhook.join("tls.crt")),
            "--tls-key",
            &path(webhook.join("tls.key")),
            "--keda-listen",
            "127.0.0.1:0",
            "--keda-tls-cert",
            &path(dir.join("keda.crt")),
            "--keda-tls-key",
            &path(dir.join("keda.key")),
        ],
        &[],
        true,
    );
    let address = served.http;
    const Y2100: i64 = 4_102_444_800;
    const Y2001: i64 = 978_307_200;
    let near = |value: Option<i64>, expected: i64| value.is_some_and(|value| (value - expected).abs() < 120);
    let expiry = tls_metric(address, &cert, EXPIRY, "webhook").await;
    assert!(near(expiry, Y2100 - unix_now()), "{expiry:?}");
    let keda_expiry = tls_metric(address, &cert, EXPIRY, "keda").await;
    assert!(near(keda_expiry, Y2001 - unix_now()), "the expired KEDA certificate shows negative: {keda_expiry:?}");
    assert_eq!(tls_metric(address, &cert, FAILURES, "webhook").await, Some(0));

    // The attack (or a broken renewal): a pair whose key is not PEM. It is counted, and the
    // previous certificate stays served to new connections.
    publish(&webhook, "v2", &cert_pem, "not a key\n");
    let deadline = Instant::now() + Duration::from_secs(30);
    while tls_metric(address, &cert, FAILURES, "webhook").await != Some(1) {
        assert!(Instant::now() < deadline, "the refused pair was never counted");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(https_get(address, &cert, "/health").await.unwrap().0, 200);
    assert!(near(tls_metric(address, &cert, EXPIRY, "webhook").await, Y2100 - unix_now()));

    // A good renewal, until 2099-01-01: served, and its expiry shown.
    let (renewed_pem, renewed_key, renewed) = pair((2099, 1, 1));
    publish(&webhook, "v3", &renewed_pem, &renewed_key);
    let y2099 = 4_070_908_800;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok((200, _)) = https_get(address, &renewed, "/health").await {
            break;
        }
        assert!(Instant::now() < deadline, "the renewed pair was never served");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let expiry = tls_metric(address, &renewed, EXPIRY, "webhook").await;
    assert!(near(expiry, y2099 - unix_now()), "{expiry:?}");
    assert_eq!(tls_metric(address, &renewed, FAILURES, "webhook").await, Some(1));
    eprintln!(
        "expiry shown: webhook {expiry:?} s, keda {keda_expiry:?} s; 1 refused pair counted, previous one served"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_envoy_gate_leaves_a_statefulset_named_like_a_deployments_unit_to_itself() {
    let dir = temp_dir("suspicions-gate-kind");
    let contracts = dir.join("contracts");
    std::fs::create_dir_all(&contracts).unwrap();
    let mut contract = gateway_contract();
    contract["policy"]["scale_up_cooldown_s"] = json!(10);
    contract["policy"]["scale_down_cooldown_s"] = json!(10);
    write_contract(&contracts, "shop/gateway", &contract);
    std::fs::write(contracts.join("shop.gateway.sources.yaml"), "workload: Deployment\n").unwrap();
    let served = Serve::new(["--listen", "127.0.0.1:0", "--envoy-listen", "127.0.0.1:0", "--units"])
        .arg(&contracts)
        .owning(&dir)
        .envoy()
        .start();
    let (address, envoy) = (served.http, served.envoy.unwrap());
    let (status, body) =
        http(address, "PUT", "/v1/units/shop/gateway/observations", &[], &gateway_push(640).to_string()).await;
    assert_eq!(status, 200, "{body}");
    let deadline = Instant::now() + Duration::from_secs(60);
    while decision_at_3(address, "shop/gateway").await.0 != "scale_up" {
        assert!(Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    // The StatefulSet shop/gateway, past the Deployment's decision and within it: neither is a
    // call of the Deployment's unit (its sources say workload: Deployment), as the webhook judges
    // them — let through unjudged, and no cooldown of the Deployment's started.
    let past = gate(envoy, "req-sts-12", "statefulsets", "shop/gateway", 12).await;
    let within = gate(envoy, "req-sts-5", "statefulsets", "shop/gateway", 5).await;
    let (action, _, reasons) = decision_at_3(address, "shop/gateway").await;
    assert!(matches!(past, ext_authz::Checked::Allowed(_)), "the StatefulSet read the Deployment's decision: {past:?}");
    assert!(matches!(within, ext_authz::Checked::Allowed(_)), "{within:?}");
    assert_eq!(action, "scale_up", "the StatefulSet started the Deployment's cooldown: {reasons}");
    // The Deployment's own call past its decision is still refused.
    let own = gate(envoy, "req-dep-12", "deployments", "shop/gateway", 12).await;
    assert!(!matches!(own, ext_authz::Checked::Allowed(_)), "{own:?}");
}
