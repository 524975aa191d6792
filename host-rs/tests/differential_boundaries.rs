//! The native core and the component agree byte for byte on requests generated at the decision
//! boundaries (`common::boundary`): the decision JSON, or the error's code, message and path,
//! through the JSON and the typed entry points.
//!
//! `SCALE_UNITS_DIFFERENTIAL_COUNT` sets how many requests (default 20 000, what CI runs; the
//! figures of the one-million run are in SECURITY.md), `SCALE_UNITS_DIFFERENTIAL_THREADS` how
//! many threads share the one `Policy` (default 1), `SCALE_UNITS_DIFFERENTIAL_SEED` the seed.
#![allow(
    clippy::panic,
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "test code: a failed expectation is a test failure"
)]

mod common;

use std::collections::BTreeMap;
use std::time::Instant;

use common::boundary::{Choose, boundary_request, request_json};
use common::policy;
use scale_units_core::EvaluationRequest;

/// xorshift64*: deterministic, so a divergence reproduces from its seed and index.
struct Rng(u64);

impl Choose for Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let value = self.0.wrapping_mul(0x2545_f491_4f6c_dd1d);
        usize::try_from(value % u64::try_from(n.max(1)).expect("fits")).expect("fits")
    }
}

type Outcome = Result<String, (String, String, String)>;

fn error_triple(e: &scale_units_core::EvaluationError) -> (String, String, String) {
    (e.code().to_string(), e.message().to_owned(), e.path().to_owned())
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.replace('_', "").parse().ok()).unwrap_or(default)
}

fn bases() -> Vec<EvaluationRequest> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut bases = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("examples") {
        let path = entry.expect("entry").path().join("request.json");
        if path.is_file() {
            let text = std::fs::read_to_string(&path).expect("readable");
            bases.push(scale_units_core::parse_request(&text).expect("an example parses"));
        }
    }
    bases.sort_by(|a, b| a.contract.unit_ref.cmp(&b.contract.unit_ref));
    bases
}

#[derive(Default)]
struct Tally {
    compared: u64,
    typed: u64,
    divergences: Vec<String>,
    outcomes: BTreeMap<String, u64>,
}

/// Generates and compares `count` requests from stream `seed`.
fn run(seed: u64, count: u64, bases: &[EvaluationRequest]) -> Tally {
    let mut rng = Rng(seed | 1);
    let mut tally = Tally::default();
    for index in 0..count {
        let base = &bases[rng.below(bases.len())];
        let request = boundary_request(base, &mut rng);
        let text = request_json(&request);
        let native: Outcome = scale_units_core::evaluate_json(&text).map_err(|e| error_triple(&e));
        let component: Outcome = policy()
            .evaluate_json(&text)
            .expect("no host error")
            .map(|evaluated| evaluated.decision)
            .map_err(|e| error_triple(&e));
        tally.compared += 1;
        if native != component && tally.divergences.len() < 10 {
            tally.divergences.push(format!("seed {seed} #{index} evaluate-json:\n{text}\n{native:?}\n{component:?}"));
        }
        // The typed entry point on the same request, compared with the JSON one too.
        let typed_native = scale_units_core::evaluate(&request);
        let typed_component = policy().evaluate(&request).expect("no host error");
        tally.typed += 1;
        let as_json = |outcome: Result<scale_units_core::Decision, (String, String, String)>| -> Outcome {
            outcome.map(|decision| scale_units_core::decision_to_json(&decision))
        };
        let typed_native_json = as_json(typed_native.as_ref().cloned().map_err(error_triple));
        let typed_component_json = as_json(typed_component.map(|e| e.decision).map_err(|e| error_triple(&e)));
        if (typed_native_json != typed_component_json || typed_native_json != native) && tally.divergences.len() < 10 {
            tally.divergences.push(format!(
                "seed {seed} #{index} evaluate (typed):\n{text}\n{typed_native_json:?}\n{typed_component_json:?}\n{native:?}"
            ));
        }
        let label = match &typed_native {
            Ok(decision) => {
                let reasons: Vec<String> = decision.reasons.iter().map(ToString::to_string).collect();
                format!("{} {}", decision.action, reasons.join(","))
            }
            Err(e) => format!("error {} {}", e.code(), e.message().chars().take(50).collect::<String>()),
        };
        *tally.outcomes.entry(label).or_default() += 1;
    }
    tally
}

#[test]
fn boundary_requests_give_the_same_bytes() {
    let count = env_number("SCALE_UNITS_DIFFERENTIAL_COUNT", 20_000);
    let threads = env_number("SCALE_UNITS_DIFFERENTIAL_THREADS", 1).max(1);
    let seed = env_number("SCALE_UNITS_DIFFERENTIAL_SEED", 0x5ca1_e0b0_0dad_0001);
    let bases = bases();
    assert!(bases.len() >= 9, "found {} examples", bases.len());
    policy();

    let started = Instant::now();
    let tallies: Vec<Tally> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|thread| {
                let share = count / threads + u64::from(thread < count % threads);
                let bases = &bases;
                scope.spawn(move || run(seed.wrapping_add(thread.wrapping_mul(0x9e37_79b9_7f4a_7c15)), share, bases))
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("no panic")).collect()
    });
    let elapsed = started.elapsed();

    let mut total = Tally::default();
    for tally in tallies {
        total.compared += tally.compared;
        total.typed += tally.typed;
        total.divergences.extend(tally.divergences);
        for (label, n) in tally.outcomes {
            *total.outcomes.entry(label).or_default() += n;
        }
    }
    let decided: u64 = total.outcomes.iter().filter(|(k, _)| !k.starts_with("error")).map(|(_, n)| n).sum();
    let mut by_count: Vec<_> = total.outcomes.iter().collect();
    by_count.sort_by(|a, b| b.1.cmp(a.1));
    for (label, n) in by_count.iter().take(40) {
        println!("{n:>9}  {label}");
    }
    println!(
        "{} requests compared through evaluate-json and {} through evaluate (typed), {} threads, {:.1} s: \
         {decided} decided, {} refused, {} distinct outcomes, {} divergences",
        total.compared,
        total.typed,
        threads,
        elapsed.as_secs_f64(),
        total.compared - decided,
        total.outcomes.len(),
        total.divergences.len()
    );
    assert!(total.divergences.is_empty(), "{}", total.divergences.join("\n\n"));
    assert!(decided > count / 3, "too few decisions ({decided}) to exercise the algorithm");
    assert!(decided < count - count / 10, "too few errors to exercise validation");
}
