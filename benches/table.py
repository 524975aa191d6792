#!/usr/bin/env python3
"""One table of what a decision costs on every face, from the results `make bench` just produced.

    python3 benches/table.py --criterion target/criterion [--node FILE] [--python FILE] [--go FILE]
    python3 benches/table.py --criterion target/criterion --scaling

Reads criterion's raw samples (``<group>/<function>/new/sample.json``) for the native core and the
Rust host, and the per-batch timings the Node, Python and Go programs wrote with ``--json``. Every row
is a median per decision over the samples (criterion) or batches (Node, Python), with the
interquartile range as its spread, its ratio to the native core's median for the same request on
the same path (typed or JSON), measured in the same run, and the decisions per second the median
implies. The Rust host's rows also give the ratio with the SHA-256 time measured apart: the
component's hashing per decision (measured in a wasm build of the same `sha2`) taken from its time
and the native hashing from the native time, so the table shows how much of the gap the hash is
(the identity itself is never changed).

With ``--scaling`` it prints the scaling figure instead (``make bench-scaling``): the cost of a
decision against the size of the contract (capacity axes × quotas) and against the batch size,
natively and in the component, with a least-squares line through each series and its R², so
"linear or better" is a number rather than a reading of the table.

Standard library only: it runs before any virtual environment exists. A benchmark report, not a
test: it fails only when a result it needs is missing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

# (face, path, criterion id "group/function", decisions per iteration, native baseline id, the
# SHA-256 work it does: "full" = the contract's and the decision's identities, "decision" = the
# decision's only (the contract's came from the contract cache), None = not reported apart).
# A controller asks about the same units again and again, so the cached rows (the contract cache
# hit) are the common case; "distinct" rows cycle through more contracts than the cache holds.
CRITERION_ROWS = [
    ("Rust, native core", "evaluate(typed)", "native/evaluate_typed_cached", 1, None, None),
    ("Rust, native core", "evaluate_json(text)", "native/evaluate_json_cached", 1, None, None),
    ("Rust, native core", "evaluate(typed), distinct contracts", "native/evaluate_typed_distinct", 1, None, None),
    ("Rust, native core", "evaluate_json(text), distinct contracts", "native/evaluate_json_distinct", 1, None, None),
    ("Rust, native core", "1 000 units, typed", "native/batch_1000_typed_cached", 1000, None, None),
    ("Rust host (wasmtime)", "evaluate(typed)", "component/evaluate_typed", 1, "native/evaluate_typed_cached",
     "decision"),
    ("Rust host (wasmtime)", "evaluate_json(text)", "component/evaluate_json", 1, "native/evaluate_json_cached",
     "decision"),
    ("Rust host (wasmtime)", "evaluate(typed), distinct contracts", "component/evaluate_typed_distinct", 1,
     "native/evaluate_typed_distinct", "full"),
    ("Rust host (wasmtime)", "evaluate_json(text), distinct contracts", "component/evaluate_json_distinct", 1,
     "native/evaluate_json_distinct", "full"),
    ("Rust host (wasmtime)", "evaluate_json, fresh instance a call", "component/evaluate_json_fresh_instance", 1,
     "native/evaluate_json_distinct", "full"),
    ("Rust host (wasmtime)", "1 000 units, 1 000 typed calls", "component/single_1000_typed", 1000,
     "native/batch_1000_typed_cached", "decision"),
    ("Rust host (wasmtime)", "1 000 units, one evaluate_batch call", "component/batch_1000_typed", 1000,
     "native/batch_1000_typed_cached", "decision"),
    ("Rust host (wasmtime)", "1 000 units, one evaluate_batch_json call", "component/batch_1000_json", 1000,
     "native/evaluate_json_cached", "decision"),
]
# SHA-256 per decision of the request above (criterion ids), natively and inside wasm.
SHA = {
    "full": ("sha256/native_t01", "sha256/wasm_t01"),
    "decision": ("sha256/native_t01_decision_only", "sha256/wasm_t01_decision_only"),
}
# Node and Python repeat one request, so their component hits its contract cache: their baseline
# is the native core with the cache.
BINDING_BASELINE = {"evaluate_json": "native/evaluate_json_cached", "evaluate_typed": "native/evaluate_typed_cached"}


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


def fit(xs: list[float], ys: list[float], step: str) -> str:
    """The least-squares line through the points: its slope per `step` and its R²."""
    slope, _ = statistics.linear_regression(xs, ys)
    r_squared = statistics.correlation(xs, ys) ** 2 if len(set(ys)) > 1 else 1.0
    return f"{slope:.2f} µs per {step}, R² {r_squared:.4f}"


def scaling(root: Path) -> int:
    """The scaling figure from the `scaling_*` criterion groups."""
    shapes = []
    for path in sorted((root / "scaling_contract_component").glob("axes_*_quotas_*")):
        _, axes, _, quotas = path.name.split("_")
        shapes.append((int(axes), int(quotas)))
    sizes = sorted(int(p.name) for p in (root / "scaling_batch_component" / "batch").glob("[0-9]*"))
    if not shapes or not sizes:
        print("missing results (run `make bench-scaling`)", file=sys.stderr)
        return 1
    costs: dict[tuple[str, int, int], float] = {}
    for face in ("native", "component"):
        for axes, quotas in shapes:
            times = criterion_times(root, f"scaling_contract_{face}/axes_{axes}_quotas_{quotas}", 1)
            if times is None:
                print(f"missing scaling_contract_{face}/axes_{axes}_quotas_{quotas}", file=sys.stderr)
                return 1
            costs[(face, axes, quotas)] = statistics.median(times)
    all_axes = sorted({a for a, _ in shapes})
    all_quotas = sorted({q for _, q in shapes})
    print("| capacity axes × quotas | native µs | component µs | × |")
    print("|---|---:|---:|---:|")
    for axes, quotas in sorted(shapes):
        native, component = costs[("native", axes, quotas)], costs[("component", axes, quotas)]
        print(f"| {axes} × {quotas} | {native:.2f} | {component:.2f} | {component / native:.1f} |")
    print()
    for face in ("native", "component"):
        for quotas in all_quotas:
            xs = [a for a in all_axes if (a, quotas) in shapes]
            print(f"- {face}, per capacity axis at {quotas} quotas: {fit(xs, [costs[(face, a, quotas)] for a in xs], 'axis')}")
        for axes in all_axes:
            xs = [q for q in all_quotas if (axes, q) in shapes]
            print(f"- {face}, per quota at {axes} axes: {fit(xs, [costs[(face, axes, q)] for q in xs], 'quota')}")
    print()
    print("| batch size | native µs per unit | component µs per unit |")
    print("|---:|---:|---:|")
    per_unit: dict[str, list[float]] = {"native": [], "component": []}
    for size in sizes:
        for face in per_unit:
            times = criterion_times(root, f"scaling_batch_{face}/batch/{size}", size)
            if times is None:
                print(f"missing scaling_batch_{face}/batch/{size}", file=sys.stderr)
                return 1
            per_unit[face].append(statistics.median(times))
        print(f"| {size:,} | {per_unit['native'][-1]:.2f} | {per_unit['component'][-1]:.2f} |")
    print()
    for face, units in per_unit.items():
        totals = [unit * size for unit, size in zip(units, sizes)]
        print(f"- {face}, whole batch against its size: {fit([float(n) for n in sizes], totals, 'unit')}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--criterion", type=Path, required=True)
    parser.add_argument("--node", type=Path)
    parser.add_argument("--python", type=Path)
    parser.add_argument("--go", type=Path)
    parser.add_argument("--scaling", action="store_true", help="print the scaling figure instead")
    args = parser.parse_args()
    if args.scaling:
        return scaling(args.criterion)

    missing = []
    medians: dict[str, float] = {}
    rows = []
    for face, path, bench_id, per_iteration, baseline, sha_kind in CRITERION_ROWS:
        times = criterion_times(args.criterion, bench_id, per_iteration)
        if times is None:
            missing.append(bench_id)
            continue
        medians[bench_id] = statistics.median(times)
        rows.append((face, path, times, baseline, sha_kind))
    sha: dict[str, tuple[float, float]] = {}
    for kind, (native_id, wasm_id) in SHA.items():
        native, wasm = criterion_times(args.criterion, native_id, 1), criterion_times(args.criterion, wasm_id, 1)
        if native is None or wasm is None:
            missing.append(native_id if native is None else wasm_id)
        else:
            sha[kind] = (statistics.median(native), statistics.median(wasm))
    for source in (args.node, args.python, args.go):
        if source is None:
            continue
        if not source.is_file():
            missing.append(str(source))
            continue
        report = json.loads(source.read_text())
        for row in report["rows"]:
            rows.append((report["face"], row["path"], row["per_call_us"], BINDING_BASELINE[row["native"]], None))
    for baseline in {row[3] for row in rows if row[3]}:
        if baseline not in medians:
            missing.append(baseline)
    if missing:
        print("missing results (run `make bench`): " + ", ".join(sorted(set(missing))), file=sys.stderr)
        return 1

    print("| face | path | median µs/decision | IQR µs | × native | × native, SHA-256 apart | decisions/s |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for face, path, times, baseline, sha_kind in rows:
        median, low, high = spread(times)
        ratio = f"{median / medians[baseline]:.2f}" if baseline else "baseline"
        apart = "—"
        if baseline and sha_kind:
            native_sha, wasm_sha = sha[sha_kind]
            apart = f"{(median - wasm_sha) / (medians[baseline] - native_sha):.2f}"
        print(f"| {face} | `{path}` | {median:.2f} | {low:.2f}–{high:.2f} | {ratio} | {apart} | {1e6 / median:,.0f} |")
    print()
    for kind, (native_sha, wasm_sha) in sha.items():
        print(f"- SHA-256 per decision, {kind} identities: native {native_sha:.2f} µs, wasm {wasm_sha:.2f} µs")
    print(
        "- Node, Python and Go repeat one request (the contract cache hits); their baseline is the native core's "
        "cached path of the same kind (JSON or typed)."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
