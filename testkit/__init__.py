"""The real-cluster test harness: ``make test-real`` and the benchmarks' ``--real`` rounds.

It starts the real thing from the real-cluster kit of ``../shared/real-cluster`` -- a real
kube-apiserver, the real Kueue manager installed by its Helm chart, a MultiKueue fleet of such
clusters -- and runs our components on them as processes, as :mod:`devrun` runs them on the
devcluster (it builds on :mod:`devrun` for that). It is a test harness, not part of the product:
the distribution does not ship it, nothing of the product imports it (an import contract), and it
never imports the components it runs.

Modules:

* ``real_suite`` -- ``python -m testkit.real_suite`` (``make test-real``): its stages, and the sweep
  of every cluster it started;
* ``real_cluster`` -- one real kube-apiserver and the real Kueue manager from the kit;
* ``real_fleet`` -- a MultiKueue fleet of real clusters: a manager and workers, ours on each;
* ``proxy`` -- a TCP relay a test can cut, to lose a worker without stopping it.

What the tests and the benchmarks use of ``real_cluster`` and ``real_fleet`` is exported here, so
the benchmarks import this package's public API and none of its modules (an import contract
enforces it). ``real_suite`` is not imported here, so ``python -m testkit.real_suite`` runs it
exactly once.
"""

from testkit.real_cluster import (
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
from testkit.real_fleet import (
    Dispatcher,
    FleetSettings,
    RealFleet,
    cpu_seconds,
    job_status_running,
    job_status_succeeded,
    rss_bytes,
    start_real_fleet,
)

__all__ = [
    "DEFAULT_KUEUE_VERSION",
    "KUEUE_VERSIONS",
    "Dispatcher",
    "FleetSettings",
    "Kit",
    "KitError",
    "KueueMode",
    "RealCluster",
    "RealClusterPorts",
    "RealFleet",
    "cpu_seconds",
    "find_kit",
    "job_status_running",
    "job_status_succeeded",
    "rss_bytes",
    "start_real_fleet",
    "stop_all_below",
]
