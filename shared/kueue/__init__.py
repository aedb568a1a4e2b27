"""Kueue's job and Workload rules, written once: what the components, the operator tools and the
devcluster's Kueue stand-in all apply, so a Workload we build is the Workload Kueue would build.

Each module names the Kueue function or package it mirrors and tags deliberate differences
``kueue-bridge:``. They hold rules, not processes: they read and return objects (raw dicts or the
models of :mod:`shared.models`) and use the Kubernetes client runtime only for its types.

Modules:

* ``jobmeta`` -- Kueue's reading of a job's metadata: queue name, prebuilt Workload, priority class;
* ``ancestry`` -- the top-most Kueue-managed ancestor of a job (``FindAncestorJobManagedByKueue``);
* ``naming`` -- Workload names as Kueue computes them;
* ``podset`` -- PodSetInfo: what admission injects into a job's pod templates, and taking it back;
* ``equivalence`` -- job <-> Workload equivalence (``EquivalentToWorkload``);
* ``workload_state`` -- reading and changing a Workload's state as ``pkg/workload`` does;
* ``workload_slicing`` -- elastic jobs through Workload slices (``pkg/workloadslicing``);
* ``admission_apply`` -- Kueue's Workload status writes as server-side applies;
* ``quantity`` -- resource quantities as Kueue computes and prints them;
* ``kueue_integrations`` -- Kueue's own job integrations and how they show in a cluster;
* ``multikueue_kubeconfig`` -- a worker cluster's kubeconfig: where it is read from, Kueue's rules.
"""

__all__: list[str] = []
