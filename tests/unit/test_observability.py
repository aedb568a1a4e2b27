"""deploy/observability: every metric the dashboard and the alert rules query exists.

A metric is either kueue-bridge's -- one of the families the components register (the same
constructors the processes call, rendered as their ``/metrics`` renders them) -- or Kueue's:
:data:`KUEUE_METRICS`, the names and labels of Kueue's controller manager metrics that the dashboard
uses, as ``pkg/metrics/metrics.go`` of kubernetes-sigs/kueue registers them (checked at ff69552;
``tests/real/test_observability.py`` compares them with what the real managers of the kit, ff69552
and v0.19.2, serve). Label matchers on Kueue's metrics must use labels those metrics have.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import CollectorRegistry, generate_latest

from appwrapper.__main__ import phase_counter
from multikueue.metrics import multikueue_metrics
from reconciler.event_reporting import workload_event_counter
from shared.kube import KubeMetrics
from webhook.serving.metrics import WebhookMetrics

OBSERVABILITY = Path(__file__).resolve().parents[2] / "deploy" / "observability"
DASHBOARD = OBSERVABILITY / "kueue-bridge-dashboard.json"
ALERTS = OBSERVABILITY / "kueue-bridge-alerts.yaml"

#: Kueue's metrics the dashboard and the rules read -> their labels (pkg/metrics/metrics.go)
KUEUE_METRICS: dict[str, frozenset[str]] = {
    "kueue_pending_workloads": frozenset({"cluster_queue", "status", "replica_role"}),
    "kueue_admitted_active_workloads": frozenset({"cluster_queue", "replica_role"}),
    "kueue_reserving_active_workloads": frozenset({"cluster_queue", "replica_role"}),
    "kueue_admitted_workloads_total": frozenset({"cluster_queue", "priority_class", "replica_role"}),
    "kueue_admission_wait_time_seconds": frozenset({"cluster_queue", "priority_class", "replica_role"}),
    "kueue_quota_reserved_wait_time_seconds": frozenset({"cluster_queue", "priority_class", "replica_role"}),
    "kueue_evicted_workloads_total": frozenset(
        {"cluster_queue", "reason", "underlying_cause", "priority_class", "replica_role"}
    ),
    "kueue_cluster_queue_status": frozenset({"cluster_queue", "status", "replica_role"}),
    "kueue_admission_attempts_total": frozenset({"result", "replica_role"}),
    "kueue_admission_attempt_duration_seconds": frozenset({"result", "replica_role"}),
}

_PROMQL_WORDS = frozenset(
    {
        # aggregations, functions and keywords the files use
        "sum", "max", "min", "avg", "count", "by", "without", "on", "ignoring", "group_left",
        "group_right", "and", "or", "unless", "bool", "offset", "rate", "increase", "irate", "deriv",
        "histogram_quantile", "vector", "label_values", "le",
    }
)  # fmt: skip
_SUFFIXES = ("_bucket", "_sum", "_count")


def dashboard() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return document


def alert_rules() -> list[dict[str, Any]]:
    document = yaml.safe_load(ALERTS.read_text())
    return [rule for group in document["groups"] for rule in group["rules"]]


def queries() -> list[str]:
    """Every PromQL expression of the dashboard (panels and variables) and of the rules."""
    found = [target["expr"] for panel in dashboard()["panels"] for target in panel.get("targets", [])]
    for variable in dashboard()["templating"]["list"]:
        if variable["type"] == "query":
            found.append(variable["query"]["query"])
    found += [rule["expr"] for rule in alert_rules()]
    return found


def metric_names(expr: str) -> dict[str, set[str]]:
    """Metric name -> label names of its matchers, for one expression."""
    text = re.sub(r'"[^"]*"', '""', expr)  # string literals
    text = re.sub(r"\[[^\]]*\]", "", text)  # range selectors
    text = re.sub(r"label_values\(([^,]+),\s*\w+\)", r"\1", text)  # Grafana: (metric, label)
    matchers: dict[str, set[str]] = {}
    for name, body in re.findall(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^}]*)\}", text):
        matchers.setdefault(name, set()).update(
            re.findall(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!=|!~|=)", body)
        )
    text = re.sub(r"\{[^}]*\}", "", text)
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", r"\1", text)
    text = re.sub(r"\$\w+", "", text)  # Grafana variables ($__rate_interval)
    names: dict[str, set[str]] = {}
    for token in re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*", text):
        if token in _PROMQL_WORDS:
            continue
        names.setdefault(token, set()).update(matchers.get(token, set()))
    return names


def family(name: str) -> str:
    for suffix in _SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def our_families() -> set[str]:
    """The metric families the components' /metrics show (HELP lines), from their constructors."""
    controller = CollectorRegistry()
    KubeMetrics(controller)  # every controller process: client, informers, queues, leader election
    workload_event_counter(controller)  # the reconciler's Workload life events
    multikueue_metrics(controller)
    phase_counter(controller)
    webhook = WebhookMetrics().registry
    text = (generate_latest(controller) + generate_latest(webhook)).decode()
    return set(re.findall(r"^# HELP (\S+)", text, re.M))


def test_the_dashboard_is_a_grafana_dashboard_with_unique_panels_on_a_prometheus_datasource() -> None:
    board = dashboard()
    assert board["uid"] == "kueue-bridge" and board["title"]
    ids = [panel["id"] for panel in board["panels"]]
    assert len(ids) == len(set(ids))
    variables = {variable["name"]: variable for variable in board["templating"]["list"]}
    assert variables["datasource"]["query"] == "prometheus"
    for panel in board["panels"]:
        assert {"h", "w", "x", "y"} <= set(panel["gridPos"]), panel["title"]
        for target in panel.get("targets", []):
            assert target["datasource"]["uid"] == "${datasource}", panel["title"]
            assert target["expr"].count("(") == target["expr"].count(")"), target["expr"]
    titles = " ".join(panel["title"].lower() for panel in board["panels"])
    for topic in (
        "pending",
        "admitted",
        "admission wait",
        "reconcile",
        "webhook latency",
        "denials",
        "dispatch",
        "health",
    ):
        assert topic in titles, topic


def test_every_alert_has_a_severity_a_summary_and_a_balanced_expression() -> None:
    rules = alert_rules()
    assert len({rule["alert"] for rule in rules}) == len(rules)
    for rule in rules:
        assert rule["labels"]["severity"] in {"info", "warning", "critical"}, rule["alert"]
        assert rule["annotations"]["summary"], rule["alert"]
        assert rule["expr"].count("(") == rule["expr"].count(")"), rule["alert"]


def test_every_queried_metric_is_ours_or_a_documented_kueue_metric() -> None:
    ours = our_families()
    used: dict[str, set[str]] = {}
    for expr in queries():
        for name, labels in metric_names(expr).items():
            used.setdefault(name, set()).update(labels)
    assert used, "no metric found: the extraction is broken"
    unknown = sorted(name for name in used if family(name) not in ours and family(name) not in KUEUE_METRICS)
    assert not unknown, f"not a metric of kueue-bridge nor of Kueue: {unknown}"
    for name, labels in used.items():
        if family(name) in KUEUE_METRICS:
            assert labels <= KUEUE_METRICS[family(name)], (name, labels)
    # the dashboard covers every component's own metrics and Kueue's queues
    families = {family(name) for name in used}
    for expected in (
        "kueue_bridge_webhook_request_duration_seconds",
        "kueue_bridge_controller_runtime_reconcile_errors_total",
        "kueue_bridge_multikueue_dispatch_duration_seconds",
        "kueue_bridge_multikueue_cluster_active",
        "kueue_pending_workloads",
        "kueue_admission_wait_time_seconds",
    ):
        assert expected in families, expected


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ('sum by (le, x) (rate(a_bucket{x=~"$q"}[$__rate_interval]))', {"a_bucket": {"x"}}),
        ("count(b == 0) or vector(0)", {"b": set()}),
        ("label_values(e, cluster_queue)", {"e": set()}),
        ('max by (c) (d{status!="active"}) == 1', {"d": {"status"}}),
    ],
)
def test_metric_names_are_extracted_from_promql(expr: str, expected: dict[str, set[str]]) -> None:
    assert metric_names(expr) == expected
