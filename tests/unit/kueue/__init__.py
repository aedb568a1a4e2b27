"""Unit tests of Kueue's rules (``shared.kueue``, and the Workload builder): naming, job metadata, PodSetInfo, equivalence, status applies."""
