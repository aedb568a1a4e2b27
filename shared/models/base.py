"""The base class of every model read from or written to a cluster.

Invariants:

* **Lossless.** ``extra="allow"`` everywhere: a field the cluster has and we do not model is kept
  verbatim and written back, so a read-modify-write round trip never drops data (a newer Kueue, a
  feature gate we do not know, another controller's annotation).
* **Wire names.** Python attributes are snake_case; the wire format is Kubernetes camelCase, produced
  by an alias generator (explicit aliases only where Kubernetes is irregular). Models accept either
  spelling on input.
* **Absent means absent.** ``to_wire()`` drops ``None`` so an unset optional field is not sent as
  ``null`` (which a structural schema may reject or a merge patch would interpret as delete).
"""

from __future__ import annotations

from typing import Any, Self

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

__all__ = ["KubeModel", "WireDict"]

WireDict = dict[str, Any]


class KubeModel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="allow",
        validate_assignment=False,
        ser_json_timedelta="float",
    )

    def to_wire(self) -> WireDict:
        """The object as Kubernetes JSON (camelCase, no ``None`` values, unknown fields kept)."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")

    @classmethod
    def from_wire(cls, wire: WireDict) -> Self:
        """Parse a Kubernetes JSON object; raises ``pydantic.ValidationError`` naming the field."""
        return cls.model_validate(wire)
