"""kueue-bridge's webhook and reconciler as child processes, configured and registered as deployed.

:func:`start_components` writes the configuration (the deployed default apart from the dev settings:
no leader election, the webhook's address; ``qps`` raises the client rate limit), starts the webhook
(ready, then registered as ``kueue-bridge dev`` does: URL client config, our CA as caBundle) and the
reconciler (healthy), and stops both when the exit stack closes. :func:`start_webhook` is its first
half, for benchmarks that start reconcilers of their own (``bench.harness.replicas``).
"""

from __future__ import annotations

import contextlib
import os
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from bench.harness.clusters import KUEUE_NAMESPACE
from devrun import (
    ComponentProcess,
    free_port,
    generate_certs,
    register_webhooks,
    render_webhook_manifests,
    run_as,
)
from shared.config import load_config
from shared.kube import KubeClient

__all__ = ["Components", "WebhookRun", "start_components", "start_webhook", "write_config"]


@dataclass
class Components:
    webhook: ComponentProcess
    reconciler: ComponentProcess
    webhook_metrics: str
    reconciler_metrics: str
    verify: ssl.SSLContext


def write_config(
    path: Path,
    *,
    webhook_port: int,
    cert_dir: Path,
    probe_port: int,
    qps: int | None,
    reconcile_concurrency: int | None = None,
) -> Path:
    config: dict[str, Any] = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "namespace": KUEUE_NAMESPACE,
        "integrations": {"frameworks": ["batch/job"]},
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "webhook": {"host": "127.0.0.1", "port": webhook_port, "certDir": str(cert_dir)},
        "health": {"healthProbeBindAddress": f"127.0.0.1:{probe_port}"},
        "metrics": {"bindAddress": "0"},
    }
    if qps is not None:
        config["clientConnection"] = {"qps": float(qps), "burst": qps}
    if reconcile_concurrency is not None:
        config["controller"] = {"groupKindConcurrency": {"Job.batch": reconcile_concurrency}}
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


@dataclass
class WebhookRun:
    """The webhook, running and registered, and what the controllers beside it are started with:
    the configuration both read, a free probe port for a reconciler, the environment."""

    webhook: ComponentProcess
    config: Path
    url: str
    probe_port: int
    env: dict[str, str]
    ca_pem: bytes


async def start_webhook(
    stack: contextlib.AsyncExitStack,
    *,
    tmp: Path,
    kubeconfig: Path,
    client: KubeClient,
    qps: int | None,
    reconcile_concurrency: int | None = None,
) -> WebhookRun:
    """The configuration written, the webhook ready, then registered as ``kueue-bridge dev`` does
    (stopped when ``stack`` closes)."""
    cert_dir = tmp / "certs"
    ca_pem = generate_certs(cert_dir)
    webhook_port, probe_port = free_port(), free_port()
    config = write_config(
        tmp / "config.yaml",
        webhook_port=webhook_port,
        cert_dir=cert_dir,
        probe_port=probe_port,
        qps=qps,
        reconcile_concurrency=reconcile_concurrency,
    )
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    url = f"https://127.0.0.1:{webhook_port}"
    common = ("--config", str(config), "--kubeconfig", str(kubeconfig))
    webhook = ComponentProcess(
        name="webhook",
        args=("webhook", *common, "--cert-dir", str(cert_dir)),
        log_path=tmp / "webhook.log",
        health_url=f"{url}/readyz",
        env=env,
        ca_pem=ca_pem,
    )
    stack.push_async_callback(webhook.stop)
    await webhook.start()
    documents = await render_webhook_manifests(config=config, url=url, env=env)
    await register_webhooks(client, documents, ca_pem=ca_pem)
    return WebhookRun(webhook=webhook, config=config, url=url, probe_port=probe_port, env=env, ca_pem=ca_pem)


async def start_components(
    stack: contextlib.AsyncExitStack,
    *,
    tmp: Path,
    kubeconfig: Path,
    client: KubeClient,
    qps: int | None,
    reconcile_concurrency: int | None = None,
    reconciler_identity: bool = False,
) -> Components:
    """The webhook (ready, then registered as ``kueue-bridge dev`` does) and the reconciler (healthy).

    ``reconciler_identity`` (a real cluster only: it needs the TokenRequest API and RBAC): the
    reconciler runs as its own ServiceAccount with the Roles ``kueue-bridge manifests`` grants it, as
    in a deployment, instead of as the admin; the validating webhook then does not see its updates
    (``shared.webhook_configurations``)."""
    run = await start_webhook(
        stack,
        tmp=tmp,
        kubeconfig=kubeconfig,
        client=client,
        qps=qps,
        reconcile_concurrency=reconcile_concurrency,
    )
    config, env, probe_port = run.config, run.env, run.probe_port
    reconciler_kubeconfig = kubeconfig
    if reconciler_identity:
        reconciler_kubeconfig = await run_as(
            client,
            "reconciler",
            config=load_config(config),
            admin_kubeconfig=kubeconfig,
            target=tmp / "reconciler.kubeconfig",
            kueue_namespace=KUEUE_NAMESPACE,
        )
    reconciler = ComponentProcess(
        name="reconciler",
        args=(
            "reconciler",
            "--config",
            str(config),
            "--kubeconfig",
            str(reconciler_kubeconfig),
            "--probe-address",
            f"127.0.0.1:{probe_port}",
        ),
        log_path=tmp / "reconciler.log",
        health_url=f"http://127.0.0.1:{probe_port}/healthz",
        env={**env, "KUBECONFIG": str(reconciler_kubeconfig)},
    )
    stack.push_async_callback(reconciler.stop)
    await reconciler.start()
    return Components(
        webhook=run.webhook,
        reconciler=reconciler,
        webhook_metrics=f"{run.url}/metrics",
        reconciler_metrics=f"http://127.0.0.1:{probe_port}/metrics",
        verify=ssl.create_default_context(cadata=run.ca_pem.decode()),
    )
