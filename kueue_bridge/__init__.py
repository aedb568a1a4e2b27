"""The ``kueue-bridge`` console script: dispatches ``kueue-bridge <component> ...`` to a component."""

__all__: list[str] = []
