"""``kueue-bridge explain``: why a job is (not) running -- one verdict, then the evidence.

Modules: ``cluster_view`` (cached, read-only cluster reads for one explanation), ``verdict`` (the
explanation's data and its text/JSON rendering), ``queues`` (LocalQueue -> ClusterQueue -> quota
-> position -> admission checks), ``queue_position`` (Kueue's visibility API, else Kueue's order
estimated), ``multikueue`` (worker copies and where a job runs, read from the manager only),
``evidence`` (Workload, eviction and event evidence; why a job has no Workload), ``preflight``
(the preflight findings about one job), ``diagnosis`` (the chain from a job to its verdict:
:func:`~bridge_tools.explain.diagnosis.explain`, also the dev runner's WHY column) and ``cli``.

Modules:

* ``cli`` -- ``kueue-bridge explain KIND/NAME [-n NS] [--kubeconfig F] [--config F] [-o text|json]``
* ``cluster_view`` -- a read-only, memoised view of the cluster for one explanation (or one ``make
  dev`` refresh)
* ``diagnosis`` -- ``explain``: from a job to one verdict saying why it is (not) running, with the
  evidence
* ``evidence`` -- evidence ``explain`` reads besides the queue chain, and the checks for a job
  without a Workload
* ``multikueue`` -- MultiKueue evidence for ``explain``: which worker clusters hold copies of a
  Workload, where it runs
* ``preflight`` -- the ``Preflight`` section of ``kueue-bridge explain``: the preflight findings
  about this one job
* ``queue_position`` -- where a pending Workload is in its queues: from Kueue's visibility API, else
  estimated Kueue's way
* ``queues`` -- the queue half of ``explain``: LocalQueue -> ClusterQueue -> quota -> position ->
  admission checks
* ``verdict`` -- the result of ``kueue-bridge explain``: one verdict, then the evidence, as text or
  JSON
"""

__all__: list[str] = []
