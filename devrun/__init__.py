"""``kueue-bridge dev``: the whole system on a devcluster."""

__all__: list[str] = []
