"""``KubeWriter`` translates the client's typed API errors into the reconciler port's outcomes."""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.cluster import KubeWriter
from reconciler.ports import ConflictError, InvalidError, NotFoundError
from shared.kube import Conflict, Invalid, NotFound
from shared.kube.kinds import JOB_GVK


class _FailingClient:
    """A client whose every write raises ``error``."""

    def __init__(self, error: BaseException) -> None:
        self.error = error

    async def create(self, *args: Any, **kwargs: Any) -> Any:
        raise self.error

    async def merge_patch(self, *args: Any, **kwargs: Any) -> Any:
        raise self.error


def _writer(error: BaseException) -> KubeWriter:
    return KubeWriter(client=_FailingClient(error), field_manager="test")  # type: ignore[arg-type]


async def test_not_found_conflict_and_invalid_become_the_ports_errors() -> None:
    with pytest.raises(NotFoundError, match="gone") as not_found:
        await _writer(NotFound(code=404, message="gone")).create(JOB_GVK, "ns", {})
    assert isinstance(not_found.value.__cause__, NotFound)

    with pytest.raises(ConflictError, match="stale") as conflict:
        await _writer(Conflict(code=409, message="stale")).create(JOB_GVK, "ns", {})
    assert isinstance(conflict.value.__cause__, Conflict)

    invalid = Invalid(
        code=422,
        message="bad fields",
        details={
            "causes": [
                {"field": "spec.a", "reason": "FieldValueInvalid", "message": "x"},
                {"field": "spec.a", "reason": "FieldValueInvalid", "message": "y"},
                {"field": "spec.b", "reason": "FieldValueInvalid", "message": "z"},
                {"reason": "FieldValueInvalid", "message": "no field"},
            ]
        },
    )
    with pytest.raises(InvalidError) as rejected:
        await _writer(invalid).create(JOB_GVK, "ns", {})
    assert rejected.value.fields == ("spec.a", "spec.b")
    assert rejected.value.message == "bad fields"
