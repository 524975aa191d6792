"""Every conformance vector below tests/vectors/ (and below $SCALE_UNITS_VECTORS, a list of
folders separated by os.pathsep), one test per vector id. A vector listed in
tests/vectors/known-failures/python.txt (`<id> <reason>`) must fail; the test fails when it
passes, so the list only shrinks by fixing code."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

from conftest import ROOT
from scale_units import Evaluator
from scale_units.conformance import Vector, VectorError, check, collect, load, read_known_failures

VECTORS = ROOT / "tests" / "vectors"
KNOWN_FAILURES = VECTORS / "known-failures" / "python.txt"


def _folders() -> list[Path]:
    extra = os.environ.get("SCALE_UNITS_VECTORS", "")
    return [VECTORS, *(Path(folder) for folder in extra.split(os.pathsep) if folder)]


def _known_failures() -> dict[str, str]:
    return read_known_failures(KNOWN_FAILURES) if KNOWN_FAILURES.exists() else {}


def _load_all() -> list[Vector | VectorError]:
    loaded: list[Vector | VectorError] = []
    for path in collect(_folders()):
        try:
            loaded.append(load(path))
        except VectorError as error:
            loaded.append(error)
    return loaded


ALL = _load_all()
KNOWN = _known_failures()


def _id(item: Vector | VectorError) -> str:
    return item.id if isinstance(item, Vector) else str(item).split(":")[0]


@pytest.mark.parametrize("item", ALL, ids=[_id(item) for item in ALL])
def test_vector(evaluator: Evaluator, item: Vector | VectorError) -> None:
    if isinstance(item, VectorError):
        pytest.fail(str(item))
    problem = check(evaluator, item)
    if item.id in KNOWN:
        assert problem is not None, f"{item.id} is listed in {KNOWN_FAILURES.name} but passes; remove it"
    else:
        assert problem is None, f"{item.path}: {problem}"


def test_vectors_were_found() -> None:
    # The 12 reference vectors at least; an empty run must never pass.
    assert len(ALL) >= 12, f"found only {len(ALL)} vectors below {VECTORS}"


def test_vector_ids_are_unique() -> None:
    ids = Counter(item.id for item in ALL if isinstance(item, Vector))
    assert [ident for ident, count in ids.items() if count > 1] == []


def test_known_failures_name_existing_vectors() -> None:
    ids = {item.id for item in ALL if isinstance(item, Vector)}
    assert sorted(set(KNOWN) - ids) == []
