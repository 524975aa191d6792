//! Shared by the unit registry and webhook tests: a registry with the built component, contracts
//! and observations relative to the real clock, test certificates (rcgen), an HTTPS client
//! (hyper over tokio-rustls) and the service running in-process.
#![allow(dead_code, reason = "each test binary uses a different part")]
#![allow(
    clippy::panic,
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "test code: a failed expectation is a test failure"
)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use rustls::pki_types::{CertificateDer, ServerName};
use scale_units_host::{Policy, PolicyRegistry, default_cache_dir, default_component_path};
use scale_units_server::service::{Service, ServiceConfig};
use scale_units_server::units::{UnitKey, Units};
use serde_json::{Value, json};
use tokio::net::TcpStream;

/// A fresh empty folder under the system's temp dir.
pub fn temp_dir(name: &str) -> PathBuf {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos();
    let dir = std::env::temp_dir().join(format!("scale-units-{name}-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A registry with the built component active.
pub fn registry() -> Arc<PolicyRegistry> {
    let mut builder = Policy::builder();
    if let Some(dir) = default_cache_dir() {
        builder = builder.cache_dir(dir);
    }
    let registry = Arc::new(PolicyRegistry::builder().policy_builder(builder).build());
    let staged = registry.stage_file(default_component_path().unwrap()).unwrap();
    registry.activate(&staged.digest).unwrap();
    registry
}

/// The API gateway example's contract: in_flight, target 100, min 2, max 12, up by 2.
pub fn gateway_contract() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/api-gateway/contract.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The gateway with externalized continuity (scale-down blocked while sessions are open) and a
/// unit quota on session slots.
pub fn sessions_contract() -> Value {
    let mut contract = gateway_contract();
    contract["unit_ref"] = json!("unit:shop/sessions");
    contract["continuity"] = json!({
        "mode": "externalized",
        "external_store_ref": "store:redis/sessions",
        "drain_required": true,
        "block_scale_down_with_active": true,
        "max_drain_seconds": 300
    });
    contract["quotas"] =
        json!([{"quota_ref": "quota:shop/sessions", "axis": "session_slots", "scope": "unit", "per_replica": 200}]);
    contract
}

/// An RFC 3339 time `offset` seconds from now.
pub fn at(offset: i64) -> String {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() as i64;
    jiff::Timestamp::from_second(now + offset).unwrap().strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

const DIGEST: &str = "sha256:7cac69ff414f57298537a937081a6ab323556b56916fc3fa283f6e86f6b3bcf1";

/// Fresh from 10 s ago until `ttl` seconds from now.
fn window(ttl: i64, source: &str) -> Value {
    json!({"observed_at": at(-10), "expires_at": at(ttl), "source_ref": source, "source_digest": DIGEST})
}

fn merge(mut base: Value, fields: Value) -> Value {
    for (key, value) in fields.as_object().unwrap() {
        base[key] = value.clone();
    }
    base
}

pub fn signal(value: u64, ttl: i64) -> Value {
    merge(window(ttl, "metrics:gateway/in-flight"), json!({"signal": "in_flight", "value": value}))
}

pub fn capacity(axis: &str, allocatable: u64, ttl: i64) -> Value {
    merge(
        window(ttl, &format!("capacity:gateway/{axis}")),
        json!({"axis": axis, "allocatable": allocatable, "reserved": 0, "used": 0}),
    )
}

pub fn safety(overloaded: bool, ttl: i64) -> Value {
    let mut safety =
        merge(window(ttl, "safety:gateway/shedder"), json!({"overloaded": overloaded, "noisy_neighbor": false}));
    if overloaded {
        safety["reason_ref"] = json!("shedder:overload");
    }
    safety
}

pub fn quota(limit: u64, ttl: i64) -> Value {
    merge(
        window(ttl, "quota:shop/sessions-usage"),
        json!({"quota_ref": "quota:shop/sessions", "scope": "unit", "limit": limit, "used": 0}),
    )
}

pub fn continuity(active_sessions: u64, ttl: i64) -> Value {
    merge(
        window(ttl, "continuity:shop/sessions"),
        json!({"ready": true, "active_sessions": active_sessions, "active_streams": 0}),
    )
}

/// Everything the gateway needs for a fresh decision at `in_flight`: scale_up 3 -> 5 at 640.
pub fn gateway_push(in_flight: u64) -> Value {
    json!({
        "signal": signal(in_flight, 120),
        "capacities": [capacity("cpu_milli", 16000, 120), capacity("memory_mib", 65536, 120), capacity("session_slots", 4000, 120)],
        "safety": safety(false, 120),
        "current_replicas": 3
    })
}

/// Writes `<namespace>.<name>.json` into `dir`.
pub fn write_contract(dir: &Path, key: &str, contract: &Value) {
    let (namespace, name) = key.split_once('/').unwrap();
    std::fs::write(dir.join(format!("{namespace}.{name}.json")), contract.to_string()).unwrap();
}

pub fn key(text: &str) -> UnitKey {
    let (namespace, name) = text.split_once('/').unwrap();
    UnitKey::new(namespace, name).unwrap()
}

/// A self-signed certificate for `localhost` and 127.0.0.1: (certificate PEM, key PEM, DER).
pub fn certificate() -> (String, String, CertificateDer<'static>) {
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).unwrap();
    (certified.cert.pem(), certified.signing_key.serialize_pem(), certified.cert.der().clone())
}

/// The service running on a loopback port in this test's runtime.
pub struct Served {
    pub address: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl Served {
    pub async fn start(config: ServiceConfig, registry: Arc<PolicyRegistry>) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let config = ServiceConfig { shutdown_delay: Duration::ZERO, drain_timeout: Duration::from_secs(2), ..config };
        let task = tokio::spawn(async move {
            Service::new(registry, config)
                .run(listener, async move {
                    let _ = stopped.await;
                })
                .await
                .unwrap();
        });
        Self { address, stop: Some(stop), task }
    }

    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = (&mut self.task).await;
    }
}

/// A units registry over `dir` (memory store), no unit having acted before it started.
pub async fn units(registry: &Arc<PolicyRegistry>, dir: &Path) -> Arc<Units> {
    Units::builder(Arc::clone(registry))
        .contracts_dir(dir)
        .no_prior_actions()
        .reload_interval(Duration::from_millis(50))
        .build()
        .await
        .unwrap()
}

/// An HTTPS client trusting exactly `roots`, one keep-alive connection.
pub struct Https {
    sender: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    /// The certificate the server presented.
    pub peer: CertificateDer<'static>,
}

impl Https {
    pub async fn connect(address: SocketAddr, roots: &[CertificateDer<'static>]) -> std::io::Result<Self> {
        let mut store = rustls::RootCertStore::empty();
        for root in roots {
            store.add(root.clone()).unwrap();
        }
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(store)
            .with_no_client_auth();
        let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
        let tcp = TcpStream::connect(address).await?;
        let tls = connector.connect(ServerName::try_from("localhost").unwrap(), tcp).await?;
        let peer = tls.get_ref().1.peer_certificates().unwrap()[0].clone().into_owned();
        let (sender, connection) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tls))
            .await
            .map_err(std::io::Error::other)?;
        tokio::spawn(connection);
        Ok(Self { sender, peer })
    }

    /// Sends a request; the status and the body as JSON.
    pub async fn send(&mut self, method: &str, path: &str, body: &str) -> (u16, Value) {
        let request = hyper::Request::builder()
            .method(method)
            .uri(path)
            .header("host", "localhost")
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(body.to_owned())))
            .unwrap();
        // hyper sends on a connection only once it is ready again (the previous exchange fully
        // done); without this wait a quick second request fails with "connection was not ready".
        self.sender.ready().await.unwrap();
        let response = self.sender.send_request(request).await.unwrap();
        let status = response.status().as_u16();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        let text = String::from_utf8(bytes.to_vec()).unwrap();
        (status, serde_json::from_str(&text).unwrap_or_else(|error| panic!("{error}: {text}")))
    }
}

/// A plain HTTP client: one connection per request (the service may close a connection after a
/// refusal without reading the body).
pub struct Http {
    address: SocketAddr,
}

impl Http {
    pub async fn connect(address: SocketAddr) -> Self {
        Self { address }
    }

    pub async fn send(&mut self, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> (u16, Value) {
        let tcp = TcpStream::connect(self.address).await.unwrap();
        let (mut sender, connection) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tcp)).await.unwrap();
        tokio::spawn(connection);
        let mut request = hyper::Request::builder().method(method).uri(path).header("host", "localhost");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let request = request.body(Full::new(Bytes::from(body.to_owned()))).unwrap();
        let response = sender.send_request(request).await.unwrap();
        let status = response.status().as_u16();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        let text = String::from_utf8(bytes.to_vec()).unwrap();
        (status, serde_json::from_str(&text).unwrap_or_else(|error| panic!("{error}: {text}")))
    }
}

/// An `AdmissionReview` as the API server sends it for `kubectl scale` / the HPA: `UPDATE` of
/// `deployments/scale` with `autoscaling/v1` `Scale` objects.
pub fn scale_review(uid: &str, namespace: &str, name: &str, resource: &str, old: i64, new: i64) -> Value {
    let scale = |replicas: i64| {
        json!({
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": {"name": name, "namespace": namespace, "uid": "4b4e3e3c-0000-4000-8000-000000000001",
                         "resourceVersion": "1234", "creationTimestamp": "2026-08-19T10:00:00Z"},
            "spec": {"replicas": replicas},
            "status": {"replicas": old, "selector": format!("app={name}")}
        })
    };
    json!({
        "kind": "AdmissionReview",
        "apiVersion": "admission.k8s.io/v1",
        "request": {
            "uid": uid,
            "kind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
            "resource": {"group": "apps", "version": "v1", "resource": resource},
            "subResource": "scale",
            "requestKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
            "requestResource": {"group": "apps", "version": "v1", "resource": resource},
            "requestSubResource": "scale",
            "name": name,
            "namespace": namespace,
            "operation": "UPDATE",
            "userInfo": {"username": "system:serviceaccount:kube-system:horizontal-pod-autoscaler",
                         "uid": "0b3c1d2e-0000-4000-8000-000000000002", "groups": ["system:serviceaccounts"]},
            "object": scale(new),
            "oldObject": scale(old),
            "dryRun": false,
            "options": {"kind": "UpdateOptions", "apiVersion": "meta.k8s.io/v1"}
        }
    })
}

/// An `AdmissionReview` for `UPDATE` of the workload itself (`apps/v1` Deployment or StatefulSet).
pub fn workload_review(
    uid: &str,
    namespace: &str,
    name: &str,
    kind: &str,
    old: Option<i64>,
    new: Option<i64>,
) -> Value {
    let resource = if kind == "Deployment" { "deployments" } else { "statefulsets" };
    let object = |replicas: Option<i64>| {
        let mut spec = json!({
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                         "spec": {"containers": [{"name": "app", "image": "registry.example/app:1.2.3"}]}}
        });
        if kind == "StatefulSet" {
            spec["serviceName"] = json!(name);
        }
        if let Some(replicas) = replicas {
            spec["replicas"] = json!(replicas);
        }
        json!({
            "kind": kind,
            "apiVersion": "apps/v1",
            "metadata": {"name": name, "namespace": namespace, "generation": 3, "resourceVersion": "99"},
            "spec": spec
        })
    };
    json!({
        "kind": "AdmissionReview",
        "apiVersion": "admission.k8s.io/v1",
        "request": {
            "uid": uid,
            "kind": {"group": "apps", "version": "v1", "kind": kind},
            "resource": {"group": "apps", "version": "v1", "resource": resource},
            "requestKind": {"group": "apps", "version": "v1", "kind": kind},
            "requestResource": {"group": "apps", "version": "v1", "resource": resource},
            "name": name,
            "namespace": namespace,
            "operation": "UPDATE",
            "userInfo": {"username": "kubernetes-admin", "groups": ["system:masters", "system:authenticated"]},
            "object": object(new),
            "oldObject": object(old),
            "dryRun": false,
            "options": {"kind": "UpdateOptions", "apiVersion": "meta.k8s.io/v1", "fieldManager": "kubectl-edit"}
        }
    })
}

/// The review's response: (allowed, message, warnings, decision id annotation).
pub fn verdict(review: &Value) -> (bool, String, Vec<String>, Option<String>) {
    assert_eq!(review["apiVersion"], "admission.k8s.io/v1", "{review}");
    assert_eq!(review["kind"], "AdmissionReview", "{review}");
    let response = &review["response"];
    let warnings = response["warnings"]
        .as_array()
        .map(|list| list.iter().map(|warning| warning.as_str().unwrap().to_owned()).collect())
        .unwrap_or_default();
    (
        response["allowed"].as_bool().unwrap(),
        response["status"]["message"].as_str().unwrap_or_default().to_owned(),
        warnings,
        response["auditAnnotations"]["decision-id"].as_str().map(str::to_owned),
    )
}
