"""``kueue-bridge manifests`` and ``make release-manifests``: what they render, and that deploy/ is it.

The release bundles are built from ``deploy/`` (hand-written, commented YAML); ``kueue-bridge
manifests`` renders from a configuration. For ``deploy/base/config.yaml`` and
``deploy/appwrapper/config.yaml`` both must describe the same deployment: the same objects, and the
same rights for every ServiceAccount (Role and ClusterRole names may differ; what is granted may not).
"""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from bridge_tools.manifests.cli import default_image, main
from bridge_tools.manifests.release_bundle import BUNDLES, build_bundles
from bridge_tools.manifests.render import RenderOptions, render_manifests, render_worker
from shared.component_access import IDENTITIES, VERBS, access_rules, grants
from shared.config import load_config, parse_config

REPO = Path(__file__).resolve().parents[3]
DEPLOY = REPO / "deploy"
RBAC = {"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"}
Grant = tuple[str, str, str, str, tuple[str, ...]]

DECLARATIVE = """\
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: ops-system
integrations:
  frameworks: [batch/job]
  externalFrameworks:
  - name: TrainingRun.v1alpha1.ml.example.com
    adapter:
      suspend: {path: spec.paused}
      podSets:
      - template: spec.template
      finished: "false"
multiKueue:
  externalFrameworks:
  - name: TrainingRun.v1alpha1.ml.example.com
"""


def rights(objects: list[dict[str, Any]]) -> dict[tuple[str, str], set[Grant]]:
    """(namespace, ServiceAccount) -> {(where, group, resource, verb, resourceNames)}; where is a
    namespace for a Role's rules, ``*`` for a ClusterRole's."""
    roles = {
        (o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]): o
        for o in objects
        if o["kind"] in {"Role", "ClusterRole"}
    }
    found: dict[tuple[str, str], set[Grant]] = {}
    for binding in (o for o in objects if o["kind"] in {"RoleBinding", "ClusterRoleBinding"}):
        namespace = binding["metadata"].get("namespace")
        ref = binding["roleRef"]
        role = roles[(ref["kind"], namespace if ref["kind"] == "Role" else None, ref["name"])]
        where = namespace if binding["kind"] == "RoleBinding" else "*"
        for subject in binding["subjects"]:
            if subject["kind"] != "ServiceAccount":
                continue
            bucket = found.setdefault((subject["namespace"], subject["name"]), set())
            for rule in role["rules"]:
                names = tuple(sorted(rule.get("resourceNames") or ()))
                bucket |= {
                    (where, group, resource, verb, names)
                    for group in rule["apiGroups"]
                    for resource in rule["resources"]
                    for verb in rule["verbs"]
                }
    return found


def non_rbac(objects: list[dict[str, Any]]) -> dict[tuple[str, str | None, str], dict[str, Any]]:
    return {
        (o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]): o
        for o in objects
        if o["kind"] not in RBAC or (o["kind"] == "ClusterRole" and "aggregate" in str(o["metadata"]))
    }


def rendered(config_path: Path, image: str = "kueue-bridge:test") -> list[dict[str, Any]]:
    return render_manifests(
        load_config(config_path), options=RenderOptions(config_text=config_path.read_text(), image=image)
    )


@pytest.mark.parametrize(
    ("bundle", "flavour"), [("kueue-bridge", "base"), ("kueue-bridge-appwrapper", "appwrapper")]
)
def test_the_release_bundle_built_from_deploy_is_what_manifests_renders(bundle: str, flavour: str) -> None:
    built = build_bundles(DEPLOY, image="kueue-bridge:test")[bundle]
    ours = rendered(DEPLOY / flavour / "config.yaml")
    assert non_rbac(built) == non_rbac(ours)
    built_rights, our_rights = rights(built), rights(ours)
    # deploy/kueue binds every component's ServiceAccount, also the AppWrapper one the base has not
    assert {k: v for k, v in built_rights.items() if k in our_rights} == our_rights
    assert set(built_rights) - set(our_rights) <= {("kueue-bridge-system", "kueue-bridge-appwrapper")}


def test_every_rendered_object_is_ours_and_the_image_is_pinned() -> None:
    objects = rendered(DEPLOY / "base" / "config.yaml", image=default_image())
    assert default_image().startswith("kueue-bridge:") and not default_image().endswith(":latest")
    for obj in objects:
        assert obj["metadata"]["labels"]["app.kubernetes.io/part-of"] == "kueue-bridge"
    images = [
        c["image"]
        for o in objects
        if o["kind"] == "Deployment"
        for c in o["spec"]["template"]["spec"]["containers"]
    ]
    assert images and set(images) == {default_image()}


def test_rules_have_no_wildcards_and_only_known_verbs() -> None:
    for config in (load_config(DEPLOY / "appwrapper" / "config.yaml"), parse_config(DECLARATIVE, source="t")):
        for identity in IDENTITIES:
            for rule in access_rules(config, identity):
                assert "*" not in (rule.group, *rule.resources, *rule.verbs), rule
                assert set(rule.verbs) <= set(VERBS), rule
                assert rule.why


def test_a_declarative_kind_gets_its_resource_status_webhooks_and_kueue_roles() -> None:
    config = parse_config(DECLARATIVE, source="t")
    objects = render_manifests(config, options=RenderOptions(config_text=DECLARATIVE, image="i:1"))
    by_sa = rights(objects)
    reconciler = by_sa[("ops-system", "kueue-bridge-reconciler")]
    for verb in ("get", "list", "watch", "update", "patch", "delete"):
        assert ("*", "ml.example.com", "trainingruns", verb, ()) in reconciler
    for verb in ("get", "update", "patch"):
        assert ("*", "ml.example.com", "trainingruns/status", verb, ()) in reconciler
    multikueue = by_sa[("ops-system", "kueue-bridge-multikueue")]
    assert ("*", "ml.example.com", "trainingruns/status", "patch", ()) in multikueue
    # Kueue's manager follows owners through its externalFrameworks kinds (batch Jobs it has already)
    kueue = by_sa[("kueue-system", "kueue-controller-manager")]
    assert {(g, r, v) for _, g, r, v, _ in kueue} == {
        ("ml.example.com", "trainingruns", v) for v in ("get", "list", "watch")
    }
    # Kueue's own namespace: only ConfigMaps, only get (the name follows Kueue's release name)
    reads = {(w, r, v, n) for w, _, r, v, n in reconciler if w == "kueue-system"}
    assert reads == {("kueue-system", "configmaps", "get", ())}
    # Kueue's manager Deployment, in whatever namespace: listed cluster-wide
    assert ("*", "apps", "deployments", "list", ()) in reconciler
    # the webhook registers its configurations (both kinds' rules) once it serves: none is shipped
    assert not [o for o in objects if o["kind"].endswith("WebhookConfiguration")]
    webhook = next(
        o for o in objects if o["metadata"]["name"] == "kueue-bridge-webhook" and o["kind"] == "Deployment"
    )
    (container,) = webhook["spec"]["template"]["spec"]["containers"]
    assert container["args"][-3:] == [
        "--register-configurations",
        "--configurations-owner",
        "kueue-bridge-webhook",
    ]
    roles = {
        o["metadata"]["name"]: o
        for o in objects
        if (o["kind"] == "ClusterRole" and "-editor" in o["metadata"]["name"])
        or "-viewer" in o["metadata"]["name"]
    }
    assert set(roles) == {
        "kueue-bridge-trainingruns.ml.example.com-editor",
        "kueue-bridge-trainingruns.ml.example.com-viewer",
    }
    viewer = roles["kueue-bridge-trainingruns.ml.example.com-viewer"]["metadata"]["labels"]
    assert viewer["rbac.kueue.x-k8s.io/batch-user"] == "true"
    assert viewer["rbac.authorization.k8s.io/aggregate-to-view"] == "true"
    worker = rights(render_worker(config))[("ops-system", "kueue-bridge-multikueue-worker")]
    assert {("*", "ml.example.com", "trainingruns", v, ()) for v in ("create", "delete", "watch")} <= worker


def test_the_model_matches_the_hand_written_rbac_of_deploy() -> None:
    config = load_config(DEPLOY / "base" / "config.yaml")
    bundles = build_bundles(DEPLOY, image="kueue-bridge:test")
    worker = rights(bundles["kueue-bridge-worker"])
    assert worker == rights(render_worker(config))
    built = rights(bundles["kueue-bridge"])
    for identity in ("webhook", "reconciler", "multikueue"):
        granted = {(g, r, v) for _, g, r, v, _ in built[("kueue-bridge-system", f"kueue-bridge-{identity}")]}
        assert granted == grants(access_rules(config, identity)), identity


def test_the_cli_renders_yaml_with_the_kueue_fragment_and_exits_1_on_a_bad_config(tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert main(["--config", str(DEPLOY / "appwrapper" / "config.yaml")], stdout=out, stderr=err) == 0
    text = out.getvalue()
    assert text.startswith("# Kueue's own Configuration (ConfigMap kueue-system/kueue-manager-config")
    assert "#     - AppWrapper.v1beta2.workload.codeflare.dev" in text
    assert "remove batch/job, workload.codeflare.dev/appwrapper from integrations.frameworks" in text
    kinds = [doc["kind"] for doc in yaml.safe_load_all(text) if doc]
    assert kinds[:2] == ["Namespace", "ConfigMap"] and "MutatingWebhookConfiguration" not in kinds
    out = io.StringIO()
    assert main(["--config", str(DEPLOY / "base" / "config.yaml"), "--part", "kueue-config"], stdout=out) == 0
    assert yaml.safe_load(out.getvalue()) == {"integrations": {"externalFrameworks": ["Job.v1.batch"]}}
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nintegrations: {frameworks: [ray.io/rayjob]}\n"
    )
    err = io.StringIO()
    assert main(["--config", str(bad)], stdout=io.StringIO(), stderr=err) == 1
    assert err.getvalue().startswith(f"{bad}: integrations.frameworks[0]: Unsupported value")


def test_make_release_manifests_writes_one_pinned_deterministic_yaml_per_bundle(tmp_path: Path) -> None:
    command = [
        sys.executable,
        "-m",
        "bridge_tools.manifests.release_bundle",
        "--out",
        str(tmp_path),
        "--image",
        "reg/kb:1.2.3",
    ]
    first = subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=True)
    written = sorted(tmp_path.glob("*.yaml"))
    assert [p.name.rsplit("-", 1)[0] for p in written] == sorted(BUNDLES)
    contents = {p.name: p.read_text() for p in written}
    subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=True)
    assert {p.name: p.read_text() for p in sorted(tmp_path.glob("*.yaml"))} == contents
    assert "kueue-bridge:latest" not in "".join(contents.values())
    assert (
        "image: reg/kb:1.2.3"
        in contents[
            next(n for n in contents if n.startswith("kueue-bridge-0") or n.startswith("kueue-bridge-1"))
        ]
    )
    assert first.stdout.count("objects") == len(BUNDLES)
    refused = subprocess.run(
        [*command[:-1], "kb:latest"], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert refused.returncode == 2 and "pin a tag" in refused.stderr
