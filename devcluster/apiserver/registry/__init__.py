"""Which resources exist and how they are addressed: the resource registry and discovery documents,
the built-in kinds, how a request sees its resource (served version, codec, Events), OpenAPI.
"""

__all__: list[str] = []
