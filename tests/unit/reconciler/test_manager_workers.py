"""Each job kind's controller runs as many workers as the configuration gives that kind; the settings
the reconciler takes from Kueue's configuration (namespace selector, feature gates)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from reconciler.__main__ import _parser
from reconciler.manager import ReconcilerControllers, settings_from_config
from shared.config import parse_config
from shared.frameworks.registry import FrameworkRegistry
from shared.kube import KubeClient
from shared.kube.clock import FakeClock
from tests.unit.kube.conftest import make_client
from tests.unit.kube.fakeapi import FakeApi
from webhook.settings_from_config import settings_from_config as webhook_settings_from_config

CONFIG = """apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
integrations:
  frameworks: [batch/job, jobset.x-k8s.io/jobset]
controller:
  groupKindConcurrency: {Job.batch: 3}
"""


class Silent:
    def record(self, **_: object) -> None:
        return None


@pytest.fixture
async def client() -> AsyncIterator[KubeClient]:
    kube = make_client(FakeApi(), clock=FakeClock())
    yield kube
    await kube.aclose()


def test_workers_per_kind_follow_group_kind_concurrency(client: KubeClient) -> None:
    controllers = ReconcilerControllers.from_config(
        parse_config(CONFIG, source="x"), client=client, events=Silent()
    )
    assert {controller.name: controller.workers for controller in controllers.controllers} == {
        "job": 3,
        "jobset": 16,
    }


def test_workers_override_applies_to_every_kind(client: KubeClient) -> None:
    config = parse_config(CONFIG, source="x")
    controllers = ReconcilerControllers.from_config(config, client=client, events=Silent(), workers=7)
    assert {controller.name: controller.workers for controller in controllers.controllers} == {
        "job": 7,
        "jobset": 7,
    }


@pytest.mark.parametrize("value", ["0", "-1", "many"])
def test_workers_flag_rejects_non_positive_values(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        _parser().parse_args(["--config", "c.yaml", "--workers", value])
    assert "--workers" in capsys.readouterr().err


def test_workers_flag_is_unset_by_default() -> None:
    assert _parser().parse_args(["--config", "c.yaml"]).workers is None


@pytest.mark.parametrize(
    ("selector", "namespace", "managed"),
    [
        (None, "kube-system", False),  # the v1beta2 default leaves Kueue's and the system's alone
        (None, "team-a", True),
        ({"matchLabels": {"team": "a"}}, "team-a", True),
        ({"matchLabels": {"team": "a"}}, "team-b", False),
    ],
)
def test_reconciler_and_webhook_apply_the_configured_namespace_selector(
    selector: dict[str, dict[str, str]] | None, namespace: str, managed: bool
) -> None:
    text = CONFIG + (f"managedJobsNamespaceSelector: {json.dumps(selector)}\n" if selector else "")
    config = parse_config(text, source="x")
    labels = {"kubernetes.io/metadata.name": namespace, "team": namespace.removeprefix("team-")}
    registry = FrameworkRegistry.from_managed_kinds(config.managed_kinds())
    reconciler_selector = settings_from_config(config, registry=registry).namespace_selector
    assert reconciler_selector is not None
    assert reconciler_selector.matches(labels) is managed
    assert webhook_settings_from_config(config).namespace_selected(labels) is managed


@pytest.mark.parametrize(
    ("gates", "merge_patch"), [("", False), ("featureGates: {WorkloadRequestUseMergePatch: true}\n", True)]
)
def test_kueues_merge_patch_gate_chooses_how_workload_status_is_written(
    gates: str, merge_patch: bool
) -> None:
    config = parse_config(CONFIG + gates, source="x")
    registry = FrameworkRegistry.from_managed_kinds(config.managed_kinds())
    assert settings_from_config(config, registry=registry).workload_request_use_merge_patch is merge_patch
