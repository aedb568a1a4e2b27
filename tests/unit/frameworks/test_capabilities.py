"""Optional adapter protocols are decided per adapter class (and cached)."""

from __future__ import annotations

from shared.frameworks.base import ReclaimablePodCount
from shared.frameworks.capabilities import (
    has_custom_stop,
    has_managed_by,
    has_priority_class,
    has_reclaimable_pods,
    has_validation,
)


class Plain:
    pass


class Reclaiming:
    def reclaimable_pods(self) -> list[ReclaimablePodCount]:
        return []


class Prioritised:
    def priority_class(self) -> str | None:
        return "high"


def test_answers_follow_the_methods_a_class_defines() -> None:
    assert has_reclaimable_pods(Reclaiming()) is True
    assert has_reclaimable_pods(Plain()) is False
    assert has_priority_class(Prioritised()) is True
    assert has_priority_class(Reclaiming()) is False
    assert not any(check(Plain()) for check in (has_custom_stop, has_managed_by, has_validation))


def test_the_answer_belongs_to_the_class_not_the_instance() -> None:
    class Later:
        pass

    assert has_reclaimable_pods(Later()) is False
    odd = Later()
    odd.reclaimable_pods = lambda: []  # type: ignore[attr-defined]
    assert has_reclaimable_pods(odd) is False  # decided once for the class, as adapters are built
