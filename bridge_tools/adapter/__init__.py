"""``kueue-bridge adapter test``: what kueue-bridge would do with one object, without a cluster.

``dry_run`` computes it (the adapter's reading of the object, the Workload it would create),
``cli`` reads the arguments and prints it.
"""

__all__: list[str] = []
