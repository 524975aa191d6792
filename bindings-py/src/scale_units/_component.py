"""Private glue between the facade and ``wasmtime.component`` (wasmtime-py 50.x).

wasmtime-py hands component values over as plain Python values: records as
``wasmtime.component.Record`` objects whose attributes are the kebab-case WIT field names, enums
as kebab-case strings, options as ``None`` or the value, lists as lists, and a
``result<record, record>`` as a ``Variant`` tagged ``ok`` or ``err`` (both cases are records, so
it cannot be untagged). The helpers here convert between that and the wire's snake_case dicts,
driven only by the component's own types: no field name is written down twice.

A ``wasmtime.Store`` is not thread-safe, and wasmtime-py releases the GIL while wasm runs, so
each thread gets its own store and instance; the engine and the compiled component are shared.
"""

from __future__ import annotations

import threading
from typing import Any

import wasmtime
from wasmtime import component as wc

from ._frozen import freeze_func
from .errors import HostError, ScaleUnitsError

#: The exported interface names this package speaks, newest first: a component of WIT 0.2.x or
#: 0.1.x still loads and serves every function it has (DECISIONS.md, "WIT 0.2.0").
INTERFACES = (
    "scale-units:evaluator/evaluator@0.3.0",
    "scale-units:evaluator/evaluator@0.2.0",
    "scale-units:evaluator/evaluator@0.1.0",
)
#: The interface of the WIT this package was written for.
INTERFACE = INTERFACES[0]
#: Functions added after WIT 0.1.0, with the version that added them: an older component lacks
#: them, and calling one raises ``UnsupportedError``.
ADDED_IN = {
    "derive-json": "0.2.0",
    "diagnose-request-json": "0.2.0",
    "diagnose-contract-json": "0.2.0",
    "gate-json": "0.3.0",
    "scaler-reading-json": "0.3.0",
    "validate-observations-json": "0.3.0",
    "derivation-text": "0.3.0",
    "limits-json": "0.3.0",
}
OPTIONAL_FUNCTIONS = tuple(ADDED_IN)
#: The functions the facade calls that every supported component has.
FUNCTIONS = (
    "evaluate",
    "evaluate-json",
    "evaluate-batch-json",
    "validate-contract",
    "validate-contract-json",
    "simulate-json",
    "surface-profile",
    "explain",
    "info",
)


class _Instance:
    """One store and one instance of the component, for one thread."""

    __slots__ = ("store", "funcs", "types")

    def __init__(self, engine: wasmtime.Engine, linker: wc.Linker, component: wc.Component) -> None:
        self.store = wasmtime.Store(engine)
        instance = linker.instantiate(self.store, component)
        found = [(name, instance.get_export_index(self.store, name)) for name in INTERFACES]
        name, interface = next(((name, index) for name, index in found if index is not None), (None, None))
        if interface is None:
            raise HostError(f"the component does not export {' or '.join(INTERFACES)}")
        self.funcs: dict[str, wc.Func] = {}
        self.types: dict[str, wc.FuncType] = {}
        for function in FUNCTIONS + OPTIONAL_FUNCTIONS:
            index = instance.get_export_index(self.store, function, interface)
            func = instance.get_func(self.store, index) if index is not None else None
            if func is None:
                if function in OPTIONAL_FUNCTIONS:
                    continue
                raise HostError(f"the component's {name} has no function {function}")
            self.funcs[function] = func
            # Read once: wasmtime-py would read the types again on every call (see _frozen).
            self.types[function] = freeze_func(func, self.store)


class Runtime:
    """The compiled component and a lazily made instance per thread.

    Raises ``HostError`` when the bytes are not a component of the expected interface.
    """

    def __init__(self, wasm: bytes, fuel: int | None) -> None:
        config = wasmtime.Config()
        if fuel is not None:
            config.consume_fuel = True
        self._fuel = fuel
        self._engine = wasmtime.Engine(config)
        try:
            self._component = wc.Component(self._engine, wasm)
        except wasmtime.WasmtimeError as error:
            raise HostError(f"not a loadable component: {error}") from error
        # The component imports nothing, so the linker stays empty.
        self._linker = wc.Linker(self._engine)
        self._instantiate_lock = threading.Lock()
        self._local = threading.local()
        self._instance()  # fail now, not on the first call, when the exports are wrong

    def _instance(self) -> _Instance:
        instance: _Instance | None = getattr(self._local, "instance", None)
        if instance is None:
            with self._instantiate_lock:
                try:
                    instance = _Instance(self._engine, self._linker, self._component)
                except (wasmtime.WasmtimeError, wasmtime.Trap) as error:
                    raise HostError(f"instantiating the component failed: {error}") from error
            self._local.instance = instance
        return instance

    def has(self, name: str) -> bool:
        """Whether the component exports the function ``name`` (an older one lacks those of ``ADDED_IN``)."""
        return name in self._instance().funcs

    def param_type(self, name: str) -> wc.ValType:
        """The type of the first parameter of ``name``."""
        return self._instance().types[name].params[0][1]

    def result_type(self, name: str) -> wc.ValType | None:
        """The result type of ``name``."""
        return self._instance().types[name].result

    def call(self, name: str, *args: Any) -> Any:
        """Calls an export on this thread's instance and returns its raw value.

        A trap or fuel exhaustion raises ``HostError`` and discards the instance (a trapped
        instance may not be entered again); the next call makes a fresh one.
        """
        instance = self._instance()
        try:
            if self._fuel is not None:
                instance.store.set_fuel(self._fuel)
            return instance.funcs[name](instance.store, *args)
        except (wasmtime.WasmtimeError, wasmtime.Trap) as error:
            self._local.instance = None
            raise HostError(f"the component failed in {name}: {error}") from error

    def call_result(self, name: str, *args: Any) -> Any:
        """Calls an export returning ``result<T, evaluation-error>``: returns ``T``'s raw value,
        raises ``ScaleUnitsError`` for the error case."""
        return unwrap(self.call(name, *args), name)

    def call_untagged(self, name: str, *args: Any) -> Any:
        """Calls an export returning ``result<string, evaluation-error>`` or ``result<_,
        evaluation-error>``: returns the string (or ``None``), raises ``ScaleUnitsError`` for the
        error case."""
        return unwrap_untagged(self.call(name, *args), name)


def unwrap(value: Any, name: str) -> Any:
    """The ok payload of a raw ``result``, or ``ScaleUnitsError`` from its error record."""
    if isinstance(value, wc.Variant):
        if value.tag == "ok":
            return value.payload
        if value.tag == "err":
            error: Any = value.payload
            raise ScaleUnitsError(wire(error.code), error.message, error.path)
    raise HostError(f"{name} returned {value!r}, not a result")


def unwrap_untagged(value: Any, name: str) -> Any:
    """The ok payload of a raw ``result<string, evaluation-error>`` or ``result<_,
    evaluation-error>``, which wasmtime-py hands over untagged (the cases' Python types differ):
    the string or ``None``; ``ScaleUnitsError`` from the error record."""
    if isinstance(value, wc.Record):
        error: Any = value
        raise ScaleUnitsError(wire(error.code), error.message, error.path)
    if value is None or isinstance(value, str):
        return value
    raise HostError(f"{name} returned {value!r}, not a result")


def wire(kebab: str) -> str:
    """A WIT enum case in its wire spelling (``scale-up`` is ``scale_up``)."""
    return kebab.replace("-", "_")


def lift(ty: wc.ValType | None, value: Any) -> Any:
    """A raw component value as wire data: records become snake_case dicts, enums wire strings."""
    if isinstance(ty, wc.RecordType):
        return {wire(name): lift(field, getattr(value, name)) for name, field in ty.fields}
    if isinstance(ty, wc.EnumType):
        return wire(value)
    if isinstance(ty, wc.ListType):
        element = ty.element
        return [lift(element, item) for item in value]
    if isinstance(ty, wc.OptionType):
        return None if value is None else lift(ty.payload, value)
    return value


def lower(ty: wc.ValType, value: Any) -> Any:
    """Wire data as a raw component value; the inverse of ``lift``. Every field must be present
    (``KeyError`` otherwise): the typed records have no defaults."""
    if isinstance(ty, wc.RecordType):
        record = wc.Record()
        for name, field in ty.fields:
            setattr(record, name, lower(field, value[wire(name)]))
        return record
    if isinstance(ty, wc.EnumType):
        return str(value).replace("_", "-")
    if isinstance(ty, wc.ListType):
        element = ty.element
        return [lower(element, item) for item in value]
    if isinstance(ty, wc.OptionType):
        return None if value is None else lower(ty.payload, value)
    return value

