from __future__ import annotations

import datetime as dt
import ipaddress
import ssl

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from certs import (
    CertificateAuthority,
    CertificateError,
    KeyPair,
    generate_ca,
    issue_serving_cert,
    read_cert_dir,
    service_dns_names,
    write_cert_dir,
)

NOW = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)


def test_service_dns_names_cover_every_service_spelling() -> None:
    assert service_dns_names(service="wh", namespace="ns") == [
        "wh.ns.svc",
        "wh",
        "wh.ns",
        "wh.ns.svc.cluster.local",
    ]


def test_ca_is_self_signed_ca_backdated_one_hour() -> None:
    ca = generate_ca(common_name="test-ca", valid_for=dt.timedelta(days=10), now=NOW)
    cert = ca.certificate
    assert cert.subject == cert.issuer
    assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert ca.not_before == NOW - dt.timedelta(hours=1)
    assert ca.not_after == NOW + dt.timedelta(days=10)
    assert ca.matches_key()


def test_serving_cert_has_names_usage_and_is_signed_by_ca() -> None:
    ca = generate_ca(common_name="test-ca", valid_for=dt.timedelta(days=10), now=NOW)
    pair = issue_serving_cert(
        ca=ca,
        dns_names=service_dns_names(service="wh", namespace="ns"),
        ip_addresses=["127.0.0.1"],
        valid_for=dt.timedelta(days=5),
        now=NOW,
    )
    cert = pair.certificate
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == service_dns_names(service="wh", namespace="ns")
    assert san.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]
    usages = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert ExtendedKeyUsageOID.SERVER_AUTH in usages
    assert not cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert ca.signed(pair)
    assert pair.matches_key()
    assert pair.not_after == NOW + dt.timedelta(days=5)


def test_serving_cert_never_outlives_its_ca() -> None:
    ca = generate_ca(valid_for=dt.timedelta(days=2), now=NOW)
    pair = issue_serving_cert(ca=ca, dns_names=["x"], valid_for=dt.timedelta(days=365), now=NOW)
    assert pair.not_after == ca.not_after


def test_other_ca_did_not_sign() -> None:
    ca, other = generate_ca(now=NOW), generate_ca(now=NOW)
    pair = issue_serving_cert(ca=ca, dns_names=["x"], now=NOW)
    assert not other.signed(pair)


def test_serving_cert_needs_a_name() -> None:
    with pytest.raises(ValueError, match="at least one"):
        issue_serving_cert(ca=generate_ca(), dns_names=[])


def test_garbage_pem_raises_certificate_error() -> None:
    with pytest.raises(CertificateError):
        _ = KeyPair(cert_pem=b"nope", key_pem=b"nope").certificate
    with pytest.raises(CertificateError):
        _ = CertificateAuthority(cert_pem=b"", key_pem=b"nope").private_key


def test_cert_dir_round_trip_is_usable_by_ssl(tmp_path) -> None:
    ca = generate_ca()
    pair = issue_serving_cert(ca=ca, dns_names=["localhost"], ip_addresses=["127.0.0.1"])
    write_cert_dir(tmp_path / "certs", serving=pair, ca_cert_pem=ca.cert_pem)
    found = read_cert_dir(tmp_path / "certs")
    assert found is not None
    assert found[0] == pair
    assert found[1] == ca.cert_pem
    assert (tmp_path / "certs" / "tls.key").stat().st_mode & 0o777 == 0o600
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(tmp_path / "certs" / "tls.crt", tmp_path / "certs" / "tls.key")
    client = ssl.create_default_context(cafile=str(tmp_path / "certs" / "ca.crt"))
    assert client.cert_store_stats()["x509_ca"] == 1
    assert not list((tmp_path / "certs").glob(".*.tmp"))


def test_read_cert_dir_missing_files(tmp_path) -> None:
    assert read_cert_dir(tmp_path) is None
