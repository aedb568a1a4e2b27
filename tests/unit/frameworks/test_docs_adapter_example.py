"""The worked example of ``docs/adapters.md`` (Declarative adapters), run through the real code.

The blocks are found by their ``# example: <name>`` first line, so the documentation cannot drift
from what the adapter does.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
import yaml

from shared.frameworks.base import JobWithManagedBy
from shared.frameworks.registry import DeclarativeKind, FrameworkRegistry, parse_external_name
from shared.frameworks.spec import DeclarativeAdapterSpec
from shared.podset import PodSetInfo, pod_set_info_from_pod_set
from tests.docs_text import page

_BLOCK = re.compile(r"```yaml\n# example: (?P<name>[\w-]+)\n(?P<body>.*?)```", re.DOTALL)


def adapter_examples() -> dict[str, Any]:
    """The page's ``# example: <name>`` blocks, parsed, by name."""
    text = page("adapters.md")
    return {match["name"]: yaml.safe_load(match["body"]) for match in _BLOCK.finditer(text)}


@pytest.fixture
def example() -> dict[str, Any]:
    blocks = adapter_examples()
    assert set(blocks) >= {"trainingrun-object", "trainingrun-config", "trainingrun-podsets"}
    return blocks


def registry_from(config: dict[str, Any]) -> FrameworkRegistry:
    kinds = []
    for index, entry in enumerate(config["integrations"]["externalFrameworks"]):
        spec = DeclarativeAdapterSpec.model_validate(entry["adapter"])
        field = f"integrations.externalFrameworks[{index}].adapter"
        kinds.append(DeclarativeKind(parse_external_name(entry["name"]), spec, field=field))
    return FrameworkRegistry(declarative=kinds)


def test_documented_pod_sets_are_what_the_adapter_computes(example) -> None:
    registry = registry_from(example["trainingrun-config"])
    adapter = registry.adapter_for(copy.deepcopy(example["trainingrun-object"]))
    assert [pod_set.to_wire() for pod_set in adapter.pod_sets()] == example["trainingrun-podsets"]
    assert registry.plural_for(adapter.gvk) == "trainingruns"


def test_documented_lifecycle_start_stop_finish(example) -> None:
    registry = registry_from(example["trainingrun-config"])
    obj = copy.deepcopy(example["trainingrun-object"])
    original = copy.deepcopy(obj)
    adapter = registry.adapter_for(obj)
    assert adapter.is_suspended() is True
    assert adapter.finished().finished is False
    assert adapter.is_active() is False
    assert isinstance(adapter, JobWithManagedBy)
    assert adapter.can_default_managed_by() is True

    stored = [pod_set_info_from_pod_set(pod_set) for pod_set in adapter.pod_sets()]
    admitted = [
        PodSetInfo(
            name=name, count=count, labels={"kueue.x-k8s.io/podset": name}, node_selector={"pool": "a100"}
        )
        for name, count in (("launcher", 1), ("gpu", 4))
    ]
    adapter.run_with_pod_sets_info(admitted)
    assert obj["spec"]["paused"] is False
    assert obj["spec"]["workerGroups"][0]["template"]["spec"]["nodeSelector"] == {"pool": "a100"}
    assert obj["spec"]["launcher"]["template"]["metadata"]["labels"] == {"kueue.x-k8s.io/podset": "launcher"}

    adapter.suspend()
    assert adapter.restore_pod_sets_info(stored) is True
    assert obj == original

    obj["status"] = {"phase": "Failed", "message": "OOM", "activeWorkers": 0}
    state = adapter.finished()
    assert (state.finished, state.success, state.message) == (True, False, "OOM")
