"""What the built-in adapters share: holding the raw object, ``spec.managedBy`` and ``spec.suspend``.

Built-in adapters wrap the raw object read from the API server (never a copy, never a model) and
mutate it in place; ``RawJobAdapter`` is that holder (``RawObjectAdapter``, which declarative
adapters share, plus the kind's ``BUILTIN_KINDS`` row). All four built-in kinds keep their manager in
``spec.managedBy`` and may have it defaulted to MultiKueue only while it is unset or names the
kind's own controller (Kueue's ``CanDefaultManagedBy``); ``SpecManagedBy`` implements
``JobWithManagedBy`` once for them. Three of them (batch Job, JobSet, AppWrapper) are suspended by
``spec.suspend: true``, which ``SpecSuspend`` reads and writes; Tekton's PipelineRun is not.
"""

from __future__ import annotations

from typing import Any, ClassVar

from shared.frameworks.base import RawObjectAdapter
from shared.frameworks.builtin_kinds import BuiltinKind
from shared.frameworks.paths import parse_path
from shared.kube import GroupVersionKind

__all__ = ["RawJobAdapter", "SpecManagedBy", "SpecSuspend"]

_MANAGED_BY = parse_path("spec.managedBy")
_SUSPEND = parse_path("spec.suspend")
_NAME = parse_path("metadata.name")


class RawJobAdapter(RawObjectAdapter):
    """Holds the raw job dict; subclasses set ``KIND`` (their row of ``BUILTIN_KINDS``)."""

    KIND: ClassVar[BuiltinKind]

    @property
    def gvk(self) -> GroupVersionKind:
        return self.KIND.gvk

    def _object_name(self) -> str:
        return _NAME.get_typed(self._obj, str, default="")


class SpecManagedBy(RawJobAdapter):
    """``JobWithManagedBy`` on ``spec.managedBy``; the kind's own controller is its ``KIND``'s."""

    def can_default_managed_by(self) -> bool:
        return self.managed_by() in (None, self.KIND.own_controller)

    def managed_by(self) -> str | None:
        return _MANAGED_BY.get_typed(self._obj, str, default=None)

    def set_managed_by(self, value: str | None) -> None:
        if value is None:
            _MANAGED_BY.delete(self._obj)
        else:
            _MANAGED_BY.set(self._obj, value)


class SpecSuspend(SpecManagedBy):
    """A kind suspended by ``spec.suspend: true`` (absent: running)."""

    @staticmethod
    def _spec_suspended(obj: dict[str, Any]) -> bool:
        return _SUSPEND.get_typed(obj, bool, default=False)

    def is_suspended(self) -> bool:
        return self._spec_suspended(self._obj)

    def suspend(self) -> None:
        _SUSPEND.set(self._obj, True)

    def _unsuspend(self) -> None:
        _SUSPEND.set(self._obj, False)
