"""Minimal OpenAPI documents, enough for clients that fetch them before they act.

kubectl downloads ``/openapi/v3`` (and falls back to ``/openapi/v2``) to decide whether the server
validates fields and to look up patch strategies. The devcluster publishes empty documents: kubectl
then treats every kind as schemaless, so ``kubectl apply`` computes its patches from its compiled-in
types and the devcluster's own validation (and the CRD structural schemas) do the checking.
"""

from __future__ import annotations

from typing import Any

__all__ = ["openapi_v2", "openapi_v3"]


def openapi_v2() -> dict[str, Any]:
    return {
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": "v1.32.0"},
        "paths": {},
        "definitions": {},
    }


def openapi_v3(path: list[str]) -> dict[str, Any] | None:
    if not path:
        return {"paths": {}}
    return None
