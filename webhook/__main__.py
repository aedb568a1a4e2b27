"""``kueue-bridge webhook``: serve admission requests, or render the webhook configurations.

* ``kueue-bridge webhook --config FILE [--kubeconfig FILE] [--cert-dir DIR]`` serves ``/mutate``,
  ``/validate``, ``/healthz``, ``/readyz`` and ``/metrics`` over TLS on ``webhook.port``. With
  ``internalCertManagement.enable`` the process also keeps the certificate Secret, the cert dir and
  the caBundles current (``certs.CertRotator``), like Kueue's manager does.
* ``kueue-bridge webhook manifests --config FILE (--url URL | --service NAME)`` prints the
  Mutating/ValidatingWebhookConfigurations as YAML.

Exit codes: 0 success, 1 runtime/configuration error (message on stderr), 2 usage error.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import yaml

from shared.config import ConfigError, Configuration, load_config
from webhook.manifests import (
    MUTATING_CONFIGURATION_NAME,
    VALIDATING_CONFIGURATION_NAME,
    render_webhook_configurations,
)
from webhook.wiring import settings_from_config

__all__ = ["main"]

log = logging.getLogger("kueue_bridge.webhook")


def _manifests(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="kueue-bridge webhook manifests")
    parser.add_argument("--config", required=True)
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--url", help="webhook base URL (local runs), e.g. https://127.0.0.1:9443")
    target.add_argument("--service", help="webhook Service name (in-cluster)")
    parser.add_argument("--port", type=int, default=443, help="Service port")
    args = parser.parse_args(argv)
    config = load_config(args.config)
    settings = settings_from_config(config)
    documents = render_webhook_configurations(
        settings.frameworks, namespace=config.namespace, url=args.url, service=args.service, port=args.port
    )
    sys.stdout.write(yaml.safe_dump_all(documents, sort_keys=False))
    return 0


async def _serve(config: Configuration, *, kubeconfig: str | None, cert_dir: Path) -> None:
    from certs.kubeapi import KubeAPI, WebhookConfigRef
    from certs.rotation import CertRotator, RotationSettings
    from shared.kube import ClientSettings, KubeClient, load_connection
    from webhook.runtime import build_webhook

    settings = settings_from_config(config)
    client = KubeClient.from_connection(
        load_connection(kubeconfig=kubeconfig),
        settings=ClientSettings(qps=config.client_connection.qps, burst=config.client_connection.burst),
    )
    icm = config.internal_cert_management
    api: KubeAPI | None = None
    if icm.enable:
        api = KubeAPI.from_kubeconfig(
            kubeconfig=kubeconfig,
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
                cert_dir=cert_dir,
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
        cert_dir=cert_dir,
        host=config.webhook.host or "0.0.0.0",
        port=config.webhook.port,
        extra_background=background,
    )
    stopped = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stopped.set)
    try:
        await process.server.serve_until(stopped.wait())
    finally:
        if api is not None:
            await api.aclose()
        await client.aclose()


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        if argv[:1] == ["manifests"]:
            return _manifests(argv[1:])
        parser = argparse.ArgumentParser(prog="kueue-bridge webhook", description=__doc__.splitlines()[0])
        parser.add_argument("--config", required=True, help="kueue-bridge (Kueue v1beta2) configuration file")
        parser.add_argument("--kubeconfig", default=None, help="kubeconfig (default: in-cluster)")
        parser.add_argument("--cert-dir", type=Path, default=None, help="override webhook.certDir")
        args = parser.parse_args(argv)
        config = load_config(args.config)
        asyncio.run(
            _serve(
                config, kubeconfig=args.kubeconfig, cert_dir=args.cert_dir or Path(config.webhook.cert_dir)
            )
        )
        return 0
    except ConfigError as exc:
        print(f"kueue-bridge webhook: {exc}", file=sys.stderr)
        return 1
    except (OSError, TimeoutError, ValueError) as exc:
        print(f"kueue-bridge webhook: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
