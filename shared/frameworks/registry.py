"""Which adapter handles which kind: built-in frameworks by Kueue name, declarative ones by GVK.

The webhook, the reconciler and the MultiKueue worker all start from a raw object and need its
adapter, plus each kind's plural resource name (for webhook rules and API paths). They build one
``FrameworkRegistry`` from configuration at start-up and call ``adapter_for(obj)`` per object.

Invariants:

* **Every configuration error surfaces at construction**: an unknown built-in name, two frameworks for
  one GVK, a declarative spec whose path or CEL does not compile. A registry that exists is usable.
* **Dispatch is exact** on ``apiVersion`` + ``kind``; an unknown kind is an ``UnmanagedKindError`` naming
  the GVK (the webhook answers it; the reconciler never watches such kinds in the first place).
* Built-in names and kinds are Kueue's (``batch/job`` ... ``tekton.dev/pipelinerun``), so a Kueue
  ``integrations.frameworks`` list means the same thing here. ``BUILTIN_FRAMEWORKS`` is derived from
  the built-in adapters, each of which names its row of ``shared.frameworks.builtin_kinds``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from shared.frameworks.appwrapper import AppWrapperAdapter
from shared.frameworks.base import AdapterConfigError, AdapterError, GenericJob
from shared.frameworks.batch_job import BatchJobAdapter
from shared.frameworks.builtin_kinds import BUILTIN_KINDS, BuiltinKind
from shared.frameworks.declarative import DeclarativeFramework
from shared.frameworks.jobset import JobSetAdapter
from shared.frameworks.spec import DeclarativeAdapterSpec
from shared.frameworks.tekton import PipelineRunAdapter
from shared.kube import GroupVersionKind, guess_plural, parse_group_version

__all__ = [
    "BUILTIN_ADAPTERS",
    "BUILTIN_FRAMEWORKS",
    "AdapterFactory",
    "DeclarativeKind",
    "Framework",
    "FrameworkRegistry",
    "InvalidExternalNameError",
    "ManagedKindLike",
    "UnknownFrameworkError",
    "UnmanagedKindError",
    "builtin_gvk",
    "builtin_plural",
    "gvk_of",
    "parse_external_name",
]

AdapterFactory = Callable[[dict[str, Any]], GenericJob]


@dataclass(frozen=True)
class Framework:
    """One managed kind: ``name`` is Kueue's framework name, or ``Kind.version.group`` if declarative."""

    name: str
    gvk: GroupVersionKind
    plural: str
    factory: AdapterFactory
    builtin: bool


#: The adapter of every built-in kind, by the kind it names (its ``KIND``).
BUILTIN_ADAPTERS: Final[Mapping[BuiltinKind, AdapterFactory]] = {
    BatchJobAdapter.KIND: BatchJobAdapter,
    JobSetAdapter.KIND: JobSetAdapter,
    AppWrapperAdapter.KIND: AppWrapperAdapter,
    PipelineRunAdapter.KIND: PipelineRunAdapter,
}

#: Framework name -> built-in framework, in ``BUILTIN_KINDS``' order (a row without an adapter
#: fails here, at import).
BUILTIN_FRAMEWORKS: Final[Mapping[str, Framework]] = {
    kind.name: Framework(kind.name, kind.gvk, kind.plural, BUILTIN_ADAPTERS[kind], builtin=True)
    for kind in BUILTIN_KINDS.values()
}


class UnknownFrameworkError(LookupError):
    """Not a built-in framework name."""

    def __init__(self, name: str) -> None:
        known = ", ".join(f'"{known}"' for known in BUILTIN_FRAMEWORKS)
        super().__init__(f'unknown framework "{name}": supported values: {known}')
        self.name = name


class UnmanagedKindError(LookupError):
    """No adapter is registered for the object's kind: this configuration does not manage it.

    Not ``shared.kube.UnknownKindError`` (the API server does not serve a kind).
    """

    def __init__(self, gvk: GroupVersionKind) -> None:
        super().__init__(f'no framework adapter for "{gvk}"')
        self.gvk = gvk


class InvalidExternalNameError(ValueError):
    """Not ``Kind.version.group`` (apimachinery's ``ParseKindArg`` needs at least two dots)."""

    def __init__(self, name: str) -> None:
        super().__init__(f'"{name}" is not a valid GVK: expected "Kind.version.group", e.g. "Job.v1.batch"')
        self.name = name


def parse_external_name(name: str) -> GroupVersionKind:
    """``"TrainingRun.v1alpha1.ml.example.com"`` -> ``ml.example.com/v1alpha1, Kind=TrainingRun``."""
    gvk = GroupVersionKind.from_kind_arg(name) if isinstance(name, str) else None
    if gvk is None or not gvk.kind or not gvk.version or not gvk.group:
        raise InvalidExternalNameError(str(name))
    return gvk


def builtin_gvk(name: str) -> GroupVersionKind:
    """The kind of a built-in framework (``"batch/job"`` -> ``batch/v1, Kind=Job``)."""
    try:
        return BUILTIN_FRAMEWORKS[name].gvk
    except KeyError:
        raise UnknownFrameworkError(name) from None


def builtin_plural(name: str) -> str:
    """The plural resource of a built-in framework (``"batch/job"`` -> ``"jobs"``)."""
    try:
        return BUILTIN_FRAMEWORKS[name].plural
    except KeyError:
        raise UnknownFrameworkError(name) from None


#: GVKs parsed so far by ``(apiVersion, kind)``: every reconcile pass asks for its job's adapter
_PARSED_GVKS: dict[tuple[str, str], GroupVersionKind] = {}
_PARSED_GVKS_LIMIT: Final = 1024


def gvk_of(obj: Mapping[str, Any]) -> GroupVersionKind:
    """The object's GVK from ``apiVersion`` and ``kind``; ``AdapterError`` naming a bad field."""
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if type(api_version) is str and type(kind) is str:
        known = _PARSED_GVKS.get((api_version, kind))
        if known is not None:
            return known
    if not isinstance(api_version, str) or not api_version:
        raise AdapterError(
            "apiVersion", "required field is missing" if api_version is None else "expected a string"
        )
    if not isinstance(kind, str) or not kind:
        raise AdapterError("kind", "required field is missing" if kind is None else "expected a string")
    try:
        group, version = parse_group_version(api_version)
    except ValueError:
        raise AdapterError("apiVersion", f"invalid apiVersion {api_version!r}") from None
    if not version:
        raise AdapterError("apiVersion", f"invalid apiVersion {api_version!r}")
    gvk = GroupVersionKind(group=group, version=version, kind=kind)
    if len(_PARSED_GVKS) < _PARSED_GVKS_LIMIT:
        _PARSED_GVKS[(api_version, kind)] = gvk
    return gvk


@dataclass(frozen=True)
class DeclarativeKind:
    """A declarative framework to register; ``field`` prefixes configuration errors."""

    gvk: GroupVersionKind
    spec: DeclarativeAdapterSpec
    plural: str | None = None
    field: str = "adapter"


class ManagedKindLike(Protocol):
    """What ``shared.config.ManagedKind`` provides (kept structural so this package stays a leaf)."""

    @property
    def gvk(self) -> GroupVersionKind: ...

    @property
    def resource(self) -> str: ...

    @property
    def builtin(self) -> str | None: ...

    @property
    def adapter(self) -> DeclarativeAdapterSpec | None: ...


class FrameworkRegistry:
    """GVK -> ``Framework``; ``adapter_for(obj)`` wraps a raw object in its adapter."""

    def __init__(self, *, builtin: Iterable[str] = (), declarative: Iterable[DeclarativeKind] = ()) -> None:
        self._by_gvk: dict[GroupVersionKind, Framework] = {}
        for name in builtin:
            if name not in BUILTIN_FRAMEWORKS:
                raise UnknownFrameworkError(name)
            self._add(BUILTIN_FRAMEWORKS[name])
        for kind in declarative:
            framework = DeclarativeFramework(kind.spec, gvk=kind.gvk, field=kind.field)
            self._add(
                Framework(
                    name=kind.gvk.kind_arg,
                    gvk=kind.gvk,
                    plural=kind.plural or guess_plural(kind.gvk.kind),
                    factory=framework,
                    builtin=False,
                )
            )

    @classmethod
    def from_managed_kinds(cls, kinds: Iterable[ManagedKindLike]) -> FrameworkRegistry:
        """Build from the configuration's resolved kinds (``KueueBridgeSettings``' managed kinds)."""
        builtin: list[str] = []
        declarative: list[DeclarativeKind] = []
        for kind in kinds:
            if kind.builtin is not None:
                builtin.append(kind.builtin)
            elif kind.adapter is not None:
                field = f"integrations.externalFrameworks[{kind.gvk.kind_arg}].adapter"
                declarative.append(DeclarativeKind(kind.gvk, kind.adapter, plural=kind.resource, field=field))
            else:
                raise AdapterConfigError(
                    f"integrations.externalFrameworks[{kind.gvk.kind_arg}]",
                    "neither a built-in framework nor a declarative adapter",
                )
        return cls(builtin=builtin, declarative=declarative)

    def _add(self, framework: Framework) -> None:
        existing = self._by_gvk.get(framework.gvk)
        if existing is not None:
            raise AdapterConfigError(
                framework.name, f'kind "{framework.gvk}" is already handled by framework "{existing.name}"'
            )
        self._by_gvk[framework.gvk] = framework

    def __contains__(self, gvk: object) -> bool:
        return gvk in self._by_gvk

    def __iter__(self) -> Iterator[Framework]:
        return iter(self._by_gvk.values())

    def __len__(self) -> int:
        return len(self._by_gvk)

    @property
    def gvks(self) -> tuple[GroupVersionKind, ...]:
        return tuple(self._by_gvk)

    def framework_for(self, gvk: GroupVersionKind) -> Framework:
        try:
            return self._by_gvk[gvk]
        except KeyError:
            raise UnmanagedKindError(gvk) from None

    def plural_for(self, gvk: GroupVersionKind) -> str:
        return self.framework_for(gvk).plural

    def adapter_for(self, obj: dict[str, Any]) -> GenericJob:
        """The adapter wrapping ``obj`` (mutations go to ``obj``); ``UnmanagedKindError`` if not managed."""
        return self.framework_for(gvk_of(obj)).factory(obj)
