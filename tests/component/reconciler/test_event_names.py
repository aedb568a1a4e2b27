"""The reconciler's event recorder names events uniquely per object and never hangs.

Regression test for the work-around in ``reconciler.__main__``: ``shared.kube.events`` loops
forever naming an event for an object whose name sorts below the previous event's object (seen as
a reconciler that stops after a handful of Workloads in a 200-job burst).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

from reconciler.__main__ import _UniqueNameRecorder
from shared.kube import FakeClock, KubeClient
from shared.kube.events import EventSettings


def recorder() -> _UniqueNameRecorder:
    client = cast(KubeClient, SimpleNamespace(clock=FakeClock(), metrics=None))
    return _UniqueNameRecorder(client, EventSettings(reporting_controller="test", reporting_instance="a"))


def test_names_for_an_object_sorting_below_the_previous_one_are_made_at_once() -> None:
    names = recorder()
    first = names._new_name("job-199")
    second = names._new_name("job-150")
    assert first.startswith("job-199.")
    assert second.startswith("job-150.")


def test_names_of_one_object_are_unique_and_increasing_under_a_frozen_clock() -> None:
    names = recorder()
    made = [names._new_name("job-1") for _ in range(5)]
    suffixes: list[Any] = [int(name.rpartition(".")[2], 16) for name in made]
    assert len(set(made)) == 5
    assert suffixes == sorted(suffixes)
