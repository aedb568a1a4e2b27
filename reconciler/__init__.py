"""Job <-> Workload controller with Kueue's jobframework reconciler semantics.

Modules:

* ``__main__`` -- ``kueue-bridge reconciler --config FILE [--kubeconfig FILE]``: the job <->
  Workload controller
* ``ancestry`` -- the reconciler's lookup for the ancestor walk (``shared.kueue.ancestry``): owners
  read through the ``ClusterReader`` (the informer caches)
* ``cluster`` -- binding the reconciler's ports to a real API server (``shared.kube``)
* ``event_reporting`` -- who the reconciler's Events say they come from: Kueue's job reconciler of
  the job's kind
* ``job_control`` -- starting and stopping a job through its adapter, and writing the result back
* ``job_reconciler`` -- Kueue's job reconciler (``jobframework.ReconcileGenericJob``) for any
  adapter-described kind
* ``manager`` -- wiring the job reconciler into a running controller: informers, work queues,
  workers
* ``ports`` -- what the job reconciler needs from a cluster, as three small protocols
* ``priority`` -- resolving a job's Workload priority: Kueue's ``ExtractPriority`` read through the
  reconciler's caches
* ``retention`` -- ``objectRetentionPolicies.workloads.afterDeactivatedByKueue``: when a deactivated
  job is deleted
* ``verdicts`` -- the last job <-> Workload equivalence verdict per pair, reused while its inputs
  are unchanged
* ``workload_slices`` -- the reconciler's side of elastic jobs: Kueue's ``EnsureWorkloadSlices`` and
  ``prepareWorkloadSlice`` with their writes
* ``workload_sync`` -- keeping exactly one Workload per job: find, adopt, update, delete, create,
  finalize
"""

__all__: list[str] = []
