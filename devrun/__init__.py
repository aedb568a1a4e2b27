"""``kueue-bridge dev`` (``make dev``): the whole system on a local devcluster, with a live table.

It emulates nothing: it starts the real things in order (a devcluster with the Kueue stand-in and
the job runner in this process; the webhook and the reconciler as ``kueue-bridge <component>``
child processes), installs CRDs, queues and sample jobs, and shows their progress. With
``--workers N`` (``make dev-multicluster``) it does so for a MultiKueue manager and N workers at
once and also runs ``kueue-bridge multikueue`` on the manager. The command is
:func:`devrun.__main__.main`, as for every component package; this package does not import that
module, so ``python -m devrun`` runs it exactly once.

Modules of ``kueue-bridge dev``: ``__main__`` (the command), ``cluster`` (one devcluster and its
components), ``multicluster`` (the fleet), ``samples`` (CRDs, configuration, queues, sample jobs),
``components`` (child processes), ``watch`` (reading the table back and deciding the end),
``progress`` (the table, pure). Modules of ``make test-real`` and the real-cluster benchmarks:
``real_suite`` (the ``make test-real`` stages), ``real_cluster`` (a real kube-apiserver and the
real Kueue manager from the real-cluster kit), ``real_fleet`` (a MultiKueue fleet of real
clusters), ``identities`` (ServiceAccount identities with their RBAC and a token), ``proxy`` (a TCP
relay a test can cut, to lose a worker without stopping it).

Why a top-level package beside :mod:`devcluster` and not inside it: the runner drives the whole
product (certificates, configuration, every component's process and health endpoint) and
:mod:`devcluster` is only one of the things it starts. Kept apart, the devcluster stays a
self-contained test double that depends on nothing but ``shared`` and ``certs``, and the import
contracts read simply: ``devrun`` may import :mod:`devcluster` (``apiserver``, ``standin``, the
server that hosts them), ``shared`` and ``certs``; nothing imports ``devrun``; and ``devrun`` never
imports the components it runs (it talks to them, and to the API server, over HTTP only).

What the benchmarks under ``bench/`` use (the components as processes, the CRDs and the real
cluster of ``../shared/real-cluster``) is exported here, so they import this package's public API and
none of its modules (an import contract enforces it).

Deliberately not done: no container images, no cluster network (the webhook is registered by URL),
no restart of a crashed component (the runner stops and shows the component's log tail instead).
"""

from devrun.components import (
    ComponentError,
    ComponentProcess,
    free_port,
    generate_certs,
    register_webhooks,
    render_webhook_manifests,
)
from devrun.identities import run_as
from devrun.progress import JobRow, TableDisplay, job_row, render_table
from devrun.real_cluster import (
    DEFAULT_KUEUE_VERSION,
    KUEUE_VERSIONS,
    Kit,
    KitError,
    KueueMode,
    RealCluster,
    RealClusterPorts,
    find_kit,
    stop_all_below,
)
from devrun.real_fleet import (
    Dispatcher,
    FleetSettings,
    RealFleet,
    cpu_seconds,
    job_status_running,
    job_status_succeeded,
    start_real_fleet,
)
from devrun.samples import (
    SAMPLE_KINDS,
    SampleKind,
    crd_files,
    declarative_completions,
    install_crds,
    shared_dir,
)

__all__ = [
    "DEFAULT_KUEUE_VERSION",
    "KUEUE_VERSIONS",
    "SAMPLE_KINDS",
    "ComponentError",
    "ComponentProcess",
    "Dispatcher",
    "FleetSettings",
    "JobRow",
    "Kit",
    "KitError",
    "KueueMode",
    "RealCluster",
    "RealClusterPorts",
    "RealFleet",
    "SampleKind",
    "TableDisplay",
    "cpu_seconds",
    "crd_files",
    "declarative_completions",
    "find_kit",
    "free_port",
    "generate_certs",
    "install_crds",
    "job_row",
    "job_status_running",
    "job_status_succeeded",
    "register_webhooks",
    "render_table",
    "render_webhook_manifests",
    "run_as",
    "shared_dir",
    "start_real_fleet",
    "stop_all_below",
]
