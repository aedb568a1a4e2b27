"""Serving the rules: AdmissionReviews over HTTPS with a reloadable certificate, health, readiness, metrics.

``admission_review`` is the admission path (AdmissionReview bytes in, bytes out; it runs
``webhook.rules``), ``asgi_app`` the ASGI application around it (admission fast path, then FastAPI
for the operational endpoints), ``fastpath`` the admissions answered inside uvicorn's HTTP protocol,
``tls_server`` the embeddable uvicorn server over TLS with background tasks, ``tlsreload`` the
certificate reloader, ``metrics`` the admission metrics.
"""

__all__: list[str] = []
