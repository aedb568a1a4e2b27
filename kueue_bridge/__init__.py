"""The ``kueue-bridge`` console script: dispatches ``kueue-bridge <component> ...`` to a component.

Modules:

* ``build_info`` -- the version and commit this installation was built from (``kueue-bridge version``)
* ``cli`` -- ``kueue-bridge <component> [args...]``
"""

__all__: list[str] = []
