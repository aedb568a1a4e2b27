"""Reading a request: bodies and media types (JSON, protobuf), query options, decoding a body into
an object, and PATCH bodies.

Modules:

* ``bodies`` -- request bodies: media types, the 3 MiB limit, DeleteOptions (query parameters:
  :mod:`.query_options`)
* ``object_decoding`` -- decoding a create or update body into an object, with kube-apiserver's 400
  texts
* ``patching`` -- PATCH bodies: JSON merge patch, JSON patch and strategic merge patch
* ``protobuf`` -- Protobuf request bodies (``application/vnd.kubernetes.protobuf``) for the kinds
  kubectl sends so
* ``query_options`` -- query parameters as kube-apiserver reads them: decoded into ``*Options``,
  then validated
"""

__all__: list[str] = []
