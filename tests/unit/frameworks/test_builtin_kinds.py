"""``shared.frameworks.builtin_kinds`` is the one table of built-in kinds: every other view agrees with it.

Each row is checked against what it describes (the real CRD's storage version and plural, Kueue's
integration table) and against every view derived from it (the adapters, the registry, the
configuration's managed kinds and its Kueue-only framework names).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from shared.config import KUEUE_ONLY_FRAMEWORKS, parse_config
from shared.frameworks import BUILTIN_FRAMEWORKS, FrameworkRegistry, UnknownFrameworkError, builtin_gvk
from shared.frameworks.builtin_base import RawJobAdapter, SpecManagedBy
from shared.frameworks.builtin_kinds import BUILTIN_KIND_BY_GVK, BUILTIN_KINDS, BuiltinKind
from shared.frameworks.registry import BUILTIN_ADAPTERS
from shared.kube import GroupVersionKind
from shared.kube.kinds import JOB_GVK
from shared.kueue.kueue_integrations import KUEUE_INTEGRATIONS, kueue_integration_for

ROWS = list(BUILTIN_KINDS.values())
#: where each CRD-backed row's real CRD is, below ../shared/crds
CRD_FILES = {
    "jobset.x-k8s.io/jobset": "jobset/jobset.x-k8s.io_jobsets.yaml",
    "workload.codeflare.dev/appwrapper": "appwrapper/workload.codeflare.dev_appwrappers.yaml",
    "tekton.dev/pipelinerun": "tekton/300-pipelinerun.yaml",
}


def test_the_table_names_the_four_built_in_kinds_once() -> None:
    assert list(BUILTIN_KINDS) == [
        "batch/job",
        "jobset.x-k8s.io/jobset",
        "workload.codeflare.dev/appwrapper",
        "tekton.dev/pipelinerun",
    ]
    assert all(name == kind.name for name, kind in BUILTIN_KINDS.items())
    assert len(BUILTIN_KIND_BY_GVK) == len(BUILTIN_KINDS)
    assert all(BUILTIN_KIND_BY_GVK[kind.gvk] is kind for kind in ROWS)


@pytest.mark.parametrize("kind", ROWS, ids=lambda kind: kind.name)
def test_each_row_is_kueues_integration_when_kueue_has_one(kind: BuiltinKind) -> None:
    integration = kueue_integration_for(kind.gvk.group, kind.gvk.kind)
    assert kind.kueue is integration
    if integration is None:
        assert kind.name not in {known.framework for known in KUEUE_INTEGRATIONS}
        return
    assert integration.framework == kind.name
    assert (integration.group, integration.version, integration.kind) == (
        kind.gvk.group,
        kind.gvk.version,
        kind.gvk.kind,
    )
    assert integration.plural == kind.plural


def _served(crd: dict[str, Any]) -> tuple[GroupVersionKind, str]:
    storage = next(version["name"] for version in crd["spec"]["versions"] if version.get("storage"))
    names = crd["spec"]["names"]
    return GroupVersionKind(crd["spec"]["group"], storage, names["kind"]), names["plural"]


@pytest.mark.parametrize("name", sorted(CRD_FILES))
def test_each_custom_kind_is_its_real_crds_storage_version_and_plural(shared_dir: Path, name: str) -> None:
    crd = yaml.safe_load((shared_dir / "crds" / CRD_FILES[name]).read_text())
    kind = BUILTIN_KINDS[name]
    assert _served(crd) == (kind.gvk, kind.plural)


def test_batch_job_is_kubernetes_job_kind() -> None:
    assert (BUILTIN_KINDS["batch/job"].gvk, BUILTIN_KINDS["batch/job"].plural) == (JOB_GVK, "jobs")
    assert set(BUILTIN_KINDS) - set(CRD_FILES) == {"batch/job"}


@pytest.mark.parametrize("kind", ROWS, ids=lambda kind: kind.name)
def test_each_row_has_one_adapter_and_the_registry_serves_the_row(kind: BuiltinKind) -> None:
    adapter_class = BUILTIN_ADAPTERS[kind]
    assert isinstance(adapter_class, type)
    assert issubclass(adapter_class, RawJobAdapter)
    assert adapter_class.KIND is kind
    framework = BUILTIN_FRAMEWORKS[kind.name]
    assert (framework.name, framework.gvk, framework.plural, framework.builtin) == (
        kind.name,
        kind.gvk,
        kind.plural,
        True,
    )
    assert framework.factory is BUILTIN_ADAPTERS[kind]
    assert builtin_gvk(kind.name) == kind.gvk
    registry = FrameworkRegistry(builtin=[kind.name])
    obj: dict[str, Any] = {"apiVersion": kind.gvk.api_version, "kind": kind.gvk.kind, "spec": {}}
    adapter = registry.adapter_for(obj)
    assert isinstance(adapter, adapter_class)
    assert adapter.gvk == kind.gvk


@pytest.mark.parametrize("kind", ROWS, ids=lambda kind: kind.name)
def test_an_adapter_defaults_managed_by_only_away_from_its_own_controller(kind: BuiltinKind) -> None:
    adapter = BUILTIN_FRAMEWORKS[kind.name].factory(
        {"apiVersion": kind.gvk.api_version, "kind": kind.gvk.kind, "spec": {}}
    )
    assert isinstance(adapter, SpecManagedBy)
    assert adapter.can_default_managed_by()
    adapter.set_managed_by(kind.own_controller)
    assert adapter.can_default_managed_by()
    adapter.set_managed_by("example.com/other")
    assert not adapter.can_default_managed_by()


def test_the_registry_knows_no_other_built_in_name() -> None:
    assert list(BUILTIN_FRAMEWORKS) == list(BUILTIN_KINDS)
    assert set(BUILTIN_ADAPTERS) == set(BUILTIN_KINDS.values())
    with pytest.raises(
        UnknownFrameworkError, match=r'supported values: "batch/job", "jobset\.x-k8s\.io/jobset"'
    ):
        builtin_gvk("kubeflow.org/pytorchjob")


def test_kueues_frameworks_are_built_in_here_or_kueue_only() -> None:
    kueue_names = [integration.framework for integration in KUEUE_INTEGRATIONS]
    assert set(KUEUE_ONLY_FRAMEWORKS).isdisjoint(BUILTIN_KINDS)
    assert set(KUEUE_ONLY_FRAMEWORKS) | {kind.name for kind in ROWS if kind.kueue} == set(kueue_names)


def test_configuration_manages_each_listed_built_in_kind_as_the_table_says() -> None:
    frameworks = "".join(f"  - {name}\n" for name in BUILTIN_KINDS)
    text = f"apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nintegrations:\n  frameworks:\n{frameworks}"
    managed = parse_config(text, source="x").managed_kinds()
    assert [(kind.gvk, kind.resource, kind.builtin, kind.adapter) for kind in managed] == [
        (kind.gvk, kind.plural, kind.name, None) for kind in ROWS
    ]
