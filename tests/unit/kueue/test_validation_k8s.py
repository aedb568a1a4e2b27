"""Kubernetes validators: rules and apimachinery's exact messages."""

from __future__ import annotations

import pytest

from shared.validation_k8s import (
    FieldProblem,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_domain_prefixed_path,
    is_label_key,
    is_label_value,
)

LABEL_REGEX_MESSAGE = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
    "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
SUBDOMAIN_REGEX_MESSAGE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_VALUE_REGEX_MESSAGE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
    "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


@pytest.mark.parametrize("value", ["a", "golden-cq", "0", "a" * 63, "1-2-3"])
def test_valid_dns1123_labels(value: str) -> None:
    assert is_dns1123_label(value) == []


def test_dns1123_label_with_dots_says_so() -> None:
    assert is_dns1123_label("a.b") == ["must not contain dots"]


@pytest.mark.parametrize("value", ["", "-a", "a-", "A", "a_b", "a\n"])
def test_invalid_dns1123_label_message(value: str) -> None:
    assert is_dns1123_label(value) == [LABEL_REGEX_MESSAGE]


def test_too_long_dns1123_label_reports_length() -> None:
    assert is_dns1123_label("a" * 64) == ["must be no more than 63 characters"]


@pytest.mark.parametrize("value", ["a", "example.com", "golden-q", "a" * 253])
def test_valid_subdomains(value: str) -> None:
    assert is_dns1123_subdomain(value) == []


def test_invalid_subdomain_messages() -> None:
    assert is_dns1123_subdomain("Queue") == [SUBDOMAIN_REGEX_MESSAGE]
    assert is_dns1123_subdomain("a..b") == [SUBDOMAIN_REGEX_MESSAGE]
    assert is_dns1123_subdomain("a" * 254) == ["must be no more than 253 characters"]
    assert is_dns1123_subdomain("-" * 254) == ["must be no more than 253 characters", SUBDOMAIN_REGEX_MESSAGE]


@pytest.mark.parametrize("value", ["", "uid", "6b817d4a-659b-494a-b90b-4869cc58f3b7", "My_Value.1", "x" * 63])
def test_valid_label_values(value: str) -> None:
    assert is_label_value(value) == []


def test_invalid_label_values() -> None:
    assert is_label_value("-x") == [LABEL_VALUE_REGEX_MESSAGE]
    assert is_label_value("a/b") == [LABEL_VALUE_REGEX_MESSAGE]
    assert is_label_value("x" * 64) == ["must be no more than 63 bytes"]


def test_label_value_length_counts_bytes() -> None:
    assert "must be no more than 63 bytes" in is_label_value("é" * 32)


def test_label_keys() -> None:
    assert is_label_key("kueue.x-k8s.io/queue-name") == []
    assert is_label_key("app") == []
    assert is_label_key("/x") == ["prefix part must be non-empty"]
    assert is_label_key("a/") == [
        "name part must be non-empty",
        "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
        "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
    ]
    assert is_label_key("Bad_Prefix/x")[0].startswith("prefix part a lowercase RFC 1123 subdomain")
    assert is_label_key("a/b/c")[0].startswith("a valid label key must consist of alphanumeric characters")


@pytest.mark.parametrize("validator", [is_dns1123_label, is_dns1123_subdomain, is_label_key, is_label_value])
def test_a_trailing_newline_is_invalid_everywhere(validator: object) -> None:
    assert callable(validator)
    assert validator("abc\n") != []
    assert validator("abc") == []


def test_dns_lengths_count_bytes_but_say_characters_as_apimachinery_v0_36_does() -> None:
    assert is_label_key("é" * 32)[0] == "name part must be no more than 63 bytes"
    assert "must be no more than 63 characters" in is_dns1123_label("é" * 32)


def test_domain_prefixed_paths() -> None:
    assert is_domain_prefixed_path("acme.io/foo") == []
    assert is_domain_prefixed_path("") == [FieldProblem(required=True, value="", detail="")]
    [no_path] = is_domain_prefixed_path("acme.io")
    assert (no_path.value, no_path.detail) == (
        "acme.io",
        'must be a domain-prefixed path (such as "acme.io/foo")',
    )
    [host] = is_domain_prefixed_path("Acme.io/foo")
    assert (host.value, host.detail) == ("Acme.io", SUBDOMAIN_REGEX_MESSAGE)
    [path] = is_domain_prefixed_path("acme.io/f o\n")
    assert path.value == "f o\n"
    assert path.detail == "Invalid path (regex used for validation is '[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')"
