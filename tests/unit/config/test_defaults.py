"""Every default of the configuration, read from a file that sets only apiVersion and kind."""

from __future__ import annotations

from datetime import timedelta

import pytest

from shared.config import (
    CONFIG_API_VERSION,
    Configuration,
    default_config,
    dump_config,
    parse_config,
)
from shared.constants import MULTIKUEUE_CONTROLLER_NAME
from shared.kube import GroupVersionKind

MINIMAL = f"apiVersion: {CONFIG_API_VERSION}\nkind: Configuration\n"


@pytest.fixture
def config() -> Configuration:
    return parse_config(MINIMAL, source="minimal.yaml")


def test_top_level_defaults(config: Configuration) -> None:
    assert config.api_version == "config.kueue.x-k8s.io/v1beta2"
    assert config.kind == "Configuration"
    assert config.namespace == "kueue-system"
    assert config.manage_jobs_without_queue_name is False
    assert config.feature_gates == {}


def test_namespace_selector_excludes_kube_system_and_our_namespace(config: Configuration) -> None:
    assert config.managed_jobs_namespace_selector.to_wire() == {
        "matchExpressions": [
            {
                "key": "kubernetes.io/metadata.name",
                "operator": "NotIn",
                "values": ["kube-system", "kueue-system"],
            }
        ]
    }


def test_namespace_selector_and_lease_namespace_follow_the_namespace() -> None:
    config = parse_config(MINIMAL + "namespace: team-a\n", source="x")
    assert config.managed_jobs_namespace_selector.match_expressions[0].values == ("kube-system", "team-a")
    assert config.leader_election.resource_namespace == "team-a"
    assert not config.managed_jobs_namespace_selector.matches({"kubernetes.io/metadata.name": "team-a"})
    assert config.managed_jobs_namespace_selector.matches({"kubernetes.io/metadata.name": "default"})


def test_default_namespace_parameter_stands_in_for_the_service_account_file() -> None:
    assert parse_config(MINIMAL, source="x", default_namespace="ops").namespace == "ops"
    assert parse_config(MINIMAL + "namespace: set\n", source="x", default_namespace="ops").namespace == "set"


def test_integrations_defaults(config: Configuration) -> None:
    assert config.integrations.frameworks == ("batch/job",)
    assert config.integrations.external_frameworks == ()
    assert config.integrations.label_keys_to_copy == ()


def test_wait_for_pods_ready_is_always_on(config: Configuration) -> None:
    wfpr = config.wait_for_pods_ready
    assert wfpr.timeout == timedelta(minutes=30)
    assert wfpr.recovery_timeout == timedelta(minutes=30)
    assert wfpr.block_admission is False
    strategy = wfpr.requeuing_strategy
    assert (strategy.timestamp, strategy.backoff_base_seconds, strategy.backoff_max_seconds) == (
        "Eviction",
        60,
        3600,
    )
    assert strategy.backoff_limit_count is None


def test_recovery_timeout_defaults_to_timeout_and_zero_timeout_means_default() -> None:
    config = parse_config(MINIMAL + "waitForPodsReady: {timeout: 5m}\n", source="x")
    assert config.wait_for_pods_ready.recovery_timeout == timedelta(minutes=5)
    config = parse_config(MINIMAL + "waitForPodsReady: {timeout: 0s}\n", source="x")
    assert config.wait_for_pods_ready.timeout == timedelta(minutes=30)
    config = parse_config(MINIMAL + "waitForPodsReady: {timeout: 5m, recoveryTimeout: 1m}\n", source="x")
    assert config.wait_for_pods_ready.recovery_timeout == timedelta(minutes=1)


def test_multikueue_defaults(config: Configuration) -> None:
    mk = config.multi_kueue
    assert mk.gc_interval == timedelta(minutes=1)
    assert mk.origin == "multikueue"
    assert mk.worker_lost_timeout == timedelta(minutes=15)
    assert mk.dispatcher_name == "kueue.x-k8s.io/multikueue-dispatcher-all-at-once"
    assert mk.external_frameworks == ()


def test_process_defaults(config: Configuration) -> None:
    assert (config.webhook.port, config.webhook.host) == (9443, "")
    assert config.webhook.cert_dir == "/tmp/k8s-webhook-server/serving-certs"
    icm = config.internal_cert_management
    assert icm.enable is True
    assert icm.webhook_service_name == "kueue-bridge-webhook-service"
    assert icm.webhook_secret_name == "kueue-bridge-webhook-server-cert"
    le = config.leader_election
    assert (le.leader_elect, le.resource_name, le.resource_lock) == (True, "kueue-bridge", "leases")
    assert le.resource_namespace == "kueue-system"
    assert (le.lease_duration, le.renew_deadline, le.retry_period) == (
        timedelta(seconds=15),
        timedelta(seconds=10),
        timedelta(seconds=2),
    )
    assert le.lease_name("reconciler") == "kueue-bridge-reconciler"
    assert (config.client_connection.qps, config.client_connection.burst) == (300.0, 500)
    assert config.metrics.bind_address == ":8443"
    assert config.health.health_probe_bind_address == ":8081"


def test_extension_defaults(config: Configuration) -> None:
    assert config.kueue_bridge.multi_kueue_controller_names == (MULTIKUEUE_CONTROLLER_NAME,)
    assert config.kueue_bridge.field_manager == "kueue-bridge"


def test_python_defaults_equal_file_defaults(config: Configuration) -> None:
    assert Configuration() == config
    assert default_config() == config


def test_dump_fills_every_default_in_go_syntax(config: Configuration) -> None:
    wire = dump_config(config)
    assert wire["waitForPodsReady"]["timeout"] == "30m0s"
    assert wire["multiKueue"]["gcInterval"] == "1m0s"
    assert wire["leaderElection"]["leaseDuration"] == "15s"
    assert "backoffLimitCount" not in wire["waitForPodsReady"]["requeuingStrategy"]
    assert list(wire)[:3] == ["apiVersion", "kind", "namespace"]
    assert list(wire)[-1] == "kueueBridge"


def test_dump_round_trips(config: Configuration) -> None:
    import yaml

    assert parse_config(yaml.safe_dump(dump_config(config)), source="again") == config


def test_managed_kinds_for_builtins_and_declarative_adapters() -> None:
    text = MINIMAL + (
        "integrations:\n"
        "  frameworks: [batch/job]\n"
        "  externalFrameworks:\n"
        "  - PipelineRun.v1.tekton.dev\n"
        "  - name: Policy.v1.example.com\n"
        "    adapter: {suspend: {path: spec.suspend}, podSets: [{template: spec.template}], finished: 'false'}\n"
    )
    kinds = parse_config(text, source="x").managed_kinds()
    assert [(k.gvk, k.resource, k.builtin, k.adapter is not None) for k in kinds] == [
        (GroupVersionKind("batch", "v1", "Job"), "jobs", "batch/job", False),
        (
            GroupVersionKind("tekton.dev", "v1", "PipelineRun"),
            "pipelineruns",
            "tekton.dev/pipelinerun",
            False,
        ),
        (GroupVersionKind("example.com", "v1", "Policy"), "policies", None, True),
    ]


def test_feature_gate_lookup() -> None:
    config = parse_config(MINIMAL + "featureGates: {ShortWorkloadNames: true}\n", source="x")
    assert config.feature_gate("ShortWorkloadNames", default=False) is True
    assert config.feature_gate("Other", default=True) is True


def test_object_retention_policies_have_no_default_and_round_trip(config: Configuration) -> None:
    assert config.object_retention_policies is None
    assert "objectRetentionPolicies" not in dump_config(config), "Kueue prints no default for it"
    text = (
        MINIMAL + "objectRetentionPolicies: {workloads: {afterFinished: 90m, afterDeactivatedByKueue: 0s}}\n"
    )
    wire = dump_config(parse_config(text, source="x"))
    assert wire["objectRetentionPolicies"] == {
        "workloads": {"afterFinished": "1h30m0s", "afterDeactivatedByKueue": "0s"}
    }


def test_kueue_only_sections_are_preserved() -> None:
    text = (
        MINIMAL
        + "fairSharing: {preemptionStrategies: [LessThanInitialShare]}\ncontroller: {groupKindConcurrency: {}}\n"
    )
    wire = dump_config(parse_config(text, source="x"))
    assert wire["fairSharing"] == {"preemptionStrategies": ["LessThanInitialShare"]}
    assert wire["controller"] == {"groupKindConcurrency": {}}


@pytest.mark.parametrize("zero", ["0", "0s", "0h0m", "-0s"])
def test_every_spelling_of_a_zero_timeout_means_the_default(zero: str) -> None:
    config = parse_config(MINIMAL + f"waitForPodsReady: {{timeout: '{zero}'}}\n", source="x")
    assert config.wait_for_pods_ready.timeout == timedelta(minutes=30)


def test_dependent_defaults_apply_to_models_built_in_python() -> None:
    from shared.config import LeaderElection, WaitForPodsReady

    config = Configuration(namespace="ops", leader_election=LeaderElection(resource_name="x"))
    assert config.leader_election.resource_namespace == "ops"
    assert config.leader_election.resource_name == "x"
    assert config.managed_jobs_namespace_selector.match_expressions[0].values == ("kube-system", "ops")
    wfpr = WaitForPodsReady(timeout=timedelta(minutes=5), recovery_timeout=timedelta(minutes=1))
    assert wfpr.recovery_timeout == timedelta(minutes=1)
    assert WaitForPodsReady(timeout=timedelta(minutes=5)).recovery_timeout == timedelta(minutes=5)
