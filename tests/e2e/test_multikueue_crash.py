"""Crash-restart: SIGKILL ``kueue-bridge multikueue`` at random points of a 300-job dispatch.

A manager and two workers (devclusters with the Kueue stand-in, the job runner and kueue-bridge's
reconciler); the MultiKueue controller runs as a real process that is killed (SIGKILL: no drain, no
Lease release) three times at random moments while it leads -- each time some jobs are being
dispatched, some copies admitted but without their job, some jobs running or finishing -- and
started again (a new identity, so it waits for the dead leader's Lease to expire, as after a real
crash). The last one is then starved instead (SIGSTOP until its Lease has expired, SIGCONT), as a
loaded node starves a process past its renew deadline: it must hold the Lease again and go on
working (having stopped leading and won a new term, unless a renewal was in flight when it was
stopped: its answer, read on waking, counts as a renewal, as in client-go).

Asserted: every job finishes on the manager; no job is ever created on two workers, nor twice on
one (every remote Job ever seen, by name, has one uid); after the garbage collector nothing of ours
is left on either worker. The seed is printed so a failing run can be repeated
(``KUEUE_BRIDGE_CRASH_SEED``). A wait that times out fails with what was stuck: every unfinished
manager Workload (conditions, MultiKueue check, cluster) beside the workers' copies and jobs, every
copy or job of ours still on a worker, and the end of each multikueue process's log.

Timing on a loaded machine. The processes use component-base's Lease timings (15 s lease, 10 s
renew deadline, 2 s retry), not the 2 s / 1.5 s / 0.5 s of the other process tests: a process at
nice 19 on a busy 2-core machine gets no CPU for longer than 1.5 s many times a minute, and each time
loses the Lease and starts a new term that lists all 300 Workloads again -- measured at load 10-14,
25 to 55 terms per process, terms of 3-5 s, and a dispatch that stopped progressing. A takeover
after a kill then waits up to 15 s more, which the test can afford. No wait bounds the dispatch's
total time either: the waits for jobs to finish and for the workers to be cleaned fail when nothing
changed for ``STALLED_SECONDS`` -- stuck, not slow -- and every wait for a leader allows as long.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
from collections import defaultdict
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from shared.kube import GroupVersionKind, KubeClient, Watch
from tests.e2e.multikueue_support import JOB, NAMESPACE, WORKLOAD, Fleet, condition, fleet, new_job
from tests.e2e.test_reconciler_support import ReconcilerProcess, write_config
from tests.polling import eventually, while_progressing

pytestmark = [pytest.mark.e2e, pytest.mark.needs_shared, pytest.mark.slow]

JOBS = int(os.environ.get("KUEUE_BRIDGE_CRASH_JOBS", "300"))
ORIGIN = "kueue.x-k8s.io/multikueue-origin"
LEASE = GroupVersionKind("coordination.k8s.io", "v1", "Lease")
#: no job finished (or no object of ours removed) for this long means stuck: room for a few Lease
#: takeovers, each a process start and a re-list of every Workload, at nice 19 on a busy 2-core machine
STALLED_SECONDS = 180.0
BECAME_LEADER = "became leader"
RENEW_FAILED = "failed to renew the lease within the renew deadline"
#: component-base's defaults: a stall shorter than the renew deadline keeps the Lease
LEADER_ELECTION = {"leaseDuration": "15s", "renewDeadline": "10s", "retryPeriod": "2s"}


async def record_jobs(client: KubeClient, worker: str, seen: dict[str, set[tuple[str, str]]]) -> None:
    async for event in Watch(client, JOB, namespace=NAMESPACE).events():
        metadata = event.object.get("metadata") or {}
        if metadata.get("name"):
            seen[metadata["name"]].add((worker, str(metadata.get("uid"))))


async def finished_count(f: Fleet) -> int:
    items = (await f.manager.list_all(WORKLOAD, namespace=NAMESPACE)).items
    return sum(1 for item in items if (condition(item, "Finished") or {}).get("status") == "True")


def at_least(target: int) -> Callable[[int], bool]:
    return lambda count: count >= target


async def ours_left(f: Fleet) -> int:
    left = 0
    for client in f.workers.values():
        for gvk in (WORKLOAD, JOB):
            left += len(
                (await client.list_all(gvk, namespace=NAMESPACE, label_selector=f"{ORIGIN}=multikueue")).items
            )
    return left


def leads(process: ReconcilerProcess) -> Callable[[], Awaitable[bool]]:
    """The process has logged that it became the leader."""
    return lambda: asyncio.sleep(
        0, f"became leader lease=kueue-bridge-multikueue identity={process.identity}" in process.log()
    )


async def lease_expired(client: KubeClient) -> bool:
    """The multikueue Lease has not been renewed for its whole duration."""
    spec = (await client.get(LEASE, "kueue-bridge-multikueue", namespace="kueue-system")).get("spec") or {}
    renewed = datetime.fromisoformat(str(spec["renewTime"]))
    return (datetime.now(UTC) - renewed).total_seconds() > float(spec["leaseDurationSeconds"])


async def renewed_by(client: KubeClient, identity: str, *, after: datetime) -> bool:
    """The multikueue Lease is held by ``identity`` and was renewed after ``after``."""
    spec = (await client.get(LEASE, "kueue-bridge-multikueue", namespace="kueue-system")).get("spec") or {}
    renewed = datetime.fromisoformat(str(spec["renewTime"]))
    return spec.get("holderIdentity") == identity and renewed > after


def _conditions(obj: dict[str, Any] | None) -> str:
    items = ((obj or {}).get("status") or {}).get("conditions") or []
    return " ".join(f"{c.get('type')}={c.get('status')}/{c.get('reason')}" for c in items) or "-"


async def _copies(f: Fleet, gvk: Any) -> dict[str, dict[str, dict[str, Any]]]:
    """worker -> name -> object, for the Workloads or jobs of ``gvk`` in the test namespace."""
    found: dict[str, dict[str, dict[str, Any]]] = {}
    for worker, client in f.workers.items():
        items = (await client.list_all(gvk, namespace=NAMESPACE)).items
        found[worker] = {str(item["metadata"]["name"]): item for item in items}
    return found


async def stuck_report(f: Fleet, processes: list[ReconcilerProcess], *, limit: int = 15) -> str:
    """What a timed-out wait was waiting on: unfinished manager Workloads with their copies and
    jobs, objects of ours left on the workers, the tail of every multikueue process's log."""
    lines: list[str] = []
    workloads = (await f.manager.list_all(WORKLOAD, namespace=NAMESPACE)).items
    copies, jobs = await _copies(f, WORKLOAD), await _copies(f, JOB)
    unfinished = [w for w in workloads if (condition(w, "Finished") or {}).get("status") != "True"]
    lines.append(f"{len(unfinished)} of {len(workloads)} manager Workloads not finished:")
    for workload in unfinished[:limit]:
        name = str(workload["metadata"]["name"])
        owners: list[dict[str, Any]] = workload["metadata"].get("ownerReferences") or [{}]
        owner = owners[0].get("name")
        status = workload.get("status") or {}
        checks = [
            f"{c.get('name')}={c.get('state')} {c.get('message')!r}"
            for c in status.get("admissionChecks") or []
        ]
        lines.append(
            f"  {name} (job {owner}) rv={workload['metadata'].get('resourceVersion')} "
            f"{_conditions(workload)} checks={checks} clusterName={status.get('clusterName')} "
            f"nominated={status.get('nominatedClusterNames')}"
        )
        for worker in f.workers:
            copy, job = copies[worker].get(name), jobs[worker].get(str(owner))
            lines.append(
                f"    {worker}: copy={'-' if copy is None else _conditions(copy)} "
                f"job={'-' if job is None else _conditions(job)}"
            )
    for worker in f.workers:
        ours = [
            f"{kind} {name}"
            for kind, objects in (("Workload", copies[worker]), ("Job", jobs[worker]))
            for name, obj in objects.items()
            if ((obj.get("metadata") or {}).get("labels") or {}).get(ORIGIN) == "multikueue"
        ]
        lines.append(f"  {worker}: {len(ours)} of ours left: {ours[:limit]}")
    for process in processes:
        tail = process.log().splitlines()[-20:]
        lines.append(f"  --- {process.identity} (exit {process.returncode()}) log tail:")
        lines.extend(f"    {line}" for line in tail)
    return "\n".join(lines)


async def test_sigkill_mid_dispatch_then_restart_converges(
    devcluster_factory: Any, shared_dir: Path, tmp_path: Path
) -> None:
    seed = int(os.environ.get("KUEUE_BRIDGE_CRASH_SEED", random.SystemRandom().randrange(1 << 30)))
    print(f"KUEUE_BRIDGE_CRASH_SEED={seed}")
    rng = random.Random(seed)
    kill_at = sorted(rng.sample(range(max(1, JOBS // 20), max(2, JOBS * 9 // 10)), 3))
    async with fleet(
        devcluster_factory,
        shared_dir,
        multikueue="multiKueue: {gcInterval: 2s}\n",
        worker_cpu={"w1": "2", "w2": "2"},
        run_multikueue=False,
    ) as f:
        seen: dict[str, set[tuple[str, str]]] = defaultdict(set)
        recorders = [
            asyncio.create_task(record_jobs(client, name, seen)) for name, client in f.workers.items()
        ]
        config = write_config(
            tmp_path / "config.yaml",
            extra={
                "namespace": "kueue-system",
                "multiKueue": {"gcInterval": "2s"},
                "leaderElection": LEADER_ELECTION,
            },
        )
        processes: list[ReconcilerProcess] = []

        def start(identity: str) -> ReconcilerProcess:
            process = ReconcilerProcess(
                config=config,
                kubeconfig=f.clusters["manager"].kubeconfig_path,
                identity=identity,
                log_path=tmp_path / f"{identity}.log",
                component="multikueue",
            ).start()
            processes.append(process)
            return process

        # listing 300 Workloads is not free on a shared event loop: both poll twice a second
        async def wait(check: Callable[[], Awaitable[bool]], *, what: str) -> None:
            try:
                await eventually(check, what=what, within_seconds=STALLED_SECONDS, interval=0.5)
            except AssertionError as exc:
                raise AssertionError(f"{exc}\n{await stuck_report(f, processes)}") from None

        async def progress(
            measure: Callable[[], Awaitable[int]], *, done: Callable[[int], bool], what: str
        ) -> None:
            try:
                await while_progressing(
                    measure, done=done, what=what, stalled_seconds=STALLED_SECONDS, interval=0.5
                )
            except AssertionError as exc:
                raise AssertionError(f"{exc}\n{await stuck_report(f, processes)}") from None

        try:
            current = start("mk-0")
            for index in range(JOBS):
                await f.manager.create(
                    JOB, new_job(f"j{index:03d}", run_seconds=0.3, cpu="100m"), namespace=NAMESPACE
                )
            for number, threshold in enumerate(kill_at, start=1):
                # killed while leading: the manager's own Workload controller keeps finishing the
                # Workloads whose job status was already mirrored, so a threshold can pass while
                # the next process is still starting; such a kill would exercise nothing
                await wait(leads(current), what=f"{current.identity} leading")
                await progress(
                    lambda: finished_count(f),
                    done=at_least(threshold),
                    what=f"{threshold} finished",
                )
                current.kill()
                await asyncio.to_thread(current.wait)
                current = start(f"mk-{number}")

            # starve the last one past its renew deadline: it must hold the Lease again and go on;
            # if it stopped leading (the rule, see the module docstring), a new term must follow
            process = current
            await wait(leads(process), what=f"{process.identity} leading")
            stops, terms = process.log().count(RENEW_FAILED), process.log().count(BECAME_LEADER)
            os.kill(process.pid, signal.SIGSTOP)
            try:
                await wait(lambda: lease_expired(f.manager), what="the starved leader's Lease expired")
            finally:
                os.kill(process.pid, signal.SIGCONT)
                resumed = datetime.now(UTC)

            async def leads_again() -> bool:
                log = process.log()
                if log.count(RENEW_FAILED) > stops and log.count(BECAME_LEADER) <= terms:
                    return False
                return await renewed_by(f.manager, process.identity, after=resumed)

            await wait(leads_again, what=f"{process.identity} holding the Lease again after its starvation")
            await progress(lambda: finished_count(f), done=at_least(JOBS), what=f"all {JOBS} finished")
            await progress(
                lambda: ours_left(f), done=lambda n: n == 0, what="nothing of ours left on the workers"
            )
        finally:
            for process in processes:
                process.kill()
                with contextlib.suppress(Exception):
                    await asyncio.to_thread(process.wait)
            for task in recorders:
                task.cancel()
            for task in recorders:
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        duplicates = {name: copies for name, copies in seen.items() if len(copies) > 1}
        assert not duplicates, f"jobs created more than once: {duplicates}"
        assert len(seen) == JOBS
        print(f"killed after {kill_at} finished jobs, then starved the last leader; every job ran once")
