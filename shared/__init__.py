"""The common package of kueue-bridge: everything two components need, written once.

The webhook, the reconciler, the MultiKueue controller and the AppWrapper controller (and the
operator tools and the devcluster) share code only through this package: Kueue's configuration,
the job framework adapters (built-in and declarative), Kueue's job and Workload rules (naming,
PodSetInfo, equivalence, the Workload builder), the Kueue and Kubernetes models, process start-up
(``manager``: one ``ControllerManager`` per controller process) and the async Kubernetes client
runtime (``shared.kube``). The floors it is built in are in docs/architecture.md and held by the
import contracts of ``pyproject.toml``.

Invariant: ``shared`` imports none of the component packages; they import it.
"""

__all__: list[str] = []
