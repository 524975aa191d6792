"""``Evaluator``: the evaluator component, loaded once and called from Python."""

from __future__ import annotations

import hashlib
import json
import os
from importlib import resources
from typing import Any, Mapping, Sequence

from . import _component, _wire
from .decision import (
    CapacityAxis,
    ContinuityMode,
    ContractIdentity,
    Decision,
    EvaluatorInfo,
    Explanation,
    Profile,
    Reason,
    ReasonText,
    SignalKind,
    SurfaceKind,
)
from .errors import MAX_REQUEST_BYTES, ErrorCode, HostError, RequestTooLargeError, ScaleUnitsError, UnsupportedError
from .derivation import Derivation, Fault
from .gate import GateVerdict, Limits, ProposedChange, ScalerReading
from .typed import EvaluationRequest, ScaleUnitContract, SimulationInput

#: The component file shipped inside this package.
COMPONENT_FILE = "scale_units_evaluator.wasm"


def bundled_component() -> bytes:
    """The bytes of the component shipped in this package. Raises ``HostError`` when it is absent
    (a broken install: the wheel always carries it)."""
    try:
        return resources.files(__package__).joinpath(COMPONENT_FILE).read_bytes()
    except (FileNotFoundError, OSError) as error:
        raise HostError(f"the package has no {COMPONENT_FILE}; reinstall scale-units") from error


def component_digest() -> str:
    """``sha256:<hex>`` of the component shipped in this package: its identity, the same on
    every face. Raises ``HostError`` when it is absent."""
    return "sha256:" + hashlib.sha256(bundled_component()).hexdigest()


class Evaluator:
    """The Scale Units evaluator component (SPEC schema "1") under wasmtime.

    One ``Evaluator`` compiles the component once and is safe to share between threads: each
    thread that calls it gets its own wasmtime store and instance (a store is not thread-safe),
    so calls from different threads run in parallel. Dicts use the SPEC's snake_case wire names,
    so a request or contract written for the CLI works unchanged.

    Every method raises ``ScaleUnitsError`` when the component refuses the input and
    ``HostError`` when the component cannot run (trap, fuel exhausted, wrong component). Requests,
    contracts and simulation inputs are typed as the ``TypedDict``s of ``scale_units.typed``, so
    a type checker catches a misspelt key; times may be timezone-aware ``datetime`` values.

    :param wasm: the component's bytes or a path to it; by default the one in this package.
    :param fuel: when set, each call may run at most this many wasm instructions (wasmtime
        fuel) and fails with ``HostError`` beyond; a typical request uses about 2.3 million.
        Off by default: fuel metering costs about 20% per call.
    :param expect_digest: when set, a component with another ``sha256:<hex>`` is refused with
        ``HostError`` before it is compiled (as the CLI's ``--expect-digest``).
    :raises HostError: the file cannot be read, the bytes are not the evaluator component, or
        their digest is not ``expect_digest``.
    :raises ValueError: ``fuel`` is not positive.
    """

    __slots__ = ("_digest", "_runtime")

    def __init__(
        self,
        wasm: bytes | str | os.PathLike[str] | None = None,
        *,
        fuel: int | None = None,
        expect_digest: str | None = None,
    ) -> None:
        if wasm is None:
            data = bundled_component()
        elif isinstance(wasm, (bytes, bytearray)):
            data = bytes(wasm)
        else:
            try:
                with open(wasm, "rb") as file:
                    data = file.read()
            except OSError as error:
                raise HostError(f"cannot read the component {os.fsdecode(wasm)}: {error.strerror or error}") from error
        if fuel is not None and fuel <= 0:
            raise ValueError("fuel must be positive")
        self._digest = "sha256:" + hashlib.sha256(data).hexdigest()
        if expect_digest is not None and expect_digest != self._digest:
            raise HostError(f"the component is {self._digest}, not the expected {expect_digest}")
        self._runtime = _component.Runtime(data, fuel)

    @property
    def component_digest(self) -> str:
        """``sha256:<hex>`` of the component bytes this evaluator loaded."""
        return self._digest

    def evaluate(self, request: EvaluationRequest) -> Decision:
        """Decides on one request (SPEC §6), given as a dict in wire form.

        The dict goes to the component as JSON text, so every wire rule and default of the
        SPEC applies exactly as for the CLI; a timezone-aware ``datetime`` stands for a time
        (written as the SPEC's text). Raises ``ScaleUnitsError`` for a request the evaluator
        refuses (``invalid_time`` for a naive ``datetime``), ``TypeError`` for a value JSON
        cannot write.
        """
        return _decision(self.evaluate_json(_wire.dumps(request)))

    def evaluate_json(self, request_json: str | bytes) -> str:
        """Decides on one request given as JSON text; returns the decision as compact JSON, byte
        for byte what the core writes. Raises ``ScaleUnitsError`` (``invalid_json`` for text that
        is not one JSON document, including text that is not valid UTF-8)."""
        return str(self._call_json("evaluate-json", request_json).json)

    def evaluate_batch(self, requests: Sequence[EvaluationRequest]) -> list[Decision | ScaleUnitsError]:
        """Decides on many requests in one call of the component (WIT ``evaluate-batch-json``):
        one entry per request, in order, its ``Decision`` or the ``ScaleUnitsError`` of that
        request, returned rather than raised (one bad request does not stop the others).
        Raises ``TypeError`` for a value JSON cannot write, ``ScaleUnitsError`` for a naive
        ``datetime`` and ``RequestTooLargeError`` when a request is over ``MAX_REQUEST_BYTES``."""
        texts = [_wire.dumps(request) for request in requests]
        return [_decision(entry) if isinstance(entry, str) else entry for entry in self.evaluate_batch_json(texts)]

    def evaluate_batch_json(self, requests_json: Sequence[str | bytes]) -> list[str | ScaleUnitsError]:
        """``evaluate_batch`` over JSON texts: each entry is the decision's compact JSON, byte for
        byte what ``evaluate_json`` returns for that text, or its ``ScaleUnitsError``."""
        if isinstance(requests_json, (str, bytes, bytearray)):
            raise TypeError("evaluate_batch_json takes a sequence of JSON texts, not one text")
        results: list[str | ScaleUnitsError | None] = [None] * len(requests_json)
        texts: list[str] = []
        indices: list[int] = []
        for index, text in enumerate(requests_json):
            try:
                texts.append(_checked_text(text))
                indices.append(index)
            except ScaleUnitsError as error:
                results[index] = error
        outcomes = self._runtime.call("evaluate-batch-json", texts) if texts else []
        if len(outcomes) != len(texts):
            raise HostError(f"evaluate-batch-json answered {len(outcomes)} results for {len(texts)} requests")
        for index, outcome in zip(indices, outcomes):
            try:
                results[index] = str(_component.unwrap(outcome, "evaluate-batch-json").json)
            except ScaleUnitsError as error:
                results[index] = error
        return [entry for entry in results if entry is not None]

    def validate_contract(self, contract: ScaleUnitContract) -> ContractIdentity:
        """Validates a contract (SPEC §4), given as a dict in wire form, and returns its identity.
        Raises ``ScaleUnitsError`` with the first contract error in the SPEC's order."""
        return self.validate_contract_json(_wire.dumps(contract))

    def validate_contract_json(self, contract_json: str | bytes) -> ContractIdentity:
        """Validates a contract given as JSON text and returns its identity. Raises
        ``ScaleUnitsError`` as ``validate_contract`` and ``evaluate_json`` do."""
        ok = self._call_json("validate-contract-json", contract_json)
        return ContractIdentity(contract_id=getattr(ok, "contract-id"), contract_digest=getattr(ok, "contract-digest"))

    def simulate(self, simulation: SimulationInput) -> dict[str, Any]:
        """Replays a contract over a trace inside the component (WIT ``simulate-json``): a dict
        ``{"contract", "initial_replicas"?, "actuation_delay_s"?, "trace_csv" | "trace"}`` in,
        ``{"steps": [...], "summary": {...}}`` out. An empty signal is a failed read, never a
        zero; a step's ``at`` may be a timezone-aware ``datetime``. Raises ``ScaleUnitsError``
        with the trace row and column of a bad cell."""
        result: dict[str, Any] = json.loads(self.simulate_json(_wire.dumps(simulation)))
        return result

    def simulate_json(self, simulation_json: str | bytes) -> str:
        """``simulate`` with JSON text in and out, byte for byte what the core writes."""
        return str(self._call_json("simulate-json", simulation_json).json)

    def surface_profile(self, surface: SurfaceKind | str) -> Profile:
        """The static profile of a surface (SPEC §4.3). Raises ``ValueError`` for a name that is
        not a surface."""
        raw = self._runtime.call("surface-profile", _component.lower(self._runtime.param_type("surface-profile"), SurfaceKind(surface)))
        data = _component.lift(self._runtime.result_type("surface-profile"), raw)
        return Profile(
            surface=SurfaceKind(data["surface"]),
            allowed_signals=tuple(SignalKind(s) for s in data["allowed_signals"]),
            required_capacity_axes=tuple(CapacityAxis(a) for a in data["required_capacity_axes"]),
            engine_authority_axes=tuple(CapacityAxis(a) for a in data["engine_authority_axes"]),
            continuity_modes=tuple(ContinuityMode(m) for m in data["continuity_modes"]),
            partition_and_fenced_lease=data["partition_and_fenced_lease"],
            provider_quota_axes=tuple(CapacityAxis(a) for a in data["provider_quota_axes"]),
        )

    def explain(self, decision: Decision | Mapping[str, Any]) -> Explanation:
        """Puts a decision in plain words, from the core's one catalogue: a ``Decision``, or a
        decision dict in wire form (SPEC §9, as ``json.loads`` of ``evaluate_json`` gives).
        Raises ``ValueError`` for a dict that is not a decision, ``TypeError`` for anything else;
        never refuses a ``Decision``."""
        if not isinstance(decision, Decision):
            if not isinstance(decision, Mapping):
                raise TypeError(f"explain takes a Decision or a decision dict, not {type(decision).__name__}")
            try:
                decision = Decision.from_dict(decision)
            except (KeyError, TypeError, ValueError) as error:
                raise ValueError(f"explain: the dict is not a decision (SPEC §9): {error!r}") from error
        raw = self._runtime.call("explain", _component.lower(self._runtime.param_type("explain"), decision.to_dict()))
        data = _component.lift(self._runtime.result_type("explain"), raw)
        return Explanation(
            summary=data["summary"],
            reasons=tuple(ReasonText(Reason(r["reason"]), r["text"]) for r in data["reasons"]),
            evidence=tuple(data["evidence"]),
        )

    def derive(self, request: EvaluationRequest) -> Derivation:
        """The derivation of a request's decision (WIT 0.2.0 ``derive-json``): each evidence
        verdict, the target arithmetic (``ceil(value / target)``, the clamp, the step cap), each
        gate with its numbers, and the outcome. Integers are exact ``int``s. Raises
        ``ScaleUnitsError`` exactly as ``evaluate`` does for the same request, and
        ``UnsupportedError`` for a component of WIT 0.1."""
        result: Derivation = json.loads(self.derive_json(_wire.dumps(request)))
        return result

    def derive_json(self, request_json: str | bytes) -> str:
        """``derive`` with JSON text in and out, byte for byte what the core writes."""
        self._require("derive-json")
        return str(self._call_json("derive-json", request_json).json)

    def diagnose(self, request: EvaluationRequest | str | bytes) -> list[Fault]:
        """Every fault of a request (a dict, or JSON text as given), each with a hint that says
        what to add or change; the first is the error ``evaluate`` raises for it. ``[]`` for a
        request that evaluates; missing or stale evidence is not a fault. At most 1000 faults are
        listed. Raises ``UnsupportedError`` for a component of WIT 0.1, ``TypeError`` for a value
        JSON cannot write; never ``ScaleUnitsError`` for bad JSON text (that is a fault)."""
        return self._diagnose("diagnose-request-json", request)

    def diagnose_contract(self, contract: ScaleUnitContract | str | bytes) -> list[Fault]:
        """Every fault of a contract (a dict, or JSON text), as ``diagnose``; paths are relative to
        the contract, and the first fault is the error ``validate_contract`` raises."""
        return self._diagnose("diagnose-contract-json", contract)

    def _diagnose(self, name: str, value: Any) -> list[Fault]:
        self._require(name)
        text = value if isinstance(value, (str, bytes)) else bytes(value) if isinstance(value, bytearray) else _wire.dumps(value)
        try:
            checked = _checked_text(text)
        except ScaleUnitsError as error:
            return [Fault(code=error.code.value, message=error.message, path=error.path, hint="save the text as UTF-8")]
        raw = self._runtime.call(name, checked)
        return [
            Fault(code=_component.wire(fault.code), message=fault.message, path=fault.path, hint=fault.hint)
            for fault in raw.faults
        ]

    def gate(self, request: EvaluationRequest, change: ProposedChange) -> GateVerdict:
        """Judges a proposed change ``{"to_replicas", "kind"?}`` (``kind`` ``scale``, the
        default, or ``break_glass``) against the request's decision (SPEC §12.1; WIT 0.3.0), both
        written as JSON so the SPEC's defaults apply: what the decision permits, with recovery
        toward the bounds and break glass. A request that cannot be evaluated is a denial
        (``reason`` ``request_invalid`` with its ``error``), never an exception. Raises
        ``ScaleUnitsError`` (``invalid_field``) for a change that cannot be read,
        ``UnsupportedError`` for a component before WIT 0.3.0."""
        result: GateVerdict = json.loads(self.gate_json(_wire.dumps(request), _wire.dumps(change)))
        return result

    def gate_json(self, request_json: str | bytes, change_json: str | bytes) -> str:
        """``gate`` with JSON texts in and the verdict's compact JSON out, byte for byte what the
        core writes. Raises ``ScaleUnitsError`` (``invalid_json``, ``invalid_field``) for a change
        that cannot be read."""
        self._require("gate-json")
        return str(self._runtime.call_untagged("gate-json", _checked_text(request_json), _checked_text(change_json)))

    def scaler_reading(self, request: EvaluationRequest) -> ScalerReading:
        """What an external scaler (KEDA) reports for a request (SPEC §12.2):
        ``{"metric_value", "active", "decision", "error"}``, the metric that makes an HPA with an
        ``AverageValue`` target of 1 settle on the decision. Without a decision there is no
        metric and the unit stays active; never raises ``ScaleUnitsError`` for the request."""
        result: ScalerReading = json.loads(self.scaler_reading_json(_wire.dumps(request)))
        return result

    def scaler_reading_json(self, request_json: str | bytes) -> str:
        """``scaler_reading`` with JSON text in and out. Text that is not UTF-8 raises
        ``ScaleUnitsError`` (``invalid_json``) before the component is called."""
        self._require("scaler-reading-json")
        return str(self._runtime.call("scaler-reading-json", _checked_text(request_json)))

    def validate_observations(self, request: EvaluationRequest) -> None:
        """Checks the request's contract and every observation exactly as ``evaluate`` does,
        without the bounds of ``current_replicas`` and without deciding: for a host that checks
        evidence as it arrives. Raises ``ScaleUnitsError`` as ``evaluate`` does, never
        ``replicas_out_of_bounds``."""
        self.validate_observations_json(_wire.dumps(request))

    def validate_observations_json(self, request_json: str | bytes) -> None:
        """``validate_observations`` on JSON text."""
        self._require("validate-observations-json")
        self._runtime.call_untagged("validate-observations-json", _checked_text(request_json))

    def derivation_text(self, request: EvaluationRequest | str | bytes) -> str:
        """The derivation of a request (a dict, or JSON text as given) in plain words, one step a
        line: the core's words, which every face shows. Raises ``ScaleUnitsError`` exactly as
        ``derive`` does."""
        self._require("derivation-text")
        text = request if isinstance(request, (str, bytes, bytearray)) else _wire.dumps(request)
        return str(self._runtime.call_untagged("derivation-text", _checked_text(text)))

    def limits(self) -> Limits:
        """The bounds the evaluator enforces: ``{"max_replicas", "max_amount", "max_seconds",
        "max_observations"}``. Raises only ``UnsupportedError`` (a component before WIT 0.3.0)."""
        self._require("limits-json")
        result: Limits = json.loads(str(self._runtime.call("limits-json")))
        return result

    def _require(self, name: str) -> None:
        """Raises ``UnsupportedError`` when the component predates ``name``."""
        if not self._runtime.has(name):
            raise UnsupportedError(name, self.info().wit_version, _component.ADDED_IN.get(name, "0.2.0"))

    def _call_json(self, name: str, text: str | bytes) -> Any:
        """Calls a JSON entry point with ``_checked_text(text)``."""
        return self._runtime.call_result(name, _checked_text(text))

    def info(self) -> EvaluatorInfo:
        """The evaluator, schema and WIT versions of the loaded component."""
        data = _component.lift(self._runtime.result_type("info"), self._runtime.call("info"))
        return EvaluatorInfo(**data)



def _checked_text(text: str | bytes) -> str:
    """JSON text as the component will read it. A WIT string is valid UTF-8, so text that is not
    (undecodable bytes, a lone surrogate) is refused here with the code the core gives invalid
    UTF-8 (SPEC §1). Text over ``MAX_REQUEST_BYTES`` raises ``RequestTooLargeError``."""
    try:
        if isinstance(text, (bytes, bytearray)):
            if len(text) > MAX_REQUEST_BYTES:
                raise RequestTooLargeError(len(text))
            return bytes(text).decode("utf-8")
        if not isinstance(text, str):
            raise TypeError(f"JSON text must be str or bytes, not {type(text).__name__}")
        # A character is 1 to 4 bytes in UTF-8: encode only when the count is in doubt.
        if len(text) > MAX_REQUEST_BYTES:
            raise RequestTooLargeError(len(text.encode("utf-8", "surrogatepass")))
        if 4 * len(text) > MAX_REQUEST_BYTES and (size := len(text.encode("utf-8", "surrogatepass"))) > MAX_REQUEST_BYTES:
            raise RequestTooLargeError(size)
        text.encode("utf-8")  # a lone surrogate has no UTF-8 form
        return text
    except (UnicodeEncodeError, UnicodeDecodeError) as error:
        raise ScaleUnitsError(ErrorCode.INVALID_JSON, f"the text is not valid UTF-8: {error.reason}", "") from None


def _decision(text: str) -> Decision:
    """The decision the component wrote, as a ``Decision``."""
    try:
        return Decision.from_dict(json.loads(text))
    except (KeyError, ValueError, TypeError) as error:
        raise HostError(f"the component returned a decision this package cannot read: {error}") from error
