"""What a correct answer to a fuzz case is, and its histogram bucket.

``answer_problem`` is the property ``tests/unit/webhook/test_admission_fuzz.py`` asserts and
``tests/fuzz/webhook_fuzz.py`` counts: HTTP 400 with a one-line reason, or HTTP 200 with an
AdmissionReview for the request's uid whose denial (if any) is a 400 naming the field, a 403 with
a message or Kueue's 404 NotFound for a missing owner or namespace - never a 5xx, in the HTTP status or in ``response.status.code`` (the code the rule
safety net answers when a rule raises) - and whose patch (if any) is a base64 JSON patch that
applies to the request object.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

import jsonpatch
import orjson

from tests.fuzz.admission_cases import Case

__all__ = ["answer_problem", "classify"]


def classify(*, status: int, payload: bytes) -> str:
    """The histogram bucket of one answer: ``400``, ``200 allowed``, ``200 patched``, ``200 denied 403``..."""
    if status != 200:
        return str(status)
    try:
        response = orjson.loads(payload)["response"]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return "200 unreadable"
    if response.get("allowed") is True:
        return "200 patched" if "patch" in response else "200 allowed"
    return f"200 denied {response.get('status', {}).get('code')}"


def _request_of(case: Case) -> dict[str, Any]:
    request: dict[str, Any] = orjson.loads(case.body)["request"]
    return request


def _patch_problem(response: dict[str, Any], request: dict[str, Any]) -> str | None:
    if response.get("patchType") != "JSONPatch":
        return f"patch without patchType JSONPatch: {response.get('patchType')!r}"
    try:
        ops = orjson.loads(base64.b64decode(response["patch"], validate=True))
        jsonpatch.apply_patch(request["object"], ops)
    except (
        binascii.Error,
        orjson.JSONDecodeError,
        jsonpatch.JsonPatchException,
        jsonpatch.JsonPointerException,
    ) as exc:
        return f"the patch does not apply to the request object: {exc}"
    return None


def answer_problem(case: Case, *, status: int, payload: bytes) -> str | None:
    """What is wrong with the webhook's answer to ``case`` (``None``: a correct 200 or 400)."""
    if status == 400:
        text = payload.decode("utf-8", errors="replace")
        if not text.endswith("\n") or text.count("\n") != 1 or len(text) < 2:
            return f"400 without a one-line reason: {text[:200]!r}"
        return None
    if status != 200:
        return f"HTTP {status}: {payload[:300]!r}"
    try:
        review = orjson.loads(payload)
        response = review["response"]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return f"200 that is not an AdmissionReview: {payload[:300]!r}"
    if (review.get("apiVersion"), review.get("kind")) != ("admission.k8s.io/v1", "AdmissionReview"):
        return f"answer has apiVersion/kind {review.get('apiVersion')!r}/{review.get('kind')!r}"
    request = _request_of(case)  # a 200 means the envelope was valid
    if response.get("uid") != request["uid"]:
        return f"answer uid {response.get('uid')!r} is not the request's {request['uid']!r}"
    if not isinstance(response.get("allowed"), bool):
        return f"allowed is {response.get('allowed')!r}"
    code = response.get("status", {}).get("code", 200)
    if code >= 500:
        return f"denied with code {code}: {response['status'].get('message')!r} (a rule raised)"
    if not response["allowed"]:
        message = response["status"].get("message")
        if code not in (400, 403, 404) or not isinstance(message, str) or not message:
            return f"a denial must be a 400, 403 or 404 with a message, got {code} {message!r}"
        if code == 404 and (response["status"].get("reason") != "NotFound" or "not found" not in message):
            return f"a 404 denial must be Kueue's cached-client NotFound, got {message!r}"
        # controller-runtime's decoder text for an UPDATE without oldObject, kept byte for byte
        if code == 400 and ": " not in message and message != "there is no content to decode":
            return f"a 400 denial must name the field: {message!r}"
    if "patch" in response:
        return _patch_problem(response, request)
    return None
