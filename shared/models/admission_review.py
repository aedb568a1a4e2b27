"""The ``admission.k8s.io/v1`` AdmissionReview envelope a webhook receives and answers.

Invariants:

* **Strict envelope, loose payload.** ``apiVersion`` must be ``admission.k8s.io/v1`` and ``kind``
  ``AdmissionReview`` (both default to those when building a review). A review that carries no
  ``response`` is a *request* from the API server and must have a ``request`` with ``uid``,
  ``kind{group, version, kind}`` and ``operation`` (one of CREATE, UPDATE, DELETE, CONNECT);
  anything else is a ``pydantic.ValidationError`` whose error locations name the field
  (``request``, ``request.uid``, ``apiVersion`` ...), which the webhook answers with HTTP 400.
  ``object``/``oldObject``/``options`` are raw dicts: they are the user's objects and are decoded by
  the framework adapter, never by this envelope.
* **Replies are built, not parsed.** ``AdmissionReview(response=AdmissionResponse.allow(uid))``
  needs no request; its ``to_wire()`` is ``{apiVersion, kind, response}``.
* ``patch`` is base64 of a JSON Patch (RFC 6902) document and ``patchType`` is then ``JSONPatch``,
  the only type admission/v1 defines; ``AdmissionResponse.allow(patch_operations=...)`` does both.
* Only v1 is spoken: ``admission.k8s.io/v1beta1`` reviews are rejected (the webhook configuration
  advertises ``admissionReviewVersions: [v1]``).
"""

from __future__ import annotations

import base64
import json
from typing import Any, Final, Literal, Self

from pydantic import Field, ModelWrapValidatorHandler, ValidationError, model_validator
from pydantic_core import InitErrorDetails

from shared.models.base import KubeModel

__all__ = [
    "ADMISSION_API_VERSION",
    "JSON_PATCH_TYPE",
    "AdmissionOperation",
    "AdmissionRequest",
    "AdmissionResponse",
    "AdmissionResponseStatus",
    "AdmissionReview",
    "RequestGroupVersionKind",
    "RequestGroupVersionResource",
    "UserInfo",
]

ADMISSION_API_VERSION: Final = "admission.k8s.io/v1"
JSON_PATCH_TYPE: Final = "JSONPatch"

AdmissionOperation = Literal["CREATE", "UPDATE", "DELETE", "CONNECT"]
"""``request.operation``; a review with any other value is rejected."""


class RequestGroupVersionKind(KubeModel):
    """``metav1.GroupVersionKind`` as the review spells it (``group`` is ``""`` for core)."""

    group: str = ""
    version: str
    kind: str


class RequestGroupVersionResource(KubeModel):
    group: str = ""
    version: str
    resource: str


class UserInfo(KubeModel):
    username: str | None = None
    uid: str | None = None
    groups: list[str] | None = None
    extra: dict[str, list[str]] | None = None


class AdmissionRequest(KubeModel):
    uid: str
    kind: RequestGroupVersionKind
    resource: RequestGroupVersionResource | None = None
    sub_resource: str | None = None
    request_kind: RequestGroupVersionKind | None = None
    request_resource: RequestGroupVersionResource | None = None
    request_sub_resource: str | None = None
    name: str | None = None
    namespace: str | None = None
    operation: AdmissionOperation
    user_info: UserInfo = Field(default_factory=UserInfo)
    object: dict[str, Any] | None = None
    old_object: dict[str, Any] | None = None
    dry_run: bool | None = None
    options: dict[str, Any] | None = None


class AdmissionResponseStatus(KubeModel):
    """The ``metav1.Status`` subset shown to the user when a request is denied."""

    code: int | None = None
    message: str | None = None
    reason: str | None = None


class AdmissionResponse(KubeModel):
    uid: str
    allowed: bool
    status: AdmissionResponseStatus | None = None
    patch: str | None = None
    patch_type: Literal["JSONPatch"] | None = None
    warnings: list[str] | None = None
    audit_annotations: dict[str, str] | None = None

    @classmethod
    def allow(
        cls,
        uid: str,
        *,
        patch_operations: list[dict[str, Any]] | None = None,
        warnings: list[str] | None = None,
    ) -> Self:
        """Allow the request; a non-empty ``patch_operations`` is sent as a base64 JSON Patch."""
        response = cls(uid=uid, allowed=True, warnings=warnings or None)
        if patch_operations:
            encoded = json.dumps(patch_operations, separators=(",", ":")).encode()
            response.patch = base64.b64encode(encoded).decode("ascii")
            response.patch_type = JSON_PATCH_TYPE
        return response

    @classmethod
    def deny(
        cls,
        uid: str,
        *,
        message: str,
        code: int = 403,
        reason: str | None = None,
        warnings: list[str] | None = None,
    ) -> Self:
        """Deny the request; ``message`` is what ``kubectl`` prints after ``denied the request:``."""
        status = AdmissionResponseStatus(code=code, message=message, reason=reason)
        return cls(uid=uid, allowed=False, status=status, warnings=warnings or None)

    def patch_operations(self) -> list[dict[str, Any]]:
        """The decoded JSON Patch (empty when there is none)."""
        if not self.patch:
            return []
        decoded: list[dict[str, Any]] = json.loads(base64.b64decode(self.patch))
        return decoded


class AdmissionReview(KubeModel):
    api_version: Literal["admission.k8s.io/v1"] = ADMISSION_API_VERSION
    kind: Literal["AdmissionReview"] = "AdmissionReview"
    request: AdmissionRequest | None = None
    response: AdmissionResponse | None = None

    @model_validator(mode="wrap")
    @classmethod
    def _a_review_without_response_has_a_request(
        cls, data: Any, handler: ModelWrapValidatorHandler[AdmissionReview]
    ) -> AdmissionReview:
        """A review without ``response`` came from the API server, so ``request`` is required.

        Reported as pydantic's own ``missing`` error at location ``request`` (a plain model
        validator would report it at the model's root, naming no field).
        """
        if isinstance(data, dict) and data.get("response") is None and data.get("request") is None:
            error = InitErrorDetails(type="missing", loc=("request",), input=data)
            raise ValidationError.from_exception_data(cls.__name__, [error])
        return handler(data)
