"""Operator tools: ``kueue-bridge explain``, ``adapter test``, ``preflight`` and ``manifests``.

These are commands a platform engineer runs by hand, not a deployed component: they read the
cluster (``explain``, ``preflight``: reads, SubjectAccessReviews and dry-run creates that store
nothing) or nothing at all (``adapter test``, ``manifests``) and never write. They reuse ``shared``
for everything that decides behaviour -- the configuration loader, the adapter registry, the
Workload builder and its naming, PodSetInfo merging, quantities -- so what they print is what the
webhook and the reconciler would do, not a second opinion.

Import contracts (``pyproject.toml``): this package may import ``shared`` only, never ``webhook``,
``reconciler``, ``multikueue``, ``devcluster`` or ``devrun``; the components and the devcluster
never import it; and the four tools never import each other. The dev runner's ``make dev`` table
(``devrun``) uses :mod:`bridge_tools.explain` for its WHY column and ``kueue-bridge dev`` renders
Kueue's configuration with :mod:`bridge_tools.manifests.render`.

One subpackage per command, its entry point ``cli``:

* ``explain/`` -- ``kueue-bridge explain`` (its modules are listed in its ``__init__``);
* ``adapter/`` -- ``kueue-bridge adapter test``: ``dry_run`` (what would be done with one object)
  and ``cli``;
* ``preflight/`` -- ``kueue-bridge preflight``: only ``cli``; the checks live in ``shared.preflight``
  because the components run them at start-up too;
* ``manifests/`` -- ``kueue-bridge manifests``: ``render`` (deploy manifests for a configuration),
  ``cli``, and ``release_bundle`` (``make release-manifests``: deploy/ resolved into one YAML per
  flavour).

Beside them, what two tools share: ``kinds`` (``KIND/NAME`` and ``--kind`` arguments to configured
kinds: explain and adapter test), ``quota`` (ClusterQueue usage against a Workload's request:
explain's queue chain and adapter test's fit) and ``cohort`` (Kueue's available quota in a cohort
tree, for ``quota``). And one documentation tool: ``config_reference`` (``python -m
bridge_tools.config_reference``: the configuration reference of ``docs/configuration.md``, generated
from the configuration model).
"""
