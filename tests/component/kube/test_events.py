"""``EventRecorder`` on the devcluster: events.k8s.io/v1 Events, series aggregation, core/v1 view."""

from __future__ import annotations

import asyncio
import contextlib

from shared.kube import NORMAL, WARNING, EventRecorder, EventSettings, GroupVersionKind, KubeClient
from tests.component.kube.conftest import CONFIGMAP

EVENTS_V1 = GroupVersionKind("events.k8s.io", "v1", "Event")
CORE_EVENT = GroupVersionKind("", "v1", "Event")


async def test_events_are_written_and_repeats_aggregate_into_a_series(
    client: KubeClient, namespace: str
) -> None:
    regarding = await client.create(CONFIGMAP, {"metadata": {"name": "job-like"}}, namespace=namespace)
    regarding = {**regarding, "apiVersion": "v1", "kind": "ConfigMap"}
    recorder = EventRecorder(
        client, EventSettings(reporting_controller="kueue.x-k8s.io/bridge", reporting_instance="pod-1")
    )
    task = asyncio.create_task(recorder.run())
    try:
        for _ in range(3):
            recorder.normal(regarding, reason="Suspended", note="Kueue suspended the job")
        recorder.warning(regarding, reason="ErrWorkloadCompose", note="bad pod set")
        await asyncio.wait_for(recorder.flush(), timeout=20)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    events = (await client.list_all(EVENTS_V1, namespace=namespace)).items
    by_reason = {event["reason"]: event for event in events}
    assert set(by_reason) == {"Suspended", "ErrWorkloadCompose"}, "three repeats make one Event"
    suspended = by_reason["Suspended"]
    assert suspended["type"] == NORMAL
    assert suspended["note"] == "Kueue suspended the job"
    assert suspended["reportingController"] == "kueue.x-k8s.io/bridge"
    assert suspended["reportingInstance"] == "pod-1"
    assert suspended["regarding"]["uid"] == regarding["metadata"]["uid"]
    assert suspended["regarding"]["kind"] == "ConfigMap"
    # client-go tools/events: the second occurrence is written at once, the third when the series is over
    assert suspended["series"]["count"] == 2
    assert suspended["series"]["lastObservedTime"]
    assert by_reason["ErrWorkloadCompose"]["type"] == WARNING
    assert "series" not in by_reason["ErrWorkloadCompose"]

    core = {
        event["reason"]: event for event in (await client.list_all(CORE_EVENT, namespace=namespace)).items
    }
    assert core["Suspended"]["involvedObject"]["name"] == "job-like"  # kubectl get events sees them too
    assert core["Suspended"]["message"] == "Kueue suspended the job"
