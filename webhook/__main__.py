"""``kueue-bridge webhook``: serve admission requests, or render the webhook configurations.

* ``kueue-bridge webhook --config FILE [--kubeconfig FILE] [--cert-dir DIR]`` serves ``/mutate``,
  ``/validate``, ``/healthz``, ``/readyz`` and ``/metrics`` over TLS on ``webhook.port``. With
  ``internalCertManagement.enable`` the process also keeps the certificate Secret, the cert dir and
  the caBundles current (``certs.CertRotator``), like Kueue's manager does.
* ``kueue-bridge webhook manifests --config FILE (--url URL | --service NAME)`` prints the
  Mutating/ValidatingWebhookConfigurations as YAML.
* ``kueue-bridge webhook register --config FILE (--url URL | --service NAME) --ca-file PEM
  [--kubeconfig FILE]`` creates or replaces them in the cluster with that CA as ``caBundle``
  (installs without ``kubectl`` or internal certificate management, e.g. docker-compose).

Exit codes: 0 success, 1 runtime/configuration error (message on stderr), 2 usage error. The
configuration is loaded and its errors reported (one line each) as every component does it
(``shared.runtime.cli_args.load_config_or_report``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import yaml

from shared.config import Configuration
from shared.kube import KubeError
from shared.preflight import StartupRefused, report_refusal
from shared.runtime.cli_args import load_config_or_report
from shared.webhook_configurations import (
    MUTATING_CONFIGURATION_NAME,
    VALIDATING_CONFIGURATION_NAME,
    render_webhook_configurations,
)
from webhook.serving.tls_server import Listener
from webhook.settings_from_config import settings_from_config

__all__ = ["main"]

log = logging.getLogger("kueue_bridge.webhook")


def _rendering_parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog)
    parser.add_argument("--config", required=True)
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--url", help="webhook base URL (local runs), e.g. https://127.0.0.1:9443")
    target.add_argument("--service", help="webhook Service name (in-cluster)")
    parser.add_argument("--port", type=int, default=443, help="Service port")
    return parser


def _render(args: argparse.Namespace) -> list[dict[str, Any]] | None:
    """The rendered configurations, or ``None`` after the configuration's errors were reported."""
    config = load_config_or_report(args.config)
    if config is None:
        return None
    settings = settings_from_config(config)
    return render_webhook_configurations(
        settings.frameworks, namespace=config.namespace, url=args.url, service=args.service, port=args.port
    )


def _manifests(argv: list[str]) -> int:
    args = _rendering_parser("kueue-bridge webhook manifests").parse_args(argv)
    documents = _render(args)
    if documents is None:
        return 1
    sys.stdout.write(yaml.safe_dump_all(documents, sort_keys=False))
    return 0


def _register(argv: list[str]) -> int:
    from shared.kube import KubeClient, load_connection
    from webhook.registration import register_webhook_configurations

    parser = _rendering_parser("kueue-bridge webhook register")
    parser.add_argument(
        "--ca-file", required=True, type=Path, help="PEM CA certificate the API server trusts"
    )
    parser.add_argument("--kubeconfig", default=None, help="kubeconfig (default: in-cluster)")
    args = parser.parse_args(argv)
    documents = _render(args)
    if documents is None:
        return 1
    ca_pem = args.ca_file.read_bytes()

    async def run() -> list[str]:
        async with KubeClient.from_connection(load_connection(kubeconfig=args.kubeconfig)) as client:
            return await register_webhook_configurations(client, documents, ca_pem=ca_pem)

    for written in asyncio.run(run()):
        print(f"registered {written}")
    return 0


def _writable(cert_dir: Path) -> Path | None:
    """``cert_dir`` when the rotator may mirror files into it; ``None`` for a mounted Secret volume.

    In a cluster the directory is the (read-only) Secret volume and the kubelet delivers the files
    the rotator stored in the Secret; writing there would fail every rotation round before the
    caBundle is injected. Locally the directory is ours to write.
    """
    with contextlib.suppress(OSError):
        cert_dir.mkdir(parents=True, exist_ok=True)
    if os.access(cert_dir, os.W_OK):
        return cert_dir
    log.info("%s is read-only (a mounted Secret); the kubelet delivers rotated certificates", cert_dir)
    return None


async def _serve(config: Configuration, *, kubeconfig: str | None, cert_dir: Path) -> None:
    from certs.kubeapi import KubeAPI, WebhookConfigRef
    from certs.rotation import CertRotator, RotationSettings
    from shared.kube import ClientSettings, KubeClient, load_connection
    from shared.preflight import check_before_start
    from webhook.process import build_webhook

    settings = settings_from_config(config)
    connection = load_connection(kubeconfig=kubeconfig)
    client_settings = ClientSettings(qps=config.client_connection.qps, burst=config.client_connection.burst)
    await check_before_start(connection, config, component="webhook", logger=log, settings=client_settings)
    client = KubeClient.from_connection(connection, settings=client_settings)
    icm = config.internal_cert_management
    api: KubeAPI | None = None
    if icm.enable:
        api = KubeAPI(
            client=client,
            webhook_configs=[
                WebhookConfigRef(name=MUTATING_CONFIGURATION_NAME, kind="MutatingWebhookConfiguration"),
                WebhookConfigRef(name=VALIDATING_CONFIGURATION_NAME, kind="ValidatingWebhookConfiguration"),
            ],
        )
        rotator = CertRotator(
            settings=RotationSettings(
                service=icm.webhook_service_name,
                namespace=config.namespace,
                secret_name=icm.webhook_secret_name,
                cert_dir=_writable(cert_dir),
            ),
            secrets=api,
            injector=api,
        )

    def background(stop: asyncio.Event) -> list[Coroutine[Any, Any, None]]:
        return [rotator.run(stop)] if api is not None else []

    # Informer caches answer every lookup; /readyz stays 503 until they have synced (missing Kueue
    # CRDs: the informers retry and readiness waits) and a certificate is in service.
    process = build_webhook(
        settings=settings,
        client=client,
        listener=Listener(cert_dir=cert_dir, host=config.webhook.host or "0.0.0.0", port=config.webhook.port),
        extra_background=background,
    )
    stopped = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stopped.set)
    try:
        # in a cluster a fresh Secret reaches the volume at the kubelet's next sync (about a minute)
        await process.server.serve_until(stopped.wait(), wait_for_certificate=300.0)
    finally:
        await client.aclose()


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        if argv[:1] == ["manifests"]:
            return _manifests(argv[1:])
        if argv[:1] == ["register"]:
            return _register(argv[1:])
        parser = argparse.ArgumentParser(prog="kueue-bridge webhook", description=__doc__.splitlines()[0])
        parser.add_argument("--config", required=True, help="kueue-bridge (Kueue v1beta2) configuration file")
        parser.add_argument("--kubeconfig", default=None, help="kubeconfig (default: in-cluster)")
        parser.add_argument("--cert-dir", type=Path, default=None, help="override webhook.certDir")
        args = parser.parse_args(argv)
        config = load_config_or_report(args.config)
        if config is None:
            return 1
        from shared.runtime.eventloop import run_process_loop

        run_process_loop(
            _serve(
                config, kubeconfig=args.kubeconfig, cert_dir=args.cert_dir or Path(config.webhook.cert_dir)
            )
        )
        return 0
    except StartupRefused as refused:
        return report_refusal("webhook", refused)
    except (OSError, TimeoutError, ValueError, KubeError) as exc:
        print(f"kueue-bridge webhook: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
