"""Event names: ``<object>.<hex nanoseconds>``, unique and increasing per object, never hanging.

Regression: names used to be compared across objects, so naming an event for ``job-150`` right
after one for ``job-199`` looped forever (a reconciler stalled in a 200-job burst).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import cast

from shared.kube import FakeClock, KubeClient
from shared.kube.events import EventRecorder, EventSettings


def recorder() -> EventRecorder:
    client = cast(KubeClient, SimpleNamespace(clock=FakeClock(), metrics=None))
    return EventRecorder(client, EventSettings(reporting_controller="test", reporting_instance="a"))


def test_an_object_sorting_below_the_previous_one_is_named_at_once() -> None:
    names = recorder()
    assert names._new_name("job-199").startswith("job-199.")
    assert names._new_name("job-150").startswith("job-150.")


def test_names_of_one_object_are_unique_and_increasing_under_a_frozen_clock() -> None:
    names = recorder()
    made = [names._new_name("job-1") for _ in range(5)]
    suffixes = [int(name.rpartition(".")[2], 16) for name in made]
    assert len(set(made)) == 5
    assert suffixes == sorted(suffixes)


def test_memory_of_last_names_is_bounded() -> None:
    client = cast(KubeClient, SimpleNamespace(clock=FakeClock(), metrics=None))
    names = EventRecorder(
        client, EventSettings(reporting_controller="t", reporting_instance="a", series_cache_size=8)
    )
    for index in range(100):
        names._new_name(f"job-{index}")
    assert len(names._last_nanos) == 8
