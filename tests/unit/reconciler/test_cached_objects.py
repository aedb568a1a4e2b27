"""Reconciles read the informer's cached objects without copying them, and never change them.

``InformerReader`` hands the managed jobs, Workloads and ResourceFlavors out uncopied; the job
reconciler wraps each job in ``shared.frameworks.copy_on_write.CopyOnWriteJob`` and only parses Workloads.
Here the reader hands out the fake cluster's *stored* dicts themselves (as the informer does)
through whole lives -- create, admit, start, run, evict, the three-write stop, requeue, finish,
release, delete -- and every dict it handed out must be exactly as it was when handed out.
"""

from __future__ import annotations

import contextlib
import copy
from typing import Any

import pytest

from reconciler.job_reconciler import JobReconciler
from reconciler.ports import JobKey, JobStillActiveError
from shared.frameworks.batch_job import BatchJobAdapter
from shared.frameworks.capabilities import has_custom_stop, has_managed_by, has_reclaimable_pods
from shared.frameworks.copy_on_write import MUTATORS, CopyOnWriteJob, copy_on_write
from shared.frameworks.declarative import DeclarativeFramework
from shared.frameworks.spec import DeclarativeAdapterSpec
from shared.kube import GroupVersionKind
from shared.kueue.podset import pod_set_info_from_pod_set
from tests.unit.reconciler.conftest import admit, golden_job, job_key
from tests.unit.reconciler.fakes import FakeCluster
from tests.unit.reconciler.test_job_lifecycle import WORKLOAD, evict
from tests.unit.reconciler.test_stop_started_job import STARTED, set_job_status

WireDict = dict[str, Any]


class SharingReader:
    """The fake cluster's reads, but Jobs, Workloads and ResourceFlavors come back uncopied, as
    ``InformerReader`` hands them out: like an informer's cache, the same object for as long as the
    stored one is unchanged, a new one when it changed (the tests change stored objects in place,
    which an informer's objects never are)."""

    SHARED = frozenset({"Job", "Workload", "ResourceFlavor"})

    def __init__(self, cluster: FakeCluster) -> None:
        self.cluster = cluster
        self.handed_out: list[tuple[WireDict, WireDict]] = []
        self._cache: dict[tuple[str, ...], tuple[WireDict, WireDict]] = {}

    def _hand_out(self, stored: WireDict) -> WireDict:
        key = FakeCluster._key_of(stored)
        cached = self._cache.get(key)
        if cached is None or cached[1] != stored:
            cached = self._cache[key] = (copy.deepcopy(stored), copy.deepcopy(stored))
        self.handed_out.append((cached[0], copy.deepcopy(cached[0])))
        return cached[0]

    async def get(self, gvk: GroupVersionKind, namespace: str | None, name: str) -> WireDict | None:
        if gvk.kind not in self.SHARED:
            return await self.cluster.get(gvk, namespace, name)
        stored = self.cluster.objects.get((gvk.group, gvk.kind, namespace or "", name))
        return self._hand_out(stored) if stored is not None else None

    async def workloads_owned_by(
        self, *, namespace: str, owner_gvk: GroupVersionKind, owner_name: str
    ) -> list[WireDict]:
        copies = await self.cluster.workloads_owned_by(
            namespace=namespace, owner_gvk=owner_gvk, owner_name=owner_name
        )
        names = {(c["metadata"]["namespace"], c["metadata"]["name"]) for c in copies}
        return [
            self._hand_out(obj)
            for key, obj in sorted(self.cluster.objects.items())
            if key[1] == "Workload" and (key[2], key[3]) in names
        ]

    async def list_priority_classes(self) -> list[WireDict]:
        return await self.cluster.list_priority_classes()

    def assert_untouched(self) -> None:
        """Every object handed out since the last check is as it was then (the test itself may
        change stored objects afterwards, as the Job controller or Kueue would)."""
        assert self.handed_out, "nothing was read"
        for handed, snapshot in self.handed_out:
            assert handed == snapshot
        self.handed_out.clear()


@pytest.fixture
def sharing(cluster: FakeCluster) -> SharingReader:
    return SharingReader(cluster)


@pytest.fixture
def shared_reconciler(make_reconciler: Any, sharing: SharingReader) -> JobReconciler:
    reconciler: JobReconciler = make_reconciler()
    reconciler._reader = sharing
    reconciler._workloads._reader = sharing
    reconciler._workloads._priority._reader = sharing
    return reconciler


async def reconcile(reconciler: JobReconciler, sharing: SharingReader, times: int = 6) -> None:
    for _ in range(times):
        with contextlib.suppress(JobStillActiveError):  # requeued by the controller
            await reconciler.reconcile(job_key())
    sharing.assert_untouched()


async def test_a_whole_life_with_a_three_write_stop_never_changes_a_cached_job(
    cluster: FakeCluster, sharing: SharingReader, shared_reconciler: JobReconciler
) -> None:
    cluster.add(golden_job())
    await reconcile(shared_reconciler, sharing)
    admit(cluster, WORKLOAD)
    await reconcile(shared_reconciler, sharing)
    job = cluster.find("Job", "golden", "sample")
    assert job is not None and job["spec"]["suspend"] is False, "started"
    set_job_status(cluster, {"startTime": STARTED, "active": 1})
    await reconcile(shared_reconciler, sharing)
    evict(cluster, reason="Preempted", message="Preempted to accommodate a workload")
    writes = len(cluster.writes)
    await reconcile(shared_reconciler, sharing)

    set_job_status(cluster, {"active": 0})  # the job controller deleted the pod: the restore may go
    await reconcile(shared_reconciler, sharing)

    job_writes = [(w.verb, w.subresource) for w in cluster.writes[writes:] if w.kind == "Job"]
    # suspend, clear startTime; once no pod is active: restore
    assert job_writes == [("patch", None), ("patch", "status"), ("patch", None)], "the stop happened"


async def test_the_same_reconciles_without_sharing_write_the_same(
    cluster: FakeCluster, make_reconciler: Any
) -> None:
    """The copy-on-write path makes exactly the writes of the copying path (same life as above)."""
    results = []
    for shared in (False, True):
        fake = FakeCluster()
        fake.objects = copy.deepcopy(cluster.objects)
        subject: JobReconciler = make_reconciler()
        reader: Any = SharingReader(fake) if shared else fake
        for part in (subject, subject._workloads, subject._workloads._priority):
            part._reader = reader
        subject._writer = subject._workloads._writer = subject._control._writer = fake
        fake.add(golden_job())
        for step in ("create", "admit", "run", "evict"):
            if step == "admit":
                admit(fake, WORKLOAD)
            elif step == "run":
                set_job_status(fake, {"startTime": STARTED, "active": 1})
            elif step == "evict":
                evict(fake, reason="Preempted", message="Preempted to accommodate a workload")
            for _ in range(6):
                with contextlib.suppress(JobStillActiveError):  # requeued by the controller
                    await subject.reconcile(job_key())
        for write in fake.writes:  # the fake gives created objects random UIDs
            (write.body.get("metadata") or {}).pop("uid", None)
        results.append([(w.verb, w.kind, w.subresource, w.body) for w in fake.writes])
    assert results[0] == results[1]


async def test_finish_release_and_delete_never_change_cached_objects(
    cluster: FakeCluster, sharing: SharingReader, shared_reconciler: JobReconciler
) -> None:
    cluster.add(golden_job())
    await reconcile(shared_reconciler, sharing)
    admit(cluster, WORKLOAD)
    await reconcile(shared_reconciler, sharing)
    set_job_status(cluster, {"startTime": STARTED, "active": 2, "ready": 2})
    await reconcile(shared_reconciler, sharing)
    set_job_status(
        cluster, {"succeeded": 4, "conditions": [{"type": "Complete", "status": "True", "message": "done"}]}
    )
    await reconcile(shared_reconciler, sharing)
    workload = cluster.find("Workload", "golden", WORKLOAD)
    assert workload is not None and workload["metadata"]["finalizers"] == [], "finished and released"
    cluster.add(golden_job(name="second", uid="second-uid"))
    second = JobKey(job_key().gvk, "golden", "second")
    for _ in range(3):
        await shared_reconciler.reconcile(second)
    sharing.assert_untouched()
    del cluster.objects[next(k for k in cluster.objects if k[1] == "Job" and k[3] == "second")]
    for _ in range(3):
        await shared_reconciler.reconcile(second)
    sharing.assert_untouched()


async def test_a_changed_template_updates_the_workload_without_changing_cached_objects(
    cluster: FakeCluster, sharing: SharingReader, shared_reconciler: JobReconciler
) -> None:
    cluster.add(golden_job())
    await reconcile(shared_reconciler, sharing)
    job = cluster.objects[next(k for k in cluster.objects if k[1] == "Job")]
    job["spec"]["template"]["spec"]["containers"][0]["image"] = "busybox:2"
    writes = len(cluster.writes)
    await reconcile(shared_reconciler, sharing)
    assert any(w.kind == "Workload" and w.verb == "update" for w in cluster.writes[writes:])


def test_mutators_copy_first_and_reads_do_not() -> None:
    cached = golden_job()
    snapshot = copy.deepcopy(cached)
    job = copy_on_write(BatchJobAdapter(cached), BatchJobAdapter)
    assert job.is_suspended() and job.pod_sets() and not job.owned
    assert job.obj is cached, "reads use the cached object itself"

    job.suspend()
    assert job.owned and job.obj is not cached and cached == snapshot

    job.obj["spec"]["suspend"] = False  # the private copy belongs to the job now
    assert cached == snapshot


@pytest.mark.parametrize("mutator", sorted(MUTATORS - {"set_managed_by"}))
def test_every_generic_job_mutator_leaves_the_cached_object_alone(mutator: str) -> None:
    cached = golden_job(suspend=False)
    snapshot = copy.deepcopy(cached)
    job = copy_on_write(BatchJobAdapter(cached), BatchJobAdapter)
    pod_set = job.pod_sets()[0]
    args: dict[str, tuple[Any, ...]] = {
        "suspend": (),
        "run_with_pod_sets_info": ([pod_set_info_from_pod_set(pod_set)],),
        "restore_pod_sets_info": ([pod_set_info_from_pod_set(pod_set)],),
    }
    getattr(job, mutator)(*args[mutator])
    assert job.owned
    assert cached == snapshot


def test_set_managed_by_copies_first() -> None:
    cached = golden_job()
    job: Any = copy_on_write(BatchJobAdapter(cached), BatchJobAdapter)
    job.set_managed_by("kueue.x-k8s.io/multikueue")
    assert job.managed_by() == "kueue.x-k8s.io/multikueue"
    assert "managedBy" not in cached["spec"]


def _declarative(spec: dict[str, Any]) -> DeclarativeFramework:
    return DeclarativeFramework(
        DeclarativeAdapterSpec.model_validate(spec), gvk=GroupVersionKind("example.com", "v1", "Thing")
    )


def test_the_wrapper_has_exactly_the_adapters_optional_capabilities() -> None:
    batch = copy_on_write(BatchJobAdapter(golden_job()), BatchJobAdapter)
    assert (has_custom_stop(batch), has_managed_by(batch), has_reclaimable_pods(batch)) == (True, True, True)
    plain = _declarative(
        {
            "suspend": {"path": "spec.suspend"},
            "podSets": [{"name": "main", "template": "spec.template"}],
            "finished": "false",
        }
    )
    thing = {"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t"}, "spec": {}}
    wrapped = copy_on_write(plain(thing), plain)
    assert isinstance(wrapped, CopyOnWriteJob)
    assert (has_custom_stop(wrapped), has_managed_by(wrapped), has_reclaimable_pods(wrapped)) == (
        has_custom_stop(plain(thing)),
        has_managed_by(plain(thing)),
        has_reclaimable_pods(plain(thing)),
    )
