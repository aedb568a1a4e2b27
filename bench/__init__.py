"""Benchmarks: each module with a ``__main__`` block prints measured figures, ``python -m bench.<name>``.

Run from the repository root (``make bench`` runs each once, small: :mod:`bench.run_all`). Each
benchmark's docstring says what it measures, how, its target and the command with its defaults.

One module per benchmark; a mode too large for its module has one beside it (``--real``,
``--kueue``, ``--floor``). ``run_all`` is ``make bench``.

:mod:`bench.harness` is what several benchmarks share: clusters, our components as processes, CPU
readings, load, metrics scrapes, profilers and the webhook served for load. A benchmark imports the
harness and, for the few that extend another's mode, that benchmark; the harness imports no
benchmark, and nothing outside ``bench`` imports it. The dev cluster, the dev runner and the
real-cluster test harness are used through their packages' public API only (``devrun``,
``testkit``, ``devcluster.standin``, ``devcluster.apiserver``, ``devcluster.server``); import
contracts in pyproject.toml enforce all of it. The admission fuzz run is a test, not a benchmark:
``tests/fuzz``.

Modules:

* ``cache_memory`` -- the reconciler's memory per Job with its Workload, counted with tracemalloc
* ``client`` -- benchmark of the Kubernetes client runtime (``shared.kube``)
* ``client_hotpath`` -- CPU of the client runtime's per-request and per-event hot paths, one at a
  time, in microseconds
* ``devcluster_api`` -- benchmark of the devcluster API server: creates/s, gets/s and watch fan-out
  events/s
* ``floor_reconciler`` -- ``kueue-bridge reconciler`` with its decisions taken out: the floor of
  ``bench.reconciler_throughput``
* ``io_floor`` -- the I/O floor of a Python controller: client CPU per API request and per watch
  event, on a real kube-apiserver
* ``multikueue_dispatch`` -- benchmark of kueue-bridge's MultiKueue: dispatch latency and status
  mirroring across two workers
* ``multikueue_measure`` -- what a MultiKueue benchmark round submits, watches and prints, whatever
  the clusters are
* ``multikueue_real`` -- ``python -m bench.multikueue_dispatch --real``: the MultiKueue benchmark on
  three real API servers, and its chaos
* ``reconcile_passes`` -- the reconcile logic alone: CPU of one batch Job's whole life through
  ``JobReconciler``, in process
* ``reconciler_cpu`` -- CPU per job of the reconciler (and per admission of the webhook) over whole
  job lifecycles
* ``reconciler_cpu_real`` -- ``python -m bench.reconciler_cpu --real``: whole job lives on a real
  kube-apiserver next to real Kueue
* ``reconciler_throughput`` -- benchmark of the job reconciler on a devcluster: Workload creation
  throughput and start latency
* ``run_all`` -- ``make bench``: every benchmark under ``bench/`` once, with small quick parameters,
  figures printed
* ``scale`` -- ``--real [--anchor kueue]``: Jobs created at a steady rate over many namespaces on the
  kit's API server; CPU per job, admission -> unsuspend, webhook times and RSS at checkpoints
* ``scale_restarts`` -- ``--real``: failover, kube-apiserver restart and cold start with 10,000
  queued Jobs on the kit's API server; times to act again, LISTs per informer, duplicates and orphans
* ``webhook_latency`` -- admission throughput and latency over TLS on loopback, against a
  bare-uvicorn ceiling
* ``webhook_real`` -- the webhook alone on a real kube-apiserver: what an admission costs it, and
  what the API server waits
* ``webhook_vs_kueue`` -- ``python -m bench.webhook_latency --kueue``: closed-loop admission
  throughput, ours against real Kueue's Go webhook
* ``webhook_wrk`` -- CPU per admission of the webhook alone under wrk, no cluster: the admissions of
  a real job life
* ``harness/`` -- what the benchmarks share, one concept per module; it never imports a benchmark
"""
