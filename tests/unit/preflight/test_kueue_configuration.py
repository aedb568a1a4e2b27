"""Kueue's Configuration learned the way Kueue is installed: its manager Deployment, found by label in
any namespace under any release name, and the ConfigMap its ``--config`` volume mounts."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from shared.config import parse_config
from shared.kube import ClientSettings, FakeClock, GroupVersionKind, HttpxTransport, KubeClient
from shared.kube.discovery import ResourceInfo
from shared.preflight import Verdict
from shared.preflight.kueue_setup import (
    check_integrations,
    check_multikueue_controller,
    kueue_manager_of,
    read_kueue_setup,
)
from tests.e2e.preflight_scenarios import chart_deployment, kueue_config_map
from tests.unit.kube.fakeapi import CONFIGMAP, FakeApi, RecordedRequest, status_body

ALL_VERBS = frozenset({"get", "list", "watch", "create", "update", "patch", "delete"})
DEPLOYMENTS = ResourceInfo(
    gvk=GroupVersionKind("apps", "v1", "Deployment"), plural="deployments", namespaced=True, verbs=ALL_VERBS
)
MUTATING = ResourceInfo(
    gvk=GroupVersionKind("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration"),
    plural="mutatingwebhookconfigurations",
    namespaced=False,
    verbs=ALL_VERBS,
)
CONFIG = parse_config(
    "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
    "integrations: {frameworks: [batch/job, workload.codeflare.dev/appwrapper]}\n",
    source="t",
)
JOB = "Job.v1.batch"


def every_integrations_webhook() -> dict[str, Any]:
    """What Kueue's chart registers: mjob.kb.io among every integration's, enabled or not."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "kueue-mutating-webhook-configuration"},
        "webhooks": [
            {
                "name": "mworkload.kb.io",
                "rules": [{"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"]}],
            },
            {"name": "mjob.kb.io", "rules": [{"apiGroups": ["batch"], "resources": ["jobs"]}]},
        ],
    }


@pytest.fixture
def api() -> FakeApi:
    fake = FakeApi([CONFIGMAP, DEPLOYMENTS, MUTATING])
    fake.put_object(MUTATING.resource_label, every_integrations_webhook())
    return fake


@pytest.fixture
async def client(api: FakeApi) -> AsyncIterator[KubeClient]:
    async with KubeClient(
        server="https://fake.invalid:6443",
        transport=HttpxTransport(api.transport()),
        settings=ClientSettings(qps=0, burst=1),
        clock=FakeClock(),
        rng=random.Random(7),
    ) as kube:
        yield kube


def forbid(api: FakeApi, predicate: Any) -> None:
    def respond(request: RecordedRequest) -> httpx.Response:
        return httpx.Response(403, content=status_body(403, "Forbidden", f"forbidden: {request.path}"))

    api.fail_when(predicate, respond)


async def test_the_configmap_of_a_chart_release_in_another_namespace_is_found_through_its_deployment(
    api: FakeApi, client: KubeClient
) -> None:
    api.put_object(DEPLOYMENTS.resource_label, chart_deployment(release="acme", namespace="ml-kueue"))
    api.put_object(
        "configmaps",
        kueue_config_map("ml-kueue", "acme-kueue-manager-config", {"frameworks": ["batch/job"]}),
    )
    # what the default install would hold is not what this Kueue runs with
    api.put_object(
        "configmaps", kueue_config_map("kueue-system", "kueue-manager-config", {"externalFrameworks": [JOB]})
    )
    setup = await read_kueue_setup(client, kueue_namespace="kueue-system")
    assert setup.source == "configmap" and setup.frameworks == frozenset({"batch/job"})
    assert setup.detail == (
        "ConfigMap ml-kueue/acme-kueue-manager-config of Deployment ml-kueue/acme-kueue-controller-manager"
    )
    conflict = {f.kinds[0]: f for f in check_integrations(CONFIG.managed_kinds(), setup)}[JOB]
    assert conflict.verdict is Verdict.FAIL and conflict.conflict
    assert "ConfigMap ml-kueue/acme-kueue-manager-config" in conflict.message


async def test_another_operators_controller_manager_is_not_kueue(api: FakeApi, client: KubeClient) -> None:
    other = chart_deployment(release="jobset", namespace="jobset-system")
    other["metadata"]["labels"]["app.kubernetes.io/name"] = "jobset"
    other["spec"]["template"]["spec"]["containers"][0]["image"] = "registry.k8s.io/jobset/jobset:v0.8.0"
    api.put_object(DEPLOYMENTS.resource_label, other)
    api.put_object(
        "configmaps", kueue_config_map("kueue-system", "kueue-manager-config", {"externalFrameworks": [JOB]})
    )
    setup = await read_kueue_setup(client, kueue_namespace="kueue-system")
    assert setup.manager is None
    assert (setup.source, setup.detail) == ("configmap", "ConfigMap kueue-system/kueue-manager-config")
    assert setup.external_frameworks == frozenset({JOB})


async def test_an_unreadable_configmap_is_a_warning_naming_what_was_tried_never_a_webhook_verdict(
    api: FakeApi, client: KubeClient
) -> None:
    api.put_object(DEPLOYMENTS.resource_label, chart_deployment(release="kueue", namespace="kueue-system"))
    api.put_object(
        "configmaps", kueue_config_map("kueue-system", "kueue-manager-config", {"frameworks": ["batch/job"]})
    )
    forbid(api, lambda r: r.path.endswith("/configmaps/kueue-manager-config"))
    setup = await read_kueue_setup(client, kueue_namespace="kueue-system")
    assert setup.source == "unknown"
    assert "Deployment kueue-system/kueue-controller-manager mounts its --config from " in setup.detail
    assert "ConfigMap kueue-system/kueue-manager-config is not readable (Forbidden" in setup.detail
    found = {f.kinds[0]: f for f in check_integrations(CONFIG.managed_kinds(), setup)}
    # mjob.kb.io is registered (Kueue's chart registers every integration's webhook): no evidence
    assert {f.verdict for f in found.values()} == {Verdict.WARN}
    assert not any(f.conflict for f in found.values())
    assert setup.detail in found[JOB].message and "cannot be checked" in found[JOB].message
    assert setup.manager is not None and setup.manager.image == "registry.k8s.io/kueue/kueue:v0.19.2"


async def test_deployments_not_listable_cluster_wide_are_looked_for_in_kueues_namespace(
    api: FakeApi, client: KubeClient
) -> None:
    api.put_object(DEPLOYMENTS.resource_label, chart_deployment(release="kueue", namespace="kueue-system"))
    api.put_object(
        "configmaps", kueue_config_map("kueue-system", "kueue-manager-config", {"externalFrameworks": [JOB]})
    )
    forbid(api, lambda r: r.path == "/apis/apps/v1/deployments")
    setup = await read_kueue_setup(client, kueue_namespace="kueue-system")
    assert setup.source == "configmap" and setup.manager is not None
    assert setup.manager.where == "Deployment kueue-system/kueue-controller-manager"
    forbid(api, lambda r: r.path == "/apis/apps/v1/namespaces/kueue-system/deployments")
    forbid(api, lambda r: "configmaps" in r.path)
    setup = await read_kueue_setup(client, kueue_namespace="kueue-system")
    assert setup.source == "unknown" and setup.manager is None
    assert (
        "cannot list Deployments labelled control-plane=controller-manager in any namespace" in setup.detail
    )
    assert "ConfigMap kueue-system/kueue-manager-config is not readable" in setup.detail


async def test_nothing_found_is_a_warning_and_only_always_on_controllers_conflict(client: KubeClient) -> None:
    setup = await read_kueue_setup(client, kueue_namespace="kueue-system")
    assert setup.source == "unknown"
    assert setup.detail == (
        "Kueue's Configuration could not be read: no Kueue Deployment labelled "
        "control-plane=controller-manager in any namespace; ConfigMap kueue-system/kueue-manager-config "
        "not found"
    )
    taken = parse_config(
        "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
        "kueueBridge: {multiKueue: {controllerName: kueue.x-k8s.io/multikueue}}\n",
        source="t",
    )
    [multikueue] = check_multikueue_controller(taken, setup)
    assert multikueue.verdict is Verdict.WARN and not multikueue.conflict
    always = parse_config(
        "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
        "kueueBridge: {multiKueue: {controllerName: kueue.x-k8s.io/provisioning-request}}\n",
        source="t",
    )
    [provisioning] = check_multikueue_controller(always, setup)
    assert provisioning.verdict is Verdict.FAIL and provisioning.conflict


async def test_a_manager_without_config_runs_kueues_defaults(api: FakeApi, client: KubeClient) -> None:
    api.put_object(
        DEPLOYMENTS.resource_label, chart_deployment(release="kueue", namespace="kueue-system", config=False)
    )
    setup = await read_kueue_setup(client, kueue_namespace="elsewhere")
    assert setup.source == "configmap" and setup.frameworks == frozenset({"batch/job"})
    assert "runs Kueue without --config, so with Kueue's defaults" in setup.detail
    job = {f.kinds[0]: f for f in check_integrations(CONFIG.managed_kinds(), setup)}[JOB]
    assert job.verdict is Verdict.FAIL and job.conflict


def test_the_config_file_is_followed_through_directory_mounts_items_and_projected_volumes() -> None:
    deployment = chart_deployment(release="kueue", namespace="q")
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    container["args"] = ["--config", "/etc/kueue/config.yaml"]
    container["volumeMounts"] = [{"name": "cfg", "mountPath": "/etc/kueue/"}]
    pod["volumes"] = [
        {
            "name": "cfg",
            "configMap": {
                "name": "k",
                "items": [{"key": "controller_manager_config.yaml", "path": "config.yaml"}],
            },
        }
    ]
    manager = kueue_manager_of(deployment)
    assert (manager.config_map, manager.config_key, manager.config_problem) == (
        "k",
        "controller_manager_config.yaml",
        "",
    )
    pod["volumes"] = [{"name": "cfg", "projected": {"sources": [{"configMap": {"name": "p"}}]}}]
    assert (kueue_manager_of(deployment).config_map, kueue_manager_of(deployment).config_key) == (
        "p",
        "config.yaml",
    )
    pod["volumes"] = [{"name": "cfg", "secret": {"secretName": "s"}}]
    manager = kueue_manager_of(deployment)
    assert manager.config_map == ""
    assert manager.config_problem == "/etc/kueue/config.yaml is mounted from volume cfg, not from a ConfigMap"
    container["volumeMounts"] = []
    assert kueue_manager_of(deployment).config_problem == "no volume is mounted at /etc/kueue/config.yaml"
