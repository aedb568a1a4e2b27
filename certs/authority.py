"""A private CA and the webhook's serving certificate, as PEM bytes.

The semantics follow Kueue's ``internalCertManagement`` (``pkg/util/cert``), which delegates to
open-policy-agent/cert-controller's ``rotator`` with its defaults (verified against its source):

* CA valid for **10 years**, serving certificate for **1 year**;
* both are back-dated by **1 hour** (``notBefore = now - 1h``) so a peer whose clock is slightly behind
  accepts a freshly issued certificate;
* a certificate is replaced when it would no longer verify **90 days from now** (the "lookahead"); the
  check runs at start-up and every **12 hours**;
* the serving certificate carries ``ExtKeyUsage serverAuth`` and the webhook Service's DNS names.

Deliberate differences: keys are ECDSA P-256 (cert-controller uses RSA 2048) because a P-256 key is
generated in microseconds and makes TLS handshakes cheaper, and the API server accepts both; the
serving certificate lists every name the Service is reachable by (``svc``, ``svc.ns``, ``svc.ns.svc``,
``svc.ns.svc.cluster.local``) and, for local runs, loopback addresses.

Invariants: everything here is pure (no files, no API calls); time comes from the caller (``now``)
so rotation decisions are testable without waiting.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = [
    "BACKDATE",
    "DEFAULT_CA_VALIDITY",
    "DEFAULT_SERVING_VALIDITY",
    "LOOKAHEAD",
    "ROTATION_CHECK_INTERVAL",
    "CertificateAuthority",
    "CertificateError",
    "KeyPair",
    "generate_ca",
    "issue_serving_cert",
    "service_dns_names",
]

DEFAULT_CA_VALIDITY = dt.timedelta(days=10 * 365)
DEFAULT_SERVING_VALIDITY = dt.timedelta(days=365)
LOOKAHEAD = dt.timedelta(days=90)
ROTATION_CHECK_INTERVAL = dt.timedelta(hours=12)
BACKDATE = dt.timedelta(hours=1)

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class CertificateError(ValueError):
    """PEM data that cannot be parsed, or a key that does not belong to its certificate."""


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


@dataclass(frozen=True)
class KeyPair:
    """A PEM certificate and its PEM (PKCS#8) private key."""

    cert_pem: bytes
    key_pem: bytes

    @cached_property
    def certificate(self) -> x509.Certificate:
        try:
            return x509.load_pem_x509_certificate(self.cert_pem)
        except ValueError as exc:
            raise CertificateError(f"certificate is not valid PEM: {exc}") from exc

    @cached_property
    def private_key(self) -> ec.EllipticCurvePrivateKey:
        try:
            key = serialization.load_pem_private_key(self.key_pem, password=None)
        except (ValueError, TypeError) as exc:
            raise CertificateError(f"private key is not valid PEM: {exc}") from exc
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise CertificateError(f"unsupported private key type {type(key).__name__}")
        return key

    @property
    def not_before(self) -> dt.datetime:
        return self.certificate.not_valid_before_utc

    @property
    def not_after(self) -> dt.datetime:
        return self.certificate.not_valid_after_utc

    def matches_key(self) -> bool:
        """Whether ``key_pem`` is the private key of ``cert_pem``."""
        public = self.certificate.public_key()
        return public.public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        ) == self.private_key.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )

    def dns_names(self) -> list[str]:
        try:
            san = self.certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName)
        except x509.ExtensionNotFound:
            return []
        return list(san.value.get_values_for_type(x509.DNSName))

    def valid_at(self, when: dt.datetime) -> bool:
        return self.not_before <= when <= self.not_after


@dataclass(frozen=True)
class CertificateAuthority(KeyPair):
    """A self-signed CA that signs the serving certificate; ``cert_pem`` is the caBundle."""

    def signed(self, pair: KeyPair) -> bool:
        """Whether ``pair``'s certificate was issued (and signed) by this CA."""
        cert = pair.certificate
        if cert.issuer != self.certificate.subject:
            return False
        try:
            cert.verify_directly_issued_by(self.certificate)
        except (InvalidSignature, ValueError, TypeError):
            return False
        return True


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _pem_cert(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _key_usage(*, signs_certificates: bool) -> x509.KeyUsage:
    """Digital signature for both; certificate and CRL signing for the CA only."""
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=signs_certificates,
        crl_sign=signs_certificates,
        encipher_only=False,
        decipher_only=False,
    )


def generate_ca(
    *,
    common_name: str = "kueue-bridge-ca",
    organization: str = "kueue-bridge",
    valid_for: dt.timedelta = DEFAULT_CA_VALIDITY,
    now: dt.datetime | None = None,
) -> CertificateAuthority:
    """A new self-signed CA (``basicConstraints CA:TRUE, pathlen:0``; keyCertSign)."""
    start = (now or _utcnow()) - BACKDATE
    key = _new_key()
    name = x509.Name(
        [
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization),
        ]
    )
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + BACKDATE + valid_for)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(signs_certificates=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return CertificateAuthority(cert_pem=_pem_cert(cert), key_pem=_pem_key(key))


def issue_serving_cert(
    *,
    ca: CertificateAuthority,
    dns_names: Sequence[str],
    ip_addresses: Sequence[str | IPAddress] = (),
    valid_for: dt.timedelta = DEFAULT_SERVING_VALIDITY,
    now: dt.datetime | None = None,
) -> KeyPair:
    """A serving certificate for ``dns_names``/``ip_addresses`` signed by ``ca``.

    The first DNS name is also the subject CN (cert-controller uses ``<svc>.<ns>.svc``). The
    certificate never outlives its CA: ``notAfter`` is clamped to the CA's.
    """
    if not dns_names and not ip_addresses:
        raise ValueError("a serving certificate needs at least one DNS name or IP address")
    start = (now or _utcnow()) - BACKDATE
    end = min(start + BACKDATE + valid_for, ca.not_after)
    key = _new_key()
    ca_key = ca.private_key
    sans: list[x509.GeneralName] = [x509.DNSName(name) for name in dns_names]
    sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ip_addresses]
    common_name = dns_names[0] if dns_names else str(ip_addresses[0])
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
        .issuer_name(ca.certificate.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(signs_certificates=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return KeyPair(cert_pem=_pem_cert(cert), key_pem=_pem_key(key))


def service_dns_names(*, service: str, namespace: str, cluster_domain: str = "cluster.local") -> list[str]:
    """Every name a Service is reachable by, most specific API-server form first.

    ``<svc>.<ns>.svc`` comes first because it is what the API server uses for a ``service``
    clientConfig and what cert-controller puts in the CN.
    """
    return [
        f"{service}.{namespace}.svc",
        service,
        f"{service}.{namespace}",
        f"{service}.{namespace}.svc.{cluster_domain}",
    ]
