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

Modules:

* ``__main__`` -- ``kueue-bridge appwrapper --config FILE [--kubeconfig FILE]``: AppWrapper's
  framework controller
* ``cluster`` -- the phase machine's ports on ``shared.kube``: the API server is the only thing
  spoken to
* ``components`` -- an AppWrapper's components: their resolved pod sets, and the objects created for
  them
* ``conditions`` -- AppWrapper's own condition rules, on top of ``shared.kube.conditions``
  (``meta.SetStatusCondition``)
* ``faulttolerance`` -- AppWrapper's fault-tolerance knobs: operator defaults, per-object
  annotations, their limits
* ``manager`` -- wiring the phase machine into a running controller: informers, one work queue,
  workers
* ``model`` -- AppWrapper's API vocabulary (``api/v1beta2/appwrapper_types.go``), spelled exactly as
  the operator
* ``phases`` -- the AppWrapper phase machine: AppWrapper's framework controller ``Reconcile``, step
  for step
* ``ports`` -- what the phase machine needs from the outside world, as protocols
* ``resources`` -- creating and deleting an AppWrapper's components (AppWrapper's
  ``resource_management.go``)
* ``state`` -- one reconcile's working copy of an AppWrapper, and how its status reaches the API
  server
* ``summary`` -- what is deployed and how its pods are doing: AppWrapper's
  ``getComponentStatus``/``getPodStatus``
"""
