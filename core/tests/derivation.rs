//! The words of [`Derivation::to_text`], pinned on vectors of `tests/vectors/derivation/` (every
//! face prints these lines), and what a derivation must say about its own numbers.

#![allow(clippy::panic, reason = "a test fails by panicking")]

use std::path::Path;

use scale_units_core::conformance::Vector;
use scale_units_core::{Derivation, EvaluationRequest, derive, derive_json, evaluate, evaluate_json, parse_request};

fn request(name: &str) -> EvaluationRequest {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/vectors/derivation").join(format!("{name}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let vector = Vector::parse(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
    parse_request(&vector.request_text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn text_of(name: &str) -> String {
    derive(&request(name)).unwrap_or_else(|e| panic!("{name}: {e}")).to_text()
}

/// The example: ceil(640 / 100) = 7, capped to 5 by scale_up_step 2 inside [2, 12].
#[test]
fn target_step_cap_and_growth_read_as_arithmetic() {
    let evidence = [
        "signal metrics:request_rate: accepted (request_rate)",
        "capacity capacity:cpu_milli: accepted (cpu_milli)",
        "capacity capacity:memory_mib: accepted (memory_mib)",
        "capacity capacity:session_slots: accepted (session_slots)",
        "capacity capacity:continuity_slots: accepted (continuity_slots)",
        "quota quota:provider-llm: accepted (provider_global)",
        "continuity continuity:sessions: accepted (externalized)",
        "safety safety:node: accepted (safety)",
    ];
    let mut expected: Vec<String> = evidence.iter().map(|line| format!("evidence {line}")).collect();
    expected.extend(
        [
            "target: ceil(640 / 100) = 7",
            "bounds: [2, 12]",
            "step cap: 3 + scale_up_step 2 = 5 (from 7)",
            "growth: additional 5 - 3 = 2: passes",
            "capacity cpu_milli: 2 × 500 = 1000 needed, 4000 available (10000 allocatable - 6000 reserved)",
            "capacity memory_mib: 2 × 10 = 20 needed, 9000 available (10000 allocatable - 1000 reserved)",
            "capacity session_slots: 2 × 10 = 20 needed, 9000 available (10000 allocatable - 1000 reserved)",
            "capacity continuity_slots: 2 × 10 = 20 needed, 9000 available (10000 allocatable - 1000 reserved)",
            "quota provider:llm (provider_global): 40 used + 2 × 10 = 60, limit 100",
            "decision: scale_up 3 -> 5 (target_tracking)",
        ]
        .map(str::to_owned),
    );
    assert_eq!(text_of("target-step-capped-within-bounds"), expected.join("\n") + "\n");
}

#[test]
fn gates_read_with_their_numbers() {
    let tail = |name: &str, lines: usize| -> Vec<String> {
        let text = text_of(name);
        let all: Vec<String> = text.lines().map(str::to_owned).collect();
        all.get(all.len().saturating_sub(lines)..).unwrap_or_default().to_vec()
    };
    assert_eq!(
        tail("cooldown-one-microsecond-short", 6),
        [
            "target: ceil(0 / 100) = 0",
            "bounds: [1, 8]: 0 raised to the floor 1",
            "step cap: 3 - scale_down_step 1 = 2 (from 1)",
            "active sessions: 0 sessions + 0 streams, block_scale_down_with_active true: passes",
            "cooldown: scale_down_cooldown_s 300 s, last action 2026-08-19T11:55:00.000001+00:00, 299.999999 s elapsed, 0.000001 s left: hold",
            "decision: hold at 3 (cooldown)",
        ]
    );
    assert_eq!(
        tail("local-quota-projection-over-limit", 2),
        [
            "quota tenant:acme (tenant, multiplicative): 95 used + 1 × 10 = 105, limit 100: over by 5 (capacity_exhausted)",
            "decision: blocked at 1 (capacity_exhausted)",
        ]
    );
    assert_eq!(
        tail("engine-authority-saturated", 2),
        [
            "engine fsync_iops: 0 available (100 allocatable - 100 reserved): saturated (engine_authority_saturated)",
            "decision: blocked at 1 (engine_authority_saturated)",
        ]
    );
    assert_eq!(
        tail("scale-to-zero", 4),
        [
            "step cap: max(0, 1 - scale_down_step 2) = 0 <= 0, not capped",
            "active sessions: no continuity observation: passes",
            "drain bound: continuity.drain_required false, no drain",
            "decision: scale_down 1 -> 0 (target_tracking)",
        ]
    );
    assert_eq!(
        tail("scale-from-zero-disabled", 5),
        [
            "target: ceil(250 / 100) = 3",
            "bounds: [1, 8] (min_replicas 0 raised to 1)",
            "step cap: 0 + scale_up_step 2 = 2 (from 3)",
            "scale from zero: allow_scale_from_zero false: blocked",
            "decision: blocked at 0 (scale_from_zero_disabled)",
        ]
    );
}

#[test]
fn phase_a_reads_as_verdicts_and_checks() {
    let stale = text_of("stale-and-missing-evidence");
    assert!(stale.contains(
        "evidence signal metrics:request_rate: stale (signal_stale): now 2026-08-19T12:00:00+00:00 outside [observed_at 2026-08-19T11:50:00+00:00, expires_at 2026-08-19T11:55:00+00:00)\n"
    ), "{stale}");
    assert!(stale.contains("evidence capacity capacity:session_slots: missing (capacity_missing)\n"), "{stale}");
    assert!(!stale.contains("target:"), "phase A blocked: no target line\n{stale}");
    let mismatch = text_of("mismatches-name-both-sides");
    assert!(mismatch.contains(
        "evidence signal metrics:in_flight: blocked (signal_mismatch): found in_flight, expected request_rate\n"
    ));
    let checks = text_of("phase-a-checks-without-evidence");
    assert!(checks.contains("check cooldown: last_action_at 2026-08-19T12:00:05+00:00 is 5 s after now\n"), "{checks}");
    assert!(
        checks.ends_with(
            "decision: blocked at 1 (continuity_stale, overload_shedding_active, noisy_neighbor, cooldown)\n"
        )
    );
}

/// The derivation's JSON reads back as the same value, with unknown fields refused.
#[test]
fn json_round_trips_and_is_strict() {
    let derivation = derive(&request("target-step-capped-within-bounds")).unwrap_or_else(|e| panic!("{e}"));
    let json = derivation.to_json();
    let back: Derivation = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(back, derivation);
    let widened = json.replacen("{\"decision_id\"", "{\"extra\":1,\"decision_id\"", 1);
    assert!(serde_json::from_str::<Derivation>(&widened).is_err());
    let widened_gate = json.replacen("{\"gate\":\"growth\"", "{\"gate\":\"growth\",\"extra\":1", 1);
    assert_ne!(widened_gate, json);
    assert!(serde_json::from_str::<Derivation>(&widened_gate).is_err());
}

/// An invalid request gets exactly the error `evaluate` gives, through both entry points.
#[test]
fn invalid_requests_fail_as_evaluate_does() {
    let mut bad = request("hold-at-target");
    bad.current_replicas = 10_001;
    assert_eq!(derive(&bad).err(), evaluate(&bad).err());
    assert!(derive(&bad).is_err());
    for text in ["", "{", "[]", "{\"contract\":1}", "{\"a\":1,\"a\":2}"] {
        assert_eq!(derive_json(text).err(), evaluate_json(text).err(), "{text:?}");
    }
}
