"""The admission path: bytes in, bytes out, for ``/mutate`` and ``/validate``.

This is the latency-critical code, so it stays framework-free: the body is parsed once with orjson,
the envelope is checked by hand (no model construction per request), the rules run on the raw dict
and the answer is serialised with orjson. The HTTP layer (``webhook.serving.asgi_app``) only moves bytes.

Outcomes, and why:

* **HTTP 400 + one-line reason** when the request cannot be answered as an AdmissionReview: body too
  large, not JSON, wrong ``apiVersion``/``kind``, no ``request``/``uid``/``kind``/``operation`` or one
  of the wrong JSON type (an ``operation`` list is a 400 naming ``request.operation``, never a
  ``TypeError``), or no ``object`` for a CREATE/UPDATE. The API server then applies
  ``failurePolicy: Fail`` - the request is rejected, never admitted by accident.
* **A denial** (HTTP 200, ``allowed: false``) once the envelope is valid, shaped as
  controller-runtime shapes Kueue's (``admission.Errored`` sets only code and message,
  ``admission.Denied`` adds reason ``Forbidden``, an API StatusError is passed through whole):

  - code 400, no reason (``Errored(400)``, what a failed decode gets) naming the field when the
    object is malformed (``metadata.labels`` not a map of strings, ``spec.suspend`` not a boolean,
    ...: ``webhook.rules.objectshape`` for metadata, ``AdapterError`` for spec fields - what a typed
    decoding would refuse); the text is ours, Kueue's would be a Go JSON decoder error. An UPDATE without
    ``oldObject`` gets the decoder's own ``there is no content to decode``;
  - code 403 reason ``Forbidden`` with the aggregated field errors for a validation failure, or with
    a plain defaulting error (``cyclic ownership``);
  - the cached client's NotFound Status (code 404 reason ``NotFound``, ``details``) when defaulting
    looked up an owner or the namespace that is not there (``webhook.rules.defaulting``);
  - code 500 if a rule itself raises unexpectedly (``Errored(500)`` after a recovered panic) -
    logged at ERROR with the traceback, fail closed, never a crash. That one is a bug by
    definition: the fuzz test and ``tests/fuzz/webhook_fuzz.py`` count it as a failure, so it is a
    safety net, not a way to answer.
* **Allowed unchanged** for a kind we are not configured for (counted as ``framework="unknown"``,
  ``result="skipped"``) and for DELETE/CONNECT (controller-runtime skips those for custom webhooks).
* **Allowed with a JSON patch** when defaulting changed something; no ``patch`` at all otherwise.

AppWrappers also get the AppWrapper operator's own rules (``webhook.rules.appwrapper``); on create
that includes one SubjectAccessReview per wrapped component for ``request.userInfo``
(``webhook.rules.access_review``), the only admission rule that waits for the API server. A
mutation of a job with a controller owner of a known kind may wait once for that kind's owner cache
to fill (``Lookups.wait_owner_cache``; filled on demand, as controller-runtime's cache does): after
``OWNER_CACHE_TIMEOUT`` it is denied (403 ``Forbidden``, ``failed waiting for the <kind> cache to
sync``), as Kueue's defaulter denies a cached ``Get`` that failed.

Response shapes follow controller-runtime: a mutation without changes is ``{"allowed": true}``; an
allowed validation carries ``status.code: 200``.
"""

from __future__ import annotations

import base64
import functools
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from shared.frameworks.base import AdapterError, FieldError, GenericJob
from shared.frameworks.capabilities import has_managed_by
from webhook.rules.access_review import AccessReviewer, review_components
from webhook.rules.appwrapper import (
    stamp_user_labels,
    validate_appwrapper_create,
    validate_appwrapper_update,
    wrapped_kinds,
)
from webhook.rules.defaulting import DefaultingError, default_job
from webhook.rules.fielderrors import format_field_error, to_aggregate
from webhook.rules.lookups import Lookups, OwnerCacheNotReady
from webhook.rules.objectshape import check_object_shape
from webhook.rules.settings import Framework, WebhookSettings
from webhook.rules.validation import validate_create, validate_update
from webhook.serving.metrics import WebhookMetrics

__all__ = ["DEFAULT_MAX_BODY_BYTES", "AdmissionHandler", "BadRequest", "ReviewRequest", "parse_review"]

log = logging.getLogger(__name__)

#: controller-runtime's limit (old + new object of a 3 MiB etcd object, plus the envelope)
DEFAULT_MAX_BODY_BYTES: Final = 7 * 1024 * 1024
ADMISSION_API_VERSION: Final = "admission.k8s.io/v1"
_WRITE_OPERATIONS = frozenset({"CREATE", "UPDATE"})
_OPERATIONS = frozenset({"CREATE", "UPDATE", "DELETE", "CONNECT"})
#: all SubjectAccessReviews of one admission (the API server waits at most ``timeoutSeconds``, <= 10)
ACCESS_REVIEW_TIMEOUT: Final = 5.0
#: all owner caches one mutation waits for while they fill on demand (``Lookups.wait_owner_cache``)
OWNER_CACHE_TIMEOUT: Final = 5.0
_SHOWN_LIMIT: Final = 100


class BadRequest(Exception):
    """The body is not an AdmissionReview we can answer; ``str()`` is the one-line reason."""


@dataclass(slots=True)
class ReviewRequest:
    """The envelope fields of one AdmissionReview; never changed after ``parse_review`` (not frozen:
    a frozen dataclass's ``__init__`` assigns through ``object.__setattr__``, 1.5 us per admission)."""

    uid: str
    group: str
    version: str
    kind: str
    operation: str
    object: dict[str, Any] | None
    old_object: dict[str, Any] | None
    #: ``request.namespace`` and ``request.userInfo`` (empty when absent)
    namespace: str = ""
    user_info: dict[str, Any] = field(default_factory=dict)


def _string(value: Any, path: str, *, allow_empty: bool = False) -> str:
    if not isinstance(value, str) or (not value and not allow_empty):
        raise BadRequest(
            f"{path}: must be a non-empty string" if not allow_empty else f"{path}: must be a string"
        )
    return value


def _shown(value: Any) -> str:
    """``value`` as JSON, cut to a readable length (a reason is one short line, whatever was sent)."""
    text = orjson.dumps(value).decode()
    return text if len(text) <= _SHOWN_LIMIT else text[:_SHOWN_LIMIT] + "..."


def parse_review(body: bytes, *, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES) -> ReviewRequest:
    """Check the envelope; raise ``BadRequest`` with a one-line reason."""
    if len(body) > max_body_bytes:
        raise BadRequest(f"request body is {len(body)} bytes, larger than the {max_body_bytes}-byte limit")
    if not body:
        raise BadRequest("request body is empty")
    try:
        review = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise BadRequest(f"request body is not valid JSON: {str(exc).splitlines()[0]}") from None
    if not isinstance(review, dict):
        raise BadRequest("request body must be a JSON object (an AdmissionReview)")
    if review.get("apiVersion") != ADMISSION_API_VERSION or review.get("kind") != "AdmissionReview":
        raise BadRequest(
            f'expected apiVersion "{ADMISSION_API_VERSION}" and kind "AdmissionReview", '
            f"got {_shown(review.get('apiVersion'))} and {_shown(review.get('kind'))}"
        )
    request = review.get("request")
    if not isinstance(request, dict):
        raise BadRequest("request: must be an object")
    uid: Any = request.get("uid")
    kind = request.get("kind")
    if type(uid) is not str or not uid:  # each test inline, ``_string`` names the field (hot path)
        _string(uid, "request.uid")
    if not isinstance(kind, dict):
        raise BadRequest("request.kind: must be an object with group, version and kind")
    group: Any = kind.get("group", "")
    version: Any = kind.get("version")
    kind_name: Any = kind.get("kind")
    if type(group) is not str:
        _string(group, "request.kind.group", allow_empty=True)
    if type(version) is not str or not version:
        _string(version, "request.kind.version")
    if type(kind_name) is not str or not kind_name:
        _string(kind_name, "request.kind.kind")
    operation = request.get("operation")
    # a list or an object is not hashable: test the type before membership
    if not isinstance(operation, str) or operation not in _OPERATIONS:
        raise BadRequest(
            f"request.operation: must be one of CREATE, UPDATE, DELETE, CONNECT, got {_shown(operation)}"
        )
    obj, old = request.get("object"), request.get("oldObject")
    if operation in _WRITE_OPERATIONS and not isinstance(obj, dict):
        raise BadRequest("request.object: must be an object for CREATE and UPDATE")
    if old is not None and not isinstance(old, dict):
        raise BadRequest("request.oldObject: must be an object or null")
    namespace = request.get("namespace")
    user_info = request.get("userInfo")
    return ReviewRequest(
        uid,
        group,
        version,
        kind_name,
        operation,
        obj,
        old,
        namespace=namespace if isinstance(namespace, str) else "",
        user_info=user_info if isinstance(user_info, dict) else {},
    )


def _review(uid: str, response: dict[str, Any]) -> bytes:
    response["uid"] = uid
    return orjson.dumps(
        {"apiVersion": ADMISSION_API_VERSION, "kind": "AdmissionReview", "response": response}
    )


def _allowed(uid: str, *, with_status: bool) -> bytes:
    return _review(uid, {"allowed": True, "status": {"code": 200}} if with_status else {"allowed": True})


def _denied(uid: str, *, code: int, message: str, reason: str | None = None) -> bytes:
    status: dict[str, Any] = {"code": code, "message": message}
    if reason:
        status["reason"] = reason
    return _review(uid, {"allowed": False, "status": status})


def _patched(uid: str, ops: list[dict[str, Any]]) -> bytes:
    patch = base64.b64encode(orjson.dumps(ops)).decode("ascii")
    return _review(uid, {"allowed": True, "patchType": "JSONPatch", "patch": patch})


def _decoded(job: GenericJob) -> GenericJob:
    """Read the fields every rule depends on, so a wrong type fails here with ``AdapterError`` naming it.

    Kueue decodes the whole object into a Go struct first and answers 400 when that fails; the
    adapters read lazily, so without this a validation that happens not to read ``spec.suspend``
    would admit ``suspend: "yes"``.
    """
    job.is_suspended()
    if has_managed_by(job):
        job.managed_by()
    return job


class _Answer:
    """An answer decided before any rule ran (bad envelope, kind not ours, operation not checked)."""

    __slots__ = ("payload", "status")

    def __init__(self, status: int, payload: bytes) -> None:
        self.status = status
        self.payload = payload


Rule = Callable[[ReviewRequest, Framework], tuple[str, bytes]]


@dataclass(kw_only=True, eq=False)
class AdmissionHandler:
    """Answers AdmissionReviews for every configured framework; safe to share between requests.

    ``mutate``/``validate`` are synchronous: every rule is a cache read. ``validate_async`` is what
    the server calls for ``/validate``: for a framework with AppWrapper's rules it first asks the
    API server (``access``) whether the user may create each wrapped component, then runs the same
    synchronous rules with those answers; for every other framework it is ``validate``.
    """

    settings: WebhookSettings
    lookups: Lookups
    metrics: WebhookMetrics
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    timer: Callable[[], float] = time.perf_counter
    access: AccessReviewer | None = None
    access_timeout: float = ACCESS_REVIEW_TIMEOUT
    owner_cache_timeout: float = OWNER_CACHE_TIMEOUT

    def mutate(self, body: bytes) -> tuple[int, bytes]:
        """(HTTP status, response body) for ``/mutate`` without waiting: an owner cache that has not
        synced yet is a denial here (``mutate_async`` waits for it)."""
        started = self.timer()
        routed = self._route("mutate", body, started)
        if isinstance(routed, _Answer):
            return routed.status, routed.payload
        request, framework = routed
        try:
            return self._apply("mutate", request, framework, self._mutate, started)
        except OwnerCacheNotReady as exc:
            return self._owner_cache_denial(request, framework, exc, started)

    def mutate_now(self, body: bytes) -> tuple[int, bytes] | None:
        """``mutate_async``'s answer when no owner cache has to be waited for; ``None``: call
        ``mutate_async`` (nothing observed yet). For ``webhook.serving.fastpath``."""
        started = self.timer()
        routed = self._route("mutate", body, started)
        if isinstance(routed, _Answer):
            return routed.status, routed.payload
        try:
            return self._apply("mutate", routed[0], routed[1], self._mutate, started)
        except OwnerCacheNotReady:
            return None  # the lookup has started filling the cache; mutate_async waits for it

    async def mutate_async(self, body: bytes) -> tuple[int, bytes]:
        """(HTTP status, response body) for ``/mutate``, waiting for owner caches that fill on demand.

        The rules are synchronous functions of the request and the caches, so after a wait they are
        simply run again; a chain of owners may need one wait per kind, all within
        ``owner_cache_timeout``.
        """
        started = self.timer()
        routed = self._route("mutate", body, started)
        if isinstance(routed, _Answer):
            return routed.status, routed.payload
        request, framework = routed
        deadline = started + self.owner_cache_timeout
        while True:
            try:
                return self._apply("mutate", request, framework, self._mutate, started)
            except OwnerCacheNotReady as exc:
                left = deadline - self.timer()
                synced = left > 0 and await self.lookups.wait_owner_cache(
                    api_version=exc.api_version, kind=exc.kind, timeout_seconds=left
                )
                if not synced:
                    return self._owner_cache_denial(request, framework, exc, started)

    def _owner_cache_denial(
        self, request: ReviewRequest, framework: Framework, exc: OwnerCacheNotReady, started: float
    ) -> tuple[int, bytes]:
        """A cached ``Get`` that gave up waiting for its informer: the defaulter's error, denied."""
        self._observe("mutate", framework.name, request.operation, "denied", started)
        message = f"failed waiting for the {exc.api_version}, Kind={exc.kind} cache to sync"
        return 200, _denied(request.uid, code=403, reason="Forbidden", message=message)

    def validate(self, body: bytes) -> tuple[int, bytes]:
        """(HTTP status, response body) for ``/validate`` (no SubjectAccessReviews)."""
        return self._handle("validate", body, self._validate)

    def validate_now(self, body: bytes) -> tuple[int, bytes] | None:
        """``validate_async``'s answer when it needs no API call (every admission but the validation
        of an AppWrapper create, which asks for access reviews first); ``None``: call
        ``validate_async``. For a server answering in its protocol callbacks (``webhook.serving.fastpath``)."""
        started = self.timer()
        routed = self._route("validate", body, started)
        if isinstance(routed, _Answer):
            return routed.status, routed.payload
        request, framework = routed
        if self._needs_access_review(request, framework):
            return None  # nothing observed yet: validate_async routes it again and counts it once
        return self._apply("validate", request, framework, self._validate, started)

    def _needs_access_review(self, request: ReviewRequest, framework: Framework) -> bool:
        return framework.appwrapper_rules and request.operation == "CREATE" and self.access is not None

    async def validate_async(self, body: bytes) -> tuple[int, bytes]:
        """(HTTP status, response body) for ``/validate``, with AppWrapper's access reviews."""
        started = self.timer()
        routed = self._route("validate", body, started)
        if isinstance(routed, _Answer):
            return routed.status, routed.payload
        request, framework = routed
        if not self._needs_access_review(request, framework):
            return self._apply("validate", request, framework, self._validate, started)
        assert self.access is not None
        assert request.object is not None
        metadata = request.object.get("metadata")
        namespace = request.namespace or (
            str(metadata.get("namespace") or "") if isinstance(metadata, dict) else ""
        )
        denials = await review_components(
            self.access,
            wrapped=wrapped_kinds(request.object),
            user_info=request.user_info,
            namespace=namespace,
            timeout=self.access_timeout,
        )
        return self._apply(
            "validate", request, framework, functools.partial(self._validate, access=denials), started
        )

    def _handle(self, webhook: str, body: bytes, rule: Rule) -> tuple[int, bytes]:
        started = self.timer()
        routed = self._route(webhook, body, started)
        if isinstance(routed, _Answer):
            return routed.status, routed.payload
        return self._apply(webhook, routed[0], routed[1], rule, started)

    def _route(self, webhook: str, body: bytes, started: float) -> _Answer | tuple[ReviewRequest, Framework]:
        try:
            request = parse_review(body, max_body_bytes=self.max_body_bytes)
        except BadRequest as exc:
            self._observe(webhook, "none", "", "bad_request", started)
            return _Answer(400, (str(exc) + "\n").encode())
        operation = request.operation
        framework = self.settings.framework_for(
            group=request.group, version=request.version, kind=request.kind
        )
        if framework is None:
            self._observe(webhook, "unknown", operation, "skipped", started)
            return _Answer(200, _allowed(request.uid, with_status=webhook == "validate"))
        if operation not in _WRITE_OPERATIONS or (webhook == "mutate" and operation != "CREATE"):
            self._observe(webhook, framework.name, operation, "allowed", started)
            return _Answer(200, _allowed(request.uid, with_status=webhook == "validate"))
        return request, framework

    def _apply(
        self, webhook: str, request: ReviewRequest, framework: Framework, rule: Rule, started: float
    ) -> tuple[int, bytes]:
        try:
            result, answer = rule(request, framework)
        except OwnerCacheNotReady:
            raise  # not an answer: the caller waits for the cache (or denies) and observes once
        except AdapterError as exc:
            result, answer = "invalid", _denied(request.uid, code=400, message=str(exc))
        except Exception:  # a bug in a rule must deny (fail closed), never crash the server
            log.exception("admission rule failed for %s %s", framework.name, request.operation)
            result, answer = (
                "denied",
                _denied(request.uid, code=500, message="internal error evaluating admission rules"),
            )
        self._observe(webhook, framework.name, request.operation, result, started)
        return 200, answer

    def _observe(self, webhook: str, framework: str, operation: str, result: str, started: float) -> None:
        self.metrics.observe(
            webhook=webhook,
            framework=framework,
            operation=operation,
            result=result,
            seconds=self.timer() - started,
        )

    def _shape_error(self, request: ReviewRequest) -> bytes | None:
        assert request.object is not None
        error = check_object_shape(request.object)
        if error is None and request.old_object is not None:
            error = check_object_shape(request.old_object, prefix="oldObject.")
        if error is None:
            return None
        return _denied(request.uid, code=400, message=format_field_error(error))

    def _mutate(self, request: ReviewRequest, framework: Framework) -> tuple[str, bytes]:
        invalid = self._shape_error(request)
        if invalid is not None:
            return "invalid", invalid
        assert request.object is not None
        try:
            ops = default_job(
                request.object,
                framework=framework,
                settings=self.settings,
                lookups=self.lookups,
                finish=(
                    functools.partial(stamp_user_labels, user_info=request.user_info)
                    if framework.appwrapper_rules
                    else None
                ),
            )
        except DefaultingError as exc:
            if exc.status is not None:  # validationResponseFromStatus: the wrapped StatusError's Status
                return "denied", _review(request.uid, {"allowed": False, "status": dict(exc.status)})
            return "denied", _denied(request.uid, code=403, reason="Forbidden", message=str(exc))
        if not ops:
            return "allowed", _allowed(request.uid, with_status=False)
        return "patched", _patched(request.uid, ops)

    def _validate(
        self, request: ReviewRequest, framework: Framework, *, access: Mapping[int, FieldError] | None = None
    ) -> tuple[str, bytes]:
        if request.operation == "UPDATE" and request.old_object is None:
            # controller-runtime's decoder on an empty oldObject, answered with Errored(400, err)
            return "invalid", _denied(request.uid, code=400, message="there is no content to decode")
        invalid = self._shape_error(request)
        if invalid is not None:
            return "invalid", invalid
        assert request.object is not None
        new_job = _decoded(framework.adapter(request.object))
        if request.operation == "CREATE":
            errors = validate_create(new_job, framework=framework)
        else:
            assert request.old_object is not None
            old_job = _decoded(framework.adapter(request.old_object))
            errors = validate_update(old_job, new_job, framework=framework, lookups=self.lookups)
        if framework.appwrapper_rules:
            if request.operation == "CREATE":
                errors += validate_appwrapper_create(request.object, access=access)
            else:
                assert request.old_object is not None
                errors += validate_appwrapper_update(request.old_object, request.object)
        message = to_aggregate(errors)
        if message is None:
            return "allowed", _allowed(request.uid, with_status=True)
        return "denied", _denied(request.uid, code=403, reason="Forbidden", message=message)
