"""Unit tests of Kueue's deterministic helpers (naming, job metadata, PodSetInfo, equivalence, builder)."""
