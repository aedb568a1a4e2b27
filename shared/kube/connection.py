"""Where the API server is and how to talk to it securely: loaded by ``kubernetes.config``.

``kubernetes.config`` is used **only** here and **only** to load configuration: it understands every
kubeconfig feature (exec plugins, OIDC, client certificates and keys as files or inline data,
``insecure-skip-tls-verify``, ``tls-server-name``) and the in-cluster service-account layout. Its HTTP
stack is never used; the result is turned into a ``ConnectionConfig``: server URL, one
``ssl.SSLContext`` (built once and shared by every connection -- creating an SSLContext per request
costs milliseconds) and a token source asked per request (see ``auth``).

A token *file* (in-cluster, or ``tokenFile`` in a kubeconfig user) is re-read per request by us,
because the library caches it for a minute (in-cluster) or forever (kubeconfig).
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


def _kubeconfig_token_file(path: Path, context_name: str | None) -> Path | None:
    """``users[].user.tokenFile`` of the selected context, resolved against the kubeconfig's folder."""
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        return None
    if not isinstance(document, dict):
        return None
    name = context_name or document.get("current-context")
    contexts = {
        c.get("name"): c.get("context") or {} for c in document.get("contexts") or [] if isinstance(c, dict)
    }
    user_name = (contexts.get(name) or {}).get("user")
    for user in document.get("users") or []:
        if isinstance(user, dict) and user.get("name") == user_name:
            token_file = (user.get("user") or {}).get("tokenFile")
            if token_file:
                candidate = Path(os.path.expanduser(str(token_file)))
                return candidate if candidate.is_absolute() else path.parent / candidate
    return None


def _namespace_of_context(path: Path, context_name: str | None) -> str:
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        return "default"
    name = context_name or document.get("current-context")
    for c in document.get("contexts") or []:
        if isinstance(c, dict) and c.get("name") == name:
            return str((c.get("context") or {}).get("namespace") or "default")
    return "default"


def load_kubeconfig(path: str | Path | None = None, *, context: str | None = None) -> ConnectionConfig:
    """Load a kubeconfig (``$KUBECONFIG`` or ``~/.kube/config`` when ``path`` is ``None``)."""
    from kubernetes import client as k8s_client
    from kubernetes import config as k8s_config

    load_kube_config: Any = k8s_config.load_kube_config

    resolved = Path(path or os.environ.get("KUBECONFIG", "~/.kube/config").split(os.pathsep)[0]).expanduser()
    configuration: Any = k8s_client.Configuration()
    load_kube_config(
        config_file=str(resolved), context=context, client_configuration=configuration, persist_config=False
    )
    server = str(configuration.host).rstrip("/")
    token_file = _kubeconfig_token_file(resolved, context)
    token_source: TokenSource = (
        FileTokenSource(token_file) if token_file is not None else ConfigurationTokenSource(configuration)
    )
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
        namespace=_namespace_of_context(resolved, context),
    )


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


def load_connection(*, kubeconfig: str | Path | None = None, context: str | None = None) -> ConnectionConfig:
    """An explicit kubeconfig, else in-cluster when running in a pod, else the default kubeconfig."""
    if kubeconfig is not None:
        return load_kubeconfig(kubeconfig, context=context)
    if "KUBERNETES_SERVICE_HOST" in os.environ and (SERVICE_ACCOUNT_DIR / "token").exists():
        return load_in_cluster()
    return load_kubeconfig(None, context=context)


def static_connection(
    server: str, *, token: str | None = None, ssl_context: ssl.SSLContext | None = None
) -> ConnectionConfig:
    """A connection from explicit values (tests, benchmarks)."""
    return ConnectionConfig(
        server=server.rstrip("/"), ssl_context=ssl_context, token_source=StaticTokenSource(token)
    )
