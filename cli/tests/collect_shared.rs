//! Shared queries and shared collection through the real binary, Debian's `prometheus` and a
//! real `redis-server` (issue 30): one query feeding 50 units, of which one loses its series and
//! one gets two (both blocked, counted by cause) while the rest decide; four `serve --redis`
//! replicas sharing 200 units, each collected by one replica, and the units of a replica killed
//! with SIGKILL collected again by the others.
#![allow(
    clippy::panic,
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "test code: a failed expectation is a test failure"
)]

mod binary;
#[path = "collect_shared/parts.rs"]
mod parts;
#[path = "../../server/tests/support/mod.rs"]
mod support;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use binary::{Redis, Serve, Served};
use parts::{Exporter, Prometheus, contract, exposition, metric, shared_sources, temp_dir, wait_for};
use serde_json::Value;
use support::Client;

fn names(count: usize) -> Vec<String> {
    (0..count).map(|index| format!("u{index}")).collect()
}

fn write_units(dir: &Path, names: &[String], prometheus: u16, interval_s: Option<u64>) {
    std::fs::create_dir_all(dir).unwrap();
    for name in names {
        std::fs::write(dir.join(format!("shop.{name}.json")), contract(name)).unwrap();
        std::fs::write(dir.join(format!("shop.{name}.sources.yaml")), shared_sources(prometheus, name, interval_s))
            .unwrap();
    }
}

fn serve(units: &Path, interval_ms: u64, extra: &[&str]) -> Served {
    Serve::new(["--listen", "127.0.0.1:0", "--collect-interval-ms", &interval_ms.to_string()])
        .args(extra)
        .arg("--units")
        .arg(units)
        .quiet()
        .start()
}

fn get(http: SocketAddr, path: &str) -> (u16, Value) {
    let reply = Client::new(http).get(path).unwrap();
    (reply.status, serde_json::from_str(&reply.body).unwrap_or(Value::Null))
}

fn metrics(http: SocketAddr) -> String {
    Client::new(http).get("/metrics").map(|reply| reply.body).unwrap_or_default()
}

fn action(unit: &Value) -> String {
    unit["decision"]["action"].as_str().unwrap_or_default().to_owned()
}

/// Decided on its evidence: an action other than `blocked` (a hold within the cooldowns that
/// count from the store's start, or a scale action).
fn decided(status: u16, unit: &Value) -> bool {
    let action = action(unit);
    status == 200 && !action.is_empty() && action != "blocked"
}

#[test]
fn a_shared_query_feeds_fifty_units_and_blocks_the_one_without_and_the_one_with_two_series() {
    let dir = temp_dir("fifty");
    let names = names(50);
    let exporter = Exporter::start(&exposition(&names, None, None));
    let prometheus = Prometheus::start(&dir, exporter.port);
    wait_for("the first scrape", Duration::from_secs(60), || (prometheus.series("demo_in_flight") == 50).then_some(()));
    let units = dir.join("units");
    write_units(&units, &names, prometheus.port, Some(1));
    let served = serve(&units, 1000, &[]);

    // Every unit decides on its own series (150 in flight at 3 replicas).
    wait_for("all fifty decided on fresh evidence", Duration::from_secs(60), || {
        names
            .iter()
            .all(|name| {
                let (status, unit) = get(served.http, &format!("/v1/units/shop/{name}"));
                decided(status, &unit)
            })
            .then_some(())
    });
    let (_, u1) = get(served.http, "/v1/units/shop/u1");
    let (_, u2) = get(served.http, "/v1/units/shop/u2");
    let (signal1, signal2) = (&u1["evidence"]["signal"], &u2["evidence"]["signal"]);
    assert_eq!(signal1["value"], 150);
    assert_eq!(signal1["value"], signal2["value"]);
    // Each digest covers the unit's own series: equal values, other labels, other digests.
    assert_ne!(signal1["source_digest"], signal2["source_digest"], "{u1} {u2}");

    // u7 loses its series, u13 gets a second one: both blocked, the 48 others decide.
    exporter.set(&exposition(&names, Some("u7"), Some("u13")));
    wait_for("u7 and u13 blocked", Duration::from_secs(90), || {
        let (_, u7) = get(served.http, "/v1/units/shop/u7");
        let (_, u13) = get(served.http, "/v1/units/shop/u13");
        (action(&u7) == "blocked" && action(&u13) == "blocked").then_some(())
    });
    let text = metrics(served.http);
    let refused = |unit: &str, cause: &str| {
        metric(
            &text,
            &format!("scale_units_evidence_refused_total{{unit=\"shop/{unit}\",source=\"signal\",cause=\"{cause}\"}}"),
        )
        .unwrap_or(0.0)
    };
    assert!(refused("u7", "missing_series") >= 1.0, "{text}");
    assert!(refused("u13", "several_series") >= 1.0, "{text}");
    assert_eq!(refused("u1", "missing_series"), 0.0);
    for name in names.iter().filter(|name| !["u7", "u13"].contains(&name.as_str())) {
        let (status, unit) = get(served.http, &format!("/v1/units/shop/{name}"));
        assert!(decided(status, &unit), "{name}: {status} {unit}");
    }
    // Two shared queries a round, however many units: far fewer queries than units × sources.
    let rounds = metric(&text, "scale_units_collect_rounds_total").unwrap();
    let shared = metric(&text, "scale_units_collect_shared_queries_total").unwrap();
    assert!(rounds >= 2.0 && shared <= 2.0 * rounds + 2.0, "rounds {rounds}, shared queries {shared}");

    // `collect --once` shows the shared query that fed a unit, and u7's refusal by cause.
    let once = |unit: &str| {
        let output = Command::new(env!("CARGO_BIN_EXE_scale-units"))
            .args(["collect", "--once", "--format", "json", "--units"])
            .arg(&units)
            .arg(unit)
            .env("SCALE_UNITS_CACHE_DIR", std::env::temp_dir().join("scale-units-test-cache"))
            .output()
            .unwrap();
        let line: Value = serde_json::from_slice(&output.stdout).unwrap();
        (output.status.code(), line)
    };
    let (code, u1) = once("shop/u1");
    assert_eq!(code, Some(0), "{u1}");
    let signal = u1["sources"].as_array().unwrap().iter().find(|line| line["source"] == "signal").unwrap();
    assert_eq!(signal["shared"][0], "prometheus.local: max by (unit, pod) (demo_in_flight) [unit=u1]", "{u1}");
    let (code, u7) = once("shop/u7");
    assert_eq!(code, Some(1), "{u7}");
    let signal = u7["sources"].as_array().unwrap().iter().find(|line| line["source"] == "signal").unwrap();
    assert_eq!(signal["refused"]["cause"], "missing_series", "{u7}");
    drop(served);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Each replica's stored counts, by unit (the signal's).
fn stored_by_unit(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("scale_units_evidence_stored_total{unit=\"")?;
            let (unit, rest) = rest.split_once('"')?;
            let count = rest.strip_prefix(",source=\"signal\"} ")?.parse().ok()?;
            Some((unit.to_owned(), count))
        })
        .collect()
}

#[test]
fn four_replicas_share_two_hundred_units_and_take_over_those_of_a_killed_one() {
    let dir = temp_dir("replicas");
    let names = names(200);
    let exporter = Exporter::start(&exposition(&names, None, None));
    let prometheus = Prometheus::start(&dir, exporter.port);
    wait_for("the first scrape", Duration::from_secs(60), || {
        (prometheus.series("demo_in_flight") == 200).then_some(())
    });
    let units = dir.join("units");
    write_units(&units, &names, prometheus.port, None);
    let redis = Redis::start(&dir);
    let url = redis.url();
    let mut replicas: Vec<Option<Served>> = (0..4).map(|_| Some(serve(&units, 1000, &["--redis", &url]))).collect();
    let live = |replicas: &[Option<Served>]| -> Vec<SocketAddr> {
        replicas.iter().flatten().map(|served| served.http).collect()
    };
    let owned = |http: SocketAddr| metric(&metrics(http), "scale_units_collect_units").unwrap_or(0.0);

    // The shards spread over the four: every unit owned by exactly one, each replica some.
    wait_for("200 units spread over 4 replicas", Duration::from_secs(60), || {
        let counts: Vec<f64> = live(&replicas).into_iter().map(owned).collect();
        (counts.iter().sum::<f64>() == 200.0 && counts.iter().all(|count| *count > 0.0)).then_some(())
    });

    // Over a window with no lease change, each unit's signal is stored by exactly one replica.
    let changes = |http: SocketAddr| metric(&metrics(http), "scale_units_collect_lease_changes_total").unwrap_or(0.0);
    wait_for("a window in which each unit is collected by one replica", Duration::from_secs(90), || {
        let before: Vec<(f64, BTreeMap<String, f64>)> =
            live(&replicas).into_iter().map(|http| (changes(http), stored_by_unit(&metrics(http)))).collect();
        std::thread::sleep(Duration::from_millis(3500));
        let after: Vec<(f64, BTreeMap<String, f64>)> =
            live(&replicas).into_iter().map(|http| (changes(http), stored_by_unit(&metrics(http)))).collect();
        if before.iter().zip(&after).any(|(before, after)| before.0 != after.0) {
            return None; // leases moved during the window: look again
        }
        for name in &names {
            let unit = format!("shop/{name}");
            let collecting = before
                .iter()
                .zip(&after)
                .filter(|(before, after)| {
                    after.1.get(&unit).copied().unwrap_or(0.0) > before.1.get(&unit).copied().unwrap_or(0.0)
                })
                .count();
            assert!(collecting <= 1, "{unit} stored by {collecting} replicas in one window");
            if collecting == 0 {
                return None; // not reached in this window (a slow round): look again
            }
        }
        Some(())
    });

    // SIGKILL one replica holding units: the others take its shards and collect its units again.
    let victim = (0..4).find(|index| owned(replicas[*index].as_ref().unwrap().http) > 0.0).unwrap();
    let orphans: Vec<String> = stored_by_unit(&metrics(replicas[victim].as_ref().unwrap().http)).into_keys().collect();
    let survivors_stored = |replicas: &[Option<Served>]| -> BTreeMap<String, f64> {
        replicas
            .iter()
            .enumerate()
            .filter(|(index, _)| *index != victim)
            .filter_map(|(_, served)| served.as_ref())
            .flat_map(|served| stored_by_unit(&metrics(served.http)))
            .fold(BTreeMap::new(), |mut sum, (unit, count)| {
                *sum.entry(unit).or_insert(0.0) += count;
                sum
            })
    };
    let before = survivors_stored(&replicas);
    replicas[victim].take().unwrap().kill();
    wait_for("the survivors own all 200 units", Duration::from_secs(60), || {
        (live(&replicas).into_iter().map(owned).sum::<f64>() == 200.0).then_some(())
    });
    wait_for("each of the killed replica's units stored again by a survivor", Duration::from_secs(60), || {
        let after = survivors_stored(&replicas);
        orphans
            .iter()
            .all(|unit| after.get(unit).copied().unwrap_or(0.0) > before.get(unit).copied().unwrap_or(0.0))
            .then_some(())
    });
    // Every unit decides on fresh evidence, read from any replica.
    let http = live(&replicas)[0];
    wait_for("all 200 decide", Duration::from_secs(60), || {
        names
            .iter()
            .all(|name| {
                let (status, unit) = get(http, &format!("/v1/units/shop/{name}"));
                decided(status, &unit)
            })
            .then_some(())
    });
    drop(replicas);
    drop(redis);
    let _ = std::fs::remove_dir_all(&dir);
}
