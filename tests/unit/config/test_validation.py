"""Kueue's validation rules, messages and field paths; every problem is reported at once."""

from __future__ import annotations

import textwrap
from datetime import timedelta

import pytest

from shared.config import ConfigError, ConfigIssue, Configuration, parse_config, validate_configuration

HEADER = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
BUILTINS = (
    '"batch/job", "jobset.x-k8s.io/jobset", "workload.codeflare.dev/appwrapper", "tekton.dev/pipelinerun"'
)
ADAPTER = "{suspend: {path: spec.suspend}, podSets: [{template: spec.template}], finished: 'false'}"


def issues(body: str) -> list[tuple[str, str]]:
    with pytest.raises(ConfigError) as caught:
        parse_config(HEADER + textwrap.dedent(body), source="cfg.yaml")
    assert caught.value.source == "cfg.yaml"
    return [tuple(issue) for issue in caught.value.errors]  # type: ignore[misc]


def valid(body: str) -> Configuration:
    return parse_config(HEADER + textwrap.dedent(body), source="cfg.yaml")


# --- integrations ------------------------------------------------------------------------------------
def test_frameworks_must_not_be_empty_when_nothing_else_is_managed() -> None:
    assert issues("integrations: {frameworks: []}") == [
        ("integrations.frameworks", "Required value: cannot be empty")
    ]


def test_frameworks_may_be_empty_with_a_declarative_external_framework() -> None:
    config = valid(
        f"integrations: {{frameworks: [], externalFrameworks: [{{name: A.v1.x.io, adapter: {ADAPTER}}}]}}"
    )
    assert [kind.gvk.kind for kind in config.managed_kinds()] == ["A"]


def test_null_frameworks_get_the_default() -> None:
    assert valid("integrations: {frameworks: null}").integrations.frameworks == ("batch/job",)


def test_unknown_framework_is_not_supported() -> None:
    assert issues("integrations: {frameworks: [batch/job, foo]}") == [
        ("integrations.frameworks[1]", f'Unsupported value: "foo": supported values: {BUILTINS}')
    ]


@pytest.mark.parametrize("name", ["ray.io/rayjob", "pod", "kubeflow.org/pytorchjob", "deployment"])
def test_kueue_frameworks_without_an_adapter_say_so(name: str) -> None:
    assert issues(f"integrations: {{frameworks: [{name}]}}") == [
        (
            "integrations.frameworks[0]",
            f'Unsupported value: "{name}": kueue-bridge has no adapter for this Kueue framework',
        )
    ]


def test_every_builtin_framework_is_accepted() -> None:
    names = [
        "batch/job",
        "jobset.x-k8s.io/jobset",
        "workload.codeflare.dev/appwrapper",
        "tekton.dev/pipelinerun",
    ]
    assert valid(f"integrations: {{frameworks: [{', '.join(names)}]}}").integrations.frameworks == tuple(
        names
    )


def test_duplicate_frameworks() -> None:
    assert issues("integrations: {frameworks: [batch/job, batch/job]}") == [
        ("integrations.frameworks[1]", 'Duplicate value: "batch/job"')
    ]


def test_external_duplicate_of_a_framework_uses_the_gvk() -> None:
    assert issues("integrations: {frameworks: [batch/job], externalFrameworks: [Job.v1.batch]}") == [
        ("integrations.externalFrameworks[0]", 'Duplicate value: "Job.v1.batch"')
    ]


def test_duplicate_external_frameworks_in_object_form() -> None:
    body = f"""\
    integrations:
      externalFrameworks:
      - {{name: A.v1.x.io, adapter: {ADAPTER}}}
      - {{name: A.v1.x.io, adapter: {ADAPTER}}}
    """
    assert issues(body) == [("integrations.externalFrameworks[1].name", 'Duplicate value: "A.v1.x.io"')]


@pytest.mark.parametrize("name", ["Job", "Job.v1", "Job..batch", ".v1.batch"])
def test_unparsable_external_names(name: str) -> None:
    assert issues(f"integrations: {{externalFrameworks: ['{name}']}}") == [
        (
            "integrations.externalFrameworks[0]",
            f"Invalid value: \"{name}\": must be format, 'Kind.version.group.com'",
        )
    ]


def test_plain_external_name_needs_a_builtin_adapter() -> None:
    [(path, message)] = issues("integrations: {externalFrameworks: [Widget.v1.example.com]}")
    assert path == "integrations.externalFrameworks[0]"
    assert message.startswith('Required value: "Widget.v1.example.com" has no built-in adapter')
    assert "PipelineRun.v1.tekton.dev" in message


def test_object_without_adapter_points_at_the_adapter_field() -> None:
    assert issues("integrations: {externalFrameworks: [{name: W.v1.x.io, resource: ws}]}")[0][0] == (
        "integrations.externalFrameworks[0].adapter"
    )


def test_plain_external_name_of_a_builtin_kind_enables_it() -> None:
    config = valid(
        "integrations: {externalFrameworks: [PipelineRun.v1.tekton.dev, JobSet.v1alpha2.jobset.x-k8s.io]}"
    )
    assert [kind.builtin for kind in config.managed_kinds()] == [
        "batch/job",
        "tekton.dev/pipelinerun",
        "jobset.x-k8s.io/jobset",
    ]


def test_resource_and_label_keys_are_validated() -> None:
    body = f"""\
    integrations:
      externalFrameworks: [{{name: A.v1.x.io, resource: Bad_Plural, adapter: {ADAPTER}}}]
      labelKeysToCopy: [ok.example.com/team, "bad key"]
    """
    paths = [path for path, _ in issues(body)]
    assert paths == ["integrations.externalFrameworks[0].resource", "integrations.labelKeysToCopy[1]"]


def test_declarative_adapter_errors_have_camel_case_paths() -> None:
    body = """\
    integrations:
      externalFrameworks:
      - PipelineRun.v1.tekton.dev
      - name: A.v1.x.io
        adapter: {suspend: {path: spec.suspend}, podSets: [{name: main}], finished: 'false'}
    """
    assert issues(body) == [
        ("integrations.externalFrameworks[1].adapter.podSets[0].template", "Field required")
    ]


def test_union_errors_report_only_the_branch_that_fits() -> None:
    body = """\
    integrations:
      externalFrameworks:
      - name: A.v1.x.io
        adapter:
          suspend: {path: spec.suspend}
          podSets: [{name: {path: a, expression: b}, template: t}, {name: 5, template: t}]
          finished: 'false'
    """
    assert issues(body) == [
        (
            "integrations.externalFrameworks[0].adapter.podSets[0].name",
            "set exactly one of 'path' or 'expression'",
        ),
        ("integrations.externalFrameworks[0].adapter.podSets[1].name", "must be a string, not integer"),
    ]


# --- namespace selector ------------------------------------------------------------------------------
def test_selector_must_not_match_kube_system_or_our_namespace() -> None:
    assert issues("managedJobsNamespaceSelector: {}") == [
        ("managedJobsNamespaceSelector", 'Invalid value: "": should not match the "kube-system" namespace'),
        ("managedJobsNamespaceSelector", 'Invalid value: "": should not match the "kueue-system" namespace'),
    ]


def test_selector_checks_use_the_configured_namespace() -> None:
    body = """\
    namespace: ops
    managedJobsNamespaceSelector:
      matchExpressions: [{key: kubernetes.io/metadata.name, operator: NotIn, values: [kube-system]}]
    """
    assert issues(body) == [
        (
            "managedJobsNamespaceSelector",
            'Invalid value: "kubernetes.io/metadata.name notin (kube-system)": should not match the "ops" namespace',
        )
    ]


def test_selector_structure_errors_have_paths() -> None:
    body = "managedJobsNamespaceSelector: {matchExpressions: [{key: team, operator: Equals, values: [a]}]}"
    assert issues(body) == [
        (
            "managedJobsNamespaceSelector.matchExpressions[0].operator",
            'Invalid value: "Equals": not a valid selector operator',
        )
    ]


def test_an_opt_in_selector_is_valid() -> None:
    config = valid("managedJobsNamespaceSelector: {matchLabels: {kueue-managed: 'true'}}")
    assert config.managed_jobs_namespace_selector.matches({"kueue-managed": "true"})


def test_namespace_must_be_a_dns_label() -> None:
    [(path, message)] = issues("namespace: Team_A")
    assert path == "namespace"
    assert message.startswith('Invalid value: "Team_A": a lowercase RFC 1123 label')


# --- waitForPodsReady --------------------------------------------------------------------------------
def test_negative_wait_for_pods_ready_values() -> None:
    body = """\
    waitForPodsReady:
      timeout: -1m
      recoveryTimeout: -2s
      requeuingStrategy: {backoffLimitCount: -1, backoffBaseSeconds: -1, backoffMaxSeconds: -1}
    """
    negative = "must be greater than or equal to 0"
    assert issues(body) == [
        ("waitForPodsReady.timeout", f"Invalid value: -1m0s: {negative}"),
        ("waitForPodsReady.recoveryTimeout", f"Invalid value: -2s: {negative}"),
        ("waitForPodsReady.requeuingStrategy.backoffLimitCount", f"Invalid value: -1: {negative}"),
        ("waitForPodsReady.requeuingStrategy.backoffBaseSeconds", f"Invalid value: -1: {negative}"),
        ("waitForPodsReady.requeuingStrategy.backoffMaxSeconds", f"Invalid value: -1: {negative}"),
    ]


def test_requeuing_timestamp_is_creation_or_eviction() -> None:
    assert valid("waitForPodsReady: {requeuingStrategy: {timestamp: Creation}}")
    assert issues("waitForPodsReady: {requeuingStrategy: {timestamp: Now}}") == [
        (
            "waitForPodsReady.requeuingStrategy.timestamp",
            'Unsupported value: "Now": supported values: "Creation", "Eviction"',
        )
    ]


# --- multiKueue --------------------------------------------------------------------------------------
def test_multikueue_negative_durations() -> None:
    assert issues("multiKueue: {gcInterval: -1s, workerLostTimeout: -1h}") == [
        ("multiKueue.gcInterval", "Invalid value: -1s: must be greater than or equal to 0"),
        ("multiKueue.workerLostTimeout", "Invalid value: -1h0m0s: must be greater than or equal to 0"),
    ]


def test_multikueue_zero_gc_interval_is_allowed() -> None:
    assert valid("multiKueue: {gcInterval: 0s}").multi_kueue.gc_interval.total_seconds() == 0


def test_multikueue_origin_must_be_a_label_value() -> None:
    [(path, message)] = issues("multiKueue: {origin: 'not valid'}")
    assert path == "multiKueue.origin"
    assert message.startswith('Invalid value: "not valid": a valid label must be an empty string')
    # real Kueue (apimachinery v0.36's content.IsLabelValue) says "bytes", and counts them
    assert issues("multiKueue: {origin: " + "x" * 64 + "}")[0][1].endswith("must be no more than 63 bytes")
    assert "must be no more than 63 bytes," in issues("multiKueue: {origin: " + "é" * 32 + "}")[0][1]
    [(_, newline)] = issues('multiKueue: {origin: "worker\\n"}')
    assert "a valid label must be an empty string" in newline


def test_multikueue_external_frameworks() -> None:
    body = """\
    integrations: {frameworks: [batch/job, jobset.x-k8s.io/jobset]}
    multiKueue:
      externalFrameworks:
      - {name: Widget.v1.example.com}
      - {name: widget}
      - {name: Widget.v1.example.com}
      - {name: JobSet.v1alpha2.jobset.x-k8s.io}
    """
    assert issues(body) == [
        (
            "multiKueue.externalFrameworks[1].name",
            "Invalid value: \"widget\": must be in 'kind.version.group' format",
        ),
        ("multiKueue.externalFrameworks[2].name", 'Duplicate value: "Widget.v1.example.com"'),
        (
            "multiKueue.externalFrameworks[3].name",
            'Invalid value: "JobSet.v1alpha2.jobset.x-k8s.io": conflicts with a built-in MultiKueue adapter',
        ),
    ]


def test_multikueue_empty_origin_is_the_default_one() -> None:
    # Kueue: cmp.Or(ptr.Deref(origin, ""), DefaultMultiKueueOrigin)
    assert valid("multiKueue: {origin: ''}").multi_kueue.origin == "multikueue"


def test_multikueue_incremental_dispatcher_config() -> None:
    incremental = "kueue.x-k8s.io/multikueue-dispatcher-incremental"
    assert valid(f"multiKueue: {{dispatcherName: {incremental}}}").multi_kueue.incremental_step_size == 3
    config = valid(
        f"multiKueue: {{dispatcherName: {incremental}, incrementalDispatcherConfig: {{stepSize: 1}}}}"
    )
    assert config.multi_kueue.incremental_step_size == 1
    assert issues(
        f"multiKueue: {{dispatcherName: {incremental}, incrementalDispatcherConfig: {{stepSize: 0}}}}"
    ) == [
        (
            "multiKueue.incrementalDispatcherConfig.stepSize",
            "Invalid value: 0: must be greater than or equal to 1",
        )
    ]
    assert issues("multiKueue: {incrementalDispatcherConfig: {stepSize: 2}}") == [
        (
            "multiKueue.incrementalDispatcherConfig",
            "Invalid value: {stepSize: 2}: incrementalDispatcherConfig is only valid when dispatcherName "
            "is set to the incremental dispatcher",
        )
    ]


def test_bridge_multikueue_controller_name_is_a_qualified_name() -> None:
    assert valid("kueueBridge: {}").kueue_bridge.multi_kueue.controller_name == "kueue-bridge.dev/multikueue"
    [(path, message)] = issues("kueueBridge: {multiKueue: {controllerName: 'not valid'}}")
    assert path == "kueueBridge.multiKueue.controllerName"
    assert message.startswith('Invalid value: "not valid": name part must consist of')


def test_multikueue_external_framework_of_a_disabled_builtin_is_allowed() -> None:
    config = valid("multiKueue: {externalFrameworks: [{name: JobSet.v1alpha2.jobset.x-k8s.io}]}")
    assert config.multi_kueue.external_frameworks[0].name == "JobSet.v1alpha2.jobset.x-k8s.io"


# --- objectRetentionPolicies -------------------------------------------------------------------------
def test_negative_retention_periods_are_reported_like_kueue() -> None:
    # Kueue passes afterFinished as a duration and afterDeactivatedByKueue as a string: only the
    # second is quoted.
    body = "objectRetentionPolicies: {workloads: {afterFinished: -5m, afterDeactivatedByKueue: -90s}}"
    assert issues(body) == [
        (
            "objectRetentionPolicies.workloads.afterFinished",
            "Invalid value: -5m0s: must be greater than or equal to 0",
        ),
        (
            "objectRetentionPolicies.workloads.afterDeactivatedByKueue",
            'Invalid value: "-1m30s": must be greater than or equal to 0',
        ),
    ]


def test_retention_periods_are_durations_and_zero_is_allowed() -> None:
    config = valid("objectRetentionPolicies: {workloads: {afterFinished: 0s, afterDeactivatedByKueue: 0s}}")
    assert config.deactivation_retention() == timedelta(0)
    assert issues("objectRetentionPolicies: {workloads: {afterDeactivatedByKueue: 60}}") == [
        (
            "objectRetentionPolicies.workloads.afterDeactivatedByKueue",
            'must be a duration string such as "90s" or "1h30m"',
        )
    ]
    assert issues("objectRetentionPolicies: {workloads: {afterDeleted: 1m}}") == [
        ("objectRetentionPolicies.workloads.afterDeleted", 'unknown field "afterDeleted"')
    ]


@pytest.mark.parametrize(
    "body", ["", "objectRetentionPolicies: {}", "objectRetentionPolicies: {workloads: {afterFinished: 1h}}"]
)
def test_an_unset_deactivation_retention_is_none(body: str) -> None:
    assert valid(body).deactivation_retention() is None


# --- process settings --------------------------------------------------------------------------------
def test_leader_election_rules() -> None:
    body = (
        "leaderElection: {leaseDuration: 10s, renewDeadline: 10s, retryPeriod: 0s, resourceLock: configmaps}"
    )
    assert issues(body) == [
        ("leaderElection.retryPeriod", "Invalid value: 0s: must be greater than zero"),
        (
            "leaderElection.leaseDuration",
            "Invalid value: 10s: LeaseDuration must be greater than RenewDeadline",
        ),
        ("leaderElection.resourceLock", 'Unsupported value: "configmaps": supported values: "leases"'),
    ]


def test_renew_deadline_must_exceed_jittered_retry_period() -> None:
    [(path, message)] = issues("leaderElection: {renewDeadline: 2s, retryPeriod: 2s}")
    assert path == "leaderElection.renewDeadline"
    assert "RenewDeadline must be greater than retryPeriod*JitterFactor (1.2)" in message


def test_leader_election_rules_are_skipped_when_disabled() -> None:
    assert (
        valid("leaderElection: {leaderElect: false, leaseDuration: 1s}").leader_election.leader_elect is False
    )


def test_client_connection_must_be_positive() -> None:
    assert issues("clientConnection: {qps: -1.5, burst: 0}") == [
        ("clientConnection.qps", "Invalid value: -1.5: must be greater than zero"),
        ("clientConnection.burst", "Invalid value: 0: must be greater than zero"),
    ]


def test_ports_and_bind_addresses() -> None:
    body = "webhook: {port: 70000}\nmetrics: {bindAddress: ':99999'}\nhealth: {healthProbeBindAddress: localhost}\n"
    assert [path for path, _ in issues(body)] == [
        "webhook.port",
        "metrics.bindAddress",
        "health.healthProbeBindAddress",
    ]
    assert issues("webhook: {port: 0}")[0][1] == "Invalid value: 0: must be between 1 and 65535, inclusive"
    config = valid("metrics: {bindAddress: '0'}\nhealth: {healthProbeBindAddress: '[::1]:8081'}")
    assert config.metrics.bind_address == "0"


def test_cert_names_are_checked_only_when_enabled() -> None:
    body = "internalCertManagement: {webhookServiceName: 1svc, webhookSecretName: Bad}"
    assert [path for path, _ in issues(body)] == [
        "internalCertManagement.webhookServiceName",
        "internalCertManagement.webhookSecretName",
    ]
    assert valid("internalCertManagement: {enable: false, webhookServiceName: 1svc}")


def test_extension_section_rules() -> None:
    body = "kueueBridge: {multiKueueControllerNames: [kueue.x-k8s.io/multikueue, kueue.x-k8s.io/multikueue], fieldManager: ''}"
    assert issues(body) == [
        ("kueueBridge.multiKueueControllerNames[1]", 'Duplicate value: "kueue.x-k8s.io/multikueue"'),
        ("kueueBridge.fieldManager", 'Invalid value: "": must be 1 to 128 characters'),
    ]
    assert issues("kueueBridge: {multiKueueControllerNames: []}") == [
        ("kueueBridge.multiKueueControllerNames", "Required value: cannot be empty")
    ]


# --- collection and document-level problems ---------------------------------------------------------
def test_rules_of_sound_sections_run_despite_structural_errors_elsewhere() -> None:
    body = """\
    webhook: {port: "9443"}
    integrations: {frameworks: [foo]}
    multiKueue: {gcInterval: soon, origin: 'bad origin'}
    """
    # multiKueue.origin is not checked: a section with a broken field skips its own rules, which
    # would otherwise run on defaults and report phantom problems.
    assert [path for path, _ in issues(body)] == [
        "multiKueue.gcInterval",
        "webhook.port",
        "integrations.frameworks[0]",
    ]


@pytest.mark.parametrize(
    ("body", "path", "message"),
    [
        (
            "apiVersion: config.kueue.x-k8s.io/v1beta1\n",
            "apiVersion",
            'Unsupported value: "config.kueue.x-k8s.io/v1beta1"',
        ),
        ("kind: Config\n", "kind", 'Unsupported value: "Config": supported values: "Configuration"'),
    ],
)
def test_wrong_api_version_or_kind(body: str, path: str, message: str) -> None:
    text = HEADER.replace(
        "apiVersion: config.kueue.x-k8s.io/v1beta2\n" if path == "apiVersion" else "kind: Configuration\n",
        body,
    )
    with pytest.raises(ConfigError) as caught:
        parse_config(text, source="x")
    assert caught.value.errors[0].path == path
    assert caught.value.errors[0].message.startswith(message)


@pytest.mark.parametrize("missing", ["apiVersion", "kind"])
def test_api_version_and_kind_are_required(missing: str) -> None:
    text = "\n".join(line for line in HEADER.splitlines() if not line.startswith(missing))
    with pytest.raises(ConfigError) as caught:
        parse_config(text, source="x")
    assert caught.value.errors == [ConfigIssue(missing, "Field required")]


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "the configuration is empty"),
        ("- a\n- b\n", "must be a mapping (apiVersion, kind, ...), not a list"),
        ("just text", "not a string"),
        ("a: [1\n", "invalid YAML at line 2, column 1"),
        ("a: 1\na: 2\n", "found duplicate key 'a'"),
        ("a: 1\n---\nb: 2\n", "expected a single document"),
        ("a: *nope\n", "found undefined alias"),
    ],
)
def test_document_level_problems(text: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, source="x")
    [(path, message)] = caught.value.errors
    assert path == ""
    assert fragment in message


def test_config_error_lines() -> None:
    error = ConfigError("f.yaml", [ConfigIssue("a.b", "bad"), ConfigIssue("", "worse")])
    assert error.lines() == ["f.yaml: a.b: bad", "f.yaml: worse"]
    assert str(error) == "f.yaml: a.b: bad\nf.yaml: worse"


def test_validate_configuration_checks_python_built_models() -> None:
    from shared.config import Integrations

    assert validate_configuration(Configuration()) == []
    broken = Configuration(integrations=Integrations(frameworks=("pod",)))
    assert [issue.path for issue in validate_configuration(broken)] == ["integrations.frameworks[0]"]
