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
* ``kueue-bridge webhook unregister [--kubeconfig FILE]`` deletes them (the Helm chart's pre-delete
  hook: the configurations go before the webhook's pods do).
* ``kueue-bridge webhook wait-registered --config FILE [--kubeconfig FILE] [--timeout SECONDS]``
  returns once the registered configurations intercept every kind ``FILE`` configures (the Helm
  chart's post-install/post-upgrade hook, ``hack/install/steps.sh``); after the timeout it exits 1
  naming the kinds not yet intercepted.

In a cluster the server runs with ``--register-configurations --configurations-owner CLUSTERROLE``:
each replica registers the configurations itself once it serves with its certificate
(``webhook.registration.register_when_serving``), so an install whose webhook never serves never
blocks the cluster's writes; a change of the intercepted kinds waits until every serving endpoint
of the webhook Service runs the same configuration (the invariant in ``webhook.registration``).

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from certs.bundle import CA_CERT_FILE
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

#: Our two configurations, by kind (``shared.webhook_configurations`` names them).
CONFIGURATION_NAMES = {
    "MutatingWebhookConfiguration": MUTATING_CONFIGURATION_NAME,
    "ValidatingWebhookConfiguration": VALIDATING_CONFIGURATION_NAME,
}
#: The label every object of a kueue-bridge install carries (``kueue-bridge manifests``, the chart).
PART_OF = {"app.kubernetes.io/part-of": "kueue-bridge"}


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


def _unregister(argv: list[str]) -> int:
    from shared.kube import KubeClient, load_connection
    from webhook.registration import unregister_webhook_configurations

    parser = argparse.ArgumentParser(prog="kueue-bridge webhook unregister")
    parser.add_argument("--kubeconfig", default=None, help="kubeconfig (default: in-cluster)")
    args = parser.parse_args(argv)

    async def run() -> list[str]:
        async with KubeClient.from_connection(load_connection(kubeconfig=args.kubeconfig)) as client:
            return await unregister_webhook_configurations(client, CONFIGURATION_NAMES)

    deleted = asyncio.run(run())
    for name in deleted:
        print(f"deleted {name}")
    if not deleted:
        print("no webhook configuration of kueue-bridge was registered")
    return 0


def _wait_registered(argv: list[str]) -> int:
    from shared.kube import KubeClient, load_connection
    from webhook.registration import missing_resources, registered_configurations

    parser = argparse.ArgumentParser(prog="kueue-bridge webhook wait-registered")
    parser.add_argument("--config", required=True)
    parser.add_argument("--kubeconfig", default=None, help="kubeconfig (default: in-cluster)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds to wait (default 300)")
    parser.add_argument("--interval", type=float, default=1.0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    config = load_config_or_report(args.config)
    if config is None:
        return 1
    service = config.internal_cert_management.webhook_service_name
    documents = render_webhook_configurations(
        settings_from_config(config).frameworks, namespace=config.namespace, service=service
    )

    async def run() -> list[str]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + args.timeout
        async with KubeClient.from_connection(load_connection(kubeconfig=args.kubeconfig)) as client:
            while True:
                try:
                    missing = missing_resources(await registered_configurations(client, documents), documents)
                except KubeError as exc:
                    missing = [f"(reading them failed: {exc})"]
                if not missing or loop.time() >= deadline:
                    return missing
                await asyncio.sleep(args.interval)

    missing = asyncio.run(run())
    if missing:
        print(
            f"kueue-bridge webhook wait-registered: after {args.timeout:g}s the registered webhook "
            f"configurations do not intercept {'; '.join(missing)}. A webhook replica registers them "
            f"once it serves with its certificate and every serving endpoint of Service "
            f"{config.namespace}/{service} runs this configuration: see `kubectl -n {config.namespace} "
            "get pods,endpointslices` and the webhook's log.",
            file=sys.stderr,
        )
        return 1
    print("the registered webhook configurations intercept every configured kind")
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


@dataclass(frozen=True)
class _Registration:
    """``--register-configurations``: register once serving, owned by ClusterRole ``owner``."""

    owner: str | None


async def _serve(
    config: Configuration, *, kubeconfig: str | None, cert_dir: Path, registration: _Registration | None
) -> None:
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
            missing_ok=registration is not None,
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

    from webhook.registration import ServiceRef, configuration_digest, register_when_serving

    documents = render_webhook_configurations(
        settings.frameworks, namespace=config.namespace, service=icm.webhook_service_name
    )
    for document in documents:
        document["metadata"]["labels"] = {**document["metadata"].get("labels", {}), **PART_OF}

    def background(stop: asyncio.Event) -> list[Coroutine[Any, Any, None]]:
        tasks = [rotator.run(stop)] if api is not None else []
        if registration is not None:
            tasks.append(
                register_when_serving(
                    client,
                    documents,
                    port=config.webhook.port,
                    ca_file=cert_dir / CA_CERT_FILE,
                    owner_name=registration.owner,
                    stop=stop,
                    service=ServiceRef(namespace=config.namespace, name=icm.webhook_service_name),
                )
            )
        return tasks

    # Informer caches answer every lookup; /readyz stays 503 until they have synced (missing Kueue
    # CRDs: the informers retry and readiness waits) and a certificate is in service.
    process = build_webhook(
        settings=settings,
        client=client,
        listener=Listener(cert_dir=cert_dir, host=config.webhook.host or "0.0.0.0", port=config.webhook.port),
        extra_background=background,
        configuration_digest=configuration_digest(documents),
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
        if argv[:1] == ["unregister"]:
            return _unregister(argv[1:])
        if argv[:1] == ["wait-registered"]:
            return _wait_registered(argv[1:])
        parser = argparse.ArgumentParser(prog="kueue-bridge webhook", description=__doc__.splitlines()[0])
        parser.add_argument("--config", required=True, help="kueue-bridge (Kueue v1beta2) configuration file")
        parser.add_argument("--kubeconfig", default=None, help="kubeconfig (default: in-cluster)")
        parser.add_argument("--cert-dir", type=Path, default=None, help="override webhook.certDir")
        parser.add_argument(
            "--register-configurations",
            action="store_true",
            help="register the webhook configurations once this replica serves with its certificate "
            "(caBundle: ca.crt of the cert dir)",
        )
        parser.add_argument(
            "--configurations-owner",
            metavar="CLUSTERROLE",
            default=None,
            help="with --register-configurations: the ClusterRole that owns them (removed with it)",
        )
        args = parser.parse_args(argv)
        if args.configurations_owner and not args.register_configurations:
            parser.error("--configurations-owner needs --register-configurations")
        config = load_config_or_report(args.config)
        if config is None:
            return 1
        from shared.runtime.eventloop import run_process_loop

        run_process_loop(
            _serve(
                config,
                kubeconfig=args.kubeconfig,
                cert_dir=args.cert_dir or Path(config.webhook.cert_dir),
                registration=_Registration(owner=args.configurations_owner)
                if args.register_configurations
                else None,
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
