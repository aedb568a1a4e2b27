"""``kueue-bridge multikueue``: Kueue's MultiKueue controller, run on a MultiKueue manager cluster.

For the AdmissionChecks whose ``spec.controllerName`` is ``kueueBridge.multiKueue.controllerName``,
it copies each Workload to the worker clusters of the check's MultiKueueConfig, creates the job on
the worker that admits its copy first, mirrors that job's status back to the manager's job, and
removes what it left on the workers (docs/multikueue.md). Kueue's reconcilers, conditions and
messages throughout; each module names the Kueue code it mirrors.

Modules:

* ``__main__`` -- ``kueue-bridge multikueue --config FILE [--kubeconfig FILE]``: the MultiKueue
  controller
* ``adapters`` -- MultiKueue job adapters: for each synced kind, how its manager copy relates to its
  worker copy
* ``admissioncheck`` -- the AdmissionCheck reconciler: the ``Active`` condition of every check this
  component controls
* ``clusters`` -- the MultiKueueCluster reconciler: one ``RemoteCluster`` per cluster, and its
  ``Active`` condition
* ``conditions`` -- the ``Active`` condition of MultiKueueClusters and AdmissionChecks, written as
  Kueue writes it
* ``connect_errors`` -- why a worker cannot be reached, in the words Kueue's MultiKueueCluster uses
  (``ClientConnectionFailed``)
* ``dispatcher`` -- the incremental dispatcher: nominate worker clusters a few at a time, one
  5-minute round each
* ``gc`` -- the garbage collector: remote Workloads (and their jobs) whose local Workload is gone
* ``local_jobs`` -- the manager's own jobs of the synced kinds, read from informers (Kueue reads
  them from its cache)
* ``manager`` -- wiring the MultiKueue reconcilers into a running controller: informers, work
  queues, triggers
* ``metrics`` -- the MultiKueue component's own metrics, by worker cluster: Workload copies
  dispatched and admitted, how long a dispatch took, and whether the worker is connected
* ``own_writes`` -- our own writes, remembered so that their watch echoes do not wake the Workload
  reconciler again
* ``remote`` -- one worker cluster as seen from the manager: its client, its watches, its connection
  state
* ``remote_copy`` -- the copy of a job (or Workload) that MultiKueue creates on a worker cluster
* ``workload`` -- the MultiKueue Workload reconciler: Kueue's ``wlReconciler`` (``workload.go``),
  step by step
* ``workload_group`` -- a local Workload with its copies on the usable workers, and the remote
  operations on them
* ``workload_status`` -- reading and changing Workload status the way Kueue's MultiKueue controller
  does, on raw objects
* ``workload_steps`` -- ``reconcileGroup``: Kueue's MultiKueue decisions for one Workload and its
  copies, in Kueue's order
"""

__all__: list[str] = []
