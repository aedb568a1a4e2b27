"""``kueue-bridge multikueue``: Kueue's MultiKueue controller, run on a MultiKueue manager cluster.

For the AdmissionChecks whose ``spec.controllerName`` is ``kueueBridge.multiKueue.controllerName``,
it copies each Workload to the worker clusters of the check's MultiKueueConfig, creates the job on
the worker that admits its copy first, mirrors that job's status back to the manager's job, and
removes what it left on the workers (docs/multikueue.md). Kueue's reconcilers, conditions and
messages throughout; each module names the Kueue code it mirrors.

Modules: ``__main__`` (the command and its process life), ``manager`` (informers, work queues and
triggers wired into one controller process), ``workload`` (the Workload reconciler),
``workload_steps`` (its decisions for one Workload and its copies), ``workload_group`` (a Workload
with its copies and the remote operations on them), ``workload_status`` (reading and changing
Workload status as Kueue's MultiKueue does), ``adapters`` (per synced kind, how the manager's job
relates to the worker's copy), ``local_jobs`` (the manager's jobs, from informers), ``remote`` (one
worker: its client, watches and connection state), ``clusters`` (the MultiKueueCluster reconciler),
``connect_errors`` (why a worker cannot be reached, in Kueue's words), ``admissioncheck`` (the
AdmissionCheck reconciler), ``conditions`` (their ``Active`` condition), ``dispatcher`` (the
incremental dispatcher), ``gc`` (garbage collection of remote copies), ``own_writes`` (the watch
echoes of our own writes), ``metrics`` (per-worker metrics), ``remote_copy`` (the copy of a job and
of a Workload that a worker is given).
"""

__all__: list[str] = []
