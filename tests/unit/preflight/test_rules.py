"""Preflight's decisions without a cluster: findings, Kueue's side, rights, the MultiKueue name."""

from __future__ import annotations

import pytest

from shared.component_access import KUEUE_NAMESPACE, OWN_NAMESPACE, access_rules
from shared.config import parse_config
from shared.preflight import Finding, Report, Verdict, render_json, render_text
from shared.preflight.access_checks import rights_of
from shared.preflight.kueue_setup import (
    KueueSetup,
    RegisteredWebhook,
    check_integrations,
    check_multikueue_controller,
)

CONFIG = parse_config(
    "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
    "integrations: {frameworks: [batch/job, workload.codeflare.dev/appwrapper]}\n",
    source="t",
)
JOB_WEBHOOK = RegisteredWebhook("kueue-mutating", "mjob.kb.io", frozenset({("batch", "jobs")}))


def by_kind(findings: list[Finding]) -> dict[str, Finding]:
    return {f.kinds[0]: f for f in findings}


def test_a_problem_needs_a_fix_and_concerns_what_it_names() -> None:
    with pytest.raises(ValueError, match="needs a fix"):
        Finding("x", Verdict.FAIL, "broken")
    finding = Finding("x", Verdict.WARN, "m", "f", kinds=("Job.v1.batch",), admission_checks=("mk",))
    assert finding.concerns(kind="Job.v1.batch", namespace="ns", admission_checks=["mk", "other"])
    assert not finding.concerns(kind="Job.v1.batch", namespace="ns", admission_checks=["other"])
    assert not finding.concerns(kind="SampleJob.v1.x.y", namespace="ns", admission_checks=["mk"])
    assert Finding("y", Verdict.OK, "fine").concerns(kind="anything", namespace="any")
    assert finding.in_cluster("w1").check == "w1: x" and finding.in_cluster("w1").clusters == ("w1",)


def test_text_and_json_say_the_same() -> None:
    report = Report(
        [Finding("a", Verdict.OK, "fine"), Finding("b", Verdict.FAIL, "broken", "mend it", conflict=True)]
    )
    assert render_text(report.findings, summary=report.summary()) == (
        "OK    a: fine\nFAIL  b: broken\n      fix: mend it\n1 ok, 0 warnings, 1 failures\n"
    )
    document = render_json(report)
    assert document["failed"] is True and document["summary"] == {"ok": 1, "warn": 0, "fail": 1}
    assert document["findings"][1] == {
        "check": "b",
        "verdict": "fail",
        "message": "broken",
        "fix": "mend it",
        "conflict": True,
    }


def test_kueues_configmap_decides_conflicts_and_hand_overs() -> None:
    setup = KueueSetup(
        "configmap",
        "ConfigMap kueue-system/kueue-manager-config",
        frameworks=frozenset({"batch/job"}),
        external_frameworks=frozenset({"AppWrapper.v1beta2.workload.codeflare.dev"}),
    )
    found = by_kind(check_integrations(CONFIG.managed_kinds(), setup))
    assert found["Job.v1.batch"].verdict is Verdict.FAIL and found["Job.v1.batch"].conflict
    assert found["AppWrapper.v1beta2.workload.codeflare.dev"].verdict is Verdict.OK
    not_listed = KueueSetup(
        "configmap", "cm", frameworks=frozenset({"jobset.x-k8s.io/jobset"}), external_frameworks=frozenset()
    )
    found = by_kind(check_integrations(CONFIG.managed_kinds(), not_listed))
    assert {f.verdict for f in found.values()} == {Verdict.FAIL}
    assert not any(f.conflict for f in found.values())


def test_without_kueues_configuration_a_registered_webhook_is_no_evidence() -> None:
    """Kueue's manifests register every integration's webhook (a disabled one is a no-op)."""
    setup = KueueSetup(
        "unknown",
        "Kueue's Configuration could not be read: ConfigMap kueue-system/kueue-manager-config not found",
        webhooks=(JOB_WEBHOOK,),
    )
    found = by_kind(check_integrations(CONFIG.managed_kinds(), setup))
    assert {f.verdict for f in found.values()} == {Verdict.WARN}
    assert not any(f.conflict for f in found.values())
    job = found["Job.v1.batch"]
    assert job.message.startswith(setup.detail + "; so whether Kueue lists Job.v1.batch")
    assert "and not batch/job under frameworks" in job.fix


def test_our_multikueue_controller_name_against_kueues() -> None:
    ours = parse_config(
        "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
        "kueueBridge: {multiKueue: {controllerName: kueue.x-k8s.io/multikueue}}\n",
        source="t",
    )
    [unknown] = check_multikueue_controller(ours, KueueSetup("unknown", "could not be read"))
    assert unknown.verdict is Verdict.WARN and not unknown.conflict
    [defaulted] = check_multikueue_controller(ours, KueueSetup("configmap", "cm", frameworks=frozenset()))
    assert defaulted.verdict is Verdict.FAIL and defaulted.conflict
    off = KueueSetup("configmap", "cm", frameworks=frozenset(), feature_gates={"MultiKueue": False})
    [gate_off] = check_multikueue_controller(ours, off)
    assert gate_off.verdict is Verdict.OK
    [default] = check_multikueue_controller(CONFIG, KueueSetup("unknown", "d"))
    assert default.verdict is Verdict.OK


def test_rights_are_one_per_verb_resource_and_name_in_the_roles_namespace() -> None:
    rights = rights_of(access_rules(CONFIG, "webhook"), namespace="kb", kueue_namespace="kueue-system")
    secret = [r for r in rights if r.resource == "secrets"]
    assert {(r.verb, r.namespace, r.name) for r in secret} == {
        ("get", "kb", "kueue-bridge-webhook-server-cert"),
        ("update", "kb", "kueue-bridge-webhook-server-cert"),
    }
    config_map = [r for r in rights if r.resource == "configmaps"]
    assert [(r.verb, r.namespace, r.optional) for r in config_map] == [("get", "kueue-system", True)]
    assert {r.text() for r in rights if r.resource == "appwrappers"} == {
        f"{v} appwrappers.workload.codeflare.dev" for v in ("get", "list", "watch")
    }
    status = rights_of(access_rules(CONFIG, "reconciler"), namespace="kb", kueue_namespace="kq")
    assert next(r for r in status if r.resource == "jobs/status").attributes() == {
        "group": "batch",
        "resource": "jobs",
        "subresource": "status",
        "verb": "get",
    }
    assert {rule.scope for rule in access_rules(CONFIG, "webhook")} == {
        "cluster",
        OWN_NAMESPACE,
        KUEUE_NAMESPACE,
    }
