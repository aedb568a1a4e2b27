from __future__ import annotations

from typing import Any

import cel
import pytest
import yaml

from shared.webhook_configurations import RECONCILER_UPDATES_SKIPPED, render_webhook_configurations
from tests.unit.webhook.helpers import BATCH_JOB
from webhook.__main__ import main


def test_one_rule_set_per_framework_with_kueue_policies() -> None:
    mutating, validating = render_webhook_configurations(
        [BATCH_JOB], namespace="kb-system", service="kb-webhook"
    )
    assert mutating["kind"] == "MutatingWebhookConfiguration"
    hook = mutating["webhooks"][0]
    assert hook["rules"] == [
        {
            "apiGroups": ["batch"],
            "apiVersions": ["v1"],
            "operations": ["CREATE"],
            "resources": ["jobs"],
            "scope": "Namespaced",
        }
    ]
    assert (
        hook["failurePolicy"] == "Fail"
        and hook["sideEffects"] == "None"
        and hook["matchPolicy"] == "Equivalent"
    )
    assert hook["timeoutSeconds"] <= 10 and hook["admissionReviewVersions"] == ["v1"]
    assert hook["namespaceSelector"]["matchExpressions"][0]["values"] == ["kube-system", "kb-system"]
    assert hook["clientConfig"]["service"] == {
        "name": "kb-webhook",
        "namespace": "kb-system",
        "path": "/mutate",
        "port": 443,
    }
    assert validating["webhooks"][0]["rules"][0]["operations"] == ["CREATE", "UPDATE"]


def _request(operation: str, username: str) -> dict[str, Any]:
    return {"operation": operation, "userInfo": {"username": username, "groups": ["system:authenticated"]}}


RECONCILER = "system:serviceaccount:kb-system:kueue-bridge-reconciler"


@pytest.mark.parametrize(
    ("request_", "called"),
    [
        (_request("UPDATE", RECONCILER), False),
        (_request("CREATE", RECONCILER), True),
        (_request("UPDATE", "alice"), True),
        (_request("UPDATE", "system:serviceaccount:kb-system:kueue-bridge-multikueue"), True),
        # the same account name in another namespace is another user
        (_request("UPDATE", "system:serviceaccount:default:kueue-bridge-reconciler"), True),
        (_request("CREATE", "alice"), True),
    ],
)
def test_the_validating_webhooks_leave_out_only_the_reconcilers_own_updates(
    request_: dict[str, Any], called: bool
) -> None:
    """The condition, evaluated as the API server does (CEL over the AdmissionRequest): a webhook is
    called only when every condition is true. Mutating webhooks (CREATE only) have none."""
    mutating, validating = render_webhook_configurations(
        [BATCH_JOB], namespace="kb-system", service="kb-webhook"
    )
    assert all("matchConditions" not in hook for hook in mutating["webhooks"])
    (hook,) = validating["webhooks"]
    (condition,) = hook["matchConditions"]
    assert condition["name"] == RECONCILER_UPDATES_SKIPPED
    variables = {"request": request_, "object": {}, "oldObject": {}}
    assert cel.compile(condition["expression"]).execute(variables) is called


def test_cli_renders_yaml_for_a_url(tmp_path, capsys) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nnamespace: kb-system\nintegrations:\n  frameworks: [batch/job]\n"
    )
    assert main(["manifests", "--config", str(config), "--url", "https://127.0.0.1:9443"]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    assert [d["kind"] for d in docs] == ["MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"]
    assert docs[1]["webhooks"][0]["clientConfig"] == {"url": "https://127.0.0.1:9443/validate"}


def test_cli_reports_a_bad_config(tmp_path, capsys) -> None:
    assert main(["manifests", "--config", str(tmp_path / "missing.yaml"), "--service", "x"]) == 1
    assert "missing.yaml" in capsys.readouterr().err


def test_serving_reports_config_errors_as_the_controllers_do(tmp_path, capsys) -> None:
    """One ``<file>: <field>: <message>`` line per problem (shared.runtime.cli_args), before anything starts."""
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nwebhook: {port: -1}\n"
        "integrations:\n  frameworks: [batch/job]\n"
    )
    assert main(["--config", str(config)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err and all(line.startswith(f"{config}: ") for line in err)
    assert any("webhook.port" in line for line in err)
