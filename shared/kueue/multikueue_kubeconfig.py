"""A worker cluster's kubeconfig: where it is read from, and Kueue's rules for what it may contain.

A MultiKueueCluster names its kubeconfig by ``spec.clusterSource.kubeConfig``: ``locationType:
Secret`` (the default) is a Secret of that name in the configuration namespace, data key
``kubeconfig``; ``locationType: Path`` is a file on the controller's disk. Kueue's rules
(``multikueuecluster.go``), with its reasons and messages, decide what is loaded:

* **Path validation** (gate ``MultiKueueKubeConfigPathValidation``, on by default): the path is not
  empty, has no ``..`` component once cleaned, is absolute, and after resolving symlinks lies under
  ``/etc/multikueue/kubeconfigs/`` (with a trailing separator, so a sibling directory whose name
  merely starts the same is not "under" it). Otherwise a file could be any of the controller's own.
* **Security validation**, always: no ``tokenFile`` in any user, no ``insecure-skip-tls-verify``,
  no ``certificate-authority`` file path (inline ``certificate-authority-data`` only), a server URL
  in every cluster; for the selected context no basic auth, no exec plugin, no auth provider, and a
  host that is an IP address or a DNS-1123 subdomain (lower-cased first). kueue-bridge also refuses
  ``client-certificate``/``client-key`` *file paths* (Kueue lets them through; they read the
  controller's files exactly as a CA path would).

A failure is a ``KubeConfigError`` carrying the MultiKueueCluster ``Active`` reason
(``BadKubeConfig``: could not be read; ``InsecureKubeConfig``: read but refused, which in Kueue
includes a file that does not parse) and Kueue's message. ``not_found`` marks a missing Secret:
Kueue does not retry that one, it waits for the Secret to appear.

Invariant: no message, log line or exception raised here contains a credential. Messages name
fields, clusters and users, never their values (except the server URL's host, which is not secret).
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

import yaml

from shared.constants import MULTIKUEUE_CONFIG_SECRET_KEY
from shared.kube import SECRET_GVK, ConnectionConfig, cache_miss_message, kubeconfig_from_dict
from shared.models.multikueue import KUBECONFIG_LOCATION_PATH, MultiKueueCluster
from shared.validation_k8s import is_dns1123_subdomain

__all__ = [
    "BAD_KUBECONFIG",
    "DEFAULT_KUBECONFIG_PATH_PREFIX",
    "INSECURE_KUBECONFIG",
    "KubeConfigError",
    "LoadedKubeConfig",
    "connection_for",
    "load_cluster_kubeconfig",
    "parse_kubeconfig",
    "validate_kubeconfig",
    "validate_kubeconfig_path",
]

BAD_KUBECONFIG: Final = "BadKubeConfig"
INSECURE_KUBECONFIG: Final = "InsecureKubeConfig"
DEFAULT_KUBECONFIG_PATH_PREFIX: Final = "/etc/multikueue/kubeconfigs"

SecretLookup = Callable[[str], Mapping[str, Any] | None]
"""Secret name -> the Secret in the configuration namespace (``None`` when it does not exist)."""


class KubeConfigError(Exception):
    """Why a worker's kubeconfig cannot be used; ``reason`` is the ``Active`` condition reason."""

    def __init__(self, reason: str, message: str, *, not_found: bool = False) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.not_found = not_found


@dataclass(frozen=True)
class LoadedKubeConfig:
    """A validated kubeconfig: ``raw`` tells a changed Secret/file apart from the one in use."""

    raw: bytes
    document: dict[str, Any]


# --- where it comes from ---------------------------------------------------------------------------
def validate_kubeconfig_path(raw_path: str, *, allowed_prefix: str) -> Path:
    """Kueue's ``validateKubeConfigPath``: the resolved file, or ``ValueError`` with Kueue's message."""
    not_allowed = "kubeconfig path is not under the allowed prefix"
    if raw_path == "":
        raise ValueError("kubeconfig path must not be empty")
    cleaned = os.path.normpath(raw_path)
    if ".." in cleaned.split(os.sep):
        raise ValueError(f'{not_allowed}: path contains ".."')
    if not os.path.isabs(cleaned):
        raise ValueError(f"{not_allowed}: path must be absolute")
    prefix = os.path.normpath(allowed_prefix)
    if not os.path.exists(prefix):
        raise ValueError(f'{not_allowed}: "{cleaned}" is not under "{prefix}"')
    resolved_prefix = os.path.realpath(prefix)
    if not os.path.exists(cleaned):
        raise ValueError(
            f"cannot resolve kubeconfig path symlinks: lstat {_first_missing(cleaned)}: no such file or directory"
        )
    resolved = os.path.realpath(cleaned)
    if not (resolved + os.sep).startswith(resolved_prefix + os.sep):
        raise ValueError(f'{not_allowed}: "{resolved}" is not under "{resolved_prefix}"')
    return Path(resolved)


def _first_missing(path: str) -> str:
    """The first component of ``path`` that does not exist: what Go's ``EvalSymlinks`` names when it
    fails (its ``lstat`` stops there)."""
    parts = path.split(os.sep)
    for end in range(2, len(parts) + 1):
        prefix = os.sep.join(parts[:end])
        if not os.path.lexists(prefix):
            return prefix
    return path


def go_errno_text(exc: OSError) -> str:
    """An OS error as Go's ``syscall.Errno`` prints it: ``no such file or directory`` where Python's
    ``strerror`` says ``No such file or directory``."""
    text = exc.strerror or str(exc)
    return text[:1].lower() + text[1:]


def _from_secret(name: str, secrets: SecretLookup) -> bytes:
    secret = secrets(name)
    if secret is None:
        raise KubeConfigError(BAD_KUBECONFIG, cache_miss_message(SECRET_GVK, name), not_found=True)
    data = secret.get("data") or {}
    encoded = data.get(MULTIKUEUE_CONFIG_SECRET_KEY) if isinstance(data, Mapping) else None
    if not isinstance(encoded, str):
        raise KubeConfigError(
            BAD_KUBECONFIG, f'key "{MULTIKUEUE_CONFIG_SECRET_KEY}" not found in secret "{name}"'
        )
    try:
        return base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise KubeConfigError(
            BAD_KUBECONFIG, f'key "{MULTIKUEUE_CONFIG_SECRET_KEY}" of secret "{name}" is not base64'
        ) from None


def _from_path(location: str, *, allowed_prefix: str, validate_path: bool) -> bytes:
    path = Path(location)
    try:
        if validate_path:
            path = validate_kubeconfig_path(location, allowed_prefix=allowed_prefix)
        return path.read_bytes()
    except ValueError as exc:
        raise KubeConfigError(BAD_KUBECONFIG, str(exc)) from None
    except OSError as exc:
        # Go's os.ReadFile opens a directory and fails on the read
        step = "read" if isinstance(exc, IsADirectoryError) else "open"
        raise KubeConfigError(BAD_KUBECONFIG, f"{step} {path}: {go_errno_text(exc)}") from None


def load_cluster_kubeconfig(
    cluster: MultiKueueCluster,
    *,
    secrets: SecretLookup,
    path_prefix: str = DEFAULT_KUBECONFIG_PATH_PREFIX,
    validate_path: bool = True,
) -> LoadedKubeConfig:
    """Read and validate ``cluster``'s kubeconfig; ``KubeConfigError`` says why it cannot be used.

    Messages are prefixed ``load client config failed: `` as Kueue writes them to the condition.
    """
    try:
        source = cluster.spec.cluster_source
        if source.cluster_profile_ref is not None:
            raise KubeConfigError(
                "MultiKueueClusterProfileFeatureDisabled", "MultiKueueClusterProfile feature gate is disabled"
            )
        reference = source.kube_config
        if reference is None:
            raise KubeConfigError(BAD_KUBECONFIG, "kubeconfig reference is nil")
        if reference.effective_location_type == KUBECONFIG_LOCATION_PATH:
            raw = _from_path(reference.location, allowed_prefix=path_prefix, validate_path=validate_path)
        else:
            raw = _from_secret(reference.location, secrets)
        document = parse_kubeconfig(raw)
        validate_kubeconfig(document)
    except KubeConfigError as exc:
        raise KubeConfigError(
            exc.reason, f"load client config failed: {exc.message}", not_found=exc.not_found
        ) from None
    return LoadedKubeConfig(raw=raw, document=document)


# --- what it may contain ---------------------------------------------------------------------------
def parse_kubeconfig(raw: bytes) -> dict[str, Any]:
    """``clientcmd.Load``: YAML or JSON, a mapping; anything else is ``InsecureKubeConfig`` as in Kueue."""
    try:
        document = yaml.safe_load(raw.decode("utf-8")) if raw.strip() else {}
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        problem = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise KubeConfigError(
            INSECURE_KUBECONFIG, f"failed to parse kubeconfig(apiconfig): {problem}"
        ) from None
    if document is None:
        document = {}
    if not isinstance(document, dict):
        raise KubeConfigError(
            INSECURE_KUBECONFIG, "failed to parse kubeconfig(apiconfig): the document is not a mapping"
        )
    return document


def _named(document: Mapping[str, Any], section: str, entry: str) -> list[tuple[str, dict[str, Any]]]:
    items = document.get(section) or []
    if not isinstance(items, list):
        raise KubeConfigError(
            INSECURE_KUBECONFIG, f"failed to parse kubeconfig(apiconfig): {section} is not a list"
        )
    named: list[tuple[str, dict[str, Any]]] = []
    for item in items:
        body = item.get(entry) if isinstance(item, dict) else None
        if not isinstance(body, dict):
            body = {}
        named.append((str(item.get("name", "")) if isinstance(item, dict) else "", body))
    return named


def _host(server: str) -> str:
    """``url.Parse(server).Host`` split like ``net.SplitHostPort`` (the whole host when that fails)."""
    try:
        netloc = urlsplit(server).netloc
    except ValueError:
        return ""
    host_port = netloc.rpartition("@")[2]
    if host_port.startswith("["):
        close = host_port.find("]")
        if close != -1 and host_port[close + 1 : close + 2] == ":":
            return host_port[1:close]
        return host_port
    if host_port.count(":") == 1:
        return host_port.partition(":")[0]
    return host_port


def _is_valid_host(server: str) -> bool:
    host = _host(server)
    if not host:
        return False
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return not is_dns1123_subdomain(host)
    return True


def _selected(document: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The cluster and user entries of the current context (``RESTConfigFromKubeConfig``)."""
    context_name = document.get("current-context")
    contexts = dict(_named(document, "contexts", "context"))
    if not context_name or context_name not in contexts:
        raise KubeConfigError(
            INSECURE_KUBECONFIG,
            "invalid configuration: no configuration has been provided, try setting KUBERNETES_MASTER "
            "environment variable"
            if not context_name
            else f"invalid configuration: context was not found for specified context: {context_name}",
        )
    context = contexts[context_name]
    clusters = dict(_named(document, "clusters", "cluster"))
    users = dict(_named(document, "users", "user"))
    cluster_name = str(context.get("cluster") or "")
    if cluster_name not in clusters:
        raise KubeConfigError(
            INSECURE_KUBECONFIG,
            f'invalid configuration: cluster "{cluster_name}" was not found for context "{context_name}"',
        )
    return clusters[cluster_name], users.get(str(context.get("user") or ""), {})


def validate_kubeconfig(document: Mapping[str, Any]) -> None:
    """Kueue's ``validateKubeconfig`` + ``validateRestConfig``; ``KubeConfigError`` on the first problem."""
    for user_name, user in _named(document, "users", "user"):
        if user.get("tokenFile"):
            raise KubeConfigError(INSECURE_KUBECONFIG, "tokenFile is not allowed")
        for field in ("client-certificate", "client-key"):
            if user.get(field):
                raise KubeConfigError(
                    INSECURE_KUBECONFIG,
                    f"{field} file paths are not allowed, use {field}-data for user {user_name}",
                )
    for name, cluster in _named(document, "clusters", "cluster"):
        if cluster.get("insecure-skip-tls-verify") is True:
            raise KubeConfigError(
                INSECURE_KUBECONFIG, f"insecure TLS verification is not allowed for cluster {name}"
            )
        if cluster.get("certificate-authority"):
            raise KubeConfigError(
                INSECURE_KUBECONFIG,
                f"certificate-authority file paths are not allowed, use certificate-authority-data for cluster {name}",
            )
        if not cluster.get("server"):
            raise KubeConfigError(INSECURE_KUBECONFIG, f"server URL is required for cluster {name}")
    cluster, user = _selected(document)
    if not _is_valid_host(str(cluster.get("server", "")).lower()):
        raise KubeConfigError(INSECURE_KUBECONFIG, "untrusted server endpoint")
    if user.get("username") or user.get("password"):
        raise KubeConfigError(INSECURE_KUBECONFIG, "basic auth is not allowed")
    if user.get("exec"):
        raise KubeConfigError(INSECURE_KUBECONFIG, "exec plugins are not allowed")
    if user.get("auth-provider"):
        raise KubeConfigError(INSECURE_KUBECONFIG, "auth providers are not allowed")


def connection_for(loaded: LoadedKubeConfig) -> ConnectionConfig:
    """The connection a validated kubeconfig describes (``ValueError`` when the library refuses it)."""
    try:
        return kubeconfig_from_dict(loaded.document)
    except Exception as exc:  # the kubernetes library raises ConfigException, TypeError, ValueError...
        raise ValueError(f"invalid kubeconfig: {type(exc).__name__}") from None
