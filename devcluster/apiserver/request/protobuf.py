"""Protobuf request bodies (``application/vnd.kubernetes.protobuf``) for the kinds kubectl sends so.

kubectl's ``create configmap|secret|namespace`` go through client-go's generated typed clients,
which encode built-in kinds as protobuf, and client-go does not fall back to JSON when a server
answers 415 (it does so only for CBOR: ``rest.requestClientContentConfigProvider``), so the
devcluster has to read these bodies. Decoding is Google's ``protobuf`` runtime; this module only
declares the schema of the messages involved: the ``runtime.Unknown`` envelope after the
``k8s\\x00`` magic prefix (apimachinery ``runtime/serializer/protobuf``), ``ObjectMeta`` with its
parts, and ``ConfigMap``, ``Secret``, ``Namespace`` -- field names and numbers as in Kubernetes'
``generated.proto`` files, so the bytes mean the same here as in kube-apiserver.

Invariants:

* **The result is the object kube-apiserver would have decoded**, as its JSON: a Go string or
  non-pointer number left at its zero value is absent (``omitempty``; gogo-protobuf writes them
  anyway), pointer fields (``immutable``, ``controller``, ``deletionGracePeriodSeconds`` ...) are
  kept when present, ``bytes`` become base64, ``Time`` becomes RFC 3339 (absent when zero), and
  ``FieldsV1`` is its raw JSON. Unknown fields are skipped, as Kubernetes' protobuf decoder skips
  them.
* **Anything else is refused, never guessed**: another kind, a ``contentEncoding``, a missing
  prefix answer 415 ``UnsupportedMediaType`` naming the media types that work for it; bytes that
  are not the declared message answer 400 ``BadRequest``.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Final

import orjson
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import DecodeError, Message

from devcluster.apiserver.errors import bad_request, unsupported_media_type
from shared.kube.times import format_time

__all__ = ["MEDIA_TYPE", "PROTOBUF_KINDS", "decode_protobuf"]

MEDIA_TYPE: Final = "application/vnd.kubernetes.protobuf"
MAGIC: Final = b"k8s\x00"
_PACKAGE: Final = "devcluster.k8s"
#: media types a body of any other kind can be sent as
_OTHER_TYPES: Final = ["application/json", "application/yaml"]

_T = FieldDescriptor
_STRING, _BYTES, _BOOL, _INT64, _INT32, _MESSAGE = (
    _T.TYPE_STRING,
    _T.TYPE_BYTES,
    _T.TYPE_BOOL,
    _T.TYPE_INT64,
    _T.TYPE_INT32,
    _T.TYPE_MESSAGE,
)

#: message -> (field, number, type, message type or "map<key,value>", repeated)
_Field = tuple[str, int, int, str, bool]
_SCHEMA: Final[dict[str, list[_Field]]] = {
    "Unknown": [
        ("typeMeta", 1, _MESSAGE, "TypeMeta", False),
        ("raw", 2, _BYTES, "", False),
        ("contentEncoding", 3, _STRING, "", False),
        ("contentType", 4, _STRING, "", False),
    ],
    "TypeMeta": [("apiVersion", 1, _STRING, "", False), ("kind", 2, _STRING, "", False)],
    "Time": [("seconds", 1, _INT64, "", False), ("nanos", 2, _INT32, "", False)],
    "FieldsV1": [("Raw", 1, _BYTES, "", False)],
    "OwnerReference": [
        ("kind", 1, _STRING, "", False),
        ("name", 3, _STRING, "", False),
        ("uid", 4, _STRING, "", False),
        ("apiVersion", 5, _STRING, "", False),
        ("controller", 6, _BOOL, "", False),
        ("blockOwnerDeletion", 7, _BOOL, "", False),
    ],
    "ManagedFieldsEntry": [
        ("manager", 1, _STRING, "", False),
        ("operation", 2, _STRING, "", False),
        ("apiVersion", 3, _STRING, "", False),
        ("time", 4, _MESSAGE, "Time", False),
        ("fieldsType", 6, _STRING, "", False),
        ("fieldsV1", 7, _MESSAGE, "FieldsV1", False),
        ("subresource", 8, _STRING, "", False),
    ],
    "ObjectMeta": [
        ("name", 1, _STRING, "", False),
        ("generateName", 2, _STRING, "", False),
        ("namespace", 3, _STRING, "", False),
        ("selfLink", 4, _STRING, "", False),
        ("uid", 5, _STRING, "", False),
        ("resourceVersion", 6, _STRING, "", False),
        ("generation", 7, _INT64, "", False),
        ("creationTimestamp", 8, _MESSAGE, "Time", False),
        ("deletionTimestamp", 9, _MESSAGE, "Time", False),
        ("deletionGracePeriodSeconds", 10, _INT64, "", False),
        ("labels", 11, _MESSAGE, "map<string,string>", True),
        ("annotations", 12, _MESSAGE, "map<string,string>", True),
        ("ownerReferences", 13, _MESSAGE, "OwnerReference", True),
        ("finalizers", 14, _STRING, "", True),
        ("managedFields", 17, _MESSAGE, "ManagedFieldsEntry", True),
    ],
    "ConfigMap": [
        ("metadata", 1, _MESSAGE, "ObjectMeta", False),
        ("data", 2, _MESSAGE, "map<string,string>", True),
        ("binaryData", 3, _MESSAGE, "map<string,bytes>", True),
        ("immutable", 4, _BOOL, "", False),
    ],
    "Secret": [
        ("metadata", 1, _MESSAGE, "ObjectMeta", False),
        ("data", 2, _MESSAGE, "map<string,bytes>", True),
        ("type", 3, _STRING, "", False),
        ("stringData", 4, _MESSAGE, "map<string,string>", True),
        ("immutable", 5, _BOOL, "", False),
    ],
    "NamespaceSpec": [("finalizers", 1, _STRING, "", True)],
    "NamespaceCondition": [
        ("type", 1, _STRING, "", False),
        ("status", 2, _STRING, "", False),
        ("lastTransitionTime", 4, _MESSAGE, "Time", False),
        ("reason", 5, _STRING, "", False),
        ("message", 6, _STRING, "", False),
    ],
    "NamespaceStatus": [
        ("phase", 1, _STRING, "", False),
        ("conditions", 2, _MESSAGE, "NamespaceCondition", True),
    ],
    "Namespace": [
        ("metadata", 1, _MESSAGE, "ObjectMeta", False),
        ("spec", 2, _MESSAGE, "NamespaceSpec", False),
        ("status", 3, _MESSAGE, "NamespaceStatus", False),
    ],
}
#: (apiVersion, kind) of the bodies understood -> message name
PROTOBUF_KINDS: Final[dict[tuple[str, str], str]] = {
    ("v1", "ConfigMap"): "ConfigMap",
    ("v1", "Secret"): "Secret",
    ("v1", "Namespace"): "Namespace",
}
#: non-pointer numbers Go leaves out of JSON at zero (pointers are kept whenever present)
_OMIT_ZERO: Final = frozenset({("ObjectMeta", "generation"), ("Time", "seconds"), ("Time", "nanos")})
_SCALARS: Final = {"string": _STRING, "bytes": _BYTES}


def _file() -> descriptor_pb2.FileDescriptorProto:
    proto = descriptor_pb2.FileDescriptorProto(name="devcluster/k8s.proto", package=_PACKAGE, syntax="proto2")
    for name, fields in _SCHEMA.items():
        message = proto.message_type.add(name=name)
        for field_name, number, field_type, type_name, repeated in fields:
            field = message.field.add(
                name=field_name,
                json_name=field_name,
                number=number,
                type=field_type,
                label=_T.LABEL_REPEATED if repeated else _T.LABEL_OPTIONAL,
            )
            if type_name.startswith("map<"):
                key, value = type_name[4:-1].split(",")
                entry = message.nested_type.add(name=f"{field_name[0].upper()}{field_name[1:]}Entry")
                entry.options.map_entry = True
                entry.field.add(name="key", number=1, type=_SCALARS[key], label=_T.LABEL_OPTIONAL)
                entry.field.add(name="value", number=2, type=_SCALARS[value], label=_T.LABEL_OPTIONAL)
                field.type_name = f".{_PACKAGE}.{name}.{entry.name}"
            elif type_name:
                field.type_name = f".{_PACKAGE}.{type_name}"
    return proto


def _classes() -> dict[str, Callable[[], Message]]:
    pool = descriptor_pool.DescriptorPool()
    pool.Add(_file())
    return {
        name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{_PACKAGE}.{name}"))
        for name in _SCHEMA
    }


_CLASSES: Final = _classes()


def _time(message: Message) -> str | None:
    seconds = int(getattr(message, "seconds", 0))
    if not seconds and not int(getattr(message, "nanos", 0)):
        return None
    return format_time(datetime.fromtimestamp(seconds, tz=UTC))


def _scalar(value: Any) -> Any:
    return base64.b64encode(value).decode("ascii") if isinstance(value, bytes) else value


def _json(message: Message) -> dict[str, Any]:
    """``message`` as Kubernetes' JSON (see the module's invariants)."""
    owner = message.DESCRIPTOR.name
    out: dict[str, Any] = {}
    for field, value in message.ListFields():
        name = field.name
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            out[name] = {key: _scalar(item) for key, item in value.items()}
        elif field.is_repeated:
            out[name] = [_value(item) for item in value]
        else:
            converted = _value(value)
            zero_number = converted == 0 and not isinstance(converted, bool)
            if converted is None or converted == "" or (zero_number and (owner, name) in _OMIT_ZERO):
                continue
            out[name] = converted
    return out


def _value(value: Any) -> Any:
    if not isinstance(value, Message):
        return _scalar(value)
    kind = value.DESCRIPTOR.name
    if kind == "Time":
        return _time(value)
    if kind == "FieldsV1":
        raw = bytes(getattr(value, "Raw", b""))
        try:
            return orjson.loads(raw) if raw else {}
        except orjson.JSONDecodeError as exc:
            raise bad_request(f"managedFields: invalid fieldsV1: {exc}") from exc
    return _json(value)


def decode_protobuf(body: bytes) -> dict[str, Any]:
    """The object a ``application/vnd.kubernetes.protobuf`` body holds, as Kubernetes' JSON."""
    if not body.startswith(MAGIC):
        raise bad_request(
            "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]"
        )
    envelope: Any = _CLASSES["Unknown"]()  # a generated message: its fields are attributes
    try:
        envelope.ParseFromString(body[len(MAGIC) :])
    except DecodeError as exc:
        raise bad_request(f"invalid protobuf envelope: {exc}") from exc
    type_meta = envelope.typeMeta
    api_version, kind = str(type_meta.apiVersion), str(type_meta.kind)
    name = PROTOBUF_KINDS.get((api_version, kind))
    if name is None or envelope.contentEncoding:
        raise unsupported_media_type(_OTHER_TYPES)
    message = _CLASSES[name]()
    try:
        message.ParseFromString(bytes(envelope.raw))
    except DecodeError as exc:
        raise bad_request(f"invalid protobuf {kind}: {exc}") from exc
    return {"apiVersion": api_version, "kind": kind, **_json(message)}
