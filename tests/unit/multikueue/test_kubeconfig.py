"""A worker's kubeconfig: Kueue's security rules and messages, Secret and Path sources."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from shared.kueue.multikueue_kubeconfig import (
    KubeConfigError,
    load_cluster_kubeconfig,
    validate_kubeconfig,
    validate_kubeconfig_path,
)
from shared.models.multikueue import MultiKueueCluster
from tests.unit.multikueue.fakes import kubeconfig_for, secret_for

TOKEN = "secret-token-value"


def rejected(document: dict[str, Any]) -> tuple[str, str]:
    with pytest.raises(KubeConfigError) as caught:
        validate_kubeconfig(document)
    assert TOKEN not in caught.value.message
    return caught.value.reason, caught.value.message


def with_cluster(**fields: Any) -> dict[str, Any]:
    document = kubeconfig_for("w1")
    document["clusters"][0]["cluster"].update(fields)
    return document


def test_a_token_and_inline_ca_kubeconfig_is_accepted() -> None:
    validate_kubeconfig(kubeconfig_for("w1"))
    validate_kubeconfig(with_cluster(server="https://10.0.0.7:6443"))
    validate_kubeconfig(with_cluster(server="https://[fd00::7]:6443"))
    validate_kubeconfig(with_cluster(server="https://Worker-1.Example.COM"))  # lower-cased first


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (kubeconfig_for("w1", tokenFile="/var/run/token"), "tokenFile is not allowed"),
        (
            with_cluster(**{"insecure-skip-tls-verify": True}),
            "insecure TLS verification is not allowed for cluster w1",
        ),
        (
            with_cluster(**{"certificate-authority": "/etc/ca.crt"}),
            "certificate-authority file paths are not allowed, use certificate-authority-data for cluster w1",
        ),
        (with_cluster(server=""), "server URL is required for cluster w1"),
        (with_cluster(server="https://evil_host:6443"), "untrusted server endpoint"),
        (with_cluster(server="https://a..b:6443"), "untrusted server endpoint"),
        (kubeconfig_for("w1", username="admin", password="pw"), "basic auth is not allowed"),
        (kubeconfig_for("w1", exec={"command": "aws", "apiVersion": "x"}), "exec plugins are not allowed"),
        (kubeconfig_for("w1", **{"auth-provider": {"name": "oidc"}}), "auth providers are not allowed"),
        (
            kubeconfig_for("w1", **{"client-certificate": "/etc/tls.crt"}),
            "client-certificate file paths are not allowed, use client-certificate-data for user mk",
        ),
    ],
)
def test_insecure_kubeconfigs_are_refused_with_kueues_messages(
    document: dict[str, Any], message: str
) -> None:
    assert rejected(document) == ("InsecureKubeConfig", message)


def test_a_kubeconfig_without_a_usable_context_is_refused() -> None:
    document = kubeconfig_for("w1")
    document["current-context"] = "other"
    assert rejected(document) == (
        "InsecureKubeConfig",
        "invalid configuration: context was not found for specified context: other",
    )


def cluster(location: str, location_type: str = "Secret") -> MultiKueueCluster:
    return MultiKueueCluster.from_wire(
        {
            "metadata": {"name": "w1"},
            "spec": {"clusterSource": {"kubeConfig": {"location": location, "locationType": location_type}}},
        }
    )


def test_secret_source_missing_secret_missing_key_and_garbage() -> None:
    def load(secrets: dict[str, dict[str, Any]]) -> KubeConfigError:
        with pytest.raises(KubeConfigError) as caught:
            load_cluster_kubeconfig(cluster("w1-secret"), secrets=secrets.get)
        return caught.value

    missing = load({})
    assert (missing.reason, missing.message, missing.not_found) == (
        "BadKubeConfig",
        'load client config failed: Secret "w1-secret" not found',
        True,
    )
    no_key = load({"w1-secret": {"data": {"config": "eA=="}}})
    assert (no_key.reason, no_key.message, no_key.not_found) == (
        "BadKubeConfig",
        'load client config failed: key "kubeconfig" not found in secret "w1-secret"',
        False,
    )
    garbage = load({"w1-secret": secret_for("w1-secret", "clusters: [unclosed")})
    assert garbage.reason == "InsecureKubeConfig"  # Kueue: a parse failure is a validation failure
    assert garbage.message.startswith("load client config failed: failed to parse kubeconfig(apiconfig): ")
    insecure = load({"w1-secret": secret_for("w1-secret", kubeconfig_for("w1", tokenFile="/t"))})
    assert (insecure.reason, insecure.message) == (
        "InsecureKubeConfig",
        "load client config failed: tokenFile is not allowed",
    )
    loaded = load_cluster_kubeconfig(
        cluster("w1-secret"), secrets={"w1-secret": secret_for("w1-secret", kubeconfig_for("w1"))}.get
    )
    assert loaded.document == kubeconfig_for("w1")


def test_path_must_resolve_under_the_prefix(tmp_path: Path) -> None:
    prefix = tmp_path / "kubeconfigs"
    prefix.mkdir()
    good = prefix / "w1.yaml"
    good.write_text(yaml.safe_dump(kubeconfig_for("w1")))
    sibling = tmp_path / "kubeconfigs-other"
    sibling.mkdir()
    (sibling / "w1.yaml").write_text("x")
    escape = prefix / "escape.yaml"
    os.symlink(sibling / "w1.yaml", escape)

    assert validate_kubeconfig_path(str(good), allowed_prefix=str(prefix)) == good
    for path, problem in [
        ("", "kubeconfig path must not be empty"),
        (f"{prefix}/../kubeconfigs-other/w1.yaml", 'kubeconfig path is not under the allowed prefix: "'),
        ("relative/w1.yaml", "kubeconfig path is not under the allowed prefix: path must be absolute"),
        (str(sibling / "w1.yaml"), "kubeconfig path is not under the allowed prefix: "),
        (str(escape), "kubeconfig path is not under the allowed prefix: "),
    ]:
        with pytest.raises(ValueError, match="^" + problem.replace("(", r"\(")):
            validate_kubeconfig_path(path, allowed_prefix=str(prefix))
    loaded = load_cluster_kubeconfig(
        cluster(str(good), "Path"), secrets=lambda name: None, path_prefix=str(prefix)
    )
    assert loaded.document["current-context"] == "ctx"
    with pytest.raises(KubeConfigError) as caught:
        load_cluster_kubeconfig(
            cluster(str(escape), "Path"), secrets=lambda name: None, path_prefix=str(prefix)
        )
    assert caught.value.reason == "BadKubeConfig"
    assert caught.value.message.startswith(
        "load client config failed: kubeconfig path is not under the allowed prefix"
    )


def test_unreadable_paths_are_named_as_go_names_them(tmp_path: Path) -> None:
    prefix = tmp_path / "kubeconfigs"
    prefix.mkdir()
    (prefix / "dir.yaml").mkdir()
    for location, message in [
        # EvalSymlinks stops at the first component that does not exist
        (
            f"{prefix}/team/w1.yaml",
            f"cannot resolve kubeconfig path symlinks: lstat {prefix}/team: no such file or directory",
        ),
        # os.ReadFile of the resolved path (a directory opens, then fails to read), errno as Go prints it
        (f"{prefix}/dir.yaml", f"read {prefix}/dir.yaml: is a directory"),
    ]:
        with pytest.raises(KubeConfigError) as caught:
            load_cluster_kubeconfig(
                cluster(location, "Path"), secrets=lambda name: None, path_prefix=str(prefix)
            )
        assert caught.value.message == f"load client config failed: {message}"
