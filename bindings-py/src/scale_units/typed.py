"""``TypedDict``s of the wire format (SPEC §4–§6): requests, contracts, observations and
simulation inputs as the ``Evaluator`` methods take them, so that a type checker (mypy, pyright)
catches a misspelt key, a missing required field or a word outside its vocabulary before the
component does.

They describe plain dicts: nothing is checked or converted at run time (the component stays the
only judge). Required keys are those the SPEC marks required; every other key may be omitted and
takes its SPEC default. Times may be given as the SPEC's text or as timezone-aware ``datetime``
values. A dict read from JSON (``json.load``) is ``Any`` and is accepted as it is.
"""

from __future__ import annotations

from datetime import datetime
from typing import List, Literal, Optional, TypedDict, Union

from .decision import CapacityAxis, ContinuityMode, QuotaScope, SignalKind, SurfaceKind

__all__ = [
    "CapacityDemand",
    "CapacityObservation",
    "ContinuityContract",
    "ContinuityObservation",
    "EvaluationRequest",
    "PartitionLeaseContract",
    "QuotaBinding",
    "QuotaObservation",
    "SafetyObservation",
    "ScalePolicy",
    "ScaleUnitContract",
    "SignalObservation",
    "SimulationInput",
    "Time",
    "TraceStep",
]


#: A time: the SPEC §3 text (``"2026-08-19T12:00:00Z"``) or a timezone-aware ``datetime``.
Time = Union[str, datetime]

# The vocabularies (SPEC §2) as literal strings, or their enums (which are ``str``s). A test holds
# each literal list equal to its enum.
SurfaceName = Literal[
    "ingest_worker",
    "dispatch_worker",
    "graphos_gateway",
    "mcp_gateway",
    "api_gateway",
    "query_reader",
    "connector_pool",
    "media_pool",
    "rlm_pool",
]
SignalName = Literal[
    "queue_depth",
    "consumer_lag",
    "backlog_age_ms",
    "request_rate",
    "in_flight",
    "p95_latency_ms",
    "error_rate_ppm",
    "active_sessions",
    "continuity_load",
    "provider_in_flight",
    "gpu_utilization_ppm",
]
AxisName = Literal[
    "cpu_milli",
    "memory_mib",
    "gpu_count",
    "gpu_memory_mib",
    "partition_slots",
    "lease_slots",
    "engine_bytes",
    "engine_write_bytes_per_s",
    "fsync_iops",
    "read_admission_slots",
    "session_slots",
    "continuity_slots",
    "upstream_rate",
    "provider_global_quota",
]
ScopeName = Literal["unit", "tenant", "engine_global", "provider_global"]
ModeName = Literal["stateless", "session_affine", "externalized"]

Surface = Union[SurfaceKind, SurfaceName]
Signal = Union[SignalKind, SignalName]
Axis = Union[CapacityAxis, AxisName]
Scope = Union[QuotaScope, ScopeName]
Mode = Union[ContinuityMode, ModeName]


class _ScalePolicyRequired(TypedDict):
    target: int
    target_signal: Signal


class ScalePolicy(_ScalePolicyRequired, total=False):
    """Replica bounds, the tracked signal and target, steps and cooldowns (SPEC §4.1)."""

    min_replicas: int
    max_replicas: int
    scale_up_step: int
    scale_down_step: int
    scale_up_cooldown_s: int
    scale_down_cooldown_s: int
    drain_seconds: int
    allow_scale_to_zero: bool
    allow_scale_from_zero: bool


class CapacityDemand(TypedDict):
    """What one replica consumes of a hard capacity axis (SPEC §4.2)."""

    axis: Axis
    per_replica: int


class _QuotaBindingRequired(TypedDict):
    quota_ref: str
    axis: Axis
    scope: Scope
    per_replica: int


class QuotaBinding(_QuotaBindingRequired, total=False):
    """A quota the unit draws on (SPEC §4.2)."""

    multiplicative: bool


class PartitionLeaseContract(TypedDict, total=False):
    """Partition assignment and lease rules (SPEC §4.2); every field has a default."""

    partitioned: bool
    partitions_per_replica: int
    lease_required: bool
    lease_ttl_s: int
    fencing_required: bool


class _ContinuityContractRequired(TypedDict):
    mode: Mode


class ContinuityContract(_ContinuityContractRequired, total=False):
    """Where session state lives and how replicas drain (SPEC §4.2). A ``stateless`` contract
    must say ``block_scale_down_with_active: False`` (its default, ``True``, is refused)."""

    external_store_ref: Optional[str]
    drain_required: bool
    block_scale_down_with_active: bool
    max_drain_seconds: int


class _ScaleUnitContractRequired(TypedDict):
    unit_ref: str
    surface: Surface
    policy: ScalePolicy
    allowed_signals: List[Signal]
    required_capacity_axes: List[Axis]
    replica_demands: List[CapacityDemand]
    continuity: ContinuityContract


class ScaleUnitContract(_ScaleUnitContractRequired, total=False):
    """The scale-unit contract (SPEC §4.3)."""

    schema_version: Literal["1"]
    version: int
    quotas: List[QuotaBinding]
    partition_lease: PartitionLeaseContract
    safety_required: bool
    engine_authority_axes: List[Axis]
    contract_id: str
    contract_digest: str


class _Observed(TypedDict):
    observed_at: Time
    expires_at: Time
    source_ref: str
    source_digest: str


class SignalObservation(_Observed):
    """The demand signal observed (SPEC §5)."""

    signal: Signal
    value: int


class CapacityObservation(_Observed):
    """What is allocatable, reserved and used on one axis (SPEC §5)."""

    axis: Axis
    allocatable: int
    reserved: int
    used: int


class QuotaObservation(_Observed):
    """A quota's limit and use (SPEC §5)."""

    quota_ref: str
    scope: Scope
    limit: int
    used: int


class ContinuityObservation(_Observed):
    """Whether the continuity store is ready, and what is open (SPEC §5)."""

    ready: bool
    active_sessions: int
    active_streams: int


class _SafetyObservationRequired(_Observed):
    overloaded: bool
    noisy_neighbor: bool


class SafetyObservation(_SafetyObservationRequired, total=False):
    """Load-shedding and noisy-neighbour flags (SPEC §5); a set flag needs a ``reason_ref``."""

    reason_ref: Optional[str]


class _EvaluationRequestRequired(TypedDict):
    contract: ScaleUnitContract
    current_replicas: int
    now: Time


class EvaluationRequest(_EvaluationRequestRequired, total=False):
    """One evaluation request (SPEC §6)."""

    signal: Optional[SignalObservation]
    capacities: List[CapacityObservation]
    quotas: List[QuotaObservation]
    continuity: Optional[ContinuityObservation]
    safety: Optional[SafetyObservation]
    last_action_at: Optional[Time]


class _TraceStepRequired(TypedDict):
    at: Time


class TraceStep(_TraceStepRequired, total=False):
    """One step of a simulation trace; ``signal: None`` is a failed read, never a zero."""

    signal: Optional[int]
    capacity_headroom: Optional[int]
    quota_headroom: Optional[int]
    active_sessions: Optional[int]
    ready: Optional[bool]
    overloaded: Optional[bool]
    noisy_neighbor: Optional[bool]


class _SimulationInputRequired(TypedDict):
    contract: ScaleUnitContract


class SimulationInput(_SimulationInputRequired, total=False):
    """The input of ``Evaluator.simulate``: a contract and exactly one of ``trace_csv`` and
    ``trace``."""

    initial_replicas: int
    actuation_delay_s: int
    trace_csv: str
    trace: List[TraceStep]

