"""The version and commit this installation was built from, for ``kueue-bridge version``.

The version is the installed distribution's (``importlib.metadata``). The commit is, first,
``KUEUE_BRIDGE_COMMIT`` (the image bakes it in from its ``GIT_COMMIT`` build argument, also its
``org.opencontainers.image.revision`` label); else, in a git checkout (an editable install), the
checkout's ``HEAD``; else ``unknown``. Reading never fails: a missing git, or a directory that is not
a checkout, gives ``unknown``.
"""

from __future__ import annotations

import os
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Final

__all__ = ["COMMIT_ENV", "commit", "version", "version_line"]

COMMIT_ENV: Final = "KUEUE_BRIDGE_COMMIT"
_UNKNOWN: Final = "unknown"


def version() -> str:
    try:
        return metadata.version("kueue-bridge")
    except metadata.PackageNotFoundError:
        return _UNKNOWN


def _checkout_head() -> str | None:
    root = Path(__file__).resolve().parent.parent
    if not (root / ".git").exists():
        return None
    try:
        result = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    head = result.stdout.strip()
    return head if result.returncode == 0 and head else None


def commit() -> str:
    baked = os.environ.get(COMMIT_ENV, "").strip()
    if baked and baked != _UNKNOWN:
        return baked
    return _checkout_head() or _UNKNOWN


def version_line() -> str:
    return f"kueue-bridge {version()} (commit {commit()})"
