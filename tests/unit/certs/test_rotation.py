from __future__ import annotations

import asyncio
import base64
import datetime as dt
from dataclasses import dataclass, field

import pytest

from certs import (
    CertBundle,
    CertRotator,
    ConflictError,
    RotationDecision,
    RotationSettings,
    StoredSecret,
    decide_rotation,
    generate_ca,
    issue_serving_cert,
    read_cert_dir,
    service_dns_names,
)

NOW = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)
DNS = "wh.ns.svc"


def bundle(*, now: dt.datetime = NOW, ca_days: int = 3650, days: int = 365, names=None) -> CertBundle:
    ca = generate_ca(valid_for=dt.timedelta(days=ca_days), now=now)
    names = names or service_dns_names(service="wh", namespace="ns")
    return CertBundle(
        ca=ca, serving=issue_serving_cert(ca=ca, dns_names=names, valid_for=dt.timedelta(days=days), now=now)
    )


def test_fresh_bundle_is_kept() -> None:
    assert decide_rotation(bundle(), dns_name=DNS, now=NOW) is RotationDecision.KEEP


def test_missing_secret_needs_new_ca() -> None:
    assert decide_rotation(None, dns_name=DNS, now=NOW) is RotationDecision.NEW_CA


def test_serving_cert_is_renewed_90_days_before_expiry() -> None:
    b = bundle(days=365)
    assert decide_rotation(b, dns_name=DNS, now=NOW + dt.timedelta(days=274)) is RotationDecision.KEEP
    assert (
        decide_rotation(b, dns_name=DNS, now=NOW + dt.timedelta(days=276))
        is RotationDecision.NEW_SERVING_CERT
    )


def test_ca_is_renewed_90_days_before_expiry() -> None:
    b = bundle(ca_days=100, days=5)
    assert decide_rotation(b, dns_name=DNS, now=NOW + dt.timedelta(days=11)) is RotationDecision.NEW_CA


def test_wrong_names_key_or_issuer_need_new_serving_cert() -> None:
    assert (
        decide_rotation(bundle(names=["other"]), dns_name=DNS, now=NOW) is RotationDecision.NEW_SERVING_CERT
    )
    a, b = bundle(), bundle()
    mixed = CertBundle(ca=a.ca, serving=b.serving)
    assert decide_rotation(mixed, dns_name=DNS, now=NOW) is RotationDecision.NEW_SERVING_CERT
    wrong_key = CertBundle(
        ca=a.ca, serving=type(a.serving)(cert_pem=a.serving.cert_pem, key_pem=b.serving.key_pem)
    )
    assert decide_rotation(wrong_key, dns_name=DNS, now=NOW) is RotationDecision.NEW_SERVING_CERT


def test_garbled_secret_needs_new_ca() -> None:
    data = bundle().secret_data()
    data["ca.crt"] = base64.b64encode(b"garbage").decode()
    assert (
        decide_rotation(CertBundle.from_secret_data(data), dns_name=DNS, now=NOW) is RotationDecision.NEW_CA
    )
    assert CertBundle.from_secret_data({"ca.crt": "!!"}) is None


@dataclass
class MemorySecrets:
    secret: StoredSecret | None = None
    conflicts: int = 0
    writes: int = 0
    version: int = 0

    async def read_secret(self, *, namespace: str, name: str) -> StoredSecret | None:
        return self.secret

    async def write_secret(self, *, namespace, name, data, resource_version) -> None:
        if self.conflicts:
            self.conflicts -= 1
            raise ConflictError("changed")
        current = self.secret.resource_version if self.secret else None
        if current != resource_version:
            raise ConflictError("stale")
        self.version += 1
        self.writes += 1
        self.secret = StoredSecret(data=dict(data), resource_version=str(self.version))


@dataclass
class RecordingInjector:
    bundles: list[bytes] = field(default_factory=list)

    async def inject_ca_bundle(self, *, ca_cert_pem: bytes) -> None:
        self.bundles.append(ca_cert_pem)


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> dt.datetime:
        return self.now


def settings(tmp_path=None) -> RotationSettings:
    return RotationSettings(
        service="wh", namespace="ns", secret_name="wh-cert", ip_addresses=("127.0.0.1",), cert_dir=tmp_path
    )


async def test_rotator_bootstraps_writes_dir_and_injects(tmp_path) -> None:
    secrets, injector, clock = MemorySecrets(), RecordingInjector(), Clock()
    rotator = CertRotator(settings=settings(tmp_path), secrets=secrets, injector=injector, clock=clock)
    assert await rotator.refresh() is RotationDecision.NEW_CA
    assert secrets.writes == 1
    assert rotator.current is not None
    assert injector.bundles == [rotator.current.ca.cert_pem]
    on_disk = read_cert_dir(tmp_path)
    assert on_disk is not None and on_disk[0] == rotator.current.serving

    # steady state: nothing written, CA re-injected (repairs a re-applied configuration)
    assert await rotator.refresh() is RotationDecision.KEEP
    assert secrets.writes == 1
    assert len(injector.bundles) == 2

    # 300 days later the serving certificate is renewed with the same CA
    first = rotator.current
    clock.now = NOW + dt.timedelta(days=300)
    assert await rotator.refresh() is RotationDecision.NEW_SERVING_CERT
    assert rotator.current.ca == first.ca
    assert rotator.current.serving != first.serving


async def test_rotator_rereads_after_conflict() -> None:
    secrets = MemorySecrets(conflicts=2)
    rotator = CertRotator(settings=settings(), secrets=secrets)
    assert await rotator.refresh() is RotationDecision.NEW_CA
    assert secrets.writes == 1


async def test_rotator_adopts_a_bundle_another_replica_wrote() -> None:
    existing = bundle()
    secrets = MemorySecrets(secret=StoredSecret(data=existing.secret_data(), resource_version="7"))
    rotator = CertRotator(settings=settings(), secrets=secrets, clock=Clock())
    assert await rotator.refresh() is RotationDecision.KEEP
    assert rotator.current == existing


async def test_rotator_gives_up_after_too_many_conflicts() -> None:
    rotator = CertRotator(settings=settings(), secrets=MemorySecrets(conflicts=100))
    with pytest.raises(ConflictError):
        await rotator.refresh()


async def test_run_checks_until_stopped() -> None:
    secrets = MemorySecrets()
    sleeps: list[float] = []
    stop = asyncio.Event()

    async def fake_sleep(seconds: float) -> None:
        sleeps.append(seconds)
        if len(sleeps) == 3:
            stop.set()

    rotator = CertRotator(settings=settings(), secrets=secrets, sleep=fake_sleep)
    await asyncio.wait_for(rotator.run(stop), timeout=30)
    assert sleeps == [12 * 3600.0] * 3
    assert secrets.writes == 1
