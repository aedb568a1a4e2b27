"""Which kinds get a MultiKueue adapter, and what each puts on the worker."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from multikueue.adapters import MultiKueueAdapters
from shared.config import parse_config
from shared.kube import GroupVersionKind

NOW = datetime(2026, 1, 1, tzinfo=UTC)
TRAINING = GroupVersionKind("ml.example.com", "v1alpha1", "TrainingRun")
PIPELINE = GroupVersionKind("tekton.dev", "v1", "PipelineRun")
WIDGET = GroupVersionKind("example.com", "v1", "Widget")
JOBSET = GroupVersionKind("jobset.x-k8s.io", "v1alpha2", "JobSet")
BODY = """
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
integrations:
  frameworks: [batch/job, jobset.x-k8s.io/jobset]
  externalFrameworks:
  - PipelineRun.v1.tekton.dev
  - name: TrainingRun.v1alpha1.ml.example.com
    adapter:
      suspend: {path: spec.paused}
      managedBy: {path: spec.owner}
      podSets: [{template: spec.template}]
      finished: "false"
      remoteDropPaths: [spec.cleanupAfter]
multiKueue:
  externalFrameworks: [{name: TrainingRun.v1alpha1.ml.example.com}, {name: Widget.v1.example.com}]
"""


def adapters(extra: str = "") -> MultiKueueAdapters:
    return MultiKueueAdapters.from_config(parse_config(BODY + extra, source="t"))


def test_builtin_frameworks_and_listed_external_kinds_get_adapters() -> None:
    found = adapters()
    assert set(found.gvks) == {GroupVersionKind("batch", "v1", "Job"), JOBSET, PIPELINE, TRAINING, WIDGET}
    assert set(adapters("featureGates: {MultiKueueAdaptersForCustomJobs: false}\n").gvks) == {
        GroupVersionKind("batch", "v1", "Job"),
        JOBSET,
        PIPELINE,
    }


def test_declarative_kind_uses_its_managed_by_path_and_drop_list() -> None:
    adapter = adapters().get(TRAINING)
    assert adapter is not None
    local: dict[str, Any] = {
        "apiVersion": "ml.example.com/v1alpha1",
        "kind": "TrainingRun",
        "metadata": {"name": "t", "namespace": "ns", "uid": "u", "resourceVersion": "7"},
        "spec": {"owner": "kueue.x-k8s.io/multikueue", "cleanupAfter": "1h", "paused": True},
        "status": {"phase": "Pending"},
    }
    assert adapter.is_managed(local) == (True, "")
    assert adapter.is_managed({"spec": {"owner": "me"}}) == (
        False,
        'Expecting .spec.owner to be "kueue.x-k8s.io/multikueue" not "me"',
    )
    copy = adapter.remote_copy(local, workload_name="wl", origin="o")
    assert copy == {
        "apiVersion": "ml.example.com/v1alpha1",
        "kind": "TrainingRun",
        "metadata": {
            "name": "t",
            "namespace": "ns",
            "labels": {"kueue.x-k8s.io/multikueue-origin": "o"},
            "annotations": {"kueue.x-k8s.io/prebuilt-workload-name": "wl"},
        },
        "spec": {"paused": True},
    }
    assert local["spec"]["cleanupAfter"] == "1h"  # the local object is never modified


def test_generic_kind_message_and_whole_status_copy() -> None:
    adapter = adapters().get(WIDGET)
    assert adapter is not None
    assert adapter.is_managed({"spec": {}}) == (
        False,
        'Expecting .spec.managedBy to be "kueue.x-k8s.io/multikueue" not ""',
    )
    local = {"status": {"phase": "Running", "stale": 1}}
    sync = adapter.status_sync(local, {"status": {"phase": "Done"}}, now=NOW)
    assert sync.patch == {"status": {"phase": "Done", "stale": None}} and not sync.deferred
    assert adapter.status_sync(local, {"metadata": {}}, now=NOW).patch is None  # no remote status: no change
    assert adapter.status_sync(local, {"status": local["status"]}, now=NOW).patch is None


def test_jobset_copy_drops_the_ttl_kueue_issue_14734() -> None:
    adapter = adapters().get(JOBSET)
    assert adapter is not None
    copy = adapter.remote_copy(
        {
            "metadata": {"name": "js"},
            "spec": {"managedBy": "kueue.x-k8s.io/multikueue", "ttlSecondsAfterFinished": 5},
        },
        workload_name="wl",
        origin="o",
        workload_identifier_annotations=False,
    )
    assert copy["spec"] == {}
    assert copy["metadata"]["labels"]["kueue.x-k8s.io/prebuilt-workload-name"] == "wl"  # gate off: a label


@pytest.mark.parametrize("local_state", [None, "PipelineRunPending", "StoppedRunFinally", "Cancelled"])
def test_a_pipelinerun_copy_is_always_created_pending(local_state: str | None) -> None:
    """Re-dispatched after an eviction, the manager's PipelineRun carries tekton-kueue's graceful stop;
    the copy must not, or the worker's Tekton stops it before its first task."""
    adapter = adapters().get(PIPELINE)
    assert adapter is not None
    spec: dict[str, Any] = {"managedBy": "kueue.x-k8s.io/multikueue", "pipelineRef": {"name": "p"}}
    if local_state is not None:
        spec["status"] = local_state
    local: dict[str, Any] = {
        "apiVersion": "tekton.dev/v1",
        "kind": "PipelineRun",
        "metadata": {"name": "pr"},
        "spec": spec,
    }
    copy = adapter.remote_copy(local, workload_name="wl", origin="o")
    assert copy["spec"] == {"pipelineRef": {"name": "p"}, "status": "PipelineRunPending"}
    assert local["spec"].get("status") == local_state  # the local object is never modified


def test_other_kinds_copies_are_not_forced_into_a_state() -> None:
    adapter = adapters().get(JOBSET)
    assert adapter is not None
    local = {"metadata": {"name": "js"}, "spec": {"managedBy": "kueue.x-k8s.io/multikueue", "suspend": False}}
    assert adapter.remote_copy(local, workload_name="wl", origin="o")["spec"] == {"suspend": False}


def test_a_batch_job_mirror_never_breaks_kube_apiservers_job_status_rules() -> None:
    adapter = adapters().get(GroupVersionKind("batch", "v1", "Job"))
    assert adapter is not None
    local = {
        "spec": {"suspend": False},
        "status": {"startTime": "2026-01-01T00:00:00Z", "failed": 2, "active": 1},
    }
    fresh_copy = {"spec": {"suspend": False}, "status": {"active": 1, "failed": 0}}
    assert adapter.status_sync(local, fresh_copy, now=NOW).patch is None  # nothing it may change
    finished = {
        "spec": {"suspend": False},
        "status": {
            "startTime": "2026-01-01T00:05:00Z",
            "succeeded": 1,
            "failed": 3,
            "completionTime": "2026-01-01T00:06:00Z",
        },
    }
    sync = adapter.status_sync(local, finished, now=NOW)
    assert sync.patch == {  # an unsuspended Job's startTime never changes once set
        "status": {
            "succeeded": 1,
            "failed": 3,
            "completionTime": "2026-01-01T00:06:00Z",
            "active": None,
        }
    }
    suspended = {"spec": {"suspend": True}, "status": {"startTime": "2026-01-01T00:00:00Z"}}
    remote_suspended = {"spec": {"suspend": True}, "status": {}}
    assert adapter.status_sync(suspended, remote_suspended, now=NOW).patch == {"status": {"startTime": None}}
