"""Reading a request: bodies and media types (JSON, protobuf), query options, decoding a body into
an object, and PATCH bodies.
"""

__all__: list[str] = []
