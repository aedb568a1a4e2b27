"""Stand-ins for the controllers a real cluster runs beside the API server (LOCAL RUNS ONLY).

* :class:`KueueStandin` (:mod:`.kueue`) plays the parts of Kueue that kueue-bridge's reconciler
  relies on: the scheduler (admission per ClusterQueue in Kueue's priority-then-age order within
  nominal quota, writing ``status.admission`` and ``QuotaReserved``/``Admitted`` with Kueue's
  reasons and messages; preemption of lower-priority Workloads within a ClusterQueue,
  :mod:`.preemption`; admission of an elastic job's replacement slice in the replaced slice's quota,
  then ``WorkloadSliceReplaced`` on the old one, :mod:`.slices`) and the Workload controller
  (missing queues, deactivation and reactivation).
* :class:`JobRunner` (:mod:`.jobrunner`) plays kube-controller-manager's Job controller: it moves an
  unsuspended batch/v1 Job (or a declarative CRD, :class:`DeclarativeCompletion`) to completion
  after its run time with the real controller's visible status.
* :func:`start_addons` starts either or both as asyncio tasks.

Both are ordinary API clients: every read and write is an HTTP request with a bearer token through
their own small client (:mod:`.client`), never a call into :mod:`devcluster.apiserver`'s internals
(an import contract enforces it), so their writes race, conflict and are validated like the real
controllers'. In a devcluster process the requests go to the API server's ASGI app in-process
(no TLS, no socket: the stand-in's own load once cost the worker clusters of the MultiKueue
benchmark more than the components under test); given a URL alone they use HTTPS. They read what they look at from watched caches
(:mod:`.objects`; a LIST per pass where no watch can be served) and run a pass shortly after a
change, and at least every poll interval.

Deliberately not done (known differences from Kueue and the Job controller):

* Kueue: no cohorts (no borrowing, reclaim or fair sharing), so no preemption beyond the
  ClusterQueue, none across flavors and no priority boosts; no partial admission; no
  topology-aware scheduling; a requested resource always takes the first flavor of its resource
  group; a stop policy holds new admissions but
  does not drain (``HoldAndDrain``); no requeue backoff. ClusterQueue and LocalQueue status are
  written as Kueue writes them (:mod:`.queue_status`).
  Kueue's Workload events are recorded (:mod:`.workload_events`), the pending Warning only when the
  Workload's status changes (Kueue repeats it at every scheduling attempt). Admission checks are listed as Pending and ``Admitted`` follows them, but no
  admission-check controller runs. On deactivation the reservation is released by the job reconciler, as with real Kueue.
* Jobs: no Pods are created; a Job succeeds after ``kueue-bridge.dev/run-seconds`` (default
  ``default_run_seconds``), or fails then if annotated ``kueue-bridge.dev/outcome: Failed``; only
  ``/status`` is written.
"""

from devcluster.standin.client import ApiClient, ApiError, Resource
from devcluster.standin.jobrunner import (
    JOBS,
    OUTCOME_ANNOTATION,
    RUN_SECONDS_ANNOTATION,
    DeclarativeCompletion,
    JobRunner,
)
from devcluster.standin.kueue import CLUSTER_QUEUES, LOCAL_QUEUES, WORKLOADS, KueueStandin, start_addons
from devcluster.standin.objects import WatchedObjects

__all__ = [
    "CLUSTER_QUEUES",
    "JOBS",
    "LOCAL_QUEUES",
    "OUTCOME_ANNOTATION",
    "RUN_SECONDS_ANNOTATION",
    "WORKLOADS",
    "ApiClient",
    "ApiError",
    "DeclarativeCompletion",
    "JobRunner",
    "KueueStandin",
    "Resource",
    "WatchedObjects",
    "start_addons",
]
