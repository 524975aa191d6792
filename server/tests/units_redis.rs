//! Observations in Redis: two service instances sharing one `redis-server` answer from the same
//! evidence; keys expire with their observations; a Redis restart loses the evidence (blocked,
//! denied) and Redis down denies (never allowed on nothing). Needs `redis-server` (.ci/run
//! installs it); without it these tests fail.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "tests")]

mod kubernetes;

use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use kubernetes::*;
use scale_units_host::ActionKind;
use scale_units_server::units::{ActionSource, AdmittedChange, Recorded, UnitError, UnitVerdict, Units};
use serde_json::json;

/// A `redis-server` on a loopback port, with no persistence, in a temp dir.
struct Redis {
    port: u16,
    dir: std::path::PathBuf,
    child: Option<Child>,
}

impl Redis {
    fn start() -> Self {
        let mut redis = Self { port: free_port(), dir: temp_dir("redis"), child: None };
        redis.spawn();
        redis
    }

    fn spawn(&mut self) {
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(&self.dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|error| {
                panic!(
                    "redis-server cannot be started ({error}): install it (apt-get install redis-server; .ci/run does)"
                )
            });
        self.child = Some(child);
        for _ in 0..200 {
            if TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!("redis-server did not start on port {}", self.port);
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().unwrap();
            child.wait().unwrap();
        }
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }
}

/// A free loopback port below the kernel's ephemeral range (32768 and up on Linux). A port from
/// `bind(0)` is in that range, and while Redis is down for a restart the clients' reconnects to it
/// can take it as their own source port (a TCP self-connect), so the restarted server cannot bind.
/// Each call of this process takes a port no earlier call took.
fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU16, Ordering};
    static NEXT: AtomicU16 = AtomicU16::new(0);
    let base = 20_000 + u16::try_from(std::process::id() % 400).unwrap() * 25;
    loop {
        let port = base + NEXT.fetch_add(1, Ordering::SeqCst) % 2_000;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

async fn replica(registry: &Arc<scale_units_host::PolicyRegistry>, dir: &Path, url: &str) -> Arc<Units> {
    Units::builder(Arc::clone(registry)).contracts_dir(dir).redis(url).no_prior_actions().build().await.unwrap()
}

fn decided(verdict: UnitVerdict) -> scale_units_host::Decision {
    match verdict {
        UnitVerdict::Decided { decision, .. } => decision,
        UnitVerdict::NoContract => panic!("no contract"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_share_the_evidence_and_a_redis_restart_blocks() {
    let mut redis = Redis::start();
    let registry = registry();
    let dir = temp_dir("units-redis");
    write_contract(&dir, "shop/gateway", &gateway_contract());
    let (a, b) = (replica(&registry, &dir, &redis.url()).await, replica(&registry, &dir, &redis.url()).await);
    assert_eq!(a.store_kind(), "redis");
    let unit = key("shop/gateway");

    // A collector pushes to replica A; replica B decides on the same evidence.
    a.put_observations(&unit, &gateway_push(640).to_string()).await.unwrap();
    let (from_a, from_b) =
        (decided(a.evaluate(&unit, None).await.unwrap()), decided(b.evaluate(&unit, None).await.unwrap()));
    assert_eq!(from_b.action, ActionKind::ScaleUp);
    assert_eq!((from_b.current_replicas, from_b.desired_replicas), (3, 5));
    assert_eq!(from_a.decision_id, from_b.decision_id);

    // A push to B merges into what A wrote: a new signal, the capacities kept.
    b.put_observations(&unit, &json!({"signal": signal(900, 120)}).to_string()).await.unwrap();
    let at_900 = decided(a.evaluate(&unit, Some(5)).await.unwrap());
    assert_eq!((at_900.action, at_900.desired_replicas), (ActionKind::ScaleUp, 7));

    // A scale action admitted by replica A (its webhook records it) starts the cooldown on B too.
    let change = AdmittedChange {
        from: 3,
        to: 5,
        decision_id: Some("scale-decision:a"),
        review_uid: "uid-a",
        resource_version: None,
    };
    assert_eq!(a.record_admission(&unit, change).await.unwrap(), Recorded::New);
    let cooling = decided(b.evaluate(&unit, Some(5)).await.unwrap());
    assert_eq!(cooling.action, ActionKind::Hold);
    assert!(cooling.reasons.iter().any(|reason| reason.as_str() == "cooldown"), "{:?}", cooling.reasons);
    // The same review recorded by B is a replay: one journal entry, one uid.
    assert_eq!(b.record_admission(&unit, change).await.unwrap(), Recorded::Replayed);
    let journal = a.journal(&unit).await.unwrap();
    assert_eq!(journal.len(), 1, "{journal:?}");
    assert_eq!((journal[0].from, journal[0].to, journal[0].review_uid.as_str()), (3, 5, "uid-a"));
    assert_eq!(
        b.admitted_review(&unit, "uid-a").await.unwrap().unwrap().decision_id.as_deref(),
        Some("scale-decision:a")
    );
    // A collector's `null` or earlier time cannot clear the recorded admission.
    b.put_observations(&unit, &json!({"last_action_at": null}).to_string()).await.unwrap();
    b.put_observations(&unit, &json!({"last_action_at": at(-600)}).to_string()).await.unwrap();
    let still = decided(a.evaluate(&unit, Some(5)).await.unwrap());
    assert_eq!(still.action, ActionKind::Hold, "{:?}", still.reasons);
    // A record that cannot be read is not "no action": it is replaced by one at the moment it was
    // found, and the cooldown counts from then.
    let mut connection = redis::Client::open(redis.url()).unwrap().get_connection().unwrap();
    redis::cmd("SET").arg("scale-units:{shop/gateway}:admitted").arg("not json").query::<()>(&mut connection).unwrap();
    let found = b.decide(&unit, Some(5)).await.unwrap();
    let last = found.last_action.clone().unwrap();
    assert_eq!(last.source, ActionSource::Admission, "{last:?}");
    assert!(last.admission.unwrap().note.unwrap().contains("could not be read"));
    assert_eq!(decided(found.verdict).action, ActionKind::Hold);
    let replaced: String = redis::cmd("GET").arg("scale-units:{shop/gateway}:admitted").query(&mut connection).unwrap();
    assert!(replaced.contains("could not be read"), "{replaced}");

    // The key expires with the observation.
    a.put_observations(&unit, &json!({"signal": signal(900, 1)}).to_string()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let expired = decided(b.evaluate(&unit, None).await.unwrap());
    assert_eq!(expired.action, ActionKind::Blocked);
    assert!(expired.reasons.iter().any(|reason| reason.as_str() == "signal_missing"), "{:?}", expired.reasons);

    // Redis down: no evidence can be read, an error (the webhook denies), never a decision.
    a.put_observations(&unit, &gateway_push(640).to_string()).await.unwrap();
    redis.kill();
    match b.evaluate(&unit, Some(3)).await {
        Err(error @ UnitError::Store(_)) => assert_eq!(error.code(), "evidence_unavailable"),
        other => panic!("Redis is down, yet: {other:?}"),
    }
    assert!(matches!(a.put_observations(&unit, &gateway_push(640).to_string()).await, Err(UnitError::Store(_))));

    // Restarted on the same port, empty: the replicas reconnect and the unit is blocked on missing
    // evidence (and the collector's replica count is unknown).
    redis.spawn();
    let mut verdict = b.evaluate(&unit, Some(3)).await;
    for _ in 0..40 {
        if verdict.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        verdict = b.evaluate(&unit, Some(3)).await;
    }
    let after = decided(verdict.unwrap());
    assert_eq!(after.action, ActionKind::Blocked);
    assert!(after.reasons.iter().any(|reason| reason.as_str() == "signal_missing"), "{:?}", after.reasons);
    assert!(matches!(a.evaluate(&unit, None).await, Err(UnitError::UnknownReplicas(_))));

    // The collector pushes again, through A; B follows.
    a.put_observations(&unit, &gateway_push(640).to_string()).await.unwrap();
    assert_eq!(decided(b.evaluate(&unit, None).await.unwrap()).action, ActionKind::ScaleUp);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_webhook_denies_while_redis_is_down_and_after_it_lost_the_evidence() {
    let mut redis = Redis::start();
    let registry = registry();
    let dir = temp_dir("units-redis-hook");
    write_contract(&dir, "shop/gateway", &gateway_contract());
    let units = replica(&registry, &dir, &redis.url()).await;
    units.put_observations(&key("shop/gateway"), &gateway_push(640).to_string()).await.unwrap();
    let config = scale_units_server::service::ServiceConfig { units: Some(Arc::clone(&units)), ..Default::default() };
    let served = Served::start(config, Arc::clone(&registry)).await;
    let review = scale_review("uid-redis", "shop", "gateway", "deployments", 3, 4).to_string();

    let mut client = Http::connect(served.address).await;
    assert!(verdict(&client.send("POST", "/v1/admission", &[], &review).await.1).0);

    redis.kill();
    let (status, answer) = client.send("POST", "/v1/admission", &[], &review).await;
    assert_eq!(status, 200);
    let (allowed, message, _, _) = verdict(&answer);
    assert!(!allowed && message.contains("evidence unavailable"), "{message}");

    redis.spawn();
    let mut answer = client.send("POST", "/v1/admission", &[], &review).await.1;
    for _ in 0..40 {
        if verdict(&answer).1.contains("blocked") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        answer = client.send("POST", "/v1/admission", &[], &review).await.1;
    }
    let (allowed, message, _, _) = verdict(&answer);
    assert!(!allowed && message.contains("blocked") && message.contains("signal_missing"), "{message}");
    served.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// `SET`/`DEL` on the test's Redis through the redis crate (the collectors read it the same way).
async fn redis_command(url: &str, args: &[&str]) {
    let client = redis::Client::open(url).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    let mut command = redis::cmd(args[0]);
    for arg in &args[1..] {
        command.arg(*arg);
    }
    let _: redis::Value = command.query_async(&mut connection).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_replica_collects_idempotently_and_none_decides_on_expired_evidence() {
    use scale_units_server::collect::Collector;

    let redis = Redis::start();
    let registry = registry();
    let dir = temp_dir("units-redis-collect");
    write_contract(&dir, "shop/gateway", &gateway_contract());
    let sources = format!(
        r#"redis:
  shared: {{url: "{}"}}
replicas: {{max_age_s: 60, count: {{redis: {{server: shared, command: HGET, key: "shop:gateway", field: replicas}}}}}}
signal: {{signal: in_flight, max_age_s: 1, value: {{redis: {{server: shared, command: GET, key: "shop:in_flight"}}}}}}
capacities:
  - {{axis: cpu_milli, allocatable: {{static: 64000}}, reserved: {{static: 0}}, used: {{static: 0}}, max_age_s: 600}}
  - {{axis: memory_mib, allocatable: {{static: 262144}}, reserved: {{static: 0}}, used: {{static: 0}}, max_age_s: 600}}
  - {{axis: session_slots, allocatable: {{static: 10000}}, reserved: {{static: 0}}, used: {{static: 0}}, max_age_s: 600}}
"#,
        redis.url()
    );
    std::fs::write(dir.join("shop.gateway.sources.yaml"), sources).unwrap();
    redis_command(&redis.url(), &["HSET", "shop:gateway", "replicas", "3"]).await;
    redis_command(&redis.url(), &["SET", "shop:in_flight", "640"]).await;
    let (a, b) = (replica(&registry, &dir, &redis.url()).await, replica(&registry, &dir, &redis.url()).await);
    let unit = key("shop/gateway");
    a.put_observations(&unit, &json!({"safety": safety(false, 600)}).to_string()).await.unwrap();

    // Both replicas collect the same unit (as `serve --redis` does): the second write replaces
    // the first, and both decide on the same evidence.
    let (collect_a, collect_b) = (Collector::new(Arc::clone(&a)), Collector::new(Arc::clone(&b)));
    for collected in [collect_a.collect(&unit).await.unwrap(), collect_b.collect(&unit).await.unwrap()] {
        assert!(collected.iter().all(|collected| collected.result.is_ok()), "{collected:?}");
    }
    for replica in [&a, &b] {
        let decision = decided(replica.evaluate(&unit, None).await.unwrap());
        assert_eq!(
            (decision.action, decision.current_replicas, decision.desired_replicas),
            (ActionKind::ScaleUp, 3, 5)
        );
    }

    // The counter disappears: both collectors refuse (never a zero), and once the last signal's
    // max_age_s (1 s) has passed, neither replica decides on it.
    redis_command(&redis.url(), &["DEL", "shop:in_flight"]).await;
    for collector in [&collect_a, &collect_b] {
        let collected = collector.collect(&unit).await.unwrap();
        let signal = collected.iter().find(|collected| collected.source == "signal").unwrap();
        assert_eq!(signal.result.as_ref().unwrap_err().cause, "missing_key");
    }
    tokio::time::sleep(Duration::from_millis(2100)).await;
    for replica in [&a, &b] {
        let decision = decided(replica.evaluate(&unit, None).await.unwrap());
        assert_eq!(decision.action, ActionKind::Blocked);
        assert!(decision.reasons.iter().any(|reason| reason.as_str() == "signal_missing"), "{:?}", decision.reasons);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Leases (issue 30): a replica that lost its lease (its lease time passed without a renewal,
/// another replica took the shard with a newer fencing token) has its late write refused, so two
/// replicas never interleave one unit's evidence; the new holder's write stands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_lease_holders_late_write_is_refused() {
    use scale_units_server::collect::lease::Leases;

    let redis = Redis::start();
    let registry = registry();
    let dir = temp_dir("units-lease");
    write_contract(&dir, "shop/gateway", &gateway_contract());
    let units = replica(&registry, &dir, &redis.url()).await;
    let unit = key("shop/gateway");
    let manager = redis::Client::open(redis.url()).unwrap().get_connection_manager().await.unwrap();
    let ttl = Duration::from_millis(400);
    let (a, b) = (Leases::new(manager.clone(), "replica-a", 1, ttl), Leases::new(manager, "replica-b", 1, ttl));

    // A takes the one shard; B, arriving second, finds it held and takes nothing.
    assert_eq!(a.round().await.unwrap(), vec![0]);
    assert_eq!(b.round().await.unwrap(), Vec::<u32>::new());
    let stale = a.fence(&unit).unwrap();
    assert!(b.fence(&unit).is_none());
    units.put_observations_fenced(&unit, &gateway_push(640).to_string(), Some(&stale)).await.unwrap();

    // A stops renewing (paused, cut off): its lease expires and B takes the shard.
    let mut rounds = 0;
    while b.round().await.unwrap().is_empty() {
        rounds += 1;
        assert!(rounds < 100, "B never took the expired lease");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let current = b.fence(&unit).unwrap();
    assert_ne!(current.holder, stale.holder);

    // A's late write carries its expired token: refused, nothing of it stored.
    let late = json!({"signal": signal(9000, 120)}).to_string();
    let refused = units.put_observations_fenced(&unit, &late, Some(&stale)).await.unwrap_err();
    assert!(matches!(refused, UnitError::Fenced(_)), "{refused}");
    assert_eq!(refused.code(), "lease_lost");
    let count = json!({"count": 4, "observed_at": at(0), "expires_at": at(60), "source_ref": "late"});
    assert!(matches!(units.put_replicas_fenced(&unit, count, Some(&stale)).await, Err(UnitError::Fenced(_))));
    assert_eq!(units.evidence(&unit).await.unwrap()["signal"]["value"], 640);

    // B's write under the current token stands; A, back, holds nothing.
    let fresh = json!({"signal": signal(900, 120)}).to_string();
    units.put_observations_fenced(&unit, &fresh, Some(&current)).await.unwrap();
    assert_eq!(units.evidence(&unit).await.unwrap()["signal"]["value"], 900);
    assert_eq!(a.round().await.unwrap(), Vec::<u32>::new());
    assert!(a.fence(&unit).is_none());
    assert!(a.changes() >= 1 && b.changes() >= 1);
    let _ = std::fs::remove_dir_all(&dir);
}
