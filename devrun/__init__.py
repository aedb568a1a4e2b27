"""``kueue-bridge dev`` (``make dev``): the whole system on a local devcluster, with a live table.

It emulates nothing: it starts the real things in order (a devcluster with the Kueue stand-in and
the job runner in this process; the webhook and the reconciler as ``kueue-bridge <component>``
child processes), installs CRDs, queues and sample jobs, and shows their progress. With
``--workers N`` (``make dev-multicluster``) it does so for a MultiKueue manager and N workers at
once and also runs ``kueue-bridge multikueue`` on the manager. The command is
:func:`devrun.__main__.main`, as for every component package; this package does not import that
module, so ``python -m devrun`` runs it exactly once.

The harness of ``make test-real`` and the real-cluster benchmarks starts the same processes on
real clusters: it is :mod:`testkit`, which builds on this package.

Why a top-level package beside :mod:`devcluster` and not inside it: the runner drives the whole
product (certificates, configuration, every component's process and health endpoint) and
:mod:`devcluster` is only one of the things it starts. Kept apart, the devcluster stays a
self-contained test double that depends on nothing but ``shared`` and ``certs``, and the import
contracts read simply: ``devrun`` may import :mod:`devcluster` (``apiserver``, ``standin``, the
server that hosts them), ``shared`` and ``certs``; nothing of the product imports ``devrun`` (the
test harness :mod:`testkit` and the benchmarks build on it); and ``devrun`` never imports the
components it runs (it talks to them, and to the API server, over HTTP only).

What the benchmarks under ``bench/`` use (the components as processes, the CRDs) is exported
here, so they import this package's public API and none of its modules (an import contract
enforces it).

Deliberately not done: no container images, no cluster network (the webhook is registered by URL),
no restart of a crashed component (the runner stops and shows the component's log tail instead).

Modules:

* ``__main__`` -- ``kueue-bridge dev`` (``make dev``): the whole system on a local devcluster, with
  a live table
* ``cluster`` -- one devcluster of ``kueue-bridge dev`` and its components: the unit both run modes
  are built from
* ``components`` -- the components of ``kueue-bridge dev`` as child processes: start, health-check,
  stop, register
* ``identities`` -- ServiceAccount identities on a real cluster: their RBAC applied, a token from
  the TokenRequest API, as a kubeconfig
* ``multicluster`` -- ``kueue-bridge dev --workers N`` (``make dev-multicluster``): a MultiKueue
  fleet on N+1 devclusters
* ``progress`` -- the live progress table of ``kueue-bridge dev``: one row per sample job, from job
  + Workload
* ``samples`` -- what ``kueue-bridge dev`` puts into the devcluster: CRDs, the run-time config,
  queues, sample jobs
* ``watch`` -- the live phase of ``kueue-bridge dev``: read the samples back from the API servers,
  show, decide
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
from devrun.samples import (
    SAMPLE_KINDS,
    SampleKind,
    crd_files,
    declarative_completions,
    install_crds,
    shared_dir,
)

__all__ = [
    "SAMPLE_KINDS",
    "ComponentError",
    "ComponentProcess",
    "JobRow",
    "SampleKind",
    "TableDisplay",
    "crd_files",
    "declarative_completions",
    "free_port",
    "generate_certs",
    "install_crds",
    "job_row",
    "register_webhooks",
    "render_table",
    "render_webhook_manifests",
    "run_as",
    "shared_dir",
]
