"""Mutating and validating admission server (FastAPI + uvicorn) for every configured framework.

Three parts and the modules that assemble them:

* ``rules/`` -- what is decided: Kueue's defaulting and validation, the AppWrapper operator's rules;
* ``serving/`` -- how it is served: the AdmissionReview path, the ASGI app, uvicorn over TLS,
  certificate reloading, metrics;
* installing -- ``registration`` writes our webhook configurations to a cluster (``kueue-bridge
  webhook register``; rendering them is ``shared.webhook_configurations``, the manifests need it too);
* assembly -- ``settings_from_config`` (the rules' settings from a configuration file),
  ``informer_lookups`` (the rules' lookups fed by informers), ``process`` (one webhook process:
  lookups, handler, app and server wired together, used by ``__main__`` and the end-to-end tests)
  and ``__main__`` (the command).

Import contracts (``pyproject.toml``): a layer imports only the layers below it -- ``__main__`` >
``process`` > ``serving``, ``informer_lookups``, ``registration``, ``settings_from_config`` (which
never import each other) > ``rules``.

Modules:

* ``__main__`` -- ``kueue-bridge webhook``: serve admission requests, or render the webhook
  configurations
* ``informer_lookups`` -- ``Lookups`` answered from ``shared.kube`` informer caches: no API round
  trip per admission
* ``process`` -- assemble one webhook process: informer-fed lookups, admission handler, app and TLS
  server
* ``registration`` -- create or update our webhook configurations, with the CA to trust, through the
  API server
* ``settings_from_config`` -- build the webhook's settings from the shared configuration and
  framework registry
* ``rules/`` -- Kueue's admission rules for jobs, on raw objects: what ``/mutate`` and ``/validate``
  decide
* ``serving/`` -- serving the rules: AdmissionReviews over HTTPS with a reloadable certificate,
  health, readiness, metrics
"""

__all__: list[str] = []
