"""``TypedDict``s of what ``Evaluator.derive`` and ``Evaluator.diagnose`` return (WIT 0.2.0):
plain dicts from ``json.loads`` of the core's JSON, so every integer is an exact Python ``int``
(the growth gate's products reach about 10^19). Vocabulary words are strings. The shapes are the
core's (``schema/derivation.schema.json``; docs/DECISIONS.md, "Derivations" and "Diagnosis").
"""

from __future__ import annotations

from typing import List, Literal, Optional, TypedDict

__all__ = [
    "DemandCheck",
    "Derivation",
    "DerivationTarget",
    "EngineCheck",
    "EvidenceVerdict",
    "Fault",
    "QuotaCheck",
    "StepCap",
]


class EvidenceVerdict(TypedDict):
    """How phase A judged one evidence entry (SPEC §7 A1–A5)."""

    kind: str
    ref: str
    status: str
    code: str
    #: ``None`` when the observation was missing.
    observed_at: Optional[str]
    expires_at: Optional[str]
    #: ``{"expected", "found"}`` for ``signal_mismatch`` and ``quota_scope_mismatch``.
    mismatch: Optional[dict[str, str]]


class StepCap(TypedDict):
    """``desired = min(current + scale_up_step, raw)`` or ``max(current - scale_down_step, raw)``."""

    name: Literal["scale_up_step", "scale_down_step"]
    size: int
    limit: int
    capped: bool


class DerivationTarget(TypedDict):
    """Target tracking (SPEC §7 B): ``ceil(value / target)``, clamped, then step-capped."""

    signal: str
    value: int
    target: int
    ceil: int
    min_replicas: int
    floor: int
    max_replicas: int
    clamp: Optional[Literal["floor", "max_replicas"]]
    raw: int
    action: str
    step: Optional[StepCap]
    desired: int


class DemandCheck(TypedDict):
    """One replica demand in the growth gate: ``needed`` against ``available``."""

    axis: str
    per_replica: int
    needed: int
    status: Literal["fits", "exhausted", "missing", "stale"]
    allocatable: Optional[int]
    reserved: Optional[int]
    available: Optional[int]
    shortfall: Optional[int]


class QuotaCheck(TypedDict):
    """One quota binding's projection in the growth gate: ``used + additional × per_replica``."""

    quota_ref: str
    scope: str
    axis: str
    multiplicative: bool
    per_replica: int
    used: int
    limit: int
    projected: int
    over: bool


class EngineCheck(TypedDict):
    """One engine authority axis: saturated when nothing is available."""

    axis: str
    allocatable: int
    reserved: int
    available: int
    saturated: bool


class Derivation(TypedDict):
    """The derivation of a decision: each evidence verdict, the target arithmetic, each gate of
    phase C with its numbers (a dict whose ``gate`` key names it: ``scale_from_zero``,
    ``scale_to_zero``, ``active_sessions``, ``cooldown``, ``growth`` with ``DemandCheck``,
    ``QuotaCheck`` and ``EngineCheck`` lists, ``drain_bound``), and the decision's outcome."""

    decision_id: str
    decision_digest: str
    contract_id: str
    evaluated_at: str
    current_replicas: int
    evidence: List[EvidenceVerdict]
    #: Phase-A checks without an evidence entry: dicts whose ``check`` key names them.
    checks: List[dict[str, object]]
    #: ``None`` when phase A blocked.
    target: Optional[DerivationTarget]
    gates: List[dict[str, object]]
    action: str
    desired_replicas: int
    reasons: List[str]
    drain_required: bool


class Fault(TypedDict):
    """One fault of a diagnosis: the SPEC's error for it and what to change."""

    #: The error code's wire spelling (``invalid_field``).
    code: str
    message: str
    #: The JSON path of the offending field, ``""`` for the input as a whole.
    path: str
    #: What to add or change; never empty.
    hint: str
