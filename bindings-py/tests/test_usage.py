"""The package as its users meet it: timezone-aware ``datetime`` values for times, ``TypedDict``s
that let mypy catch a misspelt key, the errors the README names, and the conformance command
reading ``$SCALE_UNITS_VECTORS``."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import textwrap
import typing
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT
import scale_units
from scale_units import Evaluator, HostError, ScaleUnitsError, typed
from scale_units._wire import time_text

T01 = ROOT / "tests" / "vectors" / "reference" / "t01-mcp-target-tracks-deterministically.json"


def t01() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(T01.read_text(encoding="utf-8"))["request"]
    return data


def parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


# ---- datetime ----------------------------------------------------------------------------------


def test_time_text_is_the_specs_text() -> None:
    utc = datetime(2026, 8, 19, 12, 0, 0, tzinfo=timezone.utc)
    assert time_text(utc) == "2026-08-19T12:00:00Z"
    assert time_text(utc.replace(microsecond=250)) == "2026-08-19T12:00:00.000250Z"
    paris = timezone(timedelta(hours=2))
    assert time_text(utc.astimezone(paris)) == "2026-08-19T14:00:00+02:00"
    assert time_text(utc.astimezone(timezone(timedelta(hours=-3, minutes=-30)))) == "2026-08-19T08:30:00-03:30"
    # An offset of seconds has no SPEC spelling: the same instant in UTC.
    odd = timezone(timedelta(hours=1, seconds=7))
    assert time_text(utc.astimezone(odd)) == "2026-08-19T12:00:00Z"


def test_aware_datetimes_decide_as_their_text(evaluator: Evaluator) -> None:
    request = t01()
    expected = evaluator.evaluate(request)
    with_datetimes = copy.deepcopy(request)
    paris = timezone(timedelta(hours=2))
    with_datetimes["now"] = parse_time(request["now"]).astimezone(paris)
    for observation in [with_datetimes["signal"], *with_datetimes["capacities"], *with_datetimes.get("quotas", [])]:
        observation["observed_at"] = parse_time(observation["observed_at"])
        observation["expires_at"] = parse_time(observation["expires_at"])
    decision = evaluator.evaluate(with_datetimes)
    assert (decision.action, decision.desired_replicas, decision.reasons) == (
        expected.action,
        expected.desired_replicas,
        expected.reasons,
    )
    # The batch path writes them the same way.
    [batched] = evaluator.evaluate_batch([with_datetimes])
    assert batched == decision


def test_a_naive_datetime_is_refused_at_its_path(evaluator: Evaluator) -> None:
    request = t01()
    request["capacities"][1]["observed_at"] = datetime(2026, 8, 19, 11, 59)
    with pytest.raises(ScaleUnitsError) as caught:
        evaluator.evaluate(request)
    error = caught.value
    assert error.code == "invalid_time"
    assert error.path == "capacities[1].observed_at"
    assert error.message.startswith("observed_at must be timezone-aware")
    assert "tzinfo" in error.message
    request = t01()
    request["now"] = datetime(2026, 8, 19, 12, 0)
    with pytest.raises(ScaleUnitsError) as caught:
        evaluator.evaluate(request)
    assert (caught.value.code, caught.value.path) == ("invalid_time", "now")
    # The same words as the core's for text without an offset.
    request["now"] = "2026-08-19T12:00:00"
    with pytest.raises(ScaleUnitsError) as core:
        evaluator.evaluate(request)
    assert core.value.code == "invalid_time" and "must be timezone-aware" in core.value.message


def test_a_trace_step_may_be_a_datetime(evaluator: Evaluator) -> None:
    vector = json.loads((ROOT / "tests" / "vectors-sim" / "metrics-outage-is-never-zero.json").read_text(encoding="utf-8"))
    start = datetime(2026, 8, 19, 12, 0, tzinfo=timezone.utc)
    trace = [{"at": start + timedelta(minutes=i), "signal": None if i == 1 else 100} for i in range(3)]
    result = evaluator.simulate({"contract": vector["input"]["contract"], "trace": trace})
    assert [step["at"] for step in result["steps"]] == [time_text(step["at"]) for step in trace]
    assert result["steps"][1]["reasons"] == ["signal_missing"]


# ---- TypedDicts --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("literal", "enum"),
    [
        (typed.SurfaceName, scale_units.SurfaceKind),
        (typed.SignalName, scale_units.SignalKind),
        (typed.AxisName, scale_units.CapacityAxis),
        (typed.ScopeName, scale_units.QuotaScope),
        (typed.ModeName, scale_units.ContinuityMode),
    ],
)
def test_the_literal_vocabularies_are_the_enums(literal: Any, enum: Any) -> None:
    assert list(typing.get_args(literal)) == [member.value for member in enum]


def test_the_typed_dicts_name_every_field_of_the_schema() -> None:
    """Each TypedDict's keys are the properties of its JSON Schema definition (schema/, generated
    from the core's types), and its required keys are the schema's required ones."""
    schema = json.loads((ROOT / "schema" / "evaluation-request.schema.json").read_text(encoding="utf-8"))
    definitions = dict(schema["$defs"], EvaluationRequest=schema)
    for name in typed.__all__:
        if name == "Time":
            continue
        if name in {"TraceStep", "SimulationInput"}:
            continue  # not in the request schema; checked against the simulator below
        cls = getattr(typed, name)
        definition = definitions[name]
        assert set(cls.__annotations__) == set(definition["properties"]), name
        assert cls.__required_keys__ == frozenset(definition.get("required", [])), name
    assert set(typed.TraceStep.__annotations__) == {
        "at",
        "signal",
        "capacity_headroom",
        "quota_headroom",
        "active_sessions",
        "ready",
        "overloaded",
        "noisy_neighbor",
    }


MYPY_GOOD = """
    from datetime import datetime, timezone
    from scale_units import Evaluator, EvaluationRequest, ScaleUnitContract

    contract: ScaleUnitContract = {
        "unit_ref": "unit:api",
        "surface": "api_gateway",
        "policy": {"target": 100, "target_signal": "in_flight", "max_replicas": 4},
        "allowed_signals": ["in_flight"],
        "required_capacity_axes": ["cpu_milli", "memory_mib", "session_slots"],
        "replica_demands": [{"axis": "cpu_milli", "per_replica": 500}],
        "continuity": {"mode": "stateless", "block_scale_down_with_active": False},
    }
    request: EvaluationRequest = {"contract": contract, "current_replicas": 1, "now": datetime.now(timezone.utc)}
    Evaluator().evaluate(request)
    Evaluator().evaluate({"contract": contract, "current_replicas": 1, "now": "2026-08-19T12:00:00Z"})
"""

MYPY_BAD = """
    from scale_units import Evaluator, ScaleUnitContract

    contract: ScaleUnitContract = {
        "unit_ref": "unit:api",
        "surface": "api_gateway",
        "policy": {"target": 100, "target_signal": "in_flight", "max_replica": 4},
        "allowed_signals": ["in_flight"],
        "required_capacity_axes": ["cpu_milli"],
        "replica_demands": [{"axis": "cpu_milli", "per_replica": 500}],
        "continuity": {"mode": "stateles"},
    }
    Evaluator().evaluate({"contract": contract, "current_replica": 1, "now": "2026-08-19T12:00:00Z"})
"""


def run_mypy(tmp_path: Path, source: str) -> tuple[int, str]:
    """mypy (installed into the test environment by `make py-setup`) on one file of source."""
    from mypy import api as mypy_api

    file = tmp_path / "snippet.py"
    file.write_text(textwrap.dedent(source), encoding="utf-8")
    stdout, stderr, status = mypy_api.run(
        ["--strict", "--no-incremental", "--cache-dir", os.devnull, "--python-version", "3.10", str(file)]
    )
    return status, stdout + stderr


def test_mypy_accepts_a_well_formed_request(tmp_path: Path) -> None:
    status, output = run_mypy(tmp_path, MYPY_GOOD)
    assert status == 0, output


def test_mypy_catches_misspelt_keys_and_words(tmp_path: Path) -> None:
    status, output = run_mypy(tmp_path, MYPY_BAD)
    assert status == 1, output
    # Line numbers in the dedented snippet (its first line is empty).
    assert 'snippet.py:7: error: Extra key "max_replica" for TypedDict "ScalePolicy"' in output, output
    assert any(line.startswith(f"{tmp_path}/snippet.py:11: error:") and "'stateles'" in line for line in output.splitlines()), output
    assert 'snippet.py:13: error: Extra key "current_replica" for TypedDict "EvaluationRequest"' in output, output


# ---- errors the README names -------------------------------------------------------------------


def test_evaluator_refuses_what_it_cannot_load_with_host_error(tmp_path: Path) -> None:
    with pytest.raises(HostError, match="cannot read the component"):
        Evaluator(tmp_path / "missing.wasm")
    with pytest.raises(HostError, match="not a loadable component"):
        Evaluator(b"not wasm")
    (tmp_path / "junk.wasm").write_bytes(b"\x00asm junk")
    with pytest.raises(HostError):
        Evaluator(str(tmp_path / "junk.wasm"))
    with pytest.raises(HostError, match="not the expected"):
        Evaluator(expect_digest="sha256:" + "0" * 64)
    with pytest.raises(ValueError):
        Evaluator(fuel=0)


def test_explain_takes_a_decision_or_its_dict(evaluator: Evaluator) -> None:
    decision = evaluator.evaluate(t01())
    words = evaluator.explain(decision)
    assert evaluator.explain(decision.to_dict()) == words
    assert evaluator.explain(json.loads(evaluator.evaluate_json(json.dumps(t01())))) == words
    with pytest.raises(ValueError, match="not a decision"):
        evaluator.explain({"action": "scale_up"})
    with pytest.raises(TypeError, match="takes a Decision or a decision dict"):
        evaluator.explain("scale_up")  # type: ignore[arg-type]


# ---- the conformance command -------------------------------------------------------------------


def test_the_conformance_command_reads_scale_units_vectors(tmp_path: Path) -> None:
    failing = {"id": "env/fails", "description": "the wrong code", "request_json": "{", "expect": {"error": {"code": "invalid_field"}}}
    (tmp_path / "fails.json").write_text(json.dumps(failing), encoding="utf-8")
    env = dict(os.environ, SCALE_UNITS_VECTORS=f"{tmp_path}:")

    def run(*folders: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "scale_units.conformance", *folders]
        return subprocess.run(command, capture_output=True, text=True, env=env, check=False)

    alone = run()
    assert alone.returncode == 1, alone.stderr
    assert "FAIL env/fails" in alone.stdout
    assert alone.stdout.strip().splitlines()[-1] == "0 passed, 1 failed"
    both = run(str(ROOT / "tests" / "vectors" / "reference"))
    assert both.stdout.strip().splitlines()[-1] == "12 passed, 1 failed"
    env.pop("SCALE_UNITS_VECTORS")
    usage = run()
    assert usage.returncode == 2 and "SCALE_UNITS_VECTORS" in usage.stderr
