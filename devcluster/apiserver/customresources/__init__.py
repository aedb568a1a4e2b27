"""CustomResourceDefinitions: served resource types from CRD objects, structural schemas (pruning,
defaulting, validation) and validation ratcheting.

Modules:

* ``definitions`` -- CustomResourceDefinitions: from a CRD object to a served resource type, and CR
  validation
* ``ratcheting`` -- CRD validation ratcheting: which old value a new value is compared with, and
  "unchanged"
* ``schema`` -- structural schemas: pruning, defaulting and validation of custom resources like
  kube-apiserver
"""

__all__: list[str] = []
