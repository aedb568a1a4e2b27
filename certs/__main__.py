"""``kueue-bridge certs generate|inject``: certificates for local runs and manual installs.

* ``generate --out DIR --service NAME --namespace NS [--ip IP ...] [--dns NAME ...]`` writes a new CA
  and serving certificate into DIR (``tls.crt``, ``tls.key``, ``ca.crt``, plus ``ca.key`` so the
  same CA can issue again) - for ``make dev`` and for clusters without internal cert management.
* ``inject --kubeconfig F --ca-file F --webhook-config NAME ...`` sets the caBundle of the named
  Mutating/ValidatingWebhookConfigurations (whichever kinds exist with that name).

Exit codes: 0 success, 1 runtime failure (message on stderr), 2 usage error.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import sys
from pathlib import Path

from certs.authority import (
    DEFAULT_CA_VALIDITY,
    DEFAULT_SERVING_VALIDITY,
    generate_ca,
    issue_serving_cert,
    service_dns_names,
)
from certs.bundle import CA_KEY_FILE, write_cert_dir
from shared.kube import KubeError

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kueue-bridge certs", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    gen = sub.add_parser("generate", help="write a new CA and serving certificate into a directory")
    gen.add_argument("--out", required=True, type=Path, help="directory for tls.crt, tls.key, ca.crt, ca.key")
    gen.add_argument("--service", required=True, help="webhook Service name")
    gen.add_argument("--namespace", required=True, help="webhook Service namespace")
    gen.add_argument("--ip", action="append", default=[], help="extra IP address SAN (repeatable)")
    gen.add_argument("--dns", action="append", default=[], help="extra DNS name SAN (repeatable)")
    gen.add_argument("--ca-days", type=int, default=DEFAULT_CA_VALIDITY.days, help="CA validity in days")
    gen.add_argument("--days", type=int, default=DEFAULT_SERVING_VALIDITY.days, help="certificate validity")

    inject = sub.add_parser("inject", help="set caBundle in webhook configurations")
    inject.add_argument("--kubeconfig", default=None, help="kubeconfig file (default: in-cluster)")
    inject.add_argument("--ca-file", required=True, type=Path, help="PEM CA certificate to trust")
    inject.add_argument("--webhook-config", required=True, nargs="+", help="configuration name(s)")
    return parser


def _generate(args: argparse.Namespace) -> int:
    ca = generate_ca(valid_for=dt.timedelta(days=args.ca_days))
    dns_names = service_dns_names(service=args.service, namespace=args.namespace) + list(args.dns)
    pair = issue_serving_cert(
        ca=ca, dns_names=dns_names, ip_addresses=args.ip, valid_for=dt.timedelta(days=args.days)
    )
    write_cert_dir(args.out, serving=pair, ca_cert_pem=ca.cert_pem)
    ca_key = args.out / CA_KEY_FILE
    ca_key.write_bytes(ca.key_pem)
    ca_key.chmod(0o600)
    print(f"wrote tls.crt, tls.key, ca.crt, ca.key to {args.out} (expires {pair.not_after:%Y-%m-%d})")
    return 0


def _inject(args: argparse.Namespace) -> int:
    from certs.kubeapi import KubeAPI, WebhookConfigRef
    from shared.kube import KubeClient, load_connection

    ca_pem = args.ca_file.read_bytes()
    refs = [WebhookConfigRef(name=name) for name in args.webhook_config]

    async def inject() -> list[str]:
        async with KubeClient.from_connection(load_connection(kubeconfig=args.kubeconfig)) as client:
            return await KubeAPI(client=client, webhook_configs=refs).inject_now(ca_cert_pem=ca_pem)

    changed = asyncio.run(inject())
    print("updated: " + (", ".join(changed) if changed else "nothing (caBundle already set)"))
    return 0


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    try:
        return _generate(args) if args.command == "generate" else _inject(args)
    except (OSError, ValueError, LookupError, KubeError) as exc:
        print(f"kueue-bridge certs: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
