//! The host refuses or stops bad components with typed errors, and keeps serving good calls.
#![allow(
    clippy::panic,
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "test code: a failed expectation is a test failure"
)]

mod common;

use std::sync::Arc;

use common::{Behaviour, GOOD_INFO, Info, component_bytes, good_request, hostile_component, policy};
use scale_units_host::{CacheStatus, ErrorCode, HostError, Policy, SurfaceKind};

/// The shared good policy still decides after whatever happened before.
fn assert_still_serving() {
    let evaluated = policy().evaluate_json(&good_request()).expect("no host error").expect("a decision");
    assert!(evaluated.decision.contains("\"action\":\"scale_up\""), "{}", evaluated.decision);
}

#[test]
fn the_built_component_loads_with_its_info_and_provenance() {
    let policy = policy();
    assert!(policy.digest().starts_with("sha256:") && policy.digest().len() == 71);
    assert_eq!(policy.info().schema_version, scale_units_core::SCHEMA_VERSION);
    assert_eq!(policy.info().evaluator_version, scale_units_core::EVALUATOR_VERSION);
    assert_eq!(policy.info().wit_version, "0.3.0");
    let evaluated = policy.evaluate_json(&good_request()).expect("no host error").expect("a decision");
    assert_eq!(evaluated.provenance.component_digest, policy.digest());
    assert_eq!(evaluated.provenance.evaluator_version, scale_units_core::EVALUATOR_VERSION);
}

#[test]
fn typed_errors_are_values_not_host_errors() {
    let outcome = policy().evaluate_json("{\"contract\": ").expect("a typed error is not a host failure");
    assert_eq!(outcome.expect_err("not JSON").code(), ErrorCode::InvalidJson);
    let outcome = policy().validate_contract_json("{}").expect("no host error");
    let error = outcome.expect_err("an empty contract");
    assert_eq!(error.code(), ErrorCode::InvalidField);
    assert!(!error.path().is_empty() || !error.message().is_empty());
    assert_still_serving();
}

#[test]
fn a_matching_expected_digest_loads_and_a_wrong_one_is_refused() {
    let digest = policy().digest().to_owned();
    let loaded = Policy::builder().expected_digest(digest.clone()).load(component_bytes()).expect("loads");
    assert_eq!(loaded.digest(), digest);

    let wrong = format!("sha256:{}", "0".repeat(64));
    match Policy::builder().expected_digest(wrong.clone()).load(component_bytes()) {
        Err(HostError::DigestMismatch { expected, actual }) => {
            assert_eq!(expected, wrong);
            assert_eq!(actual, digest);
        }
        other => panic!("expected DigestMismatch, got {other:?}"),
    }
    match Policy::builder().expected_digest("sha256:ABC").load(component_bytes()) {
        Err(HostError::InvalidExpectedDigest(_)) => {}
        other => panic!("expected InvalidExpectedDigest, got {other:?}"),
    }
    assert_still_serving();
}

#[test]
fn corrupt_bytes_are_refused() {
    let mut truncated = component_bytes().to_vec();
    truncated.truncate(truncated.len() / 2);
    let mut flipped = component_bytes().to_vec();
    for byte in flipped.iter_mut().skip(64).step_by(97) {
        *byte ^= 0x5a;
    }
    for (what, bytes) in
        [("truncated", truncated), ("flipped", flipped), ("empty", Vec::new()), ("text", b"hello".to_vec())]
    {
        match Policy::from_bytes(&bytes) {
            Err(HostError::InvalidComponent { digest, .. }) => assert!(digest.starts_with("sha256:"), "{what}"),
            other => panic!("{what}: expected InvalidComponent, got {other:?}"),
        }
    }
    let missing = Policy::from_file("/nonexistent/scale_units_evaluator.wasm");
    assert!(matches!(missing, Err(HostError::Io { .. })), "{missing:?}");
    assert_still_serving();
}

#[test]
fn a_component_with_an_import_is_refused() {
    let bytes = hostile_component(
        Behaviour::Trap,
        &GOOD_INFO,
        Some(
            "package test:hostile;\n\
             world with-clock {\n  import now: func() -> u64;\n  export scale-units:evaluator/evaluator@0.3.0;\n}\n",
        ),
    );
    match Policy::from_bytes(&bytes) {
        Err(HostError::Imports { imports }) => assert_eq!(imports, ["now"]),
        other => panic!("expected Imports, got {other:?}"),
    }
    assert_still_serving();
}

#[test]
fn a_component_of_another_world_is_refused() {
    match Policy::from_bytes(&common::other_world_component()) {
        Err(HostError::WrongWorld { reason }) => assert!(reason.contains("scale-units:evaluator"), "{reason}"),
        other => panic!("expected WrongWorld, got {other:?}"),
    }
    // The evaluator's interface name with other contents is another world too.
    match Policy::from_bytes(&common::impostor_component()) {
        Err(HostError::WrongWorld { reason }) => assert!(!reason.is_empty()),
        other => panic!("expected WrongWorld for the impostor, got {other:?}"),
    }
    assert_still_serving();
}

#[test]
fn an_unsupported_schema_or_wit_version_is_refused() {
    for (info, field) in
        // A later minor (0.4.0), a next major (1.0.0), or a previous minor (0.2.0, 0.1.0) claimed
        // by a component that exports the 0.3.0 interface: the interface fixes the version.
        [
            (Info { schema_version: "2", ..GOOD_INFO }, "schema"),
            (Info { wit_version: "0.4.0", ..GOOD_INFO }, "WIT"),
            (Info { wit_version: "0.2.0", ..GOOD_INFO }, "WIT"),
            (Info { wit_version: "1.0.0", ..GOOD_INFO }, "WIT"),
            (Info { wit_version: "0.1.0", ..GOOD_INFO }, "WIT"),
        ]
    {
        match Policy::from_bytes(&hostile_component(Behaviour::Trap, &info, None)) {
            Err(HostError::Incompatible { reason, .. }) => assert!(reason.starts_with(field), "{reason}"),
            other => panic!("expected Incompatible ({field}), got {other:?}"),
        }
    }
    // The same component with a supported info loads: the refusal above was the version's.
    let loaded = Policy::from_bytes(&hostile_component(Behaviour::Trap, &GOOD_INFO, None)).expect("loads");
    assert_eq!(loaded.info().evaluator_version, "0.0.0-hostile");
    assert_still_serving();
}

#[test]
fn a_component_that_loops_forever_runs_out_of_fuel_every_time() {
    let fuel = 5_000_000;
    let hostile =
        Policy::builder().fuel(fuel).load(&hostile_component(Behaviour::Loop, &GOOD_INFO, None)).expect("loads");
    for _ in 0..3 {
        match hostile.evaluate_json(&good_request()) {
            Err(HostError::OutOfFuel { budget }) => assert_eq!(budget, fuel),
            other => panic!("expected OutOfFuel, got {other:?}"),
        }
        assert_still_serving();
    }
}

#[test]
fn a_component_that_grows_memory_without_bound_hits_the_limit() {
    let limit = 16 << 20;
    let hostile = Policy::builder()
        .memory_limit(limit)
        .load(&hostile_component(Behaviour::GrowMemory, &GOOD_INFO, None))
        .expect("loads");
    for _ in 0..3 {
        match hostile.evaluate_json(&good_request()) {
            Err(HostError::MemoryLimit { limit_bytes }) => assert_eq!(limit_bytes, limit),
            other => panic!("expected MemoryLimit, got {other:?}"),
        }
        assert_still_serving();
    }
}

#[test]
fn a_trap_is_a_host_error_and_the_instance_is_not_reused() {
    let hostile = Policy::from_bytes(&hostile_component(Behaviour::Trap, &GOOD_INFO, None)).expect("loads");
    for _ in 0..3 {
        assert!(matches!(hostile.evaluate_json("{}"), Err(HostError::Trap { .. })));
        // Another export of the same policy still runs (and traps by design: not a stuck instance).
        assert!(matches!(hostile.surface_profile(SurfaceKind::ApiGateway), Err(HostError::Trap { .. })));
    }
    assert_still_serving();
}

#[test]
fn the_real_component_fits_a_small_fuel_budget_and_memory_limit() {
    // About a thousand times less fuel than the default still decides the examples: the default
    // budget is far from what a real evaluation needs.
    let tight = Policy::builder().fuel(10_000_000).memory_limit(4 << 20).load(component_bytes()).expect("loads");
    let evaluated = tight.evaluate_json(&good_request()).expect("no host error").expect("a decision");
    assert!(evaluated.decision.contains("scale_up"));
}

#[test]
fn the_precompiled_cache_is_used_and_a_corrupt_entry_is_recompiled() {
    let dir = std::env::temp_dir().join(format!("scale-units-cache-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let first = Policy::builder().cache_dir(&dir).load(component_bytes()).expect("compiles and caches");
    assert_eq!(first.cache_status(), &CacheStatus::Stored);
    let entries: Vec<_> =
        std::fs::read_dir(&dir).expect("the cache exists").map(|e| e.expect("entry").path()).collect();
    assert_eq!(entries.len(), 1, "{entries:?}");
    let entry = &entries[0];
    let name = entry.file_name().and_then(|n| n.to_str()).expect("utf-8 name").to_owned();
    assert!(name.starts_with(first.digest().trim_start_matches("sha256:")), "{name}");

    let second = Policy::builder().cache_dir(&dir).load(component_bytes()).expect("loads from the cache");
    assert_eq!(second.digest(), first.digest());
    assert_eq!(second.cache_status(), &CacheStatus::Loaded);
    let uncached = Policy::builder().load(component_bytes()).expect("compiles");
    assert_eq!(uncached.cache_status(), &CacheStatus::Disabled);
    // A cache that cannot be written (its directory would be under a file) costs nothing but the
    // stored compilation: the component loads and serves, and the status says why.
    let blocked = Policy::builder().cache_dir(dir.join(&name).join("sub")).load(component_bytes()).expect("compiles");
    assert!(
        matches!(blocked.cache_status(), CacheStatus::NotStored { reason } if reason.contains("cannot create")),
        "{:?}",
        blocked.cache_status()
    );
    blocked.evaluate_json(&good_request()).expect("no host error").expect("a decision");
    second.evaluate_json(&good_request()).expect("no host error").expect("a decision");

    // Corrupt the artifact's payload: the checks refuse it, the component is compiled again and
    // the entry rewritten.
    let mut bytes = std::fs::read(entry).expect("read the entry");
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(entry, &bytes).expect("corrupt the entry");
    let third = Policy::builder().cache_dir(&dir).load(component_bytes()).expect("recompiles");
    assert_eq!(third.cache_status(), &CacheStatus::Stored, "compiled again, not loaded");
    third.evaluate_json(&good_request()).expect("no host error").expect("a decision");
    assert_ne!(std::fs::read(entry).expect("read the entry"), bytes, "the corrupt entry was rewritten");

    // An entry for other component bytes under this name is refused too.
    let other = hostile_component(Behaviour::Trap, &GOOD_INFO, None);
    let other_dir = dir.join("other");
    Policy::builder().cache_dir(&other_dir).load(&other).expect("caches the other component");
    let other_entry = std::fs::read_dir(&other_dir).expect("dir").next().expect("one entry").expect("entry").path();
    std::fs::copy(&other_entry, entry).expect("swap the artifact");
    let fourth = Policy::builder().cache_dir(&dir).load(component_bytes()).expect("recompiles");
    assert_eq!(fourth.info().evaluator_version, scale_units_core::EVALUATOR_VERSION);

    // A forged entry (the other artifact under a header with the right hashes) in a directory
    // that others may write is never deserialized.
    #[cfg(unix)]
    {
        use sha2::Digest as _;
        use std::os::unix::fs::PermissionsExt as _;
        let other_payload = std::fs::read(&other_entry).expect("read")[16 + 64..].to_vec();
        let mut forged = std::fs::read(entry).expect("read")[..16 + 32].to_vec();
        forged.extend_from_slice(&sha2::Sha256::digest(&other_payload));
        forged.extend_from_slice(&other_payload);
        std::fs::write(entry, &forged).expect("forge the entry");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        let fifth = Policy::builder().cache_dir(&dir).load(component_bytes()).expect("compiles instead");
        assert_eq!(fifth.info().evaluator_version, scale_units_core::EVALUATOR_VERSION);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn one_policy_serves_many_threads() {
    let policy = Arc::new(Policy::builder().max_idle_instances(4).load(component_bytes()).expect("loads"));
    let request = Arc::new(good_request());
    let expected = policy.evaluate_json(&request).expect("no host error").expect("a decision").decision;
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let policy = Arc::clone(&policy);
            let request = Arc::clone(&request);
            std::thread::spawn(move || {
                (0..50)
                    .map(|_| policy.evaluate_json(&request).expect("no host error").expect("a decision").decision)
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    for thread in threads {
        for decision in thread.join().expect("no panic") {
            assert_eq!(decision, expected);
        }
    }
}

#[test]
fn surface_profiles_and_explanations_come_from_the_component() {
    for &surface in SurfaceKind::ALL {
        let profile = policy().surface_profile(surface).expect("no host error");
        let native = surface.profile();
        assert_eq!(profile.surface, surface);
        assert_eq!(profile.allowed_signals, native.allowed_signals);
        assert_eq!(profile.required_capacity_axes, native.required_capacity_axes);
        assert_eq!(profile.engine_authority_axes, native.engine_authority_axes);
        assert_eq!(profile.continuity_modes, native.continuity_modes);
        assert_eq!(profile.partition_and_fenced_lease, native.partition_and_fenced_lease);
        assert_eq!(profile.provider_quota_axes, native.provider_quota_axes);
    }
    let request = scale_units_core::parse_request(&good_request()).expect("parses");
    let decision = policy().evaluate(&request).expect("no host error").expect("a decision").decision;
    let explanation = policy().explain(&decision).expect("no host error");
    let native = scale_units_core::explain(&decision);
    assert_eq!(explanation.summary, native.summary);
    assert_eq!(explanation.evidence, native.evidence);
    assert_eq!(explanation.to_text(), native.to_text());
}
