"""Kueue's admission rules for jobs, on raw objects: what ``/mutate`` and ``/validate`` decide.

Pure decisions, no HTTP: ``defaulting`` (``BaseWebhook.Default`` as a minimal JSON patch, made by
``patch``), ``validation`` (create and update rules, with ``admission_gates`` for the
admission-gate annotation), ``appwrapper`` (the AppWrapper operator's rules) and ``access_review``
(may the user create what an AppWrapper wraps: the one rule that asks the API server),
``objectshape`` (the metadata types a typed decoding would refuse), ``fielderrors``
(apimachinery's field-error texts). What the rules read is passed in: ``settings`` (the
configuration they depend on, per framework) and ``lookups`` (the cluster state they ask about,
answered from memory).

Import contract (``pyproject.toml``): the rules never import the serving side, the process
assembly or a web framework.

Modules:

* ``access_review`` -- may the requesting user create what an AppWrapper wraps? One
  SubjectAccessReview per component
* ``admission_gates`` -- ``kueue.x-k8s.io/admission-gated-by``: Kueue's validation of the
  admission-gate annotation
* ``appwrapper`` -- the AppWrapper operator's admission rules
  (``internal/webhook/appwrapper_webhook.go``), on raw dicts
* ``defaulting`` -- Kueue's job defaulting (``BaseWebhook.Default``), in Kueue's order, as a minimal
  JSON patch
* ``fielderrors`` -- apimachinery's ``field.Error`` / ``ErrorList.ToAggregate()`` rendering, byte
  for byte
* ``lookups`` -- what the webhook needs to know about the cluster, answered from memory
* ``objectshape`` -- the types of the ``metadata`` fields the admission rules read, checked before
  any rule runs
* ``patch`` -- minimal JSON patches computed from explicit intent, never from a re-serialised model
* ``settings`` -- everything the admission rules depend on, passed in explicitly (never read from
  globals)
* ``validation`` -- Kueue's job validation (``jobframework/validation.go``) plus the adapters' own
  rules
"""

__all__: list[str] = []
