//! Runs one entry point of the core many times on reference vector t01 (or, for the `_invalid`
//! ones, `validation/required-axis-without-demand`), for measurements a loaded machine does not
//! disturb (BENCHMARKS.md, "Native core: the diagnosis"):
//!
//! ```text
//! cargo build --release -p scale-units-core --example calls
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null target/release/examples/calls evaluate_json 2000
//! target/release/examples/calls time:evaluate_json 200   # the fastest of 300 batches, µs per call
//! ```
//!
//! Instructions per call are (Ir at N − Ir at 0) / N.

#![allow(clippy::unwrap_used, clippy::panic, clippy::print_stdout, reason = "a measuring tool fails by panicking")]

use std::hint::black_box;
use std::time::Instant;

use scale_units_core::conformance::Vector;
use scale_units_core::{diagnose_request_json, evaluate, evaluate_json, parse_request, validate_contract};

const T01: &str = include_str!("../../tests/vectors/reference/t01-mcp-target-tracks-deterministically.json");
const LATE_FAULT: &str = include_str!("../../tests/vectors/validation/required-axis-without-demand.json");

fn main() {
    let mut args = std::env::args().skip(1);
    let which = args.next().unwrap_or_default();
    let calls: u32 = args.next().and_then(|n| n.parse().ok()).unwrap_or(1000);
    let (timed, which) = match which.strip_prefix("time:") {
        Some(name) => (true, name.to_owned()),
        None => (false, which),
    };
    let request = Vector::parse(T01).unwrap().request_text;
    let invalid = Vector::parse(LATE_FAULT).unwrap().request_text;
    let typed = parse_request(&request).unwrap();
    let call = || match which.as_str() {
        "evaluate_json" => drop(black_box(evaluate_json(black_box(&request)))),
        "evaluate_typed" => drop(black_box(evaluate(black_box(&typed)))),
        "parse_request" => drop(black_box(parse_request(black_box(&request)))),
        "validate_contract" => drop(black_box(validate_contract(black_box(&typed.contract)))),
        "evaluate_json_invalid" => drop(black_box(evaluate_json(black_box(&invalid)))),
        "diagnose_request_json" => drop(black_box(diagnose_request_json(black_box(&request)))),
        "diagnose_request_json_invalid" => drop(black_box(diagnose_request_json(black_box(&invalid)))),
        other => panic!("unknown entry point {other}"),
    };
    let mut fastest = f64::MAX;
    for _ in 0..if timed { 300 } else { 1 } {
        let start = Instant::now();
        for _ in 0..calls {
            call();
        }
        fastest = fastest.min(start.elapsed().as_secs_f64() / f64::from(calls.max(1)));
    }
    if timed {
        println!("{which} {:.3} µs", fastest * 1e6);
    }
}
