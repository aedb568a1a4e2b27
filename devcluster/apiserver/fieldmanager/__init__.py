"""Server-side apply and ``managedFields``: field sets, merge strategies, structured-merge-diff's
operations, the field manager, and the request side of ownership.

Modules:

* ``builtin_fieldtypes`` -- merge strategies of the built-in kinds the devcluster serves, as
  kube-apiserver 1.36's OpenAPI has them
* ``fieldsets`` -- field sets: sets of field paths, kept in the ``FieldsV1`` tree shape that
  ``managedFields`` stores
* ``fieldtypes`` -- merge strategies of a kind's fields: what server-side apply needs to know about
  an object's shape
* ``managedfields`` -- ``metadata.managedFields``: field ownership as kube-apiserver's field manager
  keeps it
* ``ownership`` -- the request side of field ownership: who writes (fieldManager), where, and what
  an apply may send
* ``structured`` -- structured-merge-diff's operations on plain JSON objects: field sets, diffs,
  apply merges, removal
"""

__all__: list[str] = []
