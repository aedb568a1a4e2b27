"""Admission fuzzing: the case generator and what a correct answer is, and the fuzz run at scale.

* ``admission_seeds`` -- the webhook every fuzz caller attacks (every built-in framework and a
  declarative one) and the well-formed AdmissionReviews mutations start from.
* ``admission_cases`` -- generated and mutated AdmissionReviews (hypothesis strategies).
* ``admission_answers`` -- what a correct answer to a case is, and its histogram bucket.
* ``webhook_fuzz`` -- ``python -m tests.fuzz.webhook_fuzz``: 100,000 cases against a webhook process
  (``tests/e2e/test_webhook_fuzz_runs.py`` runs it small).

The property test ``tests/unit/webhook/test_admission_fuzz.py`` runs a bounded number of the same
cases in process. The fuzz run is a test at volume, not a benchmark (its target is robustness: no
5xx, the process still serving), so it lives here; it serves the webhook with the benchmarks'
``bench.harness.webhook_server``, and nothing in ``bench`` imports this package.
"""
