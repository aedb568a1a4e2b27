"""The Helm chart (charts/kueue-bridge): lint, render, and RBAC that agrees with ``kueue-bridge manifests``.

Helm is the kit's (``../shared/real-cluster/helm.sh``, Helm v4.2.3, installed on first use). The
chart computes every identity's rules from the configuration in Go templates; these tests render
it for several configurations and compare each ServiceAccount's grants, rule for rule, with what
``bridge_tools.manifests.render`` (``shared.component_access``) gives for the same file.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from bridge_tools.manifests.chart_tables import CHART_TABLES_PATH, chart_tables_text
from bridge_tools.manifests.render import RenderOptions, render_manifests
from shared.config import parse_config
from tests.unit.tools.test_manifests import DECLARATIVE, rights

pytestmark = [pytest.mark.needs_shared]

REPO = Path(__file__).resolve().parents[3]
CHART = REPO / "charts" / "kueue-bridge"
BASE_CONFIG = (REPO / "deploy" / "base" / "config.yaml").read_text()
APPWRAPPER_CONFIG = (REPO / "deploy" / "appwrapper" / "config.yaml").read_text()
NO_INTERNAL_CERTS = BASE_CONFIG.replace("  enable: true\n", "  enable: false\n")
FEATURE_GATE_OFF = DECLARATIVE + "featureGates:\n  MultiKueueAdaptersForCustomJobs: false\n"
PLURAL_GUESSES = """\
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-bridge-system
integrations:
  frameworks: [jobset.x-k8s.io/jobset]
  externalFrameworks:
  - name: Policy.v1.example.com
    adapter: {suspend: {path: spec.suspend}, podSets: [{template: spec.template}], finished: "false"}
  - name: Class.v2.example.com
    adapter: {suspend: {path: spec.suspend}, podSets: [{template: spec.template}], finished: "false"}
  - PipelineRun.v1.tekton.dev
multiKueue:
  externalFrameworks:
  - name: Widget.v1.other.example.com
"""
CONFIGS = {
    "base": BASE_CONFIG,
    "appwrapper": APPWRAPPER_CONFIG,
    "declarative": DECLARATIVE,
    "declarative-gate-off": FEATURE_GATE_OFF,
    "no-internal-certs": NO_INTERNAL_CERTS,
    "plural-guesses": PLURAL_GUESSES,
}


@pytest.fixture(scope="module")
def helm(shared_dir: Path) -> Path:
    script = shared_dir / "real-cluster" / "helm.sh"
    if not script.is_file():
        pytest.skip(f"{script} is missing")
    return script


def run_helm(helm: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [str(helm), *args],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "KUBECONFIG": "/dev/null"},
    )
    if check and result.returncode != 0:
        raise AssertionError(f"helm {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
    return result


def namespace_of(config_text: str) -> str:
    return str(yaml.safe_load(config_text)["namespace"])


def template(helm: Path, config_text: str, tmp_path: Path, *sets: str) -> list[dict[str, Any]]:
    config_file = tmp_path / "config.yaml"
    config_file.write_text(config_text)
    namespace = namespace_of(config_text)
    args = ["template", "kb", str(CHART), "-n", namespace, "--set-file", f"config={config_file}"]
    for value in sets:
        args += ["--set", value]
    out = run_helm(helm, *args).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


def test_the_kind_tables_the_chart_reads_are_generated_and_current() -> None:
    assert (REPO / CHART_TABLES_PATH).read_text() == chart_tables_text()


def test_helm_lint_strict_passes_with_the_default_and_every_optional_part(helm: Path) -> None:
    run_helm(helm, "lint", "--strict", str(CHART), "-n", "kueue-bridge-system")
    run_helm(
        helm,
        "lint",
        "--strict",
        str(CHART),
        "-n",
        "kueue-bridge-system",
        "--set",
        "metrics.serviceMonitor.enabled=true,metrics.dashboard.enabled=true",
    )


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_chart_rbac_is_what_kueue_bridge_manifests_renders(helm: Path, tmp_path: Path, name: str) -> None:
    text = CONFIGS[name]
    config = parse_config(text, source=name)
    rendered = render_manifests(config, options=RenderOptions(config_text=text, image="kueue-bridge:0.1.0"))
    chart = template(helm, text, tmp_path)
    expected, got = rights(rendered), rights(chart)
    assert sorted(got) == sorted(expected)
    for account in expected:
        assert got[account] == expected[account], account
    # the same user-facing editor/viewer roles
    user_roles = {
        o["metadata"]["name"]: o["rules"]
        for o in rendered
        if o["kind"] == "ClusterRole" and o["metadata"]["name"].endswith(("-editor", "-viewer"))
    }
    chart_user_roles = {
        o["metadata"]["name"]: o["rules"]
        for o in chart
        if o["kind"] == "ClusterRole" and o["metadata"]["name"].endswith(("-editor", "-viewer"))
    }
    assert chart_user_roles == user_roles


def by_kind(objects: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == kind}


def test_default_install_webhook_registers_itself_and_a_hook_removes_the_configurations_first(
    helm: Path, tmp_path: Path
) -> None:
    objects = template(helm, BASE_CONFIG, tmp_path)
    assert not [o for o in objects if o["kind"].endswith("WebhookConfiguration")]
    deployments = by_kind(objects, "Deployment")
    assert set(deployments) == {"kueue-bridge-webhook", "kueue-bridge-reconciler", "kueue-bridge-multikueue"}
    webhook = deployments["kueue-bridge-webhook"]["spec"]["template"]["spec"]
    (container,) = webhook["containers"]
    assert container["args"][-3:] == [
        "--register-configurations",
        "--configurations-owner",
        "kueue-bridge-webhook",
    ]
    assert "kueue-bridge-webhook" in by_kind(objects, "ClusterRole")  # the owner exists in the release
    cert = next(v for v in webhook["volumes"] if v["name"] == "cert")
    assert cert["emptyDir"] == {"medium": "Memory", "sizeLimit": "1Mi"}  # the webhook writes it at once
    (mount,) = [m for m in container["volumeMounts"] if m["name"] == "cert"]
    assert mount["readOnly"] is False
    hook = by_kind(objects, "Job")["kueue-bridge-unregister-webhooks"]
    assert hook["metadata"]["annotations"]["helm.sh/hook"] == "pre-delete"
    assert hook["spec"]["template"]["spec"]["containers"][0]["args"] == ["webhook", "unregister"]
    assert hook["spec"]["template"]["spec"]["serviceAccountName"] == "kueue-bridge-webhook"
    # helm install/upgrade returns once the registered rules intercept every configured kind
    waiter = by_kind(objects, "Job")["kueue-bridge-wait-webhooks-registered"]
    assert waiter["metadata"]["annotations"] == {
        "helm.sh/hook": "post-install,post-upgrade",
        "helm.sh/hook-delete-policy": "before-hook-creation,hook-succeeded",
    }
    waiter_pod = waiter["spec"]["template"]["spec"]
    assert waiter_pod["serviceAccountName"] == "kueue-bridge-webhook"
    (waiting,) = waiter_pod["containers"]
    assert waiting["args"] == [
        "webhook", "wait-registered", "--config", "/etc/kueue-bridge/config.yaml", "--timeout", "300",
    ]  # fmt: skip
    assert waiter_pod["volumes"] == [{"name": "config", "configMap": {"name": "kueue-bridge-config"}}]
    assert waiter["spec"]["activeDeadlineSeconds"] > 300
    for deployment in deployments.values():
        spec = deployment["spec"]
        assert spec["replicas"] == 2
        (c,) = spec["template"]["spec"]["containers"]
        assert c["image"] == "kueue-bridge:0.1.0" and c["imagePullPolicy"] == "IfNotPresent"
        assert c["securityContext"]["readOnlyRootFilesystem"] is True
    assert set(by_kind(objects, "PodDisruptionBudget")) == set(deployments)
    (config_map,) = by_kind(objects, "ConfigMap").values()
    assert config_map["data"]["config.yaml"] == BASE_CONFIG


def test_per_component_values_reach_their_pods(helm: Path, tmp_path: Path) -> None:
    objects = template(
        helm,
        APPWRAPPER_CONFIG,
        tmp_path,
        "image.repository=registry.example.com/kb,image.tag=1.2.3,image.pullPolicy=Never",
        "reconciler.replicas=3,reconciler.priorityClassName=system-cluster-critical",
        "reconciler.nodeSelector.pool=control,reconciler.tolerations[0].key=dedicated",
        "reconciler.resources.requests.cpu=1,multikueue.enabled=false,appwrapper.podDisruptionBudget.enabled=false",
    )
    deployments = by_kind(objects, "Deployment")
    assert set(deployments) == {"kueue-bridge-webhook", "kueue-bridge-reconciler", "kueue-bridge-appwrapper"}
    reconciler = deployments["kueue-bridge-reconciler"]["spec"]
    pod = reconciler["template"]["spec"]
    assert reconciler["replicas"] == 3
    assert pod["priorityClassName"] == "system-cluster-critical"
    assert pod["nodeSelector"] == {"pool": "control"}
    assert pod["tolerations"] == [{"key": "dedicated"}]
    (c,) = pod["containers"]
    assert c["image"] == "registry.example.com/kb:1.2.3" and c["imagePullPolicy"] == "Never"
    assert c["resources"]["requests"]["cpu"] == 1
    assert set(by_kind(objects, "PodDisruptionBudget")) == {"kueue-bridge-webhook", "kueue-bridge-reconciler"}
    assert "kueue-bridge-multikueue" not in by_kind(objects, "ServiceAccount")


def test_cert_manager_issues_the_webhook_secret_and_needs_internal_certs_off(
    helm: Path, tmp_path: Path
) -> None:
    objects = template(helm, NO_INTERNAL_CERTS, tmp_path, "certManager.enabled=true")
    certificates = by_kind(objects, "Certificate")
    assert certificates["kueue-bridge-webhook"]["spec"]["secretName"] == "kueue-bridge-webhook-server-cert"
    assert certificates["kueue-bridge-webhook"]["spec"]["dnsNames"][0] == (
        "kueue-bridge-webhook-service.kueue-bridge-system.svc"
    )
    assert "Secret" not in {o["kind"] for o in objects}  # cert-manager owns it
    webhook = by_kind(objects, "Deployment")["kueue-bridge-webhook"]["spec"]["template"]["spec"]
    cert = next(v for v in webhook["volumes"] if v["name"] == "cert")
    assert cert["secret"] == {"secretName": "kueue-bridge-webhook-server-cert", "defaultMode": 0o440}
    assert webhook["securityContext"]["fsGroup"] == 65532  # group-readable through fsGroup
    config_file = tmp_path / "both.yaml"
    config_file.write_text(BASE_CONFIG)
    refused = run_helm(
        helm,
        "template",
        "kb",
        str(CHART),
        "-n",
        "kueue-bridge-system",
        "--set-file",
        f"config={config_file}",
        "--set",
        "certManager.enabled=true",
        check=False,
    )
    assert refused.returncode != 0 and "internalCertManagement.enable: false" in refused.stderr


def test_observability_parts_are_optional(helm: Path, tmp_path: Path) -> None:
    assert not {"ServiceMonitor"} & {o["kind"] for o in template(helm, BASE_CONFIG, tmp_path)}
    objects = template(
        helm, BASE_CONFIG, tmp_path, "metrics.serviceMonitor.enabled=true,metrics.dashboard.enabled=true"
    )
    (monitor,) = by_kind(objects, "ServiceMonitor").values()
    assert {e["port"] for e in monitor["spec"]["endpoints"]} == {"metrics", "https"}
    dashboard = by_kind(objects, "ConfigMap")["kueue-bridge-dashboard"]
    shipped = (REPO / "deploy" / "observability" / "kueue-bridge-dashboard.json").read_text()
    assert dashboard["data"]["kueue-bridge-dashboard.json"].strip() == shipped.strip()


def test_a_configuration_for_another_namespace_or_not_a_configuration_is_refused(
    helm: Path, tmp_path: Path
) -> None:
    config_file = tmp_path / "config.yaml"
    config_file.write_text(BASE_CONFIG)
    wrong = run_helm(
        helm,
        "template",
        "kb",
        str(CHART),
        "-n",
        "elsewhere",
        "--set-file",
        f"config={config_file}",
        check=False,
    )
    assert wrong.returncode != 0
    assert (
        'config: namespace is "kueue-bridge-system" but the release is installed into "elsewhere"'
        in wrong.stderr
    )
    config_file.write_text("just: text\n")
    bad = run_helm(
        helm,
        "template",
        "kb",
        str(CHART),
        "-n",
        "kueue-bridge-system",
        "--set-file",
        f"config={config_file}",
        check=False,
    )
    assert bad.returncode != 0 and "--set-file config=FILE" in bad.stderr


def test_notes_give_the_kueue_configuration_fragment(helm: Path, tmp_path: Path) -> None:
    config_file = tmp_path / "config.yaml"
    config_file.write_text(APPWRAPPER_CONFIG)
    out = run_helm(
        helm,
        "install",
        "kb",
        str(CHART),
        "-n",
        "kueue-bridge-system",
        "--dry-run=client",
        "--set-file",
        f"config={config_file}",
    ).stdout
    notes = out[out.index("NOTES:") :]
    assert (
        "    externalFrameworks:\n    - Job.v1.batch\n    - AppWrapper.v1beta2.workload.codeflare.dev\n"
        in notes
    )
    assert "must not list batch/job, workload.codeflare.dev/appwrapper" in notes
    assert "managerConfig.controllerManagerConfigYaml" in notes
