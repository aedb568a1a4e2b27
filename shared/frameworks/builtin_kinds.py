"""The kinds kueue-bridge ships an adapter for: the one table every other description derives from.

A built-in kind is named in several roles: configuration's ``integrations.frameworks`` lists it by
Kueue's framework name, the registry dispatches on its GVK and needs its plural for API paths and
webhook rules, ``spec.managedBy`` defaults away from its own controller, and preflight must know
which of Kueue's own integrations would manage the same kind. Each of those reads this table;
nothing else writes a built-in kind's name, GVK or plural.

Invariants:

* **Kueue's names where Kueue has the kind.** A row for a kind Kueue integrates is built from
  ``shared.kueue.kueue_integrations`` (framework name, group, storage version, kind, plural), so the two
  tables cannot disagree; ``kueue`` is that integration. Tekton's PipelineRun has no Kueue
  integration (tekton-kueue's name is used) and says so with ``kueue=None``.
* Each adapter class names its row (``RawJobAdapter.KIND``) and ``shared.frameworks.registry``
  builds its built-in frameworks from the adapters, one per row (tests/unit/frameworks prove it).
* This module imports no adapter, so configuration and the adapters themselves can read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from shared.constants import KUBERNETES_JOB_CONTROLLER
from shared.kube import GroupVersionKind
from shared.kueue.kueue_integrations import KUEUE_INTEGRATIONS, KueueIntegration

__all__ = [
    "APPWRAPPER",
    "BATCH_JOB",
    "BUILTIN_KINDS",
    "BUILTIN_KIND_BY_GVK",
    "JOBSET",
    "PIPELINERUN",
    "BuiltinKind",
]


@dataclass(frozen=True)
class BuiltinKind:
    """One built-in kind: ``name`` is its framework name in ``integrations.frameworks``."""

    name: str
    gvk: GroupVersionKind
    #: the resource in API paths and webhook rules
    plural: str
    #: the ``spec.managedBy`` value of the kind's own controller (Kueue's ``CanDefaultManagedBy``)
    own_controller: str
    #: Kueue's own integration for this kind, ``None`` when Kueue has none
    kueue: KueueIntegration | None


def _kueue_integrated(name: str, *, own_controller: str) -> BuiltinKind:
    integration = next(integration for integration in KUEUE_INTEGRATIONS if integration.framework == name)
    gvk = GroupVersionKind(integration.group, integration.version, integration.kind)
    return BuiltinKind(name, gvk, integration.plural, own_controller, integration)


BATCH_JOB: Final = _kueue_integrated("batch/job", own_controller=KUBERNETES_JOB_CONTROLLER)
JOBSET: Final = _kueue_integrated(
    "jobset.x-k8s.io/jobset", own_controller="jobset.sigs.k8s.io/jobset-controller"
)
APPWRAPPER: Final = _kueue_integrated(
    "workload.codeflare.dev/appwrapper", own_controller="workload.codeflare.dev/appwrapper-controller"
)
PIPELINERUN: Final = BuiltinKind(
    "tekton.dev/pipelinerun",
    GroupVersionKind("tekton.dev", "v1", "PipelineRun"),
    "pipelineruns",
    "tekton.dev/pipeline",
    kueue=None,
)

#: Framework name -> kind.
BUILTIN_KINDS: Final[Mapping[str, BuiltinKind]] = {
    kind.name: kind for kind in (BATCH_JOB, JOBSET, APPWRAPPER, PIPELINERUN)
}
BUILTIN_KIND_BY_GVK: Final[Mapping[GroupVersionKind, BuiltinKind]] = {
    kind.gvk: kind for kind in BUILTIN_KINDS.values()
}
