"""CustomResourceDefinitions: served resource types from CRD objects, structural schemas (pruning,
defaulting, validation) and validation ratcheting.
"""

__all__: list[str] = []
