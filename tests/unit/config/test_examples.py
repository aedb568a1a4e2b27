"""The sample files in examples/config are valid and mean what their comments say."""

from __future__ import annotations

from pathlib import Path

import pytest

from shared.config import load_config
from shared.kube import GroupVersionKind

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "config"


def test_there_are_examples() -> None:
    assert {path.name for path in EXAMPLES.glob("*.yaml")} >= {"minimal.yaml", "full.yaml"}


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda path: path.name)
def test_every_example_is_valid(path: Path) -> None:
    load_config(path)


def test_full_example_has_a_declarative_adapter_for_a_crd_that_is_not_built_in() -> None:
    config = load_config(EXAMPLES / "full.yaml")
    declarative = [kind for kind in config.managed_kinds() if kind.adapter is not None]
    assert [(kind.gvk, kind.resource, kind.builtin) for kind in declarative] == [
        (GroupVersionKind("ml.example.com", "v1alpha1", "TrainingRun"), "trainingruns", None)
    ]
    assert {kind.builtin for kind in config.managed_kinds()} >= {"batch/job", "tekton.dev/pipelinerun"}
    assert config.kueue_bridge.multi_kueue_controller_names[0] == "kueue.x-k8s.io/multikueue"


def test_minimal_example_is_the_default() -> None:
    from shared.config import default_config

    assert load_config(EXAMPLES / "minimal.yaml") == default_config()
