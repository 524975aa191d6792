//! The decision audit log of the real `scale-units serve` when it cannot be written (issue 24):
//! stdout a pipe nobody reads, and `--audit-log` on a full filesystem (a 64 KiB tmpfs, filled,
//! in a mount namespace of its own). In `batch` mode every evaluation is answered and every lost
//! line is counted in `/metrics`; in `blocking-strict` mode a request whose line cannot be
//! written is answered 503 `audit_unavailable` within the audit timeout, never left hanging; in
//! both, SIGTERM ends the process within the drain timeout. Also: every evaluation and unit line
//! carries `caller.client_certificate`, `null` without one.
#![allow(
    clippy::panic,
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "test code: a failed expectation is a test failure"
)]

mod binary;
#[path = "../../host-rs/tests/common/mod.rs"]
mod common;
#[path = "../../server/tests/support/mod.rs"]
mod support;

use std::io::BufRead as _;
use std::time::Duration;

use binary::{Namespaced, Serve};
use common::good_request;
use support::Client;

/// The value of the un-labelled `name` in a `/metrics` text.
fn metric(client: &mut Client, name: &str) -> u64 {
    let reply = client.get("/metrics").unwrap();
    assert_eq!(reply.status, 200, "{}", reply.body);
    reply
        .body
        .lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("{name} missing from /metrics:\n{}", reply.body))
}

/// A batch of `count` evaluations.
fn batch(count: usize) -> Vec<u8> {
    let one = good_request();
    format!("[{}]", vec![one.as_str(); count].join(",")).into_bytes()
}

#[test]
fn batch_mode_answers_every_evaluation_while_nobody_reads_stdout_and_counts_the_dropped_lines() {
    // 64 lines queued at most, beside the pipe's own 64 KiB: 3 000 lines overflow both.
    let served = Serve::audit_on_stdout([
        "--listen",
        "127.0.0.1:0",
        "--audit-buffer-lines",
        "64",
        "--audit-timeout-ms",
        "200",
        "--drain-timeout-ms",
        "2000",
        "--max-batch",
        "1000",
        "--max-body-bytes",
        "16777216",
    ])
    .start();
    let mut client = Client::new(served.http);
    for _ in 0..3 {
        let reply = client.post("/v1/evaluate", &[], &batch(1000)).unwrap();
        assert_eq!(reply.status, 200, "{}", reply.body);
        let results = reply.json()["results"].as_array().unwrap().clone();
        assert_eq!(results.len(), 1000);
        assert!(results.iter().all(|result| result["decision"]["action"].is_string()), "every one decided");
    }
    // The writer is stuck in `write`: single evaluations are still answered, one after another.
    for _ in 0..50 {
        let reply = client.post("/v1/evaluate", &[], good_request().as_bytes()).unwrap();
        assert_eq!(reply.status, 200, "{}", reply.body);
    }
    let queued = metric(&mut client, "scale_units_audit_lines_total");
    let dropped = metric(&mut client, "scale_units_audit_dropped_total");
    assert_eq!(queued + dropped, 3050, "every line is either queued or counted as dropped");
    // What was queued fits the pipe's buffer, the writer's batch and the queue, nothing more.
    assert!(dropped >= 2000, "{dropped} dropped, {queued} queued");
    assert_eq!(metric(&mut client, "scale_units_audit_failed_total"), 0);

    // SIGTERM: the flush gives up at the drain timeout (2 s) and the process exits, saying so.
    let (status, took) = served.terminate_within(Duration::from_secs(60)).expect("exited after SIGTERM");
    assert_eq!(status.code(), Some(1), "lines still queued are lost: not a clean exit");
    assert!(took >= Duration::from_secs(2), "the flush waited for the drain timeout, {took:?}");
    eprintln!("batch: {queued} lines queued, {dropped} dropped; exited {took:?} after SIGTERM");
}

#[test]
fn blocking_strict_fails_requests_whose_line_cannot_be_written_and_never_hangs() {
    let mut served = Serve::audit_on_stdout([
        "--listen",
        "127.0.0.1:0",
        "--audit-mode",
        "blocking-strict",
        "--audit-timeout-ms",
        "300",
        "--audit-buffer-lines",
        "16",
        "--drain-timeout-ms",
        "2000",
    ])
    .start();
    let mut client = Client::new(served.http);
    // While the pipe has room each line is written before the decision is served.
    let reply = client.post("/v1/evaluate", &[], good_request().as_bytes()).unwrap();
    assert_eq!(reply.status, 200, "{}", reply.body);
    let mut line = String::new();
    served.stdout.read_line(&mut line).unwrap();
    let audited: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(audited["decision_id"], reply.json()["decision"]["decision_id"], "{line}");

    // Nobody reads any more: once the pipe is full, every request fails, each within its timeout.
    let (mut answered, mut failed, mut slowest) = (0, 0, Duration::ZERO);
    for _ in 0..400 {
        let sent = std::time::Instant::now();
        let reply = client.post("/v1/evaluate", &[], good_request().as_bytes()).expect("answered, not hung");
        slowest = slowest.max(sent.elapsed());
        match reply.status {
            200 => answered += 1,
            503 => {
                let error = &reply.json()["error"];
                assert_eq!(error["code"], "audit_unavailable", "{}", reply.body);
                assert!(error["message"].as_str().unwrap().contains("blocking-strict"), "{}", reply.body);
                failed += 1;
            }
            status => panic!("{status}: {}", reply.body),
        }
        if failed >= 5 {
            break;
        }
    }
    assert_eq!(failed, 5, "the pipe (64 KiB) filled within 400 lines: {answered} answered");
    assert!(answered >= 20, "lines were written while the pipe had room: {answered}");
    assert_eq!(metric(&mut client, "scale_units_audit_failed_total"), 5);
    assert_eq!(metric(&mut client, "scale_units_audit_dropped_total"), 0, "strict drops nothing silently");
    let health = client.get("/health").unwrap();
    assert_eq!(health.status, 200, "the service itself keeps working");

    let (_, took) = served.terminate_within(Duration::from_secs(60)).expect("exited after SIGTERM");
    eprintln!(
        "blocking-strict: {answered} answered, then {failed} failed; slowest answer {slowest:?}; exited {took:?} after SIGTERM"
    );
}

/// Blocking-strict refuses every kind of decision whose line cannot be written, not only
/// evaluations: a unit read (503), an admission review (503: the API server applies the
/// webhook's `failurePolicy`) and KEDA's `GetMetrics` (gRPC `Unavailable`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocking_strict_fails_unit_reads_reviews_and_keda_calls_it_cannot_audit() {
    let units = support::keda::contracts_dir();
    let served = Serve::audit_on_stdout([
        std::ffi::OsStr::new("--listen"),
        "127.0.0.1:0".as_ref(),
        "--keda-listen".as_ref(),
        "127.0.0.1:0".as_ref(),
        "--audit-mode".as_ref(),
        "blocking-strict".as_ref(),
        "--audit-timeout-ms".as_ref(),
        "300".as_ref(),
        "--audit-buffer-lines".as_ref(),
        "16".as_ref(),
        "--drain-timeout-ms".as_ref(),
        "1000".as_ref(),
        "--units".as_ref(),
    ])
    .arg(&units)
    .owning(&units)
    .keda()
    .start();
    let (http, keda) = (served.http, served.keda());
    // Fill the pipe nobody reads: evaluations until the first 503.
    tokio::task::spawn_blocking(move || {
        let mut client = Client::new(http);
        for _ in 0..400 {
            let reply = client.post("/v1/evaluate", &[], good_request().as_bytes()).unwrap();
            if reply.status == 503 {
                return;
            }
        }
        panic!("the pipe never filled");
    })
    .await
    .unwrap();

    let (unit, review) = tokio::task::spawn_blocking(move || {
        let mut client = Client::new(http);
        let unit = client.get("/v1/units/zentinelle/gateway").unwrap();
        let scale = |replicas: i64| {
            serde_json::json!({"kind": "Scale", "apiVersion": "autoscaling/v1",
                   "metadata": {"name": "gateway", "namespace": "zentinelle"},
                   "spec": {"replicas": replicas}, "status": {"replicas": 3}})
        };
        let review = serde_json::json!({
            "kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1",
            "request": {
                "uid": "7d3a0c1e-0000-4000-8000-000000000024",
                "kind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
                "resource": {"group": "apps", "version": "v1", "resource": "deployments"},
                "subResource": "scale", "name": "gateway", "namespace": "zentinelle", "operation": "UPDATE",
                "userInfo": {"username": "system:serviceaccount:kube-system:horizontal-pod-autoscaler"},
                "object": scale(4), "oldObject": scale(3), "dryRun": false
            }
        });
        let review = client
            .post("/v1/admission", &[("content-type", "application/json")], review.to_string().as_bytes())
            .unwrap();
        (unit, review)
    })
    .await
    .unwrap();
    for (what, reply) in [("unit read", &unit), ("admission review", &review)] {
        assert_eq!(reply.status, 503, "{what}: {}", reply.body);
        assert_eq!(reply.json()["error"]["code"], "audit_unavailable", "{what}: {}", reply.body);
    }

    use scale_units_server::keda::proto::external_scaler_client::ExternalScalerClient;
    use scale_units_server::keda::proto::{GetMetricsRequest, ScaledObjectRef};
    let mut client = ExternalScalerClient::connect(format!("http://{keda}")).await.unwrap();
    let reference = ScaledObjectRef {
        name: "gateway".into(),
        namespace: "zentinelle".into(),
        scaler_metadata: std::collections::HashMap::new(),
    };
    let request = GetMetricsRequest {
        scaled_object_ref: Some(reference),
        metric_name: scale_units_server::keda::METRIC_NAME.into(),
    };
    let status = client.get_metrics(request).await.expect_err("no unaudited answer");
    assert_eq!(status.code(), tonic::Code::Unavailable, "{status:?}");
    assert!(status.message().contains("blocking-strict"), "{status:?}");
    tokio::task::spawn_blocking(move || {
        served.terminate_within(Duration::from_secs(60)).expect("exited after SIGTERM");
    })
    .await
    .unwrap();
}

/// Mounts a 64 KiB tmpfs on `$1`, fills it, and serves with `--audit-log $1/audit.log` in mode
/// `$2`; after the service exits, the size of the audit log.
const FULL_DISK: &str = r#"
set -u
mount -t tmpfs -o size=64k tmpfs "$1" || exit 90
head -c 1048576 /dev/zero > "$1/fill" 2>/dev/null
"$3" serve --listen 127.0.0.1:0 --shutdown-delay-ms 0 --drain-timeout-ms 2000 \
  --audit-log "$1/audit.log" --audit-mode "$2" --audit-timeout-ms 500 &
echo "pid $!"
wait $!
echo "exit $?"
echo "audit-bytes $(wc -c < "$1/audit.log")"
"#;

fn on_a_full_disk(mode: &str) -> (Namespaced, std::path::PathBuf) {
    let mount = std::env::temp_dir().join(format!("scale-units-audit-full-{mode}-{}", std::process::id()));
    std::fs::create_dir_all(&mount).unwrap();
    let cache = std::env::temp_dir().join("scale-units-test-cache");
    let served = Namespaced::start(
        FULL_DISK,
        &[mount.as_os_str(), std::ffi::OsStr::new(mode)],
        &[("SCALE_UNITS_CACHE_DIR", cache.as_os_str())],
    );
    (served, mount)
}

#[test]
fn batch_mode_on_a_full_disk_answers_and_counts_every_lost_line() {
    let (served, mount) = on_a_full_disk("batch");
    let mut client = Client::new(served.http);
    for _ in 0..20 {
        let reply = client.post("/v1/evaluate", &[], good_request().as_bytes()).unwrap();
        assert_eq!(reply.status, 200, "{}", reply.body);
    }
    // The writer fails each write (ENOSPC) a moment after the answer: wait for its count.
    let mut dropped = 0;
    for _ in 0..200 {
        dropped = metric(&mut client, "scale_units_audit_dropped_total");
        if dropped == 20 {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    assert_eq!(dropped, 20, "every line the full disk refused is counted");
    let status = std::process::Command::new("kill").args(["-TERM", &served.pid.to_string()]).status().unwrap();
    assert!(status.success());
    assert_eq!(served.next_line(), "exit 0");
    assert_eq!(served.next_line(), "audit-bytes 0");
    served.finish();
    let _ = std::fs::remove_dir_all(&mount);
}

#[test]
fn blocking_strict_on_a_full_disk_answers_503_with_the_reason() {
    let (served, mount) = on_a_full_disk("blocking-strict");
    let mut client = Client::new(served.http);
    for _ in 0..5 {
        let reply = client.post("/v1/evaluate", &[], good_request().as_bytes()).unwrap();
        assert_eq!(reply.status, 503, "{}", reply.body);
        let error = &reply.json()["error"];
        assert_eq!(error["code"], "audit_unavailable", "{}", reply.body);
        assert!(error["message"].as_str().unwrap().contains("No space left on device"), "{}", reply.body);
    }
    assert_eq!(metric(&mut client, "scale_units_audit_failed_total"), 5);
    assert_eq!(client.get("/health").unwrap().status, 200);
    let status = std::process::Command::new("kill").args(["-TERM", &served.pid.to_string()]).status().unwrap();
    assert!(status.success());
    assert_eq!(served.next_line(), "exit 0");
    assert_eq!(served.next_line(), "audit-bytes 0");
    served.finish();
    let _ = std::fs::remove_dir_all(&mount);
}

#[test]
fn evaluation_and_unit_lines_carry_client_certificate_null_without_one() {
    let units = support::keda::contracts_dir();
    let mut served =
        Serve::audit_on_stdout([std::ffi::OsStr::new("--listen"), "127.0.0.1:0".as_ref(), "--units".as_ref()])
            .arg(&units)
            .owning(&units)
            .start();
    let mut client = Client::new(served.http);
    let reply = client.post("/v1/evaluate", &[], good_request().as_bytes()).unwrap();
    assert_eq!(reply.status, 200, "{}", reply.body);
    // Without observations the unit's answer is an error, audited all the same.
    client.get("/v1/units/zentinelle/gateway").unwrap();
    for source in ["evaluate", "unit"] {
        let mut line = String::new();
        served.stdout.read_line(&mut line).unwrap();
        let audited: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(audited["source"], source, "{line}");
        let caller = audited["caller"].as_object().unwrap();
        assert!(caller["address"].as_str().unwrap().starts_with("127.0.0.1:"), "{line}");
        assert_eq!(caller.get("client_certificate"), Some(&serde_json::Value::Null), "present, null: {line}");
    }
}
