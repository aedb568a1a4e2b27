"""Request bodies: media types, the 3 MiB limit, DeleteOptions (query parameters: :mod:`.query_options`).

kube-apiserver reads at most ``MaxRequestBodyBytes`` (3 MiB) and answers 413
``RequestEntityTooLarge`` past it, decodes JSON and YAML bodies, and protobuf ones of the kinds
``devcluster.apiserver.request.protobuf`` declares (415 ``UnsupportedMediaType`` otherwise) and rejects
undecodable bodies with 400 ``BadRequest``; a rejected body never reaches a
verb, so it cannot cause a partial write.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import orjson
import yaml

from devcluster.apiserver.errors import StatusError, bad_request, unsupported_media_type
from devcluster.apiserver.request.protobuf import MEDIA_TYPE as PROTOBUF
from devcluster.apiserver.request.protobuf import decode_protobuf
from shared.asgi_body import BodyTooLarge, ClientDisconnected, declared_length, read_limited_body

__all__ = [
    "BODY_TYPES",
    "Request",
    "decode_body",
    "delete_options",
    "drain",
    "parse_body",
    "read_body",
]

Receive = Callable[[], Awaitable[dict[str, Any]]]

BODY_TYPES = ["application/json", "application/yaml", "application/vnd.kubernetes.protobuf"]


@dataclass(slots=True, eq=False)
class Request:
    method: str
    path: str
    params: dict[str, str]
    content_type: str
    body: bytes
    #: the Accept header (server-side printing: see devcluster.apiserver.output.tables)
    accept: str = ""


def parse_body(body: bytes, *, yaml_ok: bool) -> Any:
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        if yaml_ok:
            try:
                return yaml.safe_load(body)
            except yaml.YAMLError as yaml_exc:
                raise bad_request(f"error decoding YAML: {yaml_exc}") from yaml_exc
        raise bad_request(f"couldn't get version/kind; json parse error: {exc}") from exc


def decode_body(request: Request) -> Any:
    content_type = request.content_type
    if content_type in {"", "application/json", "*/*"}:
        return parse_body(request.body, yaml_ok=False)
    if content_type in {"application/yaml", "application/x-yaml", "text/yaml"}:
        return parse_body(request.body, yaml_ok=True)
    if (
        content_type == PROTOBUF
    ):  # kubectl create configmap|secret|namespace (devcluster.apiserver.request.protobuf)
        return decode_protobuf(request.body)
    raise unsupported_media_type(BODY_TYPES)


def delete_options(request: Request) -> dict[str, Any]:
    options: dict[str, Any] = {}
    if request.body.strip():
        parsed = parse_body(request.body, yaml_ok=request.content_type != "application/json")
        if not isinstance(parsed, dict):
            raise bad_request("DeleteOptions must be an object")
        options.update(parsed)
    params = request.params
    if "propagationPolicy" in params:
        options["propagationPolicy"] = params["propagationPolicy"]
    if "orphanDependents" in params:
        options["orphanDependents"] = params["orphanDependents"].lower() not in ("false", "0")
    return options


async def read_body(headers: dict[bytes, bytes], receive: Receive, limit: int) -> bytes:
    """The request body (``shared.asgi_body``); over ``limit``: 413 after draining the rest, as
    kube-apiserver answers; a client gone before the end gets no answer anyway (400)."""
    try:
        return await read_limited_body(receive, declared=declared_length(headers.items()), limit=limit)
    except BodyTooLarge as exc:
        if not exc.complete:
            await drain(receive, None)
        raise StatusError(
            413, "RequestEntityTooLarge", f"Request entity too large: limit is {limit}"
        ) from None
    except ClientDisconnected:
        raise bad_request("the client closed the connection before sending the whole body") from None


async def drain(receive: Receive, limit: int | None) -> None:
    """Consume the rest of a request body we will not use (keeps the connection usable)."""
    while True:
        message = await receive()
        if message["type"] != "http.request" or not message.get("more_body", False):
            return
