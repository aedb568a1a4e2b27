"""``resetOnStop``: a declarative kind whose API server, like batch/v1 Job's, refuses template changes
until a start marker in ``status`` is cleared stops in Kueue's batch Job order."""

from __future__ import annotations

from typing import Any

import pytest

from shared.frameworks.base import AdapterConfigError, JobWithCustomStop, StopStep
from shared.frameworks.capabilities import has_custom_stop, has_managed_by
from shared.frameworks.declarative import DeclarativeFramework
from shared.frameworks.spec import DeclarativeAdapterSpec
from shared.kube import GroupVersionKind
from shared.kueue.podset import PodSetInfo
from shared.merge_patch import apply_merge_patch

GVK = GroupVersionKind("ml.example.com", "v1", "TrainingRun")
STOPPING = "kueue.x-k8s.io/stopping"


def framework(**overrides: Any) -> DeclarativeFramework:
    spec: dict[str, Any] = {
        "suspend": {"path": "spec.paused"},
        "podSets": [{"name": "main", "template": "spec.template"}],
        "finished": "false",
        "resetOnStop": ["status.startTime"],
    }
    spec.update(overrides)
    return DeclarativeFramework(DeclarativeAdapterSpec.model_validate(spec), gvk=GVK, field="cfg")


def running_run() -> dict[str, Any]:
    return {
        "apiVersion": "ml.example.com/v1",
        "kind": "TrainingRun",
        "metadata": {"name": "r", "namespace": "ns"},
        "spec": {
            "paused": False,
            "template": {
                "metadata": {"labels": {"app": "r", "kueue.x-k8s.io/podset": "main"}},
                "spec": {"nodeSelector": {"zone": "a", "flavor": "spot"}, "containers": [{"name": "c"}]},
            },
        },
        "status": {"startTime": "2026-11-22T02:34:05Z", "phase": "Running"},
    }


ORIGINAL = PodSetInfo(name="main", count=1, labels={"app": "r"}, node_selector={"zone": "a"})


def stop_steps(obj: dict[str, Any], **overrides: Any) -> list[StopStep]:
    adapter = framework(**overrides)(obj)
    assert has_custom_stop(adapter)
    return adapter.stop_steps([ORIGINAL])


def apply_all(obj: dict[str, Any], steps: list[StopStep]) -> dict[str, Any]:
    for step in steps:
        obj = apply_merge_patch(obj, step.merge_patch)
    return obj


def test_a_started_object_stops_in_three_ordered_writes() -> None:
    adapter = framework()(running_run())
    assert has_custom_stop(adapter)
    steps = adapter.stop_steps([ORIGINAL])
    assert [(s.phase, s.subresource) for s in steps] == [
        ("suspend", None),
        ("reset-status", "status"),
        ("restore", None),
    ]
    assert steps[0].merge_patch == {"metadata": {"annotations": {STOPPING: "true"}}, "spec": {"paused": True}}
    assert steps[1].merge_patch == {"status": {"startTime": None}}
    stopped = apply_all(running_run(), steps)
    assert stopped["spec"]["paused"] is True
    assert stopped["spec"]["template"]["spec"]["nodeSelector"] == {"zone": "a"}
    assert stopped["spec"]["template"]["metadata"]["labels"] == {"app": "r"}
    assert "annotations" not in stopped["metadata"]
    assert "startTime" not in stopped["status"]
    assert framework()(stopped).is_suspended()
    assert stop_steps(stopped) == []


def test_a_stop_cut_short_resumes_from_the_stopping_mark() -> None:
    first = stop_steps(running_run())[0]
    suspended = apply_merge_patch(running_run(), first.merge_patch)
    adapter = framework()(suspended)
    assert not adapter.is_suspended(), "the mark says the stop is not finished"
    phases = [s.phase for s in stop_steps(suspended)]
    assert phases == ["suspend", "reset-status", "restore"]


def test_without_a_marker_only_suspend_and_restore_remain() -> None:
    run = running_run()
    del run["status"]["startTime"]
    assert [s.phase for s in stop_steps(run)] == ["suspend", "restore"]


def test_reset_paths_must_be_status_fields() -> None:
    with pytest.raises(AdapterConfigError) as caught:
        framework(resetOnStop=["spec.startTime"])
    assert caught.value.path == "cfg.resetOnStop[0]"


def test_capabilities_combine_and_only_when_configured() -> None:
    plain = framework(resetOnStop=[])(running_run())
    assert not isinstance(plain, JobWithCustomStop)
    both = framework(managedBy={"path": "spec.managedBy"})(running_run())
    again = framework(managedBy={"path": "spec.managedBy"})(running_run())
    assert type(both) is type(again), "one class per capability mix"
    assert has_custom_stop(both)
    assert has_managed_by(both)
