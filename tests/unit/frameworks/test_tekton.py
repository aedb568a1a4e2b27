"""Tekton PipelineRun adapter (tekton-kueue semantics)."""

from __future__ import annotations

from typing import Any

import pytest

from shared.frameworks.base import AdapterError, GenericJob, JobWithCustomStop, JobWithManagedBy, StopStep
from shared.frameworks.tekton import PipelineRunAdapter


def make_run(
    *, annotations: dict[str, str] | None = None, status: Any = None, spec_status: Any = None
) -> dict[str, Any]:
    run: dict[str, Any] = {
        "apiVersion": "tekton.dev/v1",
        "kind": "PipelineRun",
        "metadata": {"name": "build", "namespace": "ns", "annotations": annotations or {}},
        "spec": {"pipelineRef": {"name": "p"}},
    }
    if spec_status is not None:
        run["spec"]["status"] = spec_status
    if status is not None:
        run["status"] = status
    return run


def test_interfaces() -> None:
    adapter = PipelineRunAdapter(make_run())
    for protocol in (GenericJob, JobWithCustomStop, JobWithManagedBy):
        assert isinstance(adapter, protocol)


def test_suspend_and_run_use_spec_status() -> None:
    run = make_run()
    adapter = PipelineRunAdapter(run)
    assert adapter.is_suspended() is False
    adapter.suspend()
    assert run["spec"]["status"] == "PipelineRunPending"
    assert adapter.is_suspended() is True
    adapter.run_with_pod_sets_info([])
    assert "status" not in run["spec"]
    assert adapter.restore_pod_sets_info([]) is False


def test_single_synthetic_pod_set_with_annotation_requests() -> None:
    run = make_run(
        annotations={
            "kueue.konflux-ci.dev/requests-cpu": "500m",
            "kueue.konflux-ci.dev/requests-memory": "1Gi",
            "other": "x",
        }
    )
    [pod_set] = PipelineRunAdapter(run).pod_sets()
    assert pod_set.to_wire() == {
        "name": "pod-set-1",
        "count": 1,
        "template": {
            "metadata": {},
            "spec": {
                "containers": [
                    {
                        "name": "dummy",
                        "image": "dummy",
                        "resources": {
                            "requests": {"tekton.dev/pipelineruns": "1", "cpu": "500m", "memory": "1Gi"}
                        },
                    }
                ]
            },
        },
    }


@pytest.mark.parametrize(
    ("key", "value", "fragment"),
    [
        ("kueue.konflux-ci.dev/requests-", "1", "empty resource name"),
        ("kueue.konflux-ci.dev/requests-cpu", "lots", "invalid resource quantity"),
        ("kueue.konflux-ci.dev/requests-cpu", "1 Gi", "invalid resource quantity"),
    ],
)
def test_bad_request_annotations_name_the_annotation(key, value, fragment) -> None:
    with pytest.raises(AdapterError) as caught:
        PipelineRunAdapter(make_run(annotations={key: value})).pod_sets()
    assert caught.value.path == f"metadata.annotations[{key}]"
    assert fragment in caught.value.message


def succeeded(status: str, reason: str, message: str = "m") -> dict[str, Any]:
    return {"conditions": [{"type": "Succeeded", "status": status, "reason": reason, "message": message}]}


@pytest.mark.parametrize(
    ("status", "finished", "success"),
    [
        (None, False, False),
        (succeeded("Unknown", "Running"), False, False),
        (succeeded("True", "Succeeded"), True, True),
        (succeeded("True", "Completed"), True, True),
        (succeeded("False", "Failed"), True, False),
        (succeeded("False", "Cancelled"), True, False),
    ],
)
def test_finished_from_the_succeeded_condition(status, finished, success) -> None:
    state = PipelineRunAdapter(make_run(status=status)).finished()
    assert (state.finished, state.success) == (finished, success)
    assert state.message == ("m" if finished else "")


def test_active_while_started_and_not_done() -> None:
    assert PipelineRunAdapter(make_run()).is_active() is False
    running = {"startTime": "2026-01-01T00:00:00Z", **succeeded("Unknown", "Running")}
    assert PipelineRunAdapter(make_run(status=running)).is_active() is True
    done = {"startTime": "2026-01-01T00:00:00Z", **succeeded("True", "Succeeded")}
    assert PipelineRunAdapter(make_run(status=done)).is_active() is False
    assert PipelineRunAdapter(make_run()).pods_ready() is True


@pytest.mark.parametrize(
    ("spec_status", "status", "steps"),
    [
        (None, None, [StopStep({"spec": {"status": "StoppedRunFinally"}})]),
        ("PipelineRunPending", None, [StopStep({"spec": {"status": "StoppedRunFinally"}})]),
        ("StoppedRunFinally", None, []),
        ("Cancelled", None, []),
        (None, succeeded("True", "Succeeded"), []),
    ],
)
def test_stop_is_graceful_and_idempotent(spec_status, status, steps) -> None:
    run = make_run(status=status, spec_status=spec_status)
    assert PipelineRunAdapter(run).stop_steps([]) == steps


def test_managed_by() -> None:
    run = make_run()
    adapter = PipelineRunAdapter(run)
    assert adapter.can_default_managed_by() is True
    adapter.set_managed_by("kueue.x-k8s.io/multikueue")
    assert adapter.can_default_managed_by() is False
    assert run["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue"


@pytest.mark.parametrize(
    ("run", "call", "path"),
    [
        (make_run(status="x"), "finished", "status"),
        (make_run(spec_status=3), "is_suspended", "spec.status"),
        ({"metadata": {"annotations": "a"}}, "pod_sets", "metadata.annotations"),
    ],
)
def test_malformed_runs_name_the_path(run, call, path) -> None:
    with pytest.raises(AdapterError) as caught:
        getattr(PipelineRunAdapter(run), call)()
    assert caught.value.path == path
