//! Sources files (`<namespace>.<name>.sources.yaml|yml|json`): parsed into typed structs,
//! validated with errors at their path, reloaded beside the contracts (a refused file keeps the
//! last good one), and `schema/sources.schema.json` generated from the types.
#![allow(
    clippy::panic,
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "test code: a failed expectation is a test failure"
)]

mod kubernetes;

use std::time::Duration;

use kubernetes::{gateway_contract, key, registry, temp_dir, write_contract};
use scale_units_server::collect::sources::{Number, RedisCommand, Sources};
use scale_units_server::units::Units;

const GOOD: &str = r#"
interval_s: 15
prometheus:
  main: {url: "http://prometheus.monitoring:9090", timeout_ms: 2000}
redis:
  queue: {url: "redis://redis.queue:6379/0"}
replicas:
  max_age_s: 60
  count: {prometheus: {server: main, query: 'kube_deployment_status_replicas{deployment="api"}'}}
signal:
  signal: in_flight
  max_age_s: 60
  value: {prometheus: {server: main, query: "sum(gateway_active_connections)", scale: 1, round: ceil}}
quotas:
  - quota_ref: "tenant:acme/tokens"
    scope: tenant
    limit: {static: 1000}
    used: {redis: {server: queue, command: HGET, key: "quota:acme", field: used}}
    max_age_s: 30
safety: {server: main, overloaded: [GatewayOverloaded], max_age_s: 60}
"#;

#[test]
fn a_sources_file_parses_into_typed_fields() {
    let sources = Sources::parse(GOOD, true).unwrap();
    assert_eq!(sources.interval_s, Some(15));
    assert_eq!(sources.signal.as_ref().unwrap().signal.as_str(), "in_flight");
    let Number::Redis(read) = &sources.quotas[0].used else { panic!("a Redis read") };
    assert_eq!((read.command, read.field.as_deref()), (RedisCommand::Hget, Some("used")));
    let json = serde_json::to_string(
        &serde_json::json!({"signal": {"signal": "queue_depth", "max_age_s": 5, "value": {"static": 3}}}),
    )
    .unwrap();
    assert!(Sources::parse(&json, false).is_ok());
}

#[test]
fn faults_are_reported_at_their_path() {
    let cases: [(&str, &str, &str); 9] = [
        ("interval_s: 15\n", "interval_s: 0\n", "interval_s"),
        ("server: main, query: 'kube", "server: other, query: 'kube", "replicas.count.prometheus.server"),
        (
            "command: HGET, key: \"quota:acme\", field: used",
            "command: HGET, key: \"quota:acme\"",
            "quotas[0].used.redis.field",
        ),
        ("scale: 1,", "scale: -1,", "signal.value.prometheus.scale"),
        ("http://prometheus.monitoring:9090", "http://admin:pw@prometheus.monitoring:9090", "prometheus.main.url"),
        ("http://prometheus.monitoring:9090", "ftp://prometheus.monitoring:9090", "prometheus.main.url"),
        ("  max_age_s: 60\n  count", "  max_age_s: 0\n  count", "replicas.max_age_s"),
        (
            "count: {prometheus: {server: main, query: 'kube_deployment_status_replicas{deployment=\"api\"}'}}",
            "count: {static: 3}",
            "replicas.count",
        ),
        ("overloaded: [GatewayOverloaded]", "overloaded: [\"bad name\"]", "safety.overloaded[0]"),
    ];
    for (from, to, path) in cases {
        assert!(GOOD.contains(from), "{from}");
        let text = GOOD.replacen(from, to, 1);
        let error = Sources::parse(&text, true).unwrap_err();
        assert_eq!(error.path, path, "{to}: {error}");
    }
    // The types refuse what they do not know, with the line.
    let error = Sources::parse(&GOOD.replace("timeout_ms: 2000", "timeout: 2000"), true).unwrap_err();
    assert!(error.message.contains("timeout"), "{error}");
    let error = Sources::parse(&GOOD.replace("signal: in_flight", "signal: inflight"), true).unwrap_err();
    assert!(error.message.contains("inflight"), "{error}");
    let error = Sources::parse(&GOOD.replace("http://prometheus", "https://prometheus"), true).unwrap_err();
    assert_eq!(error.path, "prometheus.main.ca_file", "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sources_reload_beside_contracts_and_a_refused_file_keeps_the_last_good_one() {
    let dir = temp_dir("sources");
    write_contract(&dir, "zentinelle/gateway", &gateway_contract());
    std::fs::write(dir.join("zentinelle.gateway.sources.yaml"), GOOD).unwrap();
    let units = Units::builder(registry()).contracts_dir(&dir).build().await.unwrap();
    let unit = key("zentinelle/gateway");
    // The sources file is not read as a contract of a unit `gateway.sources`.
    assert_eq!(units.keys(), vec![unit.clone()]);
    assert_eq!(units.source_keys(), vec![unit.clone()]);
    assert_eq!(units.sources(&unit).unwrap().interval_s, Some(15));

    std::thread::sleep(Duration::from_millis(20));
    std::fs::write(dir.join("zentinelle.gateway.sources.yaml"), GOOD.replace("interval_s: 15", "interval_s: 0"))
        .unwrap();
    let report = units.reload().await;
    assert_eq!(report.refused.len(), 1, "{report:?}");
    assert!(report.refused[0].1.contains("interval_s"), "{report:?}");
    assert_eq!(units.sources(&unit).unwrap().interval_s, Some(15), "the last good sources stay");

    std::fs::write(dir.join("zentinelle.gateway.sources.yaml"), GOOD.replace("interval_s: 15", "interval_s: 30"))
        .unwrap();
    let report = units.reload().await;
    assert_eq!(report.sources_loaded, vec![unit.clone()]);
    assert_eq!(units.sources(&unit).unwrap().interval_s, Some(30));

    std::fs::remove_file(dir.join("zentinelle.gateway.sources.yaml")).unwrap();
    let report = units.reload().await;
    assert_eq!(report.sources_removed, vec![unit.clone()]);
    assert!(units.sources(&unit).is_none());
    assert_eq!(units.keys(), vec![unit], "the contract stays");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_published_schema_is_the_one_the_types_generate() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../schema/sources.schema.json");
    let generated = serde_json::to_string_pretty(&scale_units_server::collect::sources::schema()).unwrap() + "\n";
    if std::env::var_os("SCALE_UNITS_BLESS").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let published = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(published == generated, "{} differs from the types (SCALE_UNITS_BLESS=1 rewrites it)", path.display());
    let schema: serde_json::Value = serde_json::from_str(&published).unwrap();
    assert_eq!(schema["additionalProperties"], false, "unknown fields are refused");
}
