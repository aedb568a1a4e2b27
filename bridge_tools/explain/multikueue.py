"""MultiKueue evidence for ``explain``: which worker clusters hold copies of a Workload, where it runs.

For an admission check whose AdmissionCheck ``spec.controllerName`` is a MultiKueue controller
(``kueueBridge.multiKueue.controllerName``, ``kueue-bridge.dev/multikueue`` by default, and every
name of ``kueueBridge.multiKueueControllerNames``, Kueue's ``kueue.x-k8s.io/multikueue`` by
default), the "MultiKueue" section shows what the manager cluster knows:

* the check's state and message on the manager's Workload;
* ``status.clusterName``: the worker whose copy was admitted first -- where the job runs. MultiKueue
  sets it once (it never changes) and removes every other copy in the same pass;
* ``status.nominatedClusterNames``: before that, the workers that hold (or are being given) a copy:
  every usable worker for the AllAtOnce dispatcher, the ones nominated so far for the Incremental
  and external dispatchers; MultiKueue clears it once a worker admitted the Workload;
* the check's MultiKueueConfig (``spec.parameters``) and each of its clusters' MultiKueueCluster
  ``Active`` condition (``Connected``, ``ClientConnectionFailed``, ``BadKubeConfig``...).

and answers the verdict's part (``CheckEvidence``): the worker it runs on, or why the check is still
``Pending`` -- ``no worker has admitted it yet`` and which workers hold copies, naming every
MultiKueueCluster of the config that is inactive or missing.

**Decision: explain reads the manager cluster only, never a worker.** A worker is reached with the
kubeconfig in its Secret, which only the MultiKueue controller may read (``deploy/base`` gives the
Secrets of its namespace to it alone); a user asking why a job waits must not need -- and usually
does not have -- credentials for every worker, and a tool that silently used them when it happens to
could show different evidence to different users. The copies' own state (why a worker does not
admit its copy) is therefore not shown; the section says how to look: the copy is a Workload of the
same name and namespace on the worker, so ``kueue-bridge explain`` (or ``kubectl get workload``)
run against the worker's kubeconfig shows it.

Invariants: read-only; never raises for odd objects (a check without a MultiKueueConfig, a config
that does not exist, a cluster without conditions are all evidence); Kueue's texts (``Missing
clusters``, condition reasons and messages) are shown as written, not rephrased.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from bridge_tools.explain.cluster_view import MULTIKUEUE_CLUSTER, MULTIKUEUE_CONFIG, ClusterView
from bridge_tools.explain.queues import CheckDetail, CheckEvidence, CheckFacts
from bridge_tools.explain.verdict import Explanation
from shared.constants import API_GROUP, MULTIKUEUE_CLUSTER_ACTIVE, CheckState
from shared.kube.conditions import UNKNOWN, is_true, object_condition
from shared.models.base import WireDict

__all__ = [
    "NO_WORKER_ADMITTED",
    "SECTION",
    "multikueue_check_details",
    "multikueue_evidence",
]

SECTION: Final = "MultiKueue"
NO_WORKER_ADMITTED: Final = "no worker has admitted it yet"


def _config_name(check: WireDict | None) -> tuple[str, str]:
    """(MultiKueueConfig name, problem): the check's ``spec.parameters``, read as MultiKueue does."""
    spec = (check or {}).get("spec")
    parameters = spec.get("parameters") if isinstance(spec, dict) else None
    if check is None:
        return "", "the AdmissionCheck does not exist"
    if not isinstance(parameters, dict):
        return "", "missing parameters reference"
    name, group, kind = (str(parameters.get(key) or "") for key in ("name", "apiGroup", "kind"))
    if not name or group != API_GROUP or kind != MULTIKUEUE_CONFIG.kind:
        return "", f"parameters {group or '-'}/{kind or '-'} {name or '-'} name no MultiKueueConfig"
    return name, ""


def _active(cluster: WireDict | None) -> tuple[str, str, str, bool]:
    """(status, reason, message, whether it is active) of a MultiKueueCluster's ``Active`` condition."""
    if cluster is None:
        return "-", "Missing", "the MultiKueueCluster does not exist", False
    condition = object_condition(cluster, MULTIKUEUE_CLUSTER_ACTIVE)
    if condition is not None:
        return (
            str(condition.get("status") or UNKNOWN),
            str(condition.get("reason") or "-"),
            str(condition.get("message") or "-"),
            is_true(condition),
        )
    return UNKNOWN, "-", "no Active condition yet (the MultiKueue controller has not connected it)", False


def _names(values: Any) -> list[str]:
    """The non-empty strings of a list (anything else: none)."""
    return [value for value in values if isinstance(value, str) and value] if isinstance(values, list) else []


def _unusable(clusters: Mapping[str, tuple[str, str, str, bool]]) -> list[str]:
    """``MultiKueueCluster w2 is inactive (ClientConnectionFailed)`` for each cluster not ``Active``."""
    found = []
    for name, (_, reason, _, active) in clusters.items():
        if reason == "Missing":
            found.append(f"MultiKueueCluster {name} does not exist")
        elif not active:
            found.append(f"MultiKueueCluster {name} is inactive ({reason})")
    return found


def _pending(*, message: str, nominated: list[str], unusable: list[str]) -> str:
    parts = [message or NO_WORKER_ADMITTED]
    parts.append(f"copies on {', '.join(nominated)}" if nominated else "no worker holds a copy yet")
    return "; ".join([*parts, *unusable])


async def multikueue_evidence(
    view: ClusterView, explanation: Explanation, facts: CheckFacts
) -> CheckEvidence:
    """Fill the "MultiKueue" section for the check in ``facts``; what it says for the verdict."""
    check, state, workload = facts.check, facts.state, facts.workload
    section = explanation.section(SECTION)
    section.add("admission check", facts.name)
    status = workload.status if workload is not None else None
    running_on = (status.cluster_name if status is not None else None) or None
    nominated = _names(status.nominated_cluster_names if status is not None else None)
    config_name, problem = _config_name(check)
    config = await view.get(MULTIKUEUE_CONFIG, config_name) if config_name else None
    if not config_name:
        section.add("MultiKueueConfig", f"- ({problem})")
    elif config is None:
        section.add("MultiKueueConfig", f"{config_name} (does not exist)")
    else:
        section.add("MultiKueueConfig", config_name)
    config_spec = (config or {}).get("spec")
    configured = _names(config_spec.get("clusters") if isinstance(config_spec, dict) else None)
    if workload is not None:
        section.add("clusterName", running_on or f"- ({NO_WORKER_ADMITTED})")
        section.add("nominatedClusterNames", ", ".join(nominated) or "-")
    clusters: dict[str, tuple[str, str, str, bool]] = {}
    for name in dict.fromkeys([*configured, *nominated, *([running_on] if running_on else [])]):
        clusters[name] = _active(await view.get(MULTIKUEUE_CLUSTER, name))
    if clusters:
        section.columns = ("CLUSTER", "ACTIVE", "REASON", "WORKLOAD", "MESSAGE")
        for name, (active, reason, message, _) in clusters.items():
            holds = "runs here" if name == running_on else "copy (nominated)" if name in nominated else "-"
            if name not in configured and configured:
                holds += " (not in the MultiKueueConfig)"
            section.row(name, active, reason, holds, message)
    if workload is not None:
        section.note(
            "read from the manager cluster only: the copies are Workloads of the same name on the "
            "workers (run explain or kubectl get workload there with the worker's kubeconfig)"
        )
    if state is None:
        return CheckEvidence()
    if running_on and state.state in (CheckState.READY, CheckState.PENDING):
        return CheckEvidence(running_on=running_on)
    if state.state != CheckState.PENDING:
        return CheckEvidence()
    unusable = _unusable({name: clusters[name] for name in configured})
    return CheckEvidence(
        pending=_pending(message=state.message or "", nominated=nominated, unusable=unusable)
    )


def multikueue_check_details(controller_names: Iterable[str]) -> dict[str, CheckDetail]:
    """``controllerName`` -> detail function, for every MultiKueue controller name configured."""
    return dict.fromkeys(controller_names, multikueue_evidence)
