"""``kueue-bridge preflight`` on the devcluster: each misconfiguration set up, found, undone.

The webhook runs in-process and is registered with its URL and CA (``test_webhook_e2e.open_stack``);
the scenarios are those of ``tests/e2e/preflight_scenarios.py``, which also run on the real cluster
of the kit (``tests/real/test_preflight.py``). Kueue's side is played the way a cluster shows it:
its ConfigMap, and its registered job webhooks (which, without the ConfigMap, prove nothing).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import io
import json
import secrets
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from bridge_tools.preflight.cli import main as preflight_main
from devcluster.server import ThreadedDevCluster
from shared.config import parse_config
from shared.kube import KubeClient, load_kubeconfig
from shared.preflight import Verdict, run_preflight
from tests.e2e import preflight_scenarios as scenarios
from tests.e2e.conftest import install_crds
from tests.e2e.test_webhook_e2e import CONFIG, Stack, open_stack

pytestmark = [pytest.mark.e2e, pytest.mark.needs_shared]

EXTRA_KUEUE_CRDS = ("workloads", "multikueueclusters", "multikueueconfigs")
WORKER_USER = "system:serviceaccount:kueue-bridge-system:kueue-bridge-multikueue-worker"
FAKE_KUEUE_JOB_WEBHOOK: dict[str, Any] = {
    "metadata": {"name": "fake-kueue-mutating-webhook-configuration"},
    "webhooks": [
        {
            "name": "mjob.kb.io",
            "admissionReviewVersions": ["v1"],
            "sideEffects": "None",
            "failurePolicy": "Ignore",
            "clientConfig": {"url": "https://127.0.0.1:1/mutate-batch-v1-job"},
            "rules": [
                {
                    "apiGroups": ["batch"],
                    "apiVersions": ["v1"],
                    "operations": ["CREATE"],
                    "resources": ["jobs"],
                }
            ],
        }
    ],
}


def kueue_crds(shared_dir: Path, names: tuple[str, ...]) -> list[Path]:
    return [shared_dir / "crds" / "kueue" / f"kueue.x-k8s.io_{name}.yaml" for name in names]


@pytest.fixture
async def stack(devcluster: ThreadedDevCluster, shared_dir: Path, tmp_path: Path) -> AsyncIterator[Stack]:
    async with open_stack(devcluster, shared_dir, tmp_path) as opened:
        await install_crds(opened.client, kueue_crds(shared_dir, EXTRA_KUEUE_CRDS))
        yield opened


@pytest.fixture
def target(stack: Stack) -> scenarios.Target:
    return scenarios.Target(
        client=stack.client, config=parse_config(CONFIG, source="e2e"), config_text=CONFIG
    )


async def test_kueue_not_installed_is_a_failure(devcluster: ThreadedDevCluster) -> None:
    async with KubeClient.from_connection(load_kubeconfig(devcluster.kubeconfig_path)) as client:
        report = await run_preflight(client, parse_config(CONFIG, source="e2e"), now=dt.datetime.now(dt.UTC))
    failure = scenarios.one(report.findings, "kueue installed", Verdict.FAIL)
    assert failure.message == "kueue.x-k8s.io is not served: Kueue is not installed"
    assert report.failed


async def test_a_clean_setup_has_no_failure_and_the_cli_says_so(
    target: scenarios.Target, devcluster: ThreadedDevCluster, tmp_path: Path
) -> None:
    await scenarios.publish_kueue_config(target, scenarios.handed_over(target.config))
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG)
    out, err = io.StringIO(), io.StringIO()
    args = ["--config", str(config), "--kubeconfig", str(devcluster.kubeconfig_path)]
    # the CLI runs its own event loop; the in-process webhook needs this one to keep running
    code = await asyncio.to_thread(preflight_main, args, stdout=out, stderr=err)
    assert code == 0, out.getvalue() + err.getvalue()
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("OK    kueue installed: Kueue serves kueue.x-k8s.io v1beta2")
    assert lines[-1].endswith(" 0 failures")
    # SA-less cluster: warnings only; -o json carries the same
    out = io.StringIO()
    await asyncio.to_thread(preflight_main, [*args, "-o", "json"], stdout=out)
    document = json.loads(out.getvalue())
    assert document["failed"] is False and document["summary"]["fail"] == 0
    assert {f["verdict"] for f in document["findings"]} <= {"ok", "warn"}


async def test_kueue_configuration_is_read_from_its_configmap(target: scenarios.Target) -> None:
    await scenarios.kueue_configuration_is_read_from_its_configmap(target)


async def test_kueues_job_webhook_without_its_configmap_is_no_evidence(target: scenarios.Target) -> None:
    """Kueue's chart registers every integration's webhook: without its Configuration, a warning."""
    gvk = scenarios.MUTATING
    await target.client.create(gvk, FAKE_KUEUE_JOB_WEBHOOK)
    try:
        found = await scenarios.run(target)
        job = scenarios.one(found, "kueue integration Job.v1.batch", Verdict.WARN)
        assert not job.conflict
        assert job.message.startswith("Kueue's Configuration could not be read: ")
        assert "ConfigMap kueue-system/kueue-manager-config not found" in job.message
        declarative = scenarios.one(found, f"kueue integration {target.declarative_kind}", Verdict.WARN)
        assert "cannot be checked" in declarative.message
        assert not [f for f in found if f.conflict]
    finally:
        await target.client.delete(gvk, FAKE_KUEUE_JOB_WEBHOOK["metadata"]["name"])


async def test_kind_not_served_in_the_configured_version(target: scenarios.Target) -> None:
    await scenarios.kind_not_served_in_the_configured_version(target)


async def test_webhooks_missing_slow_untrusted_or_unreachable(target: scenarios.Target) -> None:
    await scenarios.webhooks_missing_slow_untrusted_or_unreachable(target)


async def test_service_accounts_miss_a_right(target: scenarios.Target) -> None:
    await scenarios.service_accounts_miss_a_right(target)


async def test_multikueue_controller_name_taken_by_kueue(target: scenarios.Target) -> None:
    await scenarios.multikueue_controller_name_taken_by_kueue(target)


async def test_multikueue_workers_missing_things(
    target: scenarios.Target, devcluster_factory: Callable[..., ThreadedDevCluster], shared_dir: Path
) -> None:
    token = secrets.token_urlsafe(16)
    worker_cluster = devcluster_factory(
        extra_tokens={
            token: {
                "username": WORKER_USER,
                "uid": "worker",
                "groups": [
                    "system:serviceaccounts",
                    "system:serviceaccounts:kueue-bridge-system",
                    "system:authenticated",
                ],
            }
        }
    )
    kubeconfig = yaml.safe_load(worker_cluster.kubeconfig_path.read_text())
    kubeconfig["users"][0]["user"] = {"token": token}
    async with KubeClient.from_connection(load_kubeconfig(worker_cluster.kubeconfig_path)) as worker:
        await install_crds(worker, kueue_crds(shared_dir, ("localqueues", "clusterqueues", "workloads")))
        await scenarios.multikueue_workers_missing_things(
            target, worker=worker, worker_kubeconfig=kubeconfig, namespace="team"
        )


@pytest.mark.parametrize(
    ("component", "extra", "expected"),
    [
        ("reconciler", "", "kueue integration Job.v1.batch: Kueue's own batch/job integration is enabled"),
        ("webhook", "", "kueue integration Job.v1.batch"),
        (
            "multikueue",
            "kueueBridge:\n  multiKueue:\n    controllerName: kueue.x-k8s.io/multikueue\n",
            "multikueue controller: kueueBridge.multiKueue.controllerName is kueue.x-k8s.io/multikueue",
        ),
    ],
)
async def test_a_component_refuses_to_start_next_to_a_second_controller(
    target: scenarios.Target,
    devcluster: ThreadedDevCluster,
    tmp_path: Path,
    component: str,
    extra: str,
    expected: str,
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG + extra)
    # Kueue's Configuration: its own batch/job integration on, the MultiKueue gate on by default
    async with scenarios.kueue_config_restored(target):
        await scenarios.publish_kueue_config(target, {"frameworks": ["batch/job"]})
        await scenarios.component_refuses_to_start(
            component=component, config_path=config, kubeconfig=devcluster.kubeconfig_path, expected=expected
        )
