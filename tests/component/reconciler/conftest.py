"""The devcluster fixtures for the reconciler's component tests."""

from __future__ import annotations

from tests.devcluster.conftest import devcluster, devcluster_factory

__all__ = ["devcluster", "devcluster_factory"]
