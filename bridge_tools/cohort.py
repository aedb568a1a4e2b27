"""A ClusterQueue's cohort tree, and the quota Kueue's flavor assigner sees it may use.

Kueue's ``pkg/cache/scheduler/resource_node.go`` (v0.20) decides whether a request fits a
ClusterQueue in a cohort with two numbers per (flavor, resource), and this module computes the same
two from the objects, so ``explain`` can say "pending" or "fits by borrowing" the way Kueue would:

* every node -- a ClusterQueue, or a Cohort (an object with ``spec.parentName`` and its own
  ``spec.resourceGroups``, or just a name ClusterQueues point at) -- has quotas (``nominalQuota``,
  ``borrowingLimit``, ``lendingLimit``; a missing one is 0 with no limits);
* ``localQuota`` = ``max(0, subtreeQuota - lendingLimit)`` with a lending limit, else 0: the part
  only its own subtree may use;
* a ClusterQueue's ``subtreeQuota`` is its nominal quota and its usage what its Workloads reserve; a
  Cohort's ``subtreeQuota`` is its own nominal quota plus, over its children, ``subtreeQuota -
  localQuota``, and its usage, over its children, ``max(0, usage - localQuota)``;
* **available** (``available``): at the root ``subtreeQuota - usage``; below it
  ``max(0, localQuota - usage)`` plus the parent's available, the latter capped -- with a borrowing
  limit -- by ``subtreeQuota - localQuota - max(0, usage - localQuota) + borrowingLimit``. The
  ClusterQueue's figure is floored at 0 (``ClusterQueueSnapshot.Available``);
* **potentially available** (``potentialAvailable``, the largest request it could ever admit): at
  the root ``subtreeQuota``; below it ``localQuota`` plus the parent's, capped with a borrowing
  limit by ``subtreeQuota + borrowingLimit``.

The flavor assigner then says "no fit" when the request exceeds the potential, "fit" when it is
within the available, else waits (or preempts: not simulated here). A ClusterQueue without a cohort
is a root: nominal minus usage, and nominal.

Invariants: pure (objects in, numbers out); never raises for odd objects (unparseable quantities
count as 0, a ClusterQueue that cannot be read is left out); a cycle of ``parentName`` (which Kueue
reports by making the ClusterQueues inactive) answers ``None`` with the reason instead of numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from shared.kueue.quantity import parse_quantity
from shared.models.base import WireDict

__all__ = ["CohortTree", "FlavorResource", "Limits", "build_cohort_tree"]

FlavorResource = tuple[str, str]
_ZERO = Decimal(0)


@dataclass(frozen=True)
class Limits:
    nominal: Decimal = _ZERO
    borrowing_limit: Decimal | None = None
    lending_limit: Decimal | None = None


@dataclass
class _Node:
    name: str
    quotas: dict[FlavorResource, Limits]
    #: a ClusterQueue's reserved quota (``None`` for a Cohort, whose usage is its children's)
    own_usage: Mapping[FlavorResource, Decimal] | None = None
    parent: _Node | None = None
    children: list[_Node] = field(default_factory=list)
    subtree: dict[FlavorResource, Decimal] = field(default_factory=dict)
    usage: dict[FlavorResource, Decimal] = field(default_factory=dict)

    def local_quota(self, fr: FlavorResource) -> Decimal:
        lending = self.quotas.get(fr, Limits()).lending_limit
        return _ZERO if lending is None else max(_ZERO, self.subtree.get(fr, _ZERO) - lending)


def _quantity(value: Any) -> Decimal:
    try:
        return parse_quantity(value)
    except ValueError:
        return _ZERO


def quotas_of(spec: Mapping[str, Any]) -> dict[FlavorResource, Limits]:
    """The quotas of a ClusterQueue's or Cohort's ``spec.resourceGroups``."""
    found: dict[FlavorResource, Limits] = {}
    for group in spec.get("resourceGroups") or []:
        flavors = group.get("flavors") if isinstance(group, dict) else None
        for flavor in flavors or []:
            if not isinstance(flavor, dict):
                continue
            for quota in flavor.get("resources") or []:
                if not isinstance(quota, dict):
                    continue
                borrowing, lending = quota.get("borrowingLimit"), quota.get("lendingLimit")
                found[(str(flavor.get("name") or ""), str(quota.get("name") or ""))] = Limits(
                    nominal=_quantity(quota.get("nominalQuota") or 0),
                    borrowing_limit=None if borrowing is None else _quantity(borrowing),
                    lending_limit=None if lending is None else _quantity(lending),
                )
    return found


def _accumulate(node: _Node) -> None:
    """Kueue's ``updateCohortResourceNode``: subtree quota and usage, from the leaves up."""
    node.subtree = {fr: limits.nominal for fr, limits in node.quotas.items()}
    node.usage = dict(node.own_usage or {})
    for child in node.children:
        _accumulate(child)
        for fr, quota in child.subtree.items():
            node.subtree[fr] = node.subtree.get(fr, _ZERO) + quota - child.local_quota(fr)
        for fr, used in child.usage.items():
            node.usage[fr] = node.usage.get(fr, _ZERO) + max(_ZERO, used - child.local_quota(fr))


def _available(node: _Node, fr: FlavorResource) -> Decimal:
    if node.parent is None:
        return node.subtree.get(fr, _ZERO) - node.usage.get(fr, _ZERO)
    from_parent = _available(node.parent, fr)
    borrowing = node.quotas.get(fr, Limits()).borrowing_limit
    local = node.local_quota(fr)
    used = node.usage.get(fr, _ZERO)
    if borrowing is not None:
        stored_in_parent = node.subtree.get(fr, _ZERO) - local
        used_in_parent = max(_ZERO, used - local)
        from_parent = min(stored_in_parent - used_in_parent + borrowing, from_parent)
    return max(_ZERO, local - used) + from_parent


def _potential(node: _Node, fr: FlavorResource) -> Decimal:
    if node.parent is None:
        return node.subtree.get(fr, _ZERO)
    found = node.local_quota(fr) + _potential(node.parent, fr)
    borrowing = node.quotas.get(fr, Limits()).borrowing_limit
    if borrowing is not None:
        found = min(node.subtree.get(fr, _ZERO) + borrowing, found)
    return found


@dataclass(frozen=True)
class CohortTree:
    """One ClusterQueue's place in its cohort tree (see the module docstring)."""

    cluster_queue: str
    cohort: str | None
    root: str
    cluster_queues: int
    cohorts: int
    _node: _Node

    def available(self, fr: FlavorResource) -> Decimal:
        """What the ClusterQueue can admit now in ``fr`` (its own unused quota and what it may borrow)."""
        return max(_ZERO, _available(self._node, fr))

    def potential(self, fr: FlavorResource) -> Decimal:
        """The largest request in ``fr`` it could ever admit (with borrowing, nothing else running)."""
        return _potential(self._node, fr)


def build_cohort_tree(
    *,
    cluster_queue: str,
    cluster_queues: Iterable[WireDict],
    cohorts: Iterable[WireDict],
    usage_of: Callable[[WireDict], Mapping[FlavorResource, Decimal]],
) -> CohortTree | str:
    """The tree of ``cluster_queue`` (named in ``cluster_queues``), or why it cannot be computed."""
    queues = {
        str((raw.get("metadata") or {}).get("name") or ""): raw
        for raw in cluster_queues
        if isinstance(raw.get("spec"), dict)
    }
    own = queues.get(cluster_queue)
    if own is None:
        return f"ClusterQueue {cluster_queue} cannot be read"
    cohort_objects = {str((raw.get("metadata") or {}).get("name") or ""): raw for raw in cohorts}

    def parent_of(cohort: str) -> str | None:
        spec = (cohort_objects.get(cohort) or {}).get("spec") or {}
        parent = spec.get("parentName") if isinstance(spec, dict) else None
        return str(parent) if parent else None

    def root_of(cohort: str) -> str | None:
        seen = [cohort]
        while (parent := parent_of(seen[-1])) is not None:
            if parent in seen:
                return None
            seen.append(parent)
        return seen[-1]

    start = str(own["spec"].get("cohortName") or "")
    if not start:
        node = _Node(cluster_queue, quotas_of(own["spec"]), own_usage=usage_of(own))
        _accumulate(node)
        return CohortTree(cluster_queue, None, cluster_queue, 1, 0, node)
    root = root_of(start)
    if root is None:
        return f"the parentName chain of cohort {start} has a cycle"
    names = {start, *cohort_objects, *(str(q["spec"].get("cohortName") or "") for q in queues.values())}
    members = {name for name in names if name and root_of(name) == root}
    nodes = {
        name: _Node(name, quotas_of((cohort_objects.get(name) or {}).get("spec") or {})) for name in members
    }
    for name, node in nodes.items():
        parent = parent_of(name)
        if parent is not None and parent in nodes:
            node.parent = nodes[parent]
            nodes[parent].children.append(node)
    target: _Node | None = None
    count = 0
    for name, raw in queues.items():
        cohort = str(raw["spec"].get("cohortName") or "")
        if cohort not in nodes:
            continue
        leaf = _Node(name, quotas_of(raw["spec"]), own_usage=usage_of(raw), parent=nodes[cohort])
        nodes[cohort].children.append(leaf)
        count += 1
        if name == cluster_queue:
            target = leaf
    if target is None:  # cannot happen: its cohort is in the tree by construction
        return f"ClusterQueue {cluster_queue} is not in the tree of cohort {root}"
    _accumulate(nodes[root])
    return CohortTree(cluster_queue, start, root, count, len(nodes), target)
