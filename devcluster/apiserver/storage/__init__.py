"""Where objects live: the in-memory store (one table per resource, a global revision, bounded
watch history), its optional SQLite write-through, watch streams and list pagination.

Modules:

* ``pagination`` -- list continue tokens, in the shape kube-apiserver uses (base64 JSON ``{v, rv,
  start}``)
* ``persistence`` -- optional write-through persistence in SQLite (stdlib ``sqlite3``), for
  ``--data-dir``
* ``store`` -- in-memory object store: one table per resource, a global revision, bounded watch
  history
* ``watch`` -- watch streams: initial state or history replay, live events, bookmarks, timeouts, 410
  Expired
"""

__all__: list[str] = []
