from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from prometheus_client import CollectorRegistry

from shared.kube import (
    AlreadyExists,
    ApiError,
    BadRequest,
    ClientSettings,
    Conflict,
    FileTokenSource,
    Forbidden,
    Gone,
    GroupVersionKind,
    HttpxTransport,
    InternalError,
    Invalid,
    KubeClient,
    KubeMetrics,
    NotFound,
    PatchType,
    ResourceInfo,
    ServerTimeout,
    ServiceUnavailable,
    TooManyRequests,
    TransportError,
    Unauthorized,
    UnexpectedResponse,
    UnknownKindError,
)
from shared.kube.auth import BearerTokenAuth
from shared.kube.errors import api_error_from_response
from tests.unit.kube.conftest import InstantClock, make_client
from tests.unit.kube.fakeapi import FakeApi, RecordedRequest, status_body

CM = GroupVersionKind("", "v1", "ConfigMap")
WIDGET = GroupVersionKind("example.com", "v1", "Widget")


def configmap(name: str, **data: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "ns"},
        "data": dict(data),
    }


def requests_to(api: FakeApi, method: str, path: str) -> list[RecordedRequest]:
    return [r for r in api.requests if r.method == method and r.path == path]


async def test_crud_round_trip(client: KubeClient, fake_api: FakeApi) -> None:
    created = await client.create(CM, configmap("a", x="1"))
    assert created["metadata"]["uid"]
    got = await client.get(CM, "a", namespace="ns")
    assert got["data"] == {"x": "1"}

    got["data"]["x"] = "2"
    updated = await client.update(CM, got)
    assert updated["data"] == {"x": "2"}

    merged = await client.patch(CM, "a", {"data": {"y": "3"}}, namespace="ns")
    assert merged["data"] == {"x": "2", "y": "3"}
    assert requests_to(fake_api, "PATCH", "/api/v1/namespaces/ns/configmaps/a")[-1].headers[
        "content-type"
    ] == ("application/merge-patch+json")

    patched = await client.patch(
        CM, "a", [{"op": "remove", "path": "/data/x"}], namespace="ns", patch_type=PatchType.JSON
    )
    assert patched["data"] == {"y": "3"}

    applied = await client.apply(
        CM, {"metadata": {"name": "a", "namespace": "ns"}, "data": {"z": "4"}}, field_manager="me", force=True
    )
    assert applied["data"]["z"] == "4"
    apply_request = requests_to(fake_api, "PATCH", "/api/v1/namespaces/ns/configmaps/a")[-1]
    assert apply_request.headers["content-type"] == "application/apply-patch+yaml"
    assert apply_request.params == {"fieldManager": "me", "force": "true"}
    assert orjson.loads(apply_request.body)["kind"] == "ConfigMap"

    await client.delete(CM, "a", namespace="ns", propagation_policy="Foreground")
    options = orjson.loads(requests_to(fake_api, "DELETE", "/api/v1/namespaces/ns/configmaps/a")[-1].body)
    assert options["propagationPolicy"] == "Foreground"
    with pytest.raises(NotFound):
        await client.get(CM, "a", namespace="ns")


async def test_update_with_stale_resource_version_is_a_conflict(client: KubeClient) -> None:
    first = await client.create(CM, configmap("a"))
    await client.patch(CM, "a", {"data": {"k": "v"}}, namespace="ns")
    with pytest.raises(Conflict) as caught:
        await client.update(CM, first)
    assert caught.value.code == 409
    assert not isinstance(caught.value, AlreadyExists)


async def test_writes_whose_answer_is_dropped_return_nothing_but_still_fail_as_usual(
    client: KubeClient, fake_api: FakeApi
) -> None:
    assert await client.create(CM, configmap("quiet", a="1"), namespace="ns", decode=False) == {}
    stored = await client.get(CM, "quiet", namespace="ns")
    assert stored["data"] == {"a": "1"}, "the write happened"
    assert await client.patch(CM, "quiet", {"data": {"a": "2"}}, namespace="ns", decode=False) == {}
    stored = await client.get(CM, "quiet", namespace="ns")
    assert stored["data"] == {"a": "2"}
    stored["data"] = {"a": "3"}
    assert await client.update(CM, stored, namespace="ns", decode=False) == {}
    assert (await client.get(CM, "quiet", namespace="ns"))["data"] == {"a": "3"}
    with pytest.raises(Conflict):
        await client.update(CM, stored, namespace="ns", decode=False)  # stale resourceVersion
    with pytest.raises(AlreadyExists):
        await client.create(CM, configmap("quiet"), namespace="ns", decode=False)


async def test_writes_whose_answer_is_dropped_ask_for_metadata_only(
    client: KubeClient, fake_api: FakeApi
) -> None:
    metadata_only = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1, application/json"
    await client.create(CM, configmap("m"), namespace="ns", decode=False)
    await client.patch(CM, "m", {"data": {"a": "2"}}, namespace="ns", decode=False)
    await client.patch(CM, "m", {"data": {"a": "3"}}, namespace="ns")
    await client.get(CM, "m", namespace="ns")
    accepts = [
        (r.method, r.headers.get("accept"))
        for r in fake_api.requests
        if r.path.endswith("configmaps/m") or r.method == "POST"
    ]
    assert accepts == [
        ("POST", metadata_only),
        ("PATCH", metadata_only),
        ("PATCH", "application/json"),  # read back: the whole object
        ("GET", "application/json"),
    ]


async def test_update_requires_a_resource_version(client: KubeClient) -> None:
    with pytest.raises(ValueError, match=r"metadata\.resourceVersion is required"):
        await client.update(CM, configmap("a"))


async def test_create_existing_name_is_already_exists_and_a_conflict(client: KubeClient) -> None:
    await client.create(CM, configmap("a"))
    with pytest.raises(AlreadyExists) as caught:
        await client.create(CM, configmap("a"))
    assert isinstance(caught.value, Conflict)


async def test_delete_preconditions_are_sent_and_enforced(client: KubeClient, fake_api: FakeApi) -> None:
    created = await client.create(CM, configmap("a"))
    with pytest.raises(Conflict, match="Precondition failed"):
        await client.delete(CM, "a", namespace="ns", uid="someone-else")
    await client.delete(
        CM,
        "a",
        namespace="ns",
        uid=created["metadata"]["uid"],
        resource_version=created["metadata"]["resourceVersion"],
    )
    body = orjson.loads(fake_api.requests[-1].body)
    assert body["preconditions"] == {
        "uid": created["metadata"]["uid"],
        "resourceVersion": created["metadata"]["resourceVersion"],
    }


async def test_status_subresource_verbs(fake_api: FakeApi, instant_clock: InstantClock) -> None:
    fake_api.register(
        ResourceInfo(
            gvk=WIDGET,
            plural="widgets",
            namespaced=True,
            subresources=frozenset({"status"}),
            verbs=frozenset({"get"}),
        )
    )
    client = make_client(fake_api, clock=instant_clock)
    created = await client.create(WIDGET, {"metadata": {"name": "w", "namespace": "ns"}, "spec": {"a": 1}})
    info = await client.resource(WIDGET)
    assert info.subresources == {"status"}
    await client.patch_status(WIDGET, "w", {"status": {"phase": "Running"}}, namespace="ns")
    status = await client.get_status(WIDGET, "w", namespace="ns")
    assert status["status"] == {"phase": "Running"}
    status["status"]["phase"] = "Done"
    status["spec"] = {"a": 2}  # ignored by a status update
    after = await client.update_status(WIDGET, status)
    assert after["status"] == {"phase": "Done"}
    assert after["spec"] == {"a": 1}
    assert after["metadata"]["uid"] == created["metadata"]["uid"]
    assert fake_api.requests[-1].path == "/apis/example.com/v1/namespaces/ns/widgets/w/status"
    await client.aclose()


async def test_list_selectors_and_pagination(client: KubeClient, fake_api: FakeApi) -> None:
    for i in range(7):
        body = configmap(f"cm{i}")
        body["metadata"]["labels"] = {"team": "a" if i % 2 else "b"}  # type: ignore[index]
        await client.create(CM, body)
    page = await client.list(CM, namespace="ns", label_selector="team=a", limit=2)
    assert len(page["items"]) == 2
    assert page["metadata"]["continue"]
    everything = await client.list_all(CM, namespace="ns", page_size=3)
    assert [o["metadata"]["name"] for o in everything.items] == [f"cm{i}" for i in range(7)]
    assert everything.items[0]["kind"] == "ConfigMap"
    assert everything.resource_version == str(fake_api.rv)
    list_requests = [r for r in fake_api.requests if r.method == "GET" and r.path.endswith("/configmaps")]
    assert [r.params.get("limit") for r in list_requests[-3:]] == ["3", "3", "3"]
    by_field = await client.list(CM, namespace="ns", field_selector="metadata.name=cm3")
    assert [o["metadata"]["name"] for o in by_field["items"]] == ["cm3"]


async def test_list_all_transforms_each_page_before_it_asks_for_the_next(
    client: KubeClient, fake_api: FakeApi
) -> None:
    for i in range(7):
        await client.create(CM, configmap(f"cm{i}"))
    pages_read: list[int] = []

    def transform(obj: dict[str, Any]) -> dict[str, Any]:
        pages_read.append(
            sum(1 for r in fake_api.requests if r.method == "GET" and r.path.endswith("/configmaps"))
        )
        return {**obj, "transformed": True}

    before = sum(1 for r in fake_api.requests if r.method == "GET" and r.path.endswith("/configmaps"))
    everything = await client.list_all(CM, namespace="ns", page_size=3, transform=transform)
    assert [n - before for n in pages_read] == [1, 1, 1, 2, 2, 2, 3]
    assert all(o["transformed"] and o["kind"] == "ConfigMap" for o in everything.items)


async def test_expired_continue_token_falls_back_to_a_full_list(
    client: KubeClient, fake_api: FakeApi
) -> None:
    for i in range(4):
        await client.create(CM, configmap(f"cm{i}"))
    fake_api.fail_when(
        lambda r: r.params.get("continue") == "2",
        lambda r: httpx.Response(410, content=status_body(410, "Expired", "continue token expired")),
        times=1,
    )
    result = await client.list_all(CM, namespace="ns", page_size=2)
    assert len(result.items) == 4
    assert "limit" not in fake_api.requests[-1].params


@pytest.mark.parametrize(
    ("code", "reason", "expected"),
    [
        (400, "BadRequest", BadRequest),
        (401, "Unauthorized", Unauthorized),
        (403, "Forbidden", Forbidden),
        (404, "NotFound", NotFound),
        (409, "AlreadyExists", AlreadyExists),
        (409, "Conflict", Conflict),
        (410, "Gone", Gone),
        (410, "Expired", Gone),
        (422, "Invalid", Invalid),
        (429, "TooManyRequests", TooManyRequests),
        (500, "InternalError", InternalError),
        (500, "ServerTimeout", ServerTimeout),
        (503, "ServiceUnavailable", ServiceUnavailable),
        (504, "Timeout", ServerTimeout),
    ],
)
def test_status_errors_map_to_typed_exceptions(code: int, reason: str, expected: type[ApiError]) -> None:
    error = api_error_from_response(
        status_code=code, body=status_body(code, reason, "msg"), headers={}, path="/p"
    )
    assert type(error) is expected
    assert (error.code, error.reason, error.message, error.path) == (code, reason, "msg", "/p")


def test_invalid_carries_field_causes() -> None:
    details = {
        "name": "w",
        "causes": [{"reason": "FieldValueRequired", "message": "Required value", "field": "spec.queue"}],
    }
    error = api_error_from_response(
        status_code=422, body=status_body(422, "Invalid", "bad", details), headers={}
    )
    assert isinstance(error, Invalid)
    assert [(c.field, c.reason) for c in error.causes] == [("spec.queue", "FieldValueRequired")]


def test_html_error_body_becomes_a_typed_error_with_a_snippet() -> None:
    html = b"<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"
    error = api_error_from_response(
        status_code=503, body=html, headers={"retry-after": "3"}, path="/api/v1/x"
    )
    assert isinstance(error, ServiceUnavailable)
    assert "502 Bad Gateway" in error.body_snippet
    assert "502 Bad Gateway" in str(error)
    assert error.retry_after == 3.0
    assert isinstance(api_error_from_response(status_code=418, body=b"", headers={}), BadRequest)


async def test_non_json_success_body_is_an_unexpected_response(client: KubeClient, fake_api: FakeApi) -> None:
    await client.create(CM, configmap("a"))
    fake_api.fail_when(
        lambda r: r.method == "GET", lambda r: httpx.Response(200, content=b"<html>login</html>")
    )
    with pytest.raises(UnexpectedResponse, match="/api/v1/namespaces/ns/configmaps/a"):
        await client.get(CM, "a", namespace="ns")


def server_error(r: RecordedRequest) -> httpx.Response:
    return httpx.Response(500, content=status_body(500, "InternalError", "etcd hiccup"))


async def test_a_post_that_got_a_500_is_not_retried(client: KubeClient, fake_api: FakeApi) -> None:
    await client.resource(CM)
    fake_api.fail_when(lambda r: r.method == "POST", server_error)
    with pytest.raises(InternalError):
        await client.create(CM, configmap("a"))
    assert len(requests_to(fake_api, "POST", "/api/v1/namespaces/ns/configmaps")) == 1


async def test_a_get_that_got_a_500_is_retried(
    client: KubeClient, fake_api: FakeApi, instant_clock: InstantClock
) -> None:
    await client.create(CM, configmap("a"))
    fake_api.fail_when(lambda r: r.method == "GET", server_error, times=2)
    got = await client.get(CM, "a", namespace="ns")
    assert got["metadata"]["name"] == "a"
    assert len(requests_to(fake_api, "GET", "/api/v1/namespaces/ns/configmaps/a")) == 3
    assert len(instant_clock.slept) == 2


async def test_reads_give_up_after_max_attempts(fake_api: FakeApi, instant_clock: InstantClock) -> None:
    client = make_client(
        fake_api, clock=instant_clock, settings=ClientSettings(qps=0, burst=1, max_attempts=3)
    )
    await client.resource(CM)
    fake_api.fail_when(lambda r: r.method == "GET", server_error)
    with pytest.raises(InternalError):
        await client.get(CM, "a", namespace="ns")
    assert len(requests_to(fake_api, "GET", "/api/v1/namespaces/ns/configmaps/a")) == 3
    await client.aclose()


async def test_429_is_retried_for_writes_honouring_retry_after(
    client: KubeClient, fake_api: FakeApi, instant_clock: InstantClock, registry: CollectorRegistry
) -> None:
    await client.resource(CM)
    fake_api.fail_when(
        lambda r: r.method == "POST",
        lambda r: httpx.Response(
            429, headers={"Retry-After": "7"}, content=status_body(429, "TooManyRequests", "slow down")
        ),
        times=1,
    )
    await client.create(CM, configmap("a"))
    assert len(requests_to(fake_api, "POST", "/api/v1/namespaces/ns/configmaps")) == 2
    assert instant_clock.slept == [7.0]
    assert (
        registry.get_sample_value(
            "kueue_bridge_rest_client_retries_total", {"verb": "create", "resource": "configmaps"}
        )
        == 1.0
    )
    assert (
        registry.get_sample_value(
            "kueue_bridge_rest_client_requests_total",
            {"verb": "create", "resource": "configmaps", "code": "429"},
        )
        == 1.0
    )


async def test_connection_errors_retry_writes_only_when_not_sent(
    fake_api: FakeApi, instant_clock: InstantClock
) -> None:
    attempts: list[str] = []
    inner = fake_api.transport()

    async def flaky(request: httpx.Request) -> httpx.Response:
        attempts.append(request.method)
        if request.method == "POST" and len(attempts) == 2:
            raise httpx.ConnectError("connection refused", request=request)
        if request.method == "PATCH":
            raise httpx.ReadError("connection reset after sending", request=request)
        return await inner.handle_async_request(request)

    client = KubeClient(
        server="https://fake.invalid",
        transport=HttpxTransport(httpx.MockTransport(flaky)),
        settings=ClientSettings(qps=0, burst=1),
        clock=instant_clock,
    )
    await client.resource(CM)
    await client.create(CM, configmap("a"))  # refused once, then created
    assert attempts.count("POST") == 2
    with pytest.raises(TransportError) as caught:
        await client.patch(CM, "a", {"data": {}}, namespace="ns")
    assert caught.value.request_sent
    assert attempts.count("PATCH") == 1
    await client.aclose()


async def test_token_file_rewritten_on_disk_is_used_by_the_next_request(
    tmp_path: Path, fake_api: FakeApi, instant_clock: InstantClock
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("first\n")
    client = KubeClient(
        server="https://fake.invalid",
        transport=HttpxTransport(fake_api.transport()),
        auth=BearerTokenAuth(FileTokenSource(token_file)),
        settings=ClientSettings(qps=0, burst=1),
        clock=instant_clock,
    )
    await client.create(CM, configmap("a"))
    assert fake_api.requests[-1].headers["authorization"] == "Bearer first"
    token_file.write_text("second")
    await client.get(CM, "a", namespace="ns")
    assert fake_api.requests[-1].headers["authorization"] == "Bearer second"
    token_file.unlink()  # a rotation in progress: keep using the last good token
    await client.get(CM, "a", namespace="ns")
    assert fake_api.requests[-1].headers["authorization"] == "Bearer second"
    await client.aclose()


async def test_crd_created_after_start_up_becomes_mappable(
    client: KubeClient, fake_api: FakeApi, instant_clock: InstantClock
) -> None:
    with pytest.raises(UnknownKindError, match=r"example\.com/v1, Kind=Widget") as caught:
        await client.resource(WIDGET)
    assert caught.value.gvk == WIDGET
    fake_api.register(ResourceInfo(gvk=WIDGET, plural="widgets", namespaced=True))
    await instant_clock.sleep(2.0)  # past the miss-refresh spacing
    info = await client.resource(WIDGET)
    assert info.plural == "widgets"
    assert info.path(namespace="ns", name="w") == "/apis/example.com/v1/namespaces/ns/widgets/w"
    discovery_calls = requests_to(fake_api, "GET", "/apis/example.com/v1")
    await client.resource(WIDGET)
    assert requests_to(fake_api, "GET", "/apis/example.com/v1") == discovery_calls  # cached


async def test_unknown_kind_in_a_served_group_names_the_kind(client: KubeClient) -> None:
    with pytest.raises(UnknownKindError, match="has no kind 'Secretz'"):
        await client.resource(GroupVersionKind("", "v1", "Secretz"))


async def test_client_side_qps_limit_delays_requests(fake_api: FakeApi, instant_clock: InstantClock) -> None:
    client = make_client(fake_api, clock=instant_clock, settings=ClientSettings(qps=2, burst=2))
    await client.resource(CM)  # takes one token
    await client.create(CM, configmap("a"))  # the second token
    assert instant_clock.slept == []
    await client.get(CM, "a", namespace="ns")
    assert instant_clock.slept == [pytest.approx(0.5)]
    await client.aclose()


async def test_request_metrics_go_to_the_given_registry(
    client: KubeClient, registry: CollectorRegistry
) -> None:
    await client.create(CM, configmap("a"))
    with pytest.raises(NotFound):
        await client.get(CM, "b", namespace="ns")
    assert (
        registry.get_sample_value(
            "kueue_bridge_rest_client_requests_total",
            {"verb": "get", "resource": "configmaps", "code": "404"},
        )
        == 1.0
    )
    assert (
        registry.get_sample_value(
            "kueue_bridge_rest_client_request_duration_seconds_count",
            {"verb": "create", "resource": "configmaps"},
        )
        == 1.0
    )


def test_metrics_on_separate_registries_do_not_collide() -> None:
    KubeMetrics(CollectorRegistry())
    KubeMetrics(CollectorRegistry())


async def test_namespace_required_for_namespaced_kinds(client: KubeClient) -> None:
    with pytest.raises(ValueError, match=r"metadata\.namespace is required"):
        await client.get(CM, "a")


async def test_apply_needs_a_field_manager(client: KubeClient) -> None:
    with pytest.raises(ValueError, match="field_manager"):
        await client.patch(CM, "a", {}, namespace="ns", patch_type=PatchType.APPLY)
