"""Every simulation vector below ``tests/vectors-sim/`` through the component (the format and
the judging rules: ``tests/vectors-sim/README.md``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT

from scale_units import Evaluator, ScaleUnitsError

SIM_DIR = ROOT / "tests" / "vectors-sim"
FILES = sorted(SIM_DIR.glob("*.json"))


def test_the_folder_has_vectors() -> None:
    assert len(FILES) >= 6, f"found only {len(FILES)} simulation vectors in {SIM_DIR}"


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_simulation_vector(evaluator: Evaluator, path: Path) -> None:
    vector: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    expect = vector["expect"]
    if "error" in expect:
        with pytest.raises(ScaleUnitsError) as caught:
            evaluator.simulate(vector["input"])
        assert caught.value.code == expect["error"]["code"]
        if "message_contains" in expect["error"]:
            assert expect["error"]["message_contains"] in caught.value.message
        return
    simulation = evaluator.simulate(vector["input"])
    assert len(simulation["steps"]) == len(expect["steps"])
    for i, (want, got) in enumerate(zip(expect["steps"], simulation["steps"])):
        for key, value in want.items():
            assert got.get(key) == value, f"steps[{i}].{key}"
    assert simulation["summary"] == expect["summary"]
