"""Server-side apply and ``managedFields``: field sets, merge strategies, structured-merge-diff's
operations, the field manager, and the request side of ownership.
"""

__all__: list[str] = []
