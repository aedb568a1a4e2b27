"""deploy/observability against what really runs: the real Kueue manager's and our components' /metrics.

The unit test (``tests/unit/test_observability.py``) checks every metric the dashboard and the alert
rules query against the families our components register and against :data:`KUEUE_METRICS`, the
names and labels of Kueue's ``pkg/metrics``. Here the same names are looked for in what the
processes serve:

* the **real Kueue manager** of the kit (its ``/metrics``, TLS with the kit's certificate, the admin
  bearer token): a ClusterQueue with an admitted, a pending and an evicted (deactivated) Workload
  makes every labelled family of :data:`KUEUE_METRICS` appear, with the labels listed there;
* **our webhook, reconciler and AppWrapper controller** as ``make dev`` runs them (``bridge``): every
  ``kueue_bridge_*`` / ``appwrapper_*`` family the dashboard reads that those three register.
"""

from __future__ import annotations

import re
import ssl
from typing import Any

import httpx
import pytest

from shared.constants import QUEUE_LABEL
from shared.kube import GroupVersionKind
from tests.polling import eventually
from tests.real.conftest import Bridge
from tests.unit.test_observability import KUEUE_METRICS, family, metric_names, our_families, queries

pytestmark = pytest.mark.asyncio(loop_scope="session")

JOB = GroupVersionKind("batch", "v1", "Job")
WORKLOAD = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "Workload")
FLAVOR = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "ResourceFlavor")
CLUSTER_QUEUE = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "ClusterQueue")
LOCAL_QUEUE = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "LocalQueue")
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{([^}]*)\})? ")


def parse(text: str) -> dict[str, set[str]]:
    """Family -> label names seen on its samples (``_bucket``/``_sum``/``_count`` folded)."""
    found: dict[str, set[str]] = {}
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if match is None:
            continue
        name, labels = match.groups()
        names = set(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="', labels or "")) - {"le"}
        found.setdefault(family(name), set()).update(names)
    return found


def used() -> set[str]:
    return {family(name) for expr in queries() for name in metric_names(expr)}


async def _scrape(url: str, *, verify: ssl.SSLContext | bool, token: str | None = None) -> str:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx.AsyncClient(verify=verify, timeout=10) as http:
        response = await http.get(url, headers=headers)
    response.raise_for_status()
    return response.text


async def _activity(bridge: Bridge, namespace: str) -> None:
    """An admitted Job, a pending one, and the admitted one deactivated (evicted by Kueue)."""
    client = bridge.client
    await client.apply(FLAVOR, {"metadata": {"name": "default-flavor"}}, field_manager="test", force=True)
    await client.apply(
        CLUSTER_QUEUE,
        {
            "metadata": {"name": f"cq-{namespace}"},
            "spec": {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [
                            {"name": "default-flavor", "resources": [{"name": "cpu", "nominalQuota": "1"}]}
                        ],
                    }
                ],
            },
        },
        field_manager="test",
        force=True,
    )
    await client.apply(
        LOCAL_QUEUE,
        {"metadata": {"name": "q", "namespace": namespace}, "spec": {"clusterQueue": f"cq-{namespace}"}},
        namespace=namespace,
        field_manager="test",
        force=True,
    )
    for name in ("first", "second"):
        job: dict[str, Any] = {
            "metadata": {"name": name, "labels": {QUEUE_LABEL: "q"}},
            "spec": {
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [
                            {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
                        ],
                    }
                }
            },
        }
        await client.create(JOB, job, namespace=namespace)

    async def admitted() -> dict[str, Any] | None:
        for workload in (await client.list_all(WORKLOAD, namespace=namespace)).items:
            conditions = (workload.get("status") or {}).get("conditions") or []
            if any(c["type"] == "Admitted" and c["status"] == "True" for c in conditions):
                return workload
        return None

    first: dict[str, Any] = await eventually(admitted, what="a Workload admitted by Kueue", within_seconds=60)
    await client.patch(
        WORKLOAD,
        first["metadata"]["name"],
        {"spec": {"active": False}},
        namespace=namespace,
    )


async def test_kueues_metrics_the_dashboard_reads_are_served_by_the_real_manager(
    bridge: Bridge, namespace: str
) -> None:
    await _activity(bridge, namespace)
    cluster = bridge.cluster
    context = ssl.create_default_context(cafile=str(cluster.kueue_state / "certs" / "tls.crt"))
    url = f"https://127.0.0.1:{cluster.ports.kueue_metrics}/metrics"
    wanted = {name for name in used() if name in KUEUE_METRICS}
    assert wanted == set(KUEUE_METRICS), "every documented Kueue metric is queried"

    async def served() -> dict[str, set[str]] | None:
        families = parse(await _scrape(url, verify=context, token=cluster.admin_token))
        return families if wanted <= set(families) else None

    families = await eventually(
        served, what="Kueue's metrics after an admission and an eviction", within_seconds=90
    )
    for name in wanted:
        assert families[name] <= KUEUE_METRICS[name], (name, families[name] - KUEUE_METRICS[name])


async def test_our_metrics_the_dashboard_reads_are_served_by_the_running_components(bridge: Bridge) -> None:
    served: set[str] = set()
    for component in bridge.session.components:
        assert component.health_url is not None, component.name
        base = component.health_url.rsplit("/", 1)[0]
        verify: ssl.SSLContext | bool = True
        if component.ca_pem is not None:
            verify = ssl.create_default_context(cadata=component.ca_pem.decode())
        text = await _scrape(f"{base}/metrics", verify=verify)
        served |= set(re.findall(r"^# HELP (\S+)", text, re.M))
    ours = {name for name in used() if name not in KUEUE_METRICS}
    multikueue = {name for name in ours if name.startswith("kueue_bridge_multikueue_")}
    # MultiKueue does not run in this fixture: its families are checked by the unit test
    assert multikueue <= our_families()
    missing = sorted(ours - multikueue - served)
    assert not missing, (
        f"queried by deploy/observability but served by none of {[c.name for c in bridge.session.components]}: {missing}"
    )
