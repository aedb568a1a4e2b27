"""``reconciler.job_control._snapshot``: a deep copy of a decoded-JSON job, like ``copy.deepcopy``."""

from __future__ import annotations

import copy
from decimal import Decimal
from typing import Any

from reconciler.job_control import _snapshot
from tests.unit.reconciler.conftest import golden_job


def test_snapshot_equals_deepcopy_and_is_independent() -> None:
    job: dict[str, Any] = golden_job()
    job["status"] = {"ready": 0, "ratio": 0.5, "flag": False, "none": None}
    copied = _snapshot(job)
    assert copied == copy.deepcopy(job)
    assert copied is not job
    copied["spec"]["template"]["spec"]["containers"][0]["name"] = "changed"
    copied["metadata"]["labels"]["new"] = "x"
    assert job["spec"]["template"]["spec"]["containers"][0]["name"] == "main"
    assert "new" not in job["metadata"]["labels"]


def test_snapshot_keeps_non_json_values_and_their_types() -> None:
    inner = {"a": [1, 2]}
    obj: dict[str, Any] = {"t": (1, [2]), "d": Decimal("1.5"), "s": {3}, "n": inner}
    copied = _snapshot(obj)
    assert copied == obj
    assert type(copied["t"]) is tuple
    assert copied["s"] is not obj["s"]
    assert copied["t"][1] is not obj["t"][1]
    assert copied["n"]["a"] is not inner["a"]
