"""``kueue-bridge appwrapper``: AppWrapper's framework controller, without the Go operator.

Kueue (through our reconciler's ``appwrapper`` adapter) decides *when* an AppWrapper may run by
flipping ``spec.suspend`` and writing ``spec.components[i].podSetInfos``; this component does what
the AppWrapper operator's framework controller (``internal/controller/appwrapper``) does with that:
create the wrapped objects with the admission data merged into their pod templates, follow them
through AppWrapper's phases, retry or fail unhealthy ones, and delete them again when the AppWrapper
is suspended, finished or deleted. Modules:

* :mod:`.model` -- AppWrapper's phases, condition types, labels, annotations, finalizer;
* :mod:`.conditions` -- ``metav1.Condition`` lists on raw dicts with ``SetStatusCondition`` semantics;
* :mod:`.faulttolerance` -- the grace periods, retry limit and their per-object annotations;
* :mod:`.components` -- parsing components, resolving pod sets, building the objects to create;
* :mod:`.summary` -- counting expected/pending/running/succeeded/failed pods and failed components;
* :mod:`.ports` -- what the phase machine needs from a cluster (the API, events), as protocols;
* :mod:`.resources` -- creating and deleting the components (AppWrapper's ``resource_management``);
* :mod:`.phases` -- the phase machine (AppWrapper's ``Reconcile``);
* :mod:`.cluster` -- the ports over ``shared.kube``; :mod:`.manager` -- informers and workers;
* :mod:`.__main__` -- the process: probes, metrics, Lease election, SIGTERM drain.
"""
