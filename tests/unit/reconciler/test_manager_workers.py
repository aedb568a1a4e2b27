"""Each job kind's controller runs as many workers as the configuration gives that kind."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from reconciler.__main__ import _parser
from reconciler.manager import ReconcilerManager
from shared.config import parse_config
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
    manager = ReconcilerManager.from_config(parse_config(CONFIG, source="x"), client=client, events=Silent())
    assert {controller.name: controller.workers for controller in manager.controllers} == {
        "job": 3,
        "jobset": 16,
    }


def test_workers_override_applies_to_every_kind(client: KubeClient) -> None:
    config = parse_config(CONFIG, source="x")
    manager = ReconcilerManager.from_config(config, client=client, events=Silent(), workers=7)
    assert {controller.name: controller.workers for controller in manager.controllers} == {
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
