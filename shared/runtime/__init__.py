"""Process start-up: the top floor of ``shared``, what turns a component's code into a process.

A controller process (the reconciler, the MultiKueue controller, the AppWrapper controller) is one
:class:`~shared.runtime.manager.ControllerManager`, as a controller-runtime process is one
``Manager``: it owns the client, the cache of each leadership term, the event recorder, the probes
and metrics, leader election and the controllers. The webhook shares the argument parsing and the
event loop. Nothing below this floor imports it (an import contract), and the controller
processes go through ``manager`` rather than wiring ``leading`` and ``probes`` themselves.

Modules:

* ``cli_args`` -- command-line parsing shared by the ``kueue-bridge`` commands;
* ``manager`` -- ``ControllerManager``, one per controller process;
* ``leading`` -- campaign for the Lease, run the manager while leading, drain on stop;
* ``probes`` -- health, readiness and metrics endpoints;
* ``eventloop`` -- how a long-running process runs its event loop (uvloop, a cache collector).
"""

__all__: list[str] = []
