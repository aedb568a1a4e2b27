"""``write_condition``: the Active condition written on the raw object, every other entry kept."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, cast

from multikueue.conditions import write_condition
from shared.kube import GroupVersionKind, KubeClient
from shared.models.condition import Condition

CLUSTER = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "MultiKueueCluster")
NOW = datetime(2026, 12, 1, 8, 0, 0, tzinfo=UTC)


class StatusWrites:
    def __init__(self) -> None:
        self.written: list[dict[str, Any]] = []

    async def update_status(self, gvk: GroupVersionKind, obj: dict[str, Any]) -> dict[str, Any]:
        self.written.append(obj)
        return obj


def cluster(conditions: list[Any]) -> dict[str, Any]:
    return {
        "apiVersion": CLUSTER.api_version,
        "kind": CLUSTER.kind,
        "metadata": {"name": "w1", "generation": 3, "resourceVersion": "7"},
        "status": {"conditions": conditions},
    }


def active(status: str, reason: str = "Active", message: str = "Connected") -> Condition:
    return Condition(type="Active", status=status, reason=reason, message=message, observed_generation=3)


async def test_other_controllers_conditions_are_written_back_as_read_even_malformed() -> None:
    others = [
        {"type": "Healthy", "status": "True", "someFutureField": {"x": 1}},  # fields we do not model
        {"type": "Broken"},  # no status: not a valid metav1.Condition
        "not even an object",
    ]
    obj = cluster([*others])
    client = StatusWrites()
    assert await write_condition(cast(KubeClient, client), CLUSTER, obj, active("True"), now=NOW)
    [written] = client.written
    assert written["status"]["conditions"][:3] == others
    assert written["status"]["conditions"][3] == {
        "type": "Active",
        "status": "True",
        "observedGeneration": 3,
        "lastTransitionTime": "2026-12-01T08:00:00Z",
        "reason": "Active",
        "message": "Connected",
    }
    assert obj["status"]["conditions"] == others, "the cached object is not modified"


async def test_the_same_state_is_not_written_and_a_flip_moves_the_transition_time() -> None:
    current = {
        "type": "Active",
        "status": "True",
        "reason": "Active",
        "message": "Connected",
        "lastTransitionTime": "2026-11-30T00:00:00Z",
    }
    client = StatusWrites()
    assert not await write_condition(
        cast(KubeClient, client), CLUSTER, cluster([current]), active("True"), now=NOW
    )
    assert client.written == []
    flipped = active("False", reason="ClientConnectionFailed", message="refused")
    assert await write_condition(cast(KubeClient, client), CLUSTER, cluster([current]), flipped, now=NOW)
    [condition] = client.written[0]["status"]["conditions"]
    assert (condition["status"], condition["lastTransitionTime"]) == ("False", "2026-12-01T08:00:00Z")
