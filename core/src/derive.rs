//! The derivation of a decision (issue 17): the numbers SPEC §7 compared on the way to it, as
//! data. It is recorded by the one decision path of `evaluate.rs` (a [`Recorder`] argument that
//! records nothing for [`crate::evaluate`]), never computed beside it, so it cannot disagree with the
//! decision; its final fields are copied from the decision itself.

use std::fmt::Write;

use serde::{Deserialize, Serialize};

use crate::model::Decision;
use crate::vocab::{ActionKind, CapacityAxis, EvidenceKind, EvidenceStatus, QuotaScope, Reason, SignalKind, wire_enum};

/// How a decision was reached: each evidence verdict, the target arithmetic and each gate with
/// its numbers, in the order SPEC §7 evaluates them, then the decision's outcome.
///
/// Produced by [`crate::derive()`]; its JSON form ([`Derivation::to_json`]) is compact, with the
/// fields in the order written here. Times are UTC text as in `evaluated_at` (SPEC §8). Every
/// integer is exact; the products of the growth gate can reach 1.0001 × 10^19, beyond a
/// JavaScript number's exact range (2^53).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Derivation {
    /// The `decision_id` of the decision this derives.
    pub decision_id: String,
    /// The `decision_digest` of the decision this derives.
    pub decision_digest: String,
    /// The evaluated contract's computed id.
    pub contract_id: String,
    /// `now` in UTC, as the decision's `evaluated_at`.
    pub evaluated_at: String,
    /// Replicas running at evaluation.
    pub current_replicas: u64,
    /// Phase A: one verdict per evidence entry of the decision, in the same order.
    pub evidence: Vec<EvidenceVerdict>,
    /// Phase A: the checks that add a reason without an evidence entry of their own, in
    /// evaluation order.
    pub checks: Vec<Check>,
    /// Phase B: the target arithmetic; `None` when phase A blocked (A7).
    pub target: Option<Target>,
    /// Phase C: each gate that applied to the tracked action, in SPEC order; the last one fired
    /// when the decision is not the tracked one.
    pub gates: Vec<Gate>,
    /// The decision's action.
    pub action: ActionKind,
    /// The decision's `desired_replicas`.
    pub desired_replicas: u64,
    /// The decision's reasons, in its order.
    pub reasons: Vec<Reason>,
    /// The decision's `drain_required`.
    pub drain_required: bool,
}

/// How phase A judged one evidence entry (SPEC §7 A1–A5).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct EvidenceVerdict {
    /// The entry's kind.
    pub kind: EvidenceKind,
    /// The entry's `ref`.
    #[serde(rename = "ref")]
    pub reference: String,
    /// The entry's status.
    pub status: EvidenceStatus,
    /// The entry's code.
    pub code: String,
    /// The observation's `observed_at` in UTC; `None` when it was missing. Fresh means
    /// `observed_at <= now < expires_at` (SPEC §5).
    pub observed_at: Option<String>,
    /// The observation's `expires_at` in UTC; `None` when it was missing.
    pub expires_at: Option<String>,
    /// For `signal_mismatch` and `quota_scope_mismatch`: what the contract expects and what
    /// the observation reports; otherwise `None`.
    pub mismatch: Option<Mismatch>,
}

/// What the contract expects against what an observation reports.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Mismatch {
    /// The policy's `target_signal`, or the binding's `scope`.
    pub expected: String,
    /// The observed `signal`, or the observation's `scope`.
    pub found: String,
}

/// A phase-A check that adds a reason without an evidence entry of its own. The JSON form is
/// an object whose `check` field names the variant (`continuity_stale`, `overloaded`,
/// `noisy_neighbor`, `last_action_in_future`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "check", rename_all = "snake_case", deny_unknown_fields)]
pub enum Check {
    /// A4, stateless mode: a supplied continuity observation is not fresh; adds
    /// `continuity_stale`.
    ContinuityStale {
        /// Its `observed_at` in UTC.
        observed_at: String,
        /// Its `expires_at` in UTC.
        expires_at: String,
    },
    /// A5: fresh safety evidence reports `overloaded`; adds `overload_shedding_active`.
    Overloaded {
        /// The observation's `reason_ref`.
        reason_ref: Option<String>,
    },
    /// A5: fresh safety evidence reports `noisy_neighbor`; adds `noisy_neighbor`.
    NoisyNeighbor {
        /// The observation's `reason_ref`.
        reason_ref: Option<String>,
    },
    /// A6: `last_action_at` lies after `now`; adds `cooldown`.
    LastActionInFuture {
        /// `last_action_at` in UTC.
        last_action_at: String,
        /// How far after `now`, in microseconds.
        ahead_us: u64,
    },
}

/// Phase B, target tracking (SPEC §7 B), with its numbers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Target {
    /// The tracked signal (`policy.target_signal`).
    pub signal: SignalKind,
    /// The signal's value.
    pub value: u64,
    /// `policy.target`, the value one replica should carry.
    pub target: u64,
    /// `ceil(value / target)`, exact.
    pub ceil: u64,
    /// `policy.min_replicas`.
    pub min_replicas: u64,
    /// `min_replicas`, raised to 1 unless `allow_scale_to_zero`.
    pub floor: u64,
    /// `policy.max_replicas`.
    pub max_replicas: u64,
    /// Which bound moved `ceil`, if one did.
    pub clamp: Option<Bound>,
    /// `max(floor, min(max_replicas, ceil))`.
    pub raw: u64,
    /// `raw` against `current_replicas`: `scale_up`, `scale_down` or `hold` (at target).
    pub action: ActionKind,
    /// The step cap of a scale-up or scale-down; `None` on `hold`.
    pub step: Option<StepCap>,
    /// The count after the step cap (`current_replicas` on `hold`), before any gate.
    pub desired: u64,
}

/// One step cap: `desired = min(current + scale_up_step, raw)` or
/// `max(current - scale_down_step, raw)`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct StepCap {
    /// Which policy field.
    pub name: StepField,
    /// Its value.
    pub size: u64,
    /// `current + size`, or `current - size` (not below 0).
    pub limit: u64,
    /// Whether the limit, not `raw`, decided the count.
    pub capped: bool,
}

wire_enum! {
    /// The bound that moved `ceil` in [`Target`].
    Bound {
        /// Raised to the floor.
        Floor = "floor",
        /// Lowered to `max_replicas`.
        MaxReplicas = "max_replicas",
    }
}

wire_enum! {
    /// The policy field of a [`StepCap`].
    StepField {
        /// `policy.scale_up_step`.
        ScaleUpStep = "scale_up_step",
        /// `policy.scale_down_step`.
        ScaleDownStep = "scale_down_step",
    }
}

wire_enum! {
    /// The policy field of a cooldown [`Gate`].
    CooldownField {
        /// `policy.scale_up_cooldown_s`.
        ScaleUpCooldownS = "scale_up_cooldown_s",
        /// `policy.scale_down_cooldown_s`.
        ScaleDownCooldownS = "scale_down_cooldown_s",
    }
}

wire_enum! {
    /// How one replica demand fared in the growth gate (C4 step 1).
    DemandStatus {
        /// `needed <= available`.
        Fits = "fits",
        /// `needed > available`: `capacity_exhausted`.
        Exhausted = "exhausted",
        /// No observation of the axis (SPEC §10.1): `capacity_missing`.
        Missing = "missing",
        /// The axis's observation is not fresh (SPEC §10.1): `capacity_stale`.
        Stale = "stale",
    }
}

/// A gate of phase C (SPEC §7 C1–C5) with its numbers. `fired` says whether it returned the
/// decision. The JSON form is an object whose `gate` field names the variant
/// (`scale_from_zero`, `scale_to_zero`, `active_sessions`, `cooldown`, `growth`, `drain_bound`).
///
/// A gate is listed when it applies: C1 on a scale-up from zero, C2(a) on a scale-down to zero
/// without `allow_scale_to_zero`, C2(b) on every scale-down, C3 when `last_action_at` is given,
/// C4 on every scale-up, C5 on every scale-down.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "gate", rename_all = "snake_case", deny_unknown_fields)]
pub enum Gate {
    /// C1: a scale-up from 0; fires (`blocked`, `scale_from_zero_disabled`) without
    /// `allow_scale_from_zero`.
    ScaleFromZero {
        /// `policy.allow_scale_from_zero`.
        allow_scale_from_zero: bool,
        /// Whether it returned the decision.
        fired: bool,
    },
    /// C2(a): a scale-down to 0 without `allow_scale_to_zero` is raised to `max(1,
    /// min_replicas)`; fires (`hold`, `scale_to_zero_disabled`) when that is the current count.
    ScaleToZero {
        /// `policy.min_replicas`.
        min_replicas: u64,
        /// `max(1, min_replicas)`, the new desired count.
        desired: u64,
        /// Whether it returned the decision.
        fired: bool,
    },
    /// C2(b): fires (`blocked`, `active_sessions_block_drain`, drain required) when a
    /// continuity observation is present, `block_scale_down_with_active`, and
    /// `active_sessions + active_streams > 0`.
    ActiveSessions {
        /// `continuity.block_scale_down_with_active` of the contract.
        block_scale_down_with_active: bool,
        /// The observation's `active_sessions`; `None` without a continuity observation.
        active_sessions: Option<u64>,
        /// The observation's `active_streams`; `None` without a continuity observation.
        active_streams: Option<u64>,
        /// Whether it returned the decision.
        fired: bool,
    },
    /// C3: fires (`hold`, `cooldown`) when `now - last_action_at < cooldown`.
    Cooldown {
        /// Which cooldown: the scale-up one for a scale-up, else the scale-down one.
        cooldown: CooldownField,
        /// Its value, in seconds.
        cooldown_s: u64,
        /// `last_action_at` in UTC.
        last_action_at: String,
        /// `now - last_action_at`, in microseconds.
        elapsed_us: u64,
        /// `cooldown - elapsed`, in microseconds; 0 once the cooldown has elapsed.
        remaining_us: u64,
        /// Whether it returned the decision.
        fired: bool,
    },
    /// C4: whether the added replicas fit capacity, quotas and engine authority; fires
    /// (`blocked`) with the reasons its steps found.
    Growth {
        /// `desired - current`, the replicas to add.
        additional: u64,
        /// Step 1: each replica demand in declaration order, up to the first that fails.
        capacity: Vec<DemandCheck>,
        /// Step 2: a provider-global quota accepted in phase A had `used >= limit`
        /// (`provider_quota_exhausted`).
        provider_quota_at_limit: bool,
        /// Step 3: another quota accepted in phase A had `used >= limit` (`capacity_exhausted`).
        local_quota_at_limit: bool,
        /// Step 4: each quota binding in declaration order.
        quotas: Vec<QuotaCheck>,
        /// Step 5: each engine authority axis in order, up to the first saturated one.
        engine_authority: Vec<EngineCheck>,
        /// Whether it returned the decision.
        fired: bool,
    },
    /// C5: on a scale-down, a drain is required when the contract's continuity says so; fires
    /// (`blocked`, `drain_required`) when `drain_seconds > max_drain_seconds` then.
    DrainBound {
        /// `continuity.drain_required` of the contract.
        drain_required: bool,
        /// `policy.drain_seconds`.
        drain_seconds: u64,
        /// `continuity.max_drain_seconds`.
        max_drain_seconds: u64,
        /// Whether it returned the decision.
        fired: bool,
    },
}

/// One replica demand against its axis (C4 step 1): `needed = additional × per_replica` against
/// `available = allocatable - reserved` (`used` is not headroom, SPEC §5).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct DemandCheck {
    /// The demand's axis.
    pub axis: CapacityAxis,
    /// The demand per replica.
    pub per_replica: u64,
    /// `additional × per_replica`.
    pub needed: u64,
    /// How it fared.
    pub status: DemandStatus,
    /// The observation's `allocatable`; `None` when missing or stale (not read).
    pub allocatable: Option<u64>,
    /// The observation's `reserved`; `None` when missing or stale.
    pub reserved: Option<u64>,
    /// `allocatable - reserved`; `None` when missing or stale.
    pub available: Option<u64>,
    /// `needed - available` when positive, else 0; `None` when missing or stale.
    pub shortfall: Option<u64>,
}

/// One quota binding's projection (C4 step 4): `used + additional × per_replica` against the
/// limit, which is never multiplied by a replica count.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct QuotaCheck {
    /// The binding's `quota_ref`.
    pub quota_ref: String,
    /// The binding's scope.
    pub scope: QuotaScope,
    /// The binding's axis.
    pub axis: CapacityAxis,
    /// The binding's `multiplicative` flag (a provider-global binding that sets it adds
    /// `provider_quota_not_multiplicative`; it changes no arithmetic).
    pub multiplicative: bool,
    /// The binding's demand per replica.
    pub per_replica: u64,
    /// The observation's `used`.
    pub used: u64,
    /// The observation's `limit`.
    pub limit: u64,
    /// `used + additional × per_replica`.
    pub projected: u64,
    /// `projected > limit`: `provider_quota_exhausted` for a provider-global binding, else
    /// `capacity_exhausted`.
    pub over: bool,
}

/// One engine authority axis (C4 step 5): saturated when `allocatable - reserved <= 0`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct EngineCheck {
    /// The axis.
    pub axis: CapacityAxis,
    /// The observation's `allocatable`.
    pub allocatable: u64,
    /// The observation's `reserved`.
    pub reserved: u64,
    /// `allocatable - reserved`.
    pub available: u64,
    /// `available == 0`: `engine_authority_saturated`.
    pub saturated: bool,
}

/// Where the decision path writes its steps: nowhere ([`Recorder::silent`], for
/// [`crate::evaluate`]) or into [`Steps`] ([`Recorder::recording`], for [`crate::derive()`]).
///
/// One concrete type rather than a type parameter, so that the decision path is compiled once:
/// a second, recording instantiation cost the component 4.7 KB (issue 29). The silent path tests
/// whether it records where the recording branches used to be compiled out of it.
pub(crate) struct Recorder(Option<Steps>);

impl Recorder {
    /// Records nothing.
    pub(crate) const fn silent() -> Self {
        Self(None)
    }

    /// Records every step.
    pub(crate) fn recording() -> Self {
        Self(Some(Steps::default()))
    }

    /// The record to write to, or `None` when nothing is recorded.
    #[inline(always)]
    pub(crate) fn steps(&mut self) -> Option<&mut Steps> {
        self.0.as_mut()
    }

    /// Whether [`Recorder::steps`] answers `Some`.
    #[inline(always)]
    pub(crate) const fn records(&self) -> bool {
        self.0.is_some()
    }

    /// The derivation of `decision`, which the path that recorded into this returned (a silent
    /// recorder gives the decision's outcome without steps).
    pub(crate) fn into_derivation(self, decision: &Decision) -> Derivation {
        self.0.unwrap_or_default().into_derivation(decision)
    }
}

/// Phase-A details of one evidence entry, kept in step with the decision's evidence list.
pub(crate) struct EvidenceDetail {
    pub window: Option<(i64, i64)>,
    pub mismatch: Option<Mismatch>,
}

/// What the decision path recorded; [`Steps::into_derivation`] joins it with the decision.
#[derive(Default)]
pub(crate) struct Steps {
    pub evidence: Vec<EvidenceDetail>,
    pub checks: Vec<Check>,
    pub target: Option<Target>,
    pub gates: Vec<Gate>,
}

impl Steps {
    /// The derivation of `decision`, which the path that recorded these steps returned.
    pub(crate) fn into_derivation(self, decision: &Decision) -> Derivation {
        let evidence = decision
            .evidence
            .iter()
            .zip(self.evidence)
            .map(|(entry, detail)| {
                let (observed_at, expires_at) = match detail.window {
                    Some((observed, expires)) => {
                        (Some(crate::time::format_utc(observed)), Some(crate::time::format_utc(expires)))
                    }
                    None => (None, None),
                };
                EvidenceVerdict {
                    kind: entry.kind,
                    reference: entry.reference.clone(),
                    status: entry.status,
                    code: entry.code.clone(),
                    observed_at,
                    expires_at,
                    mismatch: detail.mismatch,
                }
            })
            .collect();
        Derivation {
            decision_id: decision.decision_id.clone(),
            decision_digest: decision.decision_digest.clone(),
            contract_id: decision.contract_id.clone(),
            evaluated_at: decision.evaluated_at.clone(),
            current_replicas: decision.current_replicas,
            evidence,
            checks: self.checks,
            target: self.target,
            gates: self.gates,
            action: decision.action,
            desired_replicas: decision.desired_replicas,
            reasons: decision.reasons.clone(),
            drain_required: decision.drain_required,
        }
    }
}

/// Seconds from microseconds: `30`, `0.5`, `0.000001`.
fn seconds(micros: u64) -> String {
    let (whole, fraction) = (micros / 1_000_000, micros % 1_000_000);
    if fraction == 0 {
        format!("{whole}")
    } else {
        let digits = format!("{fraction:06}");
        format!("{whole}.{}", digits.trim_end_matches('0'))
    }
}

fn list(reasons: &[Reason]) -> String {
    reasons.iter().map(|r| r.as_str()).collect::<Vec<_>>().join(", ")
}

fn or_none(text: Option<&str>) -> &str {
    text.unwrap_or("none")
}

impl Derivation {
    /// The derivation as compact JSON: snake_case keys in field order, integers as JSON
    /// numbers, `null` for an absent value. Deterministic: the same derivation, the same bytes.
    ///
    /// Byte for byte what `serde_json::to_string` writes for it (the core's tests hold it to
    /// that), written directly as `decision_to_json` is: serde's generic writer cost a third of
    /// a `derive_json` call through the component and about 15 KB of it.
    pub fn to_json(&self) -> String {
        let mut out = Out { text: String::with_capacity(1024 + 256 * self.evidence.len()), first: true };
        out.open('{');
        out.str("decision_id", &self.decision_id);
        out.str("decision_digest", &self.decision_digest);
        out.str("contract_id", &self.contract_id);
        out.str("evaluated_at", &self.evaluated_at);
        out.uint("current_replicas", self.current_replicas);
        out.list("evidence", &self.evidence, |out, v| {
            out.str("kind", v.kind.as_str());
            out.str("ref", &v.reference);
            out.str("status", v.status.as_str());
            out.str("code", &v.code);
            out.opt_str("observed_at", v.observed_at.as_deref());
            out.opt_str("expires_at", v.expires_at.as_deref());
            out.key("mismatch");
            match &v.mismatch {
                Some(m) => {
                    out.open('{');
                    out.str("expected", &m.expected);
                    out.str("found", &m.found);
                    out.close('}');
                }
                None => out.text.push_str("null"),
            }
        });
        out.list("checks", &self.checks, write_check);
        out.key("target");
        match &self.target {
            Some(t) => {
                out.open('{');
                write_target_json(t, &mut out);
                out.close('}');
            }
            None => out.text.push_str("null"),
        }
        out.list("gates", &self.gates, write_gate_json);
        out.str("action", self.action.as_str());
        out.uint("desired_replicas", self.desired_replicas);
        out.key("reasons");
        out.open('[');
        for reason in &self.reasons {
            out.item();
            crate::canonical::write_json_string(reason.as_str(), false, &mut out.text);
        }
        out.close(']');
        out.bool("drain_required", self.drain_required);
        out.close('}');
        out.text
    }

    /// The derivation as plain text, one step a line, in evaluation order: the words every
    /// face prints (for example `target: ceil(640 / 100) = 7`, `step cap: 3 + scale_up_step 2
    /// = 5 (from 7)`, `capacity cpu_milli: 2 × 500 = 1000 needed, 4000 available (10000
    /// allocatable - 6000 reserved)`), ending with the decision.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        for verdict in &self.evidence {
            let _ =
                write!(out, "evidence {} {}: {} ({})", verdict.kind, verdict.reference, verdict.status, verdict.code);
            if let Some(m) = &verdict.mismatch {
                let _ = write!(out, ": found {}, expected {}", m.found, m.expected);
            }
            if verdict.status == EvidenceStatus::Stale {
                let _ = write!(
                    out,
                    ": now {} outside [observed_at {}, expires_at {})",
                    self.evaluated_at,
                    or_none(verdict.observed_at.as_deref()),
                    or_none(verdict.expires_at.as_deref())
                );
            }
            out.push('\n');
        }
        for check in &self.checks {
            let _ = match check {
                Check::ContinuityStale { observed_at, expires_at } => writeln!(
                    out,
                    "check continuity_stale: stateless continuity observation, now {} outside [observed_at {observed_at}, expires_at {expires_at})",
                    self.evaluated_at
                ),
                Check::Overloaded { reason_ref } => writeln!(
                    out,
                    "check overload_shedding_active: safety reports overloaded (reason_ref {})",
                    or_none(reason_ref.as_deref())
                ),
                Check::NoisyNeighbor { reason_ref } => writeln!(
                    out,
                    "check noisy_neighbor: safety reports a noisy neighbor (reason_ref {})",
                    or_none(reason_ref.as_deref())
                ),
                Check::LastActionInFuture { last_action_at, ahead_us } => writeln!(
                    out,
                    "check cooldown: last_action_at {last_action_at} is {} s after now",
                    seconds(*ahead_us)
                ),
            };
        }
        if let Some(target) = &self.target {
            self.write_target(target, &mut out);
        }
        for gate in &self.gates {
            write_gate(gate, self.current_replicas, &mut out);
        }
        let drain = if self.drain_required { ", drain required" } else { "" };
        let _ = match self.action {
            ActionKind::ScaleUp | ActionKind::ScaleDown => writeln!(
                out,
                "decision: {} {} -> {} ({}){drain}",
                self.action,
                self.current_replicas,
                self.desired_replicas,
                list(&self.reasons)
            ),
            ActionKind::Hold | ActionKind::Blocked => {
                writeln!(out, "decision: {} at {} ({}){drain}", self.action, self.current_replicas, list(&self.reasons))
            }
        };
        out
    }

    fn write_target(&self, t: &Target, out: &mut String) {
        let _ = writeln!(out, "target: ceil({} / {}) = {}", t.value, t.target, t.ceil);
        let _ = write!(out, "bounds: [{}, {}]", t.floor, t.max_replicas);
        if t.floor != t.min_replicas {
            let _ = write!(out, " (min_replicas {} raised to 1)", t.min_replicas);
        }
        let _ = match t.clamp {
            Some(Bound::MaxReplicas) => writeln!(out, ": {} lowered to max_replicas {}", t.ceil, t.raw),
            Some(Bound::Floor) => writeln!(out, ": {} raised to the floor {}", t.ceil, t.raw),
            None => writeln!(out),
        };
        let current = self.current_replicas;
        let _ = match &t.step {
            None => writeln!(out, "at target: {} = current {current}", t.raw),
            Some(step) => {
                let sum = match step.name {
                    StepField::ScaleUpStep => format!("{current} + {} {} = {}", step.name, step.size, step.limit),
                    StepField::ScaleDownStep if step.size > current => {
                        format!("max(0, {current} - {} {}) = {}", step.name, step.size, step.limit)
                    }
                    StepField::ScaleDownStep => format!("{current} - {} {} = {}", step.name, step.size, step.limit),
                };
                let within = if step.name == StepField::ScaleUpStep { ">=" } else { "<=" };
                if step.capped {
                    writeln!(out, "step cap: {sum} (from {})", t.raw)
                } else {
                    writeln!(out, "step cap: {sum} {within} {}, not capped", t.raw)
                }
            }
        };
    }
}

fn verdict(fired: bool, outcome: &str) -> &str {
    if fired { outcome } else { "passes" }
}

fn write_gate(gate: &Gate, current: u64, out: &mut String) {
    let _ = match gate {
        Gate::ScaleFromZero { allow_scale_from_zero, fired } => writeln!(
            out,
            "scale from zero: allow_scale_from_zero {allow_scale_from_zero}: {}",
            verdict(*fired, "blocked")
        ),
        Gate::ScaleToZero { min_replicas, desired, fired } => writeln!(
            out,
            "scale to zero: not allowed, 0 raised to max(1, min_replicas {min_replicas}) = {desired}: {}",
            verdict(*fired, "hold")
        ),
        Gate::ActiveSessions { block_scale_down_with_active, active_sessions, active_streams, fired } => {
            match (active_sessions, active_streams) {
                (Some(sessions), Some(streams)) => writeln!(
                    out,
                    "active sessions: {sessions} sessions + {streams} streams, block_scale_down_with_active {block_scale_down_with_active}: {}",
                    verdict(*fired, "blocked, drain required")
                ),
                _ => writeln!(out, "active sessions: no continuity observation: passes"),
            }
        }
        Gate::Cooldown { cooldown, cooldown_s, last_action_at, elapsed_us, remaining_us, fired } => {
            let _ = write!(
                out,
                "cooldown: {cooldown} {cooldown_s} s, last action {last_action_at}, {} s elapsed",
                seconds(*elapsed_us)
            );
            if *fired { writeln!(out, ", {} s left: hold", seconds(*remaining_us)) } else { writeln!(out, ": passes") }
        }
        Gate::Growth {
            additional,
            capacity,
            provider_quota_at_limit,
            local_quota_at_limit,
            quotas,
            engine_authority,
            fired,
        } => {
            let _ = writeln!(
                out,
                "growth: additional {} - {current} = {additional}: {}",
                current.saturating_add(*additional),
                verdict(*fired, "blocked")
            );
            for d in capacity {
                let head = format!("capacity {}: {additional} × {} = {} needed", d.axis, d.per_replica, d.needed);
                let _ = match (d.status, d.available, d.allocatable, d.reserved) {
                    (DemandStatus::Missing, ..) => writeln!(out, "{head}, no observation (capacity_missing)"),
                    (DemandStatus::Stale, ..) => writeln!(out, "{head}, observation not fresh (capacity_stale)"),
                    (status, Some(available), Some(allocatable), Some(reserved)) => {
                        let _ = write!(
                            out,
                            "{head}, {available} available ({allocatable} allocatable - {reserved} reserved)"
                        );
                        if status == DemandStatus::Exhausted {
                            writeln!(out, ": short by {} (capacity_exhausted)", d.shortfall.unwrap_or_default())
                        } else {
                            writeln!(out)
                        }
                    }
                    _ => writeln!(out, "{head}"),
                };
            }
            if *provider_quota_at_limit {
                let _ = writeln!(
                    out,
                    "quota at limit: a provider-global quota has used >= limit (provider_quota_exhausted)"
                );
            }
            if *local_quota_at_limit {
                let _ = writeln!(out, "quota at limit: a local quota has used >= limit (capacity_exhausted)");
            }
            for q in quotas {
                let multiplied = if q.scope == QuotaScope::ProviderGlobal {
                    if q.multiplicative { ", declared multiplicative (provider_quota_not_multiplicative)" } else { "" }
                } else if q.multiplicative {
                    ", multiplicative"
                } else {
                    ""
                };
                let _ = write!(
                    out,
                    "quota {} ({}{multiplied}): {} used + {additional} × {} = {}, limit {}",
                    q.quota_ref, q.scope, q.used, q.per_replica, q.projected, q.limit
                );
                let _ = if q.over {
                    let reason = if q.scope == QuotaScope::ProviderGlobal {
                        Reason::ProviderQuotaExhausted
                    } else {
                        Reason::CapacityExhausted
                    };
                    writeln!(out, ": over by {} ({reason})", q.projected.saturating_sub(q.limit))
                } else {
                    writeln!(out)
                };
            }
            for e in engine_authority {
                let _ = write!(
                    out,
                    "engine {}: {} available ({} allocatable - {} reserved)",
                    e.axis, e.available, e.allocatable, e.reserved
                );
                let _ =
                    if e.saturated { writeln!(out, ": saturated (engine_authority_saturated)") } else { writeln!(out) };
            }
            Ok(())
        }
        Gate::DrainBound { drain_required, drain_seconds, max_drain_seconds, fired } => {
            if !drain_required {
                writeln!(out, "drain bound: continuity.drain_required false, no drain")
            } else if *fired {
                writeln!(
                    out,
                    "drain bound: drain_seconds {drain_seconds} > max_drain_seconds {max_drain_seconds}: blocked, drain required"
                )
            } else {
                writeln!(
                    out,
                    "drain bound: drain_seconds {drain_seconds} <= max_drain_seconds {max_drain_seconds}, drain required"
                )
            }
        }
    };
}

/// A compact JSON writer for [`Derivation::to_json`]: keys in the order written, strings as
/// serde_json writes them (no escape of non-ASCII).
struct Out {
    text: String,
    /// Nothing written yet in the innermost object or array: no comma before the next item.
    first: bool,
}

impl Out {
    // The writers are out of line: a derivation writes about seventy fields and two dozen
    // brackets, and inlined at each they cost the component kilobytes (docs/DECISIONS.md, "The
    // component's size").
    #[inline(never)]
    fn open(&mut self, bracket: char) {
        self.text.push(bracket);
        self.first = true;
    }

    #[inline(never)]
    fn close(&mut self, bracket: char) {
        self.text.push(bracket);
        self.first = false;
    }

    /// The comma before an item, unless it is the first.
    fn item(&mut self) {
        if !self.first {
            self.text.push(',');
        }
        self.first = false;
    }

    /// `"key":`, its value follows.
    #[inline(never)]
    fn key(&mut self, key: &str) {
        self.item();
        self.text.push('"');
        self.text.push_str(key);
        self.text.push_str("\":");
    }

    #[inline(never)]
    fn str(&mut self, key: &str, value: &str) {
        self.key(key);
        crate::canonical::write_json_string(value, false, &mut self.text);
    }

    #[inline(never)]
    fn opt_str(&mut self, key: &str, value: Option<&str>) {
        match value {
            Some(value) => self.str(key, value),
            None => {
                self.key(key);
                self.text.push_str("null");
            }
        }
    }

    #[inline(never)]
    fn uint(&mut self, key: &str, value: u64) {
        self.key(key);
        crate::canonical::push_decimal(value, 1, &mut self.text);
    }

    #[inline(never)]
    fn opt_uint(&mut self, key: &str, value: Option<u64>) {
        match value {
            Some(value) => self.uint(key, value),
            None => {
                self.key(key);
                self.text.push_str("null");
            }
        }
    }

    #[inline(never)]
    fn bool(&mut self, key: &str, value: bool) {
        self.key(key);
        self.text.push_str(if value { "true" } else { "false" });
    }

    /// `"key":[{…},…]`, each object's fields written by `fields`.
    fn list<T>(&mut self, key: &str, items: &[T], fields: impl Fn(&mut Self, &T)) {
        self.key(key);
        self.open('[');
        for item in items {
            self.item();
            self.open('{');
            fields(self, item);
            self.close('}');
        }
        self.close(']');
    }
}

fn write_check(out: &mut Out, check: &Check) {
    match check {
        Check::ContinuityStale { observed_at, expires_at } => {
            out.str("check", "continuity_stale");
            out.str("observed_at", observed_at);
            out.str("expires_at", expires_at);
        }
        Check::Overloaded { reason_ref } => {
            out.str("check", "overloaded");
            out.opt_str("reason_ref", reason_ref.as_deref());
        }
        Check::NoisyNeighbor { reason_ref } => {
            out.str("check", "noisy_neighbor");
            out.opt_str("reason_ref", reason_ref.as_deref());
        }
        Check::LastActionInFuture { last_action_at, ahead_us } => {
            out.str("check", "last_action_in_future");
            out.str("last_action_at", last_action_at);
            out.uint("ahead_us", *ahead_us);
        }
    }
}

fn write_target_json(t: &Target, out: &mut Out) {
    out.str("signal", t.signal.as_str());
    out.uint("value", t.value);
    out.uint("target", t.target);
    out.uint("ceil", t.ceil);
    out.uint("min_replicas", t.min_replicas);
    out.uint("floor", t.floor);
    out.uint("max_replicas", t.max_replicas);
    out.opt_str("clamp", t.clamp.map(Bound::as_str));
    out.uint("raw", t.raw);
    out.str("action", t.action.as_str());
    out.key("step");
    match &t.step {
        Some(step) => {
            out.open('{');
            out.str("name", step.name.as_str());
            out.uint("size", step.size);
            out.uint("limit", step.limit);
            out.bool("capped", step.capped);
            out.close('}');
        }
        None => out.text.push_str("null"),
    }
    out.uint("desired", t.desired);
}

fn write_gate_json(out: &mut Out, gate: &Gate) {
    match gate {
        Gate::ScaleFromZero { allow_scale_from_zero, fired } => {
            out.str("gate", "scale_from_zero");
            out.bool("allow_scale_from_zero", *allow_scale_from_zero);
            out.bool("fired", *fired);
        }
        Gate::ScaleToZero { min_replicas, desired, fired } => {
            out.str("gate", "scale_to_zero");
            out.uint("min_replicas", *min_replicas);
            out.uint("desired", *desired);
            out.bool("fired", *fired);
        }
        Gate::ActiveSessions { block_scale_down_with_active, active_sessions, active_streams, fired } => {
            out.str("gate", "active_sessions");
            out.bool("block_scale_down_with_active", *block_scale_down_with_active);
            out.opt_uint("active_sessions", *active_sessions);
            out.opt_uint("active_streams", *active_streams);
            out.bool("fired", *fired);
        }
        Gate::Cooldown { cooldown, cooldown_s, last_action_at, elapsed_us, remaining_us, fired } => {
            out.str("gate", "cooldown");
            out.str("cooldown", cooldown.as_str());
            out.uint("cooldown_s", *cooldown_s);
            out.str("last_action_at", last_action_at);
            out.uint("elapsed_us", *elapsed_us);
            out.uint("remaining_us", *remaining_us);
            out.bool("fired", *fired);
        }
        Gate::Growth {
            additional,
            capacity,
            provider_quota_at_limit,
            local_quota_at_limit,
            quotas,
            engine_authority,
            fired,
        } => {
            out.str("gate", "growth");
            out.uint("additional", *additional);
            out.list("capacity", capacity, |out, c| {
                out.str("axis", c.axis.as_str());
                out.uint("per_replica", c.per_replica);
                out.uint("needed", c.needed);
                out.str("status", c.status.as_str());
                out.opt_uint("allocatable", c.allocatable);
                out.opt_uint("reserved", c.reserved);
                out.opt_uint("available", c.available);
                out.opt_uint("shortfall", c.shortfall);
            });
            out.bool("provider_quota_at_limit", *provider_quota_at_limit);
            out.bool("local_quota_at_limit", *local_quota_at_limit);
            out.list("quotas", quotas, |out, q| {
                out.str("quota_ref", &q.quota_ref);
                out.str("scope", q.scope.as_str());
                out.str("axis", q.axis.as_str());
                out.bool("multiplicative", q.multiplicative);
                out.uint("per_replica", q.per_replica);
                out.uint("used", q.used);
                out.uint("limit", q.limit);
                out.uint("projected", q.projected);
                out.bool("over", q.over);
            });
            out.list("engine_authority", engine_authority, |out, e| {
                out.str("axis", e.axis.as_str());
                out.uint("allocatable", e.allocatable);
                out.uint("reserved", e.reserved);
                out.uint("available", e.available);
                out.bool("saturated", e.saturated);
            });
            out.bool("fired", *fired);
        }
        Gate::DrainBound { drain_required, drain_seconds, max_drain_seconds, fired } => {
            out.str("gate", "drain_bound");
            out.bool("drain_required", *drain_required);
            out.uint("drain_seconds", *drain_seconds);
            out.uint("max_drain_seconds", *max_drain_seconds);
            out.bool("fired", *fired);
        }
    }
}
