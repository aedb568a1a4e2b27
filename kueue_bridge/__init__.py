"""The ``kueue-bridge`` console script: dispatches ``kueue-bridge <component> ...`` to a component.

Modules:

* ``cli`` -- ``kueue-bridge <component> [args...]``
"""

__all__: list[str] = []
