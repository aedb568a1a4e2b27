"""Webhook ``matchConditions`` (conformance: devcluster and real kube-apiserver).

kueue-bridge's own ValidatingWebhookConfiguration skips our reconciler's UPDATEs with a
``matchConditions`` entry, so both servers must decide alike when a webhook is called. A small
HTTPS webhook (stdlib server, trustme certificate for 127.0.0.1, reachable from either server by
URL) records every call and refuses it (validating) or adds a label (mutating), so "called" and
"skipped" are both visible in the answer and in the record. Requests "as another user" use
impersonation headers (the admin may impersonate; a Role lets the impersonated group write
ConfigMaps, as the real server authorizes before admission). kube-apiserver reads webhook
configurations from an informer, so each test first polls until its configuration is in force,
using a request it knows the webhook is called for.
"""

from __future__ import annotations

import base64
import json
import secrets
import ssl
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
import trustme

from tests.devcluster.conftest import KubeTarget
from tests.devcluster.helpers import configmap_webhook, send_admission_response
from tests.polling import eventually_sync

ADMISSION = "/apis/admissionregistration.k8s.io/v1"
GROUP = "conformance:match-conditions"


@dataclass
class Calls:
    """What the webhook saw: (path, operation, object name, username) per call."""

    seen: list[tuple[str, str, str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, call: tuple[str, str, str, str]) -> None:
        with self.lock:
            self.seen.append(call)

    def snapshot(self) -> list[tuple[str, str, str, str]]:
        with self.lock:
            return list(self.seen)


def _handler(calls: Calls) -> type[BaseHTTPRequestHandler]:
    class Hook(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            request = review["request"]
            path = self.path.split("?", 1)[0]
            calls.add((path, request["operation"], request.get("name", ""), request["userInfo"]["username"]))
            response: dict[str, Any] = {"uid": request["uid"], "allowed": True}
            if path.startswith("/mutate"):
                patch = [{"op": "add", "path": "/metadata/labels", "value": {"mutated": "yes"}}]
                response["patchType"] = "JSONPatch"
                response["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
            else:
                response["allowed"] = False
                response["status"] = {"code": 403, "reason": "Forbidden", "message": "called"}
            send_admission_response(self, response)

        def log_message(self, format: str, *args: Any) -> None:
            return

    return Hook


@dataclass(frozen=True)
class Webhook:
    address: str
    ca_bundle: str
    calls: Calls

    def client_config(self, path: str) -> dict[str, Any]:
        return {"url": f"https://{self.address}{path}", "caBundle": self.ca_bundle}


@pytest.fixture
def webhook() -> Iterator[Webhook]:
    ca = trustme.CA()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    calls = Calls()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(calls))
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield Webhook(
        f"127.0.0.1:{server.server_address[1]}", base64.b64encode(ca.cert_pem.bytes()).decode(), calls
    )
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.fixture
def register(kube: KubeTarget) -> Iterator[Callable[[str, dict[str, Any]], None]]:
    """``register(plural, configuration)``: create a webhook configuration, deleted after the test."""
    created: list[str] = []

    def _register(plural: str, configuration: dict[str, Any]) -> None:
        response = kube.client.post(f"{ADMISSION}/{plural}", json=configuration)
        assert response.status_code == 201, response.text
        created.append(f"{ADMISSION}/{plural}/{configuration['metadata']['name']}")

    yield _register
    for url in created:
        kube.client.delete(url)


@pytest.fixture
def writers(kube: KubeTarget, namespace: str) -> None:
    """Let members of :data:`GROUP` write ConfigMaps in ``namespace`` (kube authorizes before admission)."""
    rbac = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}"
    role = {
        "metadata": {"name": "configmap-writer"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "create", "update"]}],
    }
    binding = {
        "metadata": {"name": "configmap-writers"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "configmap-writer"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": GROUP}],
    }
    for plural, body in (("roles", role), ("rolebindings", binding)):
        response = kube.client.post(f"{rbac}/{plural}", json=body)
        assert response.status_code == 201, response.text


def as_user(username: str) -> dict[str, str]:
    return {"Impersonate-User": username, "Impersonate-Group": GROUP}


def webhook_spec(
    name: str, namespace: str, client_config: dict[str, Any], conditions: list[dict[str, str]], **extra: Any
) -> dict[str, Any]:
    return configmap_webhook(
        name, namespace, client_config, operations=["CREATE", "UPDATE"], matchConditions=conditions, **extra
    )


def configuration(*webhooks: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": f"conf-match-{secrets.token_hex(4)}"}, "webhooks": list(webhooks)}


def dry_run_create(
    kube: KubeTarget, namespace: str, name: str, headers: dict[str, str] | None = None
) -> httpx.Response:
    return kube.client.post(
        f"/api/v1/namespaces/{namespace}/configmaps",
        params={"dryRun": "All"},
        json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}},
        headers=headers,
    )


def denied_by(response: httpx.Response, hook: str) -> bool:
    return (
        response.status_code == 403
        and response.json().get("message") == f'admission webhook "{hook}" denied the request: called'
    )


def wait_until_denied(kube: KubeTarget, namespace: str, name: str, hook: str) -> None:
    """Poll a dry-run create the webhook is called for until the configuration is in force."""
    eventually_sync(
        lambda: denied_by(dry_run_create(kube, namespace, name), hook),
        what=f"webhook {hook} to refuse {name}",
        within_seconds=30,
    )


def test_a_condition_on_the_user_skips_the_webhook_for_that_user_only(
    kube: KubeTarget, namespace: str, webhook: Webhook, register: Any, writers: None
) -> None:
    excluded, other = f"conf-reconciler-{secrets.token_hex(3)}", f"conf-person-{secrets.token_hex(3)}"
    hook = "vuser.conformance.example.com"
    condition = {"name": "not-the-reconciler", "expression": f'request.userInfo.username != "{excluded}"'}
    spec = webhook_spec(hook, namespace, webhook.client_config("/validate"), [condition])
    register("validatingwebhookconfigurations", configuration(spec))
    wait_until_denied(kube, namespace, "by-admin", hook)

    skipped = dry_run_create(kube, namespace, "by-reconciler", as_user(excluded))
    assert skipped.status_code == 201, skipped.text
    called = dry_run_create(kube, namespace, "by-person", as_user(other))
    assert denied_by(called, hook), called.text
    users = {user for _, _, _, user in webhook.calls.snapshot()}
    assert other in users
    assert excluded not in users


def test_the_authorizer_answers_for_the_requesting_user(
    kube: KubeTarget, namespace: str, webhook: Webhook, register: Any, writers: None
) -> None:
    hook = "vauthz.conformance.example.com"
    conditions = [
        {"name": "may-do-this", "expression": "authorizer.requestResource.check('create').allowed()"},
        {
            "name": "may-delete",
            "expression": f"authorizer.group('').resource('configmaps').namespace('{namespace}')"
            ".check('delete').allowed()",
        },
    ]
    spec = webhook_spec(hook, namespace, webhook.client_config("/validate"), conditions)
    register("validatingwebhookconfigurations", configuration(spec))
    wait_until_denied(kube, namespace, "by-admin", hook)  # system:masters may do anything

    writer = f"conf-writer-{secrets.token_hex(3)}"  # may create configmaps (Role), not delete them
    skipped = dry_run_create(kube, namespace, "by-writer", as_user(writer))
    assert skipped.status_code == 201, skipped.text
    assert writer not in {user for _, _, _, user in webhook.calls.snapshot()}


def test_a_condition_on_the_operation_skips_updates(
    kube: KubeTarget, namespace: str, webhook: Webhook, register: Any
) -> None:
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    existing = kube.client.post(url, json={"metadata": {"name": "existing"}, "data": {"a": "1"}})
    assert existing.status_code == 201, existing.text
    hook = "voperation.conformance.example.com"
    condition = {"name": "not-updates", "expression": 'request.operation != "UPDATE"'}
    register(
        "validatingwebhookconfigurations",
        configuration(webhook_spec(hook, namespace, webhook.client_config("/validate"), [condition])),
    )
    wait_until_denied(kube, namespace, "created", hook)

    changed = existing.json()
    changed["data"] = {"a": "2"}
    updated = kube.client.put(f"{url}/existing", params={"dryRun": "All"}, json=changed)
    assert updated.status_code == 200, updated.text
    assert updated.json()["data"] == {"a": "2"}
    operations = {operation for _, operation, _, _ in webhook.calls.snapshot()}
    assert operations == {"CREATE"}


def test_the_request_variable_is_the_admission_request_without_the_objects(
    kube: KubeTarget, namespace: str, webhook: Webhook, register: Any
) -> None:
    hook = "vrequest.conformance.example.com"
    expression = (
        'request.kind.group == "" && request.kind.version == "v1" && request.kind.kind == "ConfigMap"'
        ' && request.resource.resource == "configmaps" && request.requestKind.kind == "ConfigMap"'
        f' && request.namespace == "{namespace}" && request.name == "probe" && request.operation == "CREATE"'
        ' && request.dryRun && request.options.kind == "CreateOptions" && !has(request.subResource)'
        ' && oldObject == null && object.metadata.name == "probe"'
        ' && "system:authenticated" in request.userInfo.groups'
    )
    spec = webhook_spec(
        hook, namespace, webhook.client_config("/validate"), [{"name": "shape", "expression": expression}]
    )
    register("validatingwebhookconfigurations", configuration(spec))
    wait_until_denied(kube, namespace, "probe", hook)


def test_an_evaluation_error_with_failure_policy_fail_refuses_the_request(
    kube: KubeTarget, namespace: str, webhook: Webhook, register: Any
) -> None:
    hook = "verror.conformance.example.com"
    conditions = [
        {"name": "missing-field", "expression": 'object.metadata.missing == "x"'},
        {"name": "not-skipped", "expression": 'object.metadata.name != "skipped"'},
    ]
    spec = webhook_spec(hook, namespace, webhook.client_config("/validate"), conditions)
    register("validatingwebhookconfigurations", configuration(spec))
    response = eventually_sync(
        lambda: (r := dry_run_create(kube, namespace, "probe")).status_code == 403 and r,
        what="the match condition error to refuse the create",
        within_seconds=30,
    )
    assert response.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'configmaps "probe" is forbidden: expression \'object.metadata.missing == "x"\''
        " resulted in error: no such key: missing",
        "reason": "Forbidden",
        "details": {"name": "probe", "kind": "configmaps"},
        "code": 403,
    }
    # a false condition wins over another's error: the webhook is skipped, the request goes through
    skipped = dry_run_create(kube, namespace, "skipped")
    assert skipped.status_code == 201, skipped.text
    assert webhook.calls.snapshot() == []


def test_an_evaluation_error_with_failure_policy_ignore_skips_the_webhook(
    kube: KubeTarget, namespace: str, webhook: Webhook, register: Any
) -> None:
    ignored, sentinel = "vignore.conformance.example.com", "vsentinel.conformance.example.com"
    erroring = webhook_spec(
        ignored,
        namespace,
        webhook.client_config("/validate/ignored"),
        [{"name": "missing-field", "expression": 'object.metadata.missing == "x"'}],
        failurePolicy="Ignore",
    )
    in_force = webhook_spec(
        sentinel,
        namespace,
        webhook.client_config("/validate/sentinel"),
        [{"name": "only-the-sentinel", "expression": 'object.metadata.name == "sentinel"'}],
    )
    register("validatingwebhookconfigurations", configuration(erroring, in_force))
    wait_until_denied(kube, namespace, "sentinel", sentinel)

    passed = dry_run_create(kube, namespace, "probe")
    assert passed.status_code == 201, passed.text
    assert {path for path, _, _, _ in webhook.calls.snapshot()} == {"/validate/sentinel"}


def test_mutating_webhooks_honour_match_conditions(
    kube: KubeTarget, namespace: str, webhook: Webhook, register: Any
) -> None:
    hook = "mname.conformance.example.com"
    condition = {"name": "not-skip-me", "expression": 'object.metadata.name != "skip-me"'}
    register(
        "mutatingwebhookconfigurations",
        configuration(webhook_spec(hook, namespace, webhook.client_config("/mutate"), [condition])),
    )

    def mutated() -> bool:
        response = dry_run_create(kube, namespace, "mutate-me")
        assert response.status_code == 201, response.text
        return bool(response.json()["metadata"].get("labels") == {"mutated": "yes"})

    eventually_sync(mutated, what="the mutating webhook to label mutate-me", within_seconds=30)
    skipped = dry_run_create(kube, namespace, "skip-me")
    assert skipped.status_code == 201, skipped.text
    assert "labels" not in skipped.json()["metadata"]
    assert "skip-me" not in {name for _, _, name, _ in webhook.calls.snapshot()}


def _required(path: str) -> dict[str, str]:
    return {"reason": "FieldValueRequired", "message": "Required value", "field": path}


_SYNTAX_ERROR = (
    "compilation failed: ERROR: <input>:1:24: Syntax error: mismatched input '<EOF>' expecting {'[', '{',"
    " '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}"
    "\n | object.metadata.name ==\n | .......................^"
)
_QUALIFIED_NAME = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an"
    " alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is"
    " '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
_P = "webhooks[0].matchConditions"
INVALID_CONDITIONS: dict[str, tuple[list[dict[str, str]], list[dict[str, str]]]] = {
    "missing name": ([{"expression": "true"}], [_required(f"{_P}[0].name")]),
    "duplicate name": (
        [{"name": "a", "expression": "true"}, {"name": "a", "expression": "false"}],
        [{"reason": "FieldValueDuplicate", "message": 'Duplicate value: "a"', "field": f"{_P}[1].name"}],
    ),
    "empty expression": ([{"name": "a", "expression": "  "}], [_required(f"{_P}[0].expression")]),
    "nothing given": ([{"expression": ""}], [_required(f"{_P}[0].expression"), _required(f"{_P}[0].name")]),
    "expression that does not compile": (
        [{"name": "a", "expression": "object.metadata.name =="}],
        [
            {
                "reason": "FieldValueInvalid",
                "message": f'Invalid value: "object.metadata.name ==": {_SYNTAX_ERROR}',
                "field": f"{_P}[0].expression",
            }
        ],
    ),
    "undeclared variables": (
        [
            {
                "name": "a",
                "expression": "params.a == 1 &&\n  namespaceObject == null && oldObject == null || x",
            }
        ],
        [
            {
                "reason": "FieldValueInvalid",
                "message": 'Invalid value: "params.a == 1 \u0026\u0026\\n  namespaceObject == null \u0026\u0026'
                ' oldObject == null || x": compilation failed:'
                " ERROR: <input>:1:1: undeclared reference to 'params' (in container '')\n | params.a == 1 &&\n | ^"
                "\nERROR: <input>:2:51: undeclared reference to 'x' (in container '')"
                "\n |   namespaceObject == null && oldObject == null || x"
                f"\n | {'.' * 50}^",
                "field": f"{_P}[0].expression",
            }
        ],
    ),
    "unknown request fields": (
        [{"name": "a", "expression": 'request.userinfo.username == "me" || has(request.object)'}],
        [
            {
                "reason": "FieldValueInvalid",
                "message": 'Invalid value: "request.userinfo.username == \\"me\\" || has(request.object)":'
                " compilation failed: ERROR: <input>:1:8: undefined field 'userinfo'"
                '\n | request.userinfo.username == "me" || has(request.object)\n | .......^'
                "\nERROR: <input>:1:41: undefined field 'object'"
                '\n | request.userinfo.username == "me" || has(request.object)\n | ........................................^',
                "field": f"{_P}[0].expression",
            }
        ],
    ),
    "name that is not a qualified name": (
        [{"name": "bad name!", "expression": "true"}],
        [
            {
                "reason": "FieldValueInvalid",
                "message": f'Invalid value: "bad name!": {_QUALIFIED_NAME}',
                "field": f"{_P}[0].name",
            }
        ],
    ),
    "more than 64": (
        [{"name": f"c{i}", "expression": "true"} for i in range(65)],
        [{"reason": "FieldValueTooMany", "message": "Too many: 65: must have at most 64 items", "field": _P}],
    ),
}


@pytest.mark.parametrize("plural", ["validatingwebhookconfigurations", "mutatingwebhookconfigurations"])
@pytest.mark.parametrize("case", sorted(INVALID_CONDITIONS))
def test_invalid_match_conditions_are_refused_with_field_errors(
    kube: KubeTarget, plural: str, case: str
) -> None:
    conditions, causes = INVALID_CONDITIONS[case]
    body = configuration(
        webhook_spec(
            "vinvalid.conformance.example.com", "default", {"url": "https://127.0.0.1:1/x"}, conditions
        )
    )
    name = body["metadata"]["name"]
    response = kube.client.post(f"{ADMISSION}/{plural}", params={"dryRun": "All"}, json=body)
    assert response.status_code == 422, response.text
    status = response.json()
    kind = (
        "ValidatingWebhookConfiguration"
        if plural.startswith("validating")
        else "MutatingWebhookConfiguration"
    )
    shown = [f"{cause['field']}: {cause['message']}" for cause in causes]
    summary = shown[0] if len(shown) == 1 else f"[{', '.join(shown)}]"
    assert status["reason"] == "Invalid"
    assert status["message"] == f'{kind}.admissionregistration.k8s.io "{name}" is invalid: {summary}'
    assert status["details"] == {
        "name": name,
        "group": "admissionregistration.k8s.io",
        "kind": kind,
        "causes": causes,
    }
