"""A job adapter over the informer's cached object that copies it only when it is about to change.

Every reconcile reads its job from the informer cache and wraps it in the kind's adapter. Adapters
mutate the object they wrap (start, stop, suspend, managedBy), and cached objects are shared and
must never change, so the reader used to hand out a deep copy on every pass: about a tenth of the
reconciler's CPU (``bench/reconciler_cpu.py``), although most passes never change the job.
``copy_on_write(adapter, factory)`` wraps an adapter built over the *cached* object; the first call
of a mutating method (or ``own()``) re-creates the adapter over a deep copy and mutates that.
It lives beside the adapter contracts (``base``, ``capabilities``) because it must follow them:
``MUTATORS`` lists every mutating method they declare, and any reader of cached jobs may use it.

Invariants:

* **The cached object is never mutated through the wrapper**: every mutating method of every
  adapter protocol (``MUTATORS``) and ``own()`` switch to a private copy first; everything else is
  a read, delegated as is. Code that writes to ``job.obj`` directly must call ``own()`` first
  (``JobControl`` does, before it replaces the object with a write's result).
* **The wrapper has exactly the adapter's capabilities**: one wrapper class per adapter class,
  with a delegating method for each public method of that class, so ``shared.frameworks.
  capabilities`` (cached per class) answers for the wrapper as for the adapter.
* After the switch, ``obj`` is the private copy and reflects every change, as an adapter's does;
  objects handed out earlier (``obj`` read before the switch) stay the cached, unchanged ones.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

from shared.frameworks.base import FinishedState, GenericJob
from shared.jsontree import json_tree_copy
from shared.kube import GroupVersionKind
from shared.kueue.podset import PodSetInfo
from shared.models.base import WireDict
from shared.models.workload import PodSet

__all__ = ["MUTATORS", "CopyOnWriteJob", "copy_on_write"]

AdapterFactory = Callable[[WireDict], GenericJob]

#: every adapter method that changes the wrapped object (GenericJob and JobWithManagedBy)
MUTATORS: Final = frozenset({"suspend", "run_with_pod_sets_info", "restore_pod_sets_info", "set_managed_by"})


class CopyOnWriteJob:
    """``GenericJob`` delegating to an adapter over a shared object until the first change."""

    __slots__ = ("_factory", "_inner", "_owned")

    def __init__(self, inner: GenericJob, factory: AdapterFactory) -> None:
        self._inner = inner
        self._factory = factory
        self._owned = False

    def own(self) -> GenericJob:
        """Switch to an adapter over a private deep copy (once); returns the adapter now wrapped."""
        if not self._owned:
            self._inner = self._factory(json_tree_copy(self._inner.obj))
            self._owned = True
        return self._inner

    @property
    def owned(self) -> bool:
        return self._owned

    @property
    def adapter_class(self) -> type:
        """The class of the wrapped adapter (for decisions that depend on the kind's adapter)."""
        return type(self._inner)

    @property
    def obj(self) -> WireDict:
        return self._inner.obj

    @property
    def gvk(self) -> GroupVersionKind:
        return self._inner.gvk

    def is_suspended(self) -> bool:
        return self._inner.is_suspended()

    def suspend(self) -> None:
        self.own().suspend()

    def run_with_pod_sets_info(self, infos: Sequence[PodSetInfo]) -> None:
        self.own().run_with_pod_sets_info(infos)

    def restore_pod_sets_info(self, infos: Sequence[PodSetInfo]) -> bool:
        return self.own().restore_pod_sets_info(infos)

    def finished(self) -> FinishedState:
        return self._inner.finished()

    def pod_sets(self) -> list[PodSet]:
        return self._inner.pod_sets()

    def is_active(self) -> bool:
        return self._inner.is_active()

    def pods_ready(self) -> bool:
        return self._inner.pods_ready()


_WRAPPERS: dict[type, type[CopyOnWriteJob]] = {}


def _delegate(name: str) -> Callable[..., Any]:
    if name in MUTATORS:

        def mutate(self: CopyOnWriteJob, *args: Any, **kwargs: Any) -> Any:
            return getattr(self.own(), name)(*args, **kwargs)

        return mutate

    def read(self: CopyOnWriteJob, *args: Any, **kwargs: Any) -> Any:
        return getattr(self._inner, name)(*args, **kwargs)

    return read


def _read_through(name: str) -> Callable[[CopyOnWriteJob], Any]:
    def read(self: CopyOnWriteJob) -> Any:
        return getattr(self._inner, name)

    return read


def _wrapper_class(adapter_class: type) -> type[CopyOnWriteJob]:
    wrapper = _WRAPPERS.get(adapter_class)
    if wrapper is None:
        namespace: dict[str, Any] = {"__slots__": ()}
        for name in dir(adapter_class):
            if name.startswith("_") or hasattr(CopyOnWriteJob, name):
                continue
            attribute = getattr(adapter_class, name, None)
            if callable(attribute):
                namespace[name] = _delegate(name)
            else:  # a property or a class constant: read through
                namespace[name] = property(_read_through(name))
        wrapper = _WRAPPERS[adapter_class] = type(
            f"CopyOnWrite{adapter_class.__name__}", (CopyOnWriteJob,), namespace
        )
    return wrapper


def copy_on_write(adapter: GenericJob, factory: AdapterFactory) -> CopyOnWriteJob:
    """``adapter`` (built over a cached object by ``factory``) behind a copy-on-write wrapper."""
    return _wrapper_class(type(adapter))(adapter, factory)
