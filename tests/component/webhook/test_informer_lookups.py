"""InformerLookups against the devcluster: every answer comes from the caches and follows changes."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from shared.constants import MULTIKUEUE_CONTROLLER_NAME
from shared.kube import KubeClient, WatchSettings
from tests.e2e.conftest import devcluster, devcluster_factory, eventually, install_crds, kube_client
from tests.unit.webhook.helpers import BATCH_JOB, settings
from webhook.informer_lookups import (
    ADMISSION_CHECK_GVK,
    CLUSTER_QUEUE_GVK,
    LOCAL_QUEUE_GVK,
    NAMESPACE_GVK,
    WORKLOAD_PRIORITY_CLASS_GVK,
    InformerLookups,
    cluster_queue_check_names,
)
from webhook.rules.lookups import ObjectKey, OwnerCacheNotReady

pytestmark = pytest.mark.needs_shared
__all__ = ["devcluster", "devcluster_factory"]  # fixtures used below

KUEUE_CRDS = ("localqueues", "clusterqueues", "admissionchecks", "workloadpriorityclasses")


@contextlib.asynccontextmanager
async def running(lookups: InformerLookups) -> AsyncIterator[InformerLookups]:
    task = asyncio.create_task(lookups.run())
    try:
        yield lookups
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def new_lookups(client: KubeClient) -> InformerLookups:
    return InformerLookups(
        client=client,
        settings=settings(),
        watch_settings=WatchSettings(backoff_initial=0.05, backoff_max=0.3),
        absent_kind_probe_interval=0.1,
    )


def test_check_names_read_both_the_v1beta1_list_and_the_strategy() -> None:
    queue = {
        "spec": {
            "admissionChecks": ["a", 3],
            "admissionChecksStrategy": {"admissionChecks": [{"name": "b"}, {"name": "a"}, "junk"]},
        }
    }
    assert cluster_queue_check_names(queue) == ["a", "b"]
    assert cluster_queue_check_names({"spec": None}) == []


async def test_lookups_follow_the_cluster(devcluster, kueue_crd_dir: Path) -> None:
    async with kube_client(devcluster.kubeconfig_path) as client:
        await install_crds(client, [kueue_crd_dir / f"kueue.x-k8s.io_{name}.yaml" for name in KUEUE_CRDS])
        async with running(new_lookups(client)) as lookups:
            assert await lookups.wait_synced(timeout_seconds=20)
            assert BATCH_JOB.owner_key in lookups.owners
            # owner caches fill on the first question about their kind
            with pytest.raises(OwnerCacheNotReady):
                lookups.owner(ObjectKey("batch/v1", "Job", "team", "parent"))
            assert await lookups.wait_owner_cache(api_version="batch/v1", kind="Job", timeout_seconds=20)
            await client.create(NAMESPACE_GVK, {"metadata": {"name": "team", "labels": {"tier": "gold"}}})
            await client.create(WORKLOAD_PRIORITY_CLASS_GVK, {"metadata": {"name": "default"}, "value": 10})
            await client.create(
                ADMISSION_CHECK_GVK,
                {"metadata": {"name": "mk"}, "spec": {"controllerName": MULTIKUEUE_CONTROLLER_NAME}},
            )
            await client.create(
                CLUSTER_QUEUE_GVK,
                {
                    "metadata": {"name": "cq"},
                    "spec": {
                        "admissionChecksStrategy": {"admissionChecks": [{"name": "mk"}, {"name": "gone"}]}
                    },
                },
            )
            await client.create(
                LOCAL_QUEUE_GVK,
                {"metadata": {"name": "default", "namespace": "team"}, "spec": {"clusterQueue": "cq"}},
            )
            owner = await client.create(
                BATCH_JOB.gvk,
                {
                    "metadata": {"name": "parent", "namespace": "team"},
                    "spec": {
                        "template": {
                            "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}
                        }
                    },
                },
            )

            async def all_seen() -> bool:
                return bool(
                    lookups.namespace_labels("team")
                    and lookups.workload_priority_class_exists("default")
                    and lookups.admission_check_controllers("cq")
                    and lookups.local_queue_exists("team", "default")
                    and lookups.owner(ObjectKey("batch/v1", "Job", "team", "parent"))
                )

            await eventually(all_seen, what="every object in the caches")
            assert lookups.namespace_labels("team") == {"tier": "gold", "kubernetes.io/metadata.name": "team"}
            assert lookups.namespace_labels("nope") is None
            assert lookups.cluster_queue_for("team", "default") == "cq"
            assert list(lookups.admission_check_controllers("cq")) == [MULTIKUEUE_CONTROLLER_NAME]
            cached_owner = lookups.owner(ObjectKey("batch/v1", "Job", "team", "parent"))
            assert cached_owner is not None and cached_owner["metadata"]["uid"] == owner["metadata"]["uid"]
            assert lookups.owner(ObjectKey("v1", "ConfigMap", "team", "parent")) is None

            await client.delete(LOCAL_QUEUE_GVK, "default", namespace="team")
            await client.delete(ADMISSION_CHECK_GVK, "mk")

            async def gone() -> bool:
                return not lookups.local_queue_exists(
                    "team", "default"
                ) and not lookups.admission_check_controllers("cq")

            await eventually(gone, what="deletions to reach the caches")
            assert lookups.cluster_queue_for("team", "default") is None


async def test_owner_kinds_do_not_block_readiness_but_kueue_crds_do(devcluster, kueue_crd_dir: Path) -> None:
    async with kube_client(devcluster.kubeconfig_path) as client, running(new_lookups(client)) as lookups:

        async def namespaces_listed() -> bool:
            return lookups.namespaces.has_synced

        await eventually(namespaces_listed, what="the Namespace informer to sync")
        assert not lookups.synced()
        assert set(lookups.unsynced()) == {
            f"kueue.x-k8s.io/v1beta2, Kind={kind}"
            for kind in ("LocalQueue", "ClusterQueue", "AdmissionCheck", "WorkloadPriorityClass")
        }
        await install_crds(client, [kueue_crd_dir / f"kueue.x-k8s.io_{name}.yaml" for name in KUEUE_CRDS])
        assert await lookups.wait_synced(timeout_seconds=20)
        assert lookups.unsynced() == []
        # no owner informer runs until an admission asks about its kind
        assert not any(informer.has_synced for informer in lookups.owners.values())


async def test_an_owner_cache_fills_on_the_first_question_and_an_unserved_kind_is_empty(devcluster) -> None:
    async with kube_client(devcluster.kubeconfig_path) as client, running(new_lookups(client)) as lookups:
        replica_set = ObjectKey("apps/v1", "ReplicaSet", "default", "rs")
        with pytest.raises(OwnerCacheNotReady) as raised:
            lookups.owner(replica_set)
        assert (raised.value.api_version, raised.value.kind) == ("apps/v1", "ReplicaSet")
        # the devcluster serves no apps/v1: discovery says absent, so the (empty) cache counts as synced
        assert await lookups.wait_owner_cache(api_version="apps/v1", kind="ReplicaSet", timeout_seconds=20)
        assert lookups.owner(replica_set) is None
        assert not lookups.owners[("apps/v1", "ReplicaSet")].has_synced
        assert not lookups.owners[BATCH_JOB.owner_key].has_synced  # only the kind asked about started
