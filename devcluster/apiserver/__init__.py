"""The embedded Kubernetes API server."""

__all__: list[str] = []
