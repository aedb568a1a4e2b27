"""What the benchmarks share, one concept per module; it never imports a benchmark.

* :mod:`~bench.harness.clusters` -- the devcluster as a process, the bench's client, Kueue's CRDs and
  the bench queues.
* :mod:`~bench.harness.real_cluster` -- the real kube-apiserver and Kueue of ``../shared/real-cluster``,
  wiped per round, with the API server's request counts and a timeline of the bench's jobs.
* :mod:`~bench.harness.components` -- kueue-bridge's webhook and reconciler as child processes,
  configured and registered as deployed.
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
"""
