"""Pydantic v2 models of the Kubernetes and Kueue objects kueue-bridge reads and writes.

Everything read from a cluster keeps unknown fields (``extra="allow"``) so a read-modify-write
round trip never drops data; ``to_wire()`` gives the camelCase JSON, ``from_wire()`` parses it.
Kueue objects are modelled in their storage version, ``kueue.x-k8s.io/v1beta2``, the version the
components request (the API server serves an object in the version asked for, whichever version it
was written in). Only kinds the components read or write as models are here; everything else stays
a raw dict. Import from the modules (``base``, ``meta``, ``condition``, ``workload``, ``queue``,
``multikueue``): the package re-exports nothing.

Modules:

* ``base`` -- the base class of every model read from or written to a cluster
* ``condition`` -- the typed ``metav1.Condition`` of the Workload, queue and MultiKueue models
* ``meta`` -- ObjectMeta, OwnerReference, LabelSelector and the few metadata helpers every component
  needs
* ``multikueue`` -- MultiKueue's configuration objects, ``MultiKueueConfig`` and
  ``MultiKueueCluster`` (``kueue.x-k8s.io/v1beta2``)
* ``queue`` -- Kueue ``LocalQueue`` and ``ClusterQueue`` in their storage version,
  ``kueue.x-k8s.io/v1beta2``
* ``workload`` -- Kueue ``Workload`` in its storage version, ``kueue.x-k8s.io/v1beta2``
"""
