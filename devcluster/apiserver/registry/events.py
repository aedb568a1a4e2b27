"""``events.k8s.io/v1`` Events, stored as core ``v1`` Events like kube-apiserver does.

Both APIs serve one resource: an Event written through either is read, listed and watched
through both. The field mapping is the real conversion's (``pkg/apis/events/v1``):
``regarding``/``involvedObject``, ``note``/``message``, ``reportingController``/
``reportingComponent``, ``deprecatedSource``/``source``, ``deprecatedFirstTimestamp``/
``firstTimestamp``, ``deprecatedLastTimestamp``/``lastTimestamp``, ``deprecatedCount``/``count``;
every other field has the same name in both.
"""

from __future__ import annotations

from typing import Any

__all__ = ["EVENTS_FIELD_SELECTORS", "EventsCodec"]

_TO_CORE = {
    "regarding": "involvedObject",
    "note": "message",
    "reportingController": "reportingComponent",
    "deprecatedSource": "source",
    "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedCount": "count",
}
_FROM_CORE = {core: events for events, core in _TO_CORE.items()}

#: events.k8s.io field selector paths -> the stored (core) paths
EVENTS_FIELD_SELECTORS = {
    "regarding.kind": "involvedObject.kind",
    "regarding.namespace": "involvedObject.namespace",
    "regarding.name": "involvedObject.name",
    "regarding.uid": "involvedObject.uid",
    "regarding.apiVersion": "involvedObject.apiVersion",
    "regarding.resourceVersion": "involvedObject.resourceVersion",
    "regarding.fieldPath": "involvedObject.fieldPath",
    "reportingController": "reportingComponent",
    "reason": "reason",
    "type": "type",
}


class EventsCodec:
    """Converts between the served form (events.k8s.io/v1) and the stored form (core v1)."""

    served_api_version = "events.k8s.io/v1"

    @staticmethod
    def to_storage(obj: dict[str, Any]) -> dict[str, Any]:
        out = {_TO_CORE.get(key, key): value for key, value in obj.items()}
        out["apiVersion"] = "v1"
        out["kind"] = "Event"
        return out

    @staticmethod
    def from_storage(obj: dict[str, Any]) -> dict[str, Any]:
        out = {_FROM_CORE.get(key, key): value for key, value in obj.items()}
        out["apiVersion"] = EventsCodec.served_api_version
        out["kind"] = "Event"
        return out

    @staticmethod
    def field_selector(text: str) -> str:
        """Rewrite an events.k8s.io field selector onto the stored field names."""
        rewritten = text
        for served, stored in sorted(EVENTS_FIELD_SELECTORS.items(), key=lambda item: -len(item[0])):
            rewritten = rewritten.replace(served, stored)
        return rewritten
