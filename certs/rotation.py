"""Keep the webhook's certificates valid: issue, store, inject, rotate before expiry.

This is Kueue's ``internalCertManagement`` (cert-controller ``CertRotator``) in Python:

1. read the Secret; if its CA would not verify 90 days from now (or is missing/garbled) issue a new CA
   *and* serving certificate; else if the serving certificate would not verify 90 days from now for
   ``<svc>.<ns>.svc`` (expired, wrong names, not signed by the CA, key mismatch) issue a new serving
   certificate with the existing CA;
2. write the Secret with optimistic concurrency (every webhook replica runs a rotator, as in Kueue
   where ``RequireLeaderElection`` is false; a conflict means another replica won: re-read and
   re-decide instead of overwriting its fresh CA);
3. optionally mirror the files into a certificate directory (local runs; in a cluster the Secret is
   mounted there and the kubelet swaps the files atomically);
4. inject the CA into the ``caBundle`` of our webhook configurations (every check, so a configuration
   re-applied by ``kubectl apply`` with an empty caBundle is repaired within one interval);
5. repeat every 12 hours.

The running server notices new files by itself (``webhook.serving.tlsreload``); nothing is restarted.

Seams: the Secret store, the caBundle injector, the clock and the sleep function are injected, so the
whole policy is unit-tested with in-memory fakes and a fake clock.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import enum
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from certs.authority import (
    DEFAULT_CA_VALIDITY,
    DEFAULT_SERVING_VALIDITY,
    LOOKAHEAD,
    ROTATION_CHECK_INTERVAL,
    CertificateAuthority,
    CertificateError,
    KeyPair,
    generate_ca,
    issue_serving_cert,
    service_dns_names,
)
from certs.bundle import CertBundle, write_cert_dir
from shared.runtime.eventloop import until_first

__all__ = [
    "CABundleInjector",
    "CertRotator",
    "ConflictError",
    "RotationDecision",
    "RotationSettings",
    "SecretStore",
    "StoredSecret",
    "decide_rotation",
]

log = logging.getLogger(__name__)


class ConflictError(Exception):
    """The Secret changed since it was read (HTTP 409); re-read and decide again."""


@dataclass(frozen=True)
class StoredSecret:
    data: dict[str, str]
    resource_version: str | None


class SecretStore(Protocol):
    async def read_secret(self, *, namespace: str, name: str) -> StoredSecret | None:
        """The Secret, or ``None`` when it does not exist."""

    async def write_secret(
        self, *, namespace: str, name: str, data: dict[str, str], resource_version: str | None
    ) -> None:
        """Create (``resource_version`` None) or replace the Secret; raise ``ConflictError`` on 409."""


class CABundleInjector(Protocol):
    async def inject_ca_bundle(self, *, ca_cert_pem: bytes) -> None:
        """Make every one of our webhook configurations trust ``ca_cert_pem``."""


class RotationDecision(enum.Enum):
    KEEP = "keep"
    NEW_SERVING_CERT = "new-serving-cert"
    NEW_CA = "new-ca"


@dataclass(frozen=True)
class RotationSettings:
    service: str
    namespace: str
    secret_name: str
    ip_addresses: tuple[str, ...] = ()
    cert_dir: Path | None = None
    ca_common_name: str = "kueue-bridge-ca"
    ca_validity: dt.timedelta = DEFAULT_CA_VALIDITY
    serving_validity: dt.timedelta = DEFAULT_SERVING_VALIDITY
    lookahead: dt.timedelta = LOOKAHEAD
    check_interval: dt.timedelta = ROTATION_CHECK_INTERVAL
    max_conflict_retries: int = 5

    @property
    def dns_names(self) -> list[str]:
        return service_dns_names(service=self.service, namespace=self.namespace)

    @property
    def primary_dns_name(self) -> str:
        return self.dns_names[0]


def _ca_usable(ca: CertificateAuthority, *, now: dt.datetime, lookahead: dt.timedelta) -> bool:
    try:
        basic = ca.certificate.extensions.get_extension_for_class(x509.BasicConstraints).value
        return basic.ca and ca.matches_key() and ca.valid_at(now) and ca.valid_at(now + lookahead)
    except (CertificateError, x509.ExtensionNotFound, ValueError):
        return False


def _serving_usable(
    serving: KeyPair, *, ca: CertificateAuthority, dns_name: str, now: dt.datetime, lookahead: dt.timedelta
) -> bool:
    try:
        usages = serving.certificate.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
        return (
            ExtendedKeyUsageOID.SERVER_AUTH in usages
            and dns_name in serving.dns_names()
            and serving.matches_key()
            and ca.signed(serving)
            and serving.valid_at(now)
            and serving.valid_at(now + lookahead)
        )
    except (CertificateError, x509.ExtensionNotFound, ValueError):
        return False


def decide_rotation(
    bundle: CertBundle | None, *, dns_name: str, now: dt.datetime, lookahead: dt.timedelta = LOOKAHEAD
) -> RotationDecision:
    """cert-controller's ``refreshCertIfNeeded`` decision for the bundle found in the Secret."""
    if bundle is None or not _ca_usable(bundle.ca, now=now, lookahead=lookahead):
        return RotationDecision.NEW_CA
    if not _serving_usable(bundle.serving, ca=bundle.ca, dns_name=dns_name, now=now, lookahead=lookahead):
        return RotationDecision.NEW_SERVING_CERT
    return RotationDecision.KEEP


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


@dataclass
class CertRotator:
    settings: RotationSettings
    secrets: SecretStore
    injector: CABundleInjector | None = None
    clock: Callable[[], dt.datetime] = _utcnow
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    #: the bundle after the last successful check (``None`` before the first)
    current: CertBundle | None = field(default=None, init=False)

    def _issue(self, decision: RotationDecision, previous: CertBundle | None, now: dt.datetime) -> CertBundle:
        s = self.settings
        if decision is RotationDecision.NEW_CA or previous is None:
            ca = generate_ca(common_name=s.ca_common_name, valid_for=s.ca_validity, now=now)
        else:
            ca = previous.ca
        serving = issue_serving_cert(
            ca=ca, dns_names=s.dns_names, ip_addresses=s.ip_addresses, valid_for=s.serving_validity, now=now
        )
        return CertBundle(ca=ca, serving=serving)

    async def refresh(self) -> RotationDecision:
        """One check: rotate if needed, mirror to the cert dir, inject the CA. Returns what was done."""
        s = self.settings
        for _attempt in range(s.max_conflict_retries + 1):
            now = self.clock()
            stored = await self.secrets.read_secret(namespace=s.namespace, name=s.secret_name)
            bundle = CertBundle.from_secret_data(stored.data if stored else None)
            decision = decide_rotation(bundle, dns_name=s.primary_dns_name, now=now, lookahead=s.lookahead)
            if decision is not RotationDecision.KEEP:
                bundle = self._issue(decision, bundle, now)
                data = dict(stored.data) if stored else {}
                data.update(bundle.secret_data())
                try:
                    await self.secrets.write_secret(
                        namespace=s.namespace,
                        name=s.secret_name,
                        data=data,
                        resource_version=stored.resource_version if stored else None,
                    )
                except ConflictError:
                    log.info(
                        "certificate Secret %s/%s changed concurrently; re-reading",
                        s.namespace,
                        s.secret_name,
                    )
                    continue
                log.info(
                    "certificates rotated (%s) in Secret %s/%s", decision.value, s.namespace, s.secret_name
                )
            assert bundle is not None
            if s.cert_dir is not None:
                await asyncio.to_thread(
                    write_cert_dir, s.cert_dir, serving=bundle.serving, ca_cert_pem=bundle.ca.cert_pem
                )
            if self.injector is not None:
                await self.injector.inject_ca_bundle(ca_cert_pem=bundle.ca.cert_pem)
            self.current = bundle
            return decision
        raise ConflictError(f"Secret {s.namespace}/{s.secret_name} kept changing; giving up this round")

    async def run(self, stop: asyncio.Event) -> None:
        """Check now, then every ``check_interval`` until ``stop`` is set; errors are logged and retried."""
        while not stop.is_set():
            try:
                await self.refresh()
            except Exception:  # a transient API error must not stop rotation for good
                log.exception("certificate check failed; retrying at the next interval")
            await until_first(self.sleep(self.settings.check_interval.total_seconds()), stop.wait())
