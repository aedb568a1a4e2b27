"""``kueue-bridge adapter test``: what kueue-bridge would do with one object, without a cluster.

``dry_run`` computes it (the adapter's reading of the object, the Workload it would create),
``cli`` reads the arguments and prints it.

Modules:

* ``cli`` -- ``kueue-bridge adapter test --config FILE --kind Kind.version.group OBJECT.yaml [-o
  yaml|json]``
* ``dry_run`` -- ``adapter test``: what kueue-bridge would do with one object, without a cluster
"""

__all__: list[str] = []
