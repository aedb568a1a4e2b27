"""Every verb of ``KubeClient`` against the devcluster over HTTPS, and the typed errors it raises."""

from __future__ import annotations

from typing import Any

import pytest

from shared.kube import (
    AlreadyExists,
    Conflict,
    GroupVersionKind,
    Invalid,
    KubeClient,
    NotFound,
    PatchType,
)
from tests.component.kube.conftest import CONFIGMAP, eventually

JOB = GroupVersionKind("batch", "v1", "Job")


def configmap(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": dict(data)}


def job(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "suspend": True,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "main", "image": "busybox", "args": ["true"]}],
                }
            },
        },
    }


async def test_create_get_update_list_delete(client: KubeClient, namespace: str) -> None:
    created = await client.create(CONFIGMAP, configmap("a", k="1"), namespace=namespace)
    assert created["metadata"]["uid"]
    fetched = await client.get(CONFIGMAP, "a", namespace=namespace)
    assert fetched["data"] == {"k": "1"}
    fetched["data"]["k"] = "2"
    updated = await client.update(CONFIGMAP, fetched, namespace=namespace)
    assert updated["data"] == {"k": "2"}
    assert updated["metadata"]["resourceVersion"] != created["metadata"]["resourceVersion"]
    listed = await client.list_all(CONFIGMAP, namespace=namespace, label_selector="")
    assert "a" in {item["metadata"]["name"] for item in listed.items}
    assert all(item["kind"] == "ConfigMap" for item in listed.items)
    await client.delete(CONFIGMAP, "a", namespace=namespace)
    with pytest.raises(NotFound):
        await client.get(CONFIGMAP, "a", namespace=namespace)


async def test_dry_run_create_stores_nothing(client: KubeClient, namespace: str) -> None:
    await client.create(CONFIGMAP, configmap("dry"), namespace=namespace, dry_run=True)
    with pytest.raises(NotFound):
        await client.get(CONFIGMAP, "dry", namespace=namespace)


async def test_status_subresource_is_separate_from_the_main_resource(
    client: KubeClient, namespace: str
) -> None:
    created = await client.create(JOB, job("j"), namespace=namespace)
    patched = await client.patch_status(JOB, "j", {"status": {"active": 0, "ready": 0}}, namespace=namespace)
    assert patched["status"].get("ready") == 0
    status = await client.get_status(JOB, "j", namespace=namespace)
    assert status["metadata"]["uid"] == created["metadata"]["uid"]
    status["status"]["failed"] = 0
    updated = await client.update_status(JOB, status, namespace=namespace)
    assert updated["status"].get("failed") == 0
    # a status write ignores spec changes; a main-resource write ignores status changes
    updated["spec"]["parallelism"] = 5
    updated["status"]["failed"] = 7
    after_status = await client.update_status(JOB, updated, namespace=namespace)
    assert after_status["spec"].get("parallelism") != 5
    after_status["status"]["succeeded"] = 3
    after_main = await client.update(JOB, after_status, namespace=namespace)
    assert (after_main.get("status") or {}).get("succeeded") != 3


async def test_merge_json_and_strategic_patches(client: KubeClient, namespace: str) -> None:
    await client.create(CONFIGMAP, configmap("p", a="1", b="2"), namespace=namespace)
    merged = await client.patch(CONFIGMAP, "p", {"data": {"a": None, "c": "3"}}, namespace=namespace)
    assert merged["data"] == {"b": "2", "c": "3"}
    ops = [
        {"op": "test", "path": "/data/b", "value": "2"},
        {"op": "replace", "path": "/data/b", "value": "x"},
    ]
    jsoned = await client.patch(CONFIGMAP, "p", ops, namespace=namespace, patch_type=PatchType.JSON)
    assert jsoned["data"] == {"b": "x", "c": "3"}
    with pytest.raises(Invalid):  # a failed "test" operation
        await client.patch(
            CONFIGMAP,
            "p",
            [{"op": "test", "path": "/data/b", "value": "nope"}],
            namespace=namespace,
            patch_type=PatchType.JSON,
        )
    strategic = await client.patch(
        CONFIGMAP,
        "p",
        {"metadata": {"labels": {"l": "v"}}},
        namespace=namespace,
        patch_type=PatchType.STRATEGIC,
    )
    assert strategic["metadata"]["labels"] == {"l": "v"}


async def test_server_side_apply_creates_then_merges_and_records_the_manager(
    client: KubeClient, namespace: str
) -> None:
    first = await client.apply(
        CONFIGMAP, {"metadata": {"name": "s"}, "data": {"a": "1"}}, field_manager="one", namespace=namespace
    )
    assert first["data"] == {"a": "1"}
    second = await client.apply(
        CONFIGMAP, {"metadata": {"name": "s"}, "data": {"b": "2"}}, field_manager="two", namespace=namespace
    )
    assert second["data"] == {"a": "1", "b": "2"}
    managers = {entry["manager"] for entry in second["metadata"].get("managedFields") or []}
    assert {"one", "two"} <= managers


async def test_server_side_apply_conflict_without_force(client: KubeClient, namespace: str) -> None:
    await client.apply(
        CONFIGMAP, {"metadata": {"name": "c"}, "data": {"a": "1"}}, field_manager="one", namespace=namespace
    )
    with pytest.raises(Conflict):
        await client.apply(
            CONFIGMAP,
            {"metadata": {"name": "c"}, "data": {"a": "2"}},
            field_manager="two",
            namespace=namespace,
        )


async def test_typed_errors(client: KubeClient, namespace: str) -> None:
    created = await client.create(CONFIGMAP, configmap("e", k="1"), namespace=namespace)
    with pytest.raises(AlreadyExists) as exists:
        await client.create(CONFIGMAP, configmap("e"), namespace=namespace)
    assert exists.value.code == 409
    await client.patch(CONFIGMAP, "e", {"data": {"k": "2"}}, namespace=namespace)
    with pytest.raises(Conflict) as stale:
        await client.update(CONFIGMAP, created, namespace=namespace)  # stale resourceVersion
    assert not isinstance(stale.value, AlreadyExists)
    with pytest.raises(NotFound):
        await client.get(CONFIGMAP, "missing", namespace=namespace)
    with pytest.raises(Invalid) as invalid:
        await client.create(CONFIGMAP, configmap("Not_A_DNS_Name"), namespace=namespace)
    assert invalid.value.code == 422
    assert any(cause.field == "metadata.name" for cause in invalid.value.causes), invalid.value.causes


async def test_delete_preconditions(client: KubeClient, namespace: str) -> None:
    created = await client.create(CONFIGMAP, configmap("d"), namespace=namespace)
    with pytest.raises(Conflict):
        await client.delete(CONFIGMAP, "d", namespace=namespace, uid="00000000-0000-0000-0000-000000000000")
    with pytest.raises(Conflict):
        await client.delete(CONFIGMAP, "d", namespace=namespace, resource_version="1")
    await client.delete(
        CONFIGMAP,
        "d",
        namespace=namespace,
        uid=created["metadata"]["uid"],
        resource_version=created["metadata"]["resourceVersion"],
    )
    with pytest.raises(NotFound):
        await client.get(CONFIGMAP, "d", namespace=namespace)


async def _owner_and_dependent(client: KubeClient, namespace: str, suffix: str) -> None:
    owner = await client.create(CONFIGMAP, configmap(f"owner-{suffix}"), namespace=namespace)
    dependent = configmap(f"dep-{suffix}")
    dependent["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    await client.create(CONFIGMAP, dependent, namespace=namespace)


async def _gone(client: KubeClient, name: str, namespace: str) -> bool:
    try:
        await client.get(CONFIGMAP, name, namespace=namespace)
    except NotFound:
        return True
    return False


async def test_delete_propagation_policies(client: KubeClient, namespace: str) -> None:
    for suffix in ("bg", "fg", "or"):
        await _owner_and_dependent(client, namespace, suffix)

    await client.delete(CONFIGMAP, "owner-bg", namespace=namespace, propagation_policy="Background")
    assert await _gone(client, "owner-bg", namespace)
    await eventually(lambda: _gone(client, "dep-bg", namespace), what="background GC of the dependent")

    answer = await client.delete(CONFIGMAP, "owner-fg", namespace=namespace, propagation_policy="Foreground")
    if answer.get("kind") == "ConfigMap":  # still there, waiting for its dependents
        assert "foregroundDeletion" in answer["metadata"]["finalizers"]
        assert answer["metadata"]["deletionTimestamp"]
    await eventually(lambda: _gone(client, "dep-fg", namespace), what="foreground deletion of the dependent")
    await eventually(lambda: _gone(client, "owner-fg", namespace), what="the foreground owner to go")

    await client.delete(CONFIGMAP, "owner-or", namespace=namespace, propagation_policy="Orphan")
    await eventually(lambda: _gone(client, "owner-or", namespace), what="the orphaning owner to go")

    async def orphaned() -> bool:
        dependent = await client.get(CONFIGMAP, "dep-or", namespace=namespace)
        return not dependent["metadata"].get("ownerReferences")

    await eventually(orphaned, what="the owner reference to be removed from the orphan")


async def test_pagination_with_limit_and_continue(client: KubeClient, namespace: str) -> None:
    for i in range(7):
        await client.create(
            CONFIGMAP,
            {**configmap(f"page-{i}"), "metadata": {"name": f"page-{i}", "labels": {"set": "p"}}},
            namespace=namespace,
        )
    first = await client.list(CONFIGMAP, namespace=namespace, label_selector="set=p", limit=3)
    assert len(first["items"]) == 3
    token = first["metadata"]["continue"]
    assert token
    assert first["metadata"].get("remainingItemCount") in (None, 4)
    second = await client.list(
        CONFIGMAP, namespace=namespace, label_selector="set=p", limit=3, continue_token=token
    )
    third = await client.list(
        CONFIGMAP,
        namespace=namespace,
        label_selector="set=p",
        limit=3,
        continue_token=second["metadata"]["continue"],
    )
    assert not third["metadata"].get("continue")
    names = [item["metadata"]["name"] for page in (first, second, third) for item in page["items"]]
    assert sorted(names) == [f"page-{i}" for i in range(7)]
    everything = await client.list_all(CONFIGMAP, namespace=namespace, label_selector="set=p", page_size=2)
    assert sorted(item["metadata"]["name"] for item in everything.items) == sorted(names)
    assert everything.resource_version


async def test_cluster_scoped_kind_and_discovery(client: KubeClient, namespace: str) -> None:
    info = await client.resource(GroupVersionKind("", "v1", "Namespace"))
    assert not info.namespaced
    ns = await client.get(GroupVersionKind("", "v1", "Namespace"), namespace)
    assert ns["metadata"]["name"] == namespace
    job_info = await client.resource(JOB)
    assert job_info.namespaced and "status" in job_info.subresources
