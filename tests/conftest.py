"""Test-wide fixtures.

``../shared`` (beside the repository) holds the real CRDs, golden fixtures from real Kueue and the
reference notes. Tests read it in place and never copy it into the repository; when it is absent
they skip with a reason that says so.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent


def _find_shared_dir() -> Path | None:
    explicit = os.environ.get("KUEUE_BRIDGE_SHARED_DIR")
    candidates = [Path(explicit)] if explicit else []
    candidates.append(REPO_ROOT.parent / "shared")
    for candidate in candidates:
        if (candidate / "crds").is_dir():
            return candidate
    return None


SHARED_DIR = _find_shared_dir()

# tests/real start real clusters from the kit: only `make test-real` (testkit/real_suite.py) runs them,
# and it sets KUEUE_BRIDGE_REAL_ROOT to the folder it sweeps afterwards.
# The folder itself, not only its files: its conftest must not be loaded either (its hooks would
# reach every test of the run).
collect_ignore = [] if os.environ.get("KUEUE_BRIDGE_REAL_ROOT") else ["real"]
# tests/install start a one-node cluster and install the image, chart and manifests: only
# `make test-install` runs them (it sets KUEUE_BRIDGE_INSTALL_TEST).
if not os.environ.get("KUEUE_BRIDGE_INSTALL_TEST"):
    collect_ignore.append("install")
# tests/compose run docker-compose.yaml through the kit's podman: only `make test-compose` runs them
# (it sets KUEUE_BRIDGE_TEST_COMPOSE=1), so `make test` neither collects nor skips them.
if os.environ.get("KUEUE_BRIDGE_TEST_COMPOSE") != "1":
    collect_ignore.append("compose")


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The ``../shared`` reference folder, or a skip naming what is missing."""
    if SHARED_DIR is None:
        pytest.skip("../shared (real CRDs and Kueue fixtures) is not beside the repository")
    return SHARED_DIR


@pytest.fixture(scope="session")
def kueue_crd_dir(shared_dir: Path) -> Path:
    return shared_dir / "crds" / "kueue"


@pytest.fixture(scope="session")
def golden_dir(shared_dir: Path) -> Path:
    return shared_dir / "fixtures" / "real-kueue"
