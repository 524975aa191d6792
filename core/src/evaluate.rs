//! The algorithm of SPEC §7: evidence (phase A), target tracking (B) and gates (C).

use crate::canonical::{Canon, content_digest};
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

/// Evaluates a checked request. Total: every branch yields a decision.
pub(crate) fn decide(checked: &Checked<'_>) -> Decision {
    let request = checked.request;
    let now = checked.now;
    // INVARIANT: validation bounded current_replicas to 0..=10000.
    let current = request.current_replicas.unsigned_abs();
    let mut evidence = Vec::new();
    let mut reasons = Reasons::default();
    let exhausted = gather_evidence(checked, &mut evidence, &mut reasons);

    let outcome = if reasons.is_empty() {
        track_and_gate(checked, current, &exhausted)
    } else {
        Outcome::blocked(current, reasons, false)
    };
    finish(checked, current, outcome, evidence, now)
}

/// Phase A: one evidence entry per piece the contract names; any reason blocks.
fn gather_evidence(checked: &Checked<'_>, evidence: &mut Vec<Evidence>, reasons: &mut Reasons) -> Exhausted {
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
            }
            Some((o, window)) => {
                let (status, code) = if window.is_fresh(now) {
                    (EvidenceStatus::Accepted, axis.as_str())
                } else {
                    any_stale = true;
                    (EvidenceStatus::Stale, Reason::CapacityStale.as_str())
                };
                evidence.push(observed(EvidenceKind::Capacity, &o.source_ref, &o.source_digest, status, code));
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
            }
            Some(o) => {
                evidence.push(observed(
                    EvidenceKind::Safety,
                    &o.source_ref,
                    &o.source_digest,
                    EvidenceStatus::Accepted,
                    "safety",
                ));
                if o.overloaded {
                    reasons.push(Reason::OverloadSheddingActive);
                }
                if o.noisy_neighbor {
                    reasons.push(Reason::NoisyNeighbor);
                }
            }
        }
    }

    // A6 clock.
    if checked.last_action_at.is_some_and(|last| last > now) {
        reasons.push(Reason::Cooldown);
    }
    exhausted
}

fn set(flags: &mut [bool; 5], which: usize) {
    if let Some(flag) = flags.get_mut(which) {
        *flag = true;
    }
}

/// Phases B and C, on evidence that phase A accepted.
fn track_and_gate(checked: &Checked<'_>, current: u64, exhausted: &Exhausted) -> Outcome {
    let request = checked.request;
    let contract = &request.contract;
    let policy = &contract.policy;
    // INVARIANT: phase A accepted a signal, and validation made its value non-negative.
    let value = request.signal.as_ref().map_or(0, |s| s.value.unsigned_abs());

    // B. Target tracking, in exact integer arithmetic (target >= 1 by validation).
    let mut desired = value.div_ceil(policy.target.max(1));
    let floor = if policy.allow_scale_to_zero { policy.min_replicas } else { policy.min_replicas.max(1) };
    if value == 0 && policy.allow_scale_to_zero {
        desired = 0;
    }
    let raw = floor.max(policy.max_replicas.min(desired));
    let action = match raw.cmp(&current) {
        std::cmp::Ordering::Greater => {
            desired = current.saturating_add(policy.scale_up_step).min(raw);
            ActionKind::ScaleUp
        }
        std::cmp::Ordering::Less => {
            desired = current.saturating_sub(policy.scale_down_step).max(raw);
            ActionKind::ScaleDown
        }
        std::cmp::Ordering::Equal => return Outcome::hold(current, Reason::AtTarget),
    };

    // C1 scale from zero.
    if action == ActionKind::ScaleUp && current == 0 && !policy.allow_scale_from_zero {
        return Outcome::blocked(current, single(Reason::ScaleFromZeroDisabled), false);
    }

    // C2 scale-down floor and active sessions.
    if action == ActionKind::ScaleDown {
        if desired == 0 && !policy.allow_scale_to_zero {
            desired = policy.min_replicas.max(1);
            if desired == current {
                return Outcome::hold(current, Reason::ScaleToZeroDisabled);
            }
        }
        let active = request
            .continuity
            .as_ref()
            .is_some_and(|o| u128::from(o.active_sessions) + u128::from(o.active_streams) > 0);
        if contract.continuity.block_scale_down_with_active && active {
            return Outcome::blocked(current, single(Reason::ActiveSessionsBlockDrain), true);
        }
    }

    // C3 cooldown: exactly the cooldown elapsed passes.
    if let Some(last) = checked.last_action_at {
        let cooldown =
            if action == ActionKind::ScaleUp { policy.scale_up_cooldown_s } else { policy.scale_down_cooldown_s };
        let elapsed = i128::from(checked.now) - i128::from(last);
        if elapsed < i128::from(cooldown) * MICROS_PER_SECOND {
            return Outcome::hold(current, Reason::Cooldown);
        }
    }

    // C4 growth feasibility.
    if action == ActionKind::ScaleUp {
        let reasons = growth_reasons(checked, desired - current, exhausted);
        if !reasons.is_empty() {
            return Outcome::blocked(current, reasons, false);
        }
    }

    // C5 drain bound.
    let drain_required = action == ActionKind::ScaleDown && contract.continuity.drain_required;
    if drain_required && policy.drain_seconds > contract.continuity.max_drain_seconds {
        return Outcome::blocked(current, single(Reason::DrainRequired), true);
    }

    // C6.
    Outcome { desired, action, reasons: single(Reason::TargetTracking), drain_required }
}

/// C4: whether `additional` replicas fit capacity, quotas and engine authority.
fn growth_reasons(checked: &Checked<'_>, additional: u64, exhausted: &Exhausted) -> Reasons {
    let request = checked.request;
    let contract = &request.contract;
    let now = checked.now;
    let additional = u128::from(additional);
    let mut reasons = Reasons::default();
    let capacity = |axis| request.capacities.iter().zip(&checked.capacities).find(|(o, _)| o.axis == axis);

    // 1. Demands, in declaration order; the first that fails stops the loop. A demand axis
    //    outside `required_capacity_axes` skipped phase A, so its evidence is checked here (§10.1).
    for demand in &contract.replica_demands {
        match capacity(demand.axis) {
            None => {
                reasons.push(Reason::CapacityMissing);
                break;
            }
            Some((_, window)) if !window.is_fresh(now) => {
                reasons.push(Reason::CapacityStale);
                break;
            }
            Some((o, _)) => {
                let available = u128::from(o.allocatable.saturating_sub(o.reserved));
                if additional * u128::from(demand.per_replica) > available {
                    reasons.push(Reason::CapacityExhausted);
                    break;
                }
            }
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
        let over = observation
            .is_some_and(|o| u128::from(o.used) + additional * u128::from(binding.per_replica) > u128::from(o.limit));
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
    }
    // 5. Engine authority.
    for &axis in &contract.engine_authority_axes {
        if capacity(axis).is_some_and(|(o, _)| o.allocatable <= o.reserved) {
            reasons.push(Reason::EngineAuthoritySaturated);
            break;
        }
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
