"""The fake API server's field ownership, checked against what kube-apiserver 1.36 was seen to do."""

from __future__ import annotations

from typing import Any

from tests.unit.kube.fake_ssa import FieldOwnership

KEY = ("workloads", "ns", "wl")


def _obj(**status: Any) -> dict[str, Any]:
    return {"metadata": {"name": "wl"}, "spec": {"a": 1}, "status": status}


def test_an_apply_removes_what_only_its_manager_applied_before() -> None:
    owners = FieldOwnership()
    old = _obj(conditions=[{"type": "A", "status": "True"}, {"type": "B", "status": "True"}])
    new = owners.apply(
        KEY, "m", old, {"status": {"clusterName": "w1", "nominated": ["w1"]}}, subresource="status"
    )
    assert new["status"]["clusterName"] == "w1"
    new = owners.apply(KEY, "m", new, {"status": {"clusterName": "w1"}}, subresource="status")
    assert "nominated" not in new["status"]
    assert [c["type"] for c in new["status"]["conditions"]] == ["A", "B"], "unowned fields stay"


def test_a_field_another_manager_owns_survives_and_keyed_items_merge() -> None:
    owners = FieldOwnership()
    old = _obj(conditions=[{"type": "A", "status": "True"}])
    new = owners.apply(
        KEY, "m", old, {"status": {"conditions": [{"type": "B", "status": "True"}]}}, subresource="status"
    )
    assert [c["type"] for c in new["status"]["conditions"]] == ["A", "B"]
    updated = {**new, "status": {**new["status"], "clusterName": "w2"}}
    owners.update(KEY, "other", new, updated, subresource="status")
    after = owners.apply(KEY, "m", updated, {"status": {}}, subresource="status")
    assert after["status"]["clusterName"] == "w2", "owned by an update: an apply cannot remove it"
    assert [c["type"] for c in after["status"]["conditions"]] == ["A"], "B was m's alone"


def test_a_forced_apply_takes_a_changed_field_from_an_updater() -> None:
    owners = FieldOwnership()
    old = _obj()
    updated = _obj(clusterName="w2")
    owners.update(KEY, "other", old, updated, subresource="status")
    taken = owners.apply(KEY, "m", updated, {"status": {"clusterName": "w1"}}, subresource="status")
    gone = owners.apply(KEY, "m", taken, {"status": {}}, subresource="status")
    assert "clusterName" not in gone["status"]
