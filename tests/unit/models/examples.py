"""Example objects with every modelled field set, and a check that they really are complete.

Examples are written with *Python* (snake_case) field names and parsed with ``model_validate``, so
``to_wire()`` has to produce the camelCase names itself: a wrong alias, or a field the model
declares under a name the CRD does not have, shows up as an unknown field in the CRD-schema test.
Raw-dict fields (pod templates, topology requests/assignments) are wire data and use wire names.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from shared.models.multikueue import MultiKueueCluster, MultiKueueConfig
from shared.models.queue import ClusterQueue, LocalQueue
from shared.models.workload import Workload

__all__ = ["full_examples", "unset_fields"]

_TIME = "2026-11-22T02:34:03Z"


def _conditions(condition_type: str) -> list[dict[str, Any]]:
    return [
        {
            "type": condition_type,
            "status": "True",
            "reason": condition_type,
            "message": f"{condition_type} for the test",
            "last_transition_time": _TIME,
            "observed_generation": 3,
        }
    ]


def _metadata(name: str, *, namespace: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "generate_name": f"{name}-",
        "uid": "129ba24d-8fd3-4bf2-b3e7-e9e1ec8418f7",
        "resource_version": "3982",
        "generation": 3,
        "creation_timestamp": _TIME,
        "deletion_timestamp": _TIME,
        "deletion_grace_period_seconds": 0,
        "labels": {"kueue.x-k8s.io/job-uid": "6b817d4a"},
        "annotations": {"team": "ml"},
        "owner_references": [
            {
                "api_version": "batch/v1",
                "kind": "Job",
                "name": "sample",
                "uid": "6b817d4a",
                "controller": True,
                "block_owner_deletion": True,
            }
        ],
        "finalizers": ["kueue.x-k8s.io/resource-in-use"],
    }
    if namespace is not None:
        meta["namespace"] = namespace
    return meta


POD_TEMPLATE: dict[str, Any] = {
    "metadata": {"labels": {"app": "sample"}, "annotations": {"team": "ml"}},
    "spec": {
        "containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}],
        "restartPolicy": "Never",
        "nodeSelector": {"zone": "a"},
    },
}

TOPOLOGY_REQUEST: dict[str, Any] = {
    "required": "cloud.com/block",
    "preferred": "cloud.com/rack",
    "unconstrained": False,
    "podIndexLabel": "batch.kubernetes.io/job-completion-index",
    "subGroupIndexLabel": "jobset.sigs.k8s.io/job-index",
    "subGroupCount": 2,
    "podSetGroupName": "group",
    "podSetSliceRequiredTopology": "cloud.com/rack",
    "podSetSliceSize": 2,
    "podsetSliceRequiredTopologyConstraints": [{"topology": "cloud.com/rack", "size": 2}],
}

TOPOLOGY_ASSIGNMENT_V1BETA2: dict[str, Any] = {
    "levels": ["cloud.com/block", "kubernetes.io/hostname"],
    "slices": [
        {
            "domainCount": 2,
            "podCounts": {"individual": [1, 3]},
            "valuesPerLevel": [
                {"universal": "block-a"},
                {"individual": {"prefix": "node-", "roots": ["1", "2"], "suffix": ".local"}},
            ],
        }
    ],
}


def workload_example() -> dict[str, Any]:
    return {
        "metadata": _metadata("job-sample-43252", namespace="golden"),
        "spec": {
            "pod_sets": [
                {
                    "name": "main",
                    "template": POD_TEMPLATE,
                    "count": 4,
                    "min_count": 2,
                    "topology_request": TOPOLOGY_REQUEST,
                }
            ],
            "queue_name": "golden-q",
            "priority_class_ref": {
                "group": "kueue.x-k8s.io",
                "kind": "WorkloadPriorityClass",
                "name": "high",
            },
            "priority": 1000,
            "active": True,
            "maximum_execution_time_seconds": 600,
            "preemption_gates": [{"name": "example.com/gate"}],
        },
        "status": {
            "conditions": _conditions("QuotaReserved"),
            "admission": {
                "cluster_queue": "golden-cq",
                "pod_set_assignments": [
                    {
                        "name": "main",
                        "flavors": {"cpu": "golden-spot"},
                        "resource_usage": {"cpu": "4"},
                        "count": 4,
                        "topology_assignment": TOPOLOGY_ASSIGNMENT_V1BETA2,
                        "delayed_topology_request": "Ready",
                    }
                ],
            },
            "requeue_state": {"count": 1, "requeue_at": _TIME},
            "reclaimable_pods": [{"name": "main", "count": 1}],
            "admission_checks": [
                {
                    "name": "multikueue",
                    "state": "Ready",
                    "last_transition_time": _TIME,
                    "message": "dispatched",
                    "requeue_after_seconds": 10,
                    "retry_count": 1,
                    "pod_set_updates": [
                        {
                            "name": "main",
                            "labels": {"a": "b"},
                            "annotations": {"c": "d"},
                            "node_selector": {"zone": "a"},
                            "tolerations": [{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}],
                        }
                    ],
                }
            ],
            "resource_requests": [{"name": "main", "resources": {"cpu": "4"}}],
            "accumulated_past_execution_time_seconds": 11,
            "scheduling_stats": {"evictions": [{"reason": "Deactivated", "underlyingCause": "", "count": 1}]},
            "nominated_cluster_names": ["worker-1"],
            "cluster_name": "worker-1",
            "unhealthy_nodes": [{"name": "node-1"}],
            "preemption_gates": [
                {"name": "example.com/gate", "position": "Open", "last_transition_time": _TIME}
            ],
        },
    }


def local_queue_example() -> dict[str, Any]:
    usage = [{"name": "golden-spot", "resources": [{"name": "cpu", "total": "2"}]}]
    return {
        "metadata": _metadata("golden-q", namespace="golden"),
        "spec": {"cluster_queue": "golden-cq", "stop_policy": "Hold", "fair_sharing": {"weight": "2"}},
        "status": {
            "conditions": _conditions("Active"),
            "pending_workloads": 1,
            "reserving_workloads": 2,
            "admitted_workloads": 2,
            "flavors_reservation": usage,
            "flavors_usage": usage,
            "fair_sharing": {"weightedShare": 0},
        },
    }


def cluster_queue_example() -> dict[str, Any]:
    usage = [{"name": "golden-spot", "resources": [{"name": "cpu", "total": 2, "borrowed": "0"}]}]
    return {
        "metadata": _metadata("golden-cq"),
        "spec": {
            "resource_groups": [
                {
                    "covered_resources": ["cpu", "memory"],
                    "flavors": [
                        {
                            "name": "golden-spot",
                            "resources": [
                                {
                                    "name": "cpu",
                                    "nominal_quota": 10,
                                    "borrowing_limit": 2,
                                    "lending_limit": 1,
                                },
                                {"name": "memory", "nominal_quota": "10Gi"},
                            ],
                        }
                    ],
                }
            ],
            "cohort_name": "all",
            "queueing_strategy": "StrictFIFO",
            "namespace_selector": {
                "match_labels": {"team": "ml"},
                "match_expressions": [{"key": "env", "operator": "In", "values": ["prod"]}],
            },
            "flavor_fungibility": {
                "when_can_borrow": "TryNextFlavor",
                "when_can_preempt": "MayStopSearch",
                "preference": "BorrowingOverPreemption",
            },
            "preemption": {
                "reclaim_within_cohort": "Any",
                "borrow_within_cohort": {"policy": "LowerPriority", "max_priority_threshold": 100},
                "within_cluster_queue": "LowerPriority",
            },
            "admission_checks_strategy": {
                "admission_checks": [{"name": "multikueue", "on_flavors": ["golden-spot"]}]
            },
            "stop_policy": "None",
            "fair_sharing": {"weight": 1},
            "admission_scope": {"admission_mode": "UsageBasedAdmissionFairSharing"},
            "concurrent_admission_policy": {"migration": {"mode": "TryPreferredFlavors"}},
        },
        "status": {
            "conditions": _conditions("Active"),
            "pending_workloads": 1,
            "reserving_workloads": 2,
            "admitted_workloads": 2,
            "flavors_reservation": usage,
            "flavors_usage": usage,
            "fair_sharing": {"weightedShare": 10},
        },
    }


def multikueue_config_example() -> dict[str, Any]:
    return {
        "metadata": _metadata("workers"),
        "spec": {"clusters": ["worker-1", "worker-2"], "quota_management": "Manual"},
    }


def multikueue_cluster_example() -> dict[str, Any]:
    # The CRD's CEL rule allows only one source; CEL is not evaluated, so both are set to cover both.
    return {
        "metadata": _metadata("worker-1"),
        "spec": {
            "cluster_source": {
                "kube_config": {"location": "worker-1-kubeconfig", "location_type": "Secret"},
                "cluster_profile_ref": {"name": "worker-1"},
            }
        },
        "status": {"conditions": _conditions("Active")},
    }


def full_examples() -> dict[str, tuple[type[BaseModel], dict[str, Any]]]:
    """Model class and snake_case example, by kind."""
    return {
        "Workload": (Workload, workload_example()),
        "LocalQueue": (LocalQueue, local_queue_example()),
        "ClusterQueue": (ClusterQueue, cluster_queue_example()),
        "MultiKueueConfig": (MultiKueueConfig, multikueue_config_example()),
        "MultiKueueCluster": (MultiKueueCluster, multikueue_cluster_example()),
    }


def unset_fields(model: BaseModel, *, exempt: frozenset[str] = frozenset()) -> list[str]:
    """Declared fields that are ``None`` or empty everywhere they occur in ``model`` (paths with
    ``[]`` for list items), except ``exempt`` ones. A field is covered if *any* list item sets it."""
    declared: set[str] = set()
    covered: set[str] = set()
    _walk(model, "", declared=declared, covered=covered)
    return sorted(declared - covered - exempt)


def _walk(model: BaseModel, path: str, *, declared: set[str], covered: set[str]) -> None:
    for name in type(model).model_fields:
        field_path = f"{path}.{name}" if path else name
        declared.add(field_path)
        value = getattr(model, name)
        if value is None or value == [] or value == {}:
            continue
        covered.add(field_path)
        if isinstance(value, BaseModel):
            _walk(value, field_path, declared=declared, covered=covered)
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, BaseModel):
                    _walk(item, f"{field_path}[]", declared=declared, covered=covered)
