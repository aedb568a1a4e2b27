"""One devcluster of ``kueue-bridge dev`` and its components: the unit both run modes are built from.

``make dev`` runs one of these; ``make dev-multicluster`` (``--workers N``) runs N+1 side by side in
the same process (:mod:`devrun.multicluster`). Each cluster keeps everything in its own state folder
(kubeconfig, token, pki, data, certs, config.yaml, logs), so the clusters never share a file:

* :func:`start_cluster`: the API server on the given port, the Kueue stand-in and the job runner
  (which also completes our ``SampleJob`` CRD) as tasks of this process, an admin client, the CRDs;
* :func:`start_components`: a fresh CA and serving certificate, ``config.yaml`` generated from the
  source configuration, ``kueue-bridge webhook`` ready (``/readyz``) before its webhook
  configurations are registered, ``kueue-bridge reconciler`` healthy (``/healthz``), and
  ``kueue-bridge appwrapper`` likewise when the configuration manages AppWrappers.

Invariants: every stop is pushed on the caller's exit stack *before* the thing is started (a failed
start is cleaned up too, newest first); a component counts as started only once its health endpoint
answers; the components are never imported (they run as ``kueue-bridge <component>`` subprocesses,
with ``KUBECONFIG`` naming this cluster's kubeconfig). Output lines carry the cluster's ``prefix``
(empty for ``make dev``), so the interleaved start-up of several clusters stays readable.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import yaml

from bridge_tools.manifests.render import kueue_configuration_fragment
from devcluster.apiserver import ServerOptions
from devcluster.server import DevClusterServer
from devcluster.standin import start_addons
from devrun.components import (
    ComponentError,
    ComponentProcess,
    free_port,
    generate_certs,
    register_webhooks,
    render_webhook_manifests,
)
from devrun.samples import crd_files, declarative_completions, install_crds, write_runtime_config
from shared.component_access import KUEUE_CONFIG_KEY, KUEUE_CONFIG_MAP
from shared.config import load_config
from shared.frameworks.builtin_kinds import APPWRAPPER
from shared.kube import CONFIG_MAP_GVK, NAMESPACE_GVK, AlreadyExists, KubeClient, load_kubeconfig

__all__ = [
    "ClusterRun",
    "Session",
    "manages_appwrappers",
    "publish_standin_configuration",
    "relative",
    "start_cluster",
    "start_components",
    "start_controller",
    "start_extra",
]


def relative(path: Path) -> str:
    """``path`` relative to the working directory when it is below it (shorter output lines)."""
    with contextlib.suppress(ValueError):
        return str(path.relative_to(Path.cwd()))
    return str(path)


@dataclass
class Session:
    """What every step of a run needs: the flags, the output, the root state folder, the children."""

    args: argparse.Namespace
    out: TextIO
    state: Path
    components: list[ComponentProcess]

    def say(self, message: str) -> None:
        self.out.write(message + "\n")
        self.out.flush()

    async def launch(self, stack: contextlib.AsyncExitStack, process: ComponentProcess) -> None:
        """Start one component; its stop is registered first, so a failed start is cleaned up too."""
        stack.push_async_callback(process.stop)
        self.components.append(process)
        await process.start(within_seconds=self.args.start_timeout)

    def check_components(self) -> None:
        """Raise :class:`ComponentError` (with its log tail) if any child has exited."""
        for component in self.components:
            if not component.running:
                raise ComponentError(component.describe_exit())


@dataclass
class ClusterRun:
    """One running devcluster: where its files are and how to reach it."""

    name: str
    state: Path
    url: str
    client: KubeClient
    #: put before every line this cluster prints ("" for the single cluster of ``make dev``)
    prefix: str = ""
    #: the configuration its components run with, once :func:`start_components` wrote it
    config: Path | None = None
    #: a devcluster whose Kueue stand-in publishes the Configuration it plays (:func:`publish_standin_configuration`)
    kueue_standin: bool = False
    #: component -> the kubeconfig of the ServiceAccount it runs as (``devrun.identities.run_as``, a
    #: real cluster's); a component not named here runs as the cluster's admin
    identities: dict[str, Path] = field(default_factory=dict)

    @property
    def kubeconfig(self) -> Path:
        return self.state / "kubeconfig"

    def kubeconfig_for(self, component: str) -> Path:
        return self.identities.get(component, self.kubeconfig)

    def env_for(self, component: str) -> dict[str, str]:
        return {**os.environ, "KUBECONFIG": str(self.kubeconfig_for(component))}

    @property
    def logs(self) -> Path:
        return self.state / "logs"

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "KUBECONFIG": str(self.kubeconfig)}

    def component_name(self, component: str) -> str:
        """How error messages name a component: ``webhook``, or ``worker-1 webhook`` in a fleet."""
        return f"{self.name} {component}" if self.prefix else component

    def say(self, session: Session, label: str, message: str) -> None:
        session.say(f"{self.prefix}{label:<15} {message}")


def _server_options(*, port: int, state: Path) -> ServerOptions:
    token_file = state / "token"
    token = token_file.read_text().strip() if token_file.exists() else secrets.token_urlsafe(24)
    token_file.write_text(token)
    token_file.chmod(0o600)
    # The add-ons are started by this module (not by the server) so that the job runner also
    # completes our SampleJob CRD; see start_cluster.
    return ServerOptions(port=port, data_dir=state / "data", cert_dir=state / "pki", token=token)


async def start_cluster(
    session: Session,
    stack: contextlib.AsyncExitStack,
    *,
    name: str,
    state: Path,
    port: int,
    prefix: str = "",
) -> ClusterRun:
    """The devcluster on ``port`` (0: any free one) with its add-ons and CRDs; state in ``state``."""
    (state / "logs").mkdir(parents=True, exist_ok=True)
    try:
        server = DevClusterServer(
            options=_server_options(port=port, state=state), kubeconfig_path=state / "kubeconfig"
        )
    except OSError as exc:
        raise ComponentError(
            f"the devcluster{f' {name}' if prefix else ''} cannot listen on 127.0.0.1:{port}: "
            f"{exc.strerror or exc}. "
            "Is another `make dev` running? Stop it, or pick another port: --port 0 takes any free one."
        ) from exc
    stack.push_async_callback(server.stop)
    await server.start()
    addons = await start_addons(
        url=server.url,
        token=server.options.token,
        ca_file=str(server.files.ca_file),
        kueue_standin=True,
        job_runner=True,
        declarative=declarative_completions(),
        transport=server.addon_transport(),
    )
    stack.push_async_callback(addons.aclose)
    client = KubeClient.from_connection(load_kubeconfig(server.kubeconfig_path))
    stack.push_async_callback(client.aclose)
    cluster = ClusterRun(
        name=name, state=state, url=server.url, client=client, prefix=prefix, kueue_standin=True
    )
    cluster.say(
        session, "devcluster", f"{server.url}  (Kueue stand-in, job runner; state in {relative(state)})"
    )
    files, note = crd_files()
    count = await install_crds(client, files)
    cluster.say(session, "CRDs", f"{count} installed; {note}")
    return cluster


async def publish_standin_configuration(client: KubeClient, *, config: Path) -> None:
    """The Kueue Configuration the stand-in plays, as Kueue's ConfigMap ``kueue-system/kueue-manager-config``.

    The stand-in schedules Workloads of every owner kind and manages no job kind itself, which is
    Kueue with kueue-bridge's kinds under ``integrations.externalFrameworks`` (the fragment
    ``kueue-bridge manifests --part kueue-config`` prints) and, since Kueue reads an empty
    ``frameworks`` as ``[batch/job]``, one framework nobody uses here (as the real-cluster kit does).
    Publishing it lets preflight, explain and the components' start-up checks read Kueue's side as
    on a real install.
    """
    fragment = kueue_configuration_fragment(load_config(config))
    kueue_config = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "namespace": "kueue-system",
        "integrations": {"frameworks": ["jobset.x-k8s.io/jobset"], **fragment["integrations"]},
    }
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": KUEUE_CONFIG_MAP, "namespace": "kueue-system"},
        "data": {KUEUE_CONFIG_KEY: yaml.safe_dump(kueue_config, sort_keys=False)},
    }
    with contextlib.suppress(AlreadyExists):
        await client.create(NAMESPACE_GVK, {"metadata": {"name": "kueue-system"}})
    await client.apply(
        CONFIG_MAP_GVK, body, namespace="kueue-system", field_manager="kueue-standin", force=True
    )


def manages_appwrappers(config: Path) -> bool:
    """Whether the run-time configuration manages AppWrappers (then their controller runs too)."""
    return any(kind.gvk == APPWRAPPER.gvk for kind in load_config(config).managed_kinds())


async def start_components(
    session: Session, stack: contextlib.AsyncExitStack, cluster: ClusterRun, *, source: Path
) -> Path:
    """Certificates, ``config.yaml`` from ``source``, webhook (registered), reconciler, appwrapper.

    Returns the configuration file written (also kept as ``cluster.config``).
    """
    state = cluster.state
    cert_dir = state / "certs"
    ca_pem = generate_certs(cert_dir)
    cluster.say(
        session, "certificates", f"{relative(cert_dir)} (fresh CA; serving cert for 127.0.0.1, localhost)"
    )
    webhook_port, probe_port = free_port(), free_port()
    config = cluster.config = write_runtime_config(
        source=source,
        target=state / "config.yaml",
        webhook_port=webhook_port,
        cert_dir=cert_dir,
        probe_address=f"127.0.0.1:{probe_port}",
    )
    if cluster.kueue_standin:
        await publish_standin_configuration(cluster.client, config=config)
    kubeconfig = str(cluster.kubeconfig_for("webhook"))
    webhook_url = f"https://127.0.0.1:{webhook_port}"
    webhook = ComponentProcess(
        name=cluster.component_name("webhook"),
        args=("webhook", "--config", str(config), "--kubeconfig", kubeconfig, "--cert-dir", str(cert_dir)),
        log_path=cluster.logs / "webhook.log",
        health_url=f"{webhook_url}/readyz",
        env=cluster.env_for("webhook"),
        ca_pem=ca_pem,
    )
    await session.launch(stack, webhook)
    cluster.say(
        session, "webhook", f"{webhook_url}  pid {webhook.pid}, log {relative(webhook.log_path)}, ready"
    )
    documents = await render_webhook_manifests(config=config, url=webhook_url, env=cluster.env)
    registered = await register_webhooks(cluster.client, documents, ca_pem=ca_pem)
    cluster.say(session, "registered", f"{', '.join(registered)} (caBundle from {relative(cert_dir)})")
    await start_controller(session, stack, cluster, component="reconciler", probe_port=probe_port)
    if manages_appwrappers(config):
        await start_controller(session, stack, cluster, component="appwrapper")
    return config


async def start_controller(
    session: Session,
    stack: contextlib.AsyncExitStack,
    cluster: ClusterRun,
    *,
    component: str,
    probe_port: int | None = None,
    extra: tuple[str, ...] = (),
) -> ComponentProcess:
    """``kueue-bridge COMPONENT --config ... --probe-address ...``, healthy (``/healthz``)."""
    if cluster.config is None:
        raise ComponentError(f"{component} on {cluster.name}: no configuration written yet")
    port = probe_port or free_port()
    process = ComponentProcess(
        name=cluster.component_name(component),
        args=(
            component,
            "--config",
            str(cluster.config),
            "--kubeconfig",
            str(cluster.kubeconfig_for(component)),
            "--probe-address",
            f"127.0.0.1:{port}",
            *extra,
        ),
        log_path=cluster.logs / f"{component}.log",
        health_url=f"http://127.0.0.1:{port}/healthz",
        env=cluster.env_for(component),
    )
    await session.launch(stack, process)
    cluster.say(
        session,
        component,
        f"probes on 127.0.0.1:{port}  pid {process.pid}, log {relative(process.log_path)}, healthy",
    )
    return process


async def start_extra(
    session: Session, stack: contextlib.AsyncExitStack, cluster: ClusterRun, *, extra: str, index: int
) -> ComponentProcess:
    """``--with "COMPONENT ARGS"``: ``kueue-bridge COMPONENT ARGS`` with this cluster's ``KUBECONFIG``."""
    words = shlex.split(extra)
    name = f"{words[0] if words else 'with'}-{index}"
    process = ComponentProcess(
        name=name, args=tuple(words), log_path=cluster.logs / f"{name}.log", env=cluster.env
    )
    await session.launch(stack, process)
    cluster.say(
        session, "--with", f"kueue-bridge {extra}  pid {process.pid}, log {relative(process.log_path)}"
    )
    return process
