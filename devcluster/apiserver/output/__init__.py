"""Answers beyond plain JSON: server-side printing (``meta.k8s.io`` Tables, kube's printers for
built-in kinds, CRD columns by JSONPath) and metadata-only answers.
"""

__all__: list[str] = []
