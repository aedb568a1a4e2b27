"""What the phase machine needs from the outside world, as protocols.

The machine (:mod:`appwrapper.phases`) decides; these ports act. Keeping them narrow lets the unit
tables drive the machine with an in-memory cluster and a fake clock, and lets :mod:`appwrapper.cluster`
implement them on ``shared.kube`` (the API server is the only thing a component talks to).

Contract of :class:`ClusterPort` (the in-memory fake honours it too):

* failures are ``shared.kube`` errors: ``AlreadyExists``, ``Invalid``, ``NotFound``, ``Conflict``,
  ``UnknownKindError`` (the kind is not served: its CRD is missing, Go's ``NoMatch``) ...;
* ``delete`` with ``uid`` deletes only that object (a UID precondition), else ``Conflict``;
* ``get`` answers ``None`` for an object that does not exist, or whose kind is not served (no
  object of it can exist); ``delete`` answers ``False`` for the same two cases;
* ``get`` and ``list_pods`` read the API server, not a cache: they decide "the component is gone"
  and "every pod is gone", verdicts a stale cache must not give (AppWrapper issue #416);
  ``cached_pods`` may lag and only feeds the pod counts of a running AppWrapper;
* ``set_finalizers`` is an optimistic-lock write (``Conflict`` on a stale resourceVersion) and
  returns the updated object; ``patch_status`` is a JSON merge patch of ``status`` (it returns the
  updated object too: its new resourceVersion is what a following finalizer write must name).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from shared.models.base import WireDict

__all__ = ["ClusterPort", "EventSink", "PhaseObserver"]


class ClusterPort(Protocol):
    async def patch_status(self, aw: Mapping[str, Any], patch: WireDict) -> WireDict:
        """Merge-patch ``{"status": ...}`` into the AppWrapper's status subresource; the updated object."""

    async def set_finalizers(self, aw: Mapping[str, Any], finalizers: list[str]) -> WireDict:
        """Write ``metadata.finalizers`` at the AppWrapper's resourceVersion; the updated object."""

    async def create(self, obj: WireDict) -> WireDict:
        """Create ``obj`` (apiVersion/kind/metadata.namespace set); the created object."""

    async def get(self, *, api_version: str, kind: str, namespace: str, name: str) -> WireDict | None: ...

    async def delete(
        self,
        *,
        api_version: str,
        kind: str,
        namespace: str,
        name: str,
        uid: str | None = None,
        propagation_policy: str | None = None,
        grace_period_seconds: int | None = None,
    ) -> bool:
        """``True`` when a delete was issued, ``False`` when there was nothing to delete.

        ``uid`` is a precondition: when the object of that name has another UID the API server
        answers ``Conflict`` and nothing is deleted."""

    async def list_pods(self, *, namespace: str, appwrapper: str) -> list[WireDict]:
        """Pods labelled ``workload.codeflare.dev/appwrapper=<appwrapper>``, read live."""

    def cached_pods(self, *, namespace: str, appwrapper: str) -> list[WireDict]:
        """The same pods from an informer cache (may lag)."""

    async def delete_pod(self, *, namespace: str, name: str, grace_period_seconds: int) -> None: ...


class EventSink(Protocol):
    def record(self, *, regarding: Mapping[str, Any], event_type: str, reason: str, message: str) -> None:
        """Record a Kubernetes Event about ``regarding``; never blocks, never raises."""


class PhaseObserver(Protocol):
    def __call__(self, *, namespace: str, phase: str) -> None:
        """Called after every phase transition was written (``appwrapper_phase_total``)."""
