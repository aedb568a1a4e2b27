"""The live phase of ``kueue-bridge dev``: read the samples back from the API servers, show, decide.

Every refresh (twice a second) reads the sample jobs and the Workloads of their namespaces from the
cluster the samples were created on (the manager, in a fleet) and, in a fleet, the same kinds from
every worker, and turns them into :class:`devrun.progress.JobRow`\\ s (:func:`read_rows`): the
table is derived from what the API servers show, never from what the runner did.

When the run ends, with ``--exit-when-done``:

* one cluster: every sample ``Finished`` -> exit 0;
* a fleet: every sample ``Finished`` **and** its manager Workload names the worker it ran on (the
  CLUSTER column) -> exit 0; every sample finished but one without a worker -> exit 1 at once (it
  ran on the manager, or was finished without being dispatched: waiting longer cannot fix that);
* ``--timeout`` seconds pass first -> exit 1, the last table and a footer naming the logs.

A child that exits is an error at the next refresh (:meth:`Session.check_components`). WHY, for a
row neither running nor finished, is ``kueue-bridge explain``'s reason, read with the settings of
the configuration the components run with.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bridge_tools.explain.cluster_view import ClusterView
from bridge_tools.explain.diagnosis import ExplainSettings, reason_for
from devcluster.standin import WORKLOADS
from devrun.cluster import Session
from devrun.progress import JobRow, TableDisplay, job_row
from devrun.samples import SAMPLE_KINDS, SampleKind
from shared.config import ConfigError, load_config
from shared.kube import GroupVersionKind, KubeClient

__all__ = ["Watched", "read_rows", "verdict", "watch"]

_WORKLOAD_GVK = GroupVersionKind(WORKLOADS.group, WORKLOADS.version, "Workload")
_REFRESH_SECONDS = 0.5

_Key = tuple[str, str, str]


@dataclass(frozen=True, slots=True)
class Watched:
    """What the live phase follows."""

    #: the cluster the samples were created on (the manager, in a fleet)
    client: KubeClient
    #: the API server's answers to the samples' creation
    created: Sequence[dict[str, Any]]
    #: the configuration the components run with (for the WHY column)
    config: Path
    #: named in the footer when the run times out
    logs: str
    #: in a fleet, the workers by MultiKueueCluster name (None: one cluster, no CLUSTER column)
    workers: Mapping[str, KubeClient] | None = None


def _kind_of(obj: Mapping[str, Any]) -> SampleKind:
    return next(k for k in SAMPLE_KINDS if k.gvk.kind == obj.get("kind"))


def _key(obj: Mapping[str, Any]) -> _Key:
    meta = obj.get("metadata") or {}
    return (str(obj.get("kind")), str(meta.get("namespace")), str(meta.get("name")))


async def _list_samples(
    client: KubeClient, created: Sequence[dict[str, Any]], namespaces: Sequence[str]
) -> list[dict[str, Any]]:
    kinds = [kind for kind in SAMPLE_KINDS if any(obj.get("kind") == kind.gvk.kind for obj in created)]
    found: list[dict[str, Any]] = []
    for namespace in namespaces:
        for kind in kinds:
            for item in (await client.list_all(kind.gvk, namespace=namespace)).items:
                found.append({**item, "kind": kind.gvk.kind})
    return found


async def read_rows(
    client: KubeClient,
    created: Sequence[dict[str, Any]],
    *,
    settings: ExplainSettings | None,
    workers: Mapping[str, KubeClient] | None = None,
) -> list[JobRow]:
    """One row per created sample, from ``client`` (and, in a fleet, each worker's copies)."""
    namespaces = sorted({obj["metadata"]["namespace"] for obj in created})
    live = {item["metadata"]["uid"]: item for item in await _list_samples(client, created, namespaces)}
    workloads: list[dict[str, Any]] = []
    for namespace in namespaces:
        workloads.extend((await client.list_all(_WORKLOAD_GVK, namespace=namespace)).items)
    remote: dict[str, dict[_Key, dict[str, Any]]] = {}
    for name, worker in (workers or {}).items():
        remote[name] = {_key(item): item for item in await _list_samples(worker, created, namespaces)}
    now = datetime.now(UTC)
    view = ClusterView(client)
    rows = []
    for obj in created:
        kind = _kind_of(obj)
        current = live.get(obj["metadata"]["uid"])
        if current is None:
            meta = obj["metadata"]
            cluster = None if workers is None else "-"
            key = f"{meta['namespace']}/{meta['name']}"
            rows.append(JobRow(obj["kind"], key, "Deleted", "-", "-", "-", cluster=cluster))
            continue
        copies = None if workers is None else {name: found.get(_key(obj)) for name, found in remote.items()}
        row = job_row(
            job={**current, "kind": kind.gvk.kind},
            suspend_path=kind.suspend_path,
            workloads=workloads,
            now=now,
            copies=copies,
        )
        if settings is not None and not row.finished and row.state != "Running":
            row = replace(row, why=await reason_for(view, settings=settings, job=current, now=now))
        rows.append(row)
    return rows


def _explain_settings(config: Path) -> ExplainSettings | None:
    """explain's view of the configuration the components run with (the WHY column needs it)."""
    try:
        return ExplainSettings.from_config(load_config(config))
    except (ConfigError, ValueError):
        return None


def _on_workers(rows: Sequence[JobRow]) -> str:
    counts = Counter(row.cluster for row in rows)
    return ", ".join(f"{name}: {count}" for name, count in sorted(counts.items(), key=lambda kv: str(kv[0])))


def verdict(rows: Sequence[JobRow], *, fleet: bool) -> tuple[int, str] | None:
    """(exit code, footer) once the run is decided, else None (keep watching)."""
    if not rows or not all(row.finished for row in rows):
        return None
    if not fleet:
        return 0, f"all {len(rows)} sample jobs finished"
    stray = [f"{row.kind} {row.key}" for row in rows if row.cluster in (None, "", "-")]
    if stray:
        return 1, f"finished without running on a worker: {', '.join(stray)}"
    return 0, f"all {len(rows)} sample jobs finished on a worker ({_on_workers(rows)})"


async def watch(session: Session, watched: Watched) -> int:
    """Show the table until stopped or, with ``--exit-when-done``, until decided; the exit code."""
    args = session.args
    fleet = watched.workers is not None
    display = TableDisplay(out=session.out, tty=args.tty)
    settings = _explain_settings(watched.config)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + args.timeout
    while True:
        session.check_components()
        rows = await read_rows(watched.client, watched.created, settings=settings, workers=watched.workers)
        decided = verdict(rows, fleet=fleet)
        if args.exit_when_done:
            if decided is not None:
                code, footer = decided
                display.final(rows, footer=footer)
                return code
            if loop.time() > deadline:
                where = " on a worker" if fleet else ""
                display.final(
                    rows,
                    footer=f"timed out after {args.timeout:.0f}s waiting for every sample to finish{where}; "
                    f"see {watched.logs}",
                )
                return 1
            display.show(rows)
        else:
            footer = "all sample jobs finished; " if decided is not None and decided[0] == 0 else ""
            display.show(rows, footer=f"{footer}Ctrl-C stops everything")
        await asyncio.sleep(_REFRESH_SECONDS)
