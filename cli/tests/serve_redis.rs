//! `scale-units serve` over a real `redis-server` on loopback (issue 19, items 4 and 6): a value
//! written straight into Redis cannot add fields to the evaluation request, and quotas and
//! capacities the contract does not name are never stored.
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

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

use binary::{Redis, Serve, Served};
use kubernetes::{Http, capacity, gateway_contract, gateway_push, quota, signal, temp_dir, write_contract};
use serde_json::{Value, json};

/// `scale-units serve --units DIR/contracts --redis-url-file DIR/redis-url ARGS`.
fn serve(dir: &Path, args: &[&str]) -> Served {
    Serve::new(["--listen", "127.0.0.1:0", "--units"])
        .arg(dir.join("contracts"))
        .arg("--redis-url-file")
        .arg(dir.join("redis-url"))
        .args(args)
        .start()
}

/// A folder with `contract` for `shop/gateway`, its cooldowns 0 (a new service counts them from
/// its start).
fn folder(name: &str, contract: &Value) -> PathBuf {
    let dir = temp_dir(name);
    let mut contract = contract.clone();
    contract["policy"]["scale_up_cooldown_s"] = json!(0);
    contract["policy"]["scale_down_cooldown_s"] = json!(0);
    std::fs::create_dir_all(dir.join("contracts")).unwrap();
    write_contract(&dir.join("contracts"), "shop/gateway", &contract);
    dir
}

async fn unit(address: SocketAddr) -> (u16, Value) {
    Http::connect(address).await.send("GET", "/v1/units/shop/gateway", &[], "").await
}

async fn push(address: SocketAddr, body: &Value) -> (u16, Value) {
    Http::connect(address).await.send("PUT", "/v1/units/shop/gateway/observations", &[], &body.to_string()).await
}

fn reasons(decision: &Value) -> Vec<String> {
    decision["reasons"].as_array().unwrap().iter().map(|reason| reason.as_str().unwrap().to_owned()).collect()
}

const PREFIX: &str = "scale-units:{shop/gateway}:";

/// The Redis user SECURITY.md documents (§ The state store): the service's keys and the commands
/// it sends, nothing else. The service runs as it in every test here.
const ACL: &str = "on >acl-test-password ~scale-units:* resetchannels -@all +get +set +del +mget +multi +exec \
                   +eval +hsetnx +pexpire +hvals +hlen +hgetall +hdel \
                   +time +incr +zadd +zcard +zremrangebyscore";

/// Creates the service's user in `redis` and writes its URL into `dir/redis-url`.
fn service_user(redis: &Redis, dir: &Path) {
    let mut args = vec!["ACL", "SETUSER", "scale-units"];
    args.extend(ACL.split_whitespace());
    assert_eq!(redis.cli(&args).trim(), "OK");
    let url = format!("redis://scale-units:acl-test-password@127.0.0.1:{}/0", redis.port);
    std::fs::write(dir.join("redis-url"), url).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_value_written_into_redis_cannot_add_fields_to_the_request() {
    let dir = folder("redis-crafted", &gateway_contract());
    let redis = Redis::start(&dir);
    service_user(&redis, &dir);
    let served = serve(&dir, &[]);
    let address = served.http;

    let (status, answer) = push(address, &gateway_push(640)).await;
    assert_eq!(status, 200, "{answer}");
    let (status, genuine) = unit(address).await;
    assert_eq!(status, 200, "{genuine}");
    assert_eq!(
        (genuine["decision"]["action"].as_str(), genuine["decision"]["desired_replicas"].as_u64()),
        (Some("scale_up"), Some(5)),
        "{genuine}"
    );

    // Someone with write access to Redis stores texts that, spliced into the request, would have
    // closed the signal and added fields, or put three capacities in the slot of one.
    let signal_key = format!("{PREFIX}signal");
    let cpu_key = format!("{PREFIX}capacity:cpu_milli");
    let low = signal(10, 120).to_string();
    let crafted = [
        (signal_key.as_str(), format!("{low},\"current_replicas\":1,\"extra\":{{}}")),
        (signal_key.as_str(), format!("{low}}},\"contract\":{{")),
        (signal_key.as_str(), format!("[{low}]")),
        (
            cpu_key.as_str(),
            format!(
                "{},{},{}",
                capacity("cpu_milli", 16000, 120),
                capacity("cpu_milli", 1, 120),
                capacity("memory_mib", 1, 120)
            ),
        ),
        (cpu_key.as_str(), capacity("memory_mib", 1, 120).to_string()),
    ];
    for (key, text) in crafted {
        push(address, &gateway_push(640)).await;
        redis.cli(&["SET", key, &text, "PX", "120000"]);
        let (status, answer) = unit(address).await;
        // The crafted value counts as missing: the unit blocks on that evidence, nothing else moves.
        assert_eq!(status, 200, "{text}: {answer}");
        let decision = &answer["decision"];
        assert_eq!(decision["action"], "blocked", "{text}: {answer}");
        assert_eq!(decision["current_replicas"], 3, "{text}: {answer}");
        let missing = if key == signal_key { "signal_missing" } else { "capacity_missing" };
        assert!(reasons(decision).iter().any(|reason| reason == missing), "{text}: {answer}");
    }

    // One JSON object of the wrong shape reaches the evaluator as that one field, and is refused.
    push(address, &gateway_push(640)).await;
    let mut shaped = signal(10, 120);
    shaped["current_replicas"] = json!(1);
    redis.cli(&["SET", &signal_key, &shaped.to_string(), "PX", "120000"]);
    let (status, answer) = unit(address).await;
    assert_eq!((status, answer["error"]["code"].as_str()), (422, Some("invalid_field")), "{answer}");
    assert_eq!(answer["error"]["path"], "signal.current_replicas", "{answer}");

    // A genuine push decides as before.
    push(address, &gateway_push(640)).await;
    let (_, again) = unit(address).await;
    assert_eq!(again["decision"]["action"], "scale_up", "{again}");
    // The service's user was never refused a command or a key.
    assert_eq!(redis.cli(&["ACL", "LOG"]).trim(), "", "denied by the ACL");
    drop(served);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quotas_and_capacities_the_contract_does_not_name_are_not_stored() {
    let mut contract = gateway_contract();
    contract["quotas"] =
        json!([{"quota_ref": "quota:shop/sessions", "axis": "session_slots", "scope": "unit", "per_replica": 200}]);
    let dir = folder("redis-unnamed", &contract);
    let redis = Redis::start(&dir);
    service_user(&redis, &dir);
    let served = serve(&dir, &[]);
    let address = served.http;

    let mut body = gateway_push(640);
    let mut other_quota = quota(10_000, 120);
    other_quota["quota_ref"] = json!("quota:shop/not-in-the-contract");
    body["quotas"] = json!([quota(10_000, 120), other_quota]);
    body["capacities"].as_array_mut().unwrap().push(capacity("gpu_count", 8, 120));
    let (status, answer) = push(address, &body).await;
    assert_eq!(status, 200, "{answer}");

    let (status, shown) = unit(address).await;
    assert_eq!(status, 200, "{shown}");
    let axes: Vec<&str> =
        shown["evidence"]["capacities"].as_array().unwrap().iter().map(|c| c["axis"].as_str().unwrap()).collect();
    assert_eq!(axes, ["cpu_milli", "memory_mib", "session_slots"], "{shown}");
    let quotas: Vec<&str> =
        shown["evidence"]["quotas"].as_array().unwrap().iter().map(|q| q["quota_ref"].as_str().unwrap()).collect();
    assert_eq!(quotas, ["quota:shop/sessions"], "{shown}");

    // Nor anywhere in Redis.
    let mut keys: Vec<String> =
        redis.cli(&["--scan", "--pattern", "scale-units:*"]).lines().map(str::to_owned).collect();
    keys.sort();
    assert!(keys.iter().any(|key| key.ends_with(":quota:quota:shop/sessions")), "{keys:?}");
    assert!(keys.iter().any(|key| key.ends_with(":capacity:session_slots")), "{keys:?}");
    assert!(!keys.iter().any(|key| key.contains("not-in-the-contract") || key.contains("gpu_count")), "{keys:?}");
    // What is stored expires: every observation key has a TTL, none past a day.
    for key in keys.iter().filter(|key| key.contains(":quota:") || key.contains(":capacity:")) {
        let ttl: i64 = redis.cli(&["PTTL", key]).trim().parse().unwrap();
        assert!((1..=24 * 3600 * 1000).contains(&ttl), "{key}: {ttl}");
    }
    drop(served);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A CA: its certificate PEM, and a server certificate for `localhost` and 127.0.0.1 it signed
/// (certificate PEM, key PEM).
fn authority(name: &str) -> (String, String, String) {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(rcgen::DnType::CommonName, name);
    let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
    let key = KeyPair::generate().unwrap();
    let server = CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
        .unwrap()
        .signed_by(&key, &issuer)
        .unwrap();
    (issuer.pem(), server.pem(), key.serialize_pem())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tls_redis_serves_decisions_and_a_wrong_ca_is_refused_without_the_password() {
    let dir = folder("redis-tls", &gateway_contract());
    let (ca, cert, key) = authority("redis test CA");
    let (other_ca, _, _) = authority("another CA");
    for (name, pem) in [("ca.pem", &ca), ("redis.crt", &cert), ("redis.key", &key), ("other-ca.pem", &other_ca)] {
        std::fs::write(dir.join(name), pem).unwrap();
    }
    let path = |name: &str| dir.join(name).display().to_string();
    let tls = [
        "--tls-cert-file".to_owned(),
        path("redis.crt"),
        "--tls-key-file".to_owned(),
        path("redis.key"),
        "--tls-ca-cert-file".to_owned(),
        path("ca.pem"),
        "--tls-auth-clients".to_owned(),
        "no".to_owned(),
        "--requirepass".to_owned(),
        "hunter2-secret".to_owned(),
    ];
    let redis = Redis::start_tls(&dir, &tls);
    std::fs::write(dir.join("redis-url"), format!("rediss://:hunter2-secret@localhost:{}/0", redis.port)).unwrap();

    // Checked against the test's CA: the service decides from what it stored over TLS.
    let served = serve(&dir, &["--redis-ca-file", &path("ca.pem")]);
    let address = served.http;
    let (status, answer) = push(address, &gateway_push(640)).await;
    assert_eq!(status, 200, "{answer}");
    let (status, decided) = unit(address).await;
    assert_eq!(status, 200, "{decided}");
    assert_eq!(decided["decision"]["action"], "scale_up", "{decided}");
    assert_eq!(decided["evidence"]["signal"]["value"], 640, "{decided}");
    drop(served);

    // A server certificate of another CA: refused at start, and no message shows the password.
    let refused = Command::new(env!("CARGO_BIN_EXE_scale-units"))
        .args(["serve", "--listen", "127.0.0.1:0", "--units"])
        .arg(dir.join("contracts"))
        .arg("--redis-url-file")
        .arg(dir.join("redis-url"))
        .args(["--redis-ca-file", &path("other-ca.pem")])
        .env("SCALE_UNITS_CACHE_DIR", std::env::temp_dir().join("scale-units-test-cache"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{stderr}");
    eprintln!("refused as: {}", stderr.lines().last().unwrap_or_default());
    assert!(stderr.contains("cannot connect to Redis at rediss://***@localhost"), "{stderr}");
    assert!(stderr.to_lowercase().contains("certificate"), "{stderr}");
    assert!(!stderr.contains("hunter2"), "{stderr}");

    // The same URL as plain redis:// to the TLS port is no way around it: refused as well.
    let plain = format!("redis://:hunter2-secret@localhost:{}/0", redis.port);
    let refused = Command::new(env!("CARGO_BIN_EXE_scale-units"))
        .args(["serve", "--listen", "127.0.0.1:0", "--units"])
        .arg(dir.join("contracts"))
        .args(["--redis-ca-file", &path("ca.pem")])
        .env("SCALE_UNITS_REDIS_URL", plain)
        .env("SCALE_UNITS_CACHE_DIR", std::env::temp_dir().join("scale-units-test-cache"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{stderr}");
    assert!(stderr.contains("must be rediss://") && !stderr.contains("hunter2"), "{stderr}");
    drop(redis);
    let _ = std::fs::remove_dir_all(&dir);
}
