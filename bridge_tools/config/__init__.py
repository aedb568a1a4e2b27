"""``kueue-bridge config``: check a configuration file, or print the defaults (``cli``).

The configuration model and its loader live in ``shared.config``, because every component reads
its configuration through them; this package is only the operator's command over them.

Modules:

* ``cli`` -- ``kueue-bridge config``: check a configuration file, or print the defaults
"""

__all__: list[str] = []
