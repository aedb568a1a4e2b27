"""Assemble one webhook process: informer-fed lookups, admission handler, app and TLS server.

``build_webhook`` is the single place that wires these together, used by ``kueue-bridge webhook``
and by the end-to-end tests, so the tests exercise exactly what production runs:

* readiness is ``certificates`` (the reloader has a valid pair in service) AND ``caches``
  (``InformerLookups.synced()``); until both hold ``/readyz`` answers 503 naming what is missing;
* the informers run as a background task of the ``WebhookServer`` and stop with it;
* the ``KubeClient`` is the caller's: the caller creates and closes it (one client per process,
  shared with the certificate rotator when that is enabled).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from shared.kube import KubeClient, WatchSettings
from webhook.informer_lookups import InformerLookups
from webhook.rules.access_review import KubeAccessReviewer
from webhook.rules.settings import WebhookSettings
from webhook.serving.admission_review import AdmissionHandler
from webhook.serving.asgi_app import create_app
from webhook.serving.metrics import WebhookMetrics
from webhook.serving.tls_server import Listener, WebhookServer

__all__ = ["WebhookProcess", "build_webhook"]


@dataclass(frozen=True)
class WebhookProcess:
    """One assembled webhook process: the server to run and the informer caches behind its lookups
    (readiness is the app's ``certificates`` and ``caches`` checks, see the module doc)."""

    server: WebhookServer
    lookups: InformerLookups


def build_webhook(
    *,
    settings: WebhookSettings,
    client: KubeClient,
    listener: Listener,
    watch_settings: WatchSettings | None = None,
    extra_background: Callable[[asyncio.Event], list[Coroutine[Any, Any, None]]] | None = None,
    configuration_digest: str | None = None,
) -> WebhookProcess:
    """``configuration_digest``: what ``/configuration`` answers (``webhook.registration``)."""
    lookups = InformerLookups(client=client, settings=settings, watch_settings=watch_settings)
    handler = AdmissionHandler(
        settings=settings, lookups=lookups, metrics=WebhookMetrics(), access=KubeAccessReviewer(client)
    )
    server_box: list[WebhookServer] = []
    app = create_app(
        handler=handler,
        readiness_checks={
            "certificates": lambda: bool(server_box) and server_box[0].reloader.loaded,
            "caches": lookups.synced,
        },
        configuration_digest=configuration_digest,
    )

    def background(stop: asyncio.Event) -> list[Coroutine[Any, Any, None]]:
        return [lookups.run(), *(extra_background(stop) if extra_background is not None else [])]

    server = WebhookServer(app=app, listener=listener, background=background)
    server_box.append(server)
    return WebhookProcess(server=server, lookups=lookups)
