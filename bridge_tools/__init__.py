"""Operator tools: ``kueue-bridge explain``, ``adapter test``, ``preflight`` and ``manifests``.

These are commands a platform engineer runs by hand, not a deployed component: they read the
cluster (``explain``, ``preflight``: reads, SubjectAccessReviews and dry-run creates that store
nothing) or nothing at all (``adapter test``, ``manifests``) and never write. They reuse ``shared``
for everything that decides behaviour -- the configuration loader, the adapter registry, the
Workload builder and its naming, PodSetInfo merging, quantities -- so what they print is what the
webhook and the reconciler would do, not a second opinion.

Import contract (``pyproject.toml``): this package may import ``shared`` only, never ``webhook``,
``reconciler``, ``multikueue``, ``devcluster`` or ``devrun``; the components and the devcluster
never import it. The dev runner's ``make dev`` table (``devrun``) imports
:mod:`bridge_tools.explain` for its WHY column.

Modules: ``kinds`` (``KIND/NAME`` arguments to configured kinds), ``cluster_view`` (cached,
read-only cluster reads), ``quota`` (ClusterQueue usage against a Workload's request), ``cohort``
(Kueue's available quota in a cohort tree), ``verdict`` (the explanation's data and its text/JSON
rendering), ``explain_queues`` (LocalQueue -> ClusterQueue -> admission checks),
``explain_multikueue`` (worker copies and where a job runs, from the manager only), ``explain_evidence`` (Workload, eviction and event evidence;
why a job has no Workload), ``queue_position`` (Kueue's visibility API, else Kueue's order
estimated), ``explain_preflight`` (the preflight findings about one job), ``explain`` (the chain
from a job to its verdict), ``explain_cli``, ``adapter_dry_run`` and ``adapter_cli``;
``preflight_cli`` (the checks themselves live in ``shared.preflight``: the components run them at
start-up); ``manifests_render`` and ``manifests_cli`` (deploy manifests for a configuration) and
``release_bundle`` (``make release-manifests``: deploy/ resolved into one YAML per flavour).
"""
