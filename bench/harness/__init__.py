"""What the benchmarks share, one concept per module; it never imports a benchmark.

* :mod:`~bench.harness.clusters` -- the devcluster as a process, the bench's client, Kueue's CRDs and
  the bench queues.
* :mod:`~bench.harness.real_cluster` -- the real kube-apiserver and Kueue of ``../shared/real-cluster``,
  wiped per round, with the API server's request counts and a timeline of the bench's jobs.
* :mod:`~bench.harness.components` -- kueue-bridge's webhook and reconciler as child processes,
  configured and registered as deployed.
* :mod:`~bench.harness.replicas` -- reconciler replicas with Lease leader election, and a
  kube-apiserver restart with etcd kept.
* :mod:`~bench.harness.webhook_server` -- the webhook (and an echo ceiling) served in a child process
  for a load generator.
* :mod:`~bench.harness.processes` -- the repository root processes start from, a process's CPU
  seconds and peak memory, the load average, waiting for a process to be quiet.
* :mod:`~bench.harness.load` -- the queued Job and AdmissionReview a benchmark sends, running calls
  concurrently, probing a webhook, waiting for a condition.
* :mod:`~bench.harness.wrk` -- the ``wrk`` load generator and core pinning.
* :mod:`~bench.harness.metrics` -- Prometheus scrapes and their deltas.
* :mod:`~bench.harness.profilers` -- py-spy and perf attached to a running component.
* :mod:`~bench.harness.profile_breakdown` -- a sample's stacks sorted into named parts of the work.
* :mod:`~bench.harness.lifecycles` -- one measured round of whole job lifecycles on a devcluster
  (``bench.reconciler_cpu`` and its ``--real`` mode both run it).

Modules:

* ``clusters`` -- the clusters the benchmarks run against, and the bench's client and queues on them
* ``components`` -- kueue-bridge's webhook and reconciler as child processes, configured and
  registered as deployed
* ``lifecycles`` -- rounds of whole job lifecycles with kueue-bridge's components on a devcluster,
  measured
* ``load`` -- the load a benchmark puts on a cluster or a webhook, and waiting for it to be served
* ``metrics`` -- Prometheus scrapes of a component's ``/metrics``, summed by name and label, and
  their deltas
* ``processes`` -- the processes a benchmark measures: where they start from, their CPU and memory,
  the machine's load
* ``profile_breakdown`` -- where a controller process spends its CPU: py-spy's raw samples sorted
  into a few named parts
* ``profilers`` -- sampling profilers attached to a running component: py-spy (never pauses it) or
  perf
* ``real_cluster`` -- a real kube-apiserver and real Kueue for a benchmark (``bench.reconciler_cpu
  --real``, the webhook's)
* ``replicas`` -- reconciler replicas with Lease leader election, and restarts of the API server
  under them
* ``webhook_server`` -- kueue-bridge's webhook serving TLS on 127.0.0.1 in a child process, for a
  load generator to drive
* ``wrk`` -- ``wrk``, the closed-loop HTTP load generator, pinned to one core and the server under
  test to the other
"""
