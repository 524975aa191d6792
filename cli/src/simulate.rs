//! `scale-units simulate CONTRACT TRACE`: replay a contract over a CSV trace inside the
//! component, print the steps and the summary, and optionally draw an SVG chart.

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
    action: String,
    reasons: Vec<String>,
}

#[derive(Deserialize)]
struct Summary {
    steps: u64,
    scale_ups: u64,
    scale_downs: u64,
    blocked_steps: u64,
    blocked_seconds: u64,
    blocked_by_reason: Vec<BlockedTime>,
    seconds_over_target: u64,
    seconds_under_target: u64,
    peak_replicas: u64,
    final_replicas: u64,
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
    let contract = match input::read_json(contract_source)? {
        Ok(json) => json,
        Err(error) => return Ok(print_evaluation_error(&error)),
    };
    let trace = std::fs::read_to_string(trace_source)
        .map_err(|error| Failure::Host(format!("cannot read {trace_source}: {error}")))?;
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
        Err(error) => return Ok(print_evaluation_error(&error)),
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

fn print_table(simulation: &Simulation) {
    out!("{:<28} {:>10} {:>9}  {:<11} reasons", "time", "signal", "replicas", "action");
    for step in &simulation.steps {
        let signal = step.signal.map_or_else(|| "missing".to_owned(), |value| value.to_string());
        let replicas = format!("{}->{}", step.replicas_before, step.replicas_after);
        out!("{:<28} {:>10} {:>9}  {:<11} {}", step.at, signal, replicas, step.action, step.reasons.join(", "));
    }
    let s = &simulation.summary;
    out!("");
    out!("steps {}: {} scale-ups, {} scale-downs, {} blocked", s.steps, s.scale_ups, s.scale_downs, s.blocked_steps);
    out!("blocked for {} s", s.blocked_seconds);
    for blocked in &s.blocked_by_reason {
        out!("  {:<36} {} s", blocked.reason, blocked.seconds);
    }
    out!("over target {} s, under target {} s", s.seconds_over_target, s.seconds_under_target);
    out!("peak {} replicas, final {} replicas", s.peak_replicas, s.final_replicas);
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
