"""Kubernetes' name and label validators, with apimachinery's exact error texts.

Kueue decides several things with these checks (the ``job-uid`` label is only set when the UID is a
valid label value; the ``cluster-queue-name`` pod label only when the ClusterQueue name is a DNS-1123
label; the webhook rejects a queue name that is not a DNS-1123 subdomain) and users read the
messages in ``kubectl`` output, so both the rules and the texts follow apimachinery v0.36 (the
version Kueue builds against) byte for byte:

* ``is_dns1123_label`` / ``is_dns1123_subdomain``: ``k8s.io/apimachinery/pkg/util/validation``
  (length errors say "characters");
* ``is_label_value`` / ``is_label_key``: ``k8s.io/apimachinery/pkg/api/validate/content``
  (length errors say "bytes");
* ``is_domain_prefixed_path``: ``validation.IsDomainPrefixedPath`` (``acme.io/foo``: a Job's
  ``spec.managedBy``, Kueue's admission gates), as field problems the caller puts on its path.

Invariants: every function returns a list of messages, empty when valid, and never raises. Lengths
are counted in UTF-8 bytes, as Go's ``len`` does. Matching is whole-string (``re.fullmatch``), so a
trailing newline is invalid, as with Go's ``^...$``.
"""

from __future__ import annotations

import re
from typing import NamedTuple

__all__ = [
    "DNS1123_LABEL_MAX_LENGTH",
    "DNS1123_SUBDOMAIN_MAX_LENGTH",
    "LABEL_VALUE_MAX_LENGTH",
    "FieldProblem",
    "byte_length",
    "is_dns1123_label",
    "is_dns1123_subdomain",
    "is_domain_prefixed_path",
    "is_label_key",
    "is_label_value",
    "max_len_error",
    "regex_error",
]

DNS1123_LABEL_MAX_LENGTH = 63
DNS1123_SUBDOMAIN_MAX_LENGTH = 253
LABEL_VALUE_MAX_LENGTH = 63
_LABEL_KEY_NAME_MAX_LENGTH = 63

_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_ERR = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_ERR = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)
_LABEL_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_KEY_ERR = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_LABEL_VALUE_FMT = "(" + _LABEL_KEY_FMT + ")?"
_LABEL_VALUE_ERR = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)

#: RFC 3986 path characters (apimachinery's ``httpPathFmt``)
_HTTP_PATH_FMT = r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+"

# Go's regexp character classes are ASCII; re.ASCII keeps Python's the same.
_DNS1123_LABEL_RE = re.compile(_DNS1123_LABEL_FMT, re.ASCII)
_DNS1123_SUBDOMAIN_RE = re.compile(_DNS1123_SUBDOMAIN_FMT, re.ASCII)
_LABEL_KEY_RE = re.compile(_LABEL_KEY_FMT, re.ASCII)
_LABEL_VALUE_RE = re.compile(_LABEL_VALUE_FMT, re.ASCII)
_HTTP_PATH_RE = re.compile(_HTTP_PATH_FMT, re.ASCII)


class FieldProblem(NamedTuple):
    """One ``field.Error`` without its path: ``Required`` (``required``) or ``Invalid`` of ``value``."""

    required: bool
    value: str
    detail: str


def max_len_error(length: int, *, unit: str = "characters") -> str:
    """``MaxLenError``: "must be no more than N characters" (``content`` says "bytes")."""
    return f"must be no more than {length} {unit}"


def regex_error(message: str, regex: str, *examples: str) -> str:
    """``RegexError``: the message, the examples and the regex, formatted as apimachinery does."""
    if not examples:
        return f"{message} (regex used for validation is '{regex}')"
    quoted = " or ".join(f"'{example}', " for example in examples)
    return f"{message} (e.g. {quoted}regex used for validation is '{regex}')"


def byte_length(value: str) -> int:
    """Go's ``len`` of a string: its UTF-8 bytes."""
    return len(value.encode("utf-8", errors="surrogatepass"))


def is_dns1123_label(value: str) -> list[str]:
    """``validation.IsDNS1123Label``: a lower-case RFC 1123 label of at most 63 characters."""
    errors: list[str] = []
    if byte_length(value) > DNS1123_LABEL_MAX_LENGTH:
        errors.append(max_len_error(DNS1123_LABEL_MAX_LENGTH))
    if _DNS1123_LABEL_RE.fullmatch(value) is None:
        if _DNS1123_SUBDOMAIN_RE.fullmatch(value) is not None:
            # A valid subdomain but not a valid label: the length was checked, so it has dots.
            errors.append("must not contain dots")
        else:
            errors.append(regex_error(_DNS1123_LABEL_ERR, _DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errors


def is_dns1123_subdomain(value: str) -> list[str]:
    """``validation.IsDNS1123Subdomain``: a lower-case RFC 1123 subdomain of at most 253 characters."""
    errors: list[str] = []
    if byte_length(value) > DNS1123_SUBDOMAIN_MAX_LENGTH:
        errors.append(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH))
    if _DNS1123_SUBDOMAIN_RE.fullmatch(value) is None:
        errors.append(regex_error(_DNS1123_SUBDOMAIN_ERR, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errors


def is_label_value(value: str) -> list[str]:
    """``content.IsLabelValue``: empty, or at most 63 bytes of ``[-A-Za-z0-9_.]`` with alphanumeric ends."""
    errors: list[str] = []
    if byte_length(value) > LABEL_VALUE_MAX_LENGTH:
        errors.append(max_len_error(LABEL_VALUE_MAX_LENGTH, unit="bytes"))
    if _LABEL_VALUE_RE.fullmatch(value) is None:
        errors.append(regex_error(_LABEL_VALUE_ERR, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errors


def is_label_key(value: str) -> list[str]:
    """``content.IsLabelKey``: an optional DNS-1123 subdomain prefix and '/', then a qualified name."""
    errors: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            errors.extend("prefix part " + message for message in is_dns1123_subdomain(prefix))
    else:
        return [
            "a valid label key "
            + regex_error(_LABEL_KEY_ERR, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errors.append("name part must be non-empty")
    elif byte_length(name) > _LABEL_KEY_NAME_MAX_LENGTH:
        errors.append("name part " + max_len_error(_LABEL_KEY_NAME_MAX_LENGTH, unit="bytes"))
    if _LABEL_KEY_RE.fullmatch(name) is None:
        errors.append(
            "name part " + regex_error(_LABEL_KEY_ERR, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
        )
    return errors


def is_domain_prefixed_path(value: str) -> list[FieldProblem]:
    """``validation.IsDomainPrefixedPath``: ``<DNS-1123 subdomain>/<RFC 3986 path>``."""
    if not value:
        return [FieldProblem(required=True, value="", detail="")]
    host, _, path = value.partition("/")
    if not host or not path:
        return [FieldProblem(False, value, 'must be a domain-prefixed path (such as "acme.io/foo")')]
    problems = [FieldProblem(False, host, message) for message in is_dns1123_subdomain(host)]
    if _HTTP_PATH_RE.fullmatch(path) is None:
        problems.append(FieldProblem(False, path, regex_error("Invalid path", _HTTP_PATH_FMT)))
    return problems
