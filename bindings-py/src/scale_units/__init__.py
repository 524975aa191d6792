"""Scale Units: fail-closed autoscaling decisions from the one evaluator component.

This package runs the same ``.wasm`` the Rust host, Node and the browser run (its sha256 is
``component_digest()``) under wasmtime. Start with ``Evaluator().evaluate(request)``.
"""

from .decision import (
    Action,
    CapacityAxis,
    ContinuityMode,
    ContractIdentity,
    Decision,
    EvaluatorInfo,
    Evidence,
    EvidenceKind,
    EvidenceStatus,
    Explanation,
    Profile,
    QuotaScope,
    Reason,
    ReasonText,
    SignalKind,
    SurfaceKind,
)
from .derivation import DemandCheck, Derivation, DerivationTarget, EngineCheck, EvidenceVerdict, Fault, QuotaCheck
from .errors import MAX_REQUEST_BYTES, ErrorCode, HostError, RequestTooLargeError, ScaleUnitsError, UnsupportedError
from .evaluator import Evaluator, component_digest
from .typed import (
    CapacityDemand,
    CapacityObservation,
    ContinuityContract,
    ContinuityObservation,
    EvaluationRequest,
    PartitionLeaseContract,
    QuotaBinding,
    QuotaObservation,
    SafetyObservation,
    ScalePolicy,
    ScaleUnitContract,
    SignalObservation,
    SimulationInput,
    TraceStep,
)

__version__ = "0.1.0"

__all__ = [
    "Action",
    "CapacityAxis",
    "CapacityDemand",
    "CapacityObservation",
    "ContinuityContract",
    "ContinuityObservation",
    "DemandCheck",
    "Derivation",
    "DerivationTarget",
    "EngineCheck",
    "EvaluationRequest",
    "EvidenceVerdict",
    "Fault",
    "QuotaCheck",
    "UnsupportedError",
    "PartitionLeaseContract",
    "QuotaBinding",
    "QuotaObservation",
    "SafetyObservation",
    "ScalePolicy",
    "ScaleUnitContract",
    "SignalObservation",
    "SimulationInput",
    "TraceStep",
    "ContinuityMode",
    "ContractIdentity",
    "Decision",
    "ErrorCode",
    "EvaluatorInfo",
    "Evaluator",
    "Evidence",
    "EvidenceKind",
    "EvidenceStatus",
    "Explanation",
    "HostError",
    "MAX_REQUEST_BYTES",
    "Profile",
    "QuotaScope",
    "Reason",
    "ReasonText",
    "RequestTooLargeError",
    "ScaleUnitsError",
    "SignalKind",
    "SurfaceKind",
    "component_digest",
]
