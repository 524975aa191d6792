"""Component types read once, for wasmtime-py 50.x (private).

wasmtime-py reads a function's types from wasmtime on every call: ``Func.__call__`` asks for the
function's type and its parameters, and converting the result asks the result type for its cases
and each record for its fields again, a C call and fresh Python objects every time. For one
``evaluate_json`` of the reference request that was more than half of the call (BENCHMARKS.md,
"Python: types read once"). An export's types never change, so ``freeze`` reads them once: it
hands back the same wasmtime-py type objects, each with its children kept, and wasmtime-py's own
``Func.__call__`` and conversions run unchanged over them. ``freeze_func`` makes a function use its
frozen type.

What this leans on, and what the tests hold: the names of wasmtime-py's type classes and of the
properties its conversions read (``fields``, ``element``, ``elements``, ``cases``, ``payload``,
``ok``, ``err``, ``names``, ``params``, ``result``) and ``Func.__call__`` asking ``self.type``.
The package pins ``wasmtime>=50,<51``; ``tests/test_frozen.py`` checks every export's frozen type
against a fresh read from wasmtime, and every other test runs through the frozen path.
"""

from __future__ import annotations

from typing import Any, Optional

import wasmtime
from wasmtime import component as wc

Cases = list[tuple[str, Optional[wc.ValType]]]


class _Record(wc.RecordType):
    _kept: list[tuple[str, wc.ValType]]

    @property
    def fields(self) -> list[tuple[str, wc.ValType]]:
        return self._kept


class _List(wc.ListType):
    _kept: wc.ValType
    _bytes: bool

    @property
    def element(self) -> wc.ValType:
        return self._kept

    def _is_bytes(self) -> bool:
        return self._bytes


class _Tuple(wc.TupleType):
    _kept: list[wc.ValType]

    @property
    def elements(self) -> list[wc.ValType]:
        return self._kept


class _Variant(wc.VariantType):
    _kept: Cases
    _is_tagged: bool

    @property
    def cases(self) -> Cases:
        return self._kept

    def _cases(self) -> Cases:
        return self._kept

    def _tagged(self) -> bool:
        return self._is_tagged


class _Option(wc.OptionType):
    _kept: Cases
    _kept_payload: wc.ValType
    _is_tagged: bool

    @property
    def payload(self) -> wc.ValType:
        return self._kept_payload

    def _cases(self) -> Cases:
        return self._kept

    def _tagged(self) -> bool:
        return self._is_tagged


class _Result(wc.ResultType):
    _kept: Cases
    _is_tagged: bool

    @property
    def ok(self) -> Optional[wc.ValType]:
        return self._kept[0][1]

    @property
    def err(self) -> Optional[wc.ValType]:
        return self._kept[1][1]

    def _cases(self) -> Cases:
        return self._kept

    def _tagged(self) -> bool:
        return self._is_tagged


class _Enum(wc.EnumType):
    _kept: list[str]

    @property
    def names(self) -> list[str]:
        return self._kept

    @property
    def names_count(self) -> int:
        return len(self._kept)


class _Flags(wc.FlagsType):
    _kept: list[str]

    @property
    def names(self) -> list[str]:
        return self._kept


class _FuncType(wc.FuncType):
    _kept_params: list[tuple[str, wc.ValType]]
    _kept_result: Optional[wc.ValType]

    @property
    def params(self) -> list[tuple[str, wc.ValType]]:
        return self._kept_params

    @property
    def result(self) -> Optional[wc.ValType]:
        return self._kept_result


def _optional(ty: Optional[wc.ValType]) -> Optional[wc.ValType]:
    return None if ty is None else freeze(ty)


def freeze(ty: wc.ValType) -> wc.ValType:
    """``ty`` itself, its children read from wasmtime now and kept (recursively). A type of no
    children (numbers, strings, resources) is returned as it is."""
    frozen: Any = ty
    if type(ty) is wc.RecordType:
        kept_fields = [(name, freeze(field)) for name, field in ty.fields]
        frozen.__class__ = _Record
        frozen._kept = kept_fields
    elif type(ty) is wc.ListType:
        element = freeze(ty.element)
        frozen.__class__ = _List
        frozen._kept = element
        frozen._bytes = isinstance(element, wc.U8)
    elif type(ty) is wc.TupleType:
        elements = [freeze(element) for element in ty.elements]
        frozen.__class__ = _Tuple
        frozen._kept = elements
    elif type(ty) is wc.VariantType:
        cases = [(name, _optional(case)) for name, case in ty.cases]
        frozen.__class__ = _Variant
        frozen._kept = cases
        frozen._is_tagged = wc.VariantType._tagged(frozen)
    elif type(ty) is wc.OptionType:
        payload = freeze(ty.payload)
        frozen.__class__ = _Option
        frozen._kept_payload = payload
        frozen._kept = [("none", None), ("some", payload)]
        frozen._is_tagged = wc.OptionType._tagged(frozen)
    elif type(ty) is wc.ResultType:
        kept_cases = [("ok", _optional(ty.ok)), ("err", _optional(ty.err))]
        frozen.__class__ = _Result
        frozen._kept = kept_cases
        frozen._is_tagged = wc.ResultType._tagged(frozen)
    elif type(ty) is wc.EnumType:
        enum_names = ty.names
        frozen.__class__ = _Enum
        frozen._kept = enum_names
    elif type(ty) is wc.FlagsType:
        flag_names = ty.names
        frozen.__class__ = _Flags
        frozen._kept = flag_names
    return ty


def freeze_func(func: wc.Func, store: wasmtime.Store) -> wc.FuncType:
    """Reads ``func``'s type once, freezes it, and makes ``func`` answer ``type(store)`` with it
    from now on (wasmtime-py's ``Func.__call__`` asks for it on every call). Returns the type."""
    fty: Any = func.type(store)
    params = [(name, freeze(param)) for name, param in fty.params]
    result = _optional(fty.result)
    fty.__class__ = _FuncType
    fty._kept_params = params
    fty._kept_result = result
    frozen: wc.FuncType = fty
    # An attribute of the instance shadows the class's method: this one function, nothing else.
    func.type = lambda store: frozen  # type: ignore[method-assign]
    return frozen
