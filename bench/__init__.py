"""Benchmarks: each module with a ``__main__`` block prints measured figures, ``python -m bench.<name>``.

Run from the repository root (``make bench`` runs each once, small: :mod:`bench.run_all`). Each
benchmark's docstring says what it measures, how, its target and the command with its defaults.

Benchmarks (one module each; a mode too large for its module has one beside it):

* ``client`` -- the Kubernetes client runtime (``shared.kube``): requests/s, watch events/s, memory.
* ``client_hotpath`` -- CPU of the client runtime's per-request and per-event hot paths.
* ``devcluster_api`` -- the devcluster API server: creates/s, gets/s, watch fan-out events/s.
* ``webhook_latency`` -- admission throughput and latency against a bare-uvicorn ceiling;
  ``--kueue``: ours against real Kueue's Go webhook under wrk (``webhook_vs_kueue``).
* ``webhook_wrk`` -- CPU per admission of the webhook alone under wrk, no cluster.
* ``webhook_real`` -- the webhook alone on a real kube-apiserver, one kind of traffic at a time.
* ``reconciler_throughput`` -- Workload creation throughput against a ceiling, and start latency;
  ``--floor`` runs it against ``floor_reconciler`` (the process without its reconcile logic).
* ``reconciler_cpu`` -- CPU per job of the reconciler and per admission of the webhook over whole
  job lifecycles; ``--real``: on a real kube-apiserver next to real Kueue (``reconciler_cpu_real``).
* ``reconcile_passes`` -- the reconcile logic alone, in process.
* ``io_floor`` -- the I/O floor of a Python controller: client CPU per request and watch event.
* ``multikueue_dispatch`` -- MultiKueue dispatch latency and status mirroring across two workers;
  ``--real``: on three real API servers, with chaos (``multikueue_real``); what a round submits,
  watches and prints is ``multikueue_measure``.

:mod:`bench.harness` is what several benchmarks share: clusters, our components as processes, CPU
readings, load, metrics scrapes, profilers and the webhook served for load. A benchmark imports the
harness and, for the few that extend another's mode, that benchmark; the harness imports no
benchmark, and nothing outside ``bench`` imports it. The dev cluster and the dev runner are used
through their packages' public API only (``devrun``, ``devcluster.standin``, ``devcluster.apiserver``,
``devcluster.server``); import contracts in pyproject.toml enforce all of it. The admission fuzz run
is a test, not a benchmark: ``tests/fuzz``.
"""
