"""Embedded Kubernetes API server for local runs and tests. Never used in production."""

__all__: list[str] = []
