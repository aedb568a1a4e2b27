"""``kueue-bridge explain``: why a job is (not) running -- one verdict, then the evidence.

Modules: ``cluster_view`` (cached, read-only cluster reads for one explanation), ``verdict`` (the
explanation's data and its text/JSON rendering), ``queues`` (LocalQueue -> ClusterQueue -> quota
-> position -> admission checks), ``queue_position`` (Kueue's visibility API, else Kueue's order
estimated), ``multikueue`` (worker copies and where a job runs, read from the manager only),
``evidence`` (Workload, eviction and event evidence; why a job has no Workload), ``preflight``
(the preflight findings about one job), ``diagnosis`` (the chain from a job to its verdict:
:func:`~bridge_tools.explain.diagnosis.explain`, also the dev runner's WHY column) and ``cli``.
"""

__all__: list[str] = []
