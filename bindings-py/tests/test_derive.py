"""``derive`` and ``diagnose`` (WIT 0.2.0), and a WIT 0.1.0 component that lacks them."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from conftest import ROOT
from scale_units import Evaluator, ScaleUnitsError, UnsupportedError

#: The component built before WIT 0.2.0 (tests/fixtures/README.md).
WIT_0_1 = ROOT / "tests" / "fixtures" / "scale_units_evaluator-wit-0.1.0.wasm"


def example() -> Any:
    return json.loads((ROOT / "examples" / "api-gateway" / "request.json").read_text(encoding="utf-8"))


def test_derive_is_the_decisions_derivation_with_exact_integers(evaluator: Evaluator) -> None:
    request = example()
    decision = evaluator.evaluate(request)
    derivation = evaluator.derive(request)
    assert derivation["decision_id"] == decision.decision_id
    assert derivation["action"] == decision.action.value
    assert derivation["reasons"] == [reason.value for reason in decision.reasons]
    target = derivation["target"]
    assert target is not None
    assert target["ceil"] == -(-target["value"] // target["target"])
    assert evaluator.derive_json(json.dumps(request)) == json.dumps(derivation, separators=(",", ":"))

    # 200 more replicas x 10^15 millicores: 2 x 10^17 needed, exact.
    big = copy.deepcopy(request)
    big["contract"]["policy"].update(max_replicas=1000, scale_up_step=200)
    big["signal"]["value"] = 100_000
    big["contract"]["replica_demands"][0]["per_replica"] = 10**15
    growth = next(gate for gate in evaluator.derive(big)["gates"] if gate["gate"] == "growth")
    assert growth["additional"] == 200
    assert growth["capacity"][0]["needed"] == 200 * 10**15  # type: ignore[index]

    bad = copy.deepcopy(request)
    bad["current_replicas"] = 10_001
    with pytest.raises(ScaleUnitsError) as raised:
        evaluator.derive(bad)
    assert raised.value.code.value == "replicas_out_of_bounds"


def test_diagnose_lists_every_fault_first_the_error(evaluator: Evaluator) -> None:
    broken = example()
    broken["current_replicas"] = 10_001
    broken["contract"]["policy"]["target"] = 0
    faults = evaluator.diagnose(broken)
    assert len(faults) >= 2, faults
    with pytest.raises(ScaleUnitsError) as raised:
        evaluator.evaluate(broken)
    first = faults[0]
    assert (first["code"], first["message"], first["path"]) == (raised.value.code.value, raised.value.message, raised.value.path)
    assert all(fault["hint"] and "-" not in fault["code"] for fault in faults)
    assert evaluator.diagnose(json.dumps(broken)) == faults
    assert evaluator.diagnose(example()) == []
    assert [fault["code"] for fault in evaluator.diagnose("{")] == ["invalid_json"]
    contract_faults = evaluator.diagnose_contract(broken["contract"])
    assert contract_faults[0]["path"] == "policy.target"
    assert evaluator.diagnose_contract(example()["contract"]) == []


def test_a_wit_0_1_component_evaluates_and_answers_unsupported() -> None:
    old = Evaluator(WIT_0_1)
    assert old.info().wit_version == "0.1.0"
    assert old.evaluate_json(json.dumps(example())) == Evaluator().evaluate_json(json.dumps(example()))
    for call in (lambda: old.derive(example()), lambda: old.diagnose(example()), lambda: old.diagnose_contract("{}")):
        with pytest.raises(UnsupportedError) as raised:
            call()
        assert raised.value.wit_version == "0.1.0"
        assert "does not export" in str(raised.value)
    assert old.evaluate(example()).action.value == "scale_up"
