"""The facade: types, errors, threads and fuel. The rules themselves are the vectors' business."""

from __future__ import annotations

import dataclasses
import json
import math
import threading
from enum import Enum
from typing import Any

import pytest
from wasmtime import component as wc

from conftest import ROOT
import scale_units
from scale_units import (
    Action,
    CapacityAxis,
    ContinuityMode,
    Decision,
    ErrorCode,
    Evaluator,
    EvidenceKind,
    EvidenceStatus,
    HostError,
    QuotaScope,
    Reason,
    ScaleUnitsError,
    SignalKind,
    SurfaceKind,
)

T01 = ROOT / "tests" / "vectors" / "reference" / "t01-mcp-target-tracks-deterministically.json"


@pytest.fixture()
def request_t01() -> dict[str, Any]:
    return json.loads(T01.read_text(encoding="utf-8"))["request"]


def _field(ty: Any, *names: str) -> Any:
    """Walks record fields (and into list elements, options and result payloads) by WIT name."""
    for name in names:
        if isinstance(ty, wc.ResultType):
            ty = ty.ok if name == "ok" else ty.err
            continue
        if isinstance(ty, (wc.ListType, wc.OptionType)):
            ty = ty.element if isinstance(ty, wc.ListType) else ty.payload
        ty = dict(ty.fields)[name]
    if isinstance(ty, wc.ListType):
        ty = ty.element
    return ty


def _component_enums(evaluator: Evaluator) -> dict[type[Enum], Any]:
    runtime = evaluator._runtime
    decision = _field(runtime.result_type("evaluate"), "ok")
    profile = runtime.result_type("surface-profile")
    request = runtime.param_type("evaluate")
    return {
        Action: _field(decision, "action"),
        Reason: _field(decision, "reasons"),
        EvidenceKind: _field(decision, "evidence", "kind"),
        EvidenceStatus: _field(decision, "evidence", "status"),
        ErrorCode: _field(runtime.result_type("evaluate"), "err", "code"),
        SurfaceKind: _field(profile, "surface"),
        SignalKind: _field(profile, "allowed-signals"),
        CapacityAxis: _field(profile, "required-capacity-axes"),
        ContinuityMode: _field(profile, "continuity-modes"),
        QuotaScope: _field(request, "contract", "quotas", "scope"),
    }


def test_python_enums_are_the_components(evaluator: Evaluator) -> None:
    for python_enum, wit_enum in _component_enums(evaluator).items():
        assert isinstance(wit_enum, wc.EnumType), python_enum
        wire = [case.replace("-", "_") for case in wit_enum.names]
        assert [member.value for member in python_enum] == wire, python_enum.__name__


def test_evaluate_returns_a_frozen_typed_decision(evaluator: Evaluator, request_t01: dict[str, Any]) -> None:
    decision = evaluator.evaluate(request_t01)
    assert isinstance(decision, Decision)
    assert decision.action is Action.SCALE_UP and decision.action == "scale_up"
    assert (decision.current_replicas, decision.desired_replicas) == (1, 3)
    assert decision.reasons == (Reason.TARGET_TRACKING,)
    assert decision.evidence[0].kind is EvidenceKind.SIGNAL
    assert decision.evidence[0].status is EvidenceStatus.ACCEPTED
    with pytest.raises(dataclasses.FrozenInstanceError):
        decision.desired_replicas = 5  # type: ignore[misc]


def test_dict_and_json_paths_agree_byte_for_byte(evaluator: Evaluator, request_t01: dict[str, Any]) -> None:
    text = evaluator.evaluate_json(json.dumps(request_t01))
    decision = evaluator.evaluate(request_t01)
    assert json.dumps(decision.to_dict(), separators=(",", ":")) == text
    assert Decision.from_dict(json.loads(text)) == decision
    assert evaluator.evaluate_json(json.dumps(request_t01).encode()) == text


def test_a_batch_gives_one_entry_per_request_in_order_with_errors_in_place(
    evaluator: Evaluator, request_t01: dict[str, Any]
) -> None:
    text = json.dumps(request_t01)
    low = dict(request_t01, current_replicas=0)  # below the contract's floor
    results = evaluator.evaluate_batch_json([text, "{", "ab\ud800", b"\xff", json.dumps(low), text.encode()])
    assert len(results) == 6
    assert results[0] == evaluator.evaluate_json(text) == results[5]
    for index, code in [(1, "invalid_json"), (2, "invalid_json"), (3, "invalid_json"), (4, "replicas_out_of_bounds")]:
        entry = results[index]
        assert isinstance(entry, ScaleUnitsError), (index, entry)
        assert entry.code == code
    with pytest.raises(ScaleUnitsError) as single:
        evaluator.evaluate_json(json.dumps(low))
    assert str(single.value) == str(results[4])

    bad = json.loads(text)
    bad["capacities"][2]["reserved"] = -1
    decided = evaluator.evaluate_batch([request_t01, bad, request_t01])
    assert decided[0] == decided[2] == evaluator.evaluate(request_t01)
    assert isinstance(decided[1], ScaleUnitsError) and decided[1].path == "capacities[2].reserved", decided[1]

    assert evaluator.evaluate_batch_json([]) == []
    with pytest.raises(TypeError):
        evaluator.evaluate_batch_json(text)
    with pytest.raises(scale_units.RequestTooLargeError):
        evaluator.evaluate_batch_json([text, " " * (scale_units.MAX_REQUEST_BYTES + 1)])


def test_validate_contract_gives_the_pinned_identity(evaluator: Evaluator, request_t01: dict[str, Any]) -> None:
    identity = evaluator.validate_contract(request_t01["contract"])
    assert identity.contract_id == "scale-unit:e4bd604748449e993ca58016799fe770"
    assert identity == evaluator.validate_contract_json(json.dumps(request_t01["contract"]))


def test_refusals_are_scale_units_errors(evaluator: Evaluator, request_t01: dict[str, Any]) -> None:
    request_t01["contract"]["policy"]["min_replicas"] = 9
    with pytest.raises(ScaleUnitsError) as caught:
        evaluator.evaluate(request_t01)
    error = caught.value
    assert error.code is ErrorCode.INVALID_POLICY and error.code == "invalid_policy"
    assert "min_replicas cannot exceed max_replicas" in error.message
    assert error.path == "contract.policy"
    assert str(error).startswith("invalid_policy: ")


@pytest.mark.parametrize(
    ("edit", "code"),
    [
        (lambda r: r["signal"].update(value=250.0), "invalid_field"),  # a float is not an integer
        (lambda r: r.update(current_replicas=True), "invalid_field"),  # nor is a bool
        (lambda r: r["signal"].update(value=math.nan), "invalid_json"),  # json.dumps writes NaN
        (lambda r: r.update(extra=1), "invalid_field"),
        (lambda r: r["contract"].update(unit_ref="unit:\ud800"), "invalid_json"),  # \ud800 escaped
    ],
)
def test_python_values_are_judged_by_the_component(
    evaluator: Evaluator, request_t01: dict[str, Any], edit: Any, code: str
) -> None:
    edit(request_t01)
    with pytest.raises(ScaleUnitsError) as caught:
        evaluator.evaluate(request_t01)
    assert caught.value.code == code


@pytest.mark.parametrize("text", ['{"now": "\ud800"}', b"\xff{}", b"\xef\xbb\xbf{}"])
def test_text_that_is_not_utf8_or_json_is_invalid_json(evaluator: Evaluator, text: str | bytes) -> None:
    with pytest.raises(ScaleUnitsError) as caught:
        evaluator.evaluate_json(text)
    assert caught.value.code is ErrorCode.INVALID_JSON


def test_values_json_cannot_write_raise_type_error(evaluator: Evaluator, request_t01: dict[str, Any]) -> None:
    request_t01["now"] = object()
    with pytest.raises(TypeError):
        evaluator.evaluate(request_t01)
    with pytest.raises(TypeError):
        evaluator.evaluate_json(42)  # type: ignore[arg-type]


def test_info_surface_profile_and_explain(evaluator: Evaluator, request_t01: dict[str, Any]) -> None:
    info = evaluator.info()
    assert (info.schema_version, info.wit_version) == ("1", "0.3.0")
    assert info.evaluator_version == scale_units.__version__
    for surface in SurfaceKind:
        assert evaluator.surface_profile(surface).surface is surface
    mcp = evaluator.surface_profile("mcp_gateway")
    assert mcp.provider_quota_axes == (CapacityAxis.PROVIDER_GLOBAL_QUOTA,)
    with pytest.raises(ValueError):
        evaluator.surface_profile("no_such_surface")
    decision = evaluator.evaluate(request_t01)
    explanation = evaluator.explain(decision)
    assert [r.reason for r in explanation.reasons] == list(decision.reasons)
    assert len(explanation.evidence) == len(decision.evidence)
    assert explanation.summary


def test_a_broken_component_is_a_host_error() -> None:
    assert not issubclass(HostError, ScaleUnitsError)
    with pytest.raises(HostError):
        Evaluator(b"\0asm not a component")


def test_expect_digest_refuses_another_component(evaluator: Evaluator) -> None:
    digest = evaluator.component_digest
    assert Evaluator(expect_digest=digest).component_digest == digest
    with pytest.raises(HostError):
        Evaluator(expect_digest="sha256:" + "0" * 64)


def test_fuel_exhaustion_is_a_host_error_and_the_evaluator_recovers(request_t01: dict[str, Any]) -> None:
    starved = Evaluator(fuel=50_000)
    with pytest.raises(HostError):
        starved.evaluate(request_t01)
    assert starved.info().schema_version == "1"  # a fresh instance after the trap
    fed = Evaluator(fuel=100_000_000)
    assert fed.evaluate(request_t01).action is Action.SCALE_UP


def test_one_evaluator_is_safe_to_share_between_threads(evaluator: Evaluator, request_t01: dict[str, Any]) -> None:
    expected = evaluator.evaluate_json(json.dumps(request_t01))
    variants = []
    for replicas in range(1, 5):
        variant = json.loads(json.dumps(request_t01))
        variant["current_replicas"] = replicas
        variants.append((json.dumps(variant), evaluator.evaluate_json(json.dumps(variant))))
    failures: list[str] = []

    def work(index: int) -> None:
        text, want = variants[index % len(variants)]
        for _ in range(150):
            if evaluator.evaluate_json(text) != want:
                failures.append(f"thread {index}")
                return

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert evaluator.evaluate_json(json.dumps(request_t01)) == expected
