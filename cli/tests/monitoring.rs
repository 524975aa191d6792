//! `deploy/monitoring/`: the alerting rules pass `promtool check rules` and their unit tests
//! (`promtool test rules`), the Grafana dashboard parses, and every metric the rules and the
//! dashboard read is exported by the real binary (serving units with Redis leases, KEDA over TLS,
//! an audit log). Needs Debian's `prometheus` package (`promtool`; `make test-monitoring` and
//! `.ci/run` install it) and `redis-server`.
#![allow(
    clippy::panic,
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "test code: a failed expectation is a test failure"
)]

mod binary;
#[path = "../../server/tests/support/mod.rs"]
mod support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use binary::{Redis, Serve};
use serde_json::Value;
use support::Client;

fn monitoring() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/monitoring")
}

fn promtool(args: &[&str]) -> String {
    let output =
        Command::new("promtool").args(args).current_dir(monitoring()).output().unwrap_or_else(|error| {
            panic!("promtool cannot be run ({error}): apt-get install prometheus (.ci/run does)")
        });
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "promtool {args:?} failed:\n{text}");
    text
}

/// Every `scale_units_…` name in `text`.
fn metric_names(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = text;
    while let Some(start) = rest.find("scale_units_") {
        let tail = &rest[start..];
        let end = tail.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(tail.len());
        names.insert(tail[..end].to_owned());
        rest = &tail[end..];
    }
    names
}

#[test]
fn the_rules_pass_promtool_and_every_metric_they_and_the_dashboard_read_is_exported() {
    let checked = promtool(&["check", "rules", "rules.yaml"]);
    assert!(checked.contains("SUCCESS: 8 rules found"), "{checked}");
    let tested = promtool(&["test", "rules", "rules.test.yaml"]);
    assert!(tested.contains("SUCCESS"), "{tested}");

    let rules = std::fs::read_to_string(monitoring().join("rules.yaml")).unwrap();
    let dashboard: Value =
        serde_json::from_str(&std::fs::read_to_string(monitoring().join("dashboard.json")).unwrap()).unwrap();
    let expressions: Vec<String> = dashboard["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|panel| panel["targets"].as_array().unwrap().iter())
        .map(|target| target["expr"].as_str().unwrap().to_owned())
        .collect();
    assert!(expressions.len() >= 16, "{expressions:?}");
    let mut wanted = metric_names(&rules);
    wanted.extend(expressions.iter().flat_map(|expr| metric_names(expr)));
    let alerts: Vec<&str> = rules.lines().filter_map(|line| line.trim().strip_prefix("- alert: ")).collect();
    assert_eq!(alerts.len(), 8, "{alerts:?}");

    // The real binary: units with sources, Redis (leases), KEDA over TLS (certificate expiry).
    let dir = std::env::temp_dir().join(format!("scale-units-monitoring-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let units = dir.join("units");
    std::fs::create_dir_all(&units).unwrap();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/api-gateway/contract.json");
    std::fs::copy(example, units.join("shop.gateway.json")).unwrap();
    std::fs::write(
        units.join("shop.gateway.sources.yaml"),
        "prometheus:\n  local: {url: \"http://127.0.0.1:9\", timeout_ms: 200}\nsignal:\n  signal: in_flight\n  max_age_s: 60\n  value: {prometheus: {server: local, query: 'sum by (unit) (x)', series: {label: unit, value: gateway}}}\n",
    )
    .unwrap();
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    std::fs::write(dir.join("tls.crt"), certified.cert.pem()).unwrap();
    std::fs::write(dir.join("tls.key"), certified.signing_key.serialize_pem()).unwrap();
    let redis = Redis::start(&dir);
    let served =
        Serve::new(["--listen", "127.0.0.1:0", "--keda-listen", "127.0.0.1:0", "--collect-interval-ms", "200"])
            .args(["--redis", &redis.url()])
            .arg("--keda-tls-cert")
            .arg(dir.join("tls.crt"))
            .arg("--keda-tls-key")
            .arg(dir.join("tls.key"))
            .arg("--units")
            .arg(&units)
            .keda()
            .quiet()
            .start();
    let started = Instant::now();
    let text = loop {
        let text = Client::new(served.http).get("/metrics").unwrap().body;
        // After a round: the collector's counters are written, the refusal counted.
        if text.contains("scale_units_evidence_refused_total{") {
            break text;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "no collection round in /metrics:\n{text}");
        std::thread::sleep(Duration::from_millis(200));
    };
    let exported: BTreeSet<&str> = text
        .lines()
        .filter_map(|line| match line.strip_prefix("# TYPE ") {
            Some(typed) => typed.split(' ').next(),
            None if !line.starts_with('#') => line.split(['{', ' ']).next(),
            None => None,
        })
        .collect();
    let missing: Vec<&String> = wanted.iter().filter(|name| !exported.contains(name.as_str())).collect();
    assert!(missing.is_empty(), "read by the rules or the dashboard, not exported: {missing:?}\n{text}");
    assert!(text.contains("scale_units_collect_leases_enabled 1"), "{text}");
    drop(served);
    drop(redis);
    let _ = std::fs::remove_dir_all(&dir);
}
