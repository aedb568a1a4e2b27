"""The devcluster: a Kubernetes API server and a Kueue stand-in in one Python process.

For local runs (``kueue-bridge devcluster``, ``make dev``) and tests; never used in production.
Two subpackages and the modules that put them together:

* :mod:`devcluster.apiserver` — the embedded Kubernetes API server (HTTP app, REST semantics,
  storage, watch, CRD schemas, admission webhooks, garbage collection, built-in kinds).
* :mod:`devcluster.standin` — the controllers a real cluster would run beside it: a stand-in for
  Kueue's scheduler and Workload controller, and a job runner standing in for the Job controller.
  They are clients of the API server and reach it through HTTP requests only (in-process, to
  its ASGI app, when :mod:`devcluster.server` starts them), like every component.
* :mod:`devcluster.server` hosts the API server over HTTPS (uvicorn; :mod:`devcluster.tls` writes
  its certificate and kubeconfig) and starts the stand-in add-ons its options ask for;
  :mod:`devcluster.__main__` is ``kueue-bridge devcluster``. These are the only modules that import
  both subpackages.

Import rules (``[tool.importlinter]`` in pyproject.toml): the API server never imports the stand-in
or anything outside ``shared``/``certs``; the stand-in never imports the API server; nothing here
imports the ``kueue-bridge dev`` runner (:mod:`devrun`) or the production components.

Modules:

* ``__main__`` -- ``kueue-bridge devcluster [--port N] [--kubeconfig-out FILE] [--data-dir DIR]
  ...``
* ``server`` -- running a devcluster: the asyncio server and a background-thread runner for tests
  and tools
* ``tls`` -- serving certificate and kubeconfig for a devcluster
* ``apiserver/`` -- the embedded Kubernetes API server (LOCAL RUNS AND TESTS ONLY)
* ``standin/`` -- stand-ins for the controllers a real cluster runs beside the API server (LOCAL
  RUNS ONLY)
"""

__all__: list[str] = []
