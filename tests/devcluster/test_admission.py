"""AdmissionChain against in-test webhooks (httpx.MockTransport through the transport seam)."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from devcluster.apiserver.admission import AdmissionChain, AdmissionDenied

JOB_GVK = ("batch", "v1", "Job")
JOB_GVR = ("batch", "v1", "jobs")
USER = {"username": "admin", "uid": "admin-uid", "groups": ["system:masters", "system:authenticated"]}
CA_BUNDLE = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nfake\n-----END CERTIFICATE-----\n").decode()

Handler = Callable[[dict[str, Any]], dict[str, Any]]


class FakeWebhooks:
    """Routes requests by URL path to per-webhook handlers and records every review received."""

    def __init__(self) -> None:
        self.handlers: dict[str, Handler | Exception] = {}
        self.calls: list[tuple[str, httpx.Request, dict[str, Any]]] = []
        self.ca_bundles: list[bytes] = []

    def transport(self, ca_pem: bytes) -> httpx.AsyncBaseTransport:
        self.ca_bundles.append(ca_pem)
        return httpx.MockTransport(self._handle)

    def _handle(self, request: httpx.Request) -> httpx.Response:
        review = json.loads(request.content)
        self.calls.append((request.url.path, request, review))
        handler = self.handlers[request.url.path]
        if isinstance(handler, Exception):
            raise handler
        return httpx.Response(200, json=handler(review["request"]))

    def paths(self) -> list[str]:
        return [path for path, _, _ in self.calls]


def allow(request: dict[str, Any], **response: Any) -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": request["uid"], "allowed": True, **response},
    }


def patching(*operations: dict[str, Any]) -> Handler:
    encoded = base64.b64encode(json.dumps(list(operations)).encode()).decode()

    def handler(request: dict[str, Any]) -> dict[str, Any]:
        return allow(request, patchType="JSONPatch", patch=encoded)

    return handler


def deny(status: dict[str, Any] | None) -> Handler:
    def handler(request: dict[str, Any]) -> dict[str, Any]:
        response = {"uid": request["uid"], "allowed": False}
        if status is not None:
            response["status"] = status
        return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}

    return handler


def webhook(name: str, path: str, **extra: Any) -> dict[str, Any]:
    hook: dict[str, Any] = {
        "name": name,
        "clientConfig": {
            "service": {"namespace": "kb-system", "name": "kb-webhook", "path": path},
            "caBundle": CA_BUNDLE,
        },
        "rules": [
            {
                "operations": ["CREATE", "UPDATE"],
                "apiGroups": ["batch"],
                "apiVersions": ["v1"],
                "resources": ["jobs"],
            }
        ],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    }
    hook.update(extra)
    return hook


def config(name: str, *hooks: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": name}, "webhooks": list(hooks)}


class Cluster:
    def __init__(self) -> None:
        self.mutating: list[dict[str, Any]] = []
        self.validating: list[dict[str, Any]] = []
        self.namespaces: dict[str, dict[str, str]] = {"team-a": {"kueue": "on"}, "team-b": {}}
        self.webhooks = FakeWebhooks()
        self.chain = AdmissionChain(
            list_mutating=lambda: self.mutating,
            list_validating=lambda: self.validating,
            namespace_labels=self.namespaces.get,
            service_resolver={"kb-system/kb-webhook": "127.0.0.1:9443"},
            transport_factory=self.webhooks.transport,
        )

    async def admit(self, target: dict[str, Any] | None = None, **overrides: Any) -> dict[str, Any] | None:
        job = target if target is not None else new_job()
        arguments: dict[str, Any] = {
            "operation": "CREATE",
            "gvk": JOB_GVK,
            "gvr": JOB_GVR,
            "subresource": "",
            "namespace": "team-a",
            "name": job["metadata"]["name"],
            "obj": job,
            "old_obj": None,
            "user_info": USER,
            "dry_run": False,
        }
        arguments.update(overrides)
        return await self.chain.admit(**arguments)


def new_job(labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "sample", "namespace": "team-a", "labels": dict(labels or {})},
        "spec": {"parallelism": 1, "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}},
    }


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    instance = Cluster()
    yield instance
    await instance.chain.aclose()


async def test_mutating_json_patch_is_applied_and_request_is_well_formed(cluster: Cluster) -> None:
    cluster.webhooks.handlers["/mutate"] = patching({"op": "add", "path": "/spec/suspend", "value": True})
    cluster.mutating = [config("kb", webhook("mjob.kb.dev", "/mutate"))]

    result = await cluster.admit()

    assert result is not None
    assert result["spec"]["suspend"] is True
    ((_, http_request, review),) = cluster.webhooks.calls
    assert str(http_request.url) == "https://127.0.0.1:9443/mutate?timeout=10s"
    assert http_request.extensions["sni_hostname"] == "kb-webhook.kb-system.svc"
    assert cluster.webhooks.ca_bundles == [base64.b64decode(CA_BUNDLE)]
    assert review["apiVersion"] == "admission.k8s.io/v1"
    request = review["request"]
    assert request["kind"] == request["requestKind"] == {"group": "batch", "version": "v1", "kind": "Job"}
    assert request["resource"] == {"group": "batch", "version": "v1", "resource": "jobs"}
    assert request["operation"] == "CREATE"
    assert request["object"]["metadata"]["name"] == "sample"
    assert request["oldObject"] is None
    assert request["dryRun"] is False
    assert request["options"] == {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}
    assert "subResource" not in request


@pytest.mark.needs_shared
async def test_request_has_the_same_fields_as_a_real_kube_apiserver_review(
    cluster: Cluster, shared_dir: Path
) -> None:
    real = json.loads((shared_dir / "fixtures" / "admissionreview-job-create.json").read_text())
    cluster.webhooks.handlers["/validate"] = allow
    cluster.validating = [config("kb", webhook("vjob.kb.dev", "/validate"))]

    await cluster.admit()

    ((_, _, review),) = cluster.webhooks.calls
    assert review.keys() == real.keys()
    assert list(review["request"]) == list(real["request"])
    assert review["request"]["userInfo"] == real["request"]["userInfo"]


async def test_validating_denial_uses_the_webhook_status(cluster: Cluster) -> None:
    status = {"code": 403, "reason": "Forbidden", "message": "queue-name is immutable"}
    cluster.webhooks.handlers["/validate"] = deny(status)
    cluster.validating = [config("kb", webhook("vjob.kb.dev", "/validate"))]

    with pytest.raises(AdmissionDenied) as caught:
        await cluster.admit()

    assert caught.value.code == 403
    assert caught.value.reason == "Forbidden"
    assert (
        caught.value.message == 'admission webhook "vjob.kb.dev" denied the request: queue-name is immutable'
    )
    assert caught.value.status["message"] == caught.value.message


async def test_denial_without_status_is_400_without_explanation(cluster: Cluster) -> None:
    cluster.webhooks.handlers["/validate"] = deny(None)
    cluster.validating = [config("kb", webhook("vjob.kb.dev", "/validate"))]

    with pytest.raises(AdmissionDenied) as caught:
        await cluster.admit()

    assert caught.value.code == 400
    assert caught.value.message == 'admission webhook "vjob.kb.dev" denied the request without explanation'


async def test_validating_webhooks_see_the_mutated_object(cluster: Cluster) -> None:
    seen: list[dict[str, Any]] = []

    def record(request: dict[str, Any]) -> dict[str, Any]:
        seen.append(request["object"])
        return allow(request)

    cluster.webhooks.handlers["/mutate"] = patching({"op": "add", "path": "/metadata/labels/x", "value": "1"})
    cluster.webhooks.handlers["/validate"] = record
    cluster.mutating = [config("kb", webhook("mjob.kb.dev", "/mutate"))]
    cluster.validating = [config("kb", webhook("vjob.kb.dev", "/validate"))]

    await cluster.admit()

    assert seen[0]["metadata"]["labels"] == {"x": "1"}


@pytest.mark.parametrize(
    ("rule", "overrides", "called"),
    [
        ({"operations": ["UPDATE"]}, {}, False),
        ({"operations": ["*"]}, {}, True),
        ({"apiGroups": ["*"], "resources": ["*"]}, {}, True),
        ({"resources": ["*"]}, {"subresource": "status", "operation": "UPDATE"}, False),
        ({"resources": ["jobs/status"]}, {"subresource": "status", "operation": "UPDATE"}, True),
        ({"resources": ["*/status"]}, {"subresource": "status", "operation": "UPDATE"}, True),
        ({"resources": ["jobs/*"]}, {"subresource": "status", "operation": "UPDATE"}, True),
        ({"resources": ["jobs/status"]}, {}, False),
        ({"apiVersions": ["v2"]}, {}, False),
        ({"scope": "Cluster"}, {}, False),
        ({"scope": "Namespaced"}, {}, True),
    ],
)
async def test_rule_matching(
    cluster: Cluster, rule: dict[str, Any], overrides: dict[str, Any], called: bool
) -> None:
    hook = webhook("vjob.kb.dev", "/validate")
    hook["rules"] = [{**hook["rules"][0], **rule}]
    cluster.webhooks.handlers["/validate"] = allow
    cluster.validating = [config("kb", hook)]

    await cluster.admit(**overrides)

    assert bool(cluster.webhooks.calls) is called


@pytest.mark.parametrize(
    ("namespace", "selector", "called"),
    [
        ("team-a", {"matchLabels": {"kueue": "on"}}, True),
        ("team-b", {"matchLabels": {"kueue": "on"}}, False),
        ("team-b", {"matchExpressions": [{"key": "kueue", "operator": "DoesNotExist"}]}, True),
        ("team-a", {"matchExpressions": [{"key": "kueue", "operator": "NotIn", "values": ["on"]}]}, False),
        ("team-a", {}, True),
    ],
)
async def test_namespace_selector(
    cluster: Cluster, namespace: str, selector: dict[str, Any], called: bool
) -> None:
    cluster.webhooks.handlers["/validate"] = allow
    cluster.validating = [config("kb", webhook("vjob.kb.dev", "/validate", namespaceSelector=selector))]

    await cluster.admit(namespace=namespace)

    assert bool(cluster.webhooks.calls) is called


async def test_namespace_selector_never_excludes_cluster_scoped_objects(cluster: Cluster) -> None:
    hook = webhook("vcq.kb.dev", "/validate", namespaceSelector={"matchLabels": {"kueue": "on"}})
    hook["rules"] = [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}]
    cluster.webhooks.handlers["/validate"] = allow
    cluster.validating = [config("kb", hook)]
    cq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cq"}}

    await cluster.admit(
        cq,
        namespace=None,
        gvk=("kueue.x-k8s.io", "v1beta2", "ClusterQueue"),
        gvr=("kueue.x-k8s.io", "v1beta2", "clusterqueues"),
    )

    assert len(cluster.webhooks.calls) == 1


async def test_object_selector_matches_new_or_old_labels(cluster: Cluster) -> None:
    selector = {"matchExpressions": [{"key": "kueue.x-k8s.io/queue-name", "operator": "Exists"}]}
    cluster.webhooks.handlers["/validate"] = allow
    cluster.validating = [config("kb", webhook("vjob.kb.dev", "/validate", objectSelector=selector))]

    await cluster.admit(new_job())
    assert cluster.webhooks.calls == []

    await cluster.admit(new_job({"kueue.x-k8s.io/queue-name": "q"}))
    assert len(cluster.webhooks.calls) == 1

    await cluster.admit(new_job(), operation="UPDATE", old_obj=new_job({"kueue.x-k8s.io/queue-name": "q"}))
    assert len(cluster.webhooks.calls) == 2


async def test_failure_policy_ignore_skips_an_unreachable_webhook(cluster: Cluster) -> None:
    cluster.webhooks.handlers["/mutate"] = httpx.ConnectError("refused")
    cluster.mutating = [config("kb", webhook("mjob.kb.dev", "/mutate", failurePolicy="Ignore"))]

    result = await cluster.admit()

    assert result == new_job()


async def test_failure_policy_fail_on_unreachable_webhook_is_an_internal_error(cluster: Cluster) -> None:
    cluster.webhooks.handlers["/mutate"] = httpx.ConnectError("refused")
    cluster.mutating = [config("kb", webhook("mjob.kb.dev", "/mutate"))]

    with pytest.raises(AdmissionDenied) as caught:
        await cluster.admit()

    assert caught.value.code == 500
    assert caught.value.reason == "InternalError"
    assert caught.value.message == (
        'Internal error occurred: failed calling webhook "mjob.kb.dev": failed to call webhook: '
        'Post "https://kb-webhook.kb-system.svc:443/mutate?timeout=10s": '
        "dial tcp 127.0.0.1:9443: connect: connection refused"
    )


async def test_failure_policy_fail_on_timeout(cluster: Cluster) -> None:
    cluster.webhooks.handlers["/validate"] = httpx.ReadTimeout("slow")
    cluster.validating = [config("kb", webhook("vjob.kb.dev", "/validate", timeoutSeconds=3))]

    with pytest.raises(AdmissionDenied) as caught:
        await cluster.admit()

    assert caught.value.code == 500
    assert caught.value.message.endswith(
        'Post "https://kb-webhook.kb-system.svc:443/validate?timeout=3s": context deadline exceeded'
    )


async def test_unknown_service_fails_the_call(cluster: Cluster) -> None:
    hook = webhook("vjob.kb.dev", "/validate")
    hook["clientConfig"]["service"]["name"] = "missing"
    cluster.validating = [config("kb", hook)]

    with pytest.raises(AdmissionDenied) as caught:
        await cluster.admit()

    assert caught.value.message.endswith('service "missing" not found')


async def test_response_with_wrong_uid_is_rejected_as_invalid(cluster: Cluster) -> None:
    def wrong_uid(request: dict[str, Any]) -> dict[str, Any]:
        return allow({**request, "uid": "not-the-uid"})

    cluster.webhooks.handlers["/validate"] = wrong_uid
    cluster.validating = [config("kb", webhook("vjob.kb.dev", "/validate"))]

    with pytest.raises(AdmissionDenied) as caught:
        await cluster.admit()

    assert caught.value.code == 500
    assert (
        'failed calling webhook "vjob.kb.dev": received invalid webhook response: expected response.uid='
        in (caught.value.message)
    )


async def test_validating_webhook_may_not_patch(cluster: Cluster) -> None:
    cluster.webhooks.handlers["/validate"] = patching({"op": "add", "path": "/spec/suspend", "value": True})
    cluster.validating = [config("kb", webhook("vjob.kb.dev", "/validate"))]

    with pytest.raises(AdmissionDenied) as caught:
        await cluster.admit()

    assert caught.value.message.endswith(
        "received invalid webhook response: validating webhooks may not return patches"
    )


def _counting(calls: list[str], name: str, handler: Handler) -> Handler:
    def wrapped(request: dict[str, Any]) -> dict[str, Any]:
        calls.append(name)
        return handler(request)

    return wrapped


@pytest.mark.parametrize(("policy", "expected_calls"), [("IfNeeded", ["a", "b", "a"]), ("Never", ["a", "b"])])
async def test_reinvocation_when_a_later_webhook_changed_the_object(
    cluster: Cluster, policy: str, expected_calls: list[str]
) -> None:
    calls: list[str] = []
    cluster.webhooks.handlers["/a"] = _counting(calls, "a", allow)
    cluster.webhooks.handlers["/b"] = _counting(
        calls, "b", patching({"op": "add", "path": "/metadata/labels/b", "value": "1"})
    )
    cluster.mutating = [
        config("2-second", webhook("b.kb.dev", "/b")),
        config("1-first", webhook("a.kb.dev", "/a", reinvocationPolicy=policy)),
    ]

    result = await cluster.admit()

    assert calls == expected_calls
    assert result is not None
    assert result["metadata"]["labels"] == {"b": "1"}


async def test_dry_run_with_side_effects_is_refused(cluster: Cluster) -> None:
    cluster.webhooks.handlers["/validate"] = allow
    cluster.validating = [config("kb", webhook("vjob.kb.dev", "/validate", sideEffects="Some"))]

    with pytest.raises(AdmissionDenied) as caught:
        await cluster.admit(dry_run=True)

    assert (caught.value.code, caught.value.reason) == (400, "BadRequest")
    assert caught.value.message == 'admission webhook "vjob.kb.dev" does not support dry run'
    assert cluster.webhooks.calls == []


async def test_delete_sends_old_object_and_no_object(cluster: Cluster) -> None:
    hook = webhook("vjob.kb.dev", "/validate")
    hook["rules"][0]["operations"] = ["DELETE"]
    cluster.webhooks.handlers["/validate"] = allow
    cluster.validating = [config("kb", hook)]

    result = await cluster.admit(operation="DELETE", obj=None, old_obj=new_job())

    assert result is None
    ((_, _, review),) = cluster.webhooks.calls
    assert review["request"]["object"] is None
    assert review["request"]["oldObject"]["metadata"]["name"] == "sample"
    assert review["request"]["options"]["kind"] == "DeleteOptions"


def test_denied_status_body_is_a_kubernetes_status() -> None:
    denied = AdmissionDenied(code=403, message="no", reason="Forbidden")
    assert denied.status == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "no",
        "reason": "Forbidden",
        "code": 403,
    }
