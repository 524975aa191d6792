//! Replaying a contract over a trace of time steps: every step is a real evaluation, and an
//! accepted scale is applied (optionally after an actuation delay), so cooldowns, step caps and
//! drains play out as they would live. Pure: the trace is an argument, there is no clock.
//!
//! Evidence a trace does not mention is synthesized fresh for its step; an empty signal cell is
//! a missing observation (a failed metric read), never a zero.

use serde::Serialize;

use crate::canonical::{Canon, content_digest, push_decimal, write_json_string};
use crate::diagnose::First;
use crate::error::{ErrorCode, EvaluationError};
use crate::model::{
    CapacityObservation, ContinuityObservation, EvaluationRequest, QuotaObservation, SafetyObservation,
    ScaleUnitContract, SignalObservation,
};
use crate::time;
use crate::validate::{self, MAX_REPLICAS};
use crate::vocab::{ActionKind, CapacityAxis, Reason};

/// Most steps one simulation may hold.
pub const MAX_TRACE_STEPS: usize = 100_000;
/// Headroom (in replicas) assumed where a trace says nothing about capacity or quotas.
pub const DEFAULT_HEADROOM: u64 = 10_000;
/// How long synthesized evidence stays fresh after its step, in seconds.
const SYNTHETIC_WINDOW_S: i64 = 60;
const MICROS: i64 = 1_000_000;
const MAX_AMOUNT: u64 = 1_000_000_000_000_000;

/// One step of a trace. Every column but `at` is optional; an absent value is synthesized
/// (ample headroom, ready, no sessions, safe) except `signal`, whose absence is a failed read.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TraceStep {
    /// The step's time (RFC 3339 with an offset); steps must not go back in time.
    pub at: String,
    /// The target signal's value; `None` is a missing observation.
    pub signal: Option<u64>,
    /// Extra replicas that still fit on every capacity axis (`0` saturates engine axes).
    pub capacity_headroom: Option<u64>,
    /// Extra replicas every bound quota still allows (`0` means the quota ran dry).
    pub quota_headroom: Option<u64>,
    /// Active sessions reported by the continuity store.
    pub active_sessions: Option<u64>,
    /// Whether the continuity store is ready.
    pub ready: Option<bool>,
    /// Whether the fleet is shedding load.
    pub overloaded: Option<bool>,
    /// Whether a noisy neighbour is degrading the fleet.
    pub noisy_neighbor: Option<bool>,
}

/// How to run a simulation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SimulationOptions {
    /// Replicas running before the first step.
    pub initial_replicas: u64,
    /// Seconds between accepting a scale and the replicas being there (0: at once).
    pub actuation_delay_s: u64,
}

/// What happened at one step. A face prints a decision as `current_replicas->desired_replicas
/// action` (`1->3 scale_up`), and what runs as `replicas_before->replicas_after`; with an
/// actuation delay the two differ until the scale is carried out.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SimulationStep {
    /// The step's time, as given.
    pub at: String,
    /// Whole seconds since the first step (for charts: no caller needs to parse `at`).
    pub elapsed_s: u64,
    /// The signal value, `None` when the read failed.
    pub signal: Option<u64>,
    /// Replicas running when the step was evaluated (after a pending scale due by then was
    /// carried out).
    pub replicas_before: u64,
    /// Replicas running after the step: its scale when carried out at once, else unchanged.
    pub replicas_after: u64,
    /// The decision's current count: the replicas it was made for (equal to `replicas_before`).
    pub current_replicas: u64,
    /// The decision's action.
    pub action: ActionKind,
    /// The decision's desired count (equal to `current_replicas` for `hold` and `blocked`).
    pub desired_replicas: u64,
    /// After the step, the count a scale accepted but not carried out yet will bring (an
    /// actuation delay); `None` when nothing is pending.
    pub pending_replicas: Option<u64>,
    /// The decision's reasons.
    pub reasons: Vec<Reason>,
    /// The decision's id.
    pub decision_id: String,
}

/// Seconds spent blocked for one reason.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BlockedTime {
    /// The reason.
    pub reason: Reason,
    /// Seconds of blocked steps that carried it (a step lasts until the next one).
    pub seconds: u64,
}

/// A scale accepted but not carried out when the trace ended (an actuation delay).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PendingScale {
    /// `scale_up` or `scale_down`.
    pub action: ActionKind,
    /// Replicas running when it was decided (and still at the end).
    pub from_replicas: u64,
    /// Replicas it will bring.
    pub to_replicas: u64,
    /// The step time it was decided at, as given.
    pub decided_at: String,
    /// When it is due: the decision's time plus the actuation delay (UTC).
    pub due_at: String,
}

/// Totals over a simulation. A step lasts until the next step; the last lasts zero seconds.
///
/// Decisions and changes are counted apart: with an actuation delay a scale is carried out
/// later, and a later decision may replace it before then (`replaced_scales`), so `scale_ups`
/// can exceed `scale_ups_carried_out`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SimulationSummary {
    /// Steps evaluated.
    pub steps: u64,
    /// Decisions to scale up (every `scale_up` decision, carried out or not).
    pub scale_ups: u64,
    /// Decisions to scale down (every `scale_down` decision, carried out or not).
    pub scale_downs: u64,
    /// Scales carried out that raised the running count.
    pub scale_ups_carried_out: u64,
    /// Scales carried out that lowered the running count.
    pub scale_downs_carried_out: u64,
    /// Scale decisions replaced by a later one while still pending (never carried out).
    pub replaced_scales: u64,
    /// Steps whose decision was `blocked`.
    pub blocked_steps: u64,
    /// Seconds spent in blocked steps.
    pub blocked_seconds: u64,
    /// Blocked seconds by reason, in first-seen order.
    pub blocked_by_reason: Vec<BlockedTime>,
    /// Seconds during which the signal needed more replicas than were running.
    pub seconds_over_target: u64,
    /// Seconds during which more replicas ran than the signal needed (above the floor).
    pub seconds_under_target: u64,
    /// Most replicas running at any step.
    pub peak_replicas: u64,
    /// Replicas after the last step, counting a scale still pending then (`pending_at_end`).
    pub final_replicas: u64,
    /// Replicas running after the last step (without a pending scale).
    pub running_replicas_at_end: u64,
    /// The scale still pending after the last step, `None` when there is none.
    pub pending_at_end: Option<PendingScale>,
}

/// A whole simulation: each step and the summary.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Simulation {
    /// One entry per trace step.
    pub steps: Vec<SimulationStep>,
    /// Totals.
    pub summary: SimulationSummary,
}

// Out of line: a dozen refusals build one (component size, docs/DECISIONS.md).
#[inline(never)]
fn trace_error(path: String, message: impl Into<String>) -> EvaluationError {
    EvaluationError::new(ErrorCode::InvalidField, message, path)
}

/// The columns a CSV trace may have (`at` is another name for `time`).
const TRACE_COLUMNS: &[&str] = &[
    "time",
    "at",
    "signal",
    "capacity_headroom",
    "quota_headroom",
    "active_sessions",
    "ready",
    "overloaded",
    "noisy_neighbor",
];

/// [`TRACE_COLUMNS`] as an error message lists them.
const TRACE_COLUMNS_TEXT: &str = "`time` (or `at`), `signal`, `capacity_headroom`, `quota_headroom`, \
                                  `active_sessions`, `ready`, `overloaded`, `noisy_neighbor`";

/// Reads a trace from CSV text: a header naming the columns (`time` or `at`, `signal`, and any
/// of `capacity_headroom`, `quota_headroom`, `active_sessions`, `ready`, `overloaded`,
/// `noisy_neighbor`), then one row a step. Empty cells are absent values; `#` starts a comment
/// line. Booleans are `true`/`false` (or `1`/`0`).
///
/// # Errors
/// `invalid_field` naming the row and column (`trace[3].signal`, rows counting steps) of the
/// first bad cell, with the text's line number in the message; an unknown column (the message
/// lists the valid ones); or a trace with no steps or more than [`MAX_TRACE_STEPS`].
pub fn parse_trace_csv(text: &str) -> Result<Vec<TraceStep>, EvaluationError> {
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(i, line)| (i + 1, line.trim()))
        .filter(|(_, line)| !line.is_empty() && !line.starts_with('#'));
    let (_, header) = lines.next().ok_or_else(|| trace_error("trace".into(), "the trace is empty"))?;
    let columns: Vec<&str> = header.split(',').map(str::trim).collect();
    for column in &columns {
        if !TRACE_COLUMNS.contains(column) {
            return Err(trace_error(
                "trace".into(),
                format!("unknown trace column `{column}` in the header; the columns are {TRACE_COLUMNS_TEXT}"),
            ));
        }
    }
    if !columns.iter().any(|c| *c == "time" || *c == "at") {
        return Err(trace_error("trace".into(), "the trace needs a `time` column"));
    }
    let mut steps = Vec::new();
    for (row, (line_number, line)) in lines.enumerate() {
        if steps.len() >= MAX_TRACE_STEPS {
            return Err(trace_error("trace".into(), format!("a trace may hold at most {MAX_TRACE_STEPS} steps")));
        }
        let cells: Vec<&str> = line.split(',').map(str::trim).collect();
        if cells.len() > columns.len() {
            return Err(trace_error(
                format!("trace[{row}]"),
                format!("line {line_number} has {} cells, the header {}", cells.len(), columns.len()),
            ));
        }
        let mut step = TraceStep::default();
        for (column, cell) in columns.iter().zip(cells.iter().chain(std::iter::repeat(&""))) {
            if cell.is_empty() {
                continue;
            }
            let path = || format!("trace[{row}].{column}");
            let number = || {
                cell.parse::<u64>().map_err(|_| {
                    trace_error(
                        path(),
                        format!(
                            "line {line_number}, column `{column}`: `{cell}` is not a count (a whole number, 0 or more)"
                        ),
                    )
                })
            };
            let flag = || match *cell {
                "true" | "1" => Ok(true),
                "false" | "0" => Ok(false),
                _ => Err(trace_error(
                    path(),
                    format!("line {line_number}, column `{column}`: `{cell}` is not true or false (or 1 or 0)"),
                )),
            };
            match *column {
                "time" | "at" => step.at = (*cell).to_owned(),
                "signal" => step.signal = Some(number()?),
                "capacity_headroom" => step.capacity_headroom = Some(number()?),
                "quota_headroom" => step.quota_headroom = Some(number()?),
                "active_sessions" => step.active_sessions = Some(number()?),
                "ready" => step.ready = Some(flag()?),
                "overloaded" => step.overloaded = Some(flag()?),
                _ => step.noisy_neighbor = Some(flag()?),
            }
        }
        if step.at.is_empty() {
            return Err(trace_error(
                format!("trace[{row}].time"),
                format!("line {line_number} has no time: every step needs one"),
            ));
        }
        steps.push(step);
    }
    if steps.is_empty() {
        return Err(trace_error("trace".into(), "the trace has no steps"));
    }
    Ok(steps)
}

/// A digest for synthesized evidence: the content digest of what was synthesized.
fn synthetic_digest(what: &str, at: &str, value: u64) -> String {
    content_digest(&Canon::Map(vec![
        ("kind", Canon::Str("simulated")),
        ("what", Canon::Str(what)),
        ("at", Canon::Str(at)),
        ("value", Canon::Int(i128::from(value))),
    ]))
}

fn per_replica(contract: &ScaleUnitContract, axis: CapacityAxis) -> u64 {
    contract.replica_demands.iter().find(|d| d.axis == axis).map_or(0, |d| d.per_replica)
}

/// Builds the request a live controller would send at this step.
fn request_for(
    contract: &ScaleUnitContract,
    step: &TraceStep,
    replicas: u64,
    last_action_at: Option<&str>,
    expires_at: &str,
) -> EvaluationRequest {
    let at = step.at.as_str();
    let window = |what: &str, value: u64| {
        (at.to_owned(), expires_at.to_owned(), format!("sim:{what}"), synthetic_digest(what, at, value))
    };
    let signal = step.signal.map(|value| {
        let (observed_at, expires_at, source_ref, source_digest) = window("signal", value);
        SignalObservation {
            signal: contract.policy.target_signal,
            value: i64::try_from(value).unwrap_or(i64::MAX),
            observed_at,
            expires_at,
            source_ref,
            source_digest,
        }
    });
    let headroom = step.capacity_headroom.unwrap_or(DEFAULT_HEADROOM);
    let mut axes: Vec<CapacityAxis> = contract.required_capacity_axes.clone();
    for demand in &contract.replica_demands {
        if !axes.contains(&demand.axis) {
            axes.push(demand.axis);
        }
    }
    let capacities = axes
        .into_iter()
        .map(|axis| {
            let per = per_replica(contract, axis);
            let reserved = replicas.saturating_mul(per).min(MAX_AMOUNT);
            let available = if per > 0 { headroom.saturating_mul(per) } else { headroom };
            let allocatable = reserved.saturating_add(available).min(MAX_AMOUNT);
            let (observed_at, expires_at, source_ref, source_digest) = window(axis.as_str(), headroom);
            CapacityObservation {
                axis,
                allocatable,
                reserved,
                used: reserved,
                observed_at,
                expires_at,
                source_ref,
                source_digest,
            }
        })
        .collect();
    let quota_headroom = step.quota_headroom.unwrap_or(DEFAULT_HEADROOM);
    let quotas = contract
        .quotas
        .iter()
        .map(|binding| {
            let used = replicas.saturating_mul(binding.per_replica).min(MAX_AMOUNT);
            let room = if binding.per_replica > 0 {
                quota_headroom.saturating_mul(binding.per_replica)
            } else {
                quota_headroom
            };
            let (observed_at, expires_at, _, source_digest) = window(&binding.quota_ref, quota_headroom);
            QuotaObservation {
                quota_ref: binding.quota_ref.clone(),
                scope: binding.scope,
                limit: used.saturating_add(room).min(MAX_AMOUNT),
                used,
                observed_at,
                expires_at,
                source_ref: "sim:quota".to_owned(),
                source_digest,
            }
        })
        .collect();
    let sessions = step.active_sessions.unwrap_or(0);
    let (observed_at, expires_at_c, source_ref, source_digest) = window("continuity", sessions);
    let continuity = Some(ContinuityObservation {
        ready: step.ready.unwrap_or(true),
        active_sessions: sessions,
        active_streams: 0,
        observed_at,
        expires_at: expires_at_c,
        source_ref,
        source_digest,
    });
    let overloaded = step.overloaded.unwrap_or(false);
    let noisy_neighbor = step.noisy_neighbor.unwrap_or(false);
    let flags = u64::from(overloaded) + 2 * u64::from(noisy_neighbor);
    let (observed_at, expires_at_s, source_ref, source_digest) = window("safety", flags);
    let safety = Some(SafetyObservation {
        overloaded,
        noisy_neighbor,
        reason_ref: (overloaded || noisy_neighbor).then(|| "sim:incident".to_owned()),
        observed_at,
        expires_at: expires_at_s,
        source_ref,
        source_digest,
    });
    EvaluationRequest {
        contract: contract.clone(),
        current_replicas: i64::try_from(replicas).unwrap_or(i64::MAX),
        signal,
        capacities,
        quotas,
        continuity,
        safety,
        now: at.to_owned(),
        last_action_at: last_action_at.map(str::to_owned),
    }
}

/// Replays `contract` over `trace`.
///
/// # Errors
/// The contract's own errors (as [`crate::validate_contract`]), `invalid_field` for an initial
/// count outside 0..=10000, and `invalid_time`/`invalid_field` for a step time that is malformed
/// or goes back in time. A step the evaluator refuses (which synthesized evidence never causes)
/// is returned as its error.
pub fn simulate(
    contract: &ScaleUnitContract,
    options: &SimulationOptions,
    trace: &[TraceStep],
) -> Result<Simulation, EvaluationError> {
    validate::contract(contract, &crate::json::Path::Text("contract"))?;
    if options.initial_replicas > MAX_REPLICAS {
        return Err(trace_error("initial_replicas".into(), "initial_replicas must be in 0..=10000"));
    }
    if options.actuation_delay_s > 86_400 {
        return Err(trace_error("actuation_delay_s".into(), "actuation_delay_s must be in 0..=86400"));
    }
    if trace.is_empty() || trace.len() > MAX_TRACE_STEPS {
        return Err(trace_error("trace".into(), format!("a trace holds 1..={MAX_TRACE_STEPS} steps")));
    }
    let mut times = Vec::with_capacity(trace.len());
    for (i, step) in trace.iter().enumerate() {
        let at = validate::check_time(&mut First, &step.at, &crate::json::Path::Text("trace").index(i).field("at"))?;
        if times.last().is_some_and(|&previous| at < previous) {
            return Err(trace_error(format!("trace[{i}].at"), "trace steps must not go back in time"));
        }
        times.push(at);
    }

    let delay = i64::try_from(options.actuation_delay_s).unwrap_or(0) * MICROS;
    let mut replicas = options.initial_replicas;
    let mut pending: Option<Pending> = None;
    let mut last_action_at: Option<String> = None;
    let mut steps = Vec::with_capacity(trace.len());
    let mut summary = SimulationSummary { peak_replicas: replicas, ..SimulationSummary::default() };

    for (i, (step, &now)) in trace.iter().zip(&times).enumerate() {
        if let Some(due) = pending.take_if(|p| p.due <= now) {
            carry_out(&mut summary, &mut replicas, due.replicas);
        }
        let expires_at = time::format_utc(now + SYNTHETIC_WINDOW_S * MICROS);
        let request = request_for(contract, step, replicas, last_action_at.as_deref(), &expires_at);
        let decision = crate::evaluate(&request)
            .map_err(|e| EvaluationError::new(e.code(), format!("step {i}: {}", e.message()), format!("trace[{i}]")))?;
        let before = replicas;
        if matches!(decision.action, ActionKind::ScaleUp | ActionKind::ScaleDown) {
            if decision.action == ActionKind::ScaleUp {
                summary.scale_ups += 1;
            } else {
                summary.scale_downs += 1;
            }
            last_action_at = Some(step.at.clone());
            if delay == 0 {
                carry_out(&mut summary, &mut replicas, decision.desired_replicas);
            } else {
                if pending.is_some() {
                    summary.replaced_scales += 1;
                }
                pending = Some(Pending {
                    due: now + delay,
                    replicas: decision.desired_replicas,
                    action: decision.action,
                    from: before,
                    decided_at: step.at.clone(),
                });
            }
        }

        let next = times.get(i + 1).copied().unwrap_or(now);
        let seconds = u64::try_from((next - now) / MICROS).unwrap_or(0);
        if decision.action == ActionKind::Blocked {
            summary.blocked_steps += 1;
            summary.blocked_seconds += seconds;
            for &reason in &decision.reasons {
                match summary.blocked_by_reason.iter_mut().find(|b| b.reason == reason) {
                    Some(entry) => entry.seconds += seconds,
                    None => summary.blocked_by_reason.push(BlockedTime { reason, seconds }),
                }
            }
        }
        if let Some(value) = step.signal {
            let policy = &contract.policy;
            let needed = value.div_ceil(policy.target.max(1));
            let floor = if policy.allow_scale_to_zero { policy.min_replicas } else { policy.min_replicas.max(1) };
            if needed > before {
                summary.seconds_over_target += seconds;
            } else if before > needed.max(floor) {
                summary.seconds_under_target += seconds;
            }
        }
        summary.peak_replicas = summary.peak_replicas.max(before).max(replicas);
        let first = times.first().copied().unwrap_or(now);
        steps.push(SimulationStep {
            at: step.at.clone(),
            elapsed_s: u64::try_from((now - first) / MICROS).unwrap_or(0),
            signal: step.signal,
            replicas_before: before,
            replicas_after: replicas,
            current_replicas: decision.current_replicas,
            action: decision.action,
            desired_replicas: decision.desired_replicas,
            pending_replicas: pending.as_ref().map(|p| p.replicas),
            reasons: decision.reasons,
            decision_id: decision.decision_id,
        });
    }
    summary.steps = u64::try_from(steps.len()).unwrap_or(u64::MAX);
    summary.final_replicas = pending.as_ref().map_or(replicas, |p| p.replicas);
    summary.running_replicas_at_end = replicas;
    summary.pending_at_end = pending.map(|p| PendingScale {
        action: p.action,
        from_replicas: p.from,
        to_replicas: p.replicas,
        decided_at: p.decided_at,
        due_at: time::format_utc(p.due),
    });
    Ok(Simulation { steps, summary })
}

/// A scale accepted and waiting for the actuation delay.
struct Pending {
    /// When it is carried out (microseconds since the epoch).
    due: i64,
    replicas: u64,
    action: ActionKind,
    from: u64,
    decided_at: String,
}

/// Makes `count` the running replicas, counting the change by its direction.
fn carry_out(summary: &mut SimulationSummary, replicas: &mut u64, count: u64) {
    match count.cmp(replicas) {
        std::cmp::Ordering::Greater => summary.scale_ups_carried_out += 1,
        std::cmp::Ordering::Less => summary.scale_downs_carried_out += 1,
        std::cmp::Ordering::Equal => {}
    }
    *replicas = count;
}

/// Runs a simulation described as JSON and returns it as JSON.
///
/// The input is an object with `contract` (as in a request), `initial_replicas` (default: the
/// contract's `min_replicas`), `actuation_delay_s` (default 0), and the trace as either
/// `trace_csv` (the text [`parse_trace_csv`] reads) or `trace` (a list of objects with the
/// [`TraceStep`] fields; `at` required, the rest optional or `null`). The output is
/// `{"steps": [...], "summary": {...}}` with the field names of [`Simulation`].
///
/// # Errors
/// `invalid_json` and `invalid_field` for a malformed input (with its path), and every error of
/// [`simulate`].
pub fn simulate_json(input: &str) -> Result<String, EvaluationError> {
    use crate::json::{self, Fields};
    let first = &mut First;
    let root = json::parse(input, "simulation input")?;
    let mut fields = Fields::new(&root, &json::Path::Root, first)?;
    let contract = {
        let (value, path) = fields.required("contract", first)?;
        crate::parse::contract(value, &path, first)?
    };
    let initial_replicas = match fields.optional("initial_replicas", first)? {
        Some((value, path)) => json::uint(value, &path, first)?,
        None => contract.policy.min_replicas,
    };
    let actuation_delay_s = match fields.optional("actuation_delay_s", first)? {
        Some((value, path)) => json::uint(value, &path, first)?,
        None => 0,
    };
    let csv = fields.optional("trace_csv", first)?;
    let list = fields.optional("trace", first)?;
    let trace = match (csv, list) {
        (Some((value, path)), None) => parse_trace_csv(&json::string(value, &path, first)?)?,
        (None, Some((value, path))) => json::array(value, &path, first)?
            .iter()
            .enumerate()
            .map(|(i, item)| trace_step(item, &path.index(i)))
            .collect::<Result<Vec<_>, _>>()?,
        _ => return Err(trace_error(String::new(), "give the trace as exactly one of `trace_csv` and `trace`")),
    };
    fields.finish(first)?;
    let simulation = simulate(&contract, &SimulationOptions { initial_replicas, actuation_delay_s }, &trace)?;
    Ok(simulation.to_json())
}

impl Simulation {
    /// The simulation as compact JSON: byte for byte what `serde_json::to_string` writes for it
    /// (the tests hold it to that), written directly so that the component carries no generic
    /// serializer.
    pub fn to_json(&self) -> String {
        let mut out = String::with_capacity(256 + 256 * self.steps.len());
        out.push_str("{\"steps\":[");
        for (i, step) in self.steps.iter().enumerate() {
            out.push_str(if i > 0 { ",{" } else { "{" });
            push_string(&mut out, "at", &step.at);
            push_u64(&mut out, ",\"elapsed_s\":", step.elapsed_s);
            push_option(&mut out, ",\"signal\":", step.signal);
            push_u64(&mut out, ",\"replicas_before\":", step.replicas_before);
            push_u64(&mut out, ",\"replicas_after\":", step.replicas_after);
            push_u64(&mut out, ",\"current_replicas\":", step.current_replicas);
            out.push(',');
            push_string(&mut out, "action", step.action.as_str());
            push_u64(&mut out, ",\"desired_replicas\":", step.desired_replicas);
            push_option(&mut out, ",\"pending_replicas\":", step.pending_replicas);
            out.push_str(",\"reasons\":[");
            for (j, reason) in step.reasons.iter().enumerate() {
                if j > 0 {
                    out.push(',');
                }
                write_json_string(reason.as_str(), false, &mut out);
            }
            out.push_str("],");
            push_string(&mut out, "decision_id", &step.decision_id);
            out.push('}');
        }
        let summary = &self.summary;
        push_u64(&mut out, "],\"summary\":{\"steps\":", summary.steps);
        push_u64(&mut out, ",\"scale_ups\":", summary.scale_ups);
        push_u64(&mut out, ",\"scale_downs\":", summary.scale_downs);
        push_u64(&mut out, ",\"scale_ups_carried_out\":", summary.scale_ups_carried_out);
        push_u64(&mut out, ",\"scale_downs_carried_out\":", summary.scale_downs_carried_out);
        push_u64(&mut out, ",\"replaced_scales\":", summary.replaced_scales);
        push_u64(&mut out, ",\"blocked_steps\":", summary.blocked_steps);
        push_u64(&mut out, ",\"blocked_seconds\":", summary.blocked_seconds);
        out.push_str(",\"blocked_by_reason\":[");
        for (i, blocked) in summary.blocked_by_reason.iter().enumerate() {
            out.push_str(if i > 0 { ",{" } else { "{" });
            push_string(&mut out, "reason", blocked.reason.as_str());
            push_u64(&mut out, ",\"seconds\":", blocked.seconds);
            out.push('}');
        }
        push_u64(&mut out, "],\"seconds_over_target\":", summary.seconds_over_target);
        push_u64(&mut out, ",\"seconds_under_target\":", summary.seconds_under_target);
        push_u64(&mut out, ",\"peak_replicas\":", summary.peak_replicas);
        push_u64(&mut out, ",\"final_replicas\":", summary.final_replicas);
        push_u64(&mut out, ",\"running_replicas_at_end\":", summary.running_replicas_at_end);
        out.push_str(",\"pending_at_end\":");
        match &summary.pending_at_end {
            None => out.push_str("null"),
            Some(pending) => {
                out.push('{');
                push_string(&mut out, "action", pending.action.as_str());
                push_u64(&mut out, ",\"from_replicas\":", pending.from_replicas);
                push_u64(&mut out, ",\"to_replicas\":", pending.to_replicas);
                out.push(',');
                push_string(&mut out, "decided_at", &pending.decided_at);
                out.push(',');
                push_string(&mut out, "due_at", &pending.due_at);
                out.push('}');
            }
        }
        out.push_str("}}");
        out
    }
}

/// `"key":"value"`, the value escaped as serde_json escapes it.
fn push_string(out: &mut String, key: &str, value: &str) {
    out.push('"');
    out.push_str(key);
    out.push_str("\":");
    write_json_string(value, false, out);
}

// Out of line (as `push_option`): the simulation's JSON writes two dozen numbers (component size,
// docs/DECISIONS.md).
/// `prefix` (`,"key":`) and the number.
#[inline(never)]
fn push_u64(out: &mut String, prefix: &str, value: u64) {
    out.push_str(prefix);
    push_decimal(value, 1, out);
}

/// `prefix` (`,"key":`) and the number, or `null`.
#[inline(never)]
fn push_option(out: &mut String, prefix: &str, value: Option<u64>) {
    match value {
        Some(value) => push_u64(out, prefix, value),
        None => {
            out.push_str(prefix);
            out.push_str("null");
        }
    }
}

fn trace_step(value: &crate::json::Json<'_>, path: &crate::json::Path<'_>) -> Result<TraceStep, EvaluationError> {
    use crate::json::{self, Fields};
    let first = &mut First;
    let mut f = Fields::new(value, path, first)?;
    let count = |f: &mut Fields<'_, '_>, name: &'static str| {
        f.nullable(name, &mut First).map(|(value, path)| json::uint(value, &path, &mut First)).transpose()
    };
    let flag = |f: &mut Fields<'_, '_>, name: &'static str| {
        f.nullable(name, &mut First).map(|(value, path)| json::boolean(value, &path, &mut First)).transpose()
    };
    let step = TraceStep {
        at: {
            let (value, path) = f.required("at", first)?;
            json::string(value, &path, first)?
        },
        signal: count(&mut f, "signal")?,
        capacity_headroom: count(&mut f, "capacity_headroom")?,
        quota_headroom: count(&mut f, "quota_headroom")?,
        active_sessions: count(&mut f, "active_sessions")?,
        ready: flag(&mut f, "ready")?,
        overloaded: flag(&mut f, "overloaded")?,
        noisy_neighbor: flag(&mut f, "noisy_neighbor")?,
    };
    f.finish(first)?;
    Ok(step)
}

#[cfg(test)]
mod tests {
    use super::{TRACE_COLUMNS, TRACE_COLUMNS_TEXT};

    #[test]
    fn the_column_list_names_every_column() {
        for column in TRACE_COLUMNS {
            assert!(TRACE_COLUMNS_TEXT.contains(&format!("`{column}`")), "{column}");
        }
        assert_eq!(TRACE_COLUMNS_TEXT.matches('`').count(), 2 * TRACE_COLUMNS.len());
    }
}
