"""Which resources exist and how they are addressed: the resource registry and discovery documents,
the built-in kinds, how a request sees its resource (served version, codec, Events), OpenAPI.

Modules:

* ``builtins`` -- the compiled-in resource types the devcluster serves from the start
* ``events`` -- ``events.k8s.io/v1`` Events, stored as core ``v1`` Events like kube-apiserver does
* ``openapi`` -- OpenAPI documents: just enough for kubectl to hand validation and patch computation
  to us
* ``resources`` -- the resource registry: which kinds exist, how they are addressed, and the
  discovery documents
* ``views`` -- how a request sees its resource: the stored type and version, the served apiVersion,
  a codec
"""

__all__: list[str] = []
