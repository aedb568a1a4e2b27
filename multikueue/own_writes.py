"""Our own writes, remembered so that their watch echoes do not wake the Workload reconciler again.

Every object MultiKueue writes comes back to it as a watch event: the copies it creates on the
workers, the finalizer it strips from a copy before deleting it, the deletions, the job it creates
on the winner, and its status writes to the manager's Workload. Kueue reconciles the local Workload
for each of them (``eventsBatchPeriod`` coalesces some); each such pass re-reads the copies on every
worker and finds nothing to do. ``OwnWrites`` remembers, per cluster, kind (as the caller names it) and object, the
resourceVersion an update of ours returned, the name we create (noted before the request: the
watch event can overtake the response) or the UID we delete (likewise), and ``is_echo``
recognises the event carrying exactly that: the object as we left it. An update's echo can still
overtake its response; it is then reconciled, as before.

Why skipping such an event cannot lose work:

* The pass that wrote it already acted on everything it had read, and an error after the write
  requeues the key with backoff regardless of events.
* Every input of a reconcile that changes afterwards has its own event: another writer's change to
  the same object arrives with a *different* resourceVersion (the informer delivers every version
  in order, so ours is recognised and the later one is not), a change of any other object has its
  own watch, and configuration and cluster changes have their triggers.
* Only writes after which the writer's pass is complete are registered on the manager: the
  nominations (the copies are created in the same pass) and ``Ready``/``clusterName`` of the
  admitting worker (the others are removed and the job synced first). The echo of
  ``Finished`` is *not* skipped: the next pass is what removes the copies (Kueue's order).

An entry is dropped when its echo (or a later echo of the same object) arrives, when the object
is deleted, or after ``ECHO_TTL_SECONDS`` (a relist after a watch gap may never show the version
we wrote). A resourceVersion or UID is never reused, so an entry can only ever match its own echo.
"""

from __future__ import annotations

from typing import Any, Final

from shared.kube import Clock

__all__ = ["ECHO_TTL_SECONDS", "MANAGER", "OwnWrites"]

#: the key of the manager cluster (workers are keyed by their MultiKueueCluster name)
MANAGER: Final = ""
ECHO_TTL_SECONDS: Final = 60.0
_PRUNE_EVERY: Final = 1024

Obj = dict[str, Any]
_Key = tuple[str, str, str, str]


def _key(cluster: str, kind: str, obj: Obj) -> _Key:
    metadata = obj.get("metadata") or {}
    return (cluster, kind, str(metadata.get("namespace") or ""), str(metadata.get("name") or ""))


class OwnWrites:
    def __init__(self, *, clock: Clock) -> None:
        self._clock = clock
        #: (cluster, kind, namespace, name) -> [("rv" | "uid" | "added", value, recorded at)], oldest first
        self._expected: dict[_Key, list[tuple[str, str, float]]] = {}
        self._recorded = 0

    def __len__(self) -> int:
        return sum(len(entries) for entries in self._expected.values())

    def wrote(self, cluster: str, kind: str, written: Any) -> None:
        """``written`` is what the API server returned for our create or update."""
        if not isinstance(written, dict):
            return
        version = str((written.get("metadata") or {}).get("resourceVersion") or "")
        if version:
            self._remember(_key(cluster, kind, written), "rv", version)

    def creating(self, cluster: str, kind: str, obj: Obj) -> None:
        """We are about to create ``obj``: its ``ADDED`` event is ours (noted *before* the request,
        as the event may be handled before the response). Should the create fail (someone else's
        object of that name), the pass fails and is requeued, so that event is not needed either."""
        self._remember(_key(cluster, kind, obj), "added", "")

    def not_created(self, cluster: str, kind: str, obj: Obj) -> None:
        """The create noted by ``creating`` failed: an ``ADDED`` of that name is not ours."""
        key = _key(cluster, kind, obj)
        kept = [entry for entry in self._expected.get(key, []) if entry[0] != "added"]
        if kept:
            self._expected[key] = kept
        else:
            self._expected.pop(key, None)

    def deleting(self, cluster: str, kind: str, obj: Obj) -> None:
        """We are about to delete ``obj`` (the last state we read of it, with its UID); noted before
        the request for the same reason. Its ``DELETED`` event shows an object our pass already
        treated as gone, whoever's deletion it was."""
        uid = str((obj.get("metadata") or {}).get("uid") or "")
        if uid:
            self._remember(_key(cluster, kind, obj), "uid", uid)

    def _remember(self, key: _Key, what: str, value: str) -> None:
        self._expected.setdefault(key, []).append((what, value, self._clock.now()))
        self._recorded += 1
        if self._recorded % _PRUNE_EVERY == 0:
            self._prune()

    def _prune(self) -> None:
        oldest = self._clock.now() - ECHO_TTL_SECONDS
        for key in list(self._expected):
            kept = [entry for entry in self._expected[key] if entry[2] >= oldest]
            if kept:
                self._expected[key] = kept
            else:
                del self._expected[key]

    def is_echo(self, cluster: str, kind: str, event_type: str, obj: Obj) -> bool:
        """Whether this watch event shows the object exactly as a write of ours left it (the entry
        and every older one of the object are then dropped: the watch delivers versions in order)."""
        key = _key(cluster, kind, obj)
        entries = self._expected.get(key)
        if not entries:
            return False
        metadata = obj.get("metadata") or {}
        if event_type == "DELETED":
            wanted = ("uid", str(metadata.get("uid") or ""))
        elif event_type == "ADDED" and any(what == "added" for what, _, _ in entries):
            wanted = ("added", "")
        else:
            wanted = ("rv", str(metadata.get("resourceVersion") or ""))
        oldest = self._clock.now() - ECHO_TTL_SECONDS
        for index, (what, value, at) in enumerate(entries):
            if (what, value) == wanted and at >= oldest:
                rest = entries[index + 1 :]
                if rest:
                    self._expected[key] = rest
                else:
                    del self._expected[key]
                return True
        if event_type == "DELETED":
            del self._expected[key]  # nothing of a deleted object can come back
        return False
