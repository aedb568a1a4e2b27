"""Small helpers shared by the devcluster conformance tests (no fixtures here)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx
import orjson


def job_manifest(name: str, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}
            },
            **spec,
        },
    }
    return body


def configmap(name: str, labels: dict[str, str] | None = None, **extra_meta: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, **extra_meta}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": "v"}}


def eventually(check: Callable[[], Any], *, timeout: float = 10.0, interval: float = 0.02) -> Any:
    """Poll ``check`` until it returns something truthy; fail with its last value at the deadline."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s (last value: {last!r})")


def watch(client: httpx.Client, path: str, **params: Any) -> list[dict[str, Any]]:
    """All events of a watch that the server ends itself (pass timeoutSeconds)."""
    events = []
    query = {
        "watch": "true",
        **{k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in params.items()},
    }
    with client.stream("GET", path, params=query) as response:
        assert response.status_code == 200, response.read()
        for line in response.iter_lines():
            if line.strip():
                events.append(orjson.loads(line))
    return events


def status_of(response: httpx.Response) -> dict[str, Any]:
    body: dict[str, Any] = response.json()
    assert body["kind"] == "Status", body
    assert body["code"] == response.status_code
    return body
