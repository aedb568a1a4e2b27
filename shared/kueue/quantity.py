"""Resource quantities as Kueue computes and prints them: per-pod requests, sums, canonical strings.

Kueue's scheduler writes ``status.admission.podSetAssignments[].resourceUsage`` and a ClusterQueue's
usage as canonical Kubernetes strings (``"2"``, ``"400Mi"``, ``"1500m"``): CPU as milli-units in
decimal SI, memory/ephemeral storage/hugepages in binary SI, everything else as plain decimal SI;
:func:`format_usage` follows that rule. The devcluster's Kueue stand-in writes admissions with these
functions and ``kueue-bridge explain`` / ``adapter test`` print requests and quota with them, so both
show what Kueue would.

Per-pod requests follow Kueue's ``PodRequests``: containers are summed, init containers are maxed
against that sum, ``limits`` stand in for missing ``requests``, and ``overhead`` is added.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import ROUND_CEILING, Decimal
from typing import Any, Final

from shared.kueue.equivalence import parse_quantity as shared_parse_quantity

__all__ = ["format_quantity", "format_usage", "parse_quantity", "pod_requests", "pod_set_requests"]

_BINARY: Final = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL: Final = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_BY_EXPONENT: Final = {exponent: suffix for suffix, exponent in _DECIMAL.items()}
_BINARY_BY_POWER: Final = {power: suffix for suffix, power in _BINARY.items()}
_BINARY_RESOURCES: Final = frozenset({"memory", "ephemeral-storage"})


def parse_quantity(value: Any) -> Decimal:
    """A Kubernetes quantity (string or number) as an exact Decimal; ValueError when malformed.

    The parsing is :func:`shared.kueue.equivalence.parse_quantity`'s; this one trims surrounding blanks
    first and raises instead of answering ``None``.
    """
    parsed = shared_parse_quantity(value.strip() if isinstance(value, str) else value)
    if parsed is None:
        raise ValueError(f"quantities must match the regular expression: {value!r}")
    return parsed


def format_quantity(value: Decimal, *, binary: bool = False) -> str:
    """Canonical Kubernetes form: the largest suffix that keeps an integral mantissa."""
    if value == 0:
        return "0"
    if binary and value == value.to_integral_value() and abs(value) >= 1024:
        integer, power = int(value), 0
        while power < 6 and integer % 1024 == 0:
            integer //= 1024
            power += 1
        return f"{integer}{_BINARY_BY_POWER.get(power, '')}"
    # decimal SI, rounded up to nano precision like resource.Quantity
    nanos = (value * Decimal(10) ** 9).to_integral_value(rounding=ROUND_CEILING)
    exponent = -9
    while exponent < 18 and nanos % 1000 == 0:
        nanos //= 1000
        exponent += 3
    return f"{int(nanos)}{_DECIMAL_BY_EXPONENT[exponent]}"


def format_usage(resource: str, value: Decimal) -> str:
    """Print a summed resource the way Kueue's ``ResourceQuantity`` builds it."""
    binary = resource in _BINARY_RESOURCES or resource.startswith("hugepages-")
    return format_quantity(value, binary=binary)


def _requests(container: Mapping[str, Any]) -> dict[str, Decimal]:
    resources = container.get("resources") or {}
    merged: dict[str, Any] = dict(resources.get("limits") or {})
    merged.update(resources.get("requests") or {})
    return {name: parse_quantity(quantity) for name, quantity in merged.items()}


def pod_requests(pod_spec: Mapping[str, Any]) -> dict[str, Decimal]:
    """Effective requests of one pod: sum(containers) max each init container, plus overhead."""
    total: dict[str, Decimal] = {}
    for container in pod_spec.get("containers") or []:
        for name, quantity in _requests(container).items():
            total[name] = total.get(name, Decimal(0)) + quantity
    for container in pod_spec.get("initContainers") or []:
        for name, quantity in _requests(container).items():
            total[name] = max(total.get(name, Decimal(0)), quantity)
    for name, quantity in (pod_spec.get("overhead") or {}).items():
        total[name] = total.get(name, Decimal(0)) + parse_quantity(quantity)
    return total


def pod_set_requests(pod_set: Mapping[str, Any], *, count: int | None = None) -> dict[str, Decimal]:
    """Requests of a whole pod set (per-pod requests times ``count``, default the pod set's count)."""
    pods = int(pod_set.get("count", 1) if count is None else count)
    per_pod = pod_requests((pod_set.get("template") or {}).get("spec") or {})
    return {name: quantity * pods for name, quantity in per_pod.items()}
