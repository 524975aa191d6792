"""The export types the facade reads once (``scale_units._frozen``): the same as wasmtime's, and
a call reads none of them again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import pytest
from wasmtime import _ffi
from wasmtime import component as wc

from scale_units import Evaluator, ScaleUnitsError

ROOT = Path(__file__).resolve().parents[2]
T01 = next((ROOT / "tests" / "vectors" / "reference").glob("t01-*.json"))


def shape(ty: Any) -> Any:
    """A type as nested tuples, read through the properties wasmtime-py's conversions use."""
    if ty is None:
        return None
    if isinstance(ty, wc.RecordType):
        return ("record", tuple((name, shape(field)) for name, field in ty.fields))
    if isinstance(ty, wc.ListType):
        return ("list", shape(ty.element), ty._is_bytes())
    if isinstance(ty, wc.TupleType):
        return ("tuple", tuple(shape(element) for element in ty.elements))
    if isinstance(ty, wc.VariantType):
        return ("variant", tuple((name, shape(case)) for name, case in ty.cases), ty._tagged())
    if isinstance(ty, wc.OptionType):
        return ("option", shape(ty.payload), ty._tagged())
    if isinstance(ty, wc.ResultType):
        return ("result", shape(ty.ok), shape(ty.err), ty._tagged())
    if isinstance(ty, wc.EnumType):
        return ("enum", tuple(ty.names), ty.names_count)
    if isinstance(ty, wc.FlagsType):
        return ("flags", tuple(ty.names))
    return (type(ty).__name__,)


def test_every_export_keeps_the_type_wasmtime_reports() -> None:
    instance = Evaluator()._runtime._instance()
    assert instance.funcs, "no export was read"
    for name, func in instance.funcs.items():
        # The class's method, not the instance's kept answer: a fresh read from wasmtime.
        fresh = wc.Func.type(func, instance.store)
        kept = instance.types[name]
        assert func.type(instance.store) is kept, name
        assert [(p, shape(t)) for p, t in kept.params] == [(p, shape(t)) for p, t in fresh.params], name
        assert shape(kept.result) == shape(fresh.result), name


@pytest.fixture
def type_reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every read of a component type from wasmtime, by the C function's name, while it is active."""
    reads: list[str] = []
    for attribute in dir(_ffi):
        if attribute.startswith("wasmtime_component_") and "_type_" in attribute and not attribute.endswith(("_delete", "_t")):
            original = getattr(_ffi, attribute)
            if callable(original):

                def counted(*args: Any, _name: str = attribute, _original: Any = original) -> Any:
                    reads.append(_name)
                    return _original(*args)

                monkeypatch.setattr(_ffi, attribute, counted)
    yield reads


def test_a_call_reads_no_type_again(type_reads: list[str]) -> None:
    request = json.loads(T01.read_text())["request"]
    evaluator = Evaluator()
    del type_reads[:]  # instantiation reads every type once
    decided = json.loads(evaluator.evaluate_json(json.dumps(request)))
    typed = evaluator.evaluate(request)
    with pytest.raises(ScaleUnitsError) as refused:
        evaluator.evaluate_json("{")
    assert decided["action"] == typed.action == "scale_up"
    assert refused.value.code == "invalid_json"
    assert type_reads == []


def test_the_counter_sees_wasmtime_py_reading_types(type_reads: list[str]) -> None:
    # The fixture itself, checked: without the kept type, a call asks wasmtime for it again.
    instance = Evaluator()._runtime._instance()
    del type_reads[:]
    assert wc.Func.type(instance.funcs["evaluate-json"], instance.store).result is not None
    assert type_reads, "the counter saw no read: it would pass any call path"
