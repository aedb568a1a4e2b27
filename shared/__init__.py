"""The common model package of kueue-bridge.

Everything the webhook, the reconciler and the MultiKueue worker agree on lives here: Kueue and
Kubernetes models, configuration, framework adapters, Kueue's deterministic helpers (naming,
PodSetInfo, equivalence) and the async Kubernetes client runtime (``shared.kube``).

Invariant: ``shared`` imports none of the component packages; they import it.
"""

__all__: list[str] = []
