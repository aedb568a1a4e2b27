"""Where objects live: the in-memory store (one table per resource, a global revision, bounded
watch history), its optional SQLite write-through, watch streams and list pagination.
"""

__all__: list[str] = []
