"""The component this package runs is the one the Rust host runs: the same sha256.

The host's digest is read from $SCALE_UNITS_HOST_DIGEST, or <target>/scale-units/component.sha256,
which `make component-digest` writes from `scale-units inspect`; the built component from
$SCALE_UNITS_COMPONENT, or <target>/scale-units/scale_units_evaluator.wasm (<target> is
$CARGO_TARGET_DIR, or target/ at the root). Without it the test fails: a
digest that cannot be compared is not verified.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import pytest

from conftest import ROOT
import scale_units
from scale_units import Evaluator

DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


def _host_digest() -> str:
    target = Path(os.environ.get("CARGO_TARGET_DIR") or ROOT / "target")
    path = Path(os.environ.get("SCALE_UNITS_HOST_DIGEST") or target / "scale-units" / "component.sha256")
    if not path.is_file():
        pytest.fail(f"no host digest at {path}: run `make component-digest` (the Rust host's `scale-units inspect`)")
    found = DIGEST.findall(path.read_text(encoding="utf-8"))
    if len(found) != 1:
        pytest.fail(f"{path} does not hold exactly one sha256:<hex> digest")
    return found[0]


def test_packaged_component_is_the_hosts(evaluator: Evaluator) -> None:
    host = _host_digest()
    assert scale_units.component_digest() == host, (
        "the installed package carries another component than the Rust host inspected; "
        "reinstall it (`make py-setup`) after `cargo xtask component`"
    )
    assert evaluator.component_digest == host


def _built_component() -> Path:
    target = Path(os.environ.get("CARGO_TARGET_DIR") or ROOT / "target")
    path = Path(os.environ.get("SCALE_UNITS_COMPONENT") or target / "scale-units" / "scale_units_evaluator.wasm")
    if not path.is_file():
        pytest.fail(f"no component at {path}: run `cargo xtask component`")
    return path


def test_the_host_inspected_the_built_component() -> None:
    data = _built_component().read_bytes()
    assert "sha256:" + hashlib.sha256(data).hexdigest() == _host_digest()


def test_digest_is_the_sha256_of_the_loaded_bytes() -> None:
    wasm = _built_component()
    data = wasm.read_bytes()
    assert Evaluator(data).component_digest == "sha256:" + hashlib.sha256(data).hexdigest()
    assert Evaluator(wasm).component_digest == Evaluator(data).component_digest
