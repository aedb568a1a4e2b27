"""Kueue's defaulting rules, one test per rule (reference §3.1)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from shared.constants import QUEUE_LABEL, WORKLOAD_PRIORITY_CLASS_LABEL
from shared.labelselector import LabelSelector
from tests.unit.webhook.helpers import BATCH_JOB, job, settings
from webhook.rules.defaulting import DefaultingError, default_job, find_managed_ancestor
from webhook.rules.lookups import InMemoryLookups

MK = "kueue.x-k8s.io/multikueue"
ALLOWED_PATHS = {
    "/metadata/labels",
    "/metadata/labels/kueue.x-k8s.io~1queue-name",
    "/metadata/labels/kueue.x-k8s.io~1priority-class",
    "/spec/suspend",
    "/spec/managedBy",
}


def run(
    obj: dict[str, Any], lookups: InMemoryLookups | None = None, **overrides: Any
) -> list[dict[str, Any]]:
    ops = default_job(
        obj, framework=BATCH_JOB, settings=settings(**overrides), lookups=lookups or InMemoryLookups()
    )
    for op in ops:
        assert op["op"] in ("add", "replace"), op
        assert op["path"] in ALLOWED_PATHS, op
    return ops


def test_queue_labelled_job_is_suspended() -> None:
    assert run(job(labels={QUEUE_LABEL: "q"})) == [{"op": "add", "path": "/spec/suspend", "value": True}]


def test_already_suspended_job_gets_no_patch() -> None:
    assert run(job(labels={QUEUE_LABEL: "q"}, suspend=True)) == []


def test_unlabelled_job_is_left_alone_without_manage_jobs_without_queue_name() -> None:
    assert run(job()) == []


def test_manage_jobs_without_queue_name_respects_the_namespace_selector() -> None:
    selector = LabelSelector.model_validate({"matchLabels": {"team": "a"}})
    lookups = InMemoryLookups(namespaces={"ns": {"team": "a"}, "other": {}})
    assert run(
        job(), lookups, manage_jobs_without_queue_name=True, managed_jobs_namespace_selector=selector
    ) == [{"op": "add", "path": "/spec/suspend", "value": True}]
    assert (
        run(
            job(namespace="other"),
            lookups,
            manage_jobs_without_queue_name=True,
            managed_jobs_namespace_selector=selector,
        )
        == []
    )


def test_unknown_namespace_is_an_error_when_a_selector_is_set() -> None:
    selector = LabelSelector.model_validate({"matchLabels": {"team": "a"}})
    with pytest.raises(DefaultingError, match=r'^Namespace "ns" not found$') as caught:
        run(job(), manage_jobs_without_queue_name=True, managed_jobs_namespace_selector=selector)
    assert caught.value.status == {
        "status": "Failure",
        "message": 'Namespace "ns" not found',
        "reason": "NotFound",
        "details": {"name": "ns", "kind": "Namespace"},
        "code": 404,
    }


def test_default_local_queue_label_added_with_labels_map() -> None:
    lookups = InMemoryLookups(local_queues={("ns", "default"): "cq"}, namespaces={"ns": {}})
    ops = run(job(), lookups)
    assert ops == [
        {"op": "add", "path": "/metadata/labels", "value": {QUEUE_LABEL: "default"}},
        {"op": "add", "path": "/spec/suspend", "value": True},
    ]


def test_default_local_queue_label_key_is_escaped_when_labels_exist() -> None:
    lookups = InMemoryLookups(local_queues={("ns", "default"): "cq"})
    ops = run(job(labels={"app": "x"}), lookups)
    assert {"op": "add", "path": "/metadata/labels/kueue.x-k8s.io~1queue-name", "value": "default"} in ops


def test_default_local_queue_skipped_outside_selected_namespaces() -> None:
    selector = LabelSelector.model_validate({"matchLabels": {"team": "a"}})
    lookups = InMemoryLookups(local_queues={("ns", "default"): "cq"}, namespaces={"ns": {"team": "b"}})
    assert run(job(), lookups, managed_jobs_namespace_selector=selector) == []


def owned(
    obj: dict[str, Any],
    kind: str = "JobSet",
    api_version: str = "jobset.x-k8s.io/v1alpha2",
    name: str = "parent",
    uid: str = "p-uid",
) -> dict[str, Any]:
    obj["metadata"]["ownerReferences"] = [
        {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid, "controller": True}
    ]
    return obj


def test_default_queue_and_priority_skipped_for_kueue_managed_owner() -> None:
    lookups = InMemoryLookups(local_queues={("ns", "default"): "cq"}, priority_classes={"default"})
    # the owner kind is a framework we serve (batch Job owning a Job) but the parent is not in the cache
    obj = owned(job(), kind="Job", api_version="batch/v1")
    with pytest.raises(DefaultingError, match=re.escape('Job.batch "parent" not found')):
        run(obj, lookups)
    lookups.put_owner(job("parent") | {"metadata": {"name": "parent", "namespace": "ns", "uid": "p-uid"}})
    assert run(owned(job(), kind="Job", api_version="batch/v1"), lookups) == []


def test_default_priority_class_only_when_it_exists() -> None:
    assert run(job(labels={"a": "b"})) == []
    ops = run(job(labels={"a": "b"}), InMemoryLookups(priority_classes={"default"}))
    assert ops == [
        {"op": "add", "path": "/metadata/labels/kueue.x-k8s.io~1priority-class", "value": "default"}
    ]
    assert (
        run(
            job(labels={WORKLOAD_PRIORITY_CLASS_LABEL: "high"}), InMemoryLookups(priority_classes={"default"})
        )
        == []
    )


def test_child_of_queue_labelled_managed_parent_is_not_suspended() -> None:
    lookups = InMemoryLookups()
    lookups.put_owner(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "parent", "namespace": "ns", "uid": "p-uid", "labels": {QUEUE_LABEL: "q"}},
        }
    )
    child = owned(job(labels={QUEUE_LABEL: "q"}), kind="Job", api_version="batch/v1")
    assert run(child, lookups) == []


def test_child_of_unlabelled_parent_is_suspended_when_labelled() -> None:
    lookups = InMemoryLookups()
    lookups.put_owner(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "parent", "namespace": "ns", "uid": "p-uid"},
        }
    )
    child = owned(job(labels={QUEUE_LABEL: "q"}), kind="Job", api_version="batch/v1")
    assert run(child, lookups) == [{"op": "add", "path": "/spec/suspend", "value": True}]


def test_stale_owner_uid_stops_the_walk() -> None:
    lookups = InMemoryLookups()
    lookups.put_owner(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "parent", "namespace": "ns", "uid": "other", "labels": {QUEUE_LABEL: "q"}},
        }
    )
    child = owned(job(labels={QUEUE_LABEL: "q"}), kind="Job", api_version="batch/v1")
    assert find_managed_ancestor(child, settings=settings(), lookups=lookups) is None


def test_unknown_owner_kind_is_not_followed() -> None:
    assert run(owned(job(labels={QUEUE_LABEL: "q"}), kind="CronJob", api_version="batch/v1")) == [
        {"op": "add", "path": "/spec/suspend", "value": True}
    ]


def test_cyclic_ownership_is_an_error() -> None:
    lookups = InMemoryLookups()
    a = owned(
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "a", "namespace": "ns", "uid": "a"}},
        kind="Job",
        api_version="batch/v1",
        name="b",
        uid="b",
    )
    b = owned(
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "b", "namespace": "ns", "uid": "b"}},
        kind="Job",
        api_version="batch/v1",
        name="a",
        uid="a",
    )
    lookups.put_owner(a)
    lookups.put_owner(b)
    with pytest.raises(DefaultingError, match="cyclic ownership"):
        run(
            owned(job(labels={QUEUE_LABEL: "q"}), kind="Job", api_version="batch/v1", name="a", uid="a"),
            lookups,
        )


def test_object_being_deleted_is_not_suspended() -> None:
    obj = job(labels={QUEUE_LABEL: "q"})
    obj["metadata"]["deletionTimestamp"] = "2030-01-01T00:00:00Z"
    assert run(obj) == []


def mk_lookups(controller: str = MK) -> InMemoryLookups:
    return InMemoryLookups(
        local_queues={("ns", "q"): "cq"},
        cluster_queue_checks={"cq": ["mk-check"]},
        admission_checks={"mk-check": controller},
    )


def test_managed_by_defaulted_behind_a_multikueue_check() -> None:
    ops = run(job(labels={QUEUE_LABEL: "q"}), mk_lookups())
    assert ops == [
        {"op": "add", "path": "/spec/suspend", "value": True},
        {"op": "add", "path": "/spec/managedBy", "value": MK},
    ]


def test_managed_by_not_defaulted_for_other_checks_or_other_managers() -> None:
    assert {"op": "add", "path": "/spec/managedBy", "value": MK} not in run(
        job(labels={QUEUE_LABEL: "q"}), mk_lookups("example.com/other")
    )
    assert run(job(labels={QUEUE_LABEL: "q"}, suspend=True, managedBy="example.com/x"), mk_lookups()) == []
    ops = run(
        job(labels={QUEUE_LABEL: "q"}, suspend=True, managedBy="kubernetes.io/job-controller"), mk_lookups()
    )
    assert ops == [{"op": "replace", "path": "/spec/managedBy", "value": MK}]


def test_our_own_multikueue_controller_name_counts() -> None:
    ours = "kueue-bridge.example.com/multikueue"
    ops = run(
        job(labels={QUEUE_LABEL: "q"}), mk_lookups(ours), multikueue_controller_names=frozenset({MK, ours})
    )
    assert {"op": "add", "path": "/spec/managedBy", "value": MK} in ops


def test_unknown_fields_are_never_removed() -> None:
    obj = job(labels={QUEUE_LABEL: "q"})
    obj["spec"]["someFutureField"] = {"x": [1, 2]}
    obj["status"] = {}
    assert run(obj) == [{"op": "add", "path": "/spec/suspend", "value": True}]


def test_the_multikueue_component_controller_name_counts_from_the_configuration() -> None:
    from shared.config import parse_config
    from webhook.settings_from_config import settings_from_config

    wired = settings_from_config(
        parse_config("apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n", source="t")
    )
    assert wired.multikueue_controller_names == {MK, "kueue-bridge.dev/multikueue"}
    custom = parse_config(
        "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
        "kueueBridge: {multiKueue: {controllerName: example.com/mk}}\n",
        source="t",
    )
    names = settings_from_config(custom).multikueue_controller_names
    ops = run(job(labels={QUEUE_LABEL: "q"}), mk_lookups("example.com/mk"), multikueue_controller_names=names)
    assert {"op": "add", "path": "/spec/managedBy", "value": MK} in ops
    assert not any(
        op["path"] == "/spec/managedBy"
        for op in run(job(labels={QUEUE_LABEL: "q"}), mk_lookups("example.com/mk"))
    )
