"""Dynamic admission webhooks, called exactly the way kube-apiserver calls them.

kueue-bridge's webhook process is only trustworthy if it is exercised by a caller that behaves like
the real API server: same AdmissionReview shape, same ordering, same failure semantics and the same
error texts users will later see from ``kubectl``. :class:`AdmissionChain` is that caller for the
devcluster. It reads the current Mutating/ValidatingWebhookConfigurations through callables (so a
configuration change applies to the next request, as in the real server) and is otherwise stateless
apart from one pooled ``httpx.AsyncClient`` per CA bundle.

Behaviour reproduced from ``k8s.io/apiserver/pkg/admission/plugin/webhook``:

* Mutating webhooks first, configurations sorted by name, webhooks in listed order; each call sees
  the object as patched by the previous ones. A webhook with ``reinvocationPolicy: IfNeeded`` is
  called once more (at most once) when a webhook after it changed the object. Validating webhooks
  then see the final object; all of them run (concurrently), the first denial in order wins.
* Matching: ``rules`` (operations, apiGroups, apiVersions, resources with ``*``, ``*/*``,
  ``res/sub``, ``*/sub``, ``res/*``; scope), ``namespaceSelector`` (never excludes cluster-scoped
  objects other than Namespaces; a Namespace is matched by its own labels), ``objectSelector``
  (labels of the object *or* the old object). ``matchPolicy: Equivalent`` is satisfied by exact
  matching because the devcluster serves a single version per resource.
* ``matchConditions`` (CEL, :mod:`.match_conditions`) are judged after rules and selectors matched,
  against the object as the previous mutating webhooks left it (so reinvocation re-judges them):
  any ``false`` skips the webhook; otherwise an evaluation error refuses the request with 403
  ``<resource> "<name>" is forbidden: expression '<expr>' resulted in error: <cause>`` under
  ``failurePolicy: Fail`` and skips the webhook under ``Ignore``.
  ``authorizer`` is bound when the chain is given ``authorize`` (the devcluster's
  SubjectAccessReview answers, :mod:`.cel_authorizer`).
* Each call gets a fresh request uid; the URL carries ``?timeout=<n>s`` like the real client;
  ``timeoutSeconds`` defaults to 10, ``failurePolicy`` to Fail.
* Failing closed: ``Internal error occurred: failed calling webhook "<name>": failed to call webhook:
  Post "<url>?timeout=10s": <cause>`` (500, InternalError). Failing open skips the webhook.
* Denial: ``admission webhook "<name>" denied the request: <message>`` (or ``: <reason>`` or
  `` without explanation``), with the webhook's status code (below 400 becomes 400) and reason.
* Response verification: apiVersion/kind, uid, patch/patchType pairing, JSONPatch only, no patches
  from validating webhooks; violations fail the call ("received invalid webhook response: ...").
  Answers are interpreted by :mod:`.webhook_answers`.
* Exempt: webhook configurations and admission policies (and their bindings) themselves never reach a
  webhook, so a broken one can always be removed (conformance: ``test_webhook_call_failures.py``).
* Dry run: a matching webhook whose ``sideEffects`` is not None/NoneOnDryRun denies with 400
  ``admission webhook "<name>" does not support dry run``.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import ssl
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import httpx

from devcluster.apiserver.cel_authorizer import Authorize, authorizer_binder
from devcluster.apiserver.errors import forbidden
from devcluster.apiserver.match_conditions import evaluate_match_conditions
from devcluster.apiserver.webhook_answers import (
    REVIEW_API_VERSION,
    AdmissionDenied,
    CallFailed,
    apply_patch,
    denial,
    verify_response,
)

__all__ = ["AdmissionChain", "AdmissionDenied", "TransportFactory"]

TransportFactory = Callable[[bytes], httpx.AsyncBaseTransport]
"""Builds the HTTP transport for one CA bundle (PEM bytes, empty for the system roots)."""

_OPTIONS_KIND: Final = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}
_SIDE_EFFECT_FREE: Final = frozenset({"None", "NoneOnDryRun"})
_ADMISSION_GROUP: Final = "admissionregistration.k8s.io"
#: the kinds of :data:`_ADMISSION_GROUP` whose objects webhooks never see
_EXEMPT_KINDS: Final = frozenset(
    {
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "MutatingAdmissionPolicy",
        "MutatingAdmissionPolicyBinding",
    }
)


@dataclass(frozen=True, slots=True)
class _Hook:
    config_name: str
    index: int
    spec: Mapping[str, Any]

    @property
    def name(self) -> str:
        return str(self.spec.get("name", ""))

    @property
    def key(self) -> tuple[str, int]:
        return (self.config_name, self.index)


def _selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """metav1.LabelSelector semantics; a nil or empty selector matches everything."""
    if not selector:
        return True
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or []:
        key, operator = expression.get("key", ""), expression.get("operator", "")
        values = expression.get("values") or []
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
    return True


def _rule_matches(
    rule: Mapping[str, Any],
    *,
    operation: str,
    gvr: tuple[str, str, str],
    subresource: str,
    namespace: str | None,
) -> bool:
    operations = rule.get("operations") or []
    if "*" not in operations and operation not in operations:
        return False
    groups = rule.get("apiGroups") or []
    if "*" not in groups and gvr[0] not in groups:
        return False
    versions = rule.get("apiVersions") or []
    if "*" not in versions and gvr[1] not in versions:
        return False
    scope = rule.get("scope") or "*"
    cluster_scoped = not namespace or gvr[2] == "namespaces"
    if (scope == "Cluster" and not cluster_scoped) or (scope == "Namespaced" and cluster_scoped):
        return False
    for resource in rule.get("resources") or []:
        if resource == "*/*":
            return True
        name, _, sub = resource.partition("/")
        if name not in ("*", gvr[2]):
            continue
        if (not sub and not subresource) or (sub and sub in ("*", subresource)):
            return True
    return False


def _labels(obj: Mapping[str, Any] | None) -> dict[str, str]:
    if not obj:
        return {}
    return dict((obj.get("metadata") or {}).get("labels") or {})


def _describe_transport_error(exc: httpx.HTTPError, host_port: str) -> str:
    if isinstance(exc, httpx.TimeoutException):
        return "context deadline exceeded"
    text = str(exc)
    if "CERTIFICATE_VERIFY_FAILED" in text:
        return "tls: failed to verify certificate: x509: certificate signed by unknown authority"
    if isinstance(exc, httpx.ConnectError):
        return f"dial tcp {host_port}: connect: connection refused"
    return text or type(exc).__name__


def _default_transport(ca_pem: bytes) -> httpx.AsyncBaseTransport:
    context = ssl.create_default_context()
    if ca_pem:
        context = ssl.create_default_context(cadata=ca_pem.decode())
    # kube-apiserver's webhook clients come from client-go's transport cache: no limit on
    # connections per host and up to 25 kept idle (``idleConnsPerHost``), so a busy webhook is
    # called over kept-alive connections. Keeping only 2 made the devcluster open (and the webhook
    # accept) a new TLS connection for most admissions under concurrent creates.
    return httpx.AsyncHTTPTransport(
        verify=context, limits=httpx.Limits(max_connections=25, max_keepalive_connections=25)
    )


class AdmissionChain:
    """Runs the mutating then validating webhooks that match one API request."""

    def __init__(
        self,
        *,
        list_mutating: Callable[[], list[dict[str, Any]]],
        list_validating: Callable[[], list[dict[str, Any]]],
        namespace_labels: Callable[[str], dict[str, str] | None],
        service_resolver: Mapping[str, str],
        transport_factory: TransportFactory | None = None,
        uid_factory: Callable[[], str] | None = None,
        authorize: Authorize | None = None,
    ) -> None:
        self._list_mutating = list_mutating
        self._list_validating = list_validating
        self._namespace_labels = namespace_labels
        self._service_resolver = service_resolver
        self._transport_factory = transport_factory or _default_transport
        self._uid_factory = uid_factory or (lambda: str(uuid.uuid4()))
        self._clients: dict[bytes, httpx.AsyncClient] = {}
        #: SubjectAccessReview answers for the ``authorizer`` of matchConditions (None: not bound)
        self._authorize = authorize

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.aclose()

    async def admit(
        self,
        *,
        operation: str,
        gvk: tuple[str, str, str],
        gvr: tuple[str, str, str],
        subresource: str,
        namespace: str | None,
        name: str,
        obj: dict[str, Any] | None,
        old_obj: dict[str, Any] | None,
        user_info: dict[str, Any],
        dry_run: bool,
        options: dict[str, Any] | None = None,
    ) -> dict[str, Any] | None:
        """The object after mutation; raises :class:`AdmissionDenied` when any webhook refuses.
        kube-apiserver's own admission configuration kinds never reach a webhook (kube's
        ``IsExemptAdmissionConfigurationResource``: a broken webhook could otherwise not be removed)."""
        if gvk[0] == _ADMISSION_GROUP and gvk[2] in _EXEMPT_KINDS:
            return obj
        request = _RequestAttributes(
            operation=operation,
            gvk=gvk,
            gvr=gvr,
            subresource=subresource,
            namespace=namespace or "",
            name=name,
            old_obj=old_obj,
            user_info=user_info,
            dry_run=dry_run,
            options=options,
        )
        mutating = self._hooks(self._list_mutating())
        obj = await self._run_mutating(mutating, request, obj)
        validating = [
            hook for hook in self._hooks(self._list_validating()) if self._matches(hook, request, obj)
        ]
        results = await asyncio.gather(
            *(self._call(hook, request, obj, mutating=False) for hook in validating), return_exceptions=True
        )
        for hook, result in zip(validating, results, strict=True):
            if isinstance(result, BaseException):
                self._raise_for(hook, result)
        return obj

    # --- internals ---------------------------------------------------------------------------------
    @staticmethod
    def _hooks(configurations: list[dict[str, Any]]) -> list[_Hook]:
        ordered = sorted(configurations, key=lambda config: (config.get("metadata") or {}).get("name", ""))
        return [
            _Hook(config_name=(config.get("metadata") or {}).get("name", ""), index=index, spec=spec)
            for config in ordered
            for index, spec in enumerate(config.get("webhooks") or [])
        ]

    def _matches(self, hook: _Hook, request: _RequestAttributes, obj: dict[str, Any] | None) -> bool:
        spec = hook.spec
        if not any(
            _rule_matches(
                rule,
                operation=request.operation,
                gvr=request.gvr,
                subresource=request.subresource,
                namespace=request.namespace,
            )
            for rule in spec.get("rules") or []
        ):
            return False
        namespace_selector = spec.get("namespaceSelector")
        if request.gvr == ("", "v1", "namespaces"):
            if not _selector_matches(namespace_selector, _labels(obj) or _labels(request.old_obj)):
                return False
        elif request.namespace and namespace_selector:
            labels = self._namespace_labels(request.namespace) or {}
            if not _selector_matches(namespace_selector, labels):
                return False
        object_selector = spec.get("objectSelector")
        if object_selector and not (
            _selector_matches(object_selector, _labels(obj))
            or _selector_matches(object_selector, _labels(request.old_obj))
        ):
            return False
        conditions = spec.get("matchConditions")
        if not conditions:
            return True
        outcome = evaluate_match_conditions(
            conditions,
            variables={
                "object": obj,
                "oldObject": request.old_obj,
                "request": request.cel_request(),
                "namespaceObject": None,  # declared for webhooks, never set (kube passes no namespace)
            },
            fail_closed=spec.get("failurePolicy", "Fail") != "Ignore",
            bind=authorizer_binder(
                user=request.user_info,
                request_resource={
                    "group": request.gvr[0],
                    "resource": request.gvr[2],
                    "subresource": request.subresource,
                    "namespace": request.namespace,
                    "name": request.name,
                },
                authorize=self._authorize,
            ),
        )
        if outcome.error is not None:
            refused = forbidden(
                group=request.gvr[0], plural=request.gvr[2], name=request.name, why=outcome.error
            )
            raise AdmissionDenied(
                code=refused.code, message=refused.message, reason=refused.reason, details=refused.details
            )
        return outcome.matches

    async def _run_mutating(
        self, hooks: list[_Hook], request: _RequestAttributes, obj: dict[str, Any] | None
    ) -> dict[str, Any] | None:
        previously_invoked: set[tuple[str, int]] = set()
        to_reinvoke: set[tuple[str, int]] = set()
        for reinvocation in (False, True):
            if reinvocation and not to_reinvoke:
                break
            for hook in hooks:
                if reinvocation and hook.key not in to_reinvoke:
                    continue
                if not self._matches(hook, request, obj):
                    continue
                try:
                    patched = await self._call(hook, request, obj, mutating=True)
                except (CallFailed, AdmissionDenied) as exc:
                    self._raise_for(hook, exc)  # returns only when failurePolicy is Ignore
                    patched = None
                if patched is not None and patched != obj:
                    obj = patched
                    to_reinvoke |= previously_invoked
                    previously_invoked = set()
                if hook.spec.get("reinvocationPolicy") == "IfNeeded" and not reinvocation:
                    previously_invoked.add(hook.key)
            if reinvocation:
                break
        return obj

    @staticmethod
    def _raise_for(hook: _Hook, exc: BaseException) -> None:
        """Turn a failed call into the server's answer; returns when failurePolicy says to ignore it."""
        if isinstance(exc, AdmissionDenied):
            raise exc
        if isinstance(exc, CallFailed):
            if hook.spec.get("failurePolicy", "Fail") == "Ignore":
                return
            cause = f'failed calling webhook "{hook.name}": {exc}'
            raise AdmissionDenied(
                code=500,
                message=f"Internal error occurred: {cause}",
                reason="InternalError",
                details={"causes": [{"message": cause}]},
            )
        raise exc

    def _endpoint(self, hook: _Hook, timeout: int) -> tuple[str, str, str | None]:
        """(URL to dial, URL as the real server would print it, TLS server name override)."""
        client_config = hook.spec.get("clientConfig") or {}
        query = f"?timeout={timeout}s"
        if client_config.get("url"):
            url = str(client_config["url"])
            return url + query, url + query, None
        service = client_config.get("service") or {}
        namespace, name = service.get("namespace", ""), service.get("name", "")
        port = int(service.get("port", 443))
        path = service.get("path") or ""
        server_name = f"{name}.{namespace}.svc"
        shown = f"https://{server_name}:{port}{path}{query}"
        target = self._service_resolver.get(f"{namespace}/{name}:{port}") or self._service_resolver.get(
            f"{namespace}/{name}"
        )
        if target is None:
            raise CallFailed(f'failed to call webhook: Post "{shown}": service "{name}" not found')
        return f"https://{target}{path}{query}", shown, server_name

    def _client(self, ca_bundle: str) -> httpx.AsyncClient:
        try:
            ca_pem = base64.b64decode(ca_bundle) if ca_bundle else b""
        except (binascii.Error, ValueError) as exc:
            raise CallFailed(f"could not get REST client: invalid caBundle: {exc}") from exc
        client = self._clients.get(ca_pem)
        if client is None:
            try:
                transport = self._transport_factory(ca_pem)
            except (ssl.SSLError, ValueError) as exc:  # not PEM certificates: client-go's rootCertPool
                raise CallFailed(
                    "could not get REST client: unable to load root certificates: unable to parse bytes as PEM block"
                ) from exc
            client = httpx.AsyncClient(transport=transport)
            self._clients[ca_pem] = client
        return client

    async def _call(
        self, hook: _Hook, request: _RequestAttributes, obj: dict[str, Any] | None, *, mutating: bool
    ) -> dict[str, Any] | None:
        """Call one webhook; returns the patched object (mutating) or None, raises on denial/failure."""
        spec = hook.spec
        if request.dry_run and spec.get("sideEffects") not in _SIDE_EFFECT_FREE:
            raise AdmissionDenied(
                code=400,
                message=f'admission webhook "{hook.name}" does not support dry run',
                reason="BadRequest",
            )
        if "v1" not in (spec.get("admissionReviewVersions") or ["v1"]):
            raise CallFailed("webhook does not accept known AdmissionReview versions")
        timeout = int(spec.get("timeoutSeconds") or 10)
        url, shown_url, server_name = self._endpoint(hook, timeout)
        client = self._client(str((spec.get("clientConfig") or {}).get("caBundle") or ""))
        uid = self._uid_factory()
        review = {
            "kind": "AdmissionReview",
            "apiVersion": REVIEW_API_VERSION,
            "request": request.body(uid, obj),
        }
        extensions = {"sni_hostname": server_name} if server_name else {}
        try:
            response = await client.post(
                url,
                content=json.dumps(review, separators=(",", ":")).encode(),
                headers={"Content-Type": "application/json", "Accept": "application/json"},
                timeout=httpx.Timeout(timeout),
                extensions=extensions,
            )
        except httpx.HTTPError as exc:
            cause = _describe_transport_error(exc, httpx.URL(url).netloc.decode())
            raise CallFailed(f'failed to call webhook: Post "{shown_url}": {cause}') from exc
        if response.status_code // 100 != 2:
            raise CallFailed(
                f"failed to call webhook: the server responded with the status code {response.status_code}"
                " but did not return more information"
            )
        try:
            answer = response.json()
        except ValueError as exc:
            raise CallFailed(f"failed to call webhook: {exc}") from exc
        result = verify_response(answer, uid=uid, mutating=mutating)
        if not result.get("allowed", False):
            raise denial(hook.name, result.get("status"))
        patch = result.get("patch")
        if not mutating or not patch:
            return None
        return apply_patch(hook.name, obj, patch)


@dataclass(frozen=True, slots=True)
class _RequestAttributes:
    operation: str
    gvk: tuple[str, str, str]
    gvr: tuple[str, str, str]
    subresource: str
    namespace: str
    name: str
    old_obj: dict[str, Any] | None
    user_info: dict[str, Any]
    dry_run: bool
    options: dict[str, Any] | None

    def body(self, uid: str, obj: dict[str, Any] | None) -> dict[str, Any]:
        kind = {"group": self.gvk[0], "version": self.gvk[1], "kind": self.gvk[2]}
        resource = {"group": self.gvr[0], "version": self.gvr[1], "resource": self.gvr[2]}
        body: dict[str, Any] = {"uid": uid, "kind": kind, "resource": resource}
        if self.subresource:
            body["subResource"] = self.subresource
        body["requestKind"] = dict(kind)
        body["requestResource"] = dict(resource)
        if self.subresource:
            body["requestSubResource"] = self.subresource
        if self.name:
            body["name"] = self.name
        if self.namespace:
            body["namespace"] = self.namespace
        body.update(
            operation=self.operation,
            userInfo=self.user_info,
            object=obj,
            oldObject=self.old_obj,
            dryRun=self.dry_run,
            options=self._options(),
        )
        return body

    def cel_request(self) -> dict[str, Any]:
        """The ``request`` variable of CEL conditions: the AdmissionRequest kube builds for them
        (``CreateAdmissionRequest``), i.e. :meth:`body` without ``uid``, ``object`` and ``oldObject``."""
        body = self.body("", None)
        for key in ("uid", "object", "oldObject"):
            del body[key]
        return body

    def _options(self) -> dict[str, Any] | None:
        if self.options is not None:
            return self.options
        kind = _OPTIONS_KIND.get(self.operation)
        return {"kind": kind, "apiVersion": "meta.k8s.io/v1"} if kind else None
