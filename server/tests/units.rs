//! The unit registry: the contracts folder reloaded (added, changed, deleted, refused files), and
//! the observation routes over HTTP (token, typed 400s, merge, the decision for people), and the
//! journal of admitted decisions (one entry per decision id, bounded per unit and by age).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "tests")]

mod kubernetes;

use std::sync::Arc;
use std::time::Duration;

use kubernetes::*;
use scale_units_server::service::ServiceConfig;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_contracts_folder_is_reloaded_and_a_refused_file_keeps_the_previous_contract() {
    let registry = registry();
    let dir = temp_dir("units-folder");
    write_contract(&dir, "shop/gateway", &gateway_contract());
    std::fs::write(dir.join("notes.txt"), "not a contract").unwrap();
    let units = units(&registry, &dir).await;
    assert_eq!(units.keys(), vec![key("shop/gateway")]);
    let first = units.contract_id(&key("shop/gateway")).unwrap();

    // Added as YAML; changed; refused by the component; deleted.
    // YAML in block style: the sessions contract, flow mappings for its parts.
    let mut yaml = String::new();
    for (field, value) in sessions_contract().as_object().unwrap() {
        yaml.push_str(&format!("{field}: {value}\n"));
    }
    std::fs::write(dir.join("shop.sessions.yaml"), yaml).unwrap();
    let mut changed = gateway_contract();
    changed["policy"]["max_replicas"] = json!(20);
    write_contract(&dir, "shop/gateway", &changed);
    let report = units.reload().await;
    assert_eq!(report.loaded, vec![key("shop/gateway"), key("shop/sessions")], "{report:?}");
    let second = units.contract_id(&key("shop/gateway")).unwrap();
    assert_ne!(first, second);

    let mut invalid = changed.clone();
    invalid["policy"]["min_replicas"] = json!(30);
    write_contract(&dir, "shop/gateway", &invalid);
    std::fs::write(dir.join("Bad_Namespace.x.json"), "{}").unwrap();
    let report = units.reload().await;
    assert!(report.loaded.is_empty(), "{report:?}");
    assert_eq!(report.refused.len(), 2, "{report:?}");
    assert!(
        report.refused.iter().any(|(_, why)| why.contains("min_replicas cannot exceed max_replicas")),
        "{report:?}"
    );
    assert_eq!(units.contract_id(&key("shop/gateway")).unwrap(), second, "the previous contract stays");

    std::fs::remove_file(dir.join("shop.sessions.yaml")).unwrap();
    let report = units.reload().await;
    assert_eq!(report.removed, vec![key("shop/sessions")]);
    assert_eq!(units.keys(), vec![key("shop/gateway")]);

    // The watch picks up a new file on its own.
    tokio::spawn(Arc::clone(&units).watch());
    write_contract(&dir, "web/front", &gateway_contract());
    let mut seen = false;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        if units.contract_id(&key("web/front")).is_some() {
            seen = true;
            break;
        }
    }
    assert!(seen, "the watch loads a new file");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observations_are_pushed_over_http_checked_merged_and_decided_on() {
    let registry = registry();
    let dir = temp_dir("units-http");
    write_contract(&dir, "shop/gateway", &gateway_contract());
    let units = units(&registry, &dir).await;
    let config = ServiceConfig { units: Some(units), token: Some("s3cr3t-t0k3n".to_owned()), ..Default::default() };
    let served = Served::start(config, registry).await;
    let mut http = Http::connect(served.address).await;
    let auth = [("authorization", "Bearer s3cr3t-t0k3n")];
    let path = "/v1/units/shop/gateway/observations";
    let push = gateway_push(640).to_string();

    // A token is configured: pushes need it.
    assert_eq!(http.send("PUT", path, &[], &push).await.0, 401);
    let (status, answer) = http.send("PUT", path, &auth, &push).await;
    assert_eq!((status, answer["written"].clone()), (200, json!(5)), "{answer}");

    // Bad pushes: typed errors with their paths, nothing stored.
    let mut reversed = signal(640, 120);
    reversed["expires_at"] = json!(at(-20));
    let cases = [
        ("not json".to_owned(), "invalid_json", ""),
        (json!({"signals": []}).to_string(), "invalid_field", "signals"),
        (json!({"signal": reversed}).to_string(), "invalid_observation", "signal"),
        (
            json!({"capacities": [capacity("cpu_milli", 1, 120), capacity("cpu_milli", 2, 120)]}).to_string(),
            "duplicate_observation",
            "",
        ),
        (json!({"current_replicas": 10_001}).to_string(), "replicas_out_of_bounds", "current_replicas"),
        (json!({"safety": {"overloaded": true}}).to_string(), "invalid_field", ""),
    ];
    for (body, code, field) in cases {
        let (status, answer) = http.send("PUT", path, &auth, &body).await;
        assert_eq!(status, 400, "{body}: {answer}");
        assert_eq!(answer["error"]["code"], code, "{body}: {answer}");
        assert!(answer["error"]["path"].as_str().unwrap_or_default().starts_with(field), "{answer}");
    }
    assert_eq!(http.send("PUT", "/v1/units/shop/none/observations", &auth, &push).await.0, 404);
    assert_eq!(http.send("PUT", "/v1/units/Shop/x/observations", &auth, &push).await.0, 400);

    // The decision for people: at the collector's count, or another.
    let (status, answer) = http.send("GET", "/v1/units/shop/gateway", &[], "").await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["decision"]["action"], "scale_up");
    assert_eq!(
        (answer["decision"]["current_replicas"].clone(), answer["decision"]["desired_replicas"].clone()),
        (json!(3), json!(5))
    );
    assert!(answer["policy"]["digest"].as_str().unwrap().starts_with("sha256:"));
    let (_, at_7) = http.send("GET", "/v1/units/shop/gateway?replicas=7", &[], "").await;
    assert_eq!(at_7["decision"]["action"], "hold", "{at_7}");

    // A push names kinds: the others stay; null forgets one.
    http.send("PUT", path, &auth, &json!({"signal": signal(150, 120)}).to_string()).await;
    let (_, answer) = http.send("GET", "/v1/units/shop/gateway", &[], "").await;
    assert_eq!(
        (answer["decision"]["action"].clone(), answer["decision"]["desired_replicas"].clone()),
        (json!("scale_down"), json!(2))
    );
    let (_, answer) = http.send("PUT", path, &auth, &json!({"safety": null}).to_string()).await;
    assert_eq!(answer["forgotten"], 1);
    let (_, answer) = http.send("GET", "/v1/units/shop/gateway", &[], "").await;
    assert_eq!(answer["decision"]["action"], "blocked");
    assert!(answer["decision"]["reasons"].as_array().unwrap().contains(&json!("overload_shedding_active")));

    let (_, list) = http.send("GET", "/v1/units", &[], "").await;
    assert_eq!(list["store"], "memory");
    assert_eq!(list["units"][0]["name"], "gateway");
    served.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_journal_keeps_one_entry_per_decision_bounded_per_unit_and_by_age() {
    use scale_units_server::units::{AdmittedChange, JOURNAL_MAX_PER_UNIT, Recorded, Units};
    use std::sync::atomic::{AtomicU64, Ordering};

    let dir = temp_dir("units-journal");
    write_contract(&dir, "shop/gateway", &gateway_contract());
    // 2026-08-19T12:00:00Z, one second later at each admission.
    let clock = Arc::new(AtomicU64::new(1_787_140_800));
    let reading = Arc::clone(&clock);
    let units = Units::builder(registry())
        .contracts_dir(&dir)
        .clock(Arc::new(move || std::time::UNIX_EPOCH + Duration::from_secs(reading.load(Ordering::SeqCst))))
        .build()
        .await
        .unwrap();
    let unit = key("shop/gateway");
    let record = |decision: String, uid: String| {
        let units = Arc::clone(&units);
        let unit = unit.clone();
        let clock = Arc::clone(&clock);
        async move {
            clock.fetch_add(1, Ordering::SeqCst);
            let change = AdmittedChange {
                from: 3,
                to: 4,
                decision_id: Some(&decision),
                review_uid: &uid,
                resource_version: None,
            };
            units.record_admission(&unit, change).await.unwrap()
        }
    };

    // Two reviews per decision: one journal entry each, the first review's.
    for index in 0..20 {
        assert_eq!(record(format!("scale-decision:{}", index / 2), format!("uid-{index}")).await, Recorded::New);
    }
    let journal = units.journal(&unit).await.unwrap();
    assert_eq!(journal.len(), 10);
    assert_eq!((journal[0].review_uid.as_str(), journal[9].review_uid.as_str()), ("uid-0", "uid-18"));

    // Bounded per unit: the oldest go first.
    for index in 20..100 {
        record(format!("scale-decision:{index}"), format!("uid-{index}")).await;
    }
    let journal = units.journal(&unit).await.unwrap();
    assert_eq!(journal.len(), JOURNAL_MAX_PER_UNIT);
    assert_eq!(journal[0].review_uid, format!("uid-{}", 100 - JOURNAL_MAX_PER_UNIT));
    assert_eq!(journal.last().unwrap().review_uid, "uid-99");

    // And by age: eight days later, one admission leaves only itself.
    clock.fetch_add(8 * 24 * 3600, Ordering::SeqCst);
    record("scale-decision:late".to_owned(), "uid-late".to_owned()).await;
    let journal = units.journal(&unit).await.unwrap();
    assert_eq!(journal.len(), 1, "{journal:?}");
    assert_eq!(journal[0].decision_id.as_deref(), Some("scale-decision:late"));
    // The unit's last action is the latest admission.
    let decided = units.decide(&unit, Some(3)).await.unwrap();
    let last = decided.last_action.unwrap();
    assert_eq!(last.admission.unwrap().review_uid, "uid-late");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admitted_count_is_the_count_at_once_and_a_stale_push_cannot_revert_it() {
    use scale_units_server::units::AdmittedChange;

    let registry = registry();
    let dir = temp_dir("units-admitted");
    write_contract(&dir, "shop/gateway", &gateway_contract());
    let units = units(&registry, &dir).await;
    let unit = key("shop/gateway");
    units.put_observations(&unit, &gateway_push(640).to_string()).await.unwrap();
    let current = |verdict| match verdict {
        scale_units_server::units::UnitVerdict::Decided { current_replicas, decision } => {
            (current_replicas, decision.action.as_str().to_owned())
        }
        other => panic!("{other:?}"),
    };
    assert_eq!(current(units.evaluate(&unit, None).await.unwrap()), (3, "scale_up".to_owned()));

    // The webhook admits 3 -> 5: the count is 5 at once (a hold in the cooldown, never 3).
    let change =
        AdmittedChange { from: 3, to: 5, decision_id: None, review_uid: "uid-admitted", resource_version: None };
    units.record_admission(&unit, change).await.unwrap();
    units.record_admitted_count(&unit, 5).await.unwrap();
    assert_eq!(current(units.evaluate(&unit, None).await.unwrap()), (5, "hold".to_owned()));
    let evidence = units.evidence(&unit).await.unwrap();
    assert_eq!(evidence["replicas"]["source_ref"], "admission:shop/gateway");

    // A collector that has not seen the change pushes 3 again: the admitted count stands; a push
    // of 5 confirms it.
    units.put_observations(&unit, &json!({"current_replicas": 3}).to_string()).await.unwrap();
    assert_eq!(current(units.evaluate(&unit, None).await.unwrap()).0, 5);
    units.put_observations(&unit, &json!({"current_replicas": 5}).to_string()).await.unwrap();
    let evidence = units.evidence(&unit).await.unwrap();
    assert_eq!(
        (evidence["replicas"]["count"].as_u64(), evidence["replicas"]["source_ref"].as_str()),
        (Some(5), Some("push"))
    );
    let _ = std::fs::remove_dir_all(&dir);
}
