"""``kueue-bridge preflight``: the command (``cli``); the checks live in ``shared.preflight``.

They are in ``shared`` because every component runs the part that concerns it at start-up.
"""

__all__: list[str] = []
