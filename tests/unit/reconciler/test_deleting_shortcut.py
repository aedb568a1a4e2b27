"""``JobReconciler._sync`` reads ``metadata.deletion_timestamp`` instead of dumping the Workload:
the same answer as ``is_deleting(workload.to_wire())``."""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.workload_sync import is_deleting
from shared.models.workload import Workload


@pytest.mark.parametrize("timestamp", [None, "", "2026-11-22T00:00:00Z"])
def test_deletion_timestamp_matches_is_deleting_on_the_wire(timestamp: str | None) -> None:
    metadata: dict[str, Any] = {"name": "wl", "namespace": "ns"}
    if timestamp is not None:
        metadata["deletionTimestamp"] = timestamp
    workload = Workload.from_wire(
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": metadata, "spec": {}}
    )
    assert bool(workload.metadata.deletion_timestamp) is is_deleting(workload.to_wire())
