"""MultiKueue sync worker: dispatches Workloads to worker clusters and mirrors jobs (not built yet)."""

__all__: list[str] = []
