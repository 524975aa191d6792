"""The two kinds of failure: a request the evaluator refused, and a host that could not run it."""

from __future__ import annotations

from enum import Enum


class ErrorCode(str, Enum):
    """The stable code of an evaluation error (SPEC §9), spelled as on the wire."""

    INVALID_JSON = "invalid_json"
    INVALID_FIELD = "invalid_field"
    INVALID_REF = "invalid_ref"
    CREDENTIAL_IN_REF = "credential_in_ref"
    INVALID_DIGEST = "invalid_digest"
    INVALID_TIME = "invalid_time"
    INVALID_POLICY = "invalid_policy"
    INVALID_CONTRACT = "invalid_contract"
    INVALID_OBSERVATION = "invalid_observation"
    IDENTITY_MISMATCH = "identity_mismatch"
    DUPLICATE_OBSERVATION = "duplicate_observation"
    REPLICAS_OUT_OF_BOUNDS = "replicas_out_of_bounds"

    def __str__(self) -> str:
        return str(self.value)


class ScaleUnitsError(Exception):
    """The evaluator refused the request (SPEC §9): a domain outcome, with a stable code.

    ``code`` compares equal to its wire string (``err.code == "invalid_field"``); ``path`` is the
    JSON path of the offending field (``contract.policy.target``), or ``""`` for the request.
    """

    code: ErrorCode
    message: str
    path: str

    def __init__(self, code: ErrorCode | str, message: str, path: str = "") -> None:
        self.code = ErrorCode(code)
        self.message = message
        self.path = path
        super().__init__(code, message, path)

    def __str__(self) -> str:
        where = f" (at {self.path})" if self.path else ""
        return f"{self.code.value}: {self.message}{where}"

    def __repr__(self) -> str:
        return f"ScaleUnitsError({self.code.value!r}, {self.message!r}, {self.path!r})"


class HostError(Exception):
    """The host could not run the component: it is missing or not the expected one, it trapped,
    or it ran out of fuel. Never a verdict on the request; never a ``ScaleUnitsError``."""


#: The largest JSON text, in UTF-8 bytes, handed to the component (1 MiB, as in the Rust host
#: and the service). The core has no limit of its own; a valid request is well under 200 KiB.
MAX_REQUEST_BYTES = 1 << 20


class RequestTooLargeError(HostError):
    """JSON text over ``MAX_REQUEST_BYTES``, refused before the component is called."""

    size: int
    limit: int

    def __init__(self, size: int, limit: int = MAX_REQUEST_BYTES) -> None:
        self.size = size
        self.limit = limit
        super().__init__(f"the request is {size} bytes, more than the limit of {limit}")


class UnsupportedError(HostError):
    """The loaded component predates the function called: a component of WIT 0.2.x has no gate,
    limits, derivation text or observation check, one of 0.1.x no ``derive`` or ``diagnose``
    either. The component still serves every function it has."""

    function: str
    wit_version: str

    def __init__(self, function: str, wit_version: str, since: str = "0.2.0") -> None:
        self.function = function
        self.wit_version = wit_version
        super().__init__(
            f"the component (WIT {wit_version}) does not export {function}; load a component of WIT {since} or later"
        )
