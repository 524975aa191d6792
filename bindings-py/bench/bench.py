#!/usr/bin/env python3
"""Per-call timing of the Python package on one realistic request (reference vector t01: an MCP
gateway, 4 capacity axes, a provider quota, continuity and safety; it scales up).

    python bench/bench.py [--batches N] [--calls N] [--criterion DIR] [--json FILE]

Each path runs ``batches`` batches of ``calls`` calls after a warm-up; the table shows the
median per-call time over batches and the decisions per second it implies. When the native
core's criterion results are found (``make bench-py`` runs ``cargo bench`` for them first, in
the same run), each path is also given as a ratio to the native core. With ``--json``, the
per-call time of every batch is also written to FILE for the one table of ``make bench``
(``benches/table.py``). A benchmark, not a test.

The typed path calls the component's typed ``evaluate`` (WIT records in and out) through the
package's private glue; it is measured to justify that ``Evaluator.evaluate`` does not use it.
The typed records have no defaults, so it is fed ``t01-complete.json``: t01 with every SPEC
default written out, checked here to give the same decision bytes as t01.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

from importlib.metadata import version

from scale_units import Evaluator, _component

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
T01 = ROOT / "tests" / "vectors" / "reference" / "t01-mcp-target-tracks-deterministically.json"
COMPLETE = HERE / "t01-complete.json"
#: Requests in one call of the batch path.
BATCH = 1000


def measure(paths: list[tuple[Callable[[], Any], int, int]], batches: int) -> list[list[float]]:
    """µs per decision in each batch, for each ``(fn, calls, decisions per call)``. The paths'
    batches are interleaved, so that a change of load on a shared machine hits them alike."""
    for fn, calls, _ in paths:
        for _ in range(calls):
            fn()
    per_call: list[list[float]] = [[] for _ in paths]
    for _ in range(batches):
        for index, (fn, calls, per) in enumerate(paths):
            start = time.perf_counter_ns()
            for _ in range(calls):
                fn()
            per_call[index].append((time.perf_counter_ns() - start) / 1000 / (calls * per))
    return per_call


def parallel_throughput(evaluator: Evaluator, text: str, threads: int, seconds: float) -> tuple[float, float]:
    """Decisions per second with ``threads`` threads sharing one evaluator, and the process's
    CPU time over wall time (how many cores it really got: others may be busy)."""
    counts = [0] * threads
    stop = time.perf_counter() + seconds

    def work(index: int) -> None:
        n = 0
        while time.perf_counter() < stop:
            for _ in range(50):
                evaluator.evaluate_json(text)
            n += 50
        counts[index] = n

    pool = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    start, cpu = time.perf_counter(), time.process_time()
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    wall = time.perf_counter() - start
    return sum(counts) / wall, (time.process_time() - cpu) / wall


def native_medians(criterion: Path) -> dict[str, float]:
    """Median µs of the native core's criterion benches, by name, when they were run."""
    found = {}
    for name in ("evaluate_json", "evaluate_typed"):
        estimates = criterion / "native" / name / "new" / "estimates.json"
        if estimates.is_file():
            found[name] = json.loads(estimates.read_text())["median"]["point_estimate"] / 1000
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=int, default=21)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--criterion", type=Path, default=ROOT / "target" / "criterion")
    parser.add_argument("--json", type=Path, help="also write every batch's per-call µs here")
    args = parser.parse_args()

    request = json.loads(T01.read_text())["request"]
    complete = json.loads(COMPLETE.read_text())
    text = json.dumps(request)

    compile_ms = statistics.median(_timed(Evaluator) for _ in range(5)) * 1000
    evaluator = Evaluator()
    fueled = Evaluator(fuel=100_000_000)
    expected = evaluator.evaluate_json(text)
    if evaluator.evaluate_json(json.dumps(complete)) != expected:
        print(f"{COMPLETE.name} does not decide as t01 does; fix the fixture", file=sys.stderr)
        return 1

    runtime = evaluator._runtime
    request_type = runtime.param_type("evaluate")
    result_type = runtime.result_type("evaluate")
    decision_type = result_type.ok  # type: ignore[union-attr]
    lowered = _component.lower(request_type, complete)

    def typed() -> Any:
        raw = runtime.call_result("evaluate", _component.lower(request_type, complete))
        return _component.lift(decision_type, raw)

    if json.dumps(typed(), separators=(",", ":")) != expected:
        print("the typed path decides differently from the JSON path", file=sys.stderr)
        return 1

    typed_calls = max(1, args.calls // 10)
    batch = [text] * BATCH
    batch_calls = max(1, args.calls // BATCH)
    # (name, one call, calls a batch, decisions a call, native baseline)
    paths: list[tuple[str, Callable[[], Any], int, int, str | None]] = [
        ("evaluate_json(str) -> str", lambda: evaluator.evaluate_json(text), args.calls, 1, "evaluate_json"),
        ("evaluate(dict) -> Decision", lambda: evaluator.evaluate(request), args.calls, 1, "evaluate_json"),
        ("evaluate_json, fuel metered", lambda: fueled.evaluate_json(text), args.calls, 1, "evaluate_json"),
        (f"evaluate_batch_json({BATCH} texts), per decision", lambda: evaluator.evaluate_batch_json(batch), batch_calls, BATCH, "evaluate_json"),
        ("typed WIT evaluate (dict -> records -> dict)", typed, typed_calls, 1, "evaluate_typed"),
        ("typed WIT evaluate, call only (records prepared)", lambda: runtime.call("evaluate", lowered), typed_calls, 1, "evaluate_typed"),
    ]
    native = native_medians(args.criterion)

    print(
        f"scale-units (Python {platform.python_version()}, wasmtime-py {version('wasmtime')}, "
        f"{evaluator.component_digest[:19]}…), {args.batches} batches × {args.calls} calls "
        f"({typed_calls} for the typed paths)"
    )
    print(f"request: tests/vectors/reference/{T01.name} ({len(text)} bytes of JSON)")
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start; batches of the paths interleaved")
    print(f"Evaluator() (compile + instantiate): {compile_ms:.0f} ms\n")
    print("| path | median µs/call | min–max µs | decisions/s | × native |")
    print("|---|---:|---:|---:|---:|")
    per_batch = measure([(fn, calls, per) for _, fn, calls, per, _ in paths], args.batches)
    results = [(statistics.median(times), min(times), max(times)) for times in per_batch]
    if args.json:
        rows = [
            {"path": name, "native": baseline, "per_call_us": times}
            for (name, _, _, _, baseline), times in zip(paths, per_batch)
        ]
        face = f"Python {platform.python_version()} (wasmtime-py {version('wasmtime')})"
        args.json.write_text(json.dumps({"face": face, "component": evaluator.component_digest, "rows": rows}))
    for (name, _, _, _, baseline), (median, low, high) in zip(paths, results):
        ratio = f"{median / native[baseline]:.1f}× `{baseline}`" if baseline in native else "—"
        print(f"| `{name}` | {median:.1f} | {low:.1f}–{high:.1f} | {1e6 / median:,.0f} | {ratio} |")
    if native:
        rows = ", ".join(f"`{name}` {value:.1f} µs" for name, value in native.items())
        print(f"\nnative core (criterion median, `native/*`): {rows}")
    else:
        print(f"\nnative core: not measured (no criterion results below {args.criterion}; `make bench-py` runs them)")

    print("\nevaluate_json throughput, one Evaluator shared by the threads:")
    for threads in (1, 2):
        rate, cores = parallel_throughput(evaluator, text, threads, 3.0)
        print(f"- {threads} thread{'s' if threads > 1 else ''}: {rate:,.0f} decisions/s (CPU/wall {cores:.2f})")
    return 0


def _timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


if __name__ == "__main__":
    sys.exit(main())
