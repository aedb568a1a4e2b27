"""The Kueue stand-in and the job runner."""

__all__: list[str] = []
