"""Conformance vectors (SPEC §11) run through the Python package.

``python -m scale_units.conformance DIR...`` runs every ``*.json`` below the folders (and below
each folder of ``$SCALE_UNITS_VECTORS``, ``:``-separated, when it is set), prints each failure,
and ends with the line ``N passed, N failed`` (exit 1 when any failed or none passed), as the Rust
CLI's ``scale-units conformance`` does. ``--wasm FILE`` runs another
component than the packaged one; ``--known-failures FILE`` lists vectors expected to fail.

A ``request`` vector goes through the dict API (``Evaluator.evaluate``), a ``request_json``
vector through ``Evaluator.evaluate_json`` as the exact text; an expected ``contract_digest`` is
checked with ``Evaluator.validate_contract``. Decisions are compared field by field, errors by
code and ``message_contains``; paths are not compared. An ``expect.derivation`` is compared field
by field with ``Evaluator.derive`` (``derive_json`` for a ``request_json`` vector), and an
``expect.diagnosis`` fault by fault with ``Evaluator.diagnose`` (code and path exactly, hint and
message by fragment). A gate vector (SPEC §12.3: ``change`` or ``change_json``, and
``expect.gate`` or ``expect.gate_error``, and ``expect.scaler``) is judged with ``Evaluator.gate``
(``gate_json`` for a ``request_json`` vector or a ``change_json``) and ``Evaluator.scaler_reading``
(``scaler_reading_json``), compared as the core's runner does: every field exactly, except
``message_contains`` (a fragment of ``message``) and a non-null ``error`` (by code and
``message_contains``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from .errors import HostError, ScaleUnitsError
from .evaluator import Evaluator


class VectorError(ValueError):
    """A file is not a well-formed vector."""


@dataclass(frozen=True)
class Vector:
    """One conformance case."""

    id: str
    path: Path
    description: str
    #: The request as a JSON value, for ``request`` vectors.
    request: Any
    #: The exact request text, for ``request_json`` vectors (then ``request`` is ``None``).
    request_json: str | None
    #: The complete expected decision, or ``None`` when an error is expected.
    decision: dict[str, Any] | None
    #: The expected error ``{code, message_contains?}``, or ``None``.
    error: dict[str, Any] | None
    #: What validating the request's contract must yield, when given.
    contract_digest: str | None
    #: The expected derivation (``expect.derivation``, the ``derivation/`` group), when given.
    derivation: dict[str, Any] | None = None
    #: The expected faults (``expect.diagnosis``): ``{code, path, hint_contains,
    #: message_contains?}`` each, when given.
    diagnosis: list[dict[str, Any]] | None = None
    #: The proposed change of a gate vector, ``kind`` defaulted to ``scale``; ``None`` for a
    #: ``change_json`` vector (a change only the JSON reader can be given).
    change: dict[str, Any] | None = None
    #: The exact change text of a ``change_json`` vector.
    change_json: str | None = None
    #: The expected verdict (``expect.gate``), or ``None``.
    gate: dict[str, Any] | None = None
    #: The expected gate error ``{code, message_contains?}`` (``expect.gate_error``), or ``None``.
    gate_error: dict[str, Any] | None = None
    #: The expected external-scaler reading (``expect.scaler``), or ``None``.
    scaler: dict[str, Any] | None = None


def load(path: Path) -> Vector:
    """Reads one vector file. Raises ``VectorError`` when it is not a well-formed vector."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise VectorError(f"{path}: not a JSON file: {error}") from error
    if not isinstance(data, dict) or not isinstance(data.get("id"), str):
        raise VectorError(f"{path}: a vector is an object with a string id")
    unknown = set(data) - {"id", "description", "request", "request_json", "change", "change_json", "expect"}
    if unknown:
        raise VectorError(f"{path}: unknown fields {sorted(unknown)}")
    if ("request" in data) == ("request_json" in data):
        raise VectorError(f"{path}: a vector needs exactly one of request and request_json")
    if "request_json" in data and not isinstance(data["request_json"], str):
        raise VectorError(f"{path}: request_json must be a string")
    expect = data.get("expect")
    if not isinstance(expect, dict) or ("decision" in expect) == ("error" in expect):
        raise VectorError(f"{path}: expect needs exactly one of decision and error")
    unknown = set(expect) - {"decision", "error", "contract_digest", "derivation", "diagnosis", "gate", "gate_error", "scaler"}
    if unknown:
        raise VectorError(f"{path}: unknown expect fields {sorted(unknown)}")
    change, change_json = data.get("change"), data.get("change_json")
    if change is None and change_json is None:
        if any(key in expect for key in ("gate", "gate_error", "scaler")):
            raise VectorError(f"{path}: expect.gate, expect.gate_error and expect.scaler need a change")
    else:
        if change is not None and change_json is not None:
            raise VectorError(f"{path}: a vector has at most one of change and change_json")
        if change is not None and not (isinstance(change, dict) and isinstance(change.get("to_replicas"), int)):
            raise VectorError(f"{path}: change needs an integer to_replicas")
        if change_json is not None and not isinstance(change_json, str):
            raise VectorError(f"{path}: change_json must be a string")
        if ("gate" in expect) == ("gate_error" in expect):
            raise VectorError(f"{path}: a gate vector needs exactly one of expect.gate and expect.gate_error")
        if change is not None:
            change = {"to_replicas": change["to_replicas"], "kind": change.get("kind", "scale")}
    expected_error = expect.get("error")
    if expected_error is not None and not (isinstance(expected_error, dict) and isinstance(expected_error.get("code"), str)):
        raise VectorError(f"{path}: expect.error needs a string code")
    return Vector(
        id=data["id"],
        path=path,
        description=data.get("description", ""),
        request=data.get("request"),
        request_json=data.get("request_json"),
        decision=expect.get("decision"),
        error=expected_error,
        contract_digest=expect.get("contract_digest"),
        derivation=expect.get("derivation"),
        diagnosis=expect.get("diagnosis"),
        change=change,
        change_json=change_json,
        gate=expect.get("gate"),
        gate_error=expect.get("gate_error"),
        scaler=expect.get("scaler"),
    )


def collect(folders: Iterable[Path]) -> list[Path]:
    """Every ``*.json`` file below the folders, recursively, sorted. Raises ``VectorError`` for a
    folder that does not exist."""
    files: list[Path] = []
    for folder in folders:
        if not folder.is_dir():
            raise VectorError(f"{folder}: not a folder")
        files.extend(path for path in folder.rglob("*.json") if path.is_file())
    return sorted(set(files))


def check(evaluator: Evaluator, vector: Vector) -> str | None:
    """Runs one vector; ``None`` when it passes, else what differed first."""
    try:
        if vector.request_json is not None:
            outcome: Any = json.loads(evaluator.evaluate_json(vector.request_json))
        else:
            outcome = evaluator.evaluate(vector.request).to_dict()
    except ScaleUnitsError as error:
        outcome = error
    problem = _compare(vector, outcome)
    if problem is None and vector.derivation is not None:
        problem = _check_derivation(evaluator, vector)
    if problem is None and vector.diagnosis is not None:
        problem = _check_diagnosis(evaluator, vector)
    if problem is None and (vector.change is not None or vector.change_json is not None):
        problem = _check_gate(evaluator, vector)
    if problem is None and vector.contract_digest is not None:
        contract = vector.request.get("contract") if isinstance(vector.request, dict) else None
        try:
            identity = evaluator.validate_contract(contract)  # type: ignore[arg-type]
        except ScaleUnitsError as error:
            return f"contract: expected digest {vector.contract_digest}, got error {error}"
        if identity.contract_digest != vector.contract_digest:
            return f"contract_digest: expected {vector.contract_digest}, got {identity.contract_digest}"
    return problem


def _check_derivation(evaluator: Evaluator, vector: Vector) -> str | None:
    try:
        if vector.request_json is not None:
            derived: Any = json.loads(evaluator.derive_json(vector.request_json))
        else:
            derived = evaluator.derive(vector.request)
    except ScaleUnitsError as error:
        return f"expected a derivation, got error {error}"
    return first_difference(vector.derivation, derived, "derivation")


def _check_gate(evaluator: Evaluator, vector: Vector) -> str | None:
    request_text = vector.request_json if vector.request_json is not None else None
    try:
        if request_text is None and vector.change is not None:
            verdict: Any = evaluator.gate(vector.request, vector.change)  # type: ignore[arg-type]
        else:
            text = request_text if request_text is not None else json.dumps(vector.request)
            change = vector.change_json if vector.change_json is not None else json.dumps(vector.change)
            verdict = json.loads(evaluator.gate_json(text, change))
    except ScaleUnitsError as error:
        verdict = error
    if vector.gate_error is not None:
        code = vector.gate_error["code"]
        if not isinstance(verdict, ScaleUnitsError):
            return f"gate: expected error {code}, got a verdict: {json.dumps(verdict)[:200]}"
        problem = _error_difference(vector.gate_error, verdict.code.value, verdict.message)
        if problem is not None:
            return f"gate: {problem}"
    else:
        if isinstance(verdict, ScaleUnitsError):
            return f"gate: expected a verdict, got error {verdict}"
        problem = verdict_difference(vector.gate or {}, verdict, "gate")
        if problem is not None:
            return problem
    if vector.scaler is not None:
        if request_text is None:
            reading: Any = evaluator.scaler_reading(vector.request)
        else:
            reading = json.loads(evaluator.scaler_reading_json(request_text))
        return verdict_difference(vector.scaler, reading, "scaler")
    return None


def _error_difference(expected: Mapping[str, Any], code: str, message: str) -> str | None:
    """How an error (code, message) differs from ``{code, message_contains?}``, or ``None``."""
    if code != expected.get("code"):
        return f"expected error {expected.get('code')}, got {code}: {message}"
    fragment = expected.get("message_contains")
    if fragment is not None and fragment not in message:
        return f"error {code}: message {message!r} does not contain {fragment!r}"
    return None


def verdict_difference(expected: Mapping[str, Any], actual: Any, path: str) -> str | None:
    """The first difference between an expected verdict (or reading) and the actual one, as the
    core's runner compares them: every field exactly, except ``message_contains`` (a fragment of
    ``message``) and a non-null ``error`` (by code and ``message_contains``); no other field."""
    if not isinstance(actual, dict):
        return f"{path}: expected an object, got {json.dumps(actual)}"
    for key, want in expected.items():
        if key == "message_contains":
            message = actual.get("message")
            if not isinstance(message, str) or want not in message:
                return f"{path}.message: {message!r} does not contain {want!r}"
            continue
        if key not in actual:
            return f"{path}.{key}: missing, expected {json.dumps(want)}"
        if key == "error" and want is not None:
            got = actual[key]
            if not isinstance(got, dict):
                return f"{path}.error: expected an error {want.get('code')}, got {json.dumps(got)}"
            problem = _error_difference(want, str(got.get("code")), str(got.get("message")))
            if problem is not None:
                return f"{path}.error: {problem}"
            continue
        difference = first_difference(want, actual[key], f"{path}.{key}")
        if difference is not None:
            return difference
    extra = [key for key in actual if key not in expected and not (key == "message" and "message_contains" in expected)]
    return f"{path}.{extra[0]}: unexpected field" if extra else None


def _check_diagnosis(evaluator: Evaluator, vector: Vector) -> str | None:
    expected = vector.diagnosis or []
    faults = evaluator.diagnose(vector.request_json if vector.request_json is not None else vector.request)
    for index, (want, got) in enumerate(zip(expected, faults)):
        at = f"diagnosis[{index}]"
        if got["code"] != want["code"] or got["path"] != want["path"]:
            return f"{at}: expected {want['code']} at {want['path']!r}, got {got['code']} at {got['path']!r}: {got['message']}"
        if want["hint_contains"] not in got["hint"]:
            return f"{at}: hint {got['hint']!r} does not contain {want['hint_contains']!r}"
        fragment = want.get("message_contains")
        if fragment is not None and fragment not in got["message"]:
            return f"{at}: message {got['message']!r} does not contain {fragment!r}"
    if len(faults) != len(expected):
        return f"diagnosis: expected {len(expected)} faults, got {len(faults)}"
    return None


def _compare(vector: Vector, outcome: Any) -> str | None:
    if vector.error is not None:
        code = vector.error["code"]
        if not isinstance(outcome, ScaleUnitsError):
            compact = json.dumps(outcome, separators=(",", ":"))
            return f"expected error {code}, got a decision: {compact[:200]}"
        if outcome.code.value != code:
            return f"expected error {code}, got {outcome}"
        fragment = vector.error.get("message_contains")
        if fragment is not None and fragment not in outcome.message:
            return f"error {code}: message {outcome.message!r} does not contain {fragment!r}"
        return None
    if isinstance(outcome, ScaleUnitsError):
        return f"expected a decision, got error {outcome}"
    return first_difference(vector.decision, outcome, "decision")


def first_difference(expected: Any, actual: Any, path: str) -> str | None:
    """The path and values of the first place where ``actual`` differs from ``expected``. JSON
    types are strict: ``true`` is not ``1``."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key, value in expected.items():
            if key not in actual:
                return f"{path}.{key}: missing, expected {json.dumps(value)}"
            difference = first_difference(value, actual[key], f"{path}.{key}")
            if difference is not None:
                return difference
        extra = [key for key in actual if key not in expected]
        return f"{path}.{extra[0]}: unexpected field" if extra else None
    if isinstance(expected, list) and isinstance(actual, list):
        for index, (e_item, a_item) in enumerate(zip(expected, actual)):
            difference = first_difference(e_item, a_item, f"{path}[{index}]")
            if difference is not None:
                return difference
        if len(expected) != len(actual):
            return f"{path}: expected {len(expected)} entries, got {len(actual)}"
        return None
    if type(expected) is type(actual) and expected == actual:
        return None
    return f"{path}: expected {json.dumps(expected)}, got {json.dumps(actual)}"


def read_known_failures(path: Path) -> dict[str, str]:
    """A known-failures list: ``<id> <reason>`` a line, ``#`` comments. Raises ``OSError``."""
    known: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            ident, _, reason = line.partition(" ")
            known[ident] = reason.strip()
    return known


def run(evaluator: Evaluator, files: Sequence[Path], known: Mapping[str, str] | None = None) -> tuple[int, list[str]]:
    """Runs the vector files; returns the number passed and one line per failure. A vector in
    ``known`` passes by failing; it fails by passing, or by not being among the files."""
    unseen = dict(known or {})
    passed, failures = 0, []
    for path in files:
        try:
            vector = load(path)
        except VectorError as error:
            failures.append(f"FAIL {path}: {error}")
            continue
        problem = check(evaluator, vector)
        reason = unseen.pop(vector.id, None)
        if reason is None and problem is not None:
            failures.append(f"FAIL {vector.id} ({path}): {problem}")
        elif reason is not None and problem is None:
            failures.append(f"FAIL {vector.id}: listed as a known failure ({reason}) but passes; remove it from the list")
        else:
            passed += 1
    failures.extend(f"FAIL {ident}: listed as a known failure but no such vector was run" for ident in unseen)
    return passed, failures


def vector_folders_from_env() -> list[Path]:
    """The folders of ``$SCALE_UNITS_VECTORS`` (``:``-separated; empty entries skipped)."""
    return [Path(entry) for entry in os.environ.get("SCALE_UNITS_VECTORS", "").split(":") if entry]


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m scale_units.conformance", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "folders",
        nargs="*",
        type=Path,
        metavar="DIR",
        help="folders of vectors, searched recursively (and every folder of $SCALE_UNITS_VECTORS, :-separated)",
    )
    parser.add_argument("--wasm", type=Path, help="the component to run (default: the packaged one)")
    parser.add_argument("--known-failures", type=Path, metavar="FILE", help="vectors expected to fail: `<id> <reason>` a line")
    args = parser.parse_args(argv)
    folders = list(args.folders) + vector_folders_from_env()
    if not folders:
        parser.error("name at least one DIR of vectors (or set $SCALE_UNITS_VECTORS)")
    try:
        files = collect(folders)
        known = read_known_failures(args.known_failures) if args.known_failures else {}
        evaluator = Evaluator(args.wasm)
    except (VectorError, HostError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    passed, failures = run(evaluator, files, known)
    for line in failures:
        print(line)
    print(f"{passed} passed, {len(failures)} failed")
    return 0 if passed > 0 and not failures else 1


if __name__ == "__main__":
    sys.exit(main())
