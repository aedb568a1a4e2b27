"""List continue tokens, in the shape kube-apiserver uses (base64 JSON ``{v, rv, start}``).

A token names the key after which the next page starts and the revision of the first page. Pages
are read at that revision (the store rebuilds it from the table's history), and a
token whose revision has fallen out of the resource's history window is "compacted": 410 Expired
with the real message and a fresh token to continue inconsistently, as etcd-backed servers answer.
"""

from __future__ import annotations

import base64
import string
from typing import Any

import orjson

from devcluster.apiserver.errors import StatusError, bad_request, expired
from devcluster.apiserver.request.object_decoding import parse_error

__all__ = ["decode_continue", "encode_continue", "expired_continue", "items_key"]

_CONTINUE_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. You can start a new list "
    "without the continue parameter, or use the continue token in this response to retrieve the remainder of the "
    "results. Continuing with the provided token results in an inconsistent list - objects that were created, "
    "modified, or deleted between the time the first chunk was returned and now may show up in the list."
)


def items_key(obj: dict[str, Any]) -> tuple[str, str]:
    meta = obj["metadata"]
    return (meta.get("namespace", ""), meta["name"])


def encode_continue(key: tuple[str, str], revision: int) -> str:
    start = f"{key[0]}/{key[1]}\x00" if key[0] else f"{key[1]}\x00"
    raw = orjson.dumps({"v": "meta.k8s.io/v1", "rv": revision, "start": start})
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


_BASE64_URL = frozenset(string.ascii_letters + string.digits + "-_")


def _invalid_token(why: str) -> StatusError:
    return bad_request(f"invalid continue token: continue key is not valid: {why}")


def decode_continue(token: str) -> tuple[tuple[str, str], int]:
    """(key after which to start, revision of the first page); kube's 400 BadRequest when malformed
    (``illegal base64 data at input byte N`` for a token that is not unpadded base64url)."""
    bad_byte = next((index for index, char in enumerate(token) if char not in _BASE64_URL), None)
    if bad_byte is None and len(token) % 4 == 1:
        bad_byte = len(token) - 1
    if bad_byte is not None:
        raise _invalid_token(f"illegal base64 data at input byte {bad_byte}")
    raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    why = parse_error(raw)
    if why is not None:
        raise _invalid_token(why)
    try:
        data = orjson.loads(raw)
        start = data["start"].rstrip("\x00")
        revision = int(data["rv"])
        if data.get("v") != "meta.k8s.io/v1":
            raise ValueError(f"unsupported encoding version: {data.get('v')}")
    except (ValueError, KeyError, TypeError, AttributeError, orjson.JSONDecodeError) as exc:
        raise _invalid_token(str(exc)) from exc
    namespace, _, name = start.rpartition("/")
    return (namespace, name), revision


def expired_continue(start: tuple[str, str], current_revision: int) -> StatusError:
    error = expired(_CONTINUE_EXPIRED)
    error.metadata = {"continue": encode_continue(start, current_revision)}
    return error
