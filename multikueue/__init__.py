"""MultiKueue controller: dispatches Workloads to worker clusters and mirrors their jobs back."""

__all__: list[str] = []
