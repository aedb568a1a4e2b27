"""A worker that cannot be reached is described with the texts Kueue's MultiKueueCluster shows.

The expected texts were read from Kueue ff69552's ``Active`` condition on kube-apiserver 1.36.
"""

from __future__ import annotations

import ssl

from multikueue.connect_errors import connect_failure_message
from shared.kube import ServiceUnavailable, TransportError, Unauthorized

SERVER = "https://127.0.0.1:6505"


def _transport(cause: BaseException) -> TransportError:
    error = TransportError(f"cannot connect: {cause}", request_sent=False, path="/api")
    error.__cause__ = cause
    return error


def test_a_refused_connection_and_a_timeout_read_as_gos_dial_errors() -> None:
    assert connect_failure_message(
        _transport(ConnectionRefusedError(111, "Connect call failed")), server=SERVER
    ) == (
        'failed to get server groups: Get "https://127.0.0.1:6505/api": dial tcp 127.0.0.1:6505: '
        "connect: connection refused"
    )
    assert connect_failure_message(_transport(TimeoutError()), server=SERVER).endswith(
        "dial tcp 127.0.0.1:6505: i/o timeout"
    )


def test_an_untrusted_certificate_reads_as_gos_x509_error() -> None:
    cause = ssl.SSLCertVerificationError(
        1, "certificate verify failed: unable to get local issuer certificate"
    )
    cause.verify_code = 20
    assert connect_failure_message(_transport(cause), server=SERVER) == (
        'failed to get server groups: Get "https://127.0.0.1:6505/api": tls: failed to verify certificate: '
        "x509: certificate signed by unknown authority"
    )


def test_answers_of_the_api_server() -> None:
    assert connect_failure_message(Unauthorized(code=401, message="Unauthorized"), server=SERVER) == (
        "failed to get server groups: the server has asked for the client to provide credentials"
    )
    unavailable = ServiceUnavailable(code=503, message="the server is shutting down", path="/api")
    assert connect_failure_message(unavailable, server=SERVER) == (
        "failed to get server groups: the server is shutting down"
    )


def test_anything_else_keeps_our_description_in_kueues_frame() -> None:
    reset = TransportError("ConnectionResetError: reset", request_sent=True, path="/api")
    assert connect_failure_message(reset, server=SERVER) == (
        'failed to get server groups: Get "https://127.0.0.1:6505/api": ConnectionResetError: reset'
    )
