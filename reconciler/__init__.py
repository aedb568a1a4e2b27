"""Job <-> Workload controller with Kueue's jobframework reconciler semantics."""

__all__: list[str] = []
