"""Typed errors of the Kubernetes client runtime.

Callers decide what to do from the *type* of an error, never from parsing a message: ``Conflict``
means "re-read and retry", ``NotFound`` usually means "already gone", ``Invalid`` is permanent and
carries the field causes, ``TooManyRequests`` carries the server's ``Retry-After``.

Invariants:

* Every non-2xx answer becomes an ``ApiError`` subclass, whatever its body. A proper
  ``metav1.Status`` is mapped by its ``reason`` first (the API server's own classification, e.g. a
  500 with reason ``ServerTimeout``), then by HTTP status code. A body that is not a Status (an
  HTML page from a proxy, an empty body, truncated JSON) still becomes the error class of its status
  code, with a short snippet of the body in the message so the log says what came back.
* ``TransportError`` is everything below HTTP (connect refused, TLS, reset). ``request_sent`` tells
  whether the server may have seen the request, which decides whether a non-idempotent call may be
  retried.
* Errors name what they concern: the GVK for ``UnknownKindError``, the request path for API errors.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import orjson

from shared.kube.gvk import GroupVersionKind

__all__ = [
    "AlreadyExists",
    "ApiError",
    "BadRequest",
    "Conflict",
    "Forbidden",
    "Gone",
    "InternalError",
    "Invalid",
    "KubeError",
    "MethodNotAllowed",
    "NotFound",
    "ServerTimeout",
    "ServiceUnavailable",
    "StatusCause",
    "TooManyRequests",
    "TransportError",
    "Unauthorized",
    "UnexpectedResponse",
    "UnknownKindError",
    "api_error_from_response",
    "cache_miss_message",
    "parse_retry_after",
]

BODY_SNIPPET_LIMIT = 200


class KubeError(Exception):
    """Base of every error raised by ``shared.kube``."""


class TransportError(KubeError):
    """The request did not get an HTTP answer (connect failure, TLS error, reset, timeout).

    ``request_sent`` is ``False`` only when the request certainly never reached the server (the
    connection could not be opened), which is the only case a non-idempotent write may be retried.
    """

    def __init__(self, message: str, *, request_sent: bool, path: str = "") -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.request_sent = request_sent
        self.path = path


class UnexpectedResponse(KubeError):
    """A 2xx answer whose body is not the JSON object the API promises (names the path)."""

    def __init__(self, *, path: str, status_code: int, body: bytes, problem: str) -> None:
        snippet = _snippet(body)
        super().__init__(f"{path}: HTTP {status_code} {problem}; body starts {snippet!r}")
        self.path = path
        self.status_code = status_code
        self.body_snippet = snippet


class UnknownKindError(KubeError):
    """Discovery does not know the kind (CRD not installed, wrong version or a typo)."""

    def __init__(self, gvk: GroupVersionKind, detail: str = "") -> None:
        text = f"no resource is served for {gvk}"
        super().__init__(f"{text}: {detail}" if detail else text)
        self.gvk = gvk


class StatusCause:
    """One ``status.details.causes[]`` entry: which field failed and why."""

    __slots__ = ("field", "message", "reason")

    def __init__(self, *, field: str, reason: str, message: str) -> None:
        self.field = field
        self.reason = reason
        self.message = message

    def __repr__(self) -> str:
        return f"StatusCause(field={self.field!r}, reason={self.reason!r}, message={self.message!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StatusCause):
            return NotImplemented
        return (self.field, self.reason, self.message) == (other.field, other.reason, other.message)

    def __hash__(self) -> int:
        return hash((self.field, self.reason, self.message))


class ApiError(KubeError):
    """The API server (or something in front of it) answered with a non-2xx status."""

    default_reason: ClassVar[str] = ""

    def __init__(
        self,
        *,
        code: int,
        reason: str = "",
        message: str = "",
        details: Mapping[str, Any] | None = None,
        path: str = "",
        body_snippet: str = "",
        retry_after: float | None = None,
    ) -> None:
        self.code = code
        self.reason = reason or self.default_reason
        self.message = message
        self.details: Mapping[str, Any] = details or {}
        self.path = path
        self.body_snippet = body_snippet
        self.retry_after = retry_after
        text = f"{self.reason or 'HTTP'} ({code})"
        if path:
            text = f"{path}: {text}"
        if message:
            text = f"{text}: {message}"
        elif body_snippet:
            text = f"{text}: body starts {body_snippet!r}"
        super().__init__(text)

    @property
    def causes(self) -> list[StatusCause]:
        raw = self.details.get("causes")
        if not isinstance(raw, list):
            return []
        return [
            StatusCause(
                field=str(item.get("field", "")),
                reason=str(item.get("reason", "")),
                message=str(item.get("message", "")),
            )
            for item in raw
            if isinstance(item, dict)
        ]


class BadRequest(ApiError):
    default_reason = "BadRequest"


class Unauthorized(ApiError):
    default_reason = "Unauthorized"


class Forbidden(ApiError):
    default_reason = "Forbidden"


class NotFound(ApiError):
    default_reason = "NotFound"


class MethodNotAllowed(ApiError):
    default_reason = "MethodNotAllowed"


class Conflict(ApiError):
    """A write lost an optimistic-concurrency race (stale resourceVersion or precondition)."""

    default_reason = "Conflict"


class AlreadyExists(Conflict):
    """``create`` of a name that exists. A ``Conflict`` too (both are 409), as in apimachinery."""

    default_reason = "AlreadyExists"


class Gone(ApiError):
    """The requested resourceVersion is too old (410 ``Gone``/``Expired``): relist."""

    default_reason = "Gone"


class Invalid(ApiError):
    """Validation failed (422); ``causes`` names every offending field."""

    default_reason = "Invalid"


class TooManyRequests(ApiError):
    """429: API priority and fairness or a rate limit; ``retry_after`` is the server's hint."""

    default_reason = "TooManyRequests"


class InternalError(ApiError):
    default_reason = "InternalError"


class ServiceUnavailable(ApiError):
    default_reason = "ServiceUnavailable"


class ServerTimeout(ApiError):
    """The server could not finish in time (reason ``ServerTimeout``/``Timeout``, or 504)."""

    default_reason = "ServerTimeout"


_BY_REASON: dict[str, type[ApiError]] = {
    "BadRequest": BadRequest,
    "Unauthorized": Unauthorized,
    "Forbidden": Forbidden,
    "NotFound": NotFound,
    "MethodNotAllowed": MethodNotAllowed,
    "AlreadyExists": AlreadyExists,
    "Conflict": Conflict,
    "Gone": Gone,
    "Expired": Gone,
    "Invalid": Invalid,
    "TooManyRequests": TooManyRequests,
    "InternalError": InternalError,
    "ServiceUnavailable": ServiceUnavailable,
    "ServerTimeout": ServerTimeout,
    "Timeout": ServerTimeout,
}

_BY_CODE: dict[int, type[ApiError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    409: Conflict,
    410: Gone,
    422: Invalid,
    429: TooManyRequests,
    500: InternalError,
    503: ServiceUnavailable,
    504: ServerTimeout,
}


def _snippet(body: bytes) -> str:
    text = body[: BODY_SNIPPET_LIMIT * 4].decode("utf-8", errors="replace")
    text = " ".join(text.split())
    return text[:BODY_SNIPPET_LIMIT]


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds form; the API server never sends dates)."""
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


def api_error_from_response(
    *, status_code: int, body: bytes, headers: Mapping[str, str], path: str = ""
) -> ApiError:
    """Build the typed error for a non-2xx answer, whatever its body looks like."""
    retry_after = parse_retry_after(headers.get("retry-after") or headers.get("Retry-After"))
    status: Any = None
    try:
        status = orjson.loads(body) if body else None
    except orjson.JSONDecodeError:
        status = None
    if isinstance(status, dict) and status.get("kind") == "Status":
        reason = str(status.get("reason") or "")
        code = status.get("code")
        code = code if isinstance(code, int) and code > 0 else status_code
        details = status.get("details")
        if retry_after is None and isinstance(details, dict):
            hinted = details.get("retryAfterSeconds")
            retry_after = float(hinted) if isinstance(hinted, int | float) and hinted > 0 else None
        cls = _BY_REASON.get(reason) or _BY_CODE.get(status_code) or _fallback_class(status_code)
        return cls(
            code=code,
            reason=reason,
            message=str(status.get("message") or ""),
            details=details if isinstance(details, dict) else None,
            path=path,
            retry_after=retry_after,
        )
    cls = _BY_CODE.get(status_code) or _fallback_class(status_code)
    return cls(code=status_code, path=path, body_snippet=_snippet(body), retry_after=retry_after)


def _fallback_class(status_code: int) -> type[ApiError]:
    if status_code >= 500:
        return InternalError
    if status_code >= 400:
        return BadRequest
    return ApiError


def cache_miss_message(gvk: GroupVersionKind, name: str) -> str:
    """The NotFound text of controller-runtime's cache reader, which Kueue's reads from its informers
    return: the *kind* in the resource's place (``Secret "x" not found``,
    ``MultiKueueConfig.kueue.x-k8s.io "c" not found``), where the API server would say
    ``secrets "x" not found``."""
    resource = f"{gvk.kind}.{gvk.group}" if gvk.group else gvk.kind
    return f'{resource} "{name}" not found'
