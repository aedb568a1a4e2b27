"""``kueue-bridge preflight``: the command (``cli``); the checks live in ``shared.preflight``.

They are in ``shared`` because every component runs the part that concerns it at start-up.

Modules:

* ``cli`` -- ``kueue-bridge preflight --config FILE [--kubeconfig F] [--all-clusters] [-o
  text|json]``
"""

__all__: list[str] = []
