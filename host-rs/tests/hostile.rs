//! Hostile and broken components, timed: each is refused at load or stopped by the fuel or memory
//! limit with its typed `HostError`, and the good policy keeps serving after each. The times
//! (printed with `--nocapture`; figures in SECURITY.md) are measured, not asserted, apart from a
//! generous bound that only catches a hang.
#![allow(
    clippy::panic,
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "test code: a failed expectation is a test failure"
)]

mod common;

use std::time::{Duration, Instant};

use common::{Behaviour, GOOD_INFO, Info, component_bytes, good_request, hostile_component, policy};
use scale_units_host::{HostError, Policy, PolicyBuilder};

/// Far above any time measured here: only a hang fails it.
const HANG: Duration = Duration::from_secs(60);

fn assert_still_serving() {
    let evaluated = policy().evaluate_json(&good_request()).expect("no host error").expect("a decision");
    assert!(evaluated.decision.contains("\"action\":\"scale_up\""), "{}", evaluated.decision);
}

/// Runs `f`, prints how long it took, and checks the good policy still decides.
fn timed<T>(case: &str, f: impl FnOnce() -> T) -> T {
    let started = Instant::now();
    let value = f();
    let elapsed = started.elapsed();
    println!("{case:<58} {:>9.1} ms", elapsed.as_secs_f64() * 1000.0);
    assert!(elapsed < HANG, "{case} took {elapsed:?}");
    assert_still_serving();
    value
}

/// Loads `behaviour` with `builder`, then calls `evaluate-json` once, timing only the call.
fn call(case: &str, builder: PolicyBuilder, behaviour: Behaviour) -> Result<String, HostError> {
    let hostile = builder.load(&hostile_component(behaviour, &GOOD_INFO, None)).expect("loads");
    timed(case, || hostile.evaluate_json(&good_request()))
        .map(|outcome| outcome.map(|evaluated| evaluated.decision).unwrap_or_else(|e| e.to_string()))
}

#[test]
fn a_loop_runs_out_of_the_default_fuel() {
    let outcome = call("infinite loop, default fuel (10^9)", Policy::builder(), Behaviour::Loop);
    assert!(matches!(outcome, Err(HostError::OutOfFuel { budget: PolicyBuilder::DEFAULT_FUEL })), "{outcome:?}");
}

#[test]
fn unbounded_memory_growth_stops_at_the_default_limit() {
    let outcome = call("unbounded memory growth, default limit (64 MiB)", Policy::builder(), Behaviour::GrowMemory);
    let limit = PolicyBuilder::DEFAULT_MEMORY_LIMIT;
    assert!(matches!(outcome, Err(HostError::MemoryLimit { limit_bytes }) if limit_bytes == limit), "{outcome:?}");
}

#[test]
fn deep_recursion_exhausts_the_stack_as_a_trap() {
    let outcome = call("deep recursion (stack exhaustion)", Policy::builder(), Behaviour::Recurse);
    match outcome {
        Err(HostError::Trap { message }) => assert!(message.contains("stack"), "{message}"),
        other => panic!("expected Trap, got {other:?}"),
    }
}

#[test]
fn a_huge_output_cannot_outgrow_the_memory_limit() {
    // 100 MB of output needs 100 MB of linear memory: past the default limit.
    let outcome = call(
        "100 MB output, default memory limit",
        Policy::builder(),
        Behaviour::HugeOutput { pages: 1600, len: 100_000_000 },
    );
    assert!(matches!(outcome, Err(HostError::MemoryLimit { .. })), "{outcome:?}");
    // A string that claims 100 MB beyond the memory it has traps when the host lifts it.
    let outcome = call(
        "100 MB output claimed past the memory",
        Policy::builder(),
        Behaviour::HugeOutput { pages: 0, len: 100_000_000 },
    );
    assert!(matches!(outcome, Err(HostError::Trap { .. })), "{outcome:?}");
    // An output that is not UTF-8 traps when lifted too.
    let outcome = call("output that is not UTF-8", Policy::builder(), Behaviour::BadUtf8Output);
    assert!(matches!(outcome, Err(HostError::Trap { .. })), "{outcome:?}");
    // With the limit raised on purpose the host lifts what fits: the memory limit is the bound
    // on an output (the registry's conformance suite refuses such a component before activation).
    let outcome = call(
        "100 MB output, memory limit raised to 256 MiB",
        Policy::builder().memory_limit(256 << 20),
        Behaviour::HugeOutput { pages: 1600, len: 100_000_000 },
    );
    assert_eq!(outcome.map(|text| text.len()).ok(), Some(100_000_000));
}

#[test]
fn wasi_imports_are_refused_at_load() {
    let world = "package test:hostile;\n\
         package wasi:random@0.2.0 { interface random { get-random-u64: func() -> u64; } }\n\
         package wasi:cli@0.2.0 { interface environment { get-environment: func() -> list<tuple<string, string>>; } }\n\
         world with-wasi {\n  import wasi:random/random@0.2.0;\n  import wasi:cli/environment@0.2.0;\n  \
         export scale-units:evaluator/evaluator@0.3.0;\n}\n";
    let bytes = hostile_component(Behaviour::Trap, &GOOD_INFO, Some(world));
    match timed("WASI imports (random, environment)", || Policy::from_bytes(&bytes)) {
        Err(HostError::Imports { imports }) => {
            assert_eq!(imports, ["wasi:random/random@0.2.0", "wasi:cli/environment@0.2.0"]);
        }
        other => panic!("expected Imports, got {other:?}"),
    }
}

#[test]
fn another_world_and_other_versions_are_refused_at_load() {
    let other = common::other_world_component();
    let outcome = timed("another world", || Policy::from_bytes(&other));
    assert!(matches!(outcome, Err(HostError::WrongWorld { .. })), "{outcome:?}");
    for (case, info) in [
        ("schema version \"2\" in info", Info { schema_version: "2", ..GOOD_INFO }),
        ("schema version \"\" in info", Info { schema_version: "", ..GOOD_INFO }),
        ("WIT version 1.0.0 in info", Info { wit_version: "1.0.0", ..GOOD_INFO }),
    ] {
        let bytes = hostile_component(Behaviour::Trap, &info, None);
        let outcome = timed(case, || Policy::from_bytes(&bytes));
        assert!(matches!(outcome, Err(HostError::Incompatible { .. })), "{case}: {outcome:?}");
    }
}

/// xorshift64*, for reproducible corruption.
fn next(state: &mut u64) -> u64 {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    state.wrapping_mul(0x2545_f491_4f6c_dd1d)
}

#[test]
fn truncated_and_corrupted_bytes_are_refused_or_harmless() {
    let good = component_bytes();
    let len = good.len() as u64;
    let mut state = 0x7e57_ab1e_u64;
    let (mut refused, mut loaded) = (0, 0);
    let started = Instant::now();
    let mut variants: Vec<(String, Vec<u8>)> = Vec::new();
    for _ in 0..12 {
        let at = usize::try_from(next(&mut state) % len).expect("fits");
        variants.push((format!("truncated to {at} bytes"), good[..at].to_vec()));
    }
    // Most flips leave bytes wasmtime must compile in full, seconds each in a debug build:
    // `SCALE_UNITS_CORRUPT_FLIPS` sets how many (default 4; SECURITY.md records a longer run).
    let flips = std::env::var("SCALE_UNITS_CORRUPT_FLIPS").ok().and_then(|v| v.parse().ok()).unwrap_or(4);
    for _ in 0..flips {
        let at = usize::try_from(next(&mut state) % len).expect("fits");
        let mut bytes = good.to_vec();
        bytes[at] ^= 1 << (next(&mut state) % 8);
        variants.push((format!("bit flipped at byte {at}"), bytes));
    }
    for (case, bytes) in &variants {
        // Pinned to the real digest, every variant is refused before it is even parsed.
        let pinned = Policy::builder().expected_digest(policy().digest()).load(bytes);
        assert!(matches!(pinned, Err(HostError::DigestMismatch { .. })), "{case}: {pinned:?}");
        // Unpinned: refused with a typed error, or (a flip in data or a custom section) a
        // component that loads; then every call is a result or a typed host error.
        match Policy::builder().fuel(50_000_000).load(bytes) {
            Err(
                HostError::InvalidComponent { .. }
                | HostError::WrongWorld { .. }
                | HostError::Incompatible { .. }
                | HostError::Imports { .. }
                // A flip in code that `info` runs at load: the guest traps, the load is refused.
                | HostError::Trap { .. }
                | HostError::OutOfFuel { .. },
            ) => refused += 1,
            Err(other) => panic!("{case}: unexpected {other:?}"),
            Ok(flipped) => {
                loaded += 1;
                let _ = flipped.evaluate_json(&good_request());
            }
        }
    }
    let elapsed = started.elapsed();
    println!(
        "{:<58} {:>9.1} ms",
        format!("{} truncated/flipped components: {refused} refused, {loaded} loaded", variants.len()),
        elapsed.as_secs_f64() * 1000.0
    );
    assert_still_serving();
}
