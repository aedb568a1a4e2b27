"""Structural invariants of docker-compose.yaml and deploy/compose/.

``make test-compose`` (tests/compose) runs the file; these checks need no container engine and say
which rule a change broke: pinned images, files instead of network fetches, start-up ordered by
one-shot services (no healthchecks), Kueue and kueue-bridge configured for the same kinds, no host
port but the API server's on 127.0.0.1, and the certificates of the pki step.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives.serialization import load_pem_private_key, load_pem_public_key

from kueue_bridge.cli import COMPONENTS
from shared.config import load_config

REPO = Path(__file__).resolve().parents[3]
COMPOSE_DIR = REPO / "deploy" / "compose"
KUEUE_CRDS = COMPOSE_DIR / "kueue-crds"
IMAGES = {
    "etcd": "registry.k8s.io/etcd:3.6.8-0",
    "kube-apiserver": "registry.k8s.io/kube-apiserver:v1.36.2",
    "kueue": "registry.k8s.io/kueue/kueue:v0.19.2",
}
KUBECTL_IMAGE = "registry.k8s.io/kubectl:v1.36.2"
CONTROLLERS = ("reconciler", "multikueue", "appwrapper")
ONE_SHOTS = (
    "pki",
    "wait-apiserver",
    "crds",
    "crds-established",
    "kueue-manager-config",
    "queues",
    "register-webhooks",
)


def compose() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load((REPO / "docker-compose.yaml").read_text())
    return document


def services() -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = compose()["services"]
    return found


def ours() -> dict[str, dict[str, Any]]:
    return {
        name: s for name, s in services().items() if s["image"] == "${KUEUE_BRIDGE_IMAGE:-kueue-bridge:dev}"
    }


def mounted(service: dict[str, Any], target: str) -> Path:
    (source,) = [str(v).split(":")[0] for v in service["volumes"] if str(v).split(":")[1] == target]
    return REPO / source


def test_images_are_pinned_upstream_tags_and_ours_is_built_once_from_the_dockerfile() -> None:
    for name, image in IMAGES.items():
        assert services()[name]["image"] == image
    kubectl = {name for name, s in services().items() if s["image"].startswith("registry.k8s.io/kubectl:")}
    assert kubectl == {"crds", "crds-established", "kueue-manager-config", "queues"}
    assert {services()[name]["image"] for name in kubectl} == {KUBECTL_IMAGE}
    built = {name: s["build"] for name, s in services().items() if "build" in s}
    assert built == {"pki": {"context": ".", "dockerfile": "deploy/Dockerfile"}}
    assert {"pki", "webhook", "register-webhooks", *CONTROLLERS} <= set(ours())


def test_our_services_run_existing_components_or_the_compose_steps() -> None:
    for name, service in ours().items():
        entrypoint = service.get("entrypoint")
        argv = [str(arg) for arg in service["command"]]
        if entrypoint == ["python3", "/compose/steps.py"]:
            assert argv[0] in {"pki", "wait-apiserver", "register-webhooks"}, (name, argv)
            assert mounted(service, "/compose/steps.py") == COMPOSE_DIR / "steps.py"
            continue
        assert entrypoint is None, name
        assert argv[0] in COMPONENTS, (name, argv)
        assert importlib.util.find_spec(COMPONENTS[argv[0]][0]) is not None
        assert argv[1:] == [
            "--config",
            "/etc/kueue-bridge/config.yaml",
            "--kubeconfig",
            "/pki/admin.kubeconfig",
        ]


def test_nothing_is_fetched_from_the_network_and_every_mounted_file_exists() -> None:
    text = (REPO / "docker-compose.yaml").read_text()
    urls = set(re.findall(r"https?://[^\s'\"\]]+", text))
    hosts = {re.sub(r"^https?://([^:/]+).*", r"\1", url) for url in urls}
    assert hosts <= {"kube-apiserver", "etcd", "webhook", "127.0.0.1", "0.0.0.0"}, urls
    for name, service in services().items():
        for volume in service.get("volumes") or []:
            source = volume.split(":")[0]
            if source.startswith("./"):
                assert (REPO / source).exists(), (name, source)
    crds = services()["crds"]["command"]
    applied = [arg.split("=", 1)[1] for arg in crds if arg.startswith("--filename=")]
    assert "/manifests/compose/kueue-crds" in applied
    assert "/manifests/compose/namespaces.yaml" in applied


def test_start_up_is_ordered_by_one_shot_services_not_healthchecks() -> None:
    all_services = services()
    for name, service in all_services.items():
        assert "healthcheck" not in service, name
        for dependency, condition in (service.get("depends_on") or {}).items():
            assert dependency in all_services, (name, dependency)
            assert condition["condition"] in {"service_started", "service_completed_successfully"}, name

    def after(name: str, dependency: str) -> bool:
        condition: str = all_services[name]["depends_on"][dependency]["condition"]
        return condition == "service_completed_successfully"

    assert after("kube-apiserver", "pki")
    assert after("wait-apiserver", "kube-apiserver") is False  # it is what polls the API server
    assert after("crds", "wait-apiserver")
    assert after("crds-established", "crds")
    for name in ("queues", "kueue", "webhook"):
        assert after(name, "crds-established"), name
    assert after("kueue-manager-config", "crds")
    for name in CONTROLLERS:
        assert after(name, "register-webhooks"), name
        # their start-up checks read Kueue's Configuration from it
        assert after(name, "kueue-manager-config"), name
        assert all_services[name]["restart"] == "unless-stopped"
    for name in (*CONTROLLERS, "webhook"):
        # as terminationGracePeriodSeconds in deploy/base: time to drain and release the Lease
        assert all_services[name]["stop_grace_period"] == "30s", name
    assert set(all_services["register-webhooks"]["depends_on"]) == {"webhook"}
    assert all_services["register-webhooks"]["command"] == ["register-webhooks"]
    for name in ("kueue", "webhook", "etcd", "kube-apiserver"):
        assert all_services[name]["restart"] == "unless-stopped", name
    for name in ONE_SHOTS:
        assert all_services[name].get("restart", "no") in {"no", "on-failure"}, name


def test_only_the_api_server_publishes_a_port_on_loopback_with_a_free_default() -> None:
    published = {name: s["ports"] for name, s in services().items() if s.get("ports")}
    assert published == {"kube-apiserver": ["127.0.0.1:${KUEUE_BRIDGE_API_PORT:-16443}:6443"]}
    assert services()["pki"]["command"] == ["pki", "--api-port=${KUEUE_BRIDGE_API_PORT:-16443}"]
    header = (REPO / "docker-compose.yaml").read_text().split("\nname:", 1)[0]
    assert "https://127.0.0.1:${KUEUE_BRIDGE_API_PORT}" in header
    assert "docker compose cp kube-apiserver:/pki/host.kubeconfig ./kubeconfig" in header
    assert "kubectl --kubeconfig ./kubeconfig" in header
    assert "pods" in header
    assert "never run" in header
    assert "make test-install" in header


def test_the_api_server_verifies_service_account_tokens_with_a_public_key() -> None:
    flags = dict(arg.split("=", 1) for arg in services()["kube-apiserver"]["command"])
    assert flags["--service-account-key-file"] == "/pki/service-account.pub"
    assert flags["--service-account-signing-key-file"] == "/pki/service-account.key"
    assert "Node" not in flags["--authorization-mode"].split(",")


def test_kueue_and_kueue_bridge_are_configured_for_the_same_kinds() -> None:
    kueue = services()["kueue"]
    kueue_config = yaml.safe_load(mounted(kueue, "/etc/kueue/config.yaml").read_text())
    frameworks = kueue_config["integrations"]["frameworks"]
    # an empty list is defaulted to [batch/job], which then clashes with Job.v1.batch below
    assert frameworks
    assert "batch/job" not in frameworks
    bridge = load_config(mounted(services()["webhook"], "/etc/kueue-bridge/config.yaml"))
    assert set(bridge.integrations.frameworks) == {"batch/job", "workload.codeflare.dev/appwrapper"}
    declarative = {framework.name for framework in bridge.integrations.external_frameworks}
    assert declarative == {"SampleJob.v1alpha1.samples.kueue-bridge.dev"}
    assert set(kueue_config["integrations"]["externalFrameworks"]) == {
        "Job.v1.batch",
        "AppWrapper.v1beta2.workload.codeflare.dev",
        *declarative,
    }
    assert not bridge.internal_cert_management.enable
    assert bridge.webhook.cert_dir == "/pki/webhook"
    assert bridge.leader_election.leader_elect
    # Kueue reads its metrics certificate from a fixed path, and the visibility server's from /visibility
    assert "kueue-certs:/etc/kueue/metrics/certs:ro" in kueue["volumes"]
    assert kueue_config["webhook"]["certDir"] == "/etc/kueue/metrics/certs"
    assert kueue_config["featureGates"]["VisibilityOnDemand"] is False
    # the same file, as the ConfigMap Kueue's manifests create, for kueue-bridge's start-up checks
    configmap_dir = mounted(kueue, "/etc/kueue/config.yaml").parent
    assert services()["kueue-manager-config"]["command"][-1] == "--kustomize=/manifests/compose/kueue"
    assert mounted(services()["kueue-manager-config"], "/manifests/compose") / "kueue" == configmap_dir
    kustomization = yaml.safe_load((configmap_dir / "kustomization.yaml").read_text())
    assert kustomization["configMapGenerator"] == [
        {
            "name": "kueue-manager-config",
            "namespace": kueue_config["namespace"],
            "files": ["controller_manager_config.yaml"],
        }
    ]
    assert mounted(kueue, "/etc/kueue/config.yaml").name == "controller_manager_config.yaml"
    assert kustomization["generatorOptions"] == {"disableNameSuffixHash": True}
    namespaces = {
        doc["metadata"]["name"] for doc in yaml.safe_load_all((COMPOSE_DIR / "namespaces.yaml").read_text())
    }
    assert {bridge.namespace, kueue_config["namespace"]} <= namespaces


def test_kueue_crds_are_the_eleven_of_the_pinned_release(shared_dir: Path) -> None:
    upstream = shared_dir / "real-cluster" / "kueue" / "v0.19.2" / "config" / "components" / "crd" / "bases"
    if not upstream.is_dir():
        pytest.skip(f"{upstream} is absent")
    copied = {p.name: p.read_bytes() for p in KUEUE_CRDS.glob("*.yaml")}
    assert copied == {p.name: p.read_bytes() for p in upstream.glob("*.yaml")}
    readme = (KUEUE_CRDS / "README.md").read_text()
    assert "v0.19.2" in readme
    assert "Apache License, Version 2.0" in readme


# --- deploy/compose/steps.py ------------------------------------------------------------------------
def load_steps() -> ModuleType:
    spec = importlib.util.spec_from_file_location("compose_steps", COMPOSE_DIR / "steps.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def steps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    module = load_steps()
    monkeypatch.setattr(module, "PKI", tmp_path / "pki")
    monkeypatch.setattr(module, "KUEUE_CERTS", tmp_path / "kueue-certs")
    chowned: list[str] = []
    monkeypatch.setattr(module.os, "chown", lambda path, uid, gid: chowned.append(str(path)))
    # `kueue-bridge certs generate` from this environment's console script
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:{module.os.environ.get('PATH', '')}")
    module.__dict__["chowned"] = chowned
    return module


def test_pki_writes_every_credential_and_keeps_them_on_a_second_run(
    steps: ModuleType, tmp_path: Path
) -> None:
    assert steps.pki(api_port=23456) == 0
    pki = tmp_path / "pki"
    public = load_pem_public_key((pki / "service-account.pub").read_bytes())
    private = load_pem_private_key((pki / "service-account.key").read_bytes(), password=None)
    assert public.public_numbers() == private.public_key().public_numbers()  # type: ignore[union-attr]
    apiserver = x509.load_pem_x509_certificate((pki / "apiserver" / "tls.crt").read_bytes())
    names = apiserver.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert {"kube-apiserver", "localhost"} <= set(names.get_values_for_type(x509.DNSName))
    assert "127.0.0.1" in {str(ip) for ip in names.get_values_for_type(x509.IPAddress)}
    webhook = x509.load_pem_x509_certificate((pki / "webhook" / "tls.crt").read_bytes())
    assert "webhook" in webhook.extensions.get_extension_for_class(
        x509.SubjectAlternativeName
    ).value.get_values_for_type(x509.DNSName)
    assert (tmp_path / "kueue-certs" / "tls.crt").exists()
    assert (tmp_path / "kueue-certs" / "tls.key").exists()
    token = (pki / "tokens.csv").read_text().split(",")
    assert token[1:] == ["admin", "admin", "system:masters\n"]
    host = yaml.safe_load((pki / "host.kubeconfig").read_text())
    admin = yaml.safe_load((pki / "admin.kubeconfig").read_text())
    assert host["clusters"][0]["cluster"]["server"] == "https://127.0.0.1:23456"
    assert admin["clusters"][0]["cluster"]["server"] == "https://kube-apiserver:6443"
    assert host["users"][0]["user"]["token"] == token[0]
    assert str(pki / "tokens.csv") in steps.chowned
    assert (pki / "host.kubeconfig").stat().st_mode & 0o077 == 0

    # a second `up` keeps the certificates and the token; a new port reaches host.kubeconfig
    before = {p: p.read_bytes() for p in pki.rglob("*") if p.is_file() and p.suffix != ".kubeconfig"}
    assert steps.pki(api_port=23457) == 0
    assert {p: p.read_bytes() for p in before} == before
    host = yaml.safe_load((pki / "host.kubeconfig").read_text())
    assert host["clusters"][0]["cluster"]["server"] == "https://127.0.0.1:23457"


def test_a_readiness_wait_gives_up_at_its_deadline_naming_the_url(
    steps: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert steps.pki(api_port=23456) == 0
    ready = steps._poll_ready(
        "https://127.0.0.1:1/readyz",
        ca_file=tmp_path / "pki" / "webhook" / "ca.crt",
        token=None,
        deadline_seconds=0.5,
    )
    assert ready is False
    assert "https://127.0.0.1:1/readyz not ready after 0s" in capsys.readouterr().err


def test_an_unknown_step_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        load_steps().main(["nonsense"])
    assert exit_info.value.code == 2
    assert "invalid choice: 'nonsense'" in capsys.readouterr().err
