//! The KEDA scaler's test helpers: the two example units' contracts folder, observations as a
//! collector pushes them, ScaledObject references as KEDA sends them.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Duration;

use scale_units_server::keda::UNIT_METADATA_KEY;
use scale_units_server::keda::proto::{IsActiveResponse, ScaledObjectRef};
use serde_json::{Value, json};

use super::Client;

/// 2026-08-19T12:00:00Z: the examples' observations are fresh from 11:59:30 to 12:01:30.
pub const NOON: i64 = 1_787_140_800;

/// An example file's text (`examples/<path>`).
fn example(path: &str) -> String {
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples").join(path);
    std::fs::read_to_string(&file).unwrap_or_else(|error| panic!("{}: {error}", file.display()))
}

/// `PUT /v1/units/{namespace}/{name}/observations` with `body`; the service answers 200.
pub async fn push(address: SocketAddr, namespace: &str, name: &str, body: &Value) {
    let path = format!("/v1/units/{namespace}/{name}/observations");
    let body = body.to_string();
    let reply = tokio::task::spawn_blocking(move || {
        Client::new(address).send("PUT", &path, &[("content-type", "application/json")], body.as_bytes()).unwrap()
    })
    .await
    .unwrap();
    assert_eq!(reply.status, 200, "{}", reply.body);
}

/// A contracts folder as the ConfigMap of `deploy/kubernetes/` mounts it: the two example units,
/// their cooldowns zeroed. A service that cannot vouch for the units' last actions (a new process
/// with the memory store) counts every cooldown from its start; these tests are about the
/// scaler's answers, the cooldowns have tests of their own (`cli/tests/serve_state.rs`).
pub fn contracts_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("scale-units-keda-{}-{}", std::process::id(), unique()));
    std::fs::create_dir_all(&dir).unwrap();
    for (file, example_path) in
        [("zentinelle.gateway.json", "api-gateway/contract.json"), ("media.transcode.json", "media-pool/contract.json")]
    {
        let mut contract: Value = serde_json::from_str(&example(example_path)).unwrap();
        contract["policy"]["scale_up_cooldown_s"] = json!(0);
        contract["policy"]["scale_down_cooldown_s"] = json!(0);
        std::fs::write(dir.join(file), contract.to_string()).unwrap();
    }
    dir
}

pub fn unique() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::SeqCst)
}

/// A ScaledObject's reference as KEDA sends it: its name and namespace, the trigger's metadata.
pub fn scaled_object(namespace: &str, name: &str, unit: Option<&str>) -> ScaledObjectRef {
    let mut metadata = HashMap::from([("scalerAddress".to_owned(), "scale-units.scale-units.svc:9090".to_owned())]);
    if let Some(unit) = unit {
        metadata.insert(UNIT_METADATA_KEY.to_owned(), unit.to_owned());
    }
    ScaledObjectRef { name: name.to_owned(), namespace: namespace.to_owned(), scaler_metadata: metadata }
}

/// The observations of an example request (fresh from 11:59:30 to 12:01:30), with the signal's
/// value and the replica count replaced.
pub fn observations(unit_example: &str, current_replicas: u64, signal_value: i64) -> Value {
    let request: Value = serde_json::from_str(&example(&format!("{unit_example}/request.json"))).unwrap();
    let mut signal = request["signal"].clone();
    signal["value"] = json!(signal_value);
    json!({
        "current_replicas": current_replicas,
        "signal": signal,
        "capacities": request["capacities"],
        "safety": request["safety"],
    })
}

pub fn gateway() -> ScaledObjectRef {
    scaled_object("zentinelle", "gateway-scaler", Some("gateway"))
}

pub fn transcode() -> ScaledObjectRef {
    scaled_object("media", "transcode", None)
}

pub async fn next(stream: &mut tonic::Streaming<IsActiveResponse>) -> Result<Option<IsActiveResponse>, tonic::Status> {
    tokio::time::timeout(Duration::from_secs(30), stream.message()).await.expect("a message in time")
}

/// Observations fresh for two minutes from the real clock, for the real binary.
pub fn fresh_observations(unit_example: &str, current_replicas: u64, signal_value: i64) -> Value {
    let mut body = observations(unit_example, current_replicas, signal_value);
    let time = |seconds: i64| {
        let at = jiff::Timestamp::now() + jiff::SignedDuration::from_secs(seconds);
        at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
    };
    let (observed_at, expires_at) = (time(-5), time(120));
    let stamp = |observation: &mut Value| {
        observation["observed_at"] = json!(observed_at);
        observation["expires_at"] = json!(expires_at);
    };
    stamp(&mut body["signal"]);
    stamp(&mut body["safety"]);
    for capacity in body["capacities"].as_array_mut().unwrap() {
        stamp(capacity);
    }
    body
}
