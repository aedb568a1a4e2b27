"""Where the API server is and how to talk to it securely: loaded by ``kubernetes.config``.

``kubernetes.config`` is used **only** here and **only** to load configuration: it understands every
kubeconfig feature (exec plugins, OIDC, client certificates and keys as files or inline data,
``insecure-skip-tls-verify``, ``tls-server-name``) and the in-cluster service-account layout. Its HTTP
stack is never used; the result is turned into a ``ConnectionConfig``: server URL, one
``ssl.SSLContext`` (built once and shared by every connection -- creating an SSLContext per request
costs milliseconds) and a token source asked per request (see ``auth``).

A token *file* (in-cluster, or ``tokenFile`` in a kubeconfig user) is re-read per request by us,
because the library caches it for a minute (in-cluster) or forever (kubeconfig). A literal
``token`` in the kubeconfig user is used as is: asking the loaded ``Configuration`` for it would
re-run the library's authentication loading on every request (its refresh hook), which measured
as the largest per-request cost of the client. Exec plugins, auth providers and basic auth still
go through the ``Configuration`` (its hook renews expiring credentials).
"""

from __future__ import annotations

import os
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from shared.kube.auth import (
    ConfigurationTokenSource,
    FileTokenSource,
    StaticTokenSource,
    TokenSource,
)

__all__ = [
    "SERVICE_ACCOUNT_DIR",
    "ConnectionConfig",
    "ConnectionConfigError",
    "kubeconfig_from_dict",
    "load_connection",
    "load_in_cluster",
    "load_kubeconfig",
    "static_connection",
]

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


@dataclass(frozen=True)
class ConnectionConfig:
    """Everything needed to open connections to one API server."""

    server: str
    ssl_context: ssl.SSLContext | None
    token_source: TokenSource
    tls_server_name: str | None = None
    namespace: str = "default"


def _ssl_context(
    *, ca_file: str | None, cert_file: str | None, key_file: str | None, verify: bool
) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=ca_file)
    if not verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if cert_file:
        context.load_cert_chain(cert_file, key_file)
    return context


def _read_kubeconfig(path: Path) -> dict[str, Any]:
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"{path}: cannot read kubeconfig: {exc}") from exc
    if not isinstance(document, dict):
        raise ValueError(f"{path}: a kubeconfig must be a mapping")
    return document


def _selected(document: dict[str, Any], context_name: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The selected context and its user entry (both possibly empty)."""
    name = context_name or document.get("current-context")
    context: dict[str, Any] = {}
    for entry in document.get("contexts") or []:
        if isinstance(entry, dict) and entry.get("name") == name and isinstance(entry.get("context"), dict):
            context = entry["context"]
    user: dict[str, Any] = {}
    for entry in document.get("users") or []:
        if (
            isinstance(entry, dict)
            and entry.get("name") == context.get("user")
            and isinstance(entry.get("user"), dict)
        ):
            user = entry["user"]
    return context, user


def _connection_from(
    configuration: Any, *, document: dict[str, Any], context: str | None, base_dir: Path | None
) -> ConnectionConfig:
    server = str(configuration.host).rstrip("/")
    selected_context, user = _selected(document, context)
    token_file = user.get("tokenFile")
    static_token = user.get("token")
    token_source: TokenSource
    if isinstance(token_file, str) and token_file:
        candidate = Path(os.path.expanduser(token_file))
        if not candidate.is_absolute() and base_dir is not None:
            candidate = base_dir / candidate
        token_source = FileTokenSource(candidate)
    elif isinstance(static_token, str) and static_token and "auth-provider" not in user:
        # The loader would answer with this very token (an auth-provider is the only thing it
        # prefers), but only after re-running its whole authentication loading: tens of
        # microseconds per request (bench/client.py).
        token_source = StaticTokenSource(static_token)
    else:
        token_source = ConfigurationTokenSource(configuration)
    ssl_context = None
    if server.startswith("https"):
        ssl_context = _ssl_context(
            ca_file=configuration.ssl_ca_cert,
            cert_file=configuration.cert_file,
            key_file=configuration.key_file,
            verify=bool(configuration.verify_ssl),
        )
    return ConnectionConfig(
        server=server,
        ssl_context=ssl_context,
        token_source=token_source,
        tls_server_name=getattr(configuration, "tls_server_name", None),
        namespace=str(selected_context.get("namespace") or "default"),
    )


def load_kubeconfig(path: str | Path | None = None, *, context: str | None = None) -> ConnectionConfig:
    """Load a kubeconfig (``$KUBECONFIG`` or ``~/.kube/config`` when ``path`` is ``None``)."""
    from kubernetes import client as k8s_client
    from kubernetes import config as k8s_config

    load_kube_config: Any = k8s_config.load_kube_config
    resolved = Path(path or os.environ.get("KUBECONFIG", "~/.kube/config").split(os.pathsep)[0]).expanduser()
    document = _read_kubeconfig(resolved)
    configuration: Any = k8s_client.Configuration()
    load_kube_config(
        config_file=str(resolved), context=context, client_configuration=configuration, persist_config=False
    )
    return _connection_from(configuration, document=document, context=context, base_dir=resolved.parent)


def kubeconfig_from_dict(document: dict[str, Any], *, context: str | None = None) -> ConnectionConfig:
    """A kubeconfig held in memory (e.g. a MultiKueue worker cluster's Secret)."""
    from kubernetes import client as k8s_client
    from kubernetes import config as k8s_config

    load_from_dict: Any = k8s_config.load_kube_config_from_dict
    configuration: Any = k8s_client.Configuration()
    load_from_dict(
        config_dict=document, context=context, client_configuration=configuration, persist_config=False
    )
    return _connection_from(configuration, document=document, context=context, base_dir=None)


def load_in_cluster(
    *, service_account_dir: Path = SERVICE_ACCOUNT_DIR, environ: dict[str, str] | None = None
) -> ConnectionConfig:
    """The pod's service account: API server from the environment, CA and token from files."""
    from kubernetes.config import incluster_config

    loader_class: Any = incluster_config.InClusterConfigLoader

    env = dict(os.environ if environ is None else environ)
    loader: Any = loader_class(
        token_filename=str(service_account_dir / "token"),
        cert_filename=str(service_account_dir / "ca.crt"),
        environ=env,
    )
    loader._load_config()  # validates env and files exactly as load_incluster_config() does
    namespace_file = service_account_dir / "namespace"
    namespace = namespace_file.read_text().strip() if namespace_file.exists() else "default"
    return ConnectionConfig(
        server=str(loader.host),
        ssl_context=_ssl_context(ca_file=str(loader.ssl_ca_cert), cert_file=None, key_file=None, verify=True),
        token_source=FileTokenSource(service_account_dir / "token"),
        namespace=namespace,
    )


class ConnectionConfigError(ValueError):
    """No usable connection: the kubeconfig (or the pod's service account) is missing or invalid."""


def load_connection(*, kubeconfig: str | Path | None = None, context: str | None = None) -> ConnectionConfig:
    """An explicit kubeconfig, else in-cluster when running in a pod, else the default kubeconfig.

    Every reason it cannot (a missing or unreadable file, a context that does not exist, a bad
    certificate) is a :class:`ConnectionConfigError` whose message says which file and why, so
    that a process can stop with one line instead of a traceback.
    """
    from kubernetes.config import ConfigException

    try:
        if kubeconfig is not None:
            return load_kubeconfig(kubeconfig, context=context)
        if "KUBERNETES_SERVICE_HOST" in os.environ and (SERVICE_ACCOUNT_DIR / "token").exists():
            return load_in_cluster()
        return load_kubeconfig(None, context=context)
    except ConnectionConfigError:
        raise
    except (ValueError, OSError, ConfigException) as exc:
        source = kubeconfig or os.environ.get("KUBECONFIG") or "the default kubeconfig (~/.kube/config)"
        text = str(exc)
        message = text if str(source) in text else f"{source}: {text}"
        raise ConnectionConfigError(f"cannot load the connection: {message}; pass --kubeconfig FILE") from exc


def static_connection(
    server: str, *, token: str | None = None, ssl_context: ssl.SSLContext | None = None
) -> ConnectionConfig:
    """A connection from explicit values (tests, benchmarks)."""
    return ConnectionConfig(
        server=server.rstrip("/"), ssl_context=ssl_context, token_source=StaticTokenSource(token)
    )
