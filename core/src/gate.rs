//! What a decision permits (SPEC §12): whether a proposed replica change may go through, and the
//! reading an external scaler (KEDA) gives the HPA.
//!
//! Every gate — the admission webhook, KEDA, Envoy's `ext_authz`, a Go controller — converts its
//! protocol's message into one question ([`gate`]: a request and a [`ProposedChange`]) and the
//! [`GateVerdict`] back; who may break glass and which callers authenticate stay with the gate.
//! A change moves from the request's `current_replicas` (the count the evidence says runs now).

use std::fmt::Write as _;

use crate::diagnose::First;
use crate::error::{ErrorCode, EvaluationError};
use crate::json::{self, Fields, Path};
use crate::model::{Decision, EvaluationRequest};
use crate::validate::MAX_REPLICAS;
use crate::vocab::ActionKind;

crate::vocab::wire_enum! {
    /// What kind of replica change a gate is asked about.
    ChangeKind {
        /// An ordinary change, proposed by an actuator, an autoscaler or a person.
        Scale = "scale",
        /// A change the gate's own identity policy has already authorised as a break-glass
        /// override: allowed whatever the decision, and said so ([`GateReason::BreakGlass`]).
        BreakGlass = "break_glass",
    }
}

crate::vocab::wire_enum! {
    /// Why a change is allowed or denied: a closed list, one spelling on every face.
    GateReason {
        /// `to` equals `from`: nothing changes (allowed).
        NoChange = "no_change",
        /// The change goes the decision's way and not past its `desired_replicas` (allowed).
        WithinDecision = "within_decision",
        /// Below `min_replicas`, the change moves up toward it without passing it (allowed).
        RecoveryTowardMin = "recovery_toward_min",
        /// Above `max_replicas`, the change moves down toward it without passing it (allowed).
        RecoveryTowardMax = "recovery_toward_max",
        /// A break-glass change the decision alone would deny (allowed).
        BreakGlass = "break_glass",
        /// The decision is `blocked`: no change (denied).
        DecisionBlocked = "decision_blocked",
        /// The decision is `hold`: no change (denied).
        DecisionHold = "decision_hold",
        /// The change goes against the decision's direction (denied).
        WrongDirection = "wrong_direction",
        /// The change goes the decision's way but past its `desired_replicas` (denied).
        PastDesired = "past_desired",
        /// Below `min_replicas`, the change moves further away from it (denied).
        AwayFromBounds = "away_from_bounds",
        /// Below `min_replicas`, the change moves up past it (denied).
        PastBound = "past_bound",
        /// The request cannot be evaluated: no decision permits anything (denied).
        RequestInvalid = "request_invalid",
    }
}

/// A proposed replica change: to `to_replicas`, from the request's `current_replicas`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ProposedChange {
    /// The replica count the change asks for; 0..=10000.
    pub to_replicas: i64,
    /// What kind of change it is.
    pub kind: ChangeKind,
}

impl ProposedChange {
    /// An ordinary change to `to_replicas`.
    pub fn scale(to_replicas: u64) -> Self {
        Self { to_replicas: i64::try_from(to_replicas).unwrap_or(i64::MAX), kind: ChangeKind::Scale }
    }
}

/// A contract's replica bounds, `min_replicas..=max_replicas`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Bounds {
    /// The contract's `min_replicas`.
    pub min_replicas: u64,
    /// The contract's `max_replicas`.
    pub max_replicas: u64,
}

/// What evaluating a request gave, as a gate judges it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Evaluated {
    /// A decision, with the bounds of its contract.
    Decided {
        /// The decision.
        decision: Decision,
        /// The contract's bounds.
        bounds: Bounds,
    },
    /// `current_replicas` is below the contract's `min_replicas` (a `replicas_out_of_bounds`
    /// error: no decision), with a valid contract whose bounds are known.
    BelowFloor {
        /// The request's `current_replicas`.
        current_replicas: u64,
        /// The contract's bounds.
        bounds: Bounds,
    },
    /// The request cannot be evaluated.
    Refused(EvaluationError),
}

impl Evaluated {
    /// Evaluates `request` as [`crate::evaluate`] does and keeps what a gate needs.
    pub fn of(request: &EvaluationRequest) -> Self {
        let policy = &request.contract.policy;
        let bounds = Bounds { min_replicas: policy.min_replicas, max_replicas: policy.max_replicas };
        match crate::evaluate(request) {
            Ok(decision) => Self::Decided { decision, bounds },
            Err(error) => match u64::try_from(request.current_replicas) {
                // Below the floor is the one error that leaves the contract and every observation
                // checked (SPEC §6: precondition 3 runs after them): its bounds can be trusted.
                Ok(current) if error.code() == ErrorCode::ReplicasOutOfBounds && current < bounds.min_replicas => {
                    Self::BelowFloor { current_replicas: current, bounds }
                }
                _ => Self::Refused(error),
            },
        }
    }

    /// The error a request below its floor gets (SPEC §6, precondition 3).
    fn below_floor_error() -> EvaluationError {
        EvaluationError::new(
            ErrorCode::ReplicasOutOfBounds,
            "current_replicas is below the contract floor",
            "current_replicas",
        )
    }
}

/// A gate's answer: allowed or denied, why (a closed list), and a message naming the numbers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GateVerdict {
    /// Whether the change may go through.
    pub allowed: bool,
    /// Why.
    pub reason: GateReason,
    /// One sentence naming the change, the decision and the numbers (SPEC §12 gives the words).
    pub message: String,
    /// The count the change moves from (the request's `current_replicas`); `None` when the
    /// request cannot be read.
    pub from_replicas: Option<u64>,
    /// The count the change moves to.
    pub to_replicas: u64,
    /// The decision judged, when there is one.
    pub decision: Option<Decision>,
    /// Why there is no decision, when there is none.
    pub error: Option<EvaluationError>,
}

/// What an external scaler reports for a decision (SPEC §12.2): the metric value that makes an
/// HPA with an `AverageValue` target of 1 settle on the decision, and whether the unit is active.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScalerReading {
    /// The metric value; `None` without a decision (the scaler answers an error, and the HPA
    /// keeps the count it has).
    pub metric_value: Option<u64>,
    /// Whether the unit must stay active (never scaled to zero on missing knowledge).
    pub active: bool,
    /// The decision read, when there is one.
    pub decision: Option<Decision>,
    /// Why there is no decision, when there is none.
    pub error: Option<EvaluationError>,
}

/// Judges a proposed change against a request's decision (SPEC §12.1).
///
/// # Errors
/// `invalid_field` at `change.to_replicas` when `to_replicas` is outside 0..=10000. A request
/// that cannot be evaluated is not an error here: it is a denial ([`GateReason::RequestInvalid`]).
pub fn gate(request: &EvaluationRequest, change: &ProposedChange) -> Result<GateVerdict, EvaluationError> {
    let to = checked_to(change.to_replicas)?;
    Ok(judge(Evaluated::of(request), to, change.kind))
}

/// [`gate`] over JSON text: the request as [`crate::evaluate_json`] reads it, the change as
/// `{"to_replicas": n, "kind": "scale" | "break_glass"}` (`kind` defaults to `scale`); the
/// verdict as compact JSON ([`GateVerdict::to_json`]).
///
/// # Errors
/// `invalid_json` or `invalid_field` (paths below `change`) for a change that cannot be read.
/// A request that cannot be read or evaluated is a denial, not an error.
pub fn gate_json(request: &str, change: &str) -> Result<String, EvaluationError> {
    let change = parse_change(change)?;
    let to = checked_to(change.to_replicas)?;
    let evaluated = match crate::parse_request(request) {
        Ok(request) => Evaluated::of(&request),
        Err(error) => Evaluated::Refused(error),
    };
    Ok(judge(evaluated, to, change.kind).to_json())
}

/// Judges a change to `to` against what an evaluation gave: the rule of [`gate`], for a gate that
/// already holds the decision (and the contract's bounds) of the count it moves from.
pub fn judge(evaluated: Evaluated, to: u64, kind: ChangeKind) -> GateVerdict {
    let (verdict, denial) = match evaluated {
        Evaluated::Decided { decision, bounds } => judge_decision(decision, bounds, to),
        Evaluated::BelowFloor { current_replicas, bounds } => judge_below_floor(current_replicas, bounds, to),
        Evaluated::Refused(error) => {
            let why = format!("the request cannot be evaluated: {}: {}", error.code(), error.message());
            let verdict = GateVerdict {
                allowed: false,
                reason: GateReason::RequestInvalid,
                message: format!("a change to {to} replicas denied: {why}"),
                from_replicas: None,
                to_replicas: to,
                decision: None,
                error: Some(error),
            };
            (verdict, why)
        }
    };
    if verdict.allowed || kind != ChangeKind::BreakGlass {
        return verdict;
    }
    let change = verdict.from_replicas.map_or_else(|| format!("a change to {to} replicas"), |from| change(from, to));
    GateVerdict {
        allowed: true,
        reason: GateReason::BreakGlass,
        message: format!("{change} allowed: break glass over a denial: {denial}"),
        ..verdict
    }
}

/// The reading of a request for an external scaler (SPEC §12.2).
pub fn scaler_reading(request: &EvaluationRequest) -> ScalerReading {
    read_scaler(Evaluated::of(request))
}

/// [`scaler_reading`] of a request given as JSON text, as compact JSON
/// ([`ScalerReading::to_json`]); a request that cannot be read gives no metric and stays active.
pub fn scaler_reading_json(request: &str) -> String {
    let evaluated = match crate::parse_request(request) {
        Ok(request) => Evaluated::of(&request),
        Err(error) => Evaluated::Refused(error),
    };
    read_scaler(evaluated).to_json()
}

/// The metric value and the activity of a decision's outcome (SPEC §12.2): a scale's
/// `desired_replicas`, the current count for `hold` and `blocked` (their `desired_replicas` is
/// that count); active unless that value is zero, so a unit goes inactive only when its decision
/// rests at or goes to zero, and a blocked unit at zero is not woken.
pub fn settle(action: ActionKind, desired_replicas: u64, current_replicas: u64) -> (u64, bool) {
    let metric = match action {
        ActionKind::ScaleUp | ActionKind::ScaleDown => desired_replicas,
        ActionKind::Hold | ActionKind::Blocked => current_replicas,
    };
    (metric, metric > 0)
}

/// The reading of what an evaluation gave (SPEC §12.2).
pub fn read_scaler(evaluated: Evaluated) -> ScalerReading {
    match evaluated {
        Evaluated::Decided { decision, .. } => {
            let (metric, active) = settle(decision.action, decision.desired_replicas, decision.current_replicas);
            ScalerReading { metric_value: Some(metric), active, decision: Some(decision), error: None }
        }
        Evaluated::BelowFloor { .. } => ScalerReading {
            metric_value: None,
            active: true,
            decision: None,
            error: Some(Evaluated::below_floor_error()),
        },
        Evaluated::Refused(error) => {
            ScalerReading { metric_value: None, active: true, decision: None, error: Some(error) }
        }
    }
}

fn checked_to(to_replicas: i64) -> Result<u64, EvaluationError> {
    u64::try_from(to_replicas).ok().filter(|to| *to <= MAX_REPLICAS).ok_or_else(|| {
        EvaluationError::new(
            ErrorCode::InvalidField,
            format!("to_replicas must be within 0..={MAX_REPLICAS}, not {to_replicas}"),
            "change.to_replicas",
        )
    })
}

/// Reads `{"to_replicas", "kind"?}` strictly (SPEC §1): unknown fields, floats and `null` refused.
fn parse_change(text: &str) -> Result<ProposedChange, EvaluationError> {
    let tree = json::parse(text, "change")?;
    let root = Path::Text("change");
    let sink = &mut First;
    let mut fields = Fields::new(&tree, &root, sink)?;
    let (value, path) = fields.required("to_replicas", sink)?;
    let to_replicas = json::sint(value, &path, sink)?;
    let kind = match fields.optional("kind", sink)? {
        Some((value, path)) => json::word(value, &path, sink)?,
        None => ChangeKind::Scale,
    };
    fields.finish(sink)?;
    Ok(ProposedChange { to_replicas, kind })
}

// Out of line: every verdict's message names its change (component size, docs/DECISIONS.md).
#[inline(never)]
fn change(from: u64, to: u64) -> String {
    format!("{from} -> {to} replicas")
}

fn allowed(reason: GateReason, message: String, from: u64, to: u64, decision: Option<Decision>) -> GateVerdict {
    let error = decision.is_none().then(Evaluated::below_floor_error);
    GateVerdict { allowed: true, reason, message, from_replicas: Some(from), to_replicas: to, decision, error }
}

/// A decision's verdict, and the denial's words (for a break glass over it).
fn judge_decision(decision: Decision, bounds: Bounds, to: u64) -> (GateVerdict, String) {
    let from = decision.current_replicas;
    let desired = decision.desired_replicas;
    let action = decision.action;
    let id = decision.decision_id.clone();
    if to == from {
        let message = format!("{}: no change", change(from, to));
        return (allowed(GateReason::NoChange, message, from, to, Some(decision)), String::new());
    }
    let fits = match action {
        ActionKind::ScaleUp => from < to && to <= desired,
        ActionKind::ScaleDown => desired <= to && to < from,
        ActionKind::Hold | ActionKind::Blocked => false,
    };
    if fits {
        let mut message =
            format!("{} allowed: the decision is {action} to {desired} (decision {id})", change(from, to));
        if decision.drain_required {
            message.push_str("; drain the removed replicas first");
        }
        return (allowed(GateReason::WithinDecision, message, from, to, Some(decision)), String::new());
    }
    let (reason, why) = match action {
        ActionKind::Blocked => (GateReason::DecisionBlocked, "the decision is blocked".to_owned()),
        ActionKind::Hold => (GateReason::DecisionHold, format!("the decision is hold at {from}")),
        ActionKind::ScaleUp if to < from => {
            (GateReason::WrongDirection, format!("the decision is scale_up to {desired}, not down"))
        }
        ActionKind::ScaleDown if to > from => {
            (GateReason::WrongDirection, format!("the decision is scale_down to {desired}, not up"))
        }
        ActionKind::ScaleUp => (GateReason::PastDesired, format!("the decision is scale_up to at most {desired}")),
        ActionKind::ScaleDown => (GateReason::PastDesired, format!("the decision is scale_down to at least {desired}")),
    };
    let mut denial = format!("{why}; reasons: ");
    for (i, reason) in decision.reasons.iter().enumerate() {
        if i > 0 {
            denial.push_str(", ");
        }
        denial.push_str(reason.as_str());
    }
    let _ = write!(denial, "; decision {id}");
    let max = bounds.max_replicas;
    // Above the ceiling, a move back toward it stands whatever the decision.
    if from > max {
        if max <= to && to < from {
            let message = format!(
                "{} allowed: recovery: {from} is above max_replicas {max} and the change moves toward it (the decision alone denies it: {denial})",
                change(from, to)
            );
            return (allowed(GateReason::RecoveryTowardMax, message, from, to, Some(decision)), denial);
        }
        if to > from {
            let _ = write!(denial, "; {from} is above max_replicas {max} and the change moves away from it");
        } else {
            let _ =
                write!(denial, "; {from} is above max_replicas {max}: a recovery goes down to {max} and no further");
        }
    }
    let verdict = GateVerdict {
        allowed: false,
        reason,
        message: format!("{} denied: {denial}", change(from, to)),
        from_replicas: Some(from),
        to_replicas: to,
        decision: Some(decision),
        error: None,
    };
    (verdict, denial)
}

/// Below the floor no decision is made: only a move up toward `min_replicas` goes through.
fn judge_below_floor(from: u64, bounds: Bounds, to: u64) -> (GateVerdict, String) {
    let min = bounds.min_replicas;
    if to == from {
        let message = format!("{}: no change", change(from, to));
        return (allowed(GateReason::NoChange, message, from, to, None), String::new());
    }
    if from < to && to <= min {
        let message = format!(
            "{} allowed: recovery: {from} is below min_replicas {min} and the change moves toward it (from {min} on, the decision decides)",
            change(from, to)
        );
        return (allowed(GateReason::RecoveryTowardMin, message, from, to, None), String::new());
    }
    let (reason, why) = if to < from {
        (GateReason::AwayFromBounds, format!("{from} is below min_replicas {min} and the change moves away from it"))
    } else {
        (
            GateReason::PastBound,
            format!("{from} is below min_replicas {min}: a recovery goes up to {min} and no further"),
        )
    };
    let verdict = GateVerdict {
        allowed: false,
        reason,
        message: format!("{} denied: {why}", change(from, to)),
        from_replicas: Some(from),
        to_replicas: to,
        decision: None,
        error: Some(Evaluated::below_floor_error()),
    };
    (verdict, why)
}

fn push_optional_json(out: &mut String, key: &str, value: Option<String>) {
    out.push_str(key);
    out.push_str(value.as_deref().unwrap_or("null"));
}

fn error_json(error: &EvaluationError) -> String {
    error.to_json_text()
}

impl GateVerdict {
    /// The verdict as compact JSON: `{"allowed","reason","message","from_replicas","to_replicas",
    /// "decision","error"}` (`null` for what is absent; the decision as [`crate::decision_to_json`]).
    pub fn to_json(&self) -> String {
        let mut out = String::with_capacity(256);
        out.push_str(if self.allowed { "{\"allowed\":true,\"reason\":" } else { "{\"allowed\":false,\"reason\":" });
        crate::canonical::write_json_string(self.reason.as_str(), false, &mut out);
        out.push_str(",\"message\":");
        crate::canonical::write_json_string(&self.message, false, &mut out);
        push_optional_json(&mut out, ",\"from_replicas\":", self.from_replicas.map(|n| n.to_string()));
        let _ = write!(out, ",\"to_replicas\":{}", self.to_replicas);
        push_optional_json(&mut out, ",\"decision\":", self.decision.as_ref().map(crate::decision_to_json));
        push_optional_json(&mut out, ",\"error\":", self.error.as_ref().map(error_json));
        out.push('}');
        out
    }
}

impl ScalerReading {
    /// The reading as compact JSON: `{"metric_value","active","decision","error"}` (`null` for
    /// what is absent).
    pub fn to_json(&self) -> String {
        let mut out = String::with_capacity(128);
        push_optional_json(&mut out, "{\"metric_value\":", self.metric_value.map(|n| n.to_string()));
        out.push_str(if self.active { ",\"active\":true" } else { ",\"active\":false" });
        push_optional_json(&mut out, ",\"decision\":", self.decision.as_ref().map(crate::decision_to_json));
        push_optional_json(&mut out, ",\"error\":", self.error.as_ref().map(error_json));
        out.push('}');
        out
    }
}
