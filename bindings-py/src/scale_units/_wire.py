"""Python values to the JSON text the component reads: ``json.dumps``, plus timezone-aware
``datetime`` values written as the SPEC's time text (SPEC §3).

A ``datetime`` may stand wherever a time goes (``now``, ``last_action_at``, an observation's
``observed_at``/``expires_at``, a trace step's ``at``). It is written as
``YYYY-MM-DDTHH:MM:SS[.ffffff]`` and its offset: ``Z`` for UTC, ``±HH:MM`` for an offset of whole
minutes; any other offset is converted to UTC first. A naive ``datetime`` (no ``tzinfo``) is
refused with the code and words the core gives a time without an offset: ``invalid_time``,
"<field> must be timezone-aware", at its path.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Any

from .errors import ErrorCode, ScaleUnitsError


class _NaiveDatetime(ValueError):
    """Raised inside ``json.dumps``; turned into a ``ScaleUnitsError`` with the path."""


def time_text(value: datetime) -> str:
    """The SPEC §3 text of a timezone-aware ``datetime``. Raises ``ValueError`` for a naive one."""
    offset = value.utcoffset()
    if offset is None:
        raise _NaiveDatetime("a naive datetime")
    if offset % timedelta(minutes=1):
        value, offset = value.astimezone(timezone.utc), timedelta(0)
    text = value.replace(tzinfo=None).isoformat(timespec="microseconds" if value.microsecond else "seconds")
    if not offset:
        return text + "Z"
    sign = "-" if offset < timedelta(0) else "+"
    minutes = abs(offset) // timedelta(minutes=1)
    return f"{text}{sign}{minutes // 60:02d}:{minutes % 60:02d}"


def _default(value: Any) -> Any:
    if isinstance(value, datetime):
        return time_text(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _naive_path(value: Any, path: str) -> str | None:
    """The SPEC-style path (``capacities[2].observed_at``) of the first naive datetime."""
    if isinstance(value, datetime):
        return path if value.utcoffset() is None else None
    if isinstance(value, dict):
        for key, item in value.items():
            found = _naive_path(item, f"{path}.{key}" if path else str(key))
            if found is not None:
                return found
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            found = _naive_path(item, f"{path}[{index}]")
            if found is not None:
                return found
    return None


def dumps(value: Any) -> str:
    """``value`` as JSON text for the component. Raises ``ScaleUnitsError`` (``invalid_time``) for
    a naive ``datetime``, ``TypeError`` for a value JSON cannot write."""
    try:
        return json.dumps(value, default=_default)
    except _NaiveDatetime:
        path = _naive_path(value, "") or ""
        field = path.rsplit(".", 1)[-1] or "the time"
        raise ScaleUnitsError(
            ErrorCode.INVALID_TIME,
            f"{field} must be timezone-aware: the datetime has no tzinfo; give it one, such as "
            "datetime.now(timezone.utc) or dt.replace(tzinfo=timezone.utc)",
            path,
        ) from None
