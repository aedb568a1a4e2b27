"""``kueue-bridge preflight`` on the real kube-apiserver with real Kueue: each misconfiguration found.

The same scenarios as on the devcluster (``tests/e2e/preflight_scenarios.py``), here with Kueue's
real webhooks, RBAC authorizer and CRDs:

* on ``bridge`` (Kueue in external-framework mode, our components running and registered; the kit
  registers every integration's webhook as Kueue's chart does, ``mjob.kb.io`` included, and
  publishes the manager's file as ConfigMap ``kueue-system/kueue-manager-config``): Kueue's
  Configuration read from that ConfigMap, or from the one a chart-installed manager Deployment of
  another release in another namespace mounts; the ConfigMap gone or not readable (a warning, the
  components start); kinds served, our webhooks broken and put back, ServiceAccounts missing a
  right, the MultiKueue controller name taken, MultiKueue workers (a second real apiserver)
  missing things;
* on a cluster whose Kueue runs in its **normal** mode (it manages batch Jobs itself): the conflict
  is read from Kueue's ConfigMap, and every component that acts on Jobs refuses to start;
* on a bare kube-apiserver: Kueue is not installed.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from devrun.identities import service_account_kubeconfig
from devrun.real_cluster import RealCluster
from shared.component_access import KUEUE_CONFIG_KEY, KUEUE_CONFIG_MAP
from shared.config import load_config, parse_config
from shared.kube import GroupVersionKind, KubeClient, load_kubeconfig
from shared.preflight import Finding, StartupRefused, Verdict, run_preflight, startup_checks
from tests.e2e import preflight_scenarios as scenarios
from tests.polling import eventually
from tests.real.conftest import BRIDGE_CONFIG, Bridge, bridge_external_frameworks

pytestmark = pytest.mark.asyncio(loop_scope="session")

ROLE_BINDING = GroupVersionKind("rbac.authorization.k8s.io", "v1", "RoleBinding")


def write_config(folder: Path) -> Path:
    """``make dev``'s configuration with its certificate folder in ``folder``."""
    config = folder / "config.yaml"
    config.write_text(
        BRIDGE_CONFIG.read_text().replace("certDir: .dev/certs", f"certDir: {folder / 'certs'}")
    )
    return config


def target_of(bridge: Bridge) -> scenarios.Target:
    config_path = bridge.run.config
    assert config_path is not None
    text = config_path.read_text()
    return scenarios.Target(
        client=bridge.client, config=parse_config(text, source=str(config_path)), config_text=text
    )


async def test_kueue_not_installed(
    start_real_cluster: Callable[..., RealCluster], kueue_version: str
) -> None:
    cluster = start_real_cluster(
        f"bare-{kueue_version}", kueue_version=kueue_version, kueue_mode=None, apply_kueue_crds=False
    )
    config = parse_config("apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n", source="t")
    async with KubeClient.from_connection(load_kubeconfig(cluster.kubeconfig)) as client:
        report = await run_preflight(client, config, now=dt.datetime.now(dt.UTC))
    failure = scenarios.one(report.findings, "kueue installed", Verdict.FAIL)
    assert failure.message == "kueue.x-k8s.io is not served: Kueue is not installed"


async def test_kueue_installed_and_its_versions(bridge: Bridge) -> None:
    found = await scenarios.run(target_of(bridge))
    installed = scenarios.one(found, "kueue installed", Verdict.OK)
    assert installed.message.startswith("Kueue serves kueue.x-k8s.io v1beta2")
    assert "v1beta1" in installed.message  # both versions are served by the real CRDs
    # the kit runs Kueue from a file, not as a Deployment: the version cannot be read from an image
    assert (
        "version unknown: no Kueue Deployment labelled control-plane=controller-manager in any namespace"
        in installed.message
    )
    assert not scenarios.findings_of(found, "kueue webhooks"), "Kueue's Workload webhook is registered"


async def test_kueue_configuration_from_its_configmap(bridge: Bridge) -> None:
    await scenarios.kueue_configuration_is_read_from_its_configmap(target_of(bridge))


async def test_the_kits_own_kueue_file_passes_as_the_configmap_it_publishes(bridge: Bridge) -> None:
    """What the manager really runs with (the kit's config.yaml), published where Kueue's manifests put it."""
    target = target_of(bridge)
    kit_config = yaml.safe_load((bridge.cluster.kueue_state / "config.yaml").read_text())
    assert set(kit_config["integrations"]["externalFrameworks"]) == set(
        bridge_external_frameworks(bridge.run.config or Path())
    )
    published = await bridge.client.get(scenarios.CONFIG_MAP, KUEUE_CONFIG_MAP, namespace="kueue-system")
    assert yaml.safe_load(published["data"][KUEUE_CONFIG_KEY])["integrations"] == kit_config["integrations"]
    found = await scenarios.run(target)
    assert not scenarios.findings_of(found, "kueue integration", Verdict.FAIL)
    ok = scenarios.findings_of(found, "kueue integration", Verdict.OK)
    assert len(ok) == len(target.config.managed_kinds())
    assert all("(ConfigMap kueue-system/kueue-manager-config)" in f.message for f in ok), ok


async def test_kueues_configmap_of_another_release_in_another_namespace_is_found_through_its_deployment(
    bridge: Bridge,
) -> None:
    """Kueue installed with its chart as release ``acme`` in ``ml-kueue``: its manager Deployment
    (``acme-kueue-controller-manager``, labelled as the chart labels it) mounts
    ``acme-kueue-manager-config``; that Configuration is the one read, not the default location's."""
    target = target_of(bridge)
    deployment = scenarios.chart_deployment(release="acme", namespace="ml-kueue")
    config_map = scenarios.kueue_config_map(
        "ml-kueue", "acme-kueue-manager-config", {"frameworks": ["batch/job"], "externalFrameworks": []}
    )
    try:
        await scenarios.apply_objects(bridge.client, [config_map, deployment])
        found = await scenarios.run(target)
        where = "ConfigMap ml-kueue/acme-kueue-manager-config of Deployment ml-kueue/acme-kueue-controller-manager"
        conflict = scenarios.one(found, "kueue integration Job.v1.batch", Verdict.FAIL)
        assert (
            conflict.conflict and f"Kueue's own batch/job integration is enabled ({where}" in conflict.message
        )
        installed = scenarios.one(found, "kueue installed", Verdict.OK)
        assert "version v0.19.2 (image registry.k8s.io/kueue/kueue:v0.19.2 of Deployment ml-kueue/" in (
            installed.message
        )
        with pytest.raises(StartupRefused, match=r"kueue integration Job\.v1\.batch: Kueue's own batch/job"):
            await startup_checks(bridge.client, target.config, component="reconciler")
        handed = scenarios.kueue_config_map(
            "ml-kueue", "acme-kueue-manager-config", scenarios.handed_over(target.config)
        )
        await scenarios.apply_objects(bridge.client, [handed])
        found = await scenarios.run(target)
        assert not scenarios.findings_of(found, "kueue integration", Verdict.FAIL)
        assert f"({where})" in scenarios.one(found, "kueue integration Job.v1.batch", Verdict.OK).message
    finally:
        await scenarios.delete_objects(bridge.client, [deployment, config_map])


async def test_kueues_configmap_gone_or_unreadable_is_a_warning_and_the_components_start(
    bridge: Bridge,
) -> None:
    """The kit registers ``mjob.kb.io`` as Kueue's chart does (a no-op in external mode): without
    Kueue's Configuration that proves nothing, so preflight warns, naming what it tried."""
    target = target_of(bridge)
    hooks = await bridge.client.list_all(scenarios.MUTATING)
    registered = {
        hook["name"] for configuration in hooks.items for hook in configuration.get("webhooks") or []
    }
    assert "mjob.kb.io" in registered, sorted(registered)
    async with scenarios.kueue_config_restored(target):
        await scenarios.publish_kueue_config(target, None)
        found = await scenarios.run(target)
        job = scenarios.one(found, "kueue integration Job.v1.batch", Verdict.WARN)
        assert job.message.startswith(
            "Kueue's Configuration could not be read: no Kueue Deployment labelled "
            "control-plane=controller-manager in any namespace; ConfigMap kueue-system/kueue-manager-config "
            "not found"
        ), job.message
        assert not [f for f in found if f.conflict]
        for component in ("webhook", "reconciler", "appwrapper"):
            findings = await startup_checks(bridge.client, target.config, component=component)
            assert not [f for f in findings if f.conflict], component
    # the ConfigMap there, the reconciler's ServiceAccount without the Role that lets it read it
    kubeconfig = bridge.run.identities["reconciler"]
    binding_name = "kueue-bridge-reconciler-kueue-config"
    binding = await bridge.client.get(ROLE_BINDING, binding_name, namespace="kueue-system")
    await scenarios.delete_objects(bridge.client, [binding])
    try:
        async with KubeClient.from_connection(load_kubeconfig(kubeconfig)) as reconciler:

            async def forbidden() -> list[Finding] | None:
                findings = await startup_checks(reconciler, target.config, component="reconciler")
                return findings if any("is not readable (Forbidden" in f.message for f in findings) else None

            findings = await eventually(forbidden, what="the reconciler's read of Kueue's ConfigMap denied")
        job = scenarios.one(findings, "kueue integration Job.v1.batch", Verdict.WARN)
        assert "ConfigMap kueue-system/kueue-manager-config is not readable (Forbidden" in job.message
        assert not [f for f in findings if f.conflict]
    finally:
        restored = {k: v for k, v in binding.items() if k != "metadata"}
        restored["metadata"] = {"name": binding_name, "namespace": "kueue-system"}
        await scenarios.apply_objects(bridge.client, [restored])


async def test_kind_not_served_in_the_configured_version(bridge: Bridge) -> None:
    await scenarios.kind_not_served_in_the_configured_version(target_of(bridge))


async def test_webhooks_missing_slow_untrusted_or_unreachable(bridge: Bridge) -> None:
    await scenarios.webhooks_missing_slow_untrusted_or_unreachable(target_of(bridge))


async def test_service_accounts_miss_a_right(bridge: Bridge) -> None:
    await scenarios.service_accounts_miss_a_right(target_of(bridge))


async def test_multikueue_controller_name_taken_by_kueue(bridge: Bridge) -> None:
    await scenarios.multikueue_controller_name_taken_by_kueue(target_of(bridge))


async def test_multikueue_workers_missing_things(
    bridge: Bridge, start_real_cluster: Callable[..., RealCluster], kueue_version: str, shared_dir: Path
) -> None:
    worker_cluster = start_real_cluster(
        f"preflight-worker-{kueue_version}", kueue_version=kueue_version, kueue_mode=None, watch_cache=False
    )
    target = target_of(bridge)
    namespace = "preflight-mk"
    async with KubeClient.from_connection(load_kubeconfig(worker_cluster.kubeconfig)) as worker:
        # the worker identity (kueue-bridge manifests --part worker) and a token for it
        await scenarios.apply_objects(worker, scenarios.worker_objects(target.config))
        kubeconfig = await service_account_kubeconfig(
            worker,
            admin_kubeconfig=worker_cluster.kubeconfig,
            namespace=target.config.namespace,
            name="kueue-bridge-multikueue-worker",
        )
        await scenarios.apply_objects(
            bridge.client, [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}]
        )
        await scenarios.multikueue_workers_missing_things(
            target, worker=worker, worker_kubeconfig=kubeconfig, namespace=namespace
        )


@pytest.fixture(scope="module")
def kueue_managing_jobs(start_real_cluster: Callable[..., RealCluster], kueue_version: str) -> RealCluster:
    """Kueue in its normal mode: its batch/job integration is on (mjob.kb.io registered)."""
    return start_real_cluster(
        f"preflight-normal-{kueue_version}", kueue_version=kueue_version, kueue_mode="normal"
    )


async def test_kueues_own_job_integration_is_read_from_its_configmap(
    kueue_managing_jobs: RealCluster, tmp_path: Path
) -> None:
    config = load_config(BRIDGE_CONFIG)
    async with KubeClient.from_connection(load_kubeconfig(kueue_managing_jobs.kubeconfig)) as client:
        report = await run_preflight(client, config, now=dt.datetime.now(dt.UTC))
    conflict = scenarios.one(report.findings, "kueue integration Job.v1.batch", Verdict.FAIL)
    assert conflict.conflict
    assert (
        "Kueue's own batch/job integration is enabled (ConfigMap kueue-system/kueue-manager-config: "
        "integrations.frameworks)" in conflict.message
    )
    assert report.failed


@pytest.mark.parametrize("component", ["reconciler", "webhook", "appwrapper"])
async def test_a_component_refuses_to_start_next_to_kueues_own_job_integration(
    kueue_managing_jobs: RealCluster, component: str, tmp_path: Path
) -> None:
    config = write_config(tmp_path)
    # the AppWrapper controller acts on AppWrappers only, and Kueue's normal mode enables batch/job
    # only: it must not refuse; the others act on Jobs too and must
    if component == "appwrapper":
        kubeconfig = kueue_managing_jobs.kubeconfig
        async with KubeClient.from_connection(load_kubeconfig(kubeconfig)) as client:
            findings = await startup_checks(client, load_config(config), component="appwrapper")
        assert not [f for f in findings if f.conflict]
        return
    await scenarios.component_refuses_to_start(
        component=component,
        config_path=config,
        kubeconfig=kueue_managing_jobs.kubeconfig,
        expected="kueue integration Job.v1.batch: Kueue's own batch/job integration is enabled",
    )
