"""Async Kubernetes client runtime: client, discovery, watch, informer, work queue, leader election."""

__all__: list[str] = []
