"""The WIT 0.3.0 functions of ``Evaluator``: the gate, the external scaler's reading, observation
validation, the derivation's words and the limits; the runner's gate keys; and a WIT 0.1.0
component that lacks them. (Every gate vector runs in test_vectors.py.)"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT
from scale_units import Evaluator, ScaleUnitsError, UnsupportedError
from scale_units.conformance import VectorError, check, load, verdict_difference

WIT_0_1 = ROOT / "tests" / "fixtures" / "scale_units_evaluator-wit-0.1.0.wasm"
T01 = ROOT / "tests" / "vectors" / "reference" / "t01-mcp-target-tracks-deterministically.json"
GATE = ROOT / "tests" / "vectors" / "gate"


def vector() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(T01.read_text(encoding="utf-8"))
    return data


def request() -> Any:
    return copy.deepcopy(vector()["request"])  # scale_up 1 -> 3


def test_gate_and_gate_json_give_one_verdict(evaluator: Evaluator) -> None:
    decision = vector()["expect"]["decision"]
    verdict = evaluator.gate(request(), {"to_replicas": 3})
    assert verdict == {
        "allowed": True,
        "reason": "within_decision",
        "message": verdict["message"],
        "from_replicas": 1,
        "to_replicas": 3,
        "decision": decision,
        "error": None,
    }
    assert "1 -> 3" in verdict["message"]
    assert json.loads(evaluator.gate_json(json.dumps(request()), '{"to_replicas": 3, "kind": "scale"}')) == verdict
    past = evaluator.gate(request(), {"to_replicas": 5})
    assert (past["allowed"], past["reason"]) == (False, "past_desired")
    glass = evaluator.gate(request(), {"to_replicas": 5, "kind": "break_glass"})
    assert (glass["allowed"], glass["reason"]) == (True, "break_glass")


def test_an_unevaluable_request_is_a_denial_an_unreadable_change_an_error(evaluator: Evaluator) -> None:
    bad = request()
    bad["contract"]["policy"]["min_replicas"] = 9  # above max_replicas 8
    verdict = evaluator.gate(bad, {"to_replicas": 3})
    assert (verdict["allowed"], verdict["reason"], verdict["from_replicas"], verdict["decision"]) == (
        False,
        "request_invalid",
        None,
        None,
    )
    assert verdict["error"] is not None and verdict["error"]["code"] == "invalid_policy"
    for change, code in (
        ({"to_replicas": 10001}, "invalid_field"),
        ({"to_replicas": 3, "kind": "break-glass"}, "invalid_field"),
        ('{"to_replicas": 3', "invalid_json"),
    ):
        text = change if isinstance(change, str) else json.dumps(change)
        with pytest.raises(ScaleUnitsError) as raised:
            evaluator.gate_json(json.dumps(request()), text)
        assert raised.value.code.value == code
    assert evaluator.gate(request(), {"to_replicas": 3})["allowed"] is True  # still serving


def test_scaler_reading(evaluator: Evaluator) -> None:
    decision = vector()["expect"]["decision"]
    reading = evaluator.scaler_reading(request())
    assert reading == {"metric_value": 3, "active": True, "decision": decision, "error": None}
    assert json.loads(evaluator.scaler_reading_json(json.dumps(request()))) == reading
    none = json.loads(evaluator.scaler_reading_json("{"))
    assert (none["metric_value"], none["active"], none["decision"]) == (None, True, None)
    assert none["error"]["code"] == "invalid_json"


def test_validate_observations_skips_only_the_replica_bounds(evaluator: Evaluator) -> None:
    assert evaluator.validate_observations(request()) is None
    far = request()
    far["current_replicas"] = 10001
    with pytest.raises(ScaleUnitsError) as raised:
        evaluator.evaluate(far)
    assert raised.value.code.value == "replicas_out_of_bounds"
    evaluator.validate_observations(far)
    evaluator.validate_observations_json(json.dumps(far))
    broken = request()
    broken["capacities"][0]["reserved"] = broken["capacities"][0]["allocatable"] + 1
    with pytest.raises(ScaleUnitsError) as expected:
        evaluator.evaluate(broken)
    with pytest.raises(ScaleUnitsError) as actual:
        evaluator.validate_observations(broken)
    assert (actual.value.code, actual.value.path, actual.value.message) == (
        expected.value.code,
        expected.value.path,
        expected.value.message,
    )


def test_derivation_text_is_the_cores_words(evaluator: Evaluator) -> None:
    text = evaluator.derivation_text(request())
    assert evaluator.derivation_text(json.dumps(request())) == text
    lines = text.rstrip("\n").split("\n")
    assert lines[-1] == "decision: scale_up 1 -> 3 (target_tracking)"
    assert "target: ceil(250 / 100) = 3" in lines
    assert sum(line.startswith("evidence ") for line in lines) == len(vector()["expect"]["decision"]["evidence"])
    with pytest.raises(ScaleUnitsError) as raised:
        evaluator.derivation_text("{")
    assert raised.value.code.value == "invalid_json"


def test_limits_are_enforced(evaluator: Evaluator) -> None:
    limits = evaluator.limits()
    assert sorted(limits) == ["max_amount", "max_observations", "max_replicas", "max_seconds"]
    assert evaluator.gate(request(), {"to_replicas": limits["max_replicas"]})["reason"] == "past_desired"
    with pytest.raises(ScaleUnitsError):
        evaluator.gate(request(), {"to_replicas": limits["max_replicas"] + 1})
    many = request()
    many["capacities"] = many["capacities"] * (limits["max_observations"] // len(many["capacities"]) + 1)
    with pytest.raises(ScaleUnitsError):
        evaluator.validate_observations(many)


def test_a_wit_0_1_component_answers_unsupported_for_each_0_3_function() -> None:
    old = Evaluator(WIT_0_1)
    calls = {
        "gate-json": lambda: old.gate(request(), {"to_replicas": 3}),
        "scaler-reading-json": lambda: old.scaler_reading(request()),
        "validate-observations-json": lambda: old.validate_observations(request()),
        "derivation-text": lambda: old.derivation_text(request()),
        "limits-json": old.limits,
    }
    for function, call in calls.items():
        with pytest.raises(UnsupportedError) as raised:
            call()
        assert (raised.value.function, raised.value.wit_version) == (function, "0.1.0")
        assert "WIT 0.3.0 or later" in str(raised.value)
    assert old.evaluate(request()).action.value == "scale_up"


def test_the_runner_checks_verdicts_and_readings(evaluator: Evaluator, tmp_path: Path) -> None:
    data = json.loads((GATE / "above-max-away.json").read_text(encoding="utf-8"))
    assert check(evaluator, load(GATE / "above-max-away.json")) is None
    wrong = copy.deepcopy(data)
    wrong["expect"]["gate"]["reason"] = "past_desired"
    (tmp_path / "a.json").write_text(json.dumps(wrong), encoding="utf-8")
    assert "gate.reason" in (check(evaluator, load(tmp_path / "a.json")) or "")
    wrong = copy.deepcopy(data)
    wrong["expect"]["scaler"]["metric_value"] = 8
    (tmp_path / "b.json").write_text(json.dumps(wrong), encoding="utf-8")
    assert "scaler.metric_value" in (check(evaluator, load(tmp_path / "b.json")) or "")
    error = json.loads((GATE / "change-duplicate-key.json").read_text(encoding="utf-8"))
    assert check(evaluator, load(GATE / "change-duplicate-key.json")) is None
    error["expect"]["gate_error"]["code"] = "invalid_field"
    (tmp_path / "c.json").write_text(json.dumps(error), encoding="utf-8")
    assert "expected error invalid_field" in (check(evaluator, load(tmp_path / "c.json")) or "")
    # A gate expectation without a change is not a vector.
    del data["change"]
    (tmp_path / "d.json").write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(VectorError):
        load(tmp_path / "d.json")


def test_verdict_difference_compares_like_the_core() -> None:
    got = {"allowed": False, "message": "1 -> 5 replicas denied", "error": {"code": "invalid_json", "message": "bad text", "path": ""}}
    assert verdict_difference({"allowed": False, "message_contains": "denied", "error": {"code": "invalid_json"}}, got, "gate") is None
    assert verdict_difference({"allowed": False, "message_contains": "allowed", "error": None}, got, "gate") is not None
    assert verdict_difference({"allowed": False, "message_contains": "denied", "error": {"code": "invalid_field"}}, got, "gate") is not None
    assert verdict_difference({"allowed": False, "error": {"code": "invalid_json"}}, got, "gate") == "gate.message: unexpected field"
