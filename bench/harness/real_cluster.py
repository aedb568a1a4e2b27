"""A real kube-apiserver and real Kueue for a benchmark (``bench.reconciler_cpu --real``, the webhook's).

* :func:`bench_cluster` and :func:`fresh`: the kit's cluster through ``testkit.RealCluster``, wiped
  for every round (a clean cluster: nothing garbage-collects there, and Workloads left from an
  earlier round would be finalized by the next one), with Kueue in external-framework mode
  (kueue-bridge manages batch Jobs) or in its normal mode (the anchor: Kueue manages them itself);
  :func:`cluster_pids` finds etcd, kube-apiserver and the manager.
* :class:`ApiserverMetrics` counts requests by verb and resource (``resource/subresource``) from
  kube-apiserver's own ``apiserver_request_total``, so one method counts ours and Kueue's alike, and
  reads how long the API server waited for each admission webhook.
* :class:`CountingTransport` counts the bench's own requests the same way (the job finisher's),
  to take them out of the API server's totals.
* :class:`Timeline` watches the bench namespace's Jobs and Workloads: when each Job was
  unsuspended, when each Workload was admitted, and which are finished with their finalizer gone.

The job finisher is the devcluster's job runner (``devcluster.standin.JobRunner``) pointed at the
real API server: the kit has no kube-controller-manager, and something must write the status a job
controller would (startTime, then succeeded/completionTime/SuccessCriteriaMet/Complete) for the
Workloads to finish.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import shutil
import ssl
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml
from prometheus_client.parser import text_string_to_metric_families

from bench.harness.components import Components
from bench.harness.load import wait_until
from devcluster.standin import JOBS, ApiClient, JobRunner, Resource, WatchedObjects
from shared.constants import RESOURCE_IN_USE_FINALIZER, WORKLOAD_GVK
from shared.kube import JOB_GVK, EventType, KubeClient, Watch
from testkit import KueueMode, RealCluster, RealClusterPorts, find_kit

__all__ = [
    "ApiserverMetrics",
    "ApiserverSnapshot",
    "CountingTransport",
    "JobsWhere",
    "Timeline",
    "bench_cluster",
    "cluster_pids",
    "fresh",
    "job_finisher",
    "measured_processes",
]

Census = dict[tuple[str, str], float]


def bench_cluster(state: Path) -> RealCluster:
    """The benchmark's cluster, its state below ``state`` (wiped by :func:`fresh`). Ports and token
    come from the kit's variables when this environment sets them (``API_PORT``, ``ETCD_CLIENT_PORT``,
    ``ETCD_PEER_PORT``, ``WEBHOOK_PORT``, ``HEALTH_ADDR``, ``METRICS_ADDR``, ``ADMIN_TOKEN``: a port
    block handed out on a shared machine), else they are free ones."""
    env = os.environ
    names = ("API_PORT", "ETCD_CLIENT_PORT", "ETCD_PEER_PORT", "WEBHOOK_PORT", "HEALTH_ADDR", "METRICS_ADDR")
    ports = RealClusterPorts.free()
    if all(env.get(name) for name in names):
        ports = RealClusterPorts(
            api=int(env["API_PORT"]),
            etcd_client=int(env["ETCD_CLIENT_PORT"]),
            etcd_peer=int(env["ETCD_PEER_PORT"]),
            kueue_webhook=int(env["WEBHOOK_PORT"]),
            kueue_health=int(env["HEALTH_ADDR"].rpartition(":")[2]),
            kueue_metrics=int(env["METRICS_ADDR"].rpartition(":")[2]),
        )
    cluster = RealCluster(kit=find_kit(), name="bench", state=state, ports=ports)
    if env.get("ADMIN_TOKEN"):
        cluster.admin_token = env["ADMIN_TOKEN"]
    return cluster


def fresh(cluster: RealCluster, *, kueue_mode: KueueMode) -> None:
    """A clean cluster: the old one stopped and its state deleted (nothing garbage-collects on the
    kit's cluster, and Workloads left by an earlier round would be finalized during the next one),
    then kube-apiserver with Kueue's CRDs and Kueue in ``kueue_mode``."""
    cluster.stop()
    shutil.rmtree(cluster.state, ignore_errors=True)
    cluster.start_apiserver()
    cluster.start_kueue(mode=kueue_mode)


def cluster_pids(cluster: RealCluster) -> dict[str, int]:
    """``etcd``, ``kube-apiserver`` and ``kueue-manager`` -> PID, from the kit's ``pids`` files."""
    found: dict[str, int] = {}
    for state in (cluster.apiserver_state, cluster.kueue_state):
        with contextlib.suppress(OSError):
            for line in (state / "pids").read_text().splitlines():
                parts = line.split()
                if len(parts) >= 2 and parts[1].isdigit():
                    found[parts[0]] = int(parts[1])
    return found


def measured_processes(cluster: RealCluster, components: Components | None) -> dict[str, int]:
    """Name -> PID of every process a round measures: the cluster's, this bench's, and our webhook and
    reconciler when ``components`` run (else Kueue's manager is the job controller)."""
    pids = cluster_pids(cluster)
    processes = {
        "kueue-manager": pids["kueue-manager"],
        "kube-apiserver": pids["kube-apiserver"],
        "etcd": pids["etcd"],
        "bench": os.getpid(),
    }
    if components is not None:
        assert components.reconciler.pid is not None and components.webhook.pid is not None
        processes["reconciler"] = components.reconciler.pid
        processes["webhook"] = components.webhook.pid
    return processes


def _access(kubeconfig: Path) -> tuple[str, str, str]:
    """Server URL, bearer token and CA PEM of the kit's kubeconfig."""
    config = yaml.safe_load(kubeconfig.read_text())
    cluster = config["clusters"][0]["cluster"]
    ca = base64.b64decode(cluster["certificate-authority-data"]).decode()
    return cluster["server"], config["users"][0]["user"]["token"], ca


def _resource_of(path: str) -> str:
    """``plural[/subresource]`` of a request path (``/apis/g/v/namespaces/ns/plural/name/sub``)."""
    parts = [part for part in path.split("?")[0].split("/") if part]
    parts = parts[1:] if parts[:1] == ["api"] else parts[3:] if parts[:1] == ["apis"] else parts
    if parts[:1] == ["namespaces"] and len(parts) > 2:
        parts = parts[2:]
    if len(parts) >= 3:
        return f"{parts[0]}/{parts[2]}"
    return parts[0] if parts else ""


def _verb_of(method: str, path: str, query: str) -> str:
    parts = [part for part in path.split("/") if part]
    named = len(parts) % 2 == 0 if parts[:1] == ["apis"] else len(parts) % 2 == 1
    if "namespaces" in parts and parts.index("namespaces") + 2 == len(parts):
        named = True  # a namespace object itself
    if method == "GET":
        return "watch" if "watch=true" in query else "get" if named else "list"
    return {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(method, method)


class CountingTransport(httpx.AsyncBaseTransport):
    """An httpx transport that counts its requests by ``(verb, plural[/subresource])``."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self._inner = inner
        self.counts: Census = {}

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        path, query = request.url.path, request.url.query.decode()
        key = (_verb_of(request.method, path, query), _resource_of(path))
        self.counts[key] = self.counts.get(key, 0.0) + 1
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


#: kube-apiserver's verb labels -> the client verbs our metrics use
_APISERVER_VERBS = {
    "POST": "create",
    "PUT": "update",
    "PATCH": "patch",
    "APPLY": "apply",
    "GET": "get",
    "LIST": "list",
    "WATCH": "watch",
    "DELETE": "delete",
    "DELETECOLLECTION": "deletecollection",
}


@dataclass(frozen=True)
class ApiserverSnapshot:
    """What kube-apiserver's ``/metrics`` said at one moment (counters: take differences)."""

    requests: Census
    #: admission webhook name -> (seconds, calls): ``apiserver_admission_webhook_admission_duration_seconds``
    webhooks: dict[str, tuple[float, float]]
    #: resource -> bytes of watch events sent to all its watchers (``apiserver_watch_events_sizes``)
    watch_bytes: dict[str, float]
    #: resource -> watches open now (``apiserver_longrunning_requests{verb="WATCH"}``)
    watchers: dict[str, float]
    #: admission webhook name -> cumulative calls per upper bound (``le``) of the same histogram
    webhook_buckets: dict[str, dict[float, float]] = field(default_factory=dict)

    def bytes_per_watcher_since(self, before: ApiserverSnapshot) -> dict[str, float]:
        """Resource -> bytes of watch events one watcher of it received since ``before``: what any
        client watching the resource (ours, Kueue) decoded, whatever its language."""
        return {
            resource: (sent - before.watch_bytes.get(resource, 0.0)) / self.watchers[resource]
            for resource, sent in self.watch_bytes.items()
            if self.watchers.get(resource)
        }

    def webhook_latency_since(self, before: ApiserverSnapshot) -> dict[str, tuple[float, float]]:
        """Webhook name -> (calls, mean milliseconds per call) between ``before`` and this snapshot."""
        result = {}
        for name, (seconds, calls) in self.webhooks.items():
            old_seconds, old_calls = before.webhooks.get(name, (0.0, 0.0))
            if calls > old_calls:
                result[name] = (calls - old_calls, (seconds - old_seconds) / (calls - old_calls) * 1000)
        return result


class ApiserverMetrics:
    """kube-apiserver's ``apiserver_request_total`` by (verb, ``resource[/subresource]``), and the
    time it spent calling each admission webhook."""

    def __init__(self, kubeconfig: Path) -> None:
        self._server, token, ca = _access(kubeconfig)
        self._headers = {"Authorization": f"Bearer {token}"}
        self._verify = ssl.create_default_context(cadata=ca)

    async def snapshot(self) -> ApiserverSnapshot:
        async with httpx.AsyncClient(verify=self._verify, timeout=30.0) as http:
            text = (await http.get(f"{self._server}/metrics", headers=self._headers)).text
        counts: Census = {}
        webhooks: dict[str, tuple[float, float]] = {}
        watch_bytes: dict[str, float] = {}
        watchers: dict[str, float] = {}
        webhook_buckets: dict[str, dict[float, float]] = {}
        for family in text_string_to_metric_families(text):
            if family.name == "apiserver_watch_events_sizes":
                for sample in family.samples:
                    if sample.name.endswith("_sum"):
                        resource = sample.labels.get("resource", "")
                        watch_bytes[resource] = watch_bytes.get(resource, 0.0) + sample.value
            if family.name == "apiserver_longrunning_requests":
                for sample in family.samples:
                    if sample.labels.get("verb") == "WATCH":
                        resource = sample.labels.get("resource", "")
                        watchers[resource] = watchers.get(resource, 0.0) + sample.value
            if family.name == "apiserver_admission_webhook_admission_duration_seconds":
                for sample in family.samples:
                    name = sample.labels.get("name", "")
                    seconds, calls = webhooks.get(name, (0.0, 0.0))
                    if sample.name.endswith("_bucket"):
                        bounds = webhook_buckets.setdefault(name, {})
                        bound = float(sample.labels.get("le", "+Inf"))
                        bounds[bound] = bounds.get(bound, 0.0) + sample.value
                    if sample.name.endswith("_sum"):
                        webhooks[name] = (seconds + sample.value, calls)
                    elif sample.name.endswith("_count"):
                        webhooks[name] = (seconds, calls + sample.value)
            if family.name != "apiserver_request":
                continue
            for sample in family.samples:
                if sample.name != "apiserver_request_total":
                    continue
                labels = sample.labels
                resource = labels.get("resource", "")
                if labels.get("subresource"):
                    resource = f"{resource}/{labels['subresource']}"
                verb = _APISERVER_VERBS.get(labels.get("verb", ""), labels.get("verb", "").lower())
                key = (verb, resource)
                counts[key] = counts.get(key, 0.0) + sample.value
        return ApiserverSnapshot(
            requests=counts,
            webhooks=webhooks,
            watch_bytes=watch_bytes,
            watchers=watchers,
            webhook_buckets=webhook_buckets,
        )


def census_delta(after: Census, before: Census, *minus: Census) -> Census:
    """``after - before - sum(minus)``, dropping keys that come to zero or below."""
    result: Census = {}
    for key, value in after.items():
        left = value - before.get(key, 0.0) - sum(counts.get(key, 0.0) for counts in minus)
        if left > 0:
            result[key] = left
    return result


class JobsWhere:
    """The Jobs of ``source`` that are running (``spec.suspend`` not true) or, with
    ``running=False``, queued: one of the job finisher's two runners sees each."""

    def __init__(self, source: WatchedObjects, *, running: bool) -> None:
        self._source = source
        self._running = running

    async def list(
        self, resource: Resource, *, keep: Callable[[dict[str, Any]], bool] | None = None
    ) -> list[dict[str, Any]]:
        running = self._running

        def wanted(obj: dict[str, Any]) -> bool:  # filtered before the source copies anything
            return ((obj.get("spec") or {}).get("suspend") is not True) == running and (
                keep is None or keep(obj)
            )

        return await self._source.list(resource, keep=wanted)


@contextlib.asynccontextmanager
async def job_finisher(
    kubeconfig: Path, *, run_seconds: float, concurrency: int = 1
) -> AsyncIterator[CountingTransport]:
    """The devcluster's job runner against the real API server, watching Jobs (its requests counted).

    ``concurrency``: how many Jobs' status it writes at once. At 1 it is the devcluster's runner as
    the devcluster runs it. Above 1 (``bench.scale``: three writes per Job at tens of Jobs per
    second do not fit one at a time; finishing must keep up, or the quota stays full and admission
    stalls) two runners share the watched Jobs, each writing up to ``concurrency`` at once with
    unpaced passes (a pass spent waiting on writes is not followed by as long a pause): one for the
    running Jobs (started, finished: what releases the ClusterQueue's quota), one for the queued
    ones (their ``Suspended`` condition). With one runner, a pass writing the ``Suspended``
    condition of a thousand queued Jobs on a loaded API server took most of a minute, and the
    running Jobs waited for its end to be finished."""
    server, token, ca = _access(kubeconfig)
    with tempfile.NamedTemporaryFile("w", suffix=".crt") as ca_file:
        ca_file.write(ca)
        ca_file.flush()
        transport = CountingTransport(httpx.AsyncHTTPTransport(verify=ssl.create_default_context(cadata=ca)))
        client = ApiClient(url=server, token=token, ca_file=ca_file.name, transport=transport)
        jobs = WatchedObjects(client=client, resources=(JOBS,))
        sources: list[WatchedObjects | JobsWhere] = (
            [jobs] if concurrency == 1 else [JobsWhere(jobs, running=True), JobsWhere(jobs, running=False)]
        )
        runners = [
            JobRunner(
                client=client,
                poll_interval=0.2,
                default_run_seconds=run_seconds,
                objects=source,
                wake=jobs.changed,
                concurrency=concurrency,
                paced=concurrency == 1,
            )
            for source in sources
        ]
        following = asyncio.create_task(jobs.run())
        running = [asyncio.create_task(runner.run()) for runner in runners]
        try:
            yield transport
        finally:
            for task in running:
                task.cancel()
            await jobs.stop(following)
            await asyncio.gather(following, *running, return_exceptions=True)
            await client.aclose()


def _conditions_true(obj: dict[str, Any]) -> set[str]:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return {str(c.get("type")) for c in conditions if isinstance(c, dict) and c.get("status") == "True"}


def _has_condition(obj: dict[str, Any], condition_type: str) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(isinstance(c, dict) and c.get("type") == condition_type for c in conditions)


def _owner_job(workload: dict[str, Any]) -> str | None:
    for reference in (workload.get("metadata") or {}).get("ownerReferences") or []:
        if reference.get("kind") == "Job":
            return str(reference.get("name"))
    return None


@dataclass
class Timeline:
    """When each Job of the namespace (``None``: of every namespace) was unsuspended and each Workload
    admitted (monotonic seconds)."""

    namespace: str | None
    unsuspended: dict[str, float] = field(default_factory=dict)
    admitted: dict[str, float] = field(default_factory=dict)  # by owner job name
    workload_seen: dict[str, float] = field(default_factory=dict)  # by owner job name
    #: owner jobs whose Workload had no ``PodsReady`` condition yet when it was seen admitted: the
    #: reconciler writes ``WaitForStart`` first (Kueue's step 5), then starts the job
    admitted_before_pods_ready: set[str] = field(default_factory=set)
    _pods_ready_seen: set[str] = field(default_factory=set)
    done: set[str] = field(default_factory=set)  # Workloads finished and released
    workloads: set[str] = field(default_factory=set)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    async def watch_jobs(self, client: KubeClient) -> None:
        async for event in Watch(client, JOB_GVK, namespace=self.namespace).events():
            if event.type not in (EventType.ADDED, EventType.MODIFIED):
                continue
            name = event.object["metadata"]["name"]
            if (event.object.get("spec") or {}).get("suspend") is False and name not in self.unsuspended:
                self.unsuspended[name] = time.monotonic()
                self.changed.set()

    async def watch_workloads(self, client: KubeClient) -> None:
        async for event in Watch(client, WORKLOAD_GVK, namespace=self.namespace).events():
            if event.type in (EventType.ADDED, EventType.MODIFIED):
                self.saw_workload(event.object)

    def saw_workload(self, workload: dict[str, Any]) -> None:
        """Record one added or modified Workload."""
        metadata = workload["metadata"]
        self.workloads.add(metadata["name"])
        true = _conditions_true(workload)
        owner = _owner_job(workload)
        if owner is not None:
            self.workload_seen.setdefault(owner, time.monotonic())
            if _has_condition(workload, "PodsReady"):
                self._pods_ready_seen.add(owner)
            if "Admitted" in true and owner not in self.admitted:
                self.admitted[owner] = time.monotonic()
                if owner not in self._pods_ready_seen:
                    self.admitted_before_pods_ready.add(owner)
        if "Finished" in true and RESOURCE_IN_USE_FINALIZER not in (metadata.get("finalizers") or []):
            self.done.add(metadata["name"])
        self.changed.set()

    async def wait(self, predicate: Any, *, within: float, what: str) -> None:
        await wait_until(
            predicate,
            self.changed,
            within=within,
            failure=lambda: (
                f"after {within:.0f}s: {what} not reached ({len(self.unsuspended)} unsuspended, "
                f"{len(self.admitted)} admitted, {len(self.done)} finished and released)"
            ),
        )
