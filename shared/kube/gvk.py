"""Group, version and kind: how an object names its type, and the one parser of ``apiVersion``.

apimachinery's ``schema.GroupVersionKind`` and ``schema.ParseGroupVersion``. Everything that turns an
``apiVersion`` (of an object, an ownerReference, a manifest) into a group and a version goes through
``GroupVersionKind.from_api_version`` or ``GroupVersionKind.of``; nothing splits the string by hand.

Invariants:

* ``"v1"`` is the core group (``group == ""``); ``"batch/v1"`` is group ``batch``, version ``v1``.
* An ``apiVersion`` with more than one ``/`` is not a group/version: ``parse_group_version`` raises
  ``ValueError``; ``from_api_version`` and ``of`` answer a GVK with an empty group and version, as
  ``schema.FromAPIVersionAndKind`` does, so it matches no served or managed kind.
* ``from_api_version`` and ``of`` hand out one shared instance per ``(apiVersion, kind)`` pair (a
  GVK is immutable, so sharing is invisible): they run for every object and ownerReference a
  controller looks at, and building a frozen dataclass cost more than the lookup. At most
  ``INTERNED_LIMIT`` pairs are kept (a cluster has a few hundred kinds; past the limit, e.g. with
  junk input, instances are built as before).
* This module imports nothing from the project: it is the bottom of ``shared.kube``, which is the
  bottom floor of ``shared`` (docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["GroupVersionKind", "guess_plural", "parse_group_version"]


def parse_group_version(api_version: str) -> tuple[str, str]:
    """``schema.ParseGroupVersion``: ``(group, version)``; ``ValueError`` for more than one ``/``."""
    if api_version in ("", "/"):
        return "", ""
    slashes = api_version.count("/")
    if slashes == 0:
        return "", api_version
    if slashes == 1:
        group, _, version = api_version.partition("/")
        return group, version
    raise ValueError(f"unexpected GroupVersion string: {api_version}")


#: ``(apiVersion, kind)`` pairs whose GVK instance is shared (module docstring)
INTERNED_LIMIT: Final = 4096


@dataclass(frozen=True, order=True)
class GroupVersionKind:
    group: str  # "" for the core group
    version: str
    kind: str

    @classmethod
    def from_api_version(cls, api_version: str, kind: str) -> GroupVersionKind:
        """``schema.FromAPIVersionAndKind``: a malformed ``api_version`` gives an empty group and version."""
        interned = _INTERNED.get((api_version, kind)) if cls is GroupVersionKind else None
        if interned is not None:
            return interned
        try:
            group, version = parse_group_version(api_version)
        except ValueError:
            group, version = "", ""
        gvk = cls(group, version, kind)
        if cls is GroupVersionKind and len(_INTERNED) < INTERNED_LIMIT:
            _INTERNED[(api_version, kind)] = gvk
        return gvk

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> GroupVersionKind:
        """The GVK named by ``obj``'s ``apiVersion`` and ``kind``: an object, an ownerReference, a manifest.

        A missing or non-string field counts as empty (``ObjectKind.GroupVersionKind()`` of a
        partial object); callers that must reject such an object check the fields themselves.
        """
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        return cls.from_api_version(
            api_version if isinstance(api_version, str) else "", kind if isinstance(kind, str) else ""
        )

    @classmethod
    def from_kind_arg(cls, text: str) -> GroupVersionKind | None:
        """``schema.ParseKindArg``'s GVK: ``"Job.v1.batch"``; ``None`` with fewer than two dots.

        Everything after the second dot is the group (``"TrainingRun.v1alpha1.ml.example.com"``);
        a part may be empty: callers that need all three check them.
        """
        if text.count(".") < 2:
            return None
        kind, version, group = text.split(".", 2)
        return cls(group, version, kind)

    @property
    def kind_arg(self) -> str:
        """``Kind.version.group``, the inverse of ``from_kind_arg`` (Kueue's external framework names)."""
        return f"{self.kind}.{self.version}.{self.group}"

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def __str__(self) -> str:
        # apimachinery's GroupVersionKind.String(), used in Kueue's messages: "batch/v1, Kind=Job";
        # the core group keeps its slash ("/v1, Kind=Pod"), unlike an apiVersion
        return f"{self.group}/{self.version}, Kind={self.kind}"


_INTERNED: dict[tuple[str, str], GroupVersionKind] = {}


def guess_plural(kind: str) -> str:
    """apimachinery's ``UnsafeGuessKindToResource`` (a CRD's real plural may differ: pass it)."""
    singular = kind.lower()
    if singular.endswith("s"):
        return singular + "es"
    if singular.endswith("y"):
        return singular[:-1] + "ies"
    return singular + "s"
