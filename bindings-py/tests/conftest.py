"""Shared fixtures: one evaluator for the session, and where the workspace is."""

from __future__ import annotations

from pathlib import Path

import pytest

from scale_units import Evaluator

#: The repository root (bindings-py/tests/ is two levels below it).
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def evaluator() -> Evaluator:
    """The packaged component, compiled once."""
    return Evaluator()
