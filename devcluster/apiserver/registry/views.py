"""How a request sees its resource: the stored type and version, the served apiVersion, a codec.

Most resources are served as stored with only ``apiVersion`` rewritten (CRD versions with
conversion strategy None). ``events.k8s.io/v1`` Events are stored as core Events and converted
both ways by :class:`~devcluster.apiserver.registry.events.EventsCodec`; a :class:`View` hides the difference
from the
HTTP layer: decode incoming bodies to the stored shape, convert outgoing objects, rewrite field
selectors, and tell the watch stream how to render frames.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from devcluster.apiserver.errors import bad_request
from devcluster.apiserver.registry.events import EventsCodec
from devcluster.apiserver.registry.resources import ResourceType

__all__ = ["View"]


@dataclass(frozen=True, slots=True)
class View:
    """How one request sees its resource: stored type and version, served apiVersion, codec."""

    rtype: ResourceType
    version: str
    api_version: str
    codec: EventsCodec | None = None
    served_kind: str = ""

    def convert(self, obj: dict[str, Any]) -> dict[str, Any]:
        if self.codec is not None:
            return self.codec.from_storage(obj)
        return obj if obj.get("apiVersion") == self.api_version else {**obj, "apiVersion": self.api_version}

    def dump(self, obj: dict[str, Any]) -> bytes:
        return orjson.dumps(self.convert(obj))

    def decode(self, body: Any) -> Any:
        if self.codec is None or not isinstance(body, dict):
            return body
        if body.get("apiVersion", self.api_version) != self.api_version:
            raise bad_request(
                f"the API version in the data ({body['apiVersion']}) does not match the expected API version "
                f"({self.api_version})"
            )
        if body.get("kind", self.served_kind) != self.served_kind:
            raise bad_request(
                f"the kind in the data ({body['kind']}) does not match the expected kind ({self.served_kind})"
            )
        return self.codec.to_storage(body)

    def fields(self, selector: str) -> str:
        return self.codec.field_selector(selector) if self.codec is not None and selector else selector

    @property
    def served_as(self) -> tuple[str, Callable[[dict[str, Any]], dict[str, Any]]] | None:
        return None if self.codec is None else (self.api_version, self.codec.from_storage)
