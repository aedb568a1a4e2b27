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
  ``None`` *inside* a raw-dict field (a pod template's ``creationTimestamp: null``) is user data and
  is kept.
* **Open enums.** Fields whose CRD has an ``enum`` are typed ``str``, not ``Literal``: a value added
  by a newer Kueue must not make a whole object unreadable. Only ``apiVersion``/``kind`` are
  ``Literal``, because a wrong one means we were handed a different object altogether.
* **int-or-string.** Kubernetes quantities (``x-kubernetes-int-or-string``) are ``IntOrString``; the
  smart union keeps ``10`` an int and ``"10Gi"``/``"10"`` a string, so the wire form is unchanged.
"""

from __future__ import annotations

from typing import Any, Self

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

__all__ = ["IntOrString", "KubeModel", "WireDict"]

WireDict = dict[str, Any]

IntOrString = int | str
"""A Kubernetes ``IntOrString`` (quantities such as ``nominalQuota: 10`` or ``10Gi``)."""


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
