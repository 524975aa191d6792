"""``TypedDict``s of what the gate functions return (WIT 0.3.0, SPEC §12): plain dicts from
``json.loads`` of the core's compact JSON. The decision inside is the wire dict (SPEC §9), as
``json.loads(evaluate_json(...))`` gives it.
"""

from __future__ import annotations

from typing import Any, Dict, Literal, Optional, TypedDict

__all__ = ["ChangeKind", "ErrorValue", "GateReason", "GateVerdict", "Limits", "ProposedChange", "ScalerReading"]

#: What kind of change a gate judges: ``break_glass`` only when the gate's own identity policy
#: authorised the override.
ChangeKind = Literal["scale", "break_glass"]

#: Why a change is allowed or denied (SPEC §12.1): a closed list.
GateReason = Literal[
    "no_change",
    "within_decision",
    "recovery_toward_min",
    "recovery_toward_max",
    "break_glass",
    "decision_blocked",
    "decision_hold",
    "wrong_direction",
    "past_desired",
    "away_from_bounds",
    "past_bound",
    "request_invalid",
]


class _ProposedChangeRequired(TypedDict):
    to_replicas: int


class ProposedChange(_ProposedChangeRequired, total=False):
    """A proposed replica change from the request's ``current_replicas``: ``to_replicas`` in
    0..=10000; ``kind`` defaults to ``scale``."""

    kind: ChangeKind


class ErrorValue(TypedDict):
    """The SPEC's error as a value inside a verdict or a reading (not raised)."""

    code: str
    message: str
    path: str


class GateVerdict(TypedDict):
    """A gate's answer (SPEC §12.1)."""

    allowed: bool
    reason: GateReason
    #: One sentence naming the change, the decision and the numbers.
    message: str
    #: ``None`` when the request cannot be evaluated.
    from_replicas: Optional[int]
    to_replicas: int
    #: The decision judged (wire dict), ``None`` when there is none.
    decision: Optional[Dict[str, Any]]
    #: Why there is no decision (``reason`` ``request_invalid``), else ``None``.
    error: Optional[ErrorValue]


class ScalerReading(TypedDict):
    """What an external scaler (KEDA) reports for a request (SPEC §12.2)."""

    #: The metric that makes an HPA with an ``AverageValue`` target of 1 settle on the decision;
    #: ``None`` without a decision.
    metric_value: Optional[int]
    #: Whether the unit stays active (always, without a decision).
    active: bool
    decision: Optional[Dict[str, Any]]
    error: Optional[ErrorValue]


class Limits(TypedDict):
    """The bounds the evaluator enforces, so that no host writes a bound of its own."""

    max_replicas: int
    max_amount: int
    max_seconds: int
    max_observations: int
