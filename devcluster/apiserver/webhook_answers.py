"""What a webhook's answer means: response verification, denial texts and JSONPatch application.

kube-apiserver (``k8s.io/apiserver/pkg/admission/plugin/webhook``) turns every answer into one of
three outcomes, and :class:`~devcluster.apiserver.admission.AdmissionChain` relies on these helpers
to do the same: the call failed (:class:`CallFailed`, apiserver's ``ErrCallingWebhook``: the
webhook's failurePolicy decides), the request is refused (:class:`AdmissionDenied`, a ``Status``
the API server answers with), or the (possibly patched) object goes on. Texts are kube's:
``received invalid webhook response: ...`` for a malformed review, ``admission webhook "<name>"
denied the request: <message>`` for a denial (the webhook's code, below 400 raised to 400).
"""

from __future__ import annotations

import base64
import json
from typing import Any, Final

import jsonpatch

from devcluster.apiserver.errors import status_body
from devcluster.apiserver.request.patching import JsonPatchNotApplied, apply_operations

__all__ = ["REVIEW_API_VERSION", "AdmissionDenied", "CallFailed", "apply_patch", "denial", "verify_response"]

REVIEW_API_VERSION: Final = "admission.k8s.io/v1"


class AdmissionDenied(Exception):
    """The request is refused; ``status`` is the metav1.Status body the API server answers with."""

    def __init__(
        self, *, code: int, message: str, reason: str, details: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason
        self.details = details

    @property
    def status(self) -> dict[str, Any]:
        return status_body(
            code=self.code, reason=self.reason, message=self.message, details=self.details or None
        )


class CallFailed(Exception):
    """A webhook could not be called or answered nonsense (apiserver's ``ErrCallingWebhook``)."""


def verify_response(answer: Any, *, uid: str, mutating: bool) -> dict[str, Any]:
    def invalid(why: str) -> CallFailed:
        return CallFailed(f"received invalid webhook response: {why}")

    if not isinstance(answer, dict):
        raise invalid("response is not an AdmissionReview object")
    if answer.get("apiVersion") != REVIEW_API_VERSION or answer.get("kind") != "AdmissionReview":
        got = f"{answer.get('apiVersion', '')}, Kind={answer.get('kind', '')}"
        raise invalid(f"expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {got}")
    result = answer.get("response")
    if not isinstance(result, dict):
        raise invalid("webhook response was absent")
    if result.get("uid") != uid:
        raise invalid(f'expected response.uid="{uid}", got "{result.get("uid", "")}"')
    patch, patch_type = result.get("patch"), result.get("patchType")
    if not mutating and (patch or patch_type):
        raise invalid("validating webhooks may not return patches")
    if patch and not patch_type:
        raise invalid("webhook returned response.patch but not response.patchType")
    if patch_type and not patch:
        raise invalid("webhook returned response.patchType but not response.patch")
    if patch_type and patch_type != "JSONPatch":
        raise invalid(f'webhook returned invalid response.patchType of "{patch_type}"')
    return result


def denial(hook_name: str, status: Any) -> AdmissionDenied:
    status = dict(status) if isinstance(status, dict) else {}
    denied_by = f'admission webhook "{hook_name}" denied the request'
    if status.get("message"):
        message = f"{denied_by}: {status['message']}"
    elif status.get("reason"):
        message = f"{denied_by}: {status['reason']}"
    else:
        message = f"{denied_by} without explanation"
    code = int(status.get("code") or 0)
    return AdmissionDenied(
        code=max(code, 400),
        message=message,
        reason=str(status.get("reason") or ""),
        details=status.get("details"),
    )


def apply_patch(hook_name: str, obj: dict[str, Any] | None, encoded_patch: str) -> dict[str, Any] | None:
    try:
        operations = json.loads(base64.b64decode(encoded_patch))
        patch = jsonpatch.JsonPatch(operations)
    except (ValueError, TypeError, jsonpatch.JsonPatchException) as exc:
        raise CallFailed(f"received undecodable patch in webhook response: {exc}") from exc
    if not operations:
        return obj
    if obj is None:
        raise AdmissionDenied(
            code=500,
            message=f'Internal error occurred: admission webhook "{hook_name}" attempted to modify the object,'
            " which is not supported for this operation",
            reason="InternalError",
        )
    try:
        patched = apply_operations(obj, patch)
    except JsonPatchNotApplied as exc:
        raise AdmissionDenied(
            code=500, message=f"Internal error occurred: {exc}", reason="InternalError"
        ) from exc
    if not isinstance(patched, dict):
        raise AdmissionDenied(
            code=500,
            message="Internal error occurred: patched object is not an object",
            reason="InternalError",
        )
    return patched
