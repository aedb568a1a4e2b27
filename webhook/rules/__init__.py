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
"""

__all__: list[str] = []
