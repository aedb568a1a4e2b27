"""Kubernetes ``Status`` errors, with the reasons, codes and message formats kube-apiserver uses.

Clients branch on ``reason`` and ``code`` (client-go's ``errors.IsConflict`` and friends, the
``kubernetes`` Python client's ``ApiException.status``), and people read ``message``; so every
failure leaving the devcluster is a :class:`StatusError` rendered as a ``Status`` whose three fields
match what the real server says for the same mistake (apimachinery ``pkg/api/errors``). A request
handler raises; the HTTP layer renders. Nothing else builds error bodies.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Cause",
    "StatusError",
    "already_exists",
    "bad_request",
    "conflict",
    "expired",
    "forbidden",
    "invalid",
    "method_not_allowed",
    "not_found",
    "page_not_found",
    "patch_not_applied",
    "path_not_found",
    "status_body",
    "too_large_resource_version",
    "unauthorized",
    "unsupported_media_type",
]


@dataclass(frozen=True, slots=True)
class Cause:
    """One ``StatusCause``: ``field`` is the dotted path, ``reason`` e.g. ``FieldValueInvalid``."""

    field: str
    reason: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"reason": self.reason, "message": self.message, "field": self.field}

    def summary(self) -> str:
        """How kube joins a cause into an Invalid message: ``<field>: <message>``."""
        return f"{self.field}: {self.message}" if self.field else self.message


@dataclass(slots=True)
class StatusError(Exception):
    """An API failure; ``details`` is the ``StatusDetails`` object (may be empty)."""

    code: int
    reason: str
    message: str
    details: dict[str, Any] | None = None
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    #: the Status's ListMeta (e.g. a fresh continue token with an expired one)
    metadata: dict[str, Any] = field(default_factory=dict)
    #: answered as this plain text instead of a Status (Go's ``http.NotFound``)
    plain_text: str | None = None

    def __str__(self) -> str:
        return f"{self.code} {self.reason}: {self.message}"

    def to_status(self) -> dict[str, Any]:
        body = status_body(code=self.code, reason=self.reason, message=self.message, details=self.details)
        if self.metadata:
            body["metadata"] = dict(self.metadata)
        return body


def status_body(
    *, code: int, reason: str, message: str, details: dict[str, Any] | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
    }
    if reason:  # omitempty: an InternalError built from a plain error has none
        body["reason"] = reason
    if details is not None:
        body["details"] = details
    body["code"] = code
    return body


def _qualified(group: str, plural: str) -> str:
    return f"{plural}.{group}" if group else plural


def _details(group: str, kind: str, name: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if name:
        out["name"] = name
    if group:
        out["group"] = group
    out["kind"] = kind
    return out


def not_found(*, group: str, plural: str, name: str) -> StatusError:
    return StatusError(
        404, "NotFound", f'{_qualified(group, plural)} "{name}" not found', _details(group, plural, name)
    )


def path_not_found() -> StatusError:
    """An unknown URL: kube answers with an empty-details NotFound."""
    return StatusError(404, "NotFound", "the server could not find the requested resource", {})


def page_not_found() -> StatusError:
    """A URL outside every API group kube-apiserver compiles in (an unknown group, or a custom
    resource group's unknown version or resource, or no API path at all): Go's plain-text
    ``404 page not found``, not a Status."""
    return StatusError(404, "NotFound", "404 page not found", plain_text="404 page not found\n")


def patch_not_applied() -> StatusError:
    """A JSON patch operation that cannot be applied: kube's generic 422, with empty details (the
    library's reason is not passed on)."""
    return StatusError(422, "Invalid", "the server rejected our request due to an error in our request", {})


def already_exists(*, group: str, plural: str, name: str) -> StatusError:
    return StatusError(
        409,
        "AlreadyExists",
        f'{_qualified(group, plural)} "{name}" already exists',
        _details(group, plural, name),
    )


def conflict(*, group: str, plural: str, name: str, why: str | None = None) -> StatusError:
    why = why or "the object has been modified; please apply your changes to the latest version and try again"
    return StatusError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {_qualified(group, plural)} "{name}": {why}',
        _details(group, plural, name),
    )


def invalid(*, group: str, kind: str, name: str, causes: list[Cause]) -> StatusError:
    """422 Invalid: every cause in ``details.causes``; the message joins them without repeats, as
    ``ErrorList.ToAggregate()`` does (a rule checked twice, e.g. the Job spec on update, yields two
    causes but one message part)."""
    qualified_kind = f"{kind}.{group}" if group else kind
    summaries = list(dict.fromkeys(c.summary() for c in causes))
    joined = summaries[0] if len(summaries) == 1 else "[" + ", ".join(summaries) + "]"
    details = _details(group, kind, name)
    details["causes"] = [c.to_dict() for c in causes]
    return StatusError(422, "Invalid", f'{qualified_kind} "{name}" is invalid: {joined}', details)


def forbidden(*, group: str, plural: str, name: str, why: str) -> StatusError:
    prefix = f'{_qualified(group, plural)} "{name}"' if name else _qualified(group, plural)
    return StatusError(403, "Forbidden", f"{prefix} is forbidden: {why}", _details(group, plural, name))


def bad_request(message: str) -> StatusError:
    return StatusError(400, "BadRequest", message)


def unauthorized() -> StatusError:
    return StatusError(401, "Unauthorized", "Unauthorized")


def method_not_allowed() -> StatusError:
    return StatusError(
        405, "MethodNotAllowed", "the server does not allow this method on the requested resource"
    )


def unsupported_media_type(accepted: list[str]) -> StatusError:
    return StatusError(
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: "
        + ", ".join(accepted),
    )


def expired(message: str) -> StatusError:
    return StatusError(410, "Expired", message)


def too_large_resource_version(wanted: int, current: int) -> StatusError:
    """A read at a resourceVersion the server has not reached (after kube's 3 s wait for it)."""
    return StatusError(
        504,
        "Timeout",
        f"Timeout: Too large resource version: {wanted}, current: {current}",
        {"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}]},
    )
