"""Unknown fields are errors at every depth, named by their full camelCase path."""

from __future__ import annotations

import textwrap

import pytest

from shared.config import ConfigError, parse_config

HEADER = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"


@pytest.mark.parametrize(
    ("body", "path", "field"),
    [
        ("colour: blue", "colour", "colour"),
        ("waitForPodsReady: {enable: true}", "waitForPodsReady.enable", "enable"),
        (
            "waitForPodsReady: {requeuingStrategy: {backoff: 1}}",
            "waitForPodsReady.requeuingStrategy.backoff",
            "backoff",
        ),
        ("integrations: {podOption: {}}", "integrations.podOption", "podOption"),
        (
            "multiKueue: {externalFrameworks: [{name: A.v1.x.io, kind: A}]}",
            "multiKueue.externalFrameworks[0].kind",
            "kind",
        ),
        (
            "managedJobsNamespaceSelector: {matchExpressions: [{key: a, operator: Exists, value: x}]}",
            "managedJobsNamespaceSelector.matchExpressions[0].value",
            "value",
        ),
        (
            """\
            integrations:
              externalFrameworks:
              - name: A.v1.x.io
                adapter:
                  suspend: {path: spec.suspend, inverted: true}
                  podSets: [{template: spec.template}]
                  finished: 'false'
            """,
            "integrations.externalFrameworks[0].adapter.suspend.inverted",
            "inverted",
        ),
        ("kueueBridge: {fieldManagr: x}", "kueueBridge.fieldManagr", "fieldManagr"),
        # snake_case spellings are not the wire format and are refused like any other unknown name
        (
            "manage_jobs_without_queue_name: true",
            "manage_jobs_without_queue_name",
            "manage_jobs_without_queue_name",
        ),
        ("webhook: {cert_dir: /tmp}", "webhook.cert_dir", "cert_dir"),
    ],
)
def test_unknown_field_is_named(body: str, path: str, field: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(HEADER + textwrap.dedent(body), source="x")
    assert (path, f'unknown field "{field}"') in caught.value.errors


def test_several_unknown_fields_are_all_reported() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(HEADER + "a: 1\nwebhook: {b: 2}\nmultiKueue: {c: 3}\n", source="x")
    assert [issue.path for issue in caught.value.errors] == ["multiKueue.c", "webhook.b", "a"]


@pytest.mark.parametrize(
    ("body", "path", "message"),
    [
        ("webhook: {port: '9443'}", "webhook.port", "must be an integer, not string"),
        ("manageJobsWithoutQueueName: 'yes'", "manageJobsWithoutQueueName", "must be a boolean, not string"),
        ("integrations: {frameworks: batch/job}", "integrations.frameworks", "must be a list, not string"),
        ("integrations: [batch/job]", "integrations", "must be an object, not list"),
        ("clientConnection: {qps: fast}", "clientConnection.qps", "must be a number, not string"),
        ("multiKueue: {origin: 5}", "multiKueue.origin", "must be a string, not integer"),
        (
            "waitForPodsReady: {timeout: 30}",
            "waitForPodsReady.timeout",
            'must be a duration string such as "90s"',
        ),
        ("featureGates: {A: maybe}", "featureGates.A", "must be a boolean, not string"),
    ],
)
def test_wrong_types_name_the_field(body: str, path: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(HEADER + body + "\n", source="x")
    [(actual_path, actual_message)] = caught.value.errors
    assert actual_path == path
    assert actual_message.startswith(message)
