"""CPU per job of the reconciler (and per admission of the webhook) over whole job lifecycles.

For ``--jobs`` batch/v1 Jobs on a devcluster, each living its full life -- created (the webhook
suspends it) -> Workload created -> admitted by the Kueue stand-in -> started by the reconciler ->
run and completed by the job runner -> Workload finished and its finalizer released -- this prints:

* the **reconciler process's CPU seconds** (user + system, all threads, read from ``/proc/<pid>/stat``
  of the process itself) from just before the first create until the reconciler is quiet again,
  divided by the number of jobs;
* that CPU split into watch decoding, reconcile logic, API writes (encode + HTTP/TLS), events,
  informer/queue overhead and the event loop's I/O callbacks, from a py-spy sample of the process
  (``bench/profile_breakdown.py`` says how a stack is sorted); the raw sample is written next to
  the output (``--out``), with the most sampled functions printed;
* the **webhook process's CPU seconds per admission** over the same window (admissions counted from
  the webhook's own ``/metrics``), with the webhook in the path exactly as ``kueue-bridge dev``
  registers it (``devrun.components``: URL client config, our CA as caBundle);
* the **devcluster process's CPU seconds per job** over the same window (API server, Kueue
  stand-in and job runner together), so a change to the devcluster's write path shows;
* what the reconciler did per job (reconciles, API requests by verb, watch events, Events written),
  from its ``/metrics``, so a change in CPU can be told from a change in work;
* the **peak resident memory** (``VmHWM``) of the reconciler and the webhook at the end of the round:
  every job and Workload is still cached then (finished ones are not deleted), which is what the
  memory requests and limits of ``kueue-bridge manifests`` are set from.

Processes: the devcluster with the stand-in and the job runner (``kueue-bridge devcluster
--kueue-standin --job-runner``, uvloop), the webhook and the reconciler (``kueue-bridge webhook`` /
``reconciler``, as deployed) and this process (creates the jobs, watches the Workloads). CPU seconds
of one process are far less sensitive to a busy machine than wall time, but not immune (caches,
frequency, more wake-ups per event when everything is slower), so ``/proc/loadavg`` is printed with
each round. The configuration is the deployed default apart from the dev settings (no leader
election, the webhook's address); ``--qps`` raises the client rate limit.

    .venv/bin/python bench/reconciler_cpu.py [--jobs 1000] [--rounds 3] [--out DIR] [--no-profile]

``--real`` runs the same lives on a real kube-apiserver with real Kueue scheduling, from the kit of
``../shared/real-cluster`` (``bench/real_rounds.py`` says what it prints), each round also on the
devcluster for the ratio real/devcluster (``--no-devcluster`` skips that), and with ``--anchor kueue``
real Kueue managing the same Jobs itself, interleaved:

    .venv/bin/python bench/reconciler_cpu.py --real --anchor kueue --jobs 500 --rounds 3 --no-profile
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import signal
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml
from prometheus_client.parser import text_string_to_metric_families

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.common import bench_client, queued_job, wait_until  # noqa: E402
from bench.devcluster import devcluster_process  # noqa: E402
from bench.profile_breakdown import PARTS, Breakdown, read_breakdown, top_functions  # noqa: E402
from devrun.components import (  # noqa: E402
    ComponentProcess,
    free_port,
    generate_certs,
    register_webhooks,
    render_webhook_manifests,
)
from devrun.identities import run_as  # noqa: E402
from devrun.samples import crd_files, install_crds  # noqa: E402
from shared.config import load_config  # noqa: E402
from shared.constants import CLUSTER_QUEUE_GVK, LOCAL_QUEUE_GVK, RESOURCE_FLAVOR_GVK, WORKLOAD_GVK  # noqa: E402
from shared.kube import (  # noqa: E402
    GroupVersionKind,
    KubeClient,
)
from shared.kube.kinds import JOB_GVK, NAMESPACE_GVK  # noqa: E402
from shared.kube.watch import EventType, Watch  # noqa: E402

__all__ = ["main"]

JOB = JOB_GVK
BENCH_NAMESPACE = "bench"
#: Kueue's namespace, and the components' (the bench's configuration)
KUEUE_NAMESPACE = "kueue-system"
RESOURCE_IN_USE = "kueue.x-k8s.io/resource-in-use"
#: seconds the lifecycle of every job may take before the bench gives up
LIFECYCLE_TIMEOUT = 900.0
#: the reconciler counts as quiet once it used less than this share of one CPU over QUIET_WINDOW
QUIET_SHARE = 0.02
QUIET_WINDOW = 1.0


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used so far (Linux ``/proc``), all threads included."""
    return sum(process_cpu_split(pid))


def process_cpu_split(pid: int) -> tuple[float, float]:
    """(user, system) CPU seconds a process has used so far (``/proc/<pid>/stat``, all threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def process_peak_rss_mib(pid: int) -> float:
    """The process's peak resident memory so far (``VmHWM`` of ``/proc/<pid>/status``), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def job_body(index: int, *, run_seconds: float) -> dict[str, Any]:
    """A queued Job as a user writes it: no ``suspend`` (the webhook adds it)."""
    return queued_job(f"job-{index}", queue="bench", cpu="10m", run_seconds=run_seconds)


def client_for(kubeconfig: Path) -> KubeClient:
    return bench_client(kubeconfig, qps=100000)


async def setup_queues(client: KubeClient, *, jobs: int, install: bool = True) -> None:
    """The bench namespace and queues; with ``install``, the CRDs and ``kueue-system`` first (a
    devcluster starts empty; the real cluster's kit has both)."""
    if install:
        files, _ = crd_files()
        await install_crds(client, files)
        await client.create(NAMESPACE_GVK, {"metadata": {"name": KUEUE_NAMESPACE}})
    quota = str(max(jobs, 10))  # 10m per job: every job fits at once
    objects: list[tuple[GroupVersionKind, dict[str, Any]]] = [
        (NAMESPACE_GVK, {"metadata": {"name": BENCH_NAMESPACE}}),
        (RESOURCE_FLAVOR_GVK, {"metadata": {"name": "default-flavor"}}),
        (
            CLUSTER_QUEUE_GVK,
            {
                "metadata": {"name": "bench"},
                "spec": {
                    "namespaceSelector": {},
                    "resourceGroups": [
                        {
                            "coveredResources": ["cpu"],
                            "flavors": [
                                {
                                    "name": "default-flavor",
                                    "resources": [{"name": "cpu", "nominalQuota": quota}],
                                }
                            ],
                        }
                    ],
                },
            },
        ),
        (
            LOCAL_QUEUE_GVK,
            {"metadata": {"name": "bench", "namespace": BENCH_NAMESPACE}, "spec": {"clusterQueue": "bench"}},
        ),
    ]
    for gvk, body in objects:  # kube-apiserver wants apiVersion and kind in every body
        await client.create(gvk, {"apiVersion": gvk.api_version, "kind": gvk.kind, **body})


@dataclass
class Components:
    webhook: ComponentProcess
    reconciler: ComponentProcess
    webhook_metrics: str
    reconciler_metrics: str
    verify: ssl.SSLContext


def write_config(
    path: Path,
    *,
    webhook_port: int,
    cert_dir: Path,
    probe_port: int,
    qps: int | None,
    reconcile_concurrency: int | None = None,
) -> Path:
    config: dict[str, Any] = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "namespace": KUEUE_NAMESPACE,
        "integrations": {"frameworks": ["batch/job"]},
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "webhook": {"host": "127.0.0.1", "port": webhook_port, "certDir": str(cert_dir)},
        "health": {"healthProbeBindAddress": f"127.0.0.1:{probe_port}"},
        "metrics": {"bindAddress": "0"},
    }
    if qps is not None:
        config["clientConnection"] = {"qps": float(qps), "burst": qps}
    if reconcile_concurrency is not None:
        config["controller"] = {"groupKindConcurrency": {"Job.batch": reconcile_concurrency}}
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


async def start_components(
    stack: contextlib.AsyncExitStack,
    *,
    tmp: Path,
    kubeconfig: Path,
    client: KubeClient,
    qps: int | None,
    reconcile_concurrency: int | None = None,
    reconciler_identity: bool = False,
) -> Components:
    """The webhook (ready, then registered as ``kueue-bridge dev`` does) and the reconciler (healthy).

    ``reconciler_identity`` (a real cluster only: it needs the TokenRequest API and RBAC): the
    reconciler runs as its own ServiceAccount with the Roles ``kueue-bridge manifests`` grants it, as
    in a deployment, instead of as the admin; the validating webhook then does not see its updates
    (``shared.webhook_configurations``)."""
    cert_dir = tmp / "certs"
    ca_pem = generate_certs(cert_dir)
    webhook_port, probe_port = free_port(), free_port()
    config = write_config(
        tmp / "config.yaml",
        webhook_port=webhook_port,
        cert_dir=cert_dir,
        probe_port=probe_port,
        qps=qps,
        reconcile_concurrency=reconcile_concurrency,
    )
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    url = f"https://127.0.0.1:{webhook_port}"
    common = ("--config", str(config), "--kubeconfig", str(kubeconfig))
    webhook = ComponentProcess(
        name="webhook",
        args=("webhook", *common, "--cert-dir", str(cert_dir)),
        log_path=tmp / "webhook.log",
        health_url=f"{url}/readyz",
        env=env,
        ca_pem=ca_pem,
    )
    stack.push_async_callback(webhook.stop)
    await webhook.start()
    documents = await render_webhook_manifests(config=config, url=url, env=env)
    await register_webhooks(client, documents, ca_pem=ca_pem)
    reconciler_kubeconfig = kubeconfig
    if reconciler_identity:
        reconciler_kubeconfig = await run_as(
            client,
            "reconciler",
            config=load_config(config),
            admin_kubeconfig=kubeconfig,
            target=tmp / "reconciler.kubeconfig",
            kueue_namespace=KUEUE_NAMESPACE,
        )
    reconciler = ComponentProcess(
        name="reconciler",
        args=(
            "reconciler",
            "--config",
            str(config),
            "--kubeconfig",
            str(reconciler_kubeconfig),
            "--probe-address",
            f"127.0.0.1:{probe_port}",
        ),
        log_path=tmp / "reconciler.log",
        health_url=f"http://127.0.0.1:{probe_port}/healthz",
        env={**env, "KUBECONFIG": str(reconciler_kubeconfig)},
    )
    stack.push_async_callback(reconciler.stop)
    await reconciler.start()
    return Components(
        webhook=webhook,
        reconciler=reconciler,
        webhook_metrics=f"{url}/metrics",
        reconciler_metrics=f"http://127.0.0.1:{probe_port}/metrics",
        verify=ssl.create_default_context(cadata=ca_pem.decode()),
    )


# --- metrics --------------------------------------------------------------------------------------
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


async def scrape(url: str, *, verify: ssl.SSLContext | bool = True) -> Samples:
    async with httpx.AsyncClient(verify=verify, timeout=10.0) as http:
        text = (await http.get(url)).text
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def total(samples: Samples, name: str, **labels: str) -> float:
    """Sum of ``name`` over every label set containing ``labels``."""
    return sum(
        value
        for (sample, sample_labels), value in samples.items()
        if sample == name and set(labels.items()) <= set(sample_labels)
    )


def by_label(samples: Samples, name: str, label: str) -> dict[str, float]:
    sums: dict[str, float] = {}
    for (sample, labels), value in samples.items():
        if sample == name:
            key = dict(labels).get(label, "")
            sums[key] = sums.get(key, 0.0) + value
    return sums


def delta(after: dict[str, float], before: dict[str, float]) -> dict[str, float]:
    return {key: value - before.get(key, 0.0) for key, value in after.items() if value - before.get(key, 0.0)}


# --- the lifecycle watch --------------------------------------------------------------------------
class Lifecycles:
    """Watches the bench namespace's Workloads: which are finished with their finalizer released."""

    def __init__(self) -> None:
        self.done: set[str] = set()
        self.workloads: set[str] = set()
        self.changed = asyncio.Event()

    async def watch(self, client: KubeClient) -> None:
        async for event in Watch(client, WORKLOAD_GVK, namespace=BENCH_NAMESPACE).events():
            if event.type not in (EventType.ADDED, EventType.MODIFIED):
                continue
            metadata = event.object["metadata"]
            self.workloads.add(metadata["name"])
            conditions = (event.object.get("status") or {}).get("conditions") or []
            finished = any(c.get("type") == "Finished" and c.get("status") == "True" for c in conditions)
            if finished and RESOURCE_IN_USE not in (metadata.get("finalizers") or []):
                self.done.add(metadata["name"])
            self.changed.set()

    async def wait_for(self, count: int, *, within: float) -> None:
        await wait_until(
            lambda: len(self.done) >= count,
            self.changed,
            within=within,
            failure=lambda: (
                f"after {within:.0f}s only {len(self.done)} of {count} Workloads finished and released "
                f"({len(self.workloads)} seen)"
            ),
        )


async def quiet(pid: int, *, within: float = 120.0) -> None:
    """Wait until the process used less than ``QUIET_SHARE`` of a CPU over ``QUIET_WINDOW`` seconds:
    its tail (queued Events, the last watch events) is written."""
    deadline = time.monotonic() + within
    last = process_cpu_seconds(pid)
    while time.monotonic() < deadline:
        await asyncio.sleep(QUIET_WINDOW)
        now = process_cpu_seconds(pid)
        if now - last < QUIET_SHARE * QUIET_WINDOW:
            return
        last = now
    raise RuntimeError(f"process {pid} still busy {within:.0f}s after the last lifecycle ended")


# --- profilers ------------------------------------------------------------------------------------
def _interrupt(process: subprocess.Popen[bytes], *, within: float) -> bytes:
    """SIGINT a profiler (it writes its output on the way out), killed if it has not exited
    ``within`` seconds; its standard error."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
    try:
        _, stderr = process.communicate(timeout=within)
    except subprocess.TimeoutExpired:
        process.kill()
        _, stderr = process.communicate()
    return stderr


class Sampler:
    """``py-spy record --nonblocking`` on a process (it is never paused), stopped with SIGINT."""

    def __init__(self, pid: int, output: Path, *, rate: int, native: bool = False) -> None:
        binary = Path(sys.executable).parent / "py-spy"
        command = [str(binary if binary.exists() else "py-spy"), "record", "--pid", str(pid)]
        command += ["--rate", str(rate), "--format", "raw", "--output", str(output), "--gil"]
        # --native shows C frames (the collector, orjson, ssl) but must pause the process per sample
        command += ["--native"] if native else ["--nonblocking"]
        self.output = output
        self._process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
        )

    def stop(self) -> bool:
        """Stop sampling; whether a profile was written (py-spy may lack the right to attach)."""
        stderr = _interrupt(self._process, within=60)
        if self.output.exists():
            return True
        print(f"py-spy wrote no profile: {stderr.decode(errors='replace')[-1000:]}", file=sys.stderr)
        return False


class PerfSampler:
    """``perf record --call-graph dwarf`` on a process started with ``PYTHONPERFSUPPORT=1`` (Python
    3.12+), stopped with SIGINT and turned into ``perf script`` text (``*.perf.txt``, read by
    ``bench.profile_breakdown.parse_perf_script``): CPU samples named by Python function."""

    def __init__(self, pid: int, output: Path, *, rate: int) -> None:
        self.output = output
        self._data = output.with_name(output.name.removesuffix(".perf.txt") + ".perf.data")
        command = ["perf", "record", "-F", str(rate), "--call-graph", "dwarf,8192", "-p", str(pid)]
        self._process = subprocess.Popen(
            [*command, "-o", str(self._data)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )

    def stop(self) -> bool:
        """Stop sampling and write the text file; whether it was written."""
        stderr = _interrupt(self._process, within=120)
        if not self._data.exists():
            print(f"perf wrote no profile: {stderr.decode(errors='replace')[-1000:]}", file=sys.stderr)
            return False
        with self.output.open("wb") as text:
            script = subprocess.run(
                ["perf", "script", "-i", str(self._data)], stdout=text, stderr=subprocess.PIPE, check=False
            )
        if script.returncode != 0:
            print(f"perf script failed: {script.stderr.decode(errors='replace')[-1000:]}", file=sys.stderr)
            return False
        return True


def start_sampler(args: argparse.Namespace, pid: int, stem: Path) -> Sampler | PerfSampler:
    """The profiler ``--profiler`` names on ``pid``, writing ``<stem>.pyspy.txt`` or ``<stem>.perf.txt``."""
    if args.profiler == "perf":
        return PerfSampler(pid, stem.with_name(stem.name + ".perf.txt"), rate=args.rate)
    return Sampler(pid, stem.with_name(stem.name + ".pyspy.txt"), rate=args.rate, native=args.native)


def perf_profiling_problem() -> str | None:
    """Why ``--profiler perf`` cannot run here, or ``None``."""
    if sys.version_info < (3, 12):
        return "--profiler perf needs Python 3.12 or later (its perf trampolines); run the bench from such a venv"
    if shutil.which("perf") is None:
        return "--profiler perf needs the perf tool on PATH (linux-perf / linux-tools)"
    return None


def py_spy_available() -> bool:
    binary = Path(sys.executable).parent / "py-spy"
    return binary.exists() or any(
        (Path(directory) / "py-spy").exists() for directory in os.environ.get("PATH", "").split(os.pathsep)
    )


# --- one round ------------------------------------------------------------------------------------
@dataclass
class RoundResult:
    jobs: int
    reconciler_cpu: float
    webhook_cpu: float
    admissions: float
    seconds: float
    load: tuple[str, str]
    #: the devcluster process (API server, Kueue stand-in, job runner) over the same window
    devcluster_cpu: float = 0.0
    #: peak resident memory (MiB) of the reconciler and the webhook at the end of the round
    peak_rss: tuple[float, float] = (0.0, 0.0)
    work: dict[str, dict[str, float]] = field(default_factory=dict)
    breakdown: Breakdown | None = None
    profile: Path | None = None
    top: list[tuple[str, int, int]] = field(default_factory=list)
    webhook_profile: Path | None = None
    webhook_top: list[tuple[str, int, int]] = field(default_factory=list)

    @property
    def reconciler_ms_per_job(self) -> float:
        return self.reconciler_cpu / self.jobs * 1000

    @property
    def devcluster_ms_per_job(self) -> float:
        return self.devcluster_cpu / self.jobs * 1000

    @property
    def webhook_ms_per_admission(self) -> float:
        return self.webhook_cpu / max(self.admissions, 1) * 1000


async def _create_jobs(client: KubeClient, *, jobs: int, concurrency: int, run_seconds: float) -> None:
    gate = asyncio.Semaphore(concurrency)

    async def one(index: int) -> None:
        async with gate:
            await client.create(JOB, job_body(index, run_seconds=run_seconds), namespace=BENCH_NAMESPACE)

    await asyncio.gather(*(one(i) for i in range(jobs)))


async def work_done(components: Components) -> dict[str, dict[str, float]]:
    samples = await scrape(components.reconciler_metrics)
    prefix = "kueue_bridge_"
    return {
        "reconciles": by_label(samples, f"{prefix}controller_runtime_reconcile_total", "result"),
        "requests": by_label(samples, f"{prefix}rest_client_requests_total", "verb"),
        "watch events": by_label(samples, f"{prefix}watch_events_total", "resource"),
        "events": by_label(samples, f"{prefix}events_emitted_total", "action"),
        "watch restarts": by_label(samples, f"{prefix}watch_restarts_total", "reason"),
        "conflicts": by_label(samples, f"{prefix}controller_runtime_reconcile_conflicts_total", "controller"),
    }


async def run_round(args: argparse.Namespace, *, number: int, out: Path) -> RoundResult:
    with (
        tempfile.TemporaryDirectory(prefix="bench-reconciler-cpu-") as tmp_name,
        devcluster_process(Path(tmp_name), extra_args=("--kueue-standin", "--job-runner")) as (
            devcluster,
            kubeconfig,
        ),
    ):
        tmp = Path(tmp_name)
        async with contextlib.AsyncExitStack() as stack:
            client = await stack.enter_async_context(client_for(kubeconfig))
            await setup_queues(client, jobs=args.jobs + 1)
            components = await start_components(
                stack,
                tmp=tmp,
                kubeconfig=kubeconfig,
                client=client,
                qps=args.qps,
                reconcile_concurrency=args.reconcile_concurrency,
            )
            lifecycles = Lifecycles()
            watcher = asyncio.create_task(lifecycles.watch(client))
            stack.callback(watcher.cancel)
            # warm-up: one whole lifecycle (caches synced, connections open, every code path imported)
            await client.create(JOB, job_body(-1, run_seconds=args.run_seconds), namespace=BENCH_NAMESPACE)
            await lifecycles.wait_for(1, within=120)
            reconciler_pid, webhook_pid = components.reconciler.pid, components.webhook.pid
            assert reconciler_pid is not None and webhook_pid is not None
            await quiet(reconciler_pid)

            load_before = load_average()
            work_before = await work_done(components)
            admissions_before = total(
                await scrape(components.webhook_metrics, verify=components.verify),
                "kueue_bridge_webhook_requests_total",
            )
            samplers: list[Sampler | PerfSampler] = []
            if args.profile:
                for name, pid in (("reconciler", reconciler_pid), ("webhook", webhook_pid)):
                    samplers.append(start_sampler(args, pid, out / f"{name}-round{number}"))
                await asyncio.sleep(0.5)  # py-spy attaches
            cpu_before = (
                process_cpu_seconds(reconciler_pid),
                process_cpu_seconds(webhook_pid),
                process_cpu_seconds(devcluster.pid),
            )
            started = time.monotonic()
            await _create_jobs(
                client, jobs=args.jobs, concurrency=args.concurrency, run_seconds=args.run_seconds
            )
            await lifecycles.wait_for(args.jobs + 1, within=LIFECYCLE_TIMEOUT)
            await quiet(reconciler_pid)
            cpu_after = (
                process_cpu_seconds(reconciler_pid),
                process_cpu_seconds(webhook_pid),
                process_cpu_seconds(devcluster.pid),
            )
            peak_rss = (process_peak_rss_mib(reconciler_pid), process_peak_rss_mib(webhook_pid))
            seconds = time.monotonic() - started
            profiled = [sampler.stop() for sampler in samplers]
            load_after = load_average()
            admissions = (
                total(
                    await scrape(components.webhook_metrics, verify=components.verify),
                    "kueue_bridge_webhook_requests_total",
                )
                - admissions_before
            )
            work_after = await work_done(components)
            for name in ("reconciler.log", "webhook.log"):
                with contextlib.suppress(OSError):
                    (out / f"round{number}-{name}").write_bytes((tmp / name).read_bytes())
    result = RoundResult(
        jobs=args.jobs,
        reconciler_cpu=cpu_after[0] - cpu_before[0],
        webhook_cpu=cpu_after[1] - cpu_before[1],
        devcluster_cpu=cpu_after[2] - cpu_before[2],
        admissions=admissions,
        seconds=seconds,
        load=(load_before, load_after),
        peak_rss=peak_rss,
        work={key: delta(work_after[key], work_before.get(key, {})) for key in work_after},
    )
    if samplers and all(profiled):
        result.breakdown, stacks = read_breakdown(samplers[0].output)
        result.profile = samplers[0].output
        result.top = top_functions(stacks, limit=args.top)
        _, webhook_stacks = read_breakdown(samplers[1].output)
        result.webhook_profile = samplers[1].output
        result.webhook_top = top_functions(webhook_stacks, limit=args.top)
    return result


# --- output ---------------------------------------------------------------------------------------
def print_round(result: RoundResult) -> None:
    jobs = result.jobs
    print(
        f"{jobs} job lifecycles in {result.seconds:.1f}s (load average {result.load[0]} before, "
        f"{result.load[1]} after)"
    )
    print(
        f"reconciler: {result.reconciler_cpu:.2f} CPU s = {result.reconciler_ms_per_job:.2f} ms per job "
        "(target <= 5 ms)"
    )
    print(
        f"webhook: {result.webhook_cpu:.2f} CPU s for {result.admissions:.0f} admissions = "
        f"{result.webhook_ms_per_admission:.3f} ms per admission (target <= 1 ms); "
        f"{result.webhook_cpu / jobs * 1000:.2f} ms per job"
    )
    print(
        f"devcluster (API server, Kueue stand-in, job runner): {result.devcluster_cpu:.2f} CPU s = "
        f"{result.devcluster_ms_per_job:.2f} ms per job"
    )
    print(f"peak RSS: reconciler {result.peak_rss[0]:.0f} MiB, webhook {result.peak_rss[1]:.0f} MiB")
    for what, counts in result.work.items():
        parts = ", ".join(f"{key or '-'} {value / jobs:.2f}" for key, value in sorted(counts.items()))
        print(f"  per job, {what}: {sum(counts.values()) / jobs:.2f} ({parts})")
    if result.breakdown is not None:
        print(f"reconciler CPU by part ({result.breakdown.total} samples, {result.profile}):")
        for part in PARTS:
            share = result.breakdown.share(part)
            print(
                f"  {part:<34} {share * 100:5.1f} %  {share * result.reconciler_ms_per_job:5.2f} ms per job"
            )
        print("  top functions by own samples (own, with callees):")
        for name, own, inclusive in result.top:
            print(f"    {own:6d} {inclusive:6d}  {name}")
    if result.webhook_profile is not None:
        print(f"webhook top functions by own samples ({result.webhook_profile}):")
        for name, own, inclusive in result.webhook_top:
            print(f"    {own:6d} {inclusive:6d}  {name}")


def spread(values: list[float], unit: str, digits: int = 2) -> str:
    return (
        f"median {statistics.median(values):.{digits}f}{unit} "
        f"(range {min(values):.{digits}f}-{max(values):.{digits}f}{unit})"
    )


def summary(results: list[RoundResult]) -> list[str]:
    lines = [
        f"over {len(results)} rounds of {results[0].jobs} jobs:",
        f"  reconciler CPU per job: {spread([r.reconciler_ms_per_job for r in results], ' ms')} (target <= 5 ms)",
        "  webhook CPU per admission: "
        f"{spread([r.webhook_ms_per_admission for r in results], ' ms', 3)} (target <= 1 ms)",
        f"  devcluster CPU per job: {spread([r.devcluster_ms_per_job for r in results], ' ms')}",
        f"  peak RSS: reconciler {spread([r.peak_rss[0] for r in results], ' MiB', 0)}, "
        f"webhook {spread([r.peak_rss[1] for r in results], ' MiB', 0)}",
        f"  load average (1, 5, 15 min) before each round: {'; '.join(r.load[0] for r in results)}",
    ]
    profiled = [r for r in results if r.breakdown is not None]
    for part in PARTS if profiled else ():
        values = [r.breakdown.share(part) * r.reconciler_ms_per_job for r in profiled if r.breakdown]
        lines.append(f"  {part}: {spread(values, ' ms')} per job")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=1, help="repeat on a fresh devcluster; print medians")
    parser.add_argument("--concurrency", type=int, default=16, help="Job creates in flight")
    parser.add_argument("--run-seconds", type=float, default=1.0, help="how long the job runner runs a job")
    parser.add_argument("--qps", type=int, help="the components' client rate limit (default: the config's)")
    parser.add_argument(
        "--reconcile-concurrency",
        type=int,
        help="Jobs the reconciler reconciles at once (controller.groupKindConcurrency Job.batch; default: the config's)",
    )
    parser.add_argument("--out", type=Path, help="folder for the profiles and logs (default: a new temp dir)")
    parser.add_argument("--no-profile", dest="profile", action="store_false", help="do not run py-spy")
    parser.add_argument("--rate", type=int, default=200, help="samples per second")
    parser.add_argument(
        "--profiler",
        choices=["py-spy", "perf"],
        default="py-spy",
        help="perf: CPU samples named by Python function (Python 3.12+, PYTHONPERFSUPPORT); py-spy's "
        "samples also count time spent waiting for a core, which misleads on a busy host",
    )
    parser.add_argument(
        "--native", action="store_true", help="py-spy --native: C frames too (pauses the process per sample)"
    )
    parser.add_argument("--top", type=int, default=15, help="functions to list from the profile")
    parser.add_argument(
        "--real",
        action="store_true",
        help="on the real cluster of ../shared/real-cluster (the port block of this environment) instead",
    )
    parser.add_argument(
        "--anchor", choices=["kueue"], help="--real: also real Kueue managing the Jobs itself, interleaved"
    )
    parser.add_argument(
        "--no-devcluster",
        dest="devcluster",
        action="store_false",
        help="--real: skip the devcluster rounds (by default each round also runs there, for the ratio)",
    )
    parser.add_argument(
        "--state",
        type=Path,
        help="--real: the cluster's state folder (wiped each round; default: a new temp dir)",
    )
    parser.add_argument(
        "--probe",
        action="store_true",
        help="--real: also send our /mutate a request directly every --probe-interval seconds until "
        "all Jobs are unsuspended and print the round trips (the webhook's own responsiveness)",
    )
    parser.add_argument("--probe-interval", type=float, default=0.02)
    args = parser.parse_args(argv)
    if args.profile and args.profiler == "perf":
        problem = perf_profiling_problem()
        if problem is not None:
            parser.error(problem)
        os.environ["PYTHONPERFSUPPORT"] = "1"  # the components inherit it and write /tmp/perf-PID.map
    if args.real:
        from bench.real_rounds import main_real

        out_dir: Path = args.out or Path(tempfile.mkdtemp(prefix="reconciler-cpu-real-"))
        out_dir.mkdir(parents=True, exist_ok=True)
        return main_real(args, out_dir)
    if args.profile and not py_spy_available():
        print("py-spy not found (pip install py-spy); measuring without the breakdown", file=sys.stderr)
        args.profile = False
    out: Path = args.out or Path(tempfile.mkdtemp(prefix="reconciler-cpu-"))
    out.mkdir(parents=True, exist_ok=True)
    print(f"profiles and logs in {out}", flush=True)
    results = []
    for number in range(1, args.rounds + 1):
        if args.rounds > 1:
            print(f"--- round {number} of {args.rounds}", flush=True)
        result = asyncio.run(run_round(args, number=number, out=out))
        print_round(result)
        sys.stdout.flush()
        results.append(result)
    if len(results) > 1:
        print("\n".join(summary(results)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
