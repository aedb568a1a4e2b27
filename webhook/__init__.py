"""Mutating and validating admission server (FastAPI + uvicorn) for every configured framework."""

__all__: list[str] = []
