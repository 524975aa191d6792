//! What a push may keep (issue 19, item 4): an observation whose `expires_at` is decades away is
//! kept a day at most, after which it is missing and the unit blocks.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "tests")]

mod kubernetes;

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, SystemTime};

use kubernetes::*;
use scale_units_server::units::{UnitVerdict, Units};
use serde_json::json;

/// The reasons of `shop/gateway`'s decision at 3 replicas.
async fn reasons(units: &Units) -> Vec<String> {
    match units.evaluate(&key("shop/gateway"), Some(3)).await.unwrap() {
        UnitVerdict::Decided { decision, .. } => decision.reasons.iter().map(|r| r.as_str().to_owned()).collect(),
        UnitVerdict::NoContract => panic!("the contract is loaded"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_observation_is_kept_a_day_at_most_whatever_its_expiry() {
    let registry = registry();
    let dir = temp_dir("units-bounds");
    write_contract(&dir, "shop/gateway", &gateway_contract());
    // The service's clock: the real one plus an offset the test moves.
    let offset = Arc::new(AtomicI64::new(0));
    let reading = Arc::clone(&offset);
    let units = Units::builder(Arc::clone(&registry))
        .contracts_dir(&dir)
        .clock(Arc::new(move || {
            let offset = reading.load(Ordering::SeqCst);
            SystemTime::now() + Duration::from_secs(u64::try_from(offset).unwrap())
        }))
        .build()
        .await
        .unwrap();
    // A signal that claims to hold for about 60 years.
    let push = json!({"signal": signal(640, 60 * 365 * 24 * 3600)}).to_string();
    assert_eq!(units.put_observations(&key("shop/gateway"), &push).await.unwrap(), (1, 0));
    assert!(!reasons(&units).await.contains(&"signal_missing".to_owned()));

    // 23 hours on, it is still there (stale or not: the contract judges that).
    offset.store(23 * 3600, Ordering::SeqCst);
    let at_23 = reasons(&units).await;
    assert!(!at_23.contains(&"signal_missing".to_owned()), "{at_23:?}");
    // 25 hours on, the store has forgotten it.
    offset.store(25 * 3600, Ordering::SeqCst);
    let at_25 = reasons(&units).await;
    assert!(at_25.contains(&"signal_missing".to_owned()), "{at_25:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
