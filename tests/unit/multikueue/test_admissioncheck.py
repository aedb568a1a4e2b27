"""The AdmissionCheck ``Active`` condition: Kueue's reasons and messages, and no write when unchanged."""

from __future__ import annotations

from typing import Any

import pytest

from multikueue.admissioncheck import AdmissionCheckReconciler
from shared.kube import FakeClock
from tests.unit.multikueue.fakes import ADMISSION_CHECK, MK_CLUSTER, MK_CONFIG, FakeCluster

OURS = "kueue-bridge.dev/multikueue"


@pytest.fixture
def manager() -> FakeCluster:
    return FakeCluster("manager", clock=FakeClock())


def reconciler(manager: FakeCluster) -> AdmissionCheckReconciler:
    return AdmissionCheckReconciler(
        client=manager.client,
        controller_name=OURS,
        checks=manager.getter(ADMISSION_CHECK),
        configs=manager.getter(MK_CONFIG),
        clusters=manager.getter(MK_CLUSTER),
        now=FakeClock().wall,
    )


def check(parameters: Any, controller: str = OURS) -> dict[str, Any]:
    spec: dict[str, Any] = {"controllerName": controller}
    if parameters is not None:
        spec["parameters"] = parameters
    return {"metadata": {"name": "mk"}, "spec": spec}


def params(
    name: str = "cfg", group: str = "kueue.x-k8s.io", kind: str = "MultiKueueConfig"
) -> dict[str, str]:
    return {"apiGroup": group, "kind": kind, "name": name}


def cluster(manager: FakeCluster, name: str, active: str | None) -> None:
    obj: dict[str, Any] = {"metadata": {"name": name}}
    if active is not None:
        obj["status"] = {"conditions": [{"type": "Active", "status": active, "reason": "x", "message": ""}]}
    manager.put(MK_CLUSTER, obj)


def active_of(manager: FakeCluster) -> tuple[str, str, str]:
    obj = manager.get(ADMISSION_CHECK, "mk")
    assert obj is not None
    [condition] = obj["status"]["conditions"]
    return condition["status"], condition["reason"], condition["message"]


@pytest.mark.parametrize(
    ("parameters", "why"),
    [
        (None, "missing parameters reference"),
        (params(name=""), "empty name: bad parameters reference"),
        (params(group="x.io"), 'wrong group "x.io", expecting "kueue.x-k8s.io": bad parameters reference'),
        (params(kind="Other"), 'wrong kind "Other", expecting "MultiKueueConfig": bad parameters reference'),
        (params(name="absent"), 'MultiKueueConfig.kueue.x-k8s.io "absent" not found'),
    ],
)
async def test_bad_parameters(manager: FakeCluster, parameters: Any, why: str) -> None:
    manager.put(ADMISSION_CHECK, check(parameters))
    await reconciler(manager).reconcile("mk")
    assert active_of(manager) == ("False", "BadConfig", f"Cannot load the AdmissionChecks parameters: {why}")


async def test_cluster_states_decide_the_reason_and_message(manager: FakeCluster) -> None:
    manager.put(ADMISSION_CHECK, check(params()))
    manager.put(MK_CONFIG, {"metadata": {"name": "cfg"}, "spec": {"clusters": ["a", "b", "c", "d"]}})
    cluster(manager, "a", "True")
    cluster(manager, "b", "False")
    cluster(manager, "c", None)
    await reconciler(manager).reconcile("mk")
    assert active_of(manager) == (
        "True",
        "SomeActiveClusters",
        "Missing clusters: [d], Inactive clusters: [b c]",
    )
    cluster(manager, "a", "False")
    await reconciler(manager).reconcile("mk")
    assert active_of(manager) == (
        "False",
        "NoUsableClusters",
        "Missing clusters: [d], Inactive clusters: [a b c]",
    )
    for name in ("a", "b", "c", "d"):
        cluster(manager, name, "True")
    await reconciler(manager).reconcile("mk")
    assert active_of(manager) == ("True", "Active", "The admission check is active")
    writes = len([r for r in manager.api.requests if r.method == "PUT"])
    await reconciler(manager).reconcile("mk")
    assert len([r for r in manager.api.requests if r.method == "PUT"]) == writes


async def test_checks_of_other_controllers_are_left_alone(manager: FakeCluster) -> None:
    manager.put(ADMISSION_CHECK, check(None, controller="kueue.x-k8s.io/multikueue"))
    await reconciler(manager).reconcile("mk")
    assert "status" not in (manager.get(ADMISSION_CHECK, "mk") or {})
