"""PodSetInfo: what admission injects into a job's pod templates, and how it is taken back out.

A ``PodSetInfo`` is built from a Workload's ``status.admission`` (flavors -> node labels and
tolerations, the ``kueue.x-k8s.io/podset`` label, queue labels, the workload annotation and
admission-check ``podSetUpdates``), merged into a pod template on start, and restored from the
Workload's ``spec.podSets`` on stop.

Invariant (Kueue's ``podset.Merge``): a merge never overwrites a key the template already has with a
different value; such a conflict is a permanent ``PodSetInfoConflictError`` (the Workload is then
finished ``FailedToStart``), never a silent overwrite.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["PodSetInfo", "PodSetInfoConflictError", "PodSetInfoError"]


class PodSetInfoError(Exception):
    """A permanent error starting a job from its admission (Kueue's ``ErrInvalidPodsetInfo``)."""


class PodSetInfoConflictError(PodSetInfoError):
    """Admission data conflicts with what the pod template or another admission check already set."""


@dataclass
class PodSetInfo:
    name: str
    count: int
    annotations: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: list[dict[str, Any]] = field(default_factory=list)
    scheduling_gates: list[dict[str, Any]] = field(default_factory=list)
