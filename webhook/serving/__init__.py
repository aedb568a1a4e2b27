"""Serving the rules: AdmissionReviews over HTTPS with a reloadable certificate, health, readiness, metrics.

``admission_review`` is the admission path (AdmissionReview bytes in, bytes out; it runs
``webhook.rules``), ``answers`` what a route is to the servers that carry it, ``asgi_app`` the ASGI
application around it (admission fast path, then FastAPI for the operational endpoints),
``fastpath`` the admissions answered inside uvicorn's HTTP protocol, ``http2`` the same over HTTP/2
when the client chose it, ``tls_server`` the embeddable uvicorn server over TLS with background
tasks, ``tlsreload`` the certificate reloader, ``metrics`` the admission metrics.

Modules:

* ``admission_review`` -- the admission path: bytes in, bytes out, for ``/mutate`` and ``/validate``
* ``answers`` -- an admission route's answer, synchronous or awaited, and the oversized-body
  stand-in every server hands to it
* ``asgi_app`` -- the ASGI application: admission routes, health, readiness and metrics
* ``fastpath`` -- admission requests answered inside uvicorn's HTTP protocol, without an ASGI round
  per request
* ``http2`` -- admission requests over HTTP/2, multiplexed on one TLS connection
* ``metrics`` -- Prometheus metrics for the admission server (served on ``/metrics``)
* ``tls_server`` -- run the webhook: uvicorn over TLS with a reloadable certificate, plus background
  tasks
* ``tlsreload`` -- serve rotated certificates without restarting or dropping a connection
"""

__all__: list[str] = []
