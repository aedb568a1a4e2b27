"""Topology-aware-scheduling assignments: v1beta1 ``domains`` <-> v1beta2 compressed ``slices``.

A Workload's ``status.admission.podSetAssignments[].topologyAssignment`` says how many pods go to
which topology domain (e.g. ``[block-a, rack-1, node-7] -> 2 pods``).

* v1beta1 lists the domains: ``{levels: [l0..ln], domains: [{values: [v0..vn], count}]}``.
* v1beta2 compresses them: ``{levels, slices: [{domainCount, podCounts, valuesPerLevel}]}``; in a
  slice, ``podCounts`` is ``{universal: n}`` (every domain gets n pods) or ``{individual: [..]}``,
  and each level's values are ``{universal: v}`` (all domains share v) or
  ``{individual: {prefix?, roots: [..], suffix?}}`` (domain i has ``prefix + roots[i] + suffix``).

Invariants:

* **Decoding is exact**: ``slices_to_domains`` expands every slice, in order, to the domains it
  stands for; ``domains_to_slices(slices_to_domains(x))`` stands for the same domains as ``x``.
* **Encoding is canonical, not unique**: Kueue documents the choice of v1beta2 representation as an
  implementation detail. ``domains_to_slices`` produces what Kueue produces with its default
  feature gates: a single maximally-compacted slice (no slice at all for no domains), with the
  longest common prefix and suffix per level, trimmed so they never overlap in the shortest value.
* **Bad input raises ``ConversionError`` naming the path** (``...slices[1].podCounts.individual``);
  nothing is guessed. Fields of the assignment other than ``levels``/``domains``/``slices`` are kept.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from shared.models.base import WireDict

__all__ = [
    "ConversionError",
    "TopologyDomain",
    "domains_to_slices",
    "slices_to_domains",
    "topology_domains",
]


class ConversionError(ValueError):
    """A wire object cannot be converted; ``path`` names the offending field."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


@dataclass(frozen=True)
class TopologyDomain:
    """One domain of an assignment: its value at every level, and how many pods it gets."""

    values: tuple[str, ...]
    count: int


def topology_domains(assignment: WireDict, *, path: str = "topologyAssignment") -> list[TopologyDomain]:
    """Every domain of a v1beta2 assignment, in order (what the compressed slices stand for)."""
    levels = _string_list(assignment.get("levels", []), path=f"{path}.levels")
    slices = assignment.get("slices", [])
    if not isinstance(slices, list):
        raise ConversionError(f"{path}.slices", "must be a list")
    domains: list[TopologyDomain] = []
    for index, slice_ in enumerate(slices):
        domains.extend(_expand_slice(slice_, level_count=len(levels), path=f"{path}.slices[{index}]"))
    return domains


def slices_to_domains(assignment: WireDict, *, path: str = "topologyAssignment") -> WireDict:
    """A v1beta2 assignment in v1beta1 form (``slices`` replaced by ``domains``)."""
    domains = topology_domains(assignment, path=path)
    converted = {key: copy.deepcopy(value) for key, value in assignment.items() if key != "slices"}
    converted["domains"] = [{"values": list(domain.values), "count": domain.count} for domain in domains]
    return converted


def domains_to_slices(assignment: WireDict, *, path: str = "topologyAssignment") -> WireDict:
    """A v1beta1 assignment in v1beta2 form (``domains`` replaced by one compacted slice)."""
    levels = _string_list(assignment.get("levels", []), path=f"{path}.levels")
    raw_domains = assignment.get("domains", [])
    if not isinstance(raw_domains, list):
        raise ConversionError(f"{path}.domains", "must be a list")
    domains = [
        _parse_domain(domain, level_count=len(levels), path=f"{path}.domains[{index}]")
        for index, domain in enumerate(raw_domains)
    ]
    converted = {key: copy.deepcopy(value) for key, value in assignment.items() if key != "domains"}
    converted["slices"] = [_compact_slice(domains, level_count=len(levels))] if domains else []
    return converted


# --- decoding --------------------------------------------------------------------------------------


def _expand_slice(slice_: Any, *, level_count: int, path: str) -> list[TopologyDomain]:
    if not isinstance(slice_, dict):
        raise ConversionError(path, "must be an object")
    domain_count = slice_.get("domainCount")
    if not isinstance(domain_count, int) or isinstance(domain_count, bool) or domain_count < 0:
        raise ConversionError(f"{path}.domainCount", f"must be a non-negative integer, got {domain_count!r}")
    counts = _pod_counts(slice_.get("podCounts"), domain_count=domain_count, path=f"{path}.podCounts")
    values_per_level = slice_.get("valuesPerLevel")
    if not isinstance(values_per_level, list) or len(values_per_level) != level_count:
        raise ConversionError(
            f"{path}.valuesPerLevel", f"must be a list of {level_count} entries (one per level)"
        )
    columns = [
        _level_values(level, domain_count=domain_count, path=f"{path}.valuesPerLevel[{index}]")
        for index, level in enumerate(values_per_level)
    ]
    return [
        TopologyDomain(values=tuple(column[row] for column in columns), count=counts[row])
        for row in range(domain_count)
    ]


def _pod_counts(pod_counts: Any, *, domain_count: int, path: str) -> list[int]:
    if not isinstance(pod_counts, dict):
        raise ConversionError(path, "must be an object with 'universal' or 'individual'")
    universal = pod_counts.get("universal")
    if universal is not None:
        if not isinstance(universal, int) or isinstance(universal, bool):
            raise ConversionError(f"{path}.universal", f"must be an integer, got {universal!r}")
        return [universal] * domain_count
    individual = pod_counts.get("individual")
    if not isinstance(individual, list) or len(individual) < domain_count:
        raise ConversionError(f"{path}.individual", f"must list at least {domain_count} pod counts")
    for index, count in enumerate(individual):
        if not isinstance(count, int) or isinstance(count, bool):
            raise ConversionError(f"{path}.individual[{index}]", f"must be an integer, got {count!r}")
    return list(individual[:domain_count])


def _level_values(level: Any, *, domain_count: int, path: str) -> list[str]:
    if not isinstance(level, dict):
        raise ConversionError(path, "must be an object with 'universal' or 'individual'")
    universal = level.get("universal")
    if universal is not None:
        if not isinstance(universal, str):
            raise ConversionError(f"{path}.universal", f"must be a string, got {universal!r}")
        return [universal] * domain_count
    individual = level.get("individual")
    if not isinstance(individual, dict):
        raise ConversionError(path, "must have 'universal' or 'individual'")
    prefix = individual.get("prefix") or ""
    suffix = individual.get("suffix") or ""
    if not isinstance(prefix, str) or not isinstance(suffix, str):
        raise ConversionError(f"{path}.individual", "prefix and suffix must be strings")
    roots = _string_list(individual.get("roots"), path=f"{path}.individual.roots")
    if len(roots) < domain_count:
        raise ConversionError(f"{path}.individual.roots", f"must list at least {domain_count} roots")
    return [prefix + root + suffix for root in roots[:domain_count]]


def _string_list(value: Any, *, path: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConversionError(path, "must be a list of strings")
    return value


# --- encoding --------------------------------------------------------------------------------------


def _parse_domain(domain: Any, *, level_count: int, path: str) -> TopologyDomain:
    if not isinstance(domain, dict):
        raise ConversionError(path, "must be an object")
    values = _string_list(domain.get("values"), path=f"{path}.values")
    if len(values) != level_count:
        raise ConversionError(f"{path}.values", f"must have one value per level ({level_count})")
    count = domain.get("count")
    if not isinstance(count, int) or isinstance(count, bool):
        raise ConversionError(f"{path}.count", f"must be an integer, got {count!r}")
    return TopologyDomain(values=tuple(values), count=count)


def _compact_slice(domains: list[TopologyDomain], *, level_count: int) -> WireDict:
    counts = [domain.count for domain in domains]
    pod_counts: WireDict = {"universal": counts[0]} if len(set(counts)) == 1 else {"individual": counts}
    return {
        "domainCount": len(domains),
        "podCounts": pod_counts,
        "valuesPerLevel": [
            _compact_level([domain.values[level] for domain in domains]) for level in range(level_count)
        ],
    }


def _compact_level(values: list[str]) -> WireDict:
    if len(set(values)) == 1:
        return {"universal": values[0]}
    prefix = _common_prefix(values)
    suffix = _common_prefix([value[::-1] for value in values])[::-1]
    shortest = min(len(value) for value in values)
    if len(prefix) + len(suffix) > shortest:
        # Kueue keeps the whole suffix and shortens the prefix (e.g. {"ababa", "aba"}).
        prefix = prefix[: shortest - len(suffix)]
    individual: WireDict = {}
    if prefix:
        individual["prefix"] = prefix
    individual["roots"] = [value[len(prefix) : len(value) - len(suffix)] for value in values]
    if suffix:
        individual["suffix"] = suffix
    return {"individual": individual}


def _common_prefix(values: list[str]) -> str:
    """The longest string every value starts with (character by character, not path components)."""
    first, last = min(values), max(values)
    length = 0
    while length < min(len(first), len(last)) and first[length] == last[length]:
        length += 1
    return first[:length]
