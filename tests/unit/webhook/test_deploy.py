"""Structural invariants of deploy/ (kustomize base, Dockerfile); docker-compose.yaml has test_docker_compose.py.

No kustomize binary here: every YAML is loaded and the kustomization is resolved
by hand (its ``resources`` and ``configMapGenerator`` files), which is all the base uses.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kueue_bridge.cli import COMPONENTS
from multikueue.adapters import MultiKueueAdapters
from shared.config import load_config
from shared.kueue.kueue_integrations import KUEUE_INTEGRATIONS

REPO = Path(__file__).resolve().parents[3]
DEPLOY = REPO / "deploy"
BASE = DEPLOY / "base"
NAMESPACE = "kueue-bridge-system"
ALLOWED_VERBS = {"get", "list", "watch", "create", "update", "patch", "delete"}
#: every component's start-up check (is a managed kind also Kueue's own integration?) lists Kueue's
#: manager Deployments (any namespace: found by label) and the mutating webhooks (is Kueue registered?)
START_UP_CHECK = {
    ("apps", "deployments", "list"),
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations", "list"),
}


def load_all(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def base_objects() -> list[dict[str, Any]]:
    kustomization = yaml.safe_load((BASE / "kustomization.yaml").read_text())
    objects = [obj for name in kustomization["resources"] for obj in load_all(BASE / name)]
    for generator in kustomization.get("configMapGenerator", []):
        data = {Path(f).name: (BASE / f).read_text() for f in generator["files"]}
        objects.append(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": generator["name"]}, "data": data}
        )
    return objects


def by_kind(kind: str) -> list[dict[str, Any]]:
    return [obj for obj in base_objects() if obj["kind"] == kind]


def named(kind: str, name: str) -> dict[str, Any]:
    (obj,) = [o for o in by_kind(kind) if o["metadata"]["name"] == name]
    return obj


def test_every_yaml_in_deploy_loads_and_the_base_lists_all_of_its_files() -> None:
    files = sorted(DEPLOY.rglob("*.yaml"))
    assert files
    for path in files:
        assert load_all(path), path
    kustomization = yaml.safe_load((BASE / "kustomization.yaml").read_text())
    listed = set(kustomization["resources"]) | {
        f for g in kustomization["configMapGenerator"] for f in g["files"]
    }
    assert listed == {p.name for p in BASE.glob("*.yaml")} - {"kustomization.yaml"}
    assert kustomization["namespace"] == NAMESPACE


def test_base_ships_no_webhook_configuration_the_webhook_registers_them_once_serving() -> None:
    """Applied with the rest, a ``failurePolicy: Fail`` configuration would block every Job create
    until a replica serves; the webhook registers them itself (webhook.registration) instead."""
    config = load_config(BASE / "config.yaml")
    assert config.namespace == NAMESPACE
    for overlay in (BASE, DEPLOY / "appwrapper"):
        for path in overlay.glob("*.yaml"):
            kinds = {doc.get("kind") for doc in load_all(path)}
            assert not kinds & {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}, path
    args = container("kueue-bridge-webhook")["args"]
    assert "--register-configurations" in args
    assert args[args.index("--configurations-owner") + 1] == "kueue-bridge-webhook"
    assert named("ClusterRole", "kueue-bridge-webhook")
    assert named("Service", "kueue-bridge-webhook-service")
    assert named("Secret", config.internal_cert_management.webhook_secret_name)


def test_the_webhook_pod_writes_its_certificate_into_a_directory_of_its_own() -> None:
    """internalCertManagement: the certificate directory is an in-memory volume the (non-root) webhook
    writes, so a new certificate is in service at once, not at the kubelet's next Secret sync."""
    config = load_config(BASE / "config.yaml")
    assert config.internal_cert_management.enable
    pod = deployment("kueue-bridge-webhook")["spec"]["template"]["spec"]
    mount = next(m for m in container("kueue-bridge-webhook")["volumeMounts"] if m["name"] == "cert")
    assert mount["mountPath"] == config.webhook.cert_dir and not mount.get("readOnly", False)
    volume = next(v for v in pod["volumes"] if v["name"] == "cert")
    assert volume == {"name": "cert", "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}}


def deployment(name: str) -> dict[str, Any]:
    return named("Deployment", name)


def container(name: str) -> dict[str, Any]:
    (only,) = deployment(name)["spec"]["template"]["spec"]["containers"]
    return dict(only)


@pytest.mark.parametrize(
    ("name", "replicas"),
    [("kueue-bridge-webhook", 2), ("kueue-bridge-reconciler", 2), ("kueue-bridge-multikueue", 2)],
)
def test_deployments_are_replicated_non_root_and_read_config_from_the_configmap(
    name: str, replicas: int
) -> None:
    spec = deployment(name)["spec"]
    assert spec["replicas"] >= replicas
    pod = spec["template"]["spec"]
    assert spec["selector"]["matchLabels"].items() <= spec["template"]["metadata"]["labels"].items()
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] != 0
    c = container(name)
    assert c["securityContext"]["allowPrivilegeEscalation"] is False
    assert c["securityContext"]["readOnlyRootFilesystem"] is True
    assert c["securityContext"]["capabilities"]["drop"] == ["ALL"]
    config_volume = next(v for v in pod["volumes"] if "configMap" in v)
    assert config_volume["configMap"]["name"] == "kueue-bridge-config"
    assert c["args"][0] in COMPONENTS
    assert c["args"][c["args"].index("--config") + 1].startswith(
        next(m["mountPath"] for m in c["volumeMounts"] if m["name"] == config_volume["name"])
    )
    assert named("ServiceAccount", pod["serviceAccountName"])


def test_webhook_probes_use_https_on_the_serving_port_and_mount_the_cert_directory() -> None:
    config = load_config(BASE / "config.yaml")
    c = container("kueue-bridge-webhook")
    port = next(p for p in c["ports"] if p["name"] == "webhook")
    assert port["containerPort"] == config.webhook.port
    for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")):
        get = c[probe]["httpGet"]
        assert (get["path"], get["port"], get["scheme"]) == (path, "webhook", "HTTPS")
    mount = next(m for m in c["volumeMounts"] if m["mountPath"] == config.webhook.cert_dir)
    pod = deployment("kueue-bridge-webhook")["spec"]["template"]["spec"]
    volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
    assert volume["emptyDir"]["medium"] == "Memory"  # the webhook writes it from its Secret
    service = named("Service", "kueue-bridge-webhook-service")
    assert (
        service["spec"]["selector"].items()
        <= deployment("kueue-bridge-webhook")["spec"]["template"]["metadata"]["labels"].items()
    )


def rules_of(service_account: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(Role kind, rule) for every rule bound to the ServiceAccount."""
    for binding in by_kind("ClusterRoleBinding") + by_kind("RoleBinding"):
        if any(s["kind"] == "ServiceAccount" and s["name"] == service_account for s in binding["subjects"]):
            role = named(binding["roleRef"]["kind"], binding["roleRef"]["name"])
            for rule in role["rules"]:
                yield role["kind"], rule


def grants(service_account: str) -> set[tuple[str, str, str]]:
    return {
        (group, resource, verb)
        for _, rule in rules_of(service_account)
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def test_rbac_has_no_wildcards_and_only_allowed_verbs() -> None:
    for kind in ("ClusterRole", "Role"):
        for role in by_kind(kind):
            for rule in role["rules"]:
                for field in ("apiGroups", "resources", "verbs"):
                    assert "*" not in rule[field], (role["metadata"]["name"], rule)
                assert set(rule["verbs"]) <= ALLOWED_VERBS, (role["metadata"]["name"], rule)


def test_webhook_rbac_is_read_only_except_its_own_secret_and_configurations() -> None:
    granted = grants("kueue-bridge-webhook")
    reads = {
        ("", "namespaces"),
        ("kueue.x-k8s.io", "localqueues"),
        ("kueue.x-k8s.io", "clusterqueues"),
        ("kueue.x-k8s.io", "admissionchecks"),
        ("kueue.x-k8s.io", "workloadpriorityclasses"),
        ("batch", "jobs"),
        ("apps", "replicasets"),
    }
    for group, resource in reads:
        assert {(group, resource, v) for v in ("get", "list", "watch")} <= granted
    writes = {g for g in granted if g[2] not in {"get", "list", "watch"}}
    assert {(g, r) for g, r, _ in writes} <= {
        ("", "secrets"),
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"),
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations"),
    }
    for kind, rule in rules_of("kueue-bridge-webhook"):
        if rule["verbs"] == ["list"]:
            listed = {(g, r, "list") for g in rule["apiGroups"] for r in rule["resources"]}
            if kind == "Role":  # its own Service's endpoints, before the registered rules change
                assert listed == {("discovery.k8s.io", "endpointslices", "list")}, rule
                continue
            assert listed <= START_UP_CHECK
            continue
        if set(rule["resources"]) & {
            "secrets",
            "mutatingwebhookconfigurations",
            "validatingwebhookconfigurations",
        }:
            if rule["verbs"] == ["create"]:  # registration: RBAC cannot name what is created
                assert "secrets" not in rule["resources"], rule
                continue
            assert rule.get("resourceNames"), rule
            assert set(rule["verbs"]) <= {"get", "update", "patch", "delete"}, rule
            if "secrets" in rule["resources"]:
                assert kind == "Role" and rule["resourceNames"] == ["kueue-bridge-webhook-server-cert"]


def test_reconciler_rbac_covers_what_it_does_and_no_more() -> None:
    granted = grants("kueue-bridge-reconciler")
    expected = (
        # delete: objectRetentionPolicies.workloads.afterDeactivatedByKueue (as Kueue's own job RBAC)
        {("batch", "jobs", v) for v in ("get", "list", "watch", "update", "patch", "delete")}
        | {("batch", "jobs/status", v) for v in ("get", "update", "patch")}
        | {
            ("kueue.x-k8s.io", "workloads", v)
            for v in ("get", "list", "watch", "create", "update", "patch", "delete")
        }
        | {("kueue.x-k8s.io", "workloads/status", v) for v in ("get", "update", "patch")}
        | {("kueue.x-k8s.io", "workloads/finalizers", "update")}
        | {
            ("kueue.x-k8s.io", r, v)
            for r in ("resourceflavors", "workloadpriorityclasses")
            for v in ("get", "list", "watch")
        }
        | {("scheduling.k8s.io", "priorityclasses", v) for v in ("get", "list", "watch")}
        | {("", "namespaces", v) for v in ("get", "list", "watch")}
        | {(g, "events", v) for g in ("", "events.k8s.io") for v in ("create", "patch")}
        | {("coordination.k8s.io", "leases", v) for v in ("get", "create", "update")}
        # the ancestor walk reads controller owners of every kind Kueue knows (plurals are kind + "s")
        | {(i.group, i.plural, "get") for i in KUEUE_INTEGRATIONS}
        | {("apps", "replicasets", "get")}
        | START_UP_CHECK
    )
    assert granted == expected
    assert not {g for g in granted if g[1] == "secrets"}
    for kind, rule in rules_of("kueue-bridge-reconciler"):
        if "leases" in rule["resources"]:
            assert kind == "Role"  # only in its own namespace


def multikueue_expected_grants() -> set[tuple[str, str, str]]:
    """What ``kueue-bridge multikueue`` calls on the manager with the base configuration."""
    config = load_config(BASE / "config.yaml")
    kinds = {kind.gvk: kind.resource for kind in config.managed_kinds()}
    # get, and list/watch for the manager's job informers (multikueue.local_jobs)
    jobs = {
        (gvk.group, kinds[gvk], verb)
        for gvk in MultiKueueAdapters.from_config(config).gvks
        for verb in ("get", "list", "watch")
    }
    jobs |= {
        (gvk.group, f"{kinds[gvk]}/status", "patch") for gvk in MultiKueueAdapters.from_config(config).gvks
    }
    return (
        {
            ("kueue.x-k8s.io", r, v)
            for r in ("admissionchecks", "multikueueconfigs", "multikueueclusters", "workloads")
            for v in ("get", "list", "watch")
        }
        | {("kueue.x-k8s.io", f"{r}/status", "update") for r in ("admissionchecks", "multikueueclusters")}
        # the Workload's admission state: forced server-side applies as kueue-admission
        | {("kueue.x-k8s.io", "workloads/status", "patch")}
        | jobs
        | {(g, "events", v) for g in ("", "events.k8s.io") for v in ("create", "patch")}
        | {("coordination.k8s.io", "leases", v) for v in ("get", "create", "update")}
        | {("", "secrets", v) for v in ("get", "list", "watch")}
        | START_UP_CHECK
    )


def test_multikueue_rbac_covers_what_it_does_and_no_more() -> None:
    assert grants("kueue-bridge-multikueue") == multikueue_expected_grants()
    for kind, rule in rules_of("kueue-bridge-multikueue"):
        if {"secrets", "leases"} & set(rule["resources"]):
            assert kind == "Role", rule  # only in its own namespace: worker kubeconfigs, the Lease
            assert not {"create", "update", "patch", "delete"} & set(rule["verbs"]) or rule["resources"] == [
                "leases"
            ]


def worker_grants() -> set[tuple[str, str, str]]:
    objects = load_all(DEPLOY / "worker" / "worker-rbac.yaml")
    kustomization = yaml.safe_load((DEPLOY / "worker" / "kustomization.yaml").read_text())
    assert set(kustomization["resources"]) == {p.name for p in (DEPLOY / "worker").glob("*.yaml")} - {
        "kustomization.yaml"
    }
    (role,) = [o for o in objects if o["kind"] == "ClusterRole"]
    (binding,) = [o for o in objects if o["kind"] == "ClusterRoleBinding"]
    (account,) = [o for o in objects if o["kind"] == "ServiceAccount"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": account["metadata"]["name"], "namespace": NAMESPACE}
    ]
    return {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def test_worker_rbac_is_what_multikueue_does_on_a_worker() -> None:
    assert worker_grants() == (
        {("kueue.x-k8s.io", "workloads", v) for v in ("get", "list", "watch", "create", "update", "delete")}
        | {("kueue.x-k8s.io", "workloads/status", "patch")}  # DeactivationTarget, applied
        | {("batch", "jobs", v) for v in ("get", "list", "watch", "create", "delete")}
        | {("kueue.x-k8s.io", "localqueues", "get")}  # kueue-bridge preflight reads them
    )


# --- deploy/appwrapper: the base plus AppWrapper support ---------------------------------------------
OVERLAY = DEPLOY / "appwrapper"


def overlay_objects() -> list[dict[str, Any]]:
    """The overlay resolved by hand: base + resources, the ConfigMap replaced, webhooks merged by name."""
    kustomization = yaml.safe_load((OVERLAY / "kustomization.yaml").read_text())
    assert kustomization["resources"][0] == "../base"
    objects = base_objects() + [
        obj for name in kustomization["resources"][1:] for obj in load_all(OVERLAY / name)
    ]
    for generator in kustomization["configMapGenerator"]:
        assert generator["behavior"] == "replace"
        data = {Path(f).name: (OVERLAY / f).read_text() for f in generator["files"]}
        (config_map,) = [
            o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == generator["name"]
        ]
        config_map["data"] = data
    for patch in kustomization.get("patches", []):
        for document in load_all(OVERLAY / patch["path"]):
            (target,) = [
                o
                for o in objects
                if (o["kind"], o["metadata"]["name"]) == (document["kind"], document["metadata"]["name"])
            ]
            names = {hook["name"] for hook in target["webhooks"]}
            assert not names & {hook["name"] for hook in document["webhooks"]}
            target["webhooks"] = target["webhooks"] + document["webhooks"]
    return objects


def overlay_named(kind: str, name: str) -> dict[str, Any]:
    (obj,) = [o for o in overlay_objects() if o["kind"] == kind and o["metadata"]["name"] == name]
    return obj


def overlay_grants(service_account: str) -> set[tuple[str, str, str]]:
    objects = overlay_objects()
    granted: set[tuple[str, str, str]] = set()
    for binding in [o for o in objects if o["kind"] in ("ClusterRoleBinding", "RoleBinding")]:
        if any(s["kind"] == "ServiceAccount" and s["name"] == service_account for s in binding["subjects"]):
            (role,) = [
                o
                for o in objects
                if (o["kind"], o["metadata"]["name"])
                == (binding["roleRef"]["kind"], binding["roleRef"]["name"])
            ]
            for rule in role["rules"]:
                assert "*" not in rule["apiGroups"] + rule["resources"] + rule["verbs"], rule
                assert set(rule["verbs"]) <= ALLOWED_VERBS, rule
                if "leases" in rule["resources"]:
                    assert role["kind"] == "Role"  # only in its own namespace
                granted |= {
                    (g, r, v) for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]
                }
    return granted


def test_the_appwrapper_overlay_lists_its_files_and_its_config_only_adds_the_framework() -> None:
    kustomization = yaml.safe_load((OVERLAY / "kustomization.yaml").read_text())
    listed = (
        set(kustomization["resources"][1:])
        | {p["path"] for p in kustomization.get("patches", [])}
        | {f for g in kustomization["configMapGenerator"] for f in g["files"]}
    )
    assert listed == {p.name for p in OVERLAY.glob("*.yaml")} - {"kustomization.yaml"}
    base = load_config(BASE / "config.yaml").model_dump()
    overlay = load_config(OVERLAY / "config.yaml").model_dump()
    assert list(overlay["integrations"]["frameworks"]) == [
        *base["integrations"]["frameworks"],
        "workload.codeflare.dev/appwrapper",
    ]
    overlay["integrations"]["frameworks"] = base["integrations"]["frameworks"]
    assert overlay == base


def test_the_appwrapper_deployment_is_replicated_non_root_and_reads_the_config() -> None:
    deployment = overlay_named("Deployment", "kueue-bridge-appwrapper")
    spec = deployment["spec"]
    assert spec["replicas"] >= 2
    assert spec["selector"]["matchLabels"].items() <= spec["template"]["metadata"]["labels"].items()
    pod = spec["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    (c,) = pod["containers"]
    assert c["securityContext"]["readOnlyRootFilesystem"] is True
    assert c["securityContext"]["capabilities"]["drop"] == ["ALL"]
    assert c["args"][:3] == ["appwrapper", "--config", "/etc/kueue-bridge/config.yaml"]
    assert COMPONENTS["appwrapper"][0] == "appwrapper.__main__"
    assert {(p["httpGet"]["path"]) for p in (c["livenessProbe"], c["readinessProbe"])} == {
        "/healthz",
        "/readyz",
    }
    config_volume = next(v for v in pod["volumes"] if "configMap" in v)
    assert config_volume["configMap"]["name"] == "kueue-bridge-config"
    assert overlay_named("ServiceAccount", pod["serviceAccountName"])


def test_appwrapper_rbac_covers_what_the_controller_does_and_no_more() -> None:
    wrappable = {
        ("", "pods"),
        ("", "services"),
        ("", "configmaps"),
        ("apps", "deployments"),
        ("apps", "statefulsets"),
        ("batch", "jobs"),
        ("jobset.x-k8s.io", "jobsets"),
        ("kubeflow.org", "pytorchjobs"),
        ("ray.io", "rayclusters"),
        ("ray.io", "rayjobs"),
        ("scheduling.sigs.k8s.io", "podgroups"),
        ("scheduling.x-k8s.io", "podgroups"),
    }
    expected = (
        {("workload.codeflare.dev", "appwrappers", v) for v in ("get", "list", "watch", "patch")}
        | {("workload.codeflare.dev", "appwrappers/status", v) for v in ("get", "update", "patch")}
        | {("workload.codeflare.dev", "appwrappers/finalizers", "update")}
        | {(g, "events", v) for g in ("", "events.k8s.io") for v in ("create", "patch")}
        | {(g, r, v) for g, r in wrappable for v in ("get", "create", "delete")}
        # informers on the labelled Jobs and Pods; the pod list also confirms every pod is gone
        | {(g, r, v) for g, r in (("", "pods"), ("batch", "jobs")) for v in ("list", "watch")}
        | {("coordination.k8s.io", "leases", v) for v in ("get", "create", "update")}
        | START_UP_CHECK
    )
    assert overlay_grants("kueue-bridge-appwrapper") == expected


def test_with_appwrappers_the_webhook_and_reconciler_get_only_what_appwrappers_need() -> None:
    webhook_extra = overlay_grants("kueue-bridge-webhook") - grants("kueue-bridge-webhook")
    # the base webhook already reads AppWrappers: the ancestor walk follows every kind Kueue knows
    assert {("workload.codeflare.dev", "appwrappers", v) for v in ("get", "list", "watch")} <= grants(
        "kueue-bridge-webhook"
    )
    assert webhook_extra == {("authorization.k8s.io", "subjectaccessreviews", "create")}
    reconciler_extra = overlay_grants("kueue-bridge-reconciler") - grants("kueue-bridge-reconciler")
    assert reconciler_extra == {
        ("workload.codeflare.dev", "appwrappers", v) for v in ("list", "watch", "update", "patch", "delete")
    }


def test_dockerfile_installs_the_package_as_non_root_with_the_cli_entrypoint() -> None:
    text = (DEPLOY / "Dockerfile").read_text()
    stages = re.findall(r"^FROM (\S+)", text, re.M)
    assert stages == ["python:3.11-slim", "python:3.11-slim"]  # build stage, then the run stage
    assert re.search(r"pip install --no-compile \. ", text, re.M)
    assert re.search(r"^COPY --from=build /opt/kueue-bridge /opt/kueue-bridge$", text, re.M)
    # production only: the development stand-in, its runner, benchmarks and tests stay out
    for package in ("devcluster", "devrun", "bench", "tests"):
        assert not re.search(rf"^COPY {package}\b", text, re.M), package
    assert re.search(r"^ARG GIT_COMMIT", text, re.M)
    assert "KUEUE_BRIDGE_COMMIT=${GIT_COMMIT}" in text
    user = re.findall(r"^USER (\S+)$", text, re.M)
    assert user and user[-1].split(":")[0] not in {"0", "root"}
    assert re.search(r'^ENTRYPOINT \["kueue-bridge"\]$', text, re.M)
    for package in ("kueue_bridge", "shared", "webhook", "reconciler", "multikueue", "appwrapper", "certs"):
        assert re.search(rf"^COPY {package} ", text, re.M), package
