"""What the evaluator returns, as frozen dataclasses and enums spelled as on the wire (SPEC §2, §9).

Every enum is a ``str``: ``Action.SCALE_UP == "scale_up"``. The values are those of the WIT
package; a test checks them against the component, so the two cannot drift.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, Mapping


class _WireEnum(str, Enum):
    def __str__(self) -> str:
        return str(self.value)


class Action(_WireEnum):
    """What a decision tells the actuator to do."""

    SCALE_UP = "scale_up"
    SCALE_DOWN = "scale_down"
    HOLD = "hold"
    BLOCKED = "blocked"


class Reason(_WireEnum):
    """Why a decision came out as it did (SPEC §2 ``DecisionReason``)."""

    AT_TARGET = "at_target"
    COOLDOWN = "cooldown"
    SIGNAL_MISSING = "signal_missing"
    SIGNAL_STALE = "signal_stale"
    SIGNAL_MISMATCH = "signal_mismatch"
    CAPACITY_MISSING = "capacity_missing"
    CAPACITY_STALE = "capacity_stale"
    CAPACITY_EXHAUSTED = "capacity_exhausted"
    ENGINE_AUTHORITY_SATURATED = "engine_authority_saturated"
    PROVIDER_QUOTA_MISSING = "provider_quota_missing"
    PROVIDER_QUOTA_STALE = "provider_quota_stale"
    PROVIDER_QUOTA_EXHAUSTED = "provider_quota_exhausted"
    PROVIDER_QUOTA_NOT_MULTIPLICATIVE = "provider_quota_not_multiplicative"
    QUOTA_MISSING = "quota_missing"
    QUOTA_STALE = "quota_stale"
    QUOTA_SCOPE_MISMATCH = "quota_scope_mismatch"
    CONTINUITY_MISSING = "continuity_missing"
    CONTINUITY_STALE = "continuity_stale"
    CONTINUITY_NOT_READY = "continuity_not_ready"
    ACTIVE_SESSIONS_BLOCK_DRAIN = "active_sessions_block_drain"
    SCALE_FROM_ZERO_DISABLED = "scale_from_zero_disabled"
    SCALE_TO_ZERO_DISABLED = "scale_to_zero_disabled"
    DRAIN_REQUIRED = "drain_required"
    OVERLOAD_SHEDDING_ACTIVE = "overload_shedding_active"
    NOISY_NEIGHBOR = "noisy_neighbor"
    PARTITION_LEASE_MISSING = "partition_lease_missing"
    INVALID_BOUNDS = "invalid_bounds"
    TARGET_TRACKING = "target_tracking"


class EvidenceKind(_WireEnum):
    """What a piece of evidence looked at."""

    SIGNAL = "signal"
    CAPACITY = "capacity"
    QUOTA = "quota"
    CONTINUITY = "continuity"
    SAFETY = "safety"


class EvidenceStatus(_WireEnum):
    """How the evaluator judged a piece of evidence."""

    ACCEPTED = "accepted"
    MISSING = "missing"
    STALE = "stale"
    BLOCKED = "blocked"


class SurfaceKind(_WireEnum):
    """The kind of service surface a contract scales (SPEC §4.3)."""

    INGEST_WORKER = "ingest_worker"
    DISPATCH_WORKER = "dispatch_worker"
    GRAPHOS_GATEWAY = "graphos_gateway"
    MCP_GATEWAY = "mcp_gateway"
    API_GATEWAY = "api_gateway"
    QUERY_READER = "query_reader"
    CONNECTOR_POOL = "connector_pool"
    MEDIA_POOL = "media_pool"
    RLM_POOL = "rlm_pool"


class SignalKind(_WireEnum):
    """A demand signal a policy can track."""

    QUEUE_DEPTH = "queue_depth"
    CONSUMER_LAG = "consumer_lag"
    BACKLOG_AGE_MS = "backlog_age_ms"
    REQUEST_RATE = "request_rate"
    IN_FLIGHT = "in_flight"
    P95_LATENCY_MS = "p95_latency_ms"
    ERROR_RATE_PPM = "error_rate_ppm"
    ACTIVE_SESSIONS = "active_sessions"
    CONTINUITY_LOAD = "continuity_load"
    PROVIDER_IN_FLIGHT = "provider_in_flight"
    GPU_UTILIZATION_PPM = "gpu_utilization_ppm"


class CapacityAxis(_WireEnum):
    """A hard capacity axis that each replica consumes."""

    CPU_MILLI = "cpu_milli"
    MEMORY_MIB = "memory_mib"
    GPU_COUNT = "gpu_count"
    GPU_MEMORY_MIB = "gpu_memory_mib"
    PARTITION_SLOTS = "partition_slots"
    LEASE_SLOTS = "lease_slots"
    ENGINE_BYTES = "engine_bytes"
    ENGINE_WRITE_BYTES_PER_S = "engine_write_bytes_per_s"
    FSYNC_IOPS = "fsync_iops"
    READ_ADMISSION_SLOTS = "read_admission_slots"
    SESSION_SLOTS = "session_slots"
    CONTINUITY_SLOTS = "continuity_slots"
    UPSTREAM_RATE = "upstream_rate"
    PROVIDER_GLOBAL_QUOTA = "provider_global_quota"


class QuotaScope(_WireEnum):
    """Who shares a quota."""

    UNIT = "unit"
    TENANT = "tenant"
    ENGINE_GLOBAL = "engine_global"
    PROVIDER_GLOBAL = "provider_global"


class ContinuityMode(_WireEnum):
    """Where a surface keeps session state."""

    STATELESS = "stateless"
    SESSION_AFFINE = "session_affine"
    EXTERNALIZED = "externalized"


@dataclass(frozen=True, slots=True)
class Evidence:
    """One piece of evidence behind a decision (SPEC §7)."""

    kind: EvidenceKind
    ref: str
    digest: str
    status: EvidenceStatus
    #: A wire spelling naming what was accepted or what went wrong (free text, not an enum).
    code: str

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Evidence:
        """Reads one wire evidence object. Raises ``KeyError``/``ValueError`` on a malformed one."""
        return cls(
            kind=EvidenceKind(data["kind"]),
            ref=data["ref"],
            digest=data["digest"],
            status=EvidenceStatus(data["status"]),
            code=data["code"],
        )

    def to_dict(self) -> dict[str, Any]:
        """The wire object."""
        return {
            "kind": self.kind.value,
            "ref": self.ref,
            "digest": self.digest,
            "status": self.status.value,
            "code": self.code,
        }


@dataclass(frozen=True, slots=True)
class Decision:
    """The evaluator's decision (SPEC §9). ``blocked`` is a decision, not an error."""

    schema_version: str
    decision_id: str
    decision_digest: str
    contract_id: str
    #: ``now`` in UTC, ``YYYY-MM-DDTHH:MM:SS[.ffffff]+00:00``.
    evaluated_at: str
    current_replicas: int
    #: Equals ``current_replicas`` for ``hold`` and ``blocked``.
    desired_replicas: int
    action: Action
    #: In evaluation order.
    reasons: tuple[Reason, ...]
    drain_required: bool
    #: In evaluation order.
    evidence: tuple[Evidence, ...]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Decision:
        """Reads a wire decision. Raises ``KeyError``/``ValueError`` on a malformed one."""
        return cls(
            schema_version=data["schema_version"],
            decision_id=data["decision_id"],
            decision_digest=data["decision_digest"],
            contract_id=data["contract_id"],
            evaluated_at=data["evaluated_at"],
            current_replicas=data["current_replicas"],
            desired_replicas=data["desired_replicas"],
            action=Action(data["action"]),
            reasons=tuple(Reason(reason) for reason in data["reasons"]),
            drain_required=data["drain_required"],
            evidence=tuple(Evidence.from_dict(entry) for entry in data["evidence"]),
        )

    def to_dict(self) -> dict[str, Any]:
        """The wire decision, fields in SPEC §9 order; ``json.dumps`` of it is valid wire JSON."""
        return {
            "schema_version": self.schema_version,
            "decision_id": self.decision_id,
            "decision_digest": self.decision_digest,
            "contract_id": self.contract_id,
            "evaluated_at": self.evaluated_at,
            "current_replicas": self.current_replicas,
            "desired_replicas": self.desired_replicas,
            "action": self.action.value,
            "reasons": [reason.value for reason in self.reasons],
            "drain_required": self.drain_required,
            "evidence": [entry.to_dict() for entry in self.evidence],
        }


@dataclass(frozen=True, slots=True)
class ContractIdentity:
    """A contract's immutable identity (SPEC §8)."""

    #: ``scale-unit:`` and 32 hex digits.
    contract_id: str
    #: ``sha256:`` and 64 hex digits.
    contract_digest: str


@dataclass(frozen=True, slots=True)
class ReasonText:
    """One reason of a decision and its plain-words description."""

    reason: Reason
    text: str


@dataclass(frozen=True, slots=True)
class Explanation:
    """A decision in plain words, from the core's one catalogue."""

    #: One sentence on the action (``Scale up from 1 to 3 replicas.``).
    summary: str
    reasons: tuple[ReasonText, ...]
    #: One line per evidence entry, in the decision's order.
    evidence: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Profile:
    """The static profile of a surface (SPEC §4.3)."""

    surface: SurfaceKind
    allowed_signals: tuple[SignalKind, ...]
    required_capacity_axes: tuple[CapacityAxis, ...]
    engine_authority_axes: tuple[CapacityAxis, ...]
    continuity_modes: tuple[ContinuityMode, ...]
    partition_and_fenced_lease: bool
    #: Empty when the surface needs no provider-global quota binding.
    provider_quota_axes: tuple[CapacityAxis, ...]


@dataclass(frozen=True, slots=True)
class EvaluatorInfo:
    """What the loaded component is and which contract it speaks."""

    #: The core crate's version, such as ``0.1.0``.
    evaluator_version: str
    #: The wire schema: ``"1"``.
    schema_version: str
    #: The WIT package version: ``0.2.0`` (``0.1.x`` for a component of the previous minor).
    wit_version: str
