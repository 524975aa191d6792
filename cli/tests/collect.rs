//! The evidence collectors through the real binary, against REAL parts: Debian's `prometheus`
//! (started here on loopback with a config this test writes, scraping every second an exporter
//! this test serves from a thread with text it controls) and a real `redis-server`. Needs both
//! installed (`.ci/run` and `make test-cli` install them).
//!
//! A change the Envoy gate admits (an ext_authz `Check`, sent by a real gRPC client) is the unit's
//! count at once and starts its cooldown; an admission review records nothing (issue 37), so the
//! collected count stands until the gate admits a change or the workload reports it.
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

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use binary::{Redis, Serve};
use scale_units_server::keda::METRIC_NAME;
use scale_units_server::keda::proto::GetMetricsRequest;
use scale_units_server::keda::proto::external_scaler_client::ExternalScalerClient;
use serde_json::{Value, json};
use support::Client;

fn example(path: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples").join(path)).unwrap()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("scale-units-collect-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A free loopback port (taken from the kernel, then released).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Polls `check` until it returns `Some`, at most `limit` (a bound on waiting, not an assertion on
/// time): the collector, Prometheus' scrapes and expiries all run on their own clocks.
fn wait_for<T>(what: &str, limit: Duration, mut check: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(start.elapsed() < limit, "gave up waiting for: {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A `/metrics` endpoint this test controls: `None` answers 503 (a scrape fails).
struct Exporter {
    port: u16,
    text: Arc<Mutex<Option<String>>>,
}

impl Exporter {
    fn start(text: &str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let text = Arc::new(Mutex::new(Some(text.to_owned())));
        let serving = Arc::clone(&text);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|read| read > 0) && line != "\r\n" {
                    line.clear();
                }
                let body = serving.lock().unwrap().clone();
                let response = match body {
                    Some(body) => format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: text/plain; version=0.0.4\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    ),
                    None => {
                        "HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_owned()
                    }
                };
                let _ = stream.write_all(response.as_bytes());
            }
        });
        Self { port, text }
    }

    fn set(&self, text: Option<&str>) {
        *self.text.lock().unwrap() = text.map(str::to_owned);
    }
}

/// Debian's `prometheus` on a loopback port, scraping `targets` every second, with `rules`.
struct Prometheus {
    port: u16,
    child: Option<Child>,
    dir: PathBuf,
}

impl Prometheus {
    fn start(dir: &Path, exporter: u16, rules: &str) -> Self {
        let port = free_port();
        std::fs::write(dir.join("rules.yml"), rules).unwrap();
        let config = format!(
            "global: {{scrape_interval: 1s, evaluation_interval: 1s}}\nrule_files: [\"{}\"]\nscrape_configs:\n  - job_name: app\n    static_configs: [{{targets: [\"127.0.0.1:{exporter}\"]}}]\n",
            dir.join("rules.yml").display()
        );
        std::fs::write(dir.join("prometheus.yml"), config).unwrap();
        let mut prometheus = Self { port, child: None, dir: dir.to_owned() };
        prometheus.restart();
        prometheus
    }

    /// Starts it (again) on its port with its data, and waits until it is ready.
    fn restart(&mut self) {
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", self.dir.join("prometheus.yml").display()))
            .arg(format!("--storage.tsdb.path={}", self.dir.join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{}", self.port))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|error| {
                panic!("prometheus cannot be started ({error}): apt-get install prometheus (.ci/run does)")
            });
        self.child = Some(child);
        let port = self.port;
        wait_for("prometheus ready", Duration::from_secs(60), || {
            let reply = Client::new(SocketAddr::from(([127, 0, 0, 1], port))).get("/-/ready").ok()?;
            (reply.status == 200).then_some(())
        });
    }

    /// SIGTERM, as an orchestrator stops it: it shuts down cleanly, its samples kept on disk.
    fn terminate(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
            let _ = child.wait();
        }
    }

    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(self.dir.join("data"));
    }
}

/// `scale-units serve` on loopback with the KEDA scaler and the Envoy gate beside it, collecting
/// every 300 ms.
struct Served {
    /// The child, killed when this is dropped.
    _process: binary::Served,
    http: SocketAddr,
    keda: SocketAddr,
    envoy: SocketAddr,
}

impl Served {
    fn start(units: &Path) -> Self {
        Self::start_with(units, &[])
    }

    /// [`Self::start`] with more arguments (`--redis URL`).
    fn start_with(units: &Path, extra: &[&str]) -> Self {
        let served =
            Serve::new(["--listen", "127.0.0.1:0", "--keda-listen", "127.0.0.1:0", "--collect-interval-ms", "300"])
                .args(["--envoy-listen", "127.0.0.1:0", "--units-interval-ms", "100"])
                .args(extra)
                .arg("--units")
                .arg(units)
                .keda()
                .envoy()
                .quiet()
                .start();
        let (http, keda, envoy) = (served.http, served.keda(), served.envoy.unwrap());
        Self { _process: served, http, keda, envoy }
    }

    fn get(&self, path: &str) -> (u16, Value) {
        let reply = Client::new(self.http).get(path).unwrap();
        (reply.status, serde_json::from_str(&reply.body).unwrap_or(Value::Null))
    }

    fn unit(&self) -> (u16, Value) {
        self.get("/v1/units/zentinelle/gateway")
    }

    fn metrics(&self) -> String {
        Client::new(self.http).get("/metrics").unwrap().body
    }

    /// `scale_units_evidence_refused_total` for the gateway's `source` and `cause`.
    fn refused(&self, source: &str, cause: &str) -> u64 {
        let prefix = format!(
            "scale_units_evidence_refused_total{{unit=\"zentinelle/gateway\",source=\"{source}\",cause=\"{cause}\"}} "
        );
        self.metrics().lines().find_map(|line| line.strip_prefix(&prefix)?.parse().ok()).unwrap_or(0)
    }

    fn stored(&self, source: &str) -> u64 {
        let prefix = format!("scale_units_evidence_stored_total{{unit=\"zentinelle/gateway\",source=\"{source}\"}} ");
        self.metrics().lines().find_map(|line| line.strip_prefix(&prefix)?.parse().ok()).unwrap_or(0)
    }

    fn admit(&self, old: i64, new: i64) -> Value {
        self.admit_as(old, new, "7d3a0c1e-0000-4000-8000-000000000015", None)
    }

    /// The Envoy gate's answer to a scale of the gateway to `replicas` (from the unit's count).
    async fn scale(&self, id: &str, replicas: u64) -> ext_authz::Checked {
        ext_authz::scale(self.envoy, id, "zentinelle/gateway", replicas).await
    }

    /// An admission review of `old -> new` with `uid`, with the bearer token when given.
    fn admit_as(&self, old: i64, new: i64, uid: &str, token: Option<&str>) -> Value {
        let scale = |replicas: i64| {
            json!({"kind": "Scale", "apiVersion": "autoscaling/v1",
                   "metadata": {"name": "gateway", "namespace": "zentinelle"},
                   "spec": {"replicas": replicas}, "status": {"replicas": old}})
        };
        let review = json!({
            "kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1",
            "request": {
                "uid": uid,
                "kind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
                "resource": {"group": "apps", "version": "v1", "resource": "deployments"},
                "subResource": "scale", "name": "gateway", "namespace": "zentinelle", "operation": "UPDATE",
                "userInfo": {"username": "system:serviceaccount:kube-system:horizontal-pod-autoscaler"},
                "object": scale(new), "oldObject": scale(old), "dryRun": false
            }
        });
        let bearer = token.map(|token| format!("Bearer {token}"));
        let mut headers = vec![("content-type", "application/json")];
        if let Some(bearer) = &bearer {
            headers.push(("authorization", bearer.as_str()));
        }
        let reply = Client::new(self.http).post("/v1/admission", &headers, review.to_string().as_bytes()).unwrap();
        reply.json()["response"].clone()
    }

    async fn keda_metric(&self) -> Result<i64, tonic::Status> {
        let mut client = ExternalScalerClient::connect(format!("http://{}", self.keda)).await.unwrap();
        let reference = scale_units_server::keda::proto::ScaledObjectRef {
            name: "gateway".into(),
            namespace: "zentinelle".into(),
            scaler_metadata: std::collections::HashMap::new(),
        };
        let request = GetMetricsRequest { scaled_object_ref: Some(reference), metric_name: METRIC_NAME.into() };
        client.get_metrics(request).await.map(|reply| reply.into_inner().metric_values[0].metric_value)
    }
}

fn exposition(replicas: u64, in_flight: &[&str], overloaded: u8) -> String {
    let mut text = format!(
        "# TYPE kube_deployment_status_replicas gauge\nkube_deployment_status_replicas{{namespace=\"zentinelle\",deployment=\"gateway\"}} {replicas}\n# TYPE gateway_active_connections gauge\n"
    );
    for (pod, value) in ["a", "b", "c"].iter().zip(in_flight) {
        text.push_str(&format!("gateway_active_connections{{pod=\"{pod}\"}} {value}\n"));
    }
    text.push_str(&format!("# TYPE gateway_overloaded gauge\ngateway_overloaded {overloaded}\n"));
    text
}

fn gateway_sources(prometheus: u16) -> String {
    gateway_sources_aged(prometheus, 10)
}

/// The gateway's sources, the replica count kept `replicas_max_age_s` (the signal and the safety
/// evidence 4 s).
fn gateway_sources_aged(prometheus: u16, replicas_max_age_s: u64) -> String {
    format!(
        r#"interval_s: 1
prometheus:
  local: {{url: "http://127.0.0.1:{prometheus}", timeout_ms: 1000}}
replicas:
  max_age_s: {replicas_max_age_s}
  count: {{prometheus: {{server: local, query: 'kube_deployment_status_replicas{{namespace="zentinelle",deployment="gateway"}}'}}}}
signal:
  signal: in_flight
  max_age_s: 4
  value: {{prometheus: {{server: local, query: gateway_active_connections}}}}
capacities:
  - {{axis: cpu_milli, allocatable: {{static: 16000}}, reserved: {{static: 3000}}, used: {{static: 2400}}, max_age_s: 600}}
  - {{axis: memory_mib, allocatable: {{static: 65536}}, reserved: {{static: 6144}}, used: {{static: 5100}}, max_age_s: 600}}
  - {{axis: session_slots, allocatable: {{static: 4000}}, reserved: {{static: 700}}, used: {{static: 640}}, max_age_s: 600}}
safety:
  server: local
  overloaded: [GatewayOverloaded]
  max_age_s: 4
"#
    )
}

fn action(unit: &Value) -> (&str, u64, u64, Vec<&str>) {
    let decision = &unit["decision"];
    (
        decision["action"].as_str().unwrap_or_default(),
        decision["current_replicas"].as_u64().unwrap_or_default(),
        decision["desired_replicas"].as_u64().unwrap_or_default(),
        decision["reasons"]
            .as_array()
            .map(|reasons| reasons.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_evidence_scales_up_survives_an_admission_and_fails_closed() {
    let dir = temp_dir("prometheus");
    let units = dir.join("units");
    std::fs::create_dir_all(&units).unwrap();
    let exporter = Exporter::start(&exposition(3, &["300"], 0));
    let rules = "groups:\n  - name: gateway\n    rules:\n      - alert: GatewayOverloaded\n        expr: gateway_overloaded > 0\n";
    let mut prometheus = Prometheus::start(&dir, exporter.port, rules);
    std::fs::write(units.join("zentinelle.gateway.json"), example("api-gateway/contract.json")).unwrap();
    std::fs::write(units.join("zentinelle.gateway.sources.yaml"), gateway_sources(prometheus.port)).unwrap();
    let served = tokio::task::spawn_blocking(move || Served::start(&units)).await.unwrap();
    let long = Duration::from_secs(60);

    // 300 in flight at 3 replicas (target 100): at target once every source is in (the first
    // round stores one observation after the other); the evidence names its source.
    let unit = wait_for("a hold at 3 replicas", long, || {
        let (status, unit) = served.unit();
        (status == 200 && action(&unit).1 == 3 && action(&unit).0 == "hold").then_some(unit)
    });
    let signal = &unit["evidence"]["signal"];
    assert_eq!(signal["value"], 300);
    assert_eq!(signal["source_ref"], "prometheus.local:zentinelle/gateway/signal");
    assert!(signal["source_digest"].as_str().unwrap().starts_with("sha256:"));
    assert!(signal["age_s"].as_i64().unwrap() >= 0);
    assert_eq!(unit["evidence"]["replicas"]["count"], 3);
    assert_eq!(unit["evidence"]["safety"]["overloaded"], false);
    assert_eq!(unit["evidence"]["capacities"].as_array().unwrap().len(), 3);
    assert!(served.stored("signal") >= 1 && served.stored("capacity.cpu_milli") >= 1, "counted in /metrics");

    // The in-flight count rises: scale_up, and KEDA reports the desired count.
    exporter.set(Some(&exposition(3, &["640"], 0)));
    let unit = wait_for("scale_up", long, || {
        let (_, unit) = served.unit();
        (action(&unit).0 == "scale_up").then_some(unit)
    });
    assert_eq!(action(&unit).2, 5, "3 -> 5 (step 2): {unit}");
    assert_eq!(served.keda_metric().await.unwrap(), 5);

    // An admission review of 3 -> 5 is judged (allowed, with the decision's id) and records
    // nothing: the count is still the collected 3, and KEDA still asks for 5.
    let response = served.admit(3, 5);
    assert_eq!(response["allowed"], true, "{response}");
    assert!(response["auditAnnotations"]["decision-id"].as_str().is_some_and(|id| !id.is_empty()), "{response}");
    let (_, unit) = served.unit();
    assert_eq!(unit["evidence"]["replicas"]["count"], 3, "a review records nothing: {unit}");
    assert_eq!(unit["last_action"]["source"], "unknown", "{unit}");
    assert_eq!(served.keda_metric().await.unwrap(), 5);

    // The Envoy gate admits 3 -> 5: the count is 5 at once, and the collector's reads of the old
    // count (the Deployment has not caught up) never bring KEDA back to 3 in the cooldown.
    let admitted = served.scale("req-3-5", 5).await;
    assert_eq!(admitted.allowed().get("x-scale-units-unit").map(String::as_str), Some("zentinelle/gateway"));
    let (_, unit) = served.unit();
    assert_eq!(unit["evidence"]["replicas"]["count"], 5, "{unit}");
    assert_eq!(unit["evidence"]["replicas"]["source_ref"], "admission:zentinelle/gateway");
    wait_for("two reads of 3 refused", long, || (served.refused("replicas", "unconfirmed") >= 2).then_some(()));
    let (_, unit) = served.unit();
    assert_eq!((action(&unit).0, action(&unit).1), ("hold", 5), "cooldown at the admitted count: {unit}");
    assert!(action(&unit).3.contains(&"cooldown"), "{unit}");
    assert_eq!(served.keda_metric().await.unwrap(), 5, "never back to 3");
    // Once the workload reports 5, the collector's count takes over.
    exporter.set(Some(&exposition(5, &["640"], 0)));
    wait_for("the collected count", long, || {
        let (_, unit) = served.unit();
        unit["evidence"]["replicas"]["source_ref"].as_str()?.starts_with("prometheus.local:").then_some(())
    });

    // A firing alert is the safety evidence, with the alert as reason_ref.
    exporter.set(Some(&exposition(5, &["640"], 1)));
    let unit = wait_for("overload from the alert", long, || {
        let (_, unit) = served.unit();
        (unit["evidence"]["safety"]["overloaded"] == true).then_some(unit)
    });
    assert_eq!(unit["evidence"]["safety"]["reason_ref"], "alert:GatewayOverloaded");
    assert_eq!(action(&unit).0, "blocked", "{unit}");
    exporter.set(Some(&exposition(5, &["640"], 0)));
    wait_for("the alert resolved", long, || {
        let (_, unit) = served.unit();
        (unit["evidence"]["safety"]["overloaded"] == false).then_some(())
    });

    // NaN, a negative value, two series: nothing stored, the cause counted, and once the last
    // good signal expires (max_age_s 4) the decision blocks on the missing signal.
    for (values, cause) in [(&["NaN"][..], "nan"), (&["-5"][..], "negative"), (&["400", "300"][..], "several_series")] {
        exporter.set(Some(&exposition(5, &["640"], 0)));
        wait_for("a good signal again", long, || {
            let (_, unit) = served.unit();
            (unit["evidence"]["signal"]["value"] == 640).then_some(())
        });
        let before = served.refused("signal", cause);
        exporter.set(Some(&exposition(5, values, 0)));
        wait_for(cause, long, || (served.refused("signal", cause) > before).then_some(()));
        let unit = wait_for("blocked on the missing signal", long, || {
            let (_, unit) = served.unit();
            (action(&unit).0 == "blocked").then_some(unit)
        });
        assert!(action(&unit).3.contains(&"signal_missing"), "{cause}: {unit}");
        assert_eq!(served.keda_metric().await.unwrap(), 5, "blocked holds the count");
    }

    // The exporter vanishes (its series go stale): empty answers, the count expires, KEDA answers
    // an error (the HPA keeps its replicas), the webhook denies, and so does the Envoy gate (no
    // count to move from).
    exporter.set(None);
    wait_for("empty_result", long, || (served.refused("replicas", "empty_result") > 0).then_some(()));
    let (status, body) = wait_for("the count expired", long, || {
        let (status, body) = served.unit();
        (status == 409).then_some((status, body))
    });
    assert_eq!((status, body["error"]["code"].as_str()), (409, Some("unknown_replicas")), "{body}");
    assert!(served.keda_metric().await.is_err(), "no count is no number");
    let response = served.admit(5, 3);
    assert_eq!(response["allowed"], false, "{response}");
    let refused = served.scale("req-no-count", 3).await;
    assert_eq!(refused.denied()["reason"], "unknown_replicas", "{refused:?}");

    // Prometheus stops: query errors, counted; still blocked.
    exporter.set(Some(&exposition(5, &["640"], 0)));
    wait_for("a count again", long, || (served.unit().0 == 200).then_some(()));
    prometheus.stop();
    wait_for("query_error", long, || (served.refused("signal", "query_error") > 0).then_some(()));
    let (_, unit) = wait_for("blocked at 5, the signal expired", long, || {
        let (_, unit) = served.get("/v1/units/zentinelle/gateway?replicas=5");
        (action(&unit).0 == "blocked" && unit["evidence"]["signal"].is_null()).then_some(((), unit))
    });
    // The signal and the safety evidence expire together; the evaluator names the first it meets.
    let reasons = action(&unit).3;
    assert!(reasons.contains(&"signal_missing") || reasons.contains(&"overload_shedding_active"), "{unit}");
    drop(served);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every observation in a unit's `evidence` is younger than its max age (replicas 8 s, signal
/// and safety 4 s): whichever replica wrote it, none is decided on past its age.
fn assert_fresh(who: &str, unit: &Value) {
    let evidence = &unit["evidence"];
    for (name, max_age_s) in [("replicas", 8), ("signal", 4), ("safety", 4)] {
        if let Some(age) = evidence[name]["age_s"].as_i64() {
            assert!((0..max_age_s).contains(&age), "{who}: {name} is {age}s old, past {max_age_s}s: {unit}");
        }
    }
}

/// A replica count as a collector stores it, observed `ahead_s` from now by this clock.
fn collected_count(count: u64, ahead_s: i64, max_age_s: i64) -> String {
    let now = jiff::Timestamp::now().as_second() + ahead_s;
    let text = |second: i64| jiff::Timestamp::from_second(second).unwrap().strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
    json!({
        "count": count, "observed_at": text(now), "expires_at": text(now + max_age_s),
        "source_ref": "prometheus.local:zentinelle/gateway/replicas",
        "source_digest": format!("sha256:{}", "0".repeat(64)),
    })
    .to_string()
}

/// Two `serve --redis` processes on one redis-server collecting from one Prometheus: the unit is
/// collected by whichever holds its shard's lease (issue 30), and both decide on that evidence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_services_on_one_redis_decide_alike_fail_closed_alike_and_outlive_each_other() {
    let dir = temp_dir("replicas");
    let units = dir.join("units");
    std::fs::create_dir_all(&units).unwrap();
    let redis = Redis::start(&dir);
    // A Redis that has vouched for every admission for an hour: the cooldowns do not count from
    // the services' start.
    let epoch = jiff::Timestamp::now().as_millisecond() - 3_600_000;
    assert_eq!(redis.command(&["SET", "scale-units:epoch", &epoch.to_string()]), "+OK");
    let exporter = Exporter::start(&exposition(3, &["300"], 0));
    let rules = "groups:\n  - name: gateway\n    rules:\n      - alert: GatewayOverloaded\n        expr: gateway_overloaded > 0\n";
    let prometheus = Prometheus::start(&dir, exporter.port, rules);
    std::fs::write(units.join("zentinelle.gateway.json"), example("api-gateway/contract.json")).unwrap();
    std::fs::write(units.join("zentinelle.gateway.sources.yaml"), gateway_sources_aged(prometheus.port, 8)).unwrap();
    let url = format!("redis://127.0.0.1:{}/0", redis.port);
    let (a, b) = tokio::task::spawn_blocking(move || {
        (Served::start_with(&units, &["--redis", &url]), Served::start_with(&units, &["--redis", &url]))
    })
    .await
    .unwrap();
    let long = Duration::from_secs(60);

    // Both hold at 3 on the same stored evidence, collected by the lease holder.
    for (who, served) in [("a", &a), ("b", &b)] {
        wait_for("a hold at 3 replicas", long, || {
            let (status, unit) = served.unit();
            (status == 200 && action(&unit).0 == "hold" && action(&unit).1 == 3).then_some(())
        });
        assert_fresh(who, &served.unit().1);
    }
    wait_for("one of them collects", long, || (a.stored("signal") + b.stored("signal") >= 2).then_some(()));
    wait_for("one stored signal, read by both", long, || {
        let (signal_a, signal_b) = (&a.unit().1["evidence"]["signal"], &b.unit().1["evidence"]["signal"]);
        (signal_a["source_digest"] == signal_b["source_digest"] && signal_a["observed_at"] == signal_b["observed_at"])
            .then_some(())
    });

    // The in-flight count rises: both scale up to 5, and both KEDA scalers report 5.
    exporter.set(Some(&exposition(3, &["640"], 0)));
    for served in [&a, &b] {
        let unit = wait_for("scale_up", long, || {
            let (_, unit) = served.unit();
            (action(&unit).0 == "scale_up").then_some(unit)
        });
        assert_eq!(action(&unit).2, 5, "{unit}");
        assert_eq!(served.keda_metric().await.unwrap(), 5);
    }

    // A's Envoy gate admits 3 -> 5: B stands on the admitted count at once, its collector's
    // reads of the old count are refused, and neither KEDA scaler goes back to 3 ...
    a.scale("req-3-5", 5).await.allowed();
    // ... even when a collector that read 3 before the admission writes it after (the state a
    // lost race between one replica's collector and another's gate leaves in Redis).
    let raced =
        redis.command(&["SET", "scale-units:{zentinelle/gateway}:replicas", &collected_count(3, 0, 8), "PX", "8000"]);
    assert_eq!(raced, "+OK");
    for (who, served) in [("a", &a), ("b", &b)] {
        let (status, unit) = served.unit();
        assert_eq!(status, 200, "{who}: {unit}");
        assert_eq!(unit["evidence"]["replicas"]["count"], 5, "{who}: {unit}");
        assert_eq!(unit["evidence"]["replicas"]["source_ref"], "admission:zentinelle/gateway", "{who}");
        assert_eq!((action(&unit).0, action(&unit).1), ("hold", 5), "{who}: cooldown at the admitted count: {unit}");
        assert!(action(&unit).3.contains(&"cooldown"), "{who}: {unit}");
        assert_eq!(served.keda_metric().await.unwrap(), 5, "{who}: never back to 3");
    }
    wait_for("the collector refuses reads of 3", long, || {
        (a.refused("replicas", "unconfirmed") + b.refused("replicas", "unconfirmed") >= 2).then_some(())
    });
    assert_eq!(b.keda_metric().await.unwrap(), 5, "never back to 3");

    // The workload reports 5: the collected count takes over on both (the admission's record of
    // the last action and the admitted count are kept apart in Redis).
    exporter.set(Some(&exposition(5, &["640"], 0)));
    for served in [&a, &b] {
        wait_for("the collected count", long, || {
            let (_, unit) = served.unit();
            (unit["evidence"]["replicas"]["source_ref"].as_str()?.starts_with("prometheus.local:")
                && unit["evidence"]["replicas"]["count"] == 5)
                .then_some(())
        });
        let (_, unit) = served.unit();
        assert_eq!(unit["last_action"]["source"], "admission", "the cooldown counts from A's admission: {unit}");
        assert_eq!((action(&unit).0, action(&unit).1), ("hold", 5), "{unit}");
    }

    // The exporter vanishes: neither replica can collect. While the evidence ages out, nothing
    // either serves is past its max age; then both fail closed (no count: 409, a KEDA error)
    // and at a given count both block on the missing signal.
    exporter.set(None);
    wait_for("empty_result", long, || {
        (a.refused("signal", "empty_result") + b.refused("signal", "empty_result") > 0).then_some(())
    });
    wait_for("both without a count", long, || {
        let answers = [("a", a.unit()), ("b", b.unit())];
        for (who, (status, unit)) in &answers {
            if *status == 200 {
                assert_fresh(who, unit);
            }
        }
        answers.iter().all(|(_, (status, _))| *status == 409).then_some(())
    });
    for (who, served) in [("a", &a), ("b", &b)] {
        let (status, body) = served.unit();
        assert_eq!((status, body["error"]["code"].as_str()), (409, Some("unknown_replicas")), "{who}: {body}");
        assert!(served.keda_metric().await.is_err(), "{who}: no count is no number");
        let (_, unit) = served.get("/v1/units/zentinelle/gateway?replicas=5");
        assert_eq!(action(&unit).0, "blocked", "{who}: {unit}");
        assert!(unit["evidence"]["signal"].is_null(), "{who}: {unit}");
    }

    // The exporter is back; A stops: B alone keeps collecting (A's last writes expire after 4 s,
    // so a fresh signal of the new value well after that is B's).
    exporter.set(Some(&exposition(5, &["900"], 0)));
    wait_for("b decides again", long, || (b.unit().0 == 200).then_some(()));
    drop(a);
    let alone = Instant::now();
    let stored = b.stored("signal");
    wait_for("b alone, past A's evidence", long, || {
        let (status, unit) = b.unit();
        assert_eq!(status, 200, "b keeps a count: {unit}");
        assert_fresh("b", &unit);
        (alone.elapsed() > Duration::from_secs(10) && unit["evidence"]["signal"]["value"] == 900).then_some(())
    });
    assert!(b.stored("signal") >= stored + 5, "b collected on its own");
    let (_, unit) = b.unit();
    assert_ne!(action(&unit).0, "blocked", "b decides on its own evidence: {unit}");
    assert_eq!(b.keda_metric().await.unwrap(), 5, "hold at 5 in the cooldown");

    // A replica whose clock runs 30 s ahead writes a count "observed" in B's future, which
    // Redis keeps by that replica's expiry: B does not decide on it (fresh means observed_at <=
    // now < expires_at by B's own clock), and B's reads, observed earlier, do not replace it.
    let ahead = collected_count(5, 30, 8);
    assert_eq!(redis.command(&["SET", "scale-units:{zentinelle/gateway}:replicas", &ahead, "PX", "38000"]), "+OK");
    let (status, body) = b.unit();
    assert_eq!((status, body["error"]["code"].as_str()), (409, Some("unknown_replicas")), "{body}");
    assert!(b.keda_metric().await.is_err(), "no number from a count out of B's time");
    drop(b);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The window a review leaves (issue 37: a review records nothing, authenticated or not): the
/// review is judged and answered, but nothing in it is taken as evidence, so until the collector
/// reads the new count the decision (and KEDA) stands on the old one. In Kubernetes mode the watch
/// closes it (tests/kubernetes); here a change the Envoy gate admits does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_review_moves_no_count_with_the_token_or_without_and_an_admitted_envoy_call_closes_the_window() {
    let dir = temp_dir("window");
    let units = dir.join("units");
    std::fs::create_dir_all(&units).unwrap();
    let redis = Redis::start(&dir);
    let epoch = jiff::Timestamp::now().as_millisecond() - 3_600_000;
    assert_eq!(redis.command(&["SET", "scale-units:epoch", &epoch.to_string()]), "+OK");
    let exporter = Exporter::start(&exposition(3, &["640"], 0));
    let prometheus = Prometheus::start(&dir, exporter.port, "groups: []\n");
    std::fs::write(units.join("zentinelle.gateway.json"), example("api-gateway/contract.json")).unwrap();
    std::fs::write(units.join("zentinelle.gateway.sources.yaml"), gateway_sources_aged(prometheus.port, 8)).unwrap();
    std::fs::write(dir.join("token"), "window-test-token\n").unwrap();
    let url = format!("redis://127.0.0.1:{}/0", redis.port);
    let token_file = dir.join("token").display().to_string();
    let served = tokio::task::spawn_blocking(move || {
        Served::start_with(&units, &["--redis", &url, "--token-file", &token_file])
    })
    .await
    .unwrap();
    let long = Duration::from_secs(60);
    let scale_up_at_3 = || {
        wait_for("scale_up at 3", long, || {
            let (_, unit) = served.unit();
            (action(&unit).0 == "scale_up" && action(&unit).1 == 3).then_some(())
        });
    };
    scale_up_at_3();

    // Without the token and with it: allowed (the decision at 3 asks for 5), answered with the
    // decision's id either way, and neither the cooldown nor the count is taken from it — a
    // review must not move or freeze anything.
    for (uid, token) in [
        ("00000000-0000-4000-8000-00000000000a", None),
        ("00000000-0000-4000-8000-00000000000b", Some("window-test-token")),
    ] {
        let response = served.admit_as(3, 5, uid, token);
        assert_eq!(response["allowed"], true, "{response}");
        assert!(response["auditAnnotations"]["decision-id"].as_str().is_some(), "{response}");
        let (_, unit) = served.unit();
        assert_eq!(unit["evidence"]["replicas"]["count"], 3, "{token:?}: {unit}");
        assert_eq!(unit["last_action"]["source"], "unknown", "{token:?}: no cooldown from it: {unit}");
        assert_eq!(served.keda_metric().await.unwrap(), 5, "the decision at 3 still asks for 5");
    }
    // The window: the demand falls before the workload's new count is read. The decision stands
    // on the collected 3 and KEDA answers 3; the HPA's 5 -> 3 is then judged by the webhook at
    // the real count, 5.
    exporter.set(Some(&exposition(3, &["300"], 0)));
    wait_for("a hold at 3", long, || {
        let (_, unit) = served.unit();
        (action(&unit).0 == "hold" && action(&unit).1 == 3).then_some(())
    });
    assert_eq!(served.keda_metric().await.unwrap(), 3);

    // Through the Envoy gate: the admitted 5 is the count at once, the cooldown counts from it,
    // and the same fall of the demand while the workload still reads 3 leaves KEDA at 5.
    exporter.set(Some(&exposition(3, &["640"], 0)));
    scale_up_at_3();
    served.scale("req-window", 5).await.allowed();
    let (_, unit) = served.unit();
    assert_eq!(unit["evidence"]["replicas"]["count"], 5, "{unit}");
    assert_eq!(unit["last_action"]["source"], "admission", "{unit}");
    exporter.set(Some(&exposition(3, &["300"], 0)));
    wait_for("the fall read", long, || {
        let (_, unit) = served.unit();
        (unit["evidence"]["signal"]["value"] == 300).then_some(())
    });
    wait_for("two reads of 3 refused", long, || (served.refused("replicas", "unconfirmed") >= 2).then_some(()));
    let (_, unit) = served.unit();
    assert_eq!((action(&unit).0, action(&unit).1), ("hold", 5), "{unit}");
    assert_eq!(served.keda_metric().await.unwrap(), 5, "never back to 3");
    drop(served);
    let _ = std::fs::remove_dir_all(&dir);
}

fn connector_sources(redis: u16) -> String {
    format!(
        r#"redis:
  queue: {{url: "redis://127.0.0.1:{redis}/0", timeout_ms: 1000}}
replicas:
  max_age_s: 60
  count: {{redis: {{server: queue, command: HGET, key: "crm:deployment", field: replicas}}}}
signal:
  signal: queue_depth
  max_age_s: 60
  value: {{redis: {{server: queue, command: LLEN, key: "crm:jobs"}}}}
capacities:
  - {{axis: cpu_milli, allocatable: {{static: 8000}}, reserved: {{static: 750}}, used: {{static: 600}}, max_age_s: 600}}
  - {{axis: memory_mib, allocatable: {{static: 16384}}, reserved: {{static: 1536}}, used: {{static: 1200}}, max_age_s: 600}}
  - {{axis: upstream_rate, allocatable: {{static: 100}}, reserved: {{static: 30}}, used: {{static: 30}}, max_age_s: 600}}
quotas:
  - quota_ref: "provider:crm/api-requests-per-second"
    scope: provider_global
    limit: {{static: 100}}
    used: {{redis: {{server: queue, command: GET, key: "crm:used"}}}}
    max_age_s: 60
"#
    )
}

/// `scale-units collect --once --format json --units DIR connectors/crm-sync`: exit code and the
/// unit's line.
fn collect_once(units: &Path) -> (i32, Value) {
    let output = Command::new(env!("CARGO_BIN_EXE_scale-units"))
        .args(["collect", "--once", "--format", "json", "--units"])
        .arg(units)
        .arg("connectors/crm-sync")
        .env("SCALE_UNITS_CACHE_DIR", std::env::temp_dir().join("scale-units-test-cache"))
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    let line =
        stdout.lines().next().unwrap_or_else(|| panic!("no output: {}", String::from_utf8_lossy(&output.stderr)));
    (output.status.code().unwrap(), serde_json::from_str(line).unwrap())
}

fn source<'a>(line: &'a Value, name: &str) -> &'a Value {
    line["sources"].as_array().unwrap().iter().find(|source| source["source"] == name).unwrap()
}

#[test]
fn a_redis_backlog_scales_a_worker_and_a_redis_counter_exhausts_its_quota() {
    let dir = temp_dir("redis");
    let units = dir.join("units");
    std::fs::create_dir_all(&units).unwrap();
    let mut redis = Redis::start(&dir);
    std::fs::write(units.join("connectors.crm-sync.json"), example("connector-pool/contract.json")).unwrap();
    std::fs::write(units.join("connectors.crm-sync.sources.yaml"), connector_sources(redis.port)).unwrap();
    assert_eq!(redis.command(&["HSET", "crm:deployment", "replicas", "3"]), ":1");
    let jobs: Vec<String> = (0..210).map(|job| format!("job-{job}")).collect();
    let mut push = vec!["RPUSH", "crm:jobs"];
    push.extend(jobs.iter().map(String::as_str));
    assert_eq!(redis.command(&push), ":210");
    assert_eq!(redis.command(&["SET", "crm:used", "0"]), "+OK");

    // A backlog of 210 (target 40) at 3 replicas: scale up by the step, to 5.
    let (code, line) = collect_once(&units);
    assert_eq!(code, 0, "{line}");
    assert_eq!(source(&line, "signal")["stored"]["signal"]["value"], 210, "{line}");
    assert_eq!(source(&line, "replicas")["stored"]["count"], 3, "{line}");
    let quota = &source(&line, "quota.provider:crm/api-requests-per-second")["stored"]["quotas"][0];
    assert_eq!((quota["limit"].clone(), quota["used"].clone()), (json!(100), json!(0)), "{line}");
    assert_eq!(
        quota["source_ref"],
        "redis.queue+static:connectors/crm-sync/quota.provider:crm/api-requests-per-second"
    );
    assert_eq!(
        (line["decision"]["action"].as_str(), line["decision"]["desired_replicas"].as_u64()),
        (Some("scale_up"), Some(5)),
        "{line}"
    );

    // The shared counter (atomic increments by every process) nearly at its limit: growth blocked.
    assert_eq!(redis.command(&["INCRBY", "crm:used", "95"]), ":95");
    let (code, line) = collect_once(&units);
    assert_eq!(code, 0, "{line}");
    assert_ne!(line["decision"]["action"], "scale_up", "{line}");
    assert!(line["decision"]["reasons"].as_array().unwrap().contains(&json!("provider_quota_exhausted")), "{line}");

    // Past its limit the evaluator refuses the observation: nothing stored, the quota is missing.
    assert_eq!(redis.command(&["SET", "crm:used", "150"]), "+OK");
    let (code, line) = collect_once(&units);
    assert_eq!(code, 1, "{line}");
    assert_eq!(source(&line, "quota.provider:crm/api-requests-per-second")["refused"]["cause"], "refused", "{line}");
    assert!(line["decision"]["reasons"].as_array().unwrap().contains(&json!("provider_quota_missing")), "{line}");
    // The unit's observations are checked together; only the one at fault is refused.
    assert_eq!(source(&line, "signal")["stored"]["signal"]["value"], 210, "{line}");

    // A key of the wrong type is a Redis error, never a zero.
    assert_eq!(redis.command(&["SET", "crm:used", "0"]), "+OK");
    assert_eq!(redis.command(&["DEL", "crm:jobs"]), ":1");
    assert_eq!(redis.command(&["SET", "crm:jobs", "many"]), "+OK");
    let (code, line) = collect_once(&units);
    assert_eq!(code, 1, "{line}");
    assert_eq!(source(&line, "signal")["refused"]["cause"], "redis_error", "{line}");
    assert_eq!(line["decision"]["action"], "blocked", "{line}");

    // Redis down: every Redis source refused, no count, no decision.
    redis.stop();
    let (code, line) = collect_once(&units);
    assert_eq!(code, 1, "{line}");
    assert_eq!(
        source(&line, "replicas")["refused"]["cause"]
            .as_str()
            .map(|cause| cause == "redis_error" || cause == "timeout"),
        Some(true),
        "{line}"
    );
    assert_eq!(line["decision"]["error"]["code"], "unknown_replicas", "{line}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 24: Prometheus stopped for twice the signal's max age while the gauge moved from 500 to
/// 900, then started again. Until its first scrape it answers an instant query with the 500 it
/// stored before the outage, dated by the query's evaluation time; the collector dates the
/// sample by the sample (`timestamp()`), so the 500 is refused as stale and no decision is made
/// on it: the unit goes from blocked (no fresh evidence) straight to decisions on 900.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_prometheus_outage_no_decision_is_made_on_a_sample_from_before_it() {
    let dir = temp_dir("outage");
    let units = dir.join("units");
    std::fs::create_dir_all(&units).unwrap();
    let exporter = Exporter::start(&exposition(5, &["500"], 0));
    let mut prometheus = Prometheus::start(&dir, exporter.port, "groups: []\n");
    std::fs::write(units.join("zentinelle.gateway.json"), example("api-gateway/contract.json")).unwrap();
    // The signal's max age: 4 s.
    std::fs::write(units.join("zentinelle.gateway.sources.yaml"), gateway_sources_aged(prometheus.port, 60)).unwrap();
    let served = tokio::task::spawn_blocking(move || Served::start(&units)).await.unwrap();
    let long = Duration::from_secs(60);
    wait_for("a decision on 500", long, || {
        let (status, unit) = served.unit();
        (status == 200 && unit["evidence"]["signal"]["value"] == 500 && !action(&unit).0.is_empty()).then_some(())
    });

    prometheus.terminate();
    let stopped = Instant::now();
    exporter.set(Some(&exposition(5, &["900"], 0)));
    // Twice the max age: the stored 500 expires and the unit blocks.
    std::thread::sleep(Duration::from_secs(8));
    let (_, unit) = served.unit();
    assert!(unit["evidence"]["signal"].is_null(), "the 500 expired during the outage: {unit}");
    assert_eq!(action(&unit).0, "blocked", "{unit}");

    prometheus.restart();
    // From the restart until the 900 is in, every reading of the unit: never the 500 again.
    let mut readings = 0;
    wait_for("a decision on 900", long, || {
        let (_, unit) = served.unit();
        readings += 1;
        let signal = &unit["evidence"]["signal"];
        assert_ne!(
            signal["value"],
            500,
            "a sample from before the outage, {:?} after it began: {unit}",
            stopped.elapsed()
        );
        (signal["value"] == 900 && !action(&unit).0.is_empty()).then_some(())
    });
    assert!(served.refused("signal", "stale") + served.refused("signal", "query_error") >= 1);
    eprintln!(
        "{readings} readings after the restart, none on the 500; refused stale: {}",
        served.refused("signal", "stale")
    );
}
