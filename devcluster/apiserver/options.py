"""Server options: everything a devcluster instance is configured with, passed in explicitly.

The same :class:`ServerOptions` drives the ``kueue-bridge devcluster`` command, the pytest fixtures
and the benchmark, so a behaviour seen in one is reproducible in the others. Defaults are those of
a local run; tests shrink ``watch_history_size`` or ``bookmark_interval`` to force the edge cases.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = ["ADMIN_USER", "MAX_REQUEST_BODY_BYTES", "ServerOptions", "utc_now"]

#: kube-apiserver's limit on request bodies (``MaxRequestBodyBytes``)
MAX_REQUEST_BODY_BYTES = 3 * 1024 * 1024

ADMIN_USER: dict[str, Any] = {
    "username": "kubernetes-admin",
    "uid": "devcluster-admin",
    "groups": ["system:masters", "system:authenticated"],
}


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(slots=True)
class ServerOptions:
    host: str = "127.0.0.1"
    port: int = 0
    #: bearer token of the admin user (random when not given)
    token: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    #: further bearer tokens -> user info ({"username", "uid", "groups"})
    extra_tokens: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: SQLite persistence directory; None keeps everything in memory
    data_dir: Path | None = None
    #: events kept per resource for watch resumption; older resumes get 410 Expired
    watch_history_size: int = 1000
    #: seconds between BOOKMARK events on watches that allow them
    bookmark_interval: float = 5.0
    #: default and upper bound of a watch's lifetime when the client gives no timeoutSeconds
    max_watch_seconds: float = 1800.0
    max_body_bytes: int = MAX_REQUEST_BODY_BYTES
    #: start the Kueue stand-in / job runner add-ons (devcluster.standin); read by devcluster.server,
    #: which hosts the API server, never by the API server itself
    kueue_standin: bool = False
    job_runner: bool = False
    #: admission webhook services "namespace/name" -> "host:port" (there is no cluster network)
    service_resolver: dict[str, str] = field(default_factory=dict)
    #: SubjectAccessReview policy: rules {"users"|"groups": [...], "verbs": [...], "resources": [...],
    #: "namespaces": [...]}, "*" matches anything; members of system:masters are always allowed
    access_rules: list[dict[str, Any]] = field(default_factory=list)
    #: where the serving certificate and CA are written (a temporary directory when None)
    cert_dir: Path | None = None
    clock: Callable[[], datetime] = utc_now
