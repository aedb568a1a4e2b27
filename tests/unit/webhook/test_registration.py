"""webhook.registration: the registered rules change only while every serving endpoint of the webhook
Service runs the configuration being registered; ``missing_resources`` is what wait-registered waits on.

The replicas are real TLS servers (the webhook's own app, on loopback ports) answering
``/configuration``; the API server is an in-memory stand-in for the four calls registration makes.
"""

from __future__ import annotations

import asyncio
import base64
import copy
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from certs.authority import generate_ca, issue_serving_cert
from certs.bundle import CA_CERT_FILE, write_cert_dir
from shared.kube import GroupVersionKind, NotFound, ObjectList
from tests.unit.webhook.helpers import handler
from webhook.registration import (
    ENDPOINT_SLICE_GVK,
    ServiceRef,
    configuration_digest,
    endpoints_disagreeing,
    missing_resources,
    register_when_serving,
)
from webhook.serving.asgi_app import create_app
from webhook.serving.tls_server import Listener, WebhookServer

SERVICE = ServiceRef(namespace="kueue-bridge-system", name="kueue-bridge-webhook-service")
MUTATING = "kueue-bridge-mutating-webhook-configuration"


def configuration(*resources: tuple[str, str], ca_bundle: str | None = None) -> dict[str, Any]:
    """A mutating configuration with one webhook per ``(apiGroup, resource)``."""
    hooks = []
    for group, resource in resources:
        client_config: dict[str, Any] = {"service": {"namespace": SERVICE.namespace, "name": SERVICE.name}}
        if ca_bundle is not None:
            client_config["caBundle"] = ca_bundle
        hooks.append(
            {
                "name": f"m{resource}.{group or 'core'}.kueue-bridge.x-k8s.io",
                "clientConfig": client_config,
                "rules": [{"apiGroups": [group], "apiVersions": ["v1"], "resources": [resource]}],
            }
        )
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": MUTATING},
        "webhooks": hooks,
    }


JOBS = ("batch", "jobs")
GADGETS = ("samples.kueue-bridge.dev", "gadgets")
OLD = [configuration(JOBS)]
NEW = [configuration(JOBS, GADGETS)]


class FakeAPI:
    """What registration reads and writes: webhook configurations by name, EndpointSlices."""

    def __init__(self, *, registered: dict[str, Any] | None = None) -> None:
        self.configurations: dict[str, dict[str, Any]] = {}
        if registered is not None:
            stored = copy.deepcopy(registered)
            stored["metadata"]["resourceVersion"] = "1"
            self.configurations[registered["metadata"]["name"]] = stored
        self.slices: list[dict[str, Any]] = []
        self.endpoint_reads = 0
        self.writes = 0

    async def get(self, gvk: GroupVersionKind, name: str) -> dict[str, Any]:
        if name not in self.configurations:
            raise NotFound(code=404, message=f"{gvk.kind} {name} not found")
        return copy.deepcopy(self.configurations[name])

    async def list_all(self, gvk: GroupVersionKind, *, namespace: str, label_selector: str) -> ObjectList:
        assert gvk == ENDPOINT_SLICE_GVK and namespace == SERVICE.namespace
        assert label_selector == f"kubernetes.io/service-name={SERVICE.name}"
        self.endpoint_reads += 1
        return ObjectList(items=copy.deepcopy(self.slices), resource_version="1")

    async def create(self, gvk: GroupVersionKind, body: dict[str, Any]) -> dict[str, Any]:
        self.writes += 1
        self.configurations[body["metadata"]["name"]] = copy.deepcopy(body)
        return body

    async def update(self, gvk: GroupVersionKind, body: dict[str, Any]) -> dict[str, Any]:
        return await self.create(gvk, body)

    def serve(self, port: int, *, serving: bool = True, terminating: bool = False) -> None:
        """One endpoint (its own slice: each replica listens on its own loopback port here)."""
        self.slices.append(
            {
                "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
                "endpoints": [
                    {
                        "addresses": ["127.0.0.1"],
                        "conditions": {
                            "ready": serving and not terminating,
                            "serving": serving,
                            "terminating": terminating,
                        },
                    }
                ],
            }
        )

    def stop_serving(self, port: int) -> None:
        self.slices = [s for s in self.slices if s["ports"][0]["port"] != port]

    def intercepted(self) -> set[str]:
        return {hook["rules"][0]["resources"][0] for hook in self.configurations[MUTATING]["webhooks"]}


Replica = Callable[[list[dict[str, Any]] | None], Awaitable[int]]


@pytest.fixture
async def replicas(tmp_path: Path) -> AsyncIterator[tuple[Path, Replica]]:
    """Start replicas whose ``/configuration`` answers the digest of the given documents (``None``:
    a replica that has no ``/configuration``, as an older version); all share one CA."""
    ca = generate_ca()
    pair = issue_serving_cert(ca=ca, dns_names=["localhost"], ip_addresses=["127.0.0.1"])
    write_cert_dir(tmp_path, serving=pair, ca_cert_pem=ca.cert_pem)
    servers: list[WebhookServer] = []

    async def start(documents: list[dict[str, Any]] | None) -> int:
        app = create_app(
            handler=handler(),
            readiness_checks={"certificates": lambda: True},
            configuration_digest=configuration_digest(documents) if documents is not None else None,
        )
        server = WebhookServer(app=app, listener=Listener(cert_dir=tmp_path, host="127.0.0.1", port=0))
        await server.start()
        servers.append(server)
        return server.port

    try:
        yield tmp_path / CA_CERT_FILE, start
    finally:
        for server in servers:
            await server.stop()


async def rounds(api: FakeAPI, count: int, task: asyncio.Task[None]) -> None:
    """Until the registration loop has read the endpoints ``count`` more times (deadline 20 s)."""
    target = api.endpoint_reads + count
    async with asyncio.timeout(20):
        while api.endpoint_reads < target:
            assert not task.done(), "registration returned while an endpoint of another configuration served"
            await asyncio.sleep(0.01)


def registering(
    api: FakeAPI,
    documents: list[dict[str, Any]],
    *,
    port: int,
    ca_file: Path,
    stop: asyncio.Event | None = None,
) -> asyncio.Task[None]:
    return asyncio.create_task(
        register_when_serving(
            api,  # type: ignore[arg-type]
            documents,
            port=port,
            ca_file=ca_file,
            owner_name=None,
            stop=stop or asyncio.Event(),
            service=SERVICE,
            interval=0.01,
        )
    )


async def test_a_new_kind_is_registered_only_once_no_replica_of_the_old_configuration_serves(
    replicas,
) -> None:
    ca_file, start = replicas
    api = FakeAPI(registered=configuration(JOBS, ca_bundle="b2xk"))
    old_ready, old_terminating, new = await start(OLD), await start(OLD), await start(NEW)
    api.serve(old_ready)
    api.serve(old_terminating, terminating=True)
    api.serve(new)
    task = registering(api, NEW, port=new, ca_file=ca_file)
    await rounds(api, 3, task)
    assert api.writes == 0 and api.intercepted() == {"jobs"}
    api.stop_serving(old_ready)
    # a terminating replica still serving can still be sent a request: it counts too
    await rounds(api, 3, task)
    assert api.writes == 0
    api.stop_serving(old_terminating)
    await asyncio.wait_for(task, timeout=20)
    assert api.intercepted() == {"jobs", "gadgets"}
    bundle = api.configurations[MUTATING]["webhooks"][1]["clientConfig"]["caBundle"]
    assert base64.b64decode(bundle) == ca_file.read_bytes()


async def test_an_endpoint_that_does_not_answer_its_configuration_is_waited_for(replicas) -> None:
    ca_file, start = replicas
    api = FakeAPI(registered=configuration(JOBS, ca_bundle="b2xk"))
    older_version, new = await start(None), await start(NEW)  # 404 on /configuration
    api.serve(older_version)
    api.serve(new)
    assert await endpoints_disagreeing(
        api,  # type: ignore[arg-type]
        SERVICE,
        digest=configuration_digest(NEW),
        ca_file=ca_file,
    ) == [f"127.0.0.1:{older_version}"]
    api.serve(1)  # nothing listens there
    assert set(
        await endpoints_disagreeing(api, SERVICE, digest=configuration_digest(NEW), ca_file=ca_file)  # type: ignore[arg-type]
    ) == {f"127.0.0.1:{older_version}", "127.0.0.1:1"}
    api.stop_serving(1)
    api.stop_serving(older_version)
    assert await endpoints_disagreeing(api, SERVICE, digest=configuration_digest(NEW), ca_file=ca_file) == []  # type: ignore[arg-type]


async def test_with_no_serving_endpoint_nobody_of_another_configuration_can_be_called(replicas) -> None:
    """The first replica of an install serves before its readiness reaches the EndpointSlices."""
    ca_file, start = replicas
    api = FakeAPI()
    new = await start(NEW)
    api.serve(await start(OLD), serving=False)  # listed, not serving: the API server does not call it
    await asyncio.wait_for(registering(api, NEW, port=new, ca_file=ca_file), timeout=20)
    assert api.endpoint_reads == 1 and api.intercepted() == {"jobs", "gadgets"}


async def test_a_stale_replica_cannot_take_a_kind_out_while_replicas_of_the_new_configuration_serve(
    replicas,
) -> None:
    ca_file, start = replicas
    api = FakeAPI(registered=configuration(JOBS, GADGETS, ca_bundle="bmV3"))
    stale, new = await start(OLD), await start(NEW)
    api.serve(stale)
    api.serve(new)
    stop = asyncio.Event()
    task = registering(api, OLD, port=stale, ca_file=ca_file, stop=stop)
    await rounds(api, 3, task)
    assert api.writes == 0 and api.intercepted() == {"jobs", "gadgets"}
    # Stopped as the webhook stops it, not cancelled: httpcore closes nothing when a cancellation
    # lands in a TLS handshake (its start_tls cleans up on Exception only), and the orphaned socket
    # would warn in whichever later test collects it.
    stop.set()
    await asyncio.wait_for(task, timeout=20)
    assert api.writes == 0


async def test_a_write_that_changes_no_rule_needs_no_agreement(replicas) -> None:
    ca_file, start = replicas
    api = FakeAPI(registered=configuration(JOBS, GADGETS, ca_bundle="b2xk"))
    old, new = await start(OLD), await start(NEW)
    api.serve(old)
    api.serve(new)
    await asyncio.wait_for(registering(api, NEW, port=new, ca_file=ca_file), timeout=20)
    assert api.endpoint_reads == 0 and api.writes == 1  # a new caBundle, the same rules


def test_the_digest_is_of_the_rules_not_of_the_ca_bundle() -> None:
    assert configuration_digest(NEW) == configuration_digest([configuration(JOBS, GADGETS, ca_bundle="eA==")])
    assert configuration_digest(NEW) != configuration_digest(OLD)


def test_missing_resources_are_the_configured_ones_not_registered_with_a_ca_bundle() -> None:
    kind = "MutatingWebhookConfiguration"
    assert missing_resources({kind: None}, NEW) == [
        f"{kind}: batch/jobs",
        f"{kind}: samples.kueue-bridge.dev/gadgets",
    ]
    assert missing_resources({kind: configuration(JOBS, ca_bundle="eA==")}, NEW) == [
        f"{kind}: samples.kueue-bridge.dev/gadgets"
    ]
    # registered without a caBundle: the API server cannot call it yet
    assert missing_resources({kind: configuration(JOBS, GADGETS)}, NEW) == [
        f"{kind}: batch/jobs",
        f"{kind}: samples.kueue-bridge.dev/gadgets",
    ]
    assert missing_resources({kind: configuration(JOBS, GADGETS, ca_bundle="eA==")}, NEW) == []
    # a kind being removed may stay registered a little longer: what is configured is covered
    assert missing_resources({kind: configuration(JOBS, GADGETS, ca_bundle="eA==")}, OLD) == []


class FakeConnection:
    """``KubeClient.from_connection`` for ``kueue-bridge webhook wait-registered``: serves ``api``."""

    def __init__(self, api: FakeAPI) -> None:
        self.api = api

    async def __aenter__(self) -> FakeAPI:
        return self.api

    async def __aexit__(self, *exc_info: object) -> None:
        return None


def run_wait_registered(monkeypatch: pytest.MonkeyPatch, api: FakeAPI, config: Path, *extra: str) -> int:
    import shared.kube
    from webhook.__main__ import main

    monkeypatch.setattr(shared.kube, "load_connection", lambda **_: None)
    monkeypatch.setattr(shared.kube.KubeClient, "from_connection", lambda *_a, **_k: FakeConnection(api))
    return main(["wait-registered", "--config", str(config), *extra])


INSTALL_CONFIG = Path(__file__).resolve().parents[3] / "hack" / "install" / "kueue-bridge.yaml"


def test_wait_registered_fails_after_its_timeout_naming_the_kinds_not_intercepted(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    api = FakeAPI(registered=configuration(JOBS, ca_bundle="eA=="))
    assert (
        run_wait_registered(monkeypatch, api, INSTALL_CONFIG, "--timeout", "0.2", "--interval", "0.05") == 1
    )
    error = capsys.readouterr().err
    assert "do not intercept MutatingWebhookConfiguration: " in error
    assert "MutatingWebhookConfiguration: samples.kueue-bridge.dev/widgets" in error
    assert "MutatingWebhookConfiguration: batch/jobs" not in error
    assert "ValidatingWebhookConfiguration: batch/jobs" in error  # not registered at all


def test_wait_registered_returns_once_every_configured_kind_is_intercepted(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from shared.config import load_config
    from shared.webhook_configurations import render_webhook_configurations
    from webhook.registration import with_ca_bundle
    from webhook.settings_from_config import settings_from_config

    config = load_config(INSTALL_CONFIG)
    api = FakeAPI()
    for document in render_webhook_configurations(
        settings_from_config(config).frameworks, namespace=config.namespace, service=SERVICE.name
    ):
        api.configurations[document["metadata"]["name"]] = with_ca_bundle(document, ca_pem=b"ca")
    assert run_wait_registered(monkeypatch, api, INSTALL_CONFIG, "--timeout", "5") == 0
    assert "intercept every configured kind" in capsys.readouterr().out
