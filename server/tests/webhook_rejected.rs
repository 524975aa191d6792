//! An admitted change the API server then refuses (issue 28, docs/DECISIONS.md "Admitted, then
//! refused"): the next review of the workload, at the version the change was admitted against and
//! at the old count, retracts it — the decision, the unit's evidence and KEDA's metric are those
//! of the count that exists, without the cooldown of the change that never happened — a review
//! showing the admitted count confirms it, and a replayed review changes nothing. In memory and in
//! a state folder; Redis, shared by two replicas of the real binary: `cli/tests/serve_rejected.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "tests")]

mod kubernetes;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use kubernetes::*;
use scale_units_server::keda::{DecisionSource, metric_value};
use scale_units_server::units::{Settlement, UnitVerdict, Units};
use serde_json::{Value, json};

/// A `deployments/scale` review of `shop/gateway`, `old -> new`, its `oldObject` at `version`.
async fn review(units: &Units, uid: &str, version: &str, old: i64, new: i64) -> (bool, String, Vec<String>) {
    let mut review = scale_review(uid, "shop", "gateway", "deployments", old, new);
    review["request"]["oldObject"]["metadata"]["resourceVersion"] = json!(version);
    review["request"]["object"]["metadata"]["resourceVersion"] = json!(version);
    let answer = scale_units_server::webhook::review(units, review.to_string().as_bytes(), false).await;
    let (allowed, message, warnings, _) = verdict(&answer);
    (allowed, message, warnings)
}

/// What the unit's route and KEDA say now: the count decided at, the action, its reasons, the
/// evidence's replica count and source, and KEDA's metric.
async fn seen(units: &Units) -> (u64, String, Vec<String>, Value, u64) {
    let decided = units.decide(&key("shop/gateway"), None).await.unwrap();
    let UnitVerdict::Decided { decision, current_replicas } = decided.verdict else { panic!("no contract") };
    let reasons = decision.reasons.iter().map(|reason| reason.as_str().to_owned()).collect();
    let replicas = decided.evidence.unwrap()["replicas"].clone();
    let metric = metric_value(&units.reading("shop", "gateway").await.unwrap()).unwrap();
    (current_replicas, decision.action.as_str().to_owned(), reasons, replicas, metric)
}

async fn push(units: &Units, push: &Value) {
    units.put_observations(&key("shop/gateway"), &push.to_string()).await.unwrap();
}

/// The gateway example (60 s up, 300 s down): at 640 in flight 3 -> 5, at 300 a hold at 3.
async fn the_story(units: &Units) {
    let gateway = key("shop/gateway");
    push(units, &gateway_push(640)).await;
    let (current, action, ..) = seen(units).await;
    assert_eq!((current, action.as_str()), (3, "scale_up"));

    // The webhook admits 3 -> 5 against version 100; another webhook refuses it (not seen here).
    // Until the API server says otherwise the admitted count stands and its cooldown runs.
    let (allowed, message, _) = review(units, "uid-a", "100", 3, 5).await;
    assert!(allowed, "{message}");
    push(units, &json!({"signal": signal(300, 120)})).await;
    let (current, action, reasons, replicas, metric) = seen(units).await;
    assert_eq!((current, action.as_str(), metric), (5, "hold", 5), "{reasons:?}");
    assert!(reasons.contains(&"cooldown".to_owned()), "{reasons:?}");
    assert_eq!(replicas["source_ref"], "admission:shop/gateway");

    // The next review of the workload carries version 100 at 3 replicas: the object has not
    // changed, 3 -> 5 never happened. Judged at 3 without its cooldown (at target: denied for
    // that alone), and the unit runs 3 again for its route and KEDA.
    let (allowed, message, _) = review(units, "uid-r", "100", 3, 4).await;
    assert!(!allowed && !message.contains("cooldown"), "{message}");
    let (current, action, reasons, replicas, metric) = seen(units).await;
    assert_eq!((current, action.as_str(), metric), (3, "hold", 3), "{reasons:?}");
    assert!(!reasons.contains(&"cooldown".to_owned()), "{reasons:?}");
    assert_eq!((replicas["count"].as_u64(), replicas["source_ref"].as_str()), (Some(3), Some("review:shop/gateway")));
    let last = units.decide(&gateway, None).await.unwrap().last_action.unwrap();
    assert!(last.admission.is_none(), "the cooldowns count from before 3 -> 5: {last:?}");
    let retracted = last.retracted.unwrap();
    let settled = retracted.settled.unwrap();
    assert_eq!((retracted.review_uid.as_str(), retracted.resource_version.as_deref()), ("uid-a", Some("100")));
    assert_eq!((settled.state, settled.by.as_str(), settled.count), (Settlement::Retracted, "review:uid-r", 3));
    let journal = units.journal(&gateway).await.unwrap();
    assert_eq!(journal.len(), 1, "{journal:?}");
    assert!(journal[0].retracted(), "the journal keeps it, marked: {journal:?}");

    // The API server retries the refused review (same uid): answered as before, and nothing
    // comes back — neither its cooldown nor its count.
    let (allowed, _, warnings) = review(units, "uid-a", "100", 3, 5).await;
    assert!(allowed && warnings.iter().any(|warning| warning.contains("answered again")), "{warnings:?}");
    let (current, _, reasons, _, metric) = seen(units).await;
    assert_eq!((current, metric), (3, 3), "{reasons:?}");
    assert!(units.journal(&gateway).await.unwrap()[0].retracted());

    // The retried 3 -> 5 is judged at 3, without the cooldown of the change that never happened.
    push(units, &gateway_push(640)).await;
    let (allowed, message, _) = review(units, "uid-b", "100", 3, 5).await;
    assert!(allowed, "{message}");
    let (current, action, _, _, metric) = seen(units).await;
    assert_eq!((current, action.as_str(), metric), (5, "hold", 5));

    // The object changed since (a status update: version 101) and is at 3: the review cannot
    // tell a refused change from one undone since. The count is the review's; the cooldown
    // stays (the stricter side).
    let (allowed, message, _) = review(units, "uid-c", "101", 3, 4).await;
    assert!(!allowed && message.contains("cooldown"), "{message}");
    assert_eq!(seen(units).await.0, 3);
    let last = units.decide(&gateway, None).await.unwrap().last_action.unwrap();
    assert_eq!(last.admission.as_ref().map(|admission| admission.review_uid.as_str()), Some("uid-b"));
    assert!(last.admission.unwrap().settled.is_none() && last.retracted.is_none());

    // A newer version at 5 confirms 3 -> 5: the admitted count again, and the cooldown.
    let (allowed, message, _) = review(units, "uid-d", "102", 5, 7).await;
    assert!(!allowed && message.contains("cooldown"), "{message}");
    let (current, _, _, replicas, metric) = seen(units).await;
    assert_eq!((current, metric), (5, 5));
    assert_eq!(replicas["source_ref"], "admission:shop/gateway");
    let admission = units.decide(&gateway, None).await.unwrap().last_action.unwrap().admission.unwrap();
    let settled = admission.settled.unwrap();
    assert_eq!((admission.review_uid.as_str(), settled.state), ("uid-b", Settlement::Confirmed));

    // Confirmed is final: a late review read before the change (version 100, at 3) retracts
    // nothing.
    let (allowed, message, _) = review(units, "uid-e", "100", 3, 5).await;
    assert!(!allowed && message.contains("cooldown"), "{message}");
    let last = units.decide(&gateway, None).await.unwrap().last_action.unwrap();
    assert_eq!(last.admission.unwrap().settled.unwrap().state, Settlement::Confirmed);
    assert_eq!(seen(units).await.0, 5);
}

fn contracts(dir: &Path) -> std::path::PathBuf {
    let contracts = dir.join("contracts");
    std::fs::create_dir_all(&contracts).unwrap();
    write_contract(&contracts, "shop/gateway", &gateway_contract());
    contracts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_memory_a_refused_admission_is_retracted_by_the_next_review() {
    let dir = temp_dir("rejected-memory");
    let units = units(&registry(), &contracts(&dir)).await;
    the_story(&units).await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_state_folder_a_retraction_outlives_the_process() {
    let dir = temp_dir("rejected-state");
    let (registry, contracts, state) = (registry(), contracts(&dir), dir.join("state"));
    let open = || {
        Units::builder(Arc::clone(&registry))
            .contracts_dir(&contracts)
            .state_dir(&state)
            .no_prior_actions()
            .reload_interval(Duration::from_millis(50))
            .build()
    };
    let units = open().await.unwrap();
    the_story(&units).await;

    // A second admission retracted, then the process gone: the state folder keeps both records
    // (the cooldowns count from the confirmed 3 -> 5, not from the retracted 5 -> 7).
    push(&units, &gateway_push(640)).await;
    let gateway = key("shop/gateway");
    let change = scale_units_server::units::AdmittedChange {
        from: 5,
        to: 7,
        decision_id: None,
        review_uid: "uid-f",
        resource_version: Some("103"),
    };
    units.record_admission(&gateway, change).await.unwrap();
    let (allowed, message, _) = review(&units, "uid-g", "103", 5, 5).await;
    assert!(allowed, "{message}");
    drop(units);
    let units = open().await.unwrap();
    let last = units.decide(&gateway, Some(5)).await.unwrap().last_action.unwrap();
    assert_eq!(last.admission.unwrap().review_uid, "uid-b", "the prior action");
    assert_eq!(last.retracted.unwrap().review_uid, "uid-f");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A collected count equal to the admitted one confirms the admission: a late review from before
/// the change then retracts nothing. A collected old count retracts nothing either (it lags).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collected_count_confirms_an_admission_and_an_old_one_never_retracts_it() {
    let dir = temp_dir("rejected-collected");
    let units = units(&registry(), &contracts(&dir)).await;
    let gateway = key("shop/gateway");
    push(&units, &gateway_push(640)).await;
    assert!(review(&units, "uid-a", "200", 3, 5).await.0);
    let collected = |count: u64| json!({"count": count, "observed_at": at(0), "expires_at": at(60), "source_ref": "prometheus.main:shop/gateway/replicas"});
    // The workload has not caught up: refused as before, and nothing settled.
    let standing = units.put_replicas(&gateway, collected(3)).await.unwrap();
    assert_eq!(standing["count"], 5);
    let last = units.decide(&gateway, None).await.unwrap().last_action.unwrap();
    assert!(last.admission.unwrap().settled.is_none());
    // It reports 5: confirmed, by that source.
    assert_eq!(units.put_replicas(&gateway, collected(5)).await.unwrap()["count"], 5);
    let admission = units.decide(&gateway, None).await.unwrap().last_action.unwrap().admission.unwrap();
    let settled = admission.settled.unwrap();
    assert_eq!((settled.state, settled.by.as_str()), (Settlement::Confirmed, "prometheus.main:shop/gateway/replicas"));
    let (allowed, message, _) = review(&units, "uid-late", "200", 3, 5).await;
    assert!(!allowed && message.contains("cooldown"), "{message}");
    let _ = std::fs::remove_dir_all(&dir);
}
