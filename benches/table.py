#!/usr/bin/env python3
"""One table of what a decision costs on every face, from the results `make bench` just produced.

    python3 benches/table.py --criterion target/criterion [--node FILE] [--python FILE] [--markdown]

Reads criterion's raw samples (``<group>/<function>/new/sample.json``) for the native core and the
Rust host, and the per-batch timings the Node and Python scripts wrote with ``--json``. Every row
is a median per decision over the samples (criterion) or batches (Node, Python), with the
interquartile range as its spread, its ratio to the native core's median for the same request on
the same path (typed or JSON), measured in the same run, and the decisions per second the median
implies. The Rust host's rows also give the ratio with the SHA-256 time measured apart: the
component's hashing per decision taken from its time and the native hashing from the native
time, so the table shows how much of the gap the hash is (the identity itself is never changed).

Standard library only: it runs before any virtual environment exists. A benchmark report, not a
test: it fails only when a result it needs is missing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

# (face, path, criterion id "group/function", decisions per iteration, native baseline id)
CRITERION_ROWS = [
    ("Rust, native core", "evaluate(typed)", "native/evaluate_typed", 1, None),
    ("Rust, native core", "evaluate_json(text)", "native/evaluate_json", 1, None),
    ("Rust host (wasmtime)", "evaluate(typed)", "component/evaluate_typed", 1, "native/evaluate_typed"),
    ("Rust host (wasmtime)", "evaluate_json(text)", "component/evaluate_json", 1, "native/evaluate_json"),
    ("Rust host (wasmtime)", "evaluate_json, fresh instance", "component/evaluate_json_fresh_instance", 1,
     "native/evaluate_json"),
    ("Rust host (wasmtime)", "1 000 single typed calls", "batch/component_single_1000", 1000, "native/evaluate_typed"),
    ("Rust host (wasmtime)", "evaluate_batch, 1 000 a call", "batch/component_batch_1000", 1000,
     "native/evaluate_typed"),
]
# SHA-256 per decision of the request above, natively and inside the component (criterion ids).
SHA_NATIVE = "sha256/native_per_decision"
SHA_COMPONENT = "sha256/wasm_per_decision"


def criterion_times(root: Path, bench_id: str, per_iteration: int) -> list[float] | None:
    """µs per decision of every criterion sample of ``bench_id``, or None when it was not run."""
    sample = root / bench_id / "new" / "sample.json"
    if not sample.is_file():
        return None
    data = json.loads(sample.read_text())
    return [time / iters / 1000 / per_iteration for time, iters in zip(data["times"], data["iters"])]


def spread(times: list[float]) -> tuple[float, float, float]:
    """Median and interquartile range."""
    if len(times) < 4:
        return statistics.median(times), min(times), max(times)
    quartiles = statistics.quantiles(times, n=4)
    return statistics.median(times), quartiles[0], quartiles[2]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--criterion", type=Path, required=True)
    parser.add_argument("--node", type=Path)
    parser.add_argument("--python", type=Path)
    args = parser.parse_args()

    missing = []
    medians: dict[str, float] = {}
    rows = []
    for face, path, bench_id, per_iteration, baseline in CRITERION_ROWS:
        times = criterion_times(args.criterion, bench_id, per_iteration)
        if times is None:
            missing.append(bench_id)
            continue
        medians[bench_id] = statistics.median(times)
        rows.append((face, path, times, baseline))
    sha = {}
    for bench_id in (SHA_NATIVE, SHA_COMPONENT):
        times = criterion_times(args.criterion, bench_id, 1)
        if times is not None:
            sha[bench_id] = statistics.median(times)
    for source in (args.node, args.python):
        if source is None:
            continue
        if not source.is_file():
            missing.append(str(source))
            continue
        report = json.loads(source.read_text())
        for row in report["rows"]:
            rows.append((report["face"], row["path"], row["per_call_us"], f"native/{row['native']}"))
    if missing:
        print("missing results (run `make bench`): " + ", ".join(missing), file=sys.stderr)
        return 1

    with_sha = SHA_NATIVE in sha and SHA_COMPONENT in sha
    header = "| face | path | median µs/decision | IQR µs | × native | decisions/s |"
    rule = "|---|---|---:|---:|---:|---:|"
    if with_sha:
        header += " × native, SHA-256 apart |"
        rule += "---:|"
    print(header)
    print(rule)
    for face, path, times, baseline in rows:
        median, low, high = spread(times)
        ratio = f"{median / medians[baseline]:.2f}" if baseline else "1 (baseline)"
        line = f"| {face} | `{path}` | {median:.2f} | {low:.2f}–{high:.2f} | {ratio} | {1e6 / median:,.0f} |"
        if with_sha:
            apart = "—"
            if baseline and face.startswith("Rust host"):
                native = medians[baseline] - sha[SHA_NATIVE]
                apart = f"{(median - sha[SHA_COMPONENT]) / native:.2f}"
            line += f" {apart} |"
        print(line)
    if with_sha:
        print(
            f"\nSHA-256 per decision: native {sha[SHA_NATIVE]:.2f} µs, in the component {sha[SHA_COMPONENT]:.2f} µs "
            f"(`{SHA_NATIVE}`, `{SHA_COMPONENT}`)."
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
