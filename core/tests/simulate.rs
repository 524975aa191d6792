//! Simulation: replays play out as a live controller would see them.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, reason = "a test fails by panicking")]

use scale_units_core::simulate::{SimulationOptions, parse_trace_csv, simulate};
use scale_units_core::{ActionKind, Reason, parse_contract};

/// An API gateway tracking in_flight at 100 per replica, 1..=6 replicas, steps of 2 up and 1
/// down, 30 s / 60 s cooldowns, stateless, no safety evidence required.
const CONTRACT: &str = r#"{
  "unit_ref": "unit:api", "surface": "api_gateway",
  "policy": {"min_replicas": 1, "max_replicas": 6, "target": 100, "target_signal": "in_flight",
             "scale_up_step": 2, "scale_down_step": 1, "scale_up_cooldown_s": 30,
             "scale_down_cooldown_s": 60, "drain_seconds": 20},
  "allowed_signals": ["in_flight", "request_rate"],
  "required_capacity_axes": ["cpu_milli", "memory_mib", "session_slots"],
  "replica_demands": [{"axis": "cpu_milli", "per_replica": 500}, {"axis": "memory_mib", "per_replica": 512},
                      {"axis": "session_slots", "per_replica": 100}],
  "continuity": {"mode": "stateless", "drain_required": false, "block_scale_down_with_active": false},
  "safety_required": true
}"#;

fn run(trace: &str, delay: u64) -> scale_units_core::simulate::Simulation {
    let contract = parse_contract(CONTRACT).unwrap();
    let steps = parse_trace_csv(trace).unwrap();
    simulate(&contract, &SimulationOptions { initial_replicas: 1, actuation_delay_s: delay }, &steps).unwrap()
}

#[test]
fn a_spike_scales_up_in_steps_and_back_down_after_cooldowns() {
    let sim = run(
        "time,signal\n\
         2026-08-19T12:00:00Z,50\n\
         2026-08-19T12:00:30Z,550\n\
         2026-08-19T12:00:45Z,550\n\
         2026-08-19T12:01:00Z,550\n\
         2026-08-19T12:01:30Z,550\n\
         2026-08-19T12:02:00Z,80\n\
         2026-08-19T12:03:00Z,80\n",
        0,
    );
    let replicas: Vec<u64> = sim.steps.iter().map(|s| s.replicas_after).collect();
    // 1 → hold; 550 wants 6: +2 → 3; 15 s later the 30 s cooldown holds; 30 s later +2 → 5;
    // then +1 → 6 (capped by the raw target); at 12:02 the 60 s scale-down cooldown since the
    // 12:01:30 action holds; at 12:03 one step down.
    assert_eq!(replicas, vec![1, 3, 3, 5, 6, 6, 5]);
    let actions: Vec<ActionKind> = sim.steps.iter().map(|s| s.action).collect();
    assert_eq!(actions[2], ActionKind::Hold);
    assert_eq!(sim.steps[2].reasons, vec![Reason::Cooldown]);
    assert_eq!(sim.summary.scale_ups, 3);
    assert_eq!(sim.steps[5].reasons, vec![Reason::Cooldown]);
    assert_eq!(sim.summary.scale_downs, 1);
    assert_eq!(sim.summary.peak_replicas, 6);
    assert_eq!(sim.summary.final_replicas, 5);
    assert!(sim.summary.seconds_over_target > 0);
}

#[test]
fn a_metrics_outage_blocks_instead_of_reading_zero() {
    let sim = run(
        "time,signal\n\
         2026-08-19T12:00:00Z,550\n\
         2026-08-19T12:01:00Z,\n\
         2026-08-19T12:02:00Z,\n\
         2026-08-19T12:03:00Z,550\n",
        0,
    );
    assert_eq!(sim.steps[1].action, ActionKind::Blocked);
    assert_eq!(sim.steps[1].reasons, vec![Reason::SignalMissing]);
    assert_eq!(sim.steps[2].replicas_after, sim.steps[0].replicas_after, "an outage never scales down");
    assert_eq!(sim.summary.blocked_steps, 2);
    assert_eq!(sim.summary.blocked_seconds, 120);
    assert_eq!(sim.summary.blocked_by_reason.len(), 1);
    assert_eq!(sim.summary.blocked_by_reason[0].seconds, 120);
}

#[test]
fn overload_and_capacity_columns_block_growth() {
    let sim = run(
        "time,signal,capacity_headroom,overloaded\n\
         2026-08-19T12:00:00Z,550,0,\n\
         2026-08-19T12:01:00Z,550,,true\n\
         2026-08-19T12:02:00Z,550,1,false\n",
        0,
    );
    assert_eq!(sim.steps[0].reasons, vec![Reason::CapacityExhausted]);
    assert_eq!(sim.steps[1].reasons, vec![Reason::OverloadSheddingActive]);
    // One replica of headroom: the step of 2 does not fit.
    assert_eq!(sim.steps[2].reasons, vec![Reason::CapacityExhausted]);
}

#[test]
fn actuation_delay_keeps_the_old_count_until_it_lands() {
    let sim = run(
        "time,signal\n\
         2026-08-19T12:00:00Z,550\n\
         2026-08-19T12:00:20Z,550\n\
         2026-08-19T12:00:40Z,550\n",
        30,
    );
    assert_eq!(sim.steps[0].replicas_after, 1);
    assert_eq!(sim.steps[1].replicas_before, 1);
    assert_eq!(sim.steps[1].action, ActionKind::Hold, "cooldown from the accepted action");
    assert_eq!(sim.steps[2].replicas_before, 3);
}

#[test]
fn bad_traces_are_typed_errors() {
    let contract = parse_contract(CONTRACT).unwrap();
    for (trace, path, message) in [
        ("time,signal\n2026-08-19T12:00:00Z,-1\n", "trace[0].signal", "line 2, column `signal`: `-1` is not a count"),
        ("time,signal\n2026-08-19T12:00:00Z,1.5\n", "trace[0].signal", "`1.5` is not a count"),
        (
            "time,singal\n2026-08-19T12:00:00Z,1\n",
            "trace",
            "unknown trace column `singal` in the header; the columns are `time` (or `at`), `signal`, `capacity_headroom`",
        ),
        ("signal\n1\n", "trace", "needs a `time` column"),
        ("time,signal\n", "trace", "no steps"),
        (
            "# a comment\n\ntime,ready\n2026-08-19T12:00:00Z,true\n\n2026-08-19T12:00:30Z,maybe\n",
            "trace[1].ready",
            "line 6, column `ready`: `maybe` is not true or false",
        ),
        ("time,signal\n2026-08-19T12:00:00Z,1,2\n", "trace[0]", "line 2 has 3 cells, the header 2"),
        ("time,signal\n,1\n", "trace[0].time", "line 2 has no time"),
    ] {
        let error = parse_trace_csv(trace).unwrap_err();
        assert_eq!(error.code().as_str(), "invalid_field", "{trace}");
        assert_eq!(error.path(), path, "{trace}");
        assert!(error.message().contains(message), "{trace}: {}", error.message());
    }
    let back_in_time = parse_trace_csv("time,signal\n2026-08-19T12:01:00Z,1\n2026-08-19T12:00:00Z,1\n").unwrap();
    let error = simulate(&contract, &SimulationOptions { initial_replicas: 1, actuation_delay_s: 0 }, &back_in_time)
        .unwrap_err();
    assert_eq!(error.path(), "trace[1].at");
    let naive = parse_trace_csv("time,signal\n2026-08-19T12:01:00,1\n").unwrap();
    let error =
        simulate(&contract, &SimulationOptions { initial_replicas: 1, actuation_delay_s: 0 }, &naive).unwrap_err();
    assert_eq!(error.code().as_str(), "invalid_time");
}

#[test]
fn json_input_with_csv_or_list_gives_the_same_simulation() {
    let csv = format!(
        r#"{{"contract": {CONTRACT}, "initial_replicas": 1,
            "trace_csv": "time,signal\n2026-08-19T12:00:00Z,550\n2026-08-19T12:01:00Z,\n"}}"#
    );
    let list = format!(
        r#"{{"contract": {CONTRACT}, "initial_replicas": 1, "trace": [
            {{"at": "2026-08-19T12:00:00Z", "signal": 550}}, {{"at": "2026-08-19T12:01:00Z", "signal": null}}]}}"#
    );
    let a = scale_units_core::simulate::simulate_json(&csv).unwrap();
    let b = scale_units_core::simulate::simulate_json(&list).unwrap();
    assert_eq!(a, b);
    let value: serde_json::Value = serde_json::from_str(&a).unwrap();
    assert_eq!(value["steps"][0]["action"], "scale_up");
    assert_eq!(value["steps"][1]["reasons"][0], "signal_missing");
    assert_eq!(value["summary"]["blocked_steps"], 1);
    let both = format!(r#"{{"contract": {CONTRACT}, "trace_csv": "time\n2026-08-19T12:00:00Z", "trace": []}}"#);
    assert_eq!(scale_units_core::simulate::simulate_json(&both).unwrap_err().code().as_str(), "invalid_field");
    let unknown = format!(r#"{{"contract": {CONTRACT}, "trace": [], "speed": 2}}"#);
    assert_eq!(scale_units_core::simulate::simulate_json(&unknown).unwrap_err().path(), "speed");
}

proptest::proptest! {
    /// Every scale decision is carried out, replaced while pending, or pending at the end, and
    /// the counts say which; the steps and the summary agree on what ran.
    #[test]
    fn decisions_are_carried_out_replaced_or_pending(
        signals in proptest::collection::vec(proptest::option::weighted(0.9, 0_u64..900), 1..40),
        gaps in proptest::collection::vec(0_i64..90, 40),
        delay in proptest::prop_oneof![proptest::strategy::Just(0_u64), 0_u64..200],
    ) {
        let mut at = 0_i64;
        let mut trace = String::from("time,signal\n");
        for (signal, gap) in signals.iter().zip(&gaps) {
            let (minutes, seconds) = (at / 60, at % 60);
            trace.push_str(&format!("2026-08-19T12:{minutes:02}:{seconds:02}Z,"));
            if let Some(value) = signal {
                trace.push_str(&value.to_string());
            }
            trace.push('\n');
            at = (at + gap).min(59 * 60 + 59);
        }
        let sim = run(&trace, delay);
        let s = &sim.summary;
        let decisions = s.scale_ups + s.scale_downs;
        let settled = s.scale_ups_carried_out + s.scale_downs_carried_out + s.replaced_scales;
        proptest::prop_assert_eq!(decisions, settled + u64::from(s.pending_at_end.is_some()));
        proptest::prop_assert_eq!(s.final_replicas, s.pending_at_end.as_ref().map_or(s.running_replicas_at_end, |p| p.to_replicas));
        let last = sim.steps.last().unwrap();
        proptest::prop_assert_eq!(last.replicas_after, s.running_replicas_at_end);
        proptest::prop_assert_eq!(last.pending_replicas, s.pending_at_end.as_ref().map(|p| p.to_replicas));
        if delay == 0 {
            proptest::prop_assert_eq!(s.replaced_scales, 0);
            proptest::prop_assert!(s.pending_at_end.is_none());
        }
        let mut changes = 0;
        let mut running = 1;
        for step in &sim.steps {
            proptest::prop_assert_eq!(step.current_replicas, step.replicas_before);
            changes += u64::from(step.replicas_before != running) + u64::from(step.replicas_after != step.replicas_before);
            running = step.replicas_after;
        }
        proptest::prop_assert_eq!(changes, s.scale_ups_carried_out + s.scale_downs_carried_out);
    }
}

/// `Simulation::to_json` (what `simulate_json` returns) against serde_json's writing of the same
/// value: every field, options present and absent, strings that need escaping.
mod json_text {
    use proptest::prelude::*;
    use scale_units_core::simulate::{BlockedTime, PendingScale, Simulation, SimulationStep, SimulationSummary};
    use scale_units_core::{ActionKind, Reason};

    fn text() -> impl Strategy<Value = String> {
        "[a-z0-9:\"\\\\\u{0}-\u{1f}\u{7f}é😀-]{0,12}"
    }

    fn action() -> impl Strategy<Value = ActionKind> {
        proptest::sample::select(ActionKind::ALL.to_vec())
    }

    fn reason() -> impl Strategy<Value = Reason> {
        proptest::sample::select(Reason::ALL.to_vec())
    }

    fn step() -> impl Strategy<Value = SimulationStep> {
        (
            (text(), any::<u64>(), proptest::option::of(any::<u64>()), any::<u64>(), any::<u64>(), any::<u64>()),
            (
                action(),
                any::<u64>(),
                proptest::option::of(any::<u64>()),
                proptest::collection::vec(reason(), 0..4),
                text(),
            ),
        )
            .prop_map(
                |(
                    (at, elapsed_s, signal, replicas_before, replicas_after, current_replicas),
                    (action, desired_replicas, pending_replicas, reasons, decision_id),
                )| SimulationStep {
                    at,
                    elapsed_s,
                    signal,
                    replicas_before,
                    replicas_after,
                    current_replicas,
                    action,
                    desired_replicas,
                    pending_replicas,
                    reasons,
                    decision_id,
                },
            )
    }

    fn summary() -> impl Strategy<Value = SimulationSummary> {
        let pending = (action(), any::<u64>(), any::<u64>(), text(), text()).prop_map(
            |(action, from_replicas, to_replicas, decided_at, due_at)| PendingScale {
                action,
                from_replicas,
                to_replicas,
                decided_at,
                due_at,
            },
        );
        (
            proptest::collection::vec(any::<u64>(), 12),
            proptest::collection::vec((reason(), any::<u64>()), 0..3),
            proptest::option::of(pending),
        )
            .prop_map(|(n, blocked, pending_at_end)| SimulationSummary {
                steps: n[0],
                scale_ups: n[1],
                scale_downs: n[2],
                scale_ups_carried_out: n[3],
                scale_downs_carried_out: n[4],
                replaced_scales: n[5],
                blocked_steps: n[6],
                blocked_seconds: n[7],
                blocked_by_reason: blocked
                    .into_iter()
                    .map(|(reason, seconds)| BlockedTime { reason, seconds })
                    .collect(),
                seconds_over_target: n[8],
                seconds_under_target: n[9],
                peak_replicas: n[10],
                final_replicas: n[11],
                running_replicas_at_end: n[0] ^ n[11],
                pending_at_end,
            })
    }

    proptest! {
        #[test]
        fn is_serde_jsons(steps in proptest::collection::vec(step(), 0..4), summary in summary()) {
            let simulation = Simulation { steps, summary };
            prop_assert_eq!(simulation.to_json(), serde_json::to_string(&simulation).unwrap());
        }
    }
}
