"""Workload names, computed exactly as Kueue computes them (``jobframework/workload_names.go``).

Kueue and kueue-bridge must agree on the name of a job's Workload: a job created while one of them
ran and reconciled by the other must find its Workload, and MultiKueue workers look Workloads up by
name. So the algorithm is Kueue's, bit for bit:

* prefix = lower-case Kind + "-" + owner name, truncated to ``max_length - 6`` characters (no other
  normalisation: the owner name is already a DNS subdomain);
* hash = the first 5 hex digits of SHA-1 over ``Kind \\n Group \\n name \\n UID`` plus ``\\n extra``
  when ``extra`` is non-empty. The API *version* is not hashed, so a Workload survives a job CRD
  version bump;
* name = prefix + "-" + hash, at most ``max_length`` characters (253, or 63 with Kueue's
  ``ShortWorkloadNames`` feature gate, so the name fits in a label value).

Invariant: the result depends only on the arguments (pure, deterministic).
"""

from __future__ import annotations

import hashlib

from shared.constants import LONG_MAX_WORKLOAD_NAME_LENGTH, WORKLOAD_NAME_HASH_LENGTH
from shared.kube import GroupVersionKind

__all__ = [
    "workload_name_for_owner",
    "workload_name_for_variant",
    "workload_name_hash",
    "workload_name_prefix",
]


def _max_prefix_length(max_length: int) -> int:
    return max_length - 1 - WORKLOAD_NAME_HASH_LENGTH


def workload_name_hash(
    *, owner_name: str, owner_uid: str, owner_gvk: GroupVersionKind, extra: str = ""
) -> str:
    """The full hex SHA-1 Kueue derives workload names from (``getHash``)."""
    digest = hashlib.sha1(usedforsecurity=False)
    for part in (owner_gvk.kind, owner_gvk.group, owner_name):
        digest.update(part.encode())
        digest.update(b"\n")
    digest.update(owner_uid.encode())
    if extra:
        digest.update(b"\n")
        digest.update(extra.encode())
    return digest.hexdigest()


def workload_name_prefix(
    *, owner_name: str, owner_gvk: GroupVersionKind, max_length: int = LONG_MAX_WORKLOAD_NAME_LENGTH
) -> str:
    """``GenerateWorkloadNamePrefix``: ``<kind>-<owner name>`` cut to leave room for ``-<hash>``."""
    return f"{owner_gvk.kind.lower()}-{owner_name}"[: _max_prefix_length(max_length)]


def workload_name_for_owner(
    *,
    owner_name: str,
    owner_uid: str,
    owner_gvk: GroupVersionKind,
    extra: str = "",
    max_length: int = LONG_MAX_WORKLOAD_NAME_LENGTH,
) -> str:
    """The Workload name of a job (``GetWorkloadNameForOwnerWithGVK`` / ``GenerateWorkloadNameWithExtra``).

    ``extra`` is hashed in when non-empty: elastic jobs pass their generation (or their
    ``ElasticWorkloadNameProvider`` value) so every slice gets its own name.
    """
    prefix = workload_name_prefix(owner_name=owner_name, owner_gvk=owner_gvk, max_length=max_length)
    digest = workload_name_hash(owner_name=owner_name, owner_uid=owner_uid, owner_gvk=owner_gvk, extra=extra)
    return f"{prefix}-{digest[:WORKLOAD_NAME_HASH_LENGTH]}"


def workload_name_for_variant(
    *,
    parent_name: str,
    owner_uid: str,
    owner_gvk: GroupVersionKind,
    flavor: str,
    max_length: int = LONG_MAX_WORKLOAD_NAME_LENGTH,
) -> str:
    """``GetWorkloadNameForVariant``: ``<parent without its hash>-variant-<flavor>-<hash>``.

    The hash is over the *parent* Workload name (which already encodes the job's GVK) with the
    flavor as ``extra``.
    """
    base = parent_name.rsplit("-", 1)[0]
    prefix = f"{base}-variant-{flavor}"[: _max_prefix_length(max_length)]
    digest = workload_name_hash(
        owner_name=parent_name, owner_uid=owner_uid, owner_gvk=owner_gvk, extra=flavor
    )
    return f"{prefix}-{digest[:WORKLOAD_NAME_HASH_LENGTH]}"
