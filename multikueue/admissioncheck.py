"""The AdmissionCheck reconciler: the ``Active`` condition of every check this component controls.

Kueue's ``ACReconciler`` (``admissioncheck.go``) for checks whose ``spec.controllerName`` is ours
(``kueueBridge.multiKueue.controllerName``):

* the parameters do not name a MultiKueueConfig, or it does not exist -> ``Active=False``
  ``BadConfig`` "Cannot load the AdmissionChecks parameters: <why>" (``missing parameters
  reference``, ``empty name: bad parameters reference``, ``wrong group "x", expecting
  "kueue.x-k8s.io": bad parameters reference``, ``MultiKueueConfig.kueue.x-k8s.io "c" not found``: the text of Kueue's cache, which
  names the kind where the API server names the resource);
* every cluster of the config missing or not ``Active`` -> ``Active=False`` ``NoUsableClusters``;
  some of them -> ``Active=True`` ``SomeActiveClusters``; the message lists ``Missing clusters:
  [a b]`` and/or ``Inactive clusters: [c]`` (Go's ``%v`` of a slice), joined by ", ";
* otherwise ``Active=True`` ``Active`` "The admission check is active".

``parameters_config_name`` is the one parser of a check's parameters for the whole component (the
Workload reconciler resolves its clusters with it too).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from multikueue.conditions import condition_of, write_condition
from shared.constants import ADMISSION_CHECK_GVK, API_GROUP, MULTIKUEUE_CLUSTER_ACTIVE, MULTIKUEUE_CONFIG_GVK
from shared.kube import KubeClient, Result, cache_miss_message
from shared.kube.conditions import is_true
from shared.models.condition import Condition

__all__ = [
    "ADMISSION_CHECK_GVK",
    "MULTIKUEUE_CONFIG_GVK",
    "AdmissionCheckReconciler",
    "ParametersError",
    "config_clusters",
    "parameters_config_name",
]

_BAD_REFERENCE: Final = "bad parameters reference"


class ParametersError(Exception):
    """The check's parameters do not lead to a MultiKueueConfig (Kueue's message)."""


def parameters_config_name(check: dict[str, Any]) -> str:
    """Kueue's ``refValidForGK``: the MultiKueueConfig a check names, or ``ParametersError``."""
    parameters = (check.get("spec") or {}).get("parameters")
    if not isinstance(parameters, dict):
        raise ParametersError("missing parameters reference")
    name, group, kind = (str(parameters.get(key) or "") for key in ("name", "apiGroup", "kind"))
    if not name:
        raise ParametersError(f"empty name: {_BAD_REFERENCE}")
    if group != API_GROUP:
        raise ParametersError(f'wrong group "{group}", expecting "{API_GROUP}": {_BAD_REFERENCE}')
    if kind != MULTIKUEUE_CONFIG_GVK.kind:
        raise ParametersError(
            f'wrong kind "{kind}", expecting "{MULTIKUEUE_CONFIG_GVK.kind}": {_BAD_REFERENCE}'
        )
    return name


def config_clusters(config: dict[str, Any]) -> list[str]:
    """``spec.clusters`` of a MultiKueueConfig, in order (the CRD keeps them unique)."""
    clusters = (config.get("spec") or {}).get("clusters") or []
    return [str(name) for name in clusters if isinstance(name, str)]


def _go_list(names: list[str]) -> str:
    return "[" + " ".join(names) + "]"


@dataclass(frozen=True, kw_only=True, eq=False)
class AdmissionCheckReconciler:
    """``reconcile(name)`` for the MultiKueue AdmissionChecks of ``controller_name``: their
    ``Active`` condition from their configs and clusters, read through the getters."""

    client: KubeClient
    controller_name: str
    checks: Callable[[str], dict[str, Any] | None]
    configs: Callable[[str], dict[str, Any] | None]
    clusters: Callable[[str], dict[str, Any] | None]
    now: Callable[[], datetime]

    def wanted_condition(self, check: dict[str, Any]) -> Condition:
        generation = (check.get("metadata") or {}).get("generation")
        try:
            config_name = parameters_config_name(check)
            config = self.configs(config_name)
            if config is None:
                raise ParametersError(cache_miss_message(MULTIKUEUE_CONFIG_GVK, config_name))
        except ParametersError as exc:
            return Condition(
                type=MULTIKUEUE_CLUSTER_ACTIVE,
                status="False",
                reason="BadConfig",
                message=f"Cannot load the AdmissionChecks parameters: {exc}",
                observed_generation=generation,
            )
        clusters = config_clusters(config)
        missing: list[str] = []
        inactive: list[str] = []
        for name in clusters:
            cluster = self.clusters(name)
            if cluster is None:
                missing.append(name)
                continue
            active = condition_of(cluster, MULTIKUEUE_CLUSTER_ACTIVE)
            if not is_true(active):
                inactive.append(name)
        status, reason, message = "True", "Active", "The admission check is active"
        unusable = len(missing) + len(inactive)
        if unusable:
            status, reason = (
                ("True", "SomeActiveClusters") if unusable < len(clusters) else ("False", "NoUsableClusters")
            )
            parts = [f"Missing clusters: {_go_list(missing)}"] if missing else []
            if inactive:
                parts.append(f"Inactive clusters: {_go_list(inactive)}")
            message = ", ".join(parts)
        return Condition(
            type=MULTIKUEUE_CLUSTER_ACTIVE,
            status=status,
            reason=reason,
            message=message,
            observed_generation=generation,
        )

    async def reconcile(self, name: str) -> Result:
        check = self.checks(name)
        if check is None or (check.get("spec") or {}).get("controllerName") != self.controller_name:
            return Result.done()
        await write_condition(
            self.client, ADMISSION_CHECK_GVK, check, self.wanted_condition(check), now=self.now()
        )
        return Result.done()
