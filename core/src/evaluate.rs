//! The algorithm of SPEC §7: evidence (phase A), target tracking (B) and gates (C).

use crate::canonical::{Canon, content_digest};
use crate::derive::{
    Bound, Check, CooldownField, DemandCheck, DemandStatus, EngineCheck, EvidenceDetail, Gate, Mismatch, QuotaCheck,
    Recorder, StepCap, StepField, Steps, Target,
};
use crate::identity::{self, DecisionFields};
use crate::model::{Decision, Evidence};
use crate::time;
use crate::validate::{Checked, Window};
use crate::vocab::{ActionKind, ContinuityMode, EvidenceKind, EvidenceStatus, QuotaScope, Reason};

const MAX_REASONS: usize = 16;
const MAX_EVIDENCE: usize = 64;
const MICROS_PER_SECOND: i128 = 1_000_000;

/// Reasons in first-seen order, without repeats.
#[derive(Default)]
struct Reasons(Vec<Reason>);

impl Reasons {
    fn push(&mut self, reason: Reason) {
        if !self.0.contains(&reason) {
            self.0.push(reason);
        }
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

fn observed(kind: EvidenceKind, reference: &str, digest: &str, status: EvidenceStatus, code: &str) -> Evidence {
    Evidence { kind, reference: reference.to_owned(), digest: digest.to_owned(), status, code: code.to_owned() }
}

/// Evidence for something not supplied: a fixed reference and the digest of a fixed marker.
fn missing(kind: EvidenceKind, reference: String, marker: (&'static str, &str), reason: Reason) -> Evidence {
    let digest = content_digest(&Canon::Map(vec![(marker.0, Canon::Str(marker.1)), ("state", Canon::Str("missing"))]));
    Evidence { kind, reference, digest, status: EvidenceStatus::Missing, code: reason.as_str().to_owned() }
}

/// What phase A remembers of accepted quotas for the growth check (C4 steps 2 and 3).
#[derive(Default)]
struct Exhausted {
    provider: bool,
    local: bool,
}

/// The outcome before identities are attached.
struct Outcome {
    desired: u64,
    action: ActionKind,
    reasons: Reasons,
    drain_required: bool,
}

impl Outcome {
    fn blocked(current: u64, reasons: Reasons, drain_required: bool) -> Self {
        Self { desired: current, action: ActionKind::Blocked, reasons, drain_required }
    }

    fn hold(current: u64, reason: Reason) -> Self {
        let mut reasons = Reasons::default();
        reasons.push(reason);
        Self { desired: current, action: ActionKind::Hold, reasons, drain_required: false }
    }
}

fn single(reason: Reason) -> Reasons {
    let mut reasons = Reasons::default();
    reasons.push(reason);
    reasons
}

/// Evaluates a checked request, writing its steps to `recorder` (SPEC §7 is implemented here
/// once; [`crate::derive()`] records, [`crate::evaluate`] passes a silent [`Recorder`]).
/// Total: every branch yields a decision.
pub(crate) fn decide(checked: &Checked<'_>, recorder: &mut Recorder) -> Decision {
    let request = checked.request;
    let now = checked.now;
    // INVARIANT: validation bounded current_replicas to 0..=10000.
    let current = request.current_replicas.unsigned_abs();
    let mut evidence = Vec::new();
    let mut reasons = Reasons::default();
    let exhausted = gather_evidence(checked, &mut evidence, &mut reasons, recorder);

    let outcome = if reasons.is_empty() {
        track_and_gate(checked, current, &exhausted, recorder)
    } else {
        Outcome::blocked(current, reasons, false)
    };
    finish(checked, current, outcome, evidence, now)
}

/// Records the phase-A details of the evidence entry just pushed.
#[inline(always)]
fn detail(recorder: &mut Recorder, window: Option<Window>, mismatch: impl FnOnce() -> Option<Mismatch>) {
    if let Some(steps) = recorder.steps() {
        push_detail(steps, window, mismatch());
    }
}

/// [`detail`]'s push, out of line: phase A records from nine places.
#[inline(never)]
fn push_detail(steps: &mut Steps, window: Option<Window>, mismatch: Option<Mismatch>) {
    steps.evidence.push(EvidenceDetail { window: window.map(Window::bounds), mismatch });
}

/// Phase A: one evidence entry per piece the contract names; any reason blocks.
fn gather_evidence(
    checked: &Checked<'_>,
    evidence: &mut Vec<Evidence>,
    reasons: &mut Reasons,
    recorder: &mut Recorder,
) -> Exhausted {
    let request = checked.request;
    let contract = &request.contract;
    let now = checked.now;
    let fresh = |window: Option<Window>| window.is_some_and(|w| w.is_fresh(now));

    // A1 signal.
    match &request.signal {
        None => {
            reasons.push(Reason::SignalMissing);
            evidence.push(missing(
                EvidenceKind::Signal,
                "signal:missing".into(),
                ("kind", "signal"),
                Reason::SignalMissing,
            ));
            detail(recorder, None, || None);
        }
        Some(signal) => {
            let (status, code) = if signal.signal != contract.policy.target_signal {
                reasons.push(Reason::SignalMismatch);
                (EvidenceStatus::Blocked, Reason::SignalMismatch.as_str())
            } else if !fresh(checked.signal) {
                reasons.push(Reason::SignalStale);
                (EvidenceStatus::Stale, Reason::SignalStale.as_str())
            } else {
                (EvidenceStatus::Accepted, signal.signal.as_str())
            };
            evidence.push(observed(EvidenceKind::Signal, &signal.source_ref, &signal.source_digest, status, code));
            detail(recorder, checked.signal, || {
                (status == EvidenceStatus::Blocked).then(|| Mismatch {
                    expected: contract.policy.target_signal.as_str().to_owned(),
                    found: signal.signal.as_str().to_owned(),
                })
            });
        }
    }

    // A2 capacity, in declaration order.
    let (mut any_missing, mut any_stale) = (false, false);
    for &axis in &contract.required_capacity_axes {
        let found = request.capacities.iter().zip(&checked.capacities).find(|(o, _)| o.axis == axis);
        match found {
            None => {
                any_missing = true;
                evidence.push(missing(
                    EvidenceKind::Capacity,
                    format!("capacity:{axis}"),
                    ("axis", axis.as_str()),
                    Reason::CapacityMissing,
                ));
                detail(recorder, None, || None);
            }
            Some((o, window)) => {
                let (status, code) = if window.is_fresh(now) {
                    (EvidenceStatus::Accepted, axis.as_str())
                } else {
                    any_stale = true;
                    (EvidenceStatus::Stale, Reason::CapacityStale.as_str())
                };
                evidence.push(observed(EvidenceKind::Capacity, &o.source_ref, &o.source_digest, status, code));
                detail(recorder, Some(*window), || None);
            }
        }
    }
    if any_missing {
        reasons.push(Reason::CapacityMissing);
    }
    if any_stale {
        reasons.push(Reason::CapacityStale);
    }

    // A3 quotas, in declaration order.
    let mut flags = [false; 5]; // provider missing, provider stale, missing, stale, scope mismatch
    let mut exhausted = Exhausted::default();
    for binding in &contract.quotas {
        let provider = binding.scope == QuotaScope::ProviderGlobal;
        let found = request.quotas.iter().zip(&checked.quotas).find(|(o, _)| o.quota_ref == binding.quota_ref);
        match found {
            None => {
                let reason = if provider { Reason::ProviderQuotaMissing } else { Reason::QuotaMissing };
                set(&mut flags, if provider { 0 } else { 2 });
                evidence.push(missing(
                    EvidenceKind::Quota,
                    binding.quota_ref.clone(),
                    ("quota_ref", &binding.quota_ref),
                    reason,
                ));
                detail(recorder, None, || None);
            }
            Some((o, window)) => {
                let (status, code) = if o.scope != binding.scope {
                    set(&mut flags, 4);
                    (EvidenceStatus::Blocked, Reason::QuotaScopeMismatch.as_str())
                } else if !window.is_fresh(now) {
                    set(&mut flags, if provider { 1 } else { 3 });
                    let reason = if provider { Reason::ProviderQuotaStale } else { Reason::QuotaStale };
                    (EvidenceStatus::Stale, reason.as_str())
                } else {
                    if o.used >= o.limit {
                        if provider {
                            exhausted.provider = true;
                        } else {
                            exhausted.local = true;
                        }
                    }
                    (EvidenceStatus::Accepted, binding.scope.as_str())
                };
                evidence.push(observed(EvidenceKind::Quota, &o.source_ref, &o.source_digest, status, code));
                detail(recorder, Some(*window), || {
                    (status == EvidenceStatus::Blocked).then(|| Mismatch {
                        expected: binding.scope.as_str().to_owned(),
                        found: o.scope.as_str().to_owned(),
                    })
                });
            }
        }
    }
    let quota_reasons = [
        Reason::ProviderQuotaMissing,
        Reason::ProviderQuotaStale,
        Reason::QuotaMissing,
        Reason::QuotaStale,
        Reason::QuotaScopeMismatch,
    ];
    for (flag, reason) in flags.into_iter().zip(quota_reasons) {
        if flag {
            reasons.push(reason);
        }
    }

    // A4 continuity.
    let mode = contract.continuity.mode;
    match (&request.continuity, mode) {
        (Some(_), ContinuityMode::Stateless) => {
            if !fresh(checked.continuity) {
                reasons.push(Reason::ContinuityStale);
                if let Some(steps) = recorder.steps() {
                    let (observed_at, expires_at) = checked.continuity.map(Window::bounds).unwrap_or_default();
                    steps.checks.push(Check::ContinuityStale {
                        observed_at: time::format_utc(observed_at),
                        expires_at: time::format_utc(expires_at),
                    });
                }
            }
        }
        (None, ContinuityMode::Stateless) => {}
        (None, _) => {
            reasons.push(Reason::ContinuityMissing);
            evidence.push(missing(
                EvidenceKind::Continuity,
                "continuity:missing".into(),
                ("kind", "continuity"),
                Reason::ContinuityMissing,
            ));
            detail(recorder, None, || None);
        }
        (Some(o), _) => {
            let (status, code) = if !fresh(checked.continuity) {
                reasons.push(Reason::ContinuityStale);
                (EvidenceStatus::Stale, Reason::ContinuityStale.as_str())
            } else if !o.ready {
                reasons.push(Reason::ContinuityNotReady);
                (EvidenceStatus::Blocked, Reason::ContinuityNotReady.as_str())
            } else {
                (EvidenceStatus::Accepted, mode.as_str())
            };
            evidence.push(observed(EvidenceKind::Continuity, &o.source_ref, &o.source_digest, status, code));
            detail(recorder, checked.continuity, || None);
        }
    }

    // A5 safety.
    if contract.safety_required {
        match &request.safety {
            None => {
                reasons.push(Reason::OverloadSheddingActive);
                evidence.push(missing(
                    EvidenceKind::Safety,
                    "safety:missing".into(),
                    ("kind", "safety"),
                    Reason::OverloadSheddingActive,
                ));
                detail(recorder, None, || None);
            }
            Some(o) if !fresh(checked.safety) => {
                reasons.push(Reason::OverloadSheddingActive);
                evidence.push(observed(
                    EvidenceKind::Safety,
                    &o.source_ref,
                    &o.source_digest,
                    EvidenceStatus::Stale,
                    "safety_stale",
                ));
                detail(recorder, checked.safety, || None);
            }
            Some(o) => {
                evidence.push(observed(
                    EvidenceKind::Safety,
                    &o.source_ref,
                    &o.source_digest,
                    EvidenceStatus::Accepted,
                    "safety",
                ));
                detail(recorder, checked.safety, || None);
                if o.overloaded {
                    reasons.push(Reason::OverloadSheddingActive);
                    if let Some(steps) = recorder.steps() {
                        steps.checks.push(Check::Overloaded { reason_ref: o.reason_ref.clone() });
                    }
                }
                if o.noisy_neighbor {
                    reasons.push(Reason::NoisyNeighbor);
                    if let Some(steps) = recorder.steps() {
                        steps.checks.push(Check::NoisyNeighbor { reason_ref: o.reason_ref.clone() });
                    }
                }
            }
        }
    }

    // A6 clock.
    if let Some(last) = checked.last_action_at.filter(|&last| last > now) {
        reasons.push(Reason::Cooldown);
        if let Some(steps) = recorder.steps() {
            steps.checks.push(Check::LastActionInFuture {
                last_action_at: time::format_utc(last),
                ahead_us: micros(i128::from(last) - i128::from(now)),
            });
        }
    }
    exhausted
}

fn set(flags: &mut [bool; 5], which: usize) {
    if let Some(flag) = flags.get_mut(which) {
        *flag = true;
    }
}

/// Phases B and C, on evidence that phase A accepted.
fn track_and_gate(checked: &Checked<'_>, current: u64, exhausted: &Exhausted, recorder: &mut Recorder) -> Outcome {
    let request = checked.request;
    let contract = &request.contract;
    let policy = &contract.policy;
    // INVARIANT: phase A accepted a signal, and validation made its value non-negative.
    let value = request.signal.as_ref().map_or(0, |s| s.value.unsigned_abs());

    // B. Target tracking, in exact integer arithmetic (target >= 1 by validation).
    let ceil = value.div_ceil(policy.target.max(1));
    let mut desired = ceil;
    let floor = if policy.allow_scale_to_zero { policy.min_replicas } else { policy.min_replicas.max(1) };
    if value == 0 && policy.allow_scale_to_zero {
        desired = 0;
    }
    let raw = floor.max(policy.max_replicas.min(desired));
    let (action, step) = match raw.cmp(&current) {
        std::cmp::Ordering::Greater => {
            let limit = current.saturating_add(policy.scale_up_step);
            desired = limit.min(raw);
            (ActionKind::ScaleUp, Some((StepField::ScaleUpStep, policy.scale_up_step, limit)))
        }
        std::cmp::Ordering::Less => {
            let limit = current.saturating_sub(policy.scale_down_step);
            desired = limit.max(raw);
            (ActionKind::ScaleDown, Some((StepField::ScaleDownStep, policy.scale_down_step, limit)))
        }
        std::cmp::Ordering::Equal => {
            desired = current;
            (ActionKind::Hold, None)
        }
    };
    if let Some(steps) = recorder.steps() {
        steps.target = Some(Target {
            signal: policy.target_signal,
            value,
            target: policy.target,
            ceil,
            min_replicas: policy.min_replicas,
            floor,
            max_replicas: policy.max_replicas,
            clamp: match raw.cmp(&ceil) {
                std::cmp::Ordering::Less => Some(Bound::MaxReplicas),
                std::cmp::Ordering::Greater => Some(Bound::Floor),
                std::cmp::Ordering::Equal => None,
            },
            raw,
            action,
            step: step.map(|(name, size, limit)| StepCap { name, size, limit, capped: desired != raw }),
            desired,
        });
    }
    if action == ActionKind::Hold {
        return Outcome::hold(current, Reason::AtTarget);
    }

    // C1 scale from zero.
    if action == ActionKind::ScaleUp && current == 0 {
        let fired = !policy.allow_scale_from_zero;
        if let Some(steps) = recorder.steps() {
            steps.gates.push(Gate::ScaleFromZero { allow_scale_from_zero: policy.allow_scale_from_zero, fired });
        }
        if fired {
            return Outcome::blocked(current, single(Reason::ScaleFromZeroDisabled), false);
        }
    }

    // C2 scale-down floor and active sessions.
    if action == ActionKind::ScaleDown {
        if desired == 0 && !policy.allow_scale_to_zero {
            desired = policy.min_replicas.max(1);
            let fired = desired == current;
            if let Some(steps) = recorder.steps() {
                steps.gates.push(Gate::ScaleToZero { min_replicas: policy.min_replicas, desired, fired });
            }
            if fired {
                return Outcome::hold(current, Reason::ScaleToZeroDisabled);
            }
        }
        let block = contract.continuity.block_scale_down_with_active;
        let active = request
            .continuity
            .as_ref()
            .is_some_and(|o| u128::from(o.active_sessions) + u128::from(o.active_streams) > 0);
        let fired = block && active;
        if let Some(steps) = recorder.steps() {
            steps.gates.push(Gate::ActiveSessions {
                block_scale_down_with_active: block,
                active_sessions: request.continuity.as_ref().map(|o| o.active_sessions),
                active_streams: request.continuity.as_ref().map(|o| o.active_streams),
                fired,
            });
        }
        if fired {
            return Outcome::blocked(current, single(Reason::ActiveSessionsBlockDrain), true);
        }
    }

    // C3 cooldown: exactly the cooldown elapsed passes.
    if let Some(last) = checked.last_action_at {
        let (field, cooldown) = if action == ActionKind::ScaleUp {
            (CooldownField::ScaleUpCooldownS, policy.scale_up_cooldown_s)
        } else {
            (CooldownField::ScaleDownCooldownS, policy.scale_down_cooldown_s)
        };
        let elapsed = i128::from(checked.now) - i128::from(last);
        let needed = i128::from(cooldown) * MICROS_PER_SECOND;
        let fired = elapsed < needed;
        if let Some(steps) = recorder.steps() {
            steps.gates.push(Gate::Cooldown {
                cooldown: field,
                cooldown_s: cooldown,
                last_action_at: time::format_utc(last),
                elapsed_us: micros(elapsed),
                remaining_us: micros(needed - elapsed),
                fired,
            });
        }
        if fired {
            return Outcome::hold(current, Reason::Cooldown);
        }
    }

    // C4 growth feasibility.
    if action == ActionKind::ScaleUp {
        let reasons = growth_reasons(checked, desired - current, exhausted, recorder);
        if !reasons.is_empty() {
            return Outcome::blocked(current, reasons, false);
        }
    }

    // C5 drain bound.
    let drain_required = action == ActionKind::ScaleDown && contract.continuity.drain_required;
    let fired = drain_required && policy.drain_seconds > contract.continuity.max_drain_seconds;
    if action == ActionKind::ScaleDown
        && let Some(steps) = recorder.steps()
    {
        steps.gates.push(Gate::DrainBound {
            drain_required: contract.continuity.drain_required,
            drain_seconds: policy.drain_seconds,
            max_drain_seconds: contract.continuity.max_drain_seconds,
            fired,
        });
    }
    if fired {
        return Outcome::blocked(current, single(Reason::DrainRequired), true);
    }

    // C6.
    Outcome { desired, action, reasons: single(Reason::TargetTracking), drain_required }
}

/// A non-negative count of microseconds (0 for a negative one).
fn micros(value: i128) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

/// C4: whether `additional` replicas fit capacity, quotas and engine authority.
fn growth_reasons(checked: &Checked<'_>, additional: u64, exhausted: &Exhausted, recorder: &mut Recorder) -> Reasons {
    let request = checked.request;
    let contract = &request.contract;
    let now = checked.now;
    let added = additional;
    let additional = u128::from(additional);
    let mut reasons = Reasons::default();
    let capacity = |axis| request.capacities.iter().zip(&checked.capacities).find(|(o, _)| o.axis == axis);
    // INVARIANT: additional <= 10^4 and every amount <= 10^15, so a product plus an amount is
    // below 2^64; `wide` saturates only out of that range.
    let wide = |value: u128| u64::try_from(value).unwrap_or(u64::MAX);
    let (mut demands, mut quotas, mut engine) = (Vec::new(), Vec::new(), Vec::new());

    // 1. Demands, in declaration order; the first that fails stops the loop. A demand axis
    //    outside `required_capacity_axes` skipped phase A, so its evidence is checked here (§10.1).
    for demand in &contract.replica_demands {
        let needed = additional * u128::from(demand.per_replica);
        let (status, observation) = match capacity(demand.axis) {
            None => {
                reasons.push(Reason::CapacityMissing);
                (DemandStatus::Missing, None)
            }
            Some((_, window)) if !window.is_fresh(now) => {
                reasons.push(Reason::CapacityStale);
                (DemandStatus::Stale, None)
            }
            Some((o, _)) => {
                let available = u128::from(o.allocatable.saturating_sub(o.reserved));
                if needed > available {
                    reasons.push(Reason::CapacityExhausted);
                    (DemandStatus::Exhausted, Some(o))
                } else {
                    (DemandStatus::Fits, Some(o))
                }
            }
        };
        if recorder.records() {
            let available = observation.map(|o| o.allocatable.saturating_sub(o.reserved));
            demands.push(DemandCheck {
                axis: demand.axis,
                per_replica: demand.per_replica,
                needed: wide(needed),
                status,
                allocatable: observation.map(|o| o.allocatable),
                reserved: observation.map(|o| o.reserved),
                available,
                shortfall: available.map(|a| wide(needed.saturating_sub(u128::from(a)))),
            });
        }
        if status != DemandStatus::Fits {
            break;
        }
    }
    // 2, 3. Quotas already at their limit.
    if exhausted.provider {
        reasons.push(Reason::ProviderQuotaExhausted);
    }
    if exhausted.local {
        reasons.push(Reason::CapacityExhausted);
    }
    // 4. Projected use of each binding; the limit is never multiplied by a replica count.
    for binding in &contract.quotas {
        let observation = request.quotas.iter().find(|o| o.quota_ref == binding.quota_ref);
        let projected = observation.map(|o| u128::from(o.used) + additional * u128::from(binding.per_replica));
        let over = observation.zip(projected).is_some_and(|(o, projected)| projected > u128::from(o.limit));
        if binding.scope == QuotaScope::ProviderGlobal {
            if binding.multiplicative {
                reasons.push(Reason::ProviderQuotaNotMultiplicative);
            }
            if over {
                reasons.push(Reason::ProviderQuotaExhausted);
            }
        } else if over {
            reasons.push(Reason::CapacityExhausted);
        }
        // A binding without an observation (unreachable: phase A blocks first) is not listed.
        if recorder.records()
            && let Some((o, projected)) = observation.zip(projected)
        {
            quotas.push(QuotaCheck {
                quota_ref: binding.quota_ref.clone(),
                scope: binding.scope,
                axis: binding.axis,
                multiplicative: binding.multiplicative,
                per_replica: binding.per_replica,
                used: o.used,
                limit: o.limit,
                projected: wide(projected),
                over,
            });
        }
    }
    // 5. Engine authority.
    for &axis in &contract.engine_authority_axes {
        let Some((o, _)) = capacity(axis) else { continue };
        let saturated = o.allocatable <= o.reserved;
        if recorder.records() {
            engine.push(EngineCheck {
                axis,
                allocatable: o.allocatable,
                reserved: o.reserved,
                available: o.allocatable.saturating_sub(o.reserved),
                saturated,
            });
        }
        if saturated {
            reasons.push(Reason::EngineAuthoritySaturated);
            break;
        }
    }
    if let Some(steps) = recorder.steps() {
        steps.gates.push(Gate::Growth {
            additional: added,
            capacity: demands,
            provider_quota_at_limit: exhausted.provider,
            local_quota_at_limit: exhausted.local,
            quotas,
            engine_authority: engine,
            fired: !reasons.is_empty(),
        });
    }
    reasons
}

/// Caps reasons and evidence, and attaches the identities.
fn finish(checked: &Checked<'_>, current: u64, outcome: Outcome, mut evidence: Vec<Evidence>, now: i64) -> Decision {
    let Outcome { desired, action, reasons, drain_required } = outcome;
    let mut reasons = reasons.0;
    if action == ActionKind::Blocked && reasons.is_empty() {
        reasons.push(Reason::InvalidBounds);
    }
    reasons.truncate(MAX_REASONS);
    evidence.truncate(MAX_EVIDENCE);
    let evaluated_at = time::format_utc(now);
    let (decision_id, decision_digest) = identity::decision(&DecisionFields {
        contract_id: &checked.contract_id,
        evaluated_at: &evaluated_at,
        current_replicas: current,
        desired_replicas: desired,
        action,
        reasons: &reasons,
        drain_required,
        evidence: &evidence,
    });
    Decision {
        schema_version: crate::SCHEMA_VERSION.to_owned(),
        decision_id,
        decision_digest,
        contract_id: checked.contract_id.clone(),
        evaluated_at,
        current_replicas: current,
        desired_replicas: desired,
        action,
        reasons,
        drain_required,
        evidence,
    }
}
