"""``reconciler.manager.json_copy``: an exact, independent copy of an API object."""

from __future__ import annotations

from typing import Any

from reconciler.manager import json_copy
from tests.unit.reconciler.conftest import golden_job


def test_copy_is_equal_and_shares_nothing_with_the_cached_object() -> None:
    cached: dict[str, Any] = golden_job()
    cached["status"] = {"active": 0, "ready": 1.5, "flag": None, "ok": True, "uncounted": []}
    copied = json_copy(cached)
    assert copied == cached
    copied["spec"]["template"]["spec"]["containers"][0]["name"] = "changed"
    copied["metadata"]["labels"]["x"] = "y"
    copied["status"]["uncounted"].append("p")
    assert cached == golden_job() | {
        "status": {"active": 0, "ready": 1.5, "flag": None, "ok": True, "uncounted": []}
    }
