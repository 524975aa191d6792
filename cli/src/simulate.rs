//! `scale-units simulate CONTRACT TRACE`: replay a contract over a CSV trace inside the
//! component, print the steps and the summary, and optionally draw an SVG chart. `-` for the
//! trace (or the contract) reads it from stdin.
//!
//! The text report keeps decisions apart from what ran: each step shows its decision as
//! `current->desired action` and the replicas running after it, with the scale still pending
//! (an actuation delay); the summary counts scale decisions, changes carried out and decisions
//! replaced while pending, and names a scale still pending at the end.

use std::fmt::Write as _;

use serde::Deserialize;

use crate::{Failure, Format, Options, input, load_policy, print_evaluation_error};

/// The parts of the component's simulation JSON this command shows.
#[derive(Deserialize)]
struct Simulation {
    steps: Vec<Step>,
    summary: Summary,
}

#[derive(Deserialize)]
struct Step {
    at: String,
    elapsed_s: u64,
    signal: Option<u64>,
    replicas_before: u64,
    replicas_after: u64,
    current_replicas: u64,
    action: String,
    desired_replicas: u64,
    pending_replicas: Option<u64>,
    reasons: Vec<String>,
}

#[derive(Deserialize)]
struct Summary {
    steps: u64,
    scale_ups: u64,
    scale_downs: u64,
    scale_ups_carried_out: u64,
    scale_downs_carried_out: u64,
    replaced_scales: u64,
    blocked_steps: u64,
    blocked_seconds: u64,
    blocked_by_reason: Vec<BlockedTime>,
    seconds_over_target: u64,
    seconds_under_target: u64,
    peak_replicas: u64,
    final_replicas: u64,
    running_replicas_at_end: u64,
    pending_at_end: Option<PendingScale>,
}

#[derive(Deserialize)]
struct PendingScale {
    action: String,
    from_replicas: u64,
    to_replicas: u64,
    decided_at: String,
    due_at: String,
}

#[derive(Deserialize)]
struct BlockedTime {
    reason: String,
    seconds: u64,
}

pub(crate) fn run(options: &Options) -> Result<u8, Failure> {
    let [contract_source, trace_source] = options.operands.as_slice() else {
        return Err(Failure::Usage("simulate takes CONTRACT and TRACE".to_owned()));
    };
    if contract_source == "-" && trace_source == "-" {
        return Err(Failure::Usage(
            "simulate reads one of CONTRACT and TRACE from stdin (-), not both: name the other's file".to_owned(),
        ));
    }
    let contract = match input::read_json(contract_source)? {
        Ok(json) => json,
        Err(error) => return Ok(print_evaluation_error(&error, options.format)),
    };
    let trace = match input::read_text(trace_source, "trace")? {
        Ok(text) => text,
        Err(error) => return Ok(print_evaluation_error(&error, options.format)),
    };
    // The contract's text is embedded as written, so the component judges exactly those bytes.
    let mut request = format!("{{\"contract\":{contract},\"trace_csv\":{}", serde_json::Value::from(trace));
    if let Some(initial) = options.initial_replicas {
        let _ = write!(request, ",\"initial_replicas\":{initial}");
    }
    if let Some(delay) = options.actuation_delay_s {
        let _ = write!(request, ",\"actuation_delay_s\":{delay}");
    }
    request.push('}');

    let policy = load_policy(options, None)?;
    let json = match policy.simulate_json(&request)? {
        Ok(json) => json,
        Err(error) => return Ok(print_evaluation_error(&error, options.format)),
    };
    let simulation: Simulation = serde_json::from_str(&json)
        .map_err(|error| Failure::Host(format!("the component returned an unreadable simulation: {error}")))?;
    if let Some(path) = &options.svg {
        std::fs::write(path, chart(&simulation))
            .map_err(|error| Failure::Host(format!("cannot write {}: {error}", path.display())))?;
    }
    match options.format {
        Format::Json => out!("{json}"),
        Format::Text => print_table(&simulation),
    }
    Ok(0)
}

/// A step's decision in words: `current->desired action` (`1->4 scale_up`, `3->3 hold`).
fn decision(step: &Step) -> String {
    format!("{}->{} {}", step.current_replicas, step.desired_replicas, step.action)
}

/// What ran after a step: the count, or `previous->now` when it changed since the previous step
/// (by this step's scale, or by a pending one carried out when this step came).
fn running(previous: u64, step: &Step) -> String {
    if previous == step.replicas_after {
        step.replicas_after.to_string()
    } else {
        format!("{previous}->{}", step.replicas_after)
    }
}

/// `n thing` or `n things`.
fn count(n: u64, thing: &str) -> String {
    if n == 1 { format!("1 {thing}") } else { format!("{n} {thing}s") }
}

fn print_table(simulation: &Simulation) {
    out!("{:<26} {:>9}  {:<22} {:>8} {:>8}  reasons", "time", "signal", "decision", "running", "pending");
    let mut previous = simulation.steps.first().map_or(0, |step| step.replicas_before);
    for step in &simulation.steps {
        let signal = step.signal.map_or_else(|| "missing".to_owned(), |value| value.to_string());
        let pending = step.pending_replicas.map_or_else(|| "-".to_owned(), |count| count.to_string());
        out!(
            "{:<26} {:>9}  {:<22} {:>8} {:>8}  {}",
            step.at,
            signal,
            decision(step),
            running(previous, step),
            pending,
            step.reasons.join(", ")
        );
        previous = step.replicas_after;
    }
    let s = &simulation.summary;
    let holds = s.steps.saturating_sub(s.scale_ups + s.scale_downs + s.blocked_steps);
    out!("");
    out!(
        "decisions over {}: {} scale_up, {} scale_down, {} hold, {} blocked",
        count(s.steps, "step"),
        s.scale_ups,
        s.scale_downs,
        holds,
        s.blocked_steps
    );
    out!(
        "changes carried out: {}, {}; {} replaced by a later one while pending",
        count(s.scale_ups_carried_out, "scale-up"),
        count(s.scale_downs_carried_out, "scale-down"),
        count(s.replaced_scales, "decision")
    );
    out!("blocked for {} s", s.blocked_seconds);
    for blocked in &s.blocked_by_reason {
        out!("  {:<36} {} s", blocked.reason, blocked.seconds);
    }
    out!("over target {} s, under target {} s", s.seconds_over_target, s.seconds_under_target);
    out!(
        "replicas: peak {}, running at the end {}, final {}",
        s.peak_replicas,
        s.running_replicas_at_end,
        s.final_replicas
    );
    match &s.pending_at_end {
        Some(p) => out!(
            "pending at the end: {} {}->{} decided at {}, due at {} (after the trace)",
            p.action,
            p.from_replicas,
            p.to_replicas,
            p.decided_at,
            p.due_at
        ),
        None => out!("pending at the end: nothing"),
    }
}

/// An SVG chart: the signal (left axis), replicas after each step (right axis, a step line) and
/// blocked spans shaded.
fn chart(simulation: &Simulation) -> String {
    const W: f64 = 900.0;
    const H: f64 = 360.0;
    const LEFT: f64 = 70.0;
    const RIGHT: f64 = 70.0;
    const TOP: f64 = 40.0;
    const BOTTOM: f64 = 50.0;
    let steps = &simulation.steps;
    #[expect(clippy::cast_precision_loss, reason = "chart coordinates: seconds within a day or so")]
    let times: Vec<f64> = steps.iter().map(|step| step.elapsed_s as f64).collect();
    let span = times.last().copied().unwrap_or(0.0).max(1.0);
    let max_signal = steps.iter().filter_map(|s| s.signal).max().unwrap_or(1).max(1) as f64;
    let max_replicas = steps.iter().map(|s| s.replicas_after.max(s.replicas_before)).max().unwrap_or(1).max(1) as f64;
    let x = |t: f64| LEFT + (W - LEFT - RIGHT) * t / span;
    let y_signal = |v: f64| TOP + (H - TOP - BOTTOM) * (1.0 - v / max_signal);
    let y_replicas = |v: f64| TOP + (H - TOP - BOTTOM) * (1.0 - v / (max_replicas * 1.1));

    let mut svg = String::new();
    let _ = write!(
        svg,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">
<title>scale-units simulation: signal and replicas over time, blocked spans shaded</title>
<rect width="{W}" height="{H}" fill="white"/>
"##
    );
    for (i, step) in steps.iter().enumerate() {
        if step.action == "blocked" {
            let start = times.get(i).copied().unwrap_or(0.0);
            let end = times.get(i + 1).copied().unwrap_or(start + span / steps.len().max(1) as f64);
            let _ = writeln!(
                svg,
                r##"<rect class="blocked" x="{:.1}" y="{TOP}" width="{:.1}" height="{:.1}" fill="#e5484d" fill-opacity="0.18"><title>blocked: {}</title></rect>"##,
                x(start),
                (x(end) - x(start)).max(1.0),
                H - TOP - BOTTOM,
                step.reasons.join(", ")
            );
        }
    }
    let _ = writeln!(
        svg,
        r##"<line x1="{LEFT}" y1="{b}" x2="{r}" y2="{b}" stroke="#888"/><line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{b}" stroke="#888"/><line x1="{r}" y1="{TOP}" x2="{r}" y2="{b}" stroke="#888"/>"##,
        b = H - BOTTOM,
        r = W - RIGHT
    );
    let mut signal_path = String::new();
    let mut pen_down = false;
    for (step, &t) in steps.iter().zip(&times) {
        match step.signal {
            Some(value) => {
                let _ = write!(
                    signal_path,
                    "{}{:.1},{:.1} ",
                    if pen_down { "L" } else { "M" },
                    x(t),
                    y_signal(value as f64)
                );
                pen_down = true;
            }
            // A failed read is a gap in the line, never a drop to zero.
            None => pen_down = false,
        }
    }
    let _ =
        writeln!(svg, r##"<path class="signal" d="{signal_path}" fill="none" stroke="#3b82f6" stroke-width="2"/>"##);
    let mut replicas_path = String::new();
    for (i, (step, &t)) in steps.iter().zip(&times).enumerate() {
        let next = times.get(i + 1).copied().unwrap_or(t);
        let command = if i == 0 { "M" } else { "L" };
        let _ = write!(
            replicas_path,
            "{command}{:.1},{:.1} L{:.1},{:.1} ",
            x(t),
            y_replicas(step.replicas_after as f64),
            x(next),
            y_replicas(step.replicas_after as f64)
        );
    }
    let _ = writeln!(
        svg,
        r##"<path class="replicas" d="{replicas_path}" fill="none" stroke="#16a34a" stroke-width="2.5"/>"##
    );
    let _ = writeln!(
        svg,
        r##"<text x="{LEFT}" y="24" fill="#3b82f6">signal (max {max_signal})</text><text x="{tx}" y="24" fill="#16a34a" text-anchor="end">replicas (max {max_replicas})</text><text x="{cx}" y="{ty}" text-anchor="middle" fill="#555">seconds since the first step (0 to {span})</text><text x="{cx}" y="24" text-anchor="middle" fill="#e5484d">shaded: blocked</text>"##,
        tx = W - RIGHT,
        cx = W / 2.0,
        ty = H - 15.0
    );
    svg.push_str("</svg>\n");
    svg
}
