"""Golden objects from real Kueue (``../shared/fixtures/real-kueue``), loaded once per session.

Every fixture here depends on ``golden_dir``, which skips with a reason when ``../shared`` is absent.
Tests receive deep copies so one test cannot change what another sees.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.unit.kueue.helpers import SPOT_FLAVOR


def _load(path: Path) -> dict[str, Any]:
    document = yaml.safe_load(path.read_text())
    if document.get("kind") == "List":
        return dict(document["items"][0])
    return dict(document)


@pytest.fixture(scope="session")
def _golden_objects(golden_dir: Path) -> dict[str, dict[str, Any]]:
    names = [
        "job",
        "job-create-response",
        "job-admitted",
        "job-after-deactivation",
        "workload-admitted",
        "workload-after-deactivation",
        "workload-finished",
    ]
    return {name: _load(golden_dir / f"{name}.yaml") for name in names}


@pytest.fixture
def golden(_golden_objects: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return copy.deepcopy(_golden_objects)


@pytest.fixture(scope="session")
def golden_flavors(golden_dir: Path) -> dict[str, Any]:
    documents = list(yaml.safe_load_all((golden_dir / "setup.yaml").read_text()))
    flavors = {
        document["metadata"]["name"]: (document["spec"]["nodeLabels"], document["spec"]["tolerations"])
        for document in documents
        if document["kind"] == "ResourceFlavor"
    }
    assert flavors == SPOT_FLAVOR
    return flavors
