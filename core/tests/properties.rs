//! Properties of the evaluator over generated requests for every surface.

#![allow(clippy::panic, reason = "a test fails by panicking")]

use proptest::prelude::*;
use scale_units_core::{
    ActionKind, CapacityDemand, CapacityObservation, ContinuityContract, ContinuityMode, ContinuityObservation,
    Decision, EvaluationRequest, PartitionLeaseContract, QuotaBinding, QuotaObservation, QuotaScope, SafetyObservation,
    ScalePolicy, ScaleUnitContract, SignalObservation, SurfaceKind, decision_to_json, derive, derive_json, evaluate,
    evaluate_json,
};

const DIGEST: &str = "sha256:8983d2cf111527b9be4d220c76d6ca9c50dec8ea9c2d9a5f81180d46a2358d78";
const NOW: &str = "2026-08-19T12:00:00Z";

/// `2026-08-19T12:00:00Z` moved by `seconds` (within the day).
fn at(seconds: i64) -> String {
    let total = 12 * 3600 + seconds;
    format!("2026-08-19T{:02}:{:02}:{:02}Z", total / 3600, total % 3600 / 60, total % 60)
}

/// An observation window: mostly fresh, sometimes stale or from the future.
fn window() -> impl Strategy<Value = (String, String)> {
    prop_oneof![
        40 => (1..300_i64, 1..300_i64).prop_map(|(back, ahead)| (at(-back), at(ahead))),
        1 => (1..300_i64).prop_map(|back| (at(-back - 60), at(-back))), // expired (incl. == now edge below)
        1 => Just((at(-60), at(0))),                                     // expires exactly now: stale
        1 => (1..300_i64).prop_map(|ahead| (at(ahead), at(ahead + 60))), // from the future
    ]
}

#[derive(Debug, Clone)]
struct Knobs {
    surface: SurfaceKind,
    min: u64,
    max: u64,
    target: u64,
    up_step: u64,
    down_step: u64,
    to_zero: bool,
    from_zero: bool,
    drain_seconds: u64,
    mode_pick: usize,
    safety_required: bool,
    per_replica: Vec<u64>,
    provider_per_replica: u64,
    current: u64,
    value: i64,
    signal_window: (String, String),
    allocatable: Vec<u64>,
    reserved_ppm: Vec<u64>,
    capacity_windows: Vec<(String, String)>,
    quota_limit: u64,
    quota_used_ppm: u64,
    quota_window: (String, String),
    sessions: u64,
    ready: bool,
    continuity_window: (String, String),
    overloaded: bool,
    safety_window: (String, String),
    last_action: Option<i64>,
}

fn knobs() -> impl Strategy<Value = Knobs> {
    let surfaces = proptest::sample::select(SurfaceKind::ALL.to_vec());
    (
        (surfaces, 0..4_u64, 1..12_u64, 1..200_u64, 1..4_u64, 1..4_u64, any::<bool>(), any::<bool>()),
        (0..600_u64, 0..2_usize, any::<bool>(), proptest::collection::vec(0..50_u64, 6), 1..20_u64),
        (0..14_u64, 0..3000_i64, window(), proptest::collection::vec(0..2000_u64, 6)),
        (proptest::collection::vec(0..1_000_000_u64, 6), proptest::collection::vec(window(), 6)),
        (0..400_u64, 0..1_000_000_u64, window(), 0..3_u64, any::<bool>(), window()),
        (prop_oneof![9 => Just(false), 1 => Just(true)], window(), proptest::option::of(-400..400_i64)),
    )
        .prop_map(|(a, b, c, d, e, f)| {
            let (surface, min, span, target, up_step, down_step, to_zero, from_zero) = a;
            let (drain_seconds, mode_pick, safety_required, per_replica, provider_per_replica) = b;
            let (current, value, signal_window, allocatable) = c;
            let (reserved_ppm, capacity_windows) = d;
            let (quota_limit, quota_used_ppm, quota_window, sessions, ready, continuity_window) = e;
            let (overloaded, safety_window, last_action) = f;
            let min = if to_zero { 0 } else { min };
            let max = (min + span).max(up_step).max(down_step);
            Knobs {
                surface,
                min,
                max,
                target,
                up_step,
                down_step,
                to_zero,
                from_zero,
                drain_seconds,
                mode_pick,
                safety_required,
                per_replica,
                provider_per_replica,
                current: current.max(min),
                value,
                signal_window,
                allocatable,
                reserved_ppm,
                capacity_windows,
                quota_limit,
                quota_used_ppm,
                quota_window,
                sessions,
                ready,
                continuity_window,
                overloaded,
                safety_window,
                last_action,
            }
        })
}

fn observation_window(w: &(String, String)) -> (String, String, String, String) {
    (w.0.clone(), w.1.clone(), "source:generated".to_owned(), DIGEST.to_owned())
}

/// A valid request for the knobs' surface: the profile's vocabulary, demands on every hard
/// axis, a provider-global quota where the profile needs one, and generated observations.
fn build(k: &Knobs) -> EvaluationRequest {
    let profile = k.surface.profile();
    let target_signal = profile.allowed_signals.first().copied().unwrap_or(scale_units_core::SignalKind::RequestRate);
    let mut policy = ScalePolicy::new(target_signal, k.target);
    policy.min_replicas = k.min;
    policy.max_replicas = k.max;
    policy.scale_up_step = k.up_step;
    policy.scale_down_step = k.down_step;
    policy.scale_up_cooldown_s = 60;
    policy.scale_down_cooldown_s = 120;
    policy.drain_seconds = k.drain_seconds;
    policy.allow_scale_to_zero = k.to_zero;
    policy.allow_scale_from_zero = k.from_zero;

    let mode = profile
        .continuity_modes
        .get(k.mode_pick % profile.continuity_modes.len())
        .copied()
        .unwrap_or(ContinuityMode::Externalized);
    let mut continuity = ContinuityContract::new(mode);
    match mode {
        ContinuityMode::Externalized => continuity.external_store_ref = Some("store:sessions".to_owned()),
        ContinuityMode::Stateless => continuity.block_scale_down_with_active = false,
        ContinuityMode::SessionAffine => {}
    }
    let axes = profile.required_capacity_axes.to_vec();
    let replica_demands = axes
        .iter()
        .zip(k.per_replica.iter().cycle())
        .map(|(&axis, &per_replica)| CapacityDemand { axis, per_replica })
        .collect();
    let quotas: Vec<QuotaBinding> = profile
        .provider_quota_axes
        .first()
        .map(|&axis| QuotaBinding {
            quota_ref: "provider:upstream".to_owned(),
            axis,
            scope: QuotaScope::ProviderGlobal,
            per_replica: k.provider_per_replica,
            multiplicative: false,
        })
        .into_iter()
        .collect();
    let partition_lease = if profile.partition_and_fenced_lease {
        PartitionLeaseContract {
            partitioned: true,
            partitions_per_replica: 4,
            lease_required: true,
            lease_ttl_s: 30,
            fencing_required: true,
        }
    } else {
        PartitionLeaseContract::default()
    };
    let contract = ScaleUnitContract {
        schema_version: "1".to_owned(),
        unit_ref: format!("unit:{}", k.surface),
        surface: k.surface,
        version: 1,
        policy,
        allowed_signals: profile.allowed_signals.to_vec(),
        required_capacity_axes: axes.clone(),
        replica_demands,
        quotas: quotas.clone(),
        partition_lease,
        continuity,
        safety_required: k.safety_required,
        engine_authority_axes: profile.engine_authority_axes.to_vec(),
        contract_id: String::new(),
        contract_digest: String::new(),
    };

    let (observed_at, expires_at, source_ref, source_digest) = observation_window(&k.signal_window);
    let signal = Some(SignalObservation {
        signal: target_signal,
        value: k.value,
        observed_at,
        expires_at,
        source_ref,
        source_digest,
    });
    let capacities = axes
        .iter()
        .enumerate()
        .map(|(i, &axis)| {
            let allocatable = k.allocatable.get(i).copied().unwrap_or(1000);
            let reserved = allocatable * k.reserved_ppm.get(i).copied().unwrap_or(0) / 1_000_000;
            let (observed_at, expires_at, source_ref, source_digest) =
                observation_window(k.capacity_windows.get(i).unwrap_or(&k.signal_window));
            CapacityObservation {
                axis,
                allocatable,
                reserved,
                used: reserved / 2,
                observed_at,
                expires_at,
                source_ref,
                source_digest,
            }
        })
        .collect();
    let quota_observations = quotas
        .iter()
        .map(|binding| {
            let (observed_at, expires_at, source_ref, source_digest) = observation_window(&k.quota_window);
            QuotaObservation {
                quota_ref: binding.quota_ref.clone(),
                scope: binding.scope,
                limit: k.quota_limit,
                used: k.quota_limit * k.quota_used_ppm / 1_000_000,
                observed_at,
                expires_at,
                source_ref,
                source_digest,
            }
        })
        .collect();
    let (observed_at, expires_at, source_ref, source_digest) = observation_window(&k.continuity_window);
    let continuity = Some(ContinuityObservation {
        ready: k.ready,
        active_sessions: k.sessions,
        active_streams: 0,
        observed_at,
        expires_at,
        source_ref,
        source_digest,
    });
    let (observed_at, expires_at, source_ref, source_digest) = observation_window(&k.safety_window);
    let safety = Some(SafetyObservation {
        overloaded: k.overloaded,
        noisy_neighbor: false,
        reason_ref: k.overloaded.then(|| "incident:42".to_owned()),
        observed_at,
        expires_at,
        source_ref,
        source_digest,
    });
    EvaluationRequest {
        contract,
        current_replicas: i64::try_from(k.current).unwrap_or(0),
        signal,
        capacities,
        quotas: quota_observations,
        continuity,
        safety,
        now: NOW.to_owned(),
        last_action_at: k.last_action.map(at),
    }
}

fn decide(request: &EvaluationRequest) -> Decision {
    match evaluate(request) {
        Ok(decision) => decision,
        Err(error) => panic!("generated request was refused: {error}\n{request:#?}"),
    }
}

fn scaled(decision: &Decision) -> bool {
    matches!(decision.action, ActionKind::ScaleUp | ActionKind::ScaleDown)
}

/// Every way of taking one required piece of evidence away: remove it, or make it stale.
fn degradations(request: &EvaluationRequest) -> Vec<EvaluationRequest> {
    let stale = |expires: &mut String, observed: &mut String| {
        *observed = at(-120);
        *expires = at(0); // now == expires_at is stale
    };
    let mut out = Vec::new();
    let mut r = request.clone();
    r.signal = None;
    out.push(r);
    let mut r = request.clone();
    if let Some(s) = r.signal.as_mut() {
        stale(&mut s.expires_at, &mut s.observed_at);
    }
    out.push(r);
    for i in 0..request.capacities.len() {
        let mut r = request.clone();
        r.capacities.remove(i);
        out.push(r);
        let mut r = request.clone();
        if let Some(c) = r.capacities.get_mut(i) {
            stale(&mut c.expires_at, &mut c.observed_at);
        }
        out.push(r);
    }
    for i in 0..request.quotas.len() {
        let mut r = request.clone();
        r.quotas.remove(i);
        out.push(r);
        let mut r = request.clone();
        if let Some(q) = r.quotas.get_mut(i) {
            stale(&mut q.expires_at, &mut q.observed_at);
        }
        out.push(r);
    }
    if request.contract.continuity.mode != ContinuityMode::Stateless {
        let mut r = request.clone();
        r.continuity = None;
        out.push(r);
    }
    let mut r = request.clone();
    if let Some(c) = r.continuity.as_mut() {
        stale(&mut c.expires_at, &mut c.observed_at);
    }
    out.push(r);
    if request.contract.safety_required {
        let mut r = request.clone();
        r.safety = None;
        out.push(r);
        let mut r = request.clone();
        if let Some(s) = r.safety.as_mut() {
            stale(&mut s.expires_at, &mut s.observed_at);
        }
        out.push(r);
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn same_request_same_bytes(k in knobs()) {
        let request = build(&k);
        let first = decision_to_json(&decide(&request));
        let second = decision_to_json(&decide(&request.clone()));
        prop_assert_eq!(&first, &second);
        // And the JSON path agrees with the typed path, byte for byte.
        let text = serde_json::to_string(&request).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(evaluate_json(&text).map_err(|e| TestCaseError::fail(e.to_string()))?, first);
    }

    #[test]
    fn blocked_and_hold_keep_the_count(k in knobs()) {
        let decision = decide(&build(&k));
        if matches!(decision.action, ActionKind::Blocked | ActionKind::Hold) {
            prop_assert_eq!(decision.desired_replicas, decision.current_replicas);
        }
        if decision.action == ActionKind::ScaleUp {
            prop_assert!(decision.desired_replicas > decision.current_replicas);
            prop_assert!(decision.desired_replicas <= k.max);
        }
        if decision.action == ActionKind::ScaleDown {
            prop_assert!(decision.desired_replicas < decision.current_replicas);
        }
    }

    #[test]
    fn scale_up_fits_quotas_and_capacity(k in knobs()) {
        let request = build(&k);
        let decision = decide(&request);
        if decision.action == ActionKind::ScaleUp {
            let additional = u128::from(decision.desired_replicas - decision.current_replicas);
            for demand in &request.contract.replica_demands {
                let observed = request.capacities.iter().find(|c| c.axis == demand.axis);
                let available = observed.map_or(0, |c| u128::from(c.allocatable - c.reserved));
                prop_assert!(additional * u128::from(demand.per_replica) <= available);
            }
            for binding in &request.contract.quotas {
                let observed = request.quotas.iter().find(|q| q.quota_ref == binding.quota_ref);
                let (used, limit) = observed.map_or((1, 0), |q| (u128::from(q.used), u128::from(q.limit)));
                prop_assert!(used + additional * u128::from(binding.per_replica) <= limit);
            }
        }
    }

    #[test]
    fn taking_evidence_away_never_scales(k in knobs()) {
        let request = build(&k);
        if scaled(&decide(&request)) {
            for degraded in degradations(&request) {
                let decision = decide(&degraded);
                prop_assert!(!scaled(&decision), "scaled without evidence: {:?}", decision);
            }
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = scale_units_core::evaluate_json_bytes(&bytes);
    }

    #[test]
    fn mutated_requests_never_panic(k in knobs(), cut in 0..4000_usize, byte in any::<u8>()) {
        let text = serde_json::to_string(&build(&k)).unwrap_or_default();
        let mut bytes = text.into_bytes();
        let position = cut % bytes.len().max(1);
        if let Some(slot) = bytes.get_mut(position) {
            *slot = byte;
        }
        let _ = scale_units_core::evaluate_json_bytes(&bytes);
        if let Ok(text) = std::str::from_utf8(&bytes) {
            prop_assert_eq!(derive_json(text).err(), evaluate_json(text).err());
        }
        bytes.truncate(cut);
        let _ = scale_units_core::evaluate_json_bytes(&bytes);
    }

    /// The derivation names its decision and shows SPEC §7's arithmetic: each number it gives is
    /// checked here against the SPEC's formula, and its gates end where the decision was made.
    #[test]
    fn derivation_agrees_with_the_decision(k in knobs()) {
        use scale_units_core::{DemandStatus, Gate};
        let request = build(&k);
        let decision = decide(&request);
        let d = derive(&request).map_err(|e| TestCaseError::fail(e.to_string()))?;
        // The derivation's own writer writes what serde_json's generic one does.
        prop_assert_eq!(d.to_json(), serde_json::to_string(&d).map_err(|e| TestCaseError::fail(e.to_string()))?);
        prop_assert_eq!(&d.decision_id, &decision.decision_id);
        prop_assert_eq!(&d.decision_digest, &decision.decision_digest);
        prop_assert_eq!((d.action, d.desired_replicas, &d.reasons, d.drain_required),
            (decision.action, decision.desired_replicas, &decision.reasons, decision.drain_required));
        prop_assert_eq!(d.evidence.len(), decision.evidence.len());
        let current = decision.current_replicas;
        let Some(t) = &d.target else {
            // Phase A blocked: no target, no gate.
            prop_assert_eq!(decision.action, ActionKind::Blocked);
            prop_assert!(d.gates.is_empty());
            return Ok(());
        };
        prop_assert_eq!(t.ceil, t.value.div_ceil(t.target));
        prop_assert_eq!(t.raw, t.floor.max(t.max_replicas.min(t.ceil)));
        match &t.step {
            None => {
                prop_assert_eq!(t.raw, current);
                prop_assert_eq!(decision.action, ActionKind::Hold);
            }
            Some(step) if t.action == ActionKind::ScaleUp => {
                prop_assert_eq!(step.limit, current + step.size);
                prop_assert_eq!(t.desired, step.limit.min(t.raw));
            }
            Some(step) => {
                prop_assert_eq!(step.limit, current.saturating_sub(step.size));
                prop_assert_eq!(t.desired, step.limit.max(t.raw));
            }
        }
        let fired: Vec<bool> = d.gates.iter().map(|g| match g {
            Gate::ScaleFromZero { fired, .. } | Gate::ScaleToZero { fired, .. } | Gate::ActiveSessions { fired, .. }
            | Gate::Cooldown { fired, .. } | Gate::Growth { fired, .. } | Gate::DrainBound { fired, .. } => *fired,
        }).collect();
        // Only the last gate may fire, and it fired exactly when the decision is not the tracked one.
        prop_assert!(!fired.iter().rev().skip(1).any(|&f| f));
        let tracked = decision.action == t.action && decision.action != ActionKind::Hold;
        prop_assert_eq!(fired.last().copied().unwrap_or(false), !tracked && t.step.is_some());
        for gate in &d.gates {
            if let Gate::Cooldown { cooldown_s, elapsed_us, remaining_us, fired, .. } = gate {
                prop_assert_eq!(*fired, elapsed_us < &(cooldown_s * 1_000_000));
                prop_assert_eq!(*remaining_us, (cooldown_s * 1_000_000).saturating_sub(*elapsed_us));
            }
            if let Gate::Growth { additional, capacity, quotas, engine_authority, .. } = gate {
                prop_assert_eq!(*additional, t.desired - current);
                for c in capacity {
                    prop_assert_eq!(u128::from(c.needed), u128::from(*additional) * u128::from(c.per_replica));
                    if let (Some(a), Some(r), Some(av)) = (c.allocatable, c.reserved, c.available) {
                        prop_assert_eq!(av, a - r);
                        prop_assert_eq!(c.status == DemandStatus::Exhausted, c.needed > av);
                        prop_assert_eq!(c.shortfall, Some(c.needed.saturating_sub(av)));
                    }
                }
                for q in quotas {
                    prop_assert_eq!(u128::from(q.projected), u128::from(q.used) + u128::from(*additional) * u128::from(q.per_replica));
                    prop_assert_eq!(q.over, q.projected > q.limit);
                }
                for e in engine_authority {
                    prop_assert_eq!(e.available, e.allocatable - e.reserved);
                    prop_assert_eq!(e.saturated, e.available == 0);
                }
            }
        }
        prop_assert!(d.to_text().lines().last().unwrap_or_default().starts_with("decision: "));
    }
}

/// The properties above are only as good as the generator: it must reach every action, and
/// the "taking evidence away" property must see requests that scale.
#[test]
fn generator_reaches_every_action() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = knobs();
    let mut counts = std::collections::BTreeMap::new();
    for _ in 0..2000 {
        let Ok(tree) = strategy.new_tree(&mut runner) else {
            continue;
        };
        let decision = decide(&build(&tree.current()));
        *counts.entry(decision.action.as_str()).or_insert(0_u32) += 1;
    }
    eprintln!("actions over 2000 generated requests: {counts:?}");
    for action in ActionKind::ALL {
        assert!(counts.get(action.as_str()).copied().unwrap_or(0) >= 20, "{action} too rare: {counts:?}");
    }
}
