//! The real `scale-units serve` keeps what must outlive it (issue 20): a scale action the Envoy
//! gate admitted (an ext_authz `Check`, sent by a real gRPC client) survives `kill -9` in the state
//! folder (`--state-dir`), and when the service cannot vouch for a unit's last action — an empty
//! state folder, the memory store, a Redis restarted without its data — the cooldowns count from
//! the moment it learned it did not know, never from "no action ever". A state folder on a full
//! disk denies the change it cannot record. An admission review records nothing (issue 37: the
//! Kubernetes watch is the record there): it is judged against what the gate recorded, and leaves
//! the journal as it found it.
//!
//! The contract (the API gateway example) has a 600 s scale-up cooldown and none for a scale-down:
//! a scale-down is admitted at once on any new store, and the next scale-up is held either by that
//! admission or by the store's epoch; `GET /v1/units/{ns}/{name}` says which (`last_action.source`).
#![allow(
    clippy::panic,
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "test code: a failed expectation is a test failure"
)]

mod binary;
mod ext_authz;
#[path = "../../server/tests/kubernetes/mod.rs"]
mod kubernetes;
#[path = "../../server/tests/support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use binary::{Namespaced, Redis};
use ext_authz::{names_reason, scale_blocking};
use kubernetes::{gateway_contract, gateway_push, scale_review, temp_dir, verdict, write_contract};
use serde_json::{Value, json};
use support::Client;

/// The gateway: up 600 s, down 0 s.
fn contracts(dir: &Path) -> PathBuf {
    let contracts = dir.join("contracts");
    std::fs::create_dir_all(&contracts).unwrap();
    let mut gateway = gateway_contract();
    gateway["policy"]["scale_up_cooldown_s"] = json!(600);
    gateway["policy"]["scale_down_cooldown_s"] = json!(0);
    write_contract(&contracts, "shop/gateway", &gateway);
    contracts
}

const UNIT: &str = "shop/gateway";

struct Serve {
    served: binary::Served,
    client: Client,
}

impl Serve {
    /// The binary over `contracts`, with the Envoy gate, and `store` arguments (`--state-dir DIR`,
    /// `--redis URL` or none).
    fn start(contracts: &Path, store: &[&std::ffi::OsStr]) -> Self {
        let served = binary::Serve::new(["--listen", "127.0.0.1:0", "--envoy-listen", "127.0.0.1:0", "--units"])
            .arg(contracts)
            .args(store)
            .envoy()
            .start();
        Self { client: Client::new(served.http).retrying_stale_connections(), served }
    }

    fn push(&mut self, body: &Value) {
        let reply =
            self.client.send("PUT", "/v1/units/shop/gateway/observations", &[], body.to_string().as_bytes()).unwrap();
        assert_eq!(reply.status, 200, "{}", reply.body);
    }

    /// A `deployments/scale` review of `shop/gateway`: (allowed, message, warnings).
    fn review(&mut self, uid: &str, old: i64, new: i64) -> (bool, String, Vec<String>) {
        review(&mut self.client, uid, old, new)
    }

    /// The Envoy gate's answer to a scale of `shop/gateway` to `replicas` (Envoy's request `id`).
    fn scale(&self, id: &str, replicas: u64) -> ext_authz::Checked {
        scale_blocking(self.served.envoy.unwrap(), id, UNIT, replicas)
    }

    fn unit(&mut self) -> Value {
        let reply = self.client.get("/v1/units/shop/gateway").unwrap();
        assert_eq!(reply.status, 200, "{}", reply.body);
        reply.json()
    }

    /// `kill -9`: no shutdown, no flush.
    fn kill(self) {
        self.served.kill();
    }

    fn stop(self) {
        self.served.stop();
    }
}

fn review(client: &mut Client, uid: &str, old: i64, new: i64) -> (bool, String, Vec<String>) {
    let body = scale_review(uid, "shop", "gateway", "deployments", old, new).to_string();
    let reply = client.post("/v1/admission", &[], body.as_bytes()).unwrap();
    assert_eq!(reply.status, 200, "{}", reply.body);
    let (allowed, message, warnings, _) = verdict(&reply.json());
    (allowed, message, warnings)
}

/// The gateway's evidence at `in_flight`, the workload at `replicas` (the count the Envoy gate
/// moves from is the unit's evidence, never the caller's word).
fn at(in_flight: u64, replicas: u64) -> Value {
    let mut push = gateway_push(in_flight);
    push["current_replicas"] = json!(replicas);
    push
}

/// In-flight requests at which the gateway's decision at 5 replicas is 5 -> 4 (target 100, down by 1).
fn quiet() -> Value {
    at(300, 5)
}

/// At 640 in flight the decision at 4 replicas is up by 2: 4 -> 6, unless a cooldown holds.
fn busy() -> Value {
    at(640, 4)
}

fn assert_held(allowed: bool, message: &str) {
    assert!(!allowed && message.contains("cooldown"), "held for the scale-up cooldown: {message}");
}

/// The gate refuses 4 -> 6 for the scale-up cooldown.
fn assert_gate_held(checked: &ext_authz::Checked) {
    let body = checked.denied();
    assert!(names_reason(body, "cooldown"), "held for the scale-up cooldown: {body}");
    assert_eq!((body["from_replicas"].as_u64(), body["to_replicas"].as_u64()), (Some(4), Some(6)), "{body}");
}

#[test]
fn an_admitted_action_survives_kill_9_and_an_unknown_past_holds_the_cooldown() {
    let dir = temp_dir("serve-state");
    let contracts = contracts(&dir);
    let state = dir.join("state");
    let state_arg = [std::ffi::OsStr::new("--state-dir"), state.as_os_str()];

    // A new state folder. A review of the scale-down is judged (allowed) and records nothing.
    let mut serve = Serve::start(&contracts, &state_arg);
    serve.push(&quiet());
    let (allowed, message, _) = serve.review("uid-down", 5, 4);
    assert!(allowed, "{message}");
    let unit = serve.unit();
    assert_eq!(unit["journal"]["store"], "state-dir", "{unit}");
    assert_eq!(unit["journal"]["entries"], json!([]), "a review records nothing: {unit}");
    assert_eq!(unit["last_action"]["source"], "unknown", "{unit}");
    // The Envoy gate admits 5 -> 4 and records it; Envoy's retry of the same request finds the
    // count at 4 already: allowed, nothing more recorded.
    let admitted = serve.scale("req-down", 4);
    assert_eq!(admitted.allowed().get("x-scale-units-unit").map(String::as_str), Some(UNIT), "{admitted:?}");
    let decision = admitted.allowed()["x-scale-units-decision"].clone();
    assert!(decision.starts_with("scale-decision:"), "{admitted:?}");
    serve.scale("req-down", 4).allowed();
    let unit = serve.unit();
    assert_eq!(unit["journal"]["entries"].as_array().unwrap().len(), 1, "one entry for a retried call: {unit}");
    assert_eq!(unit["last_action"]["source"], "admission", "{unit}");
    assert!(state.join("scale-units.redb").is_file());
    serve.kill();

    // Restarted on the same folder after kill -9: the admission is there, and it holds the
    // scale-up at the gate and in a review (the collector pushes again, without `last_action_at`).
    let mut serve = Serve::start(&contracts, &state_arg);
    serve.push(&busy());
    assert_gate_held(&serve.scale("req-up", 6));
    let (allowed, message, _) = serve.review("uid-up", 4, 6);
    assert_held(allowed, &message);
    let unit = serve.unit();
    let last = &unit["last_action"];
    assert_eq!(last["source"], "admission", "{unit}");
    assert_eq!((last["admission"]["from"].as_u64(), last["admission"]["to"].as_u64()), (Some(5), Some(4)), "{unit}");
    assert_eq!(last["admission"]["review_uid"], "envoy:req-down", "{unit}");
    assert_eq!(last["admission"]["decision_id"], decision.as_str(), "{unit}");
    assert_eq!(last["at"], last["admission"]["at"], "{unit}");
    let entries = unit["journal"]["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "neither the held call nor the review recorded anything: {unit}");
    assert_eq!(entries[0]["review_uid"], "envoy:req-down");
    // A collector's `null` does not erase it.
    serve.push(&json!({"last_action_at": null}));
    assert_gate_held(&serve.scale("req-up-2", 6));
    assert_eq!(serve.unit()["last_action"]["source"], "admission");
    serve.stop();

    // An empty state folder cannot vouch for anything: the cooldown counts from the start.
    let empty = dir.join("empty-state");
    let mut serve = Serve::start(&contracts, &[std::ffi::OsStr::new("--state-dir"), empty.as_os_str()]);
    serve.push(&busy());
    assert_gate_held(&serve.scale("req-up-3", 6));
    let unit = serve.unit();
    assert_eq!(unit["last_action"]["source"], "unknown", "{unit}");
    assert_eq!(unit["last_action"]["admission"], Value::Null, "{unit}");
    assert_eq!(unit["journal"]["entries"], json!([]), "{unit}");
    serve.stop();

    // Nor can the memory store (no --state-dir, no --redis): the same.
    let mut serve = Serve::start(&contracts, &[]);
    serve.push(&busy());
    assert_gate_held(&serve.scale("req-up-4", 6));
    let unit = serve.unit();
    assert_eq!(
        (unit["last_action"]["source"].as_str(), unit["journal"]["store"].as_str()),
        (Some("unknown"), Some("memory"))
    );
    serve.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_redis_that_lost_its_data_holds_the_cooldown_from_when_it_was_found_empty() {
    let dir = temp_dir("serve-state-redis");
    let contracts = contracts(&dir);
    let mut redis = Redis::start(&dir);
    let url = format!("redis://127.0.0.1:{}/", redis.port);
    let mut serve = Serve::start(&contracts, &[std::ffi::OsStr::new("--redis"), std::ffi::OsStr::new(&url)]);
    serve.push(&quiet());
    serve.scale("req-down", 4).allowed();
    let unit = serve.unit();
    assert_eq!(
        (unit["last_action"]["source"].as_str(), unit["journal"]["store"].as_str()),
        (Some("admission"), Some("redis"))
    );
    assert_eq!(unit["journal"]["entries"].as_array().unwrap().len(), 1, "{unit}");

    // Redis restarts empty (no RDB, no AOF): the admission is gone, and so is the epoch key.
    redis.restart();
    let started = Instant::now();
    loop {
        let reply = serve
            .client
            .send("PUT", "/v1/units/shop/gateway/observations", &[], busy().to_string().as_bytes())
            .unwrap();
        if reply.status == 200 {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "the service never reconnected: {}", reply.body);
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_gate_held(&serve.scale("req-up", 6));
    let unit = serve.unit();
    assert_eq!(
        unit["last_action"]["source"], "unknown",
        "the record was lost, the cooldown counts from the loss: {unit}"
    );
    assert_eq!(unit["last_action"]["admission"], Value::Null, "{unit}");
    serve.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

/// Mounts a tmpfs on `$1` with the state folder in it, runs the service with the Envoy gate,
/// waits for the file `$3`, then fills the tmpfs and says so; reports the service's exit.
const FULL_DISK: &str = r#"
set -u
mount -t tmpfs -o size=4m tmpfs "$1" || exit 90
"$4" serve --listen 127.0.0.1:0 --envoy-listen 127.0.0.1:0 --units "$2" --state-dir "$1/state" \
  --shutdown-delay-ms 0 --audit-log /dev/null &
pid=$!
echo "pid $pid"
while [ ! -e "$3" ]; do sleep 0.05; done
dd if=/dev/zero of="$1/filler" bs=4k 2>/dev/null
echo "filled $(df -k "$1" | awk 'NR == 2 { print $4 }')"
wait $pid
echo "exit $?"
"#;

#[test]
fn a_state_folder_on_a_full_disk_denies_the_change_it_cannot_record() {
    let dir = temp_dir("serve-state-full");
    let contracts = contracts(&dir);
    let mount = dir.join("mount");
    std::fs::create_dir_all(&mount).unwrap();
    let trigger = dir.join("fill-now");
    let served = Namespaced::start(
        FULL_DISK,
        &[mount.as_os_str(), contracts.as_os_str(), trigger.as_os_str()],
        &[("SCALE_UNITS_CACHE_DIR", std::env::temp_dir().join("scale-units-test-cache").as_os_str())],
    );
    let (pid, address) = (served.pid, served.http);
    let envoy = served.envoy.expect("started with --envoy-listen");
    let mut client = Client::new(address).retrying_stale_connections();
    let reply = client.send("PUT", "/v1/units/shop/gateway/observations", &[], quiet().to_string().as_bytes()).unwrap();
    assert_eq!(reply.status, 200, "{}", reply.body);

    std::fs::write(&trigger, b"").unwrap();
    let filled = served.next_line();
    assert_eq!(filled.strip_prefix("filled "), Some("0"), "the tmpfs is full: {filled}");
    let refused = scale_blocking(envoy, "req-down", UNIT, 4);
    let body = refused.denied();
    let message = body["message"].as_str().unwrap();
    assert!(
        message.contains("cannot be recorded"),
        "a change whose cooldown cannot be recorded is not let through: {body}"
    );
    assert!(body["decision_id"].as_str().is_some_and(|id| id.starts_with("scale-decision:")), "{body}");
    // Nothing was recorded: the unit's last action is still the folder's epoch.
    let reply = client.get("/v1/units/shop/gateway").unwrap();
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.json()["last_action"]["source"], "unknown", "{}", reply.body);
    // A review, which records nothing, needs no room on the disk: judged and allowed.
    let (allowed, message, _) = review(&mut client, "uid-down", 5, 4);
    assert!(allowed, "{message}");

    let status = Command::new("kill").args(["-TERM", &pid.to_string()]).status().unwrap();
    assert!(status.success());
    let exit = served.next_line();
    let stderr = served.finish();
    assert_eq!(exit, "exit 0", "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_state_lives_in_one_place_and_beside_a_units_folder() {
    let dir = temp_dir("serve-state-usage");
    let contracts = contracts(&dir);
    let serve = |args: &[&std::ffi::OsStr]| {
        Command::new(env!("CARGO_BIN_EXE_scale-units"))
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(args)
            .output()
            .unwrap()
    };
    let state = dir.join("state");
    let both = serve(&[
        "--units".as_ref(),
        contracts.as_os_str(),
        "--state-dir".as_ref(),
        state.as_os_str(),
        "--redis".as_ref(),
        "redis://127.0.0.1:1/".as_ref(),
    ]);
    assert_eq!(both.status.code(), Some(64), "{}", String::from_utf8_lossy(&both.stderr));
    let alone = serve(&["--state-dir".as_ref(), state.as_os_str()]);
    assert_eq!(alone.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&alone.stderr).contains("--state-dir needs --units"));
    assert!(!state.exists(), "nothing is created on a usage error");
    let _ = std::fs::remove_dir_all(&dir);
}
