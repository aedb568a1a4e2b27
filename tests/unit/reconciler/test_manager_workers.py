"""Each job kind's controller runs as many workers as the configuration gives that kind."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from reconciler.__main__ import _parser
from reconciler.manager import ManagerOptions, ReconcilerManager, settings_from_config
from shared.config import parse_config
from shared.frameworks.registry import FrameworkRegistry
from shared.kube import KubeClient
from shared.kube.clock import FakeClock
from tests.unit.kube.conftest import make_client
from tests.unit.kube.fakeapi import FakeApi

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
    config = parse_config(CONFIG, source="x")
    registry = FrameworkRegistry.from_managed_kinds(config.managed_kinds())
    manager = ReconcilerManager(
        client=client,
        registry=registry,
        settings=settings_from_config(config, registry=registry),
        events=Silent(),
        options=ManagerOptions(workers=config.reconcile_concurrency),
    )
    assert {controller.name: controller.workers for controller in manager.controllers} == {
        "job": 3,
        "jobset": 16,
    }


@pytest.mark.parametrize("value", ["0", "-1", "many"])
def test_workers_flag_rejects_non_positive_values(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        _parser().parse_args(["--config", "c.yaml", "--workers", value])
    assert "--workers" in capsys.readouterr().err


def test_workers_flag_is_unset_by_default() -> None:
    assert _parser().parse_args(["--config", "c.yaml"]).workers is None
