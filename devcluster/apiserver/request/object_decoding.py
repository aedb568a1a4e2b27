"""Decoding a create or update body into an object, with kube-apiserver's 400 texts.

kube-apiserver decodes a body into the kind's Go struct before anything validates it, so a body of
the wrong *shape* is a 400 BadRequest, never a 422, and its message is Go's:

* not JSON at all: ``the object provided is unrecognized (must be of type ConfigMap): couldn't get
  version/kind; json parse error: invalid character 'n' looking for beginning of object key string
  ({not json)``, the body summarised as apimachinery's ``summarizeData`` does (30 bytes; text when it
  starts with ``{``, else hex);
* JSON but not an object: ``... json parse error: json: cannot unmarshal array into Go value of type
  struct { APIVersion string "json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" }``;
* ``null`` is an empty object for a built-in kind (then 422 for its missing name); a custom resource
  needs ``kind`` in the body: ``Object 'Kind' is missing in '<body>'``;
* ``metadata`` fields of the wrong JSON type: ``ConfigMap in version "v1" cannot be handled as a
  ConfigMap: json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type
  string`` (a custom resource's path has no ``metadata.`` prefix). A JSON ``null`` map value or list
  item decodes as ``""``, as Go's does.

Only ``metadata`` is type-checked here (the kind's own fields are checked by its validation, or by
the structural schema of a custom resource).
"""

from __future__ import annotations

import json
from typing import Any, Final

from devcluster.apiserver.errors import StatusError, bad_request

__all__ = ["check_metadata_types", "decode_object", "parse_error", "summarize", "unrecognized"]

_TYPE_STRUCT = (
    'struct { APIVersion string "json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" }'
)
#: ObjectMeta's JSON fields and their Go types ("" for fields the devcluster leaves unchecked)
_META_TYPES = {
    "name": "string",
    "generateName": "string",
    "namespace": "string",
    "selfLink": "string",
    "uid": "types.UID",
    "resourceVersion": "string",
    "generation": "int64",
    "deletionGracePeriodSeconds": "int64",
    "labels": "map[string]string",
    "annotations": "map[string]string",
    "finalizers": "[]string",
    "ownerReferences": "[]v1.OwnerReference",
}
_OWNER_REFERENCE_TYPES = {
    "apiVersion": "string",
    "kind": "string",
    "name": "string",
    "uid": "types.UID",
    "controller": "bool",
    "blockOwnerDeletion": "bool",
}


def summarize(body: bytes, limit: int = 30) -> str:
    """apimachinery's ``summarizeData``: how a body is quoted in a decoding error."""
    if not body:
        return "<empty>"
    if body[:1] == b"{":
        return body[:limit].decode("utf-8", errors="replace") + (" ..." if len(body) > limit else "")
    return body[:limit].hex() + (" ..." if len(body) > limit else "")


def _quote_char(char: str) -> str:
    """Go's ``quoteChar`` for a byte the JSON scanner refused."""
    if char == "'":
        return "'\\''"
    if char == '"':
        return "'\"'"
    escapes = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}
    if char in escapes:
        return f"'{escapes[char]}'"
    if ord(char) < 0x20 or ord(char) == 0x7F:
        return f"'\\x{ord(char):02x}'"
    if 0x80 <= ord(char) < 0xA0:
        return f"'\\u{ord(char):04x}'"
    return f"'{char}'"


def _container_at(text: str, position: int) -> str:
    """Whether ``position`` is inside an object or an array (for "after ..." texts)."""
    stack: list[str] = []
    in_string = escaped = False
    for char in text[:position]:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            stack.append(char)
        elif char in "]}" and stack:
            stack.pop()
    return stack[-1] if stack else ""


def parse_error(body: bytes) -> str | None:
    """Go's ``encoding/json`` syntax error for ``body``, or None if it is valid JSON."""
    text = body.decode("latin-1")
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        position, message = exc.pos, exc.msg
    else:
        return None
    if position >= len(text) or message.startswith("Unterminated string"):
        return "unexpected end of JSON input"
    char = _quote_char(text[position])
    if message == "Expecting property name enclosed in double quotes":
        return f"invalid character {char} looking for beginning of object key string"
    if message == "Expecting ':' delimiter":
        return f"invalid character {char} after object key"
    if message == "Expecting ',' delimiter":
        inside = _container_at(text, position)
        where = "object key:value pair" if inside == "{" else "array element"
        return f"invalid character {char} after {where}"
    if message == "Extra data":
        return f"invalid character {char} after top-level value"
    if message.startswith("Invalid control character"):
        return f"invalid character {char} in string literal"
    if message.startswith("Invalid \\escape"):
        return f"invalid character {char} in string escape code"
    return f"invalid character {char} looking for beginning of value"


def unrecognized(kind: str, why: str, body: bytes) -> StatusError:
    return bad_request(
        f"the object provided is unrecognized (must be of type {kind}): {why} ({summarize(body)})"
    )


#: encoding/json's names of a JSON value's kind (``bool`` before its subclass ``int``); else "object"
_JSON_KINDS: Final[tuple[tuple[type, str], ...]] = (
    (bool, "bool"),
    (int, "number"),
    (float, "number"),
    (str, "string"),
    (list, "array"),
)


def _json_kind(value: Any) -> str:
    return next((name for kind, name in _JSON_KINDS if isinstance(value, kind)), "object")


def _mismatch(value: Any, go_type: str) -> str | None:
    """The ``UnmarshalTypeError`` value text if ``value`` cannot decode into ``go_type``."""
    if value is None:
        return None
    if go_type in ("string", "types.UID"):
        return None if isinstance(value, str) else _json_kind(value)
    if go_type == "bool":
        return None if isinstance(value, bool) else _json_kind(value)
    if go_type == "int64":
        if isinstance(value, bool) or not isinstance(value, int | float):
            return _json_kind(value)
        return None if isinstance(value, int) or value.is_integer() else f"number {value}"
    if go_type.startswith("map["):
        return None if isinstance(value, dict) else _json_kind(value)
    return None if isinstance(value, list) else _json_kind(value)


def check_metadata_types(meta: Any, *, kind: str, version: str, builtin: bool) -> None:
    """Raise the 400 Go's decoder gives for ``metadata`` fields of the wrong type."""
    prefix = f'{kind} in version "{version}" cannot be handled as a {kind}: json: cannot unmarshal'
    path = "metadata." if builtin else ""

    def fail(value_kind: str, struct: str, field: str, go_type: str) -> StatusError:
        return bad_request(
            f"{prefix} {value_kind} into Go struct field {struct}.{path}{field} of type {go_type}"
        )

    if meta is None:
        return
    if not isinstance(meta, dict):
        where = f"Go struct field {kind}.metadata" if builtin else "Go value"
        raise bad_request(f"{prefix} {_json_kind(meta)} into {where} of type v1.ObjectMeta")
    for field, go_type in _META_TYPES.items():
        value = meta.get(field)
        wrong = _mismatch(value, go_type)
        if wrong is not None:
            raise fail(wrong, "ObjectMeta", field, go_type)
        if go_type == "map[string]string" and isinstance(value, dict):
            for item in value.values():
                if (wrong := _mismatch(item, "string")) is not None:
                    raise fail(wrong, "ObjectMeta", field, "string")
        elif go_type == "[]string" and isinstance(value, list):
            for item in value:
                if (wrong := _mismatch(item, "string")) is not None:
                    raise fail(wrong, "ObjectMeta", field, "string")
        elif go_type == "[]v1.OwnerReference" and isinstance(value, list):
            for ref in value:
                if ref is not None and not isinstance(ref, dict):
                    raise fail(_json_kind(ref), "ObjectMeta", field, "v1.OwnerReference")
                for ref_field, ref_type in _OWNER_REFERENCE_TYPES.items():
                    wrong = _mismatch((ref or {}).get(ref_field), ref_type)
                    if wrong is not None:
                        raise fail(wrong, "OwnerReference", f"{field}.{ref_field}", ref_type)
    for field in ("labels", "annotations"):
        if isinstance(meta.get(field), dict):
            meta[field] = {k: "" if v is None else v for k, v in meta[field].items()}
    if isinstance(meta.get("finalizers"), list):
        meta["finalizers"] = ["" if v is None else v for v in meta["finalizers"]]


def decode_object(parsed: Any, raw: bytes, *, kind: str, version: str, builtin: bool) -> Any:
    """The object a parsed create/update body decodes to, or the 400 kube answers (the body was
    valid JSON or YAML: see :func:`parse_error` for what was not)."""
    if parsed is None and builtin:
        parsed = {}
    if not isinstance(parsed, dict):
        if parsed is None:
            raise unrecognized(kind, f"Object 'Kind' is missing in '{raw.decode('utf-8', 'replace')}'", raw)
        why = f"json: cannot unmarshal {_json_kind(parsed)} into Go value of type {_TYPE_STRUCT}"
        raise unrecognized(kind, f"couldn't get version/kind; json parse error: {why}", raw)
    if not builtin and not parsed.get("kind"):
        raise unrecognized(kind, f"Object 'Kind' is missing in '{raw.decode('utf-8', 'replace')}'", raw)
    check_metadata_types(parsed.get("metadata"), kind=kind, version=version, builtin=builtin)
    return parsed
