"""``GroupVersionKind.from_api_version`` / ``of``: apimachinery's ``ParseGroupVersion`` rules."""

from __future__ import annotations

import pytest

from shared.kube import GroupVersionKind, parse_group_version


@pytest.mark.parametrize(
    ("api_version", "expected"),
    [
        ("batch/v1", ("batch", "v1")),
        ("v1", ("", "v1")),
        ("kueue.x-k8s.io/v1beta2", ("kueue.x-k8s.io", "v1beta2")),
        ("", ("", "")),
        ("/", ("", "")),
    ],
)
def test_parse_group_version(api_version: str, expected: tuple[str, str]) -> None:
    assert parse_group_version(api_version) == expected


def test_more_than_one_slash_is_not_a_group_version() -> None:
    with pytest.raises(ValueError, match="unexpected GroupVersion string: a/b/c"):
        parse_group_version("a/b/c")
    # schema.FromAPIVersionAndKind keeps the kind and drops the unparsable group/version
    assert GroupVersionKind.from_api_version("a/b/c", "Job") == GroupVersionKind("", "", "Job")


def test_of_reads_an_object_or_an_owner_reference() -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "a"}}
    assert GroupVersionKind.of(job) == GroupVersionKind("batch", "v1", "Job")
    reference = {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u"}
    assert GroupVersionKind.of(reference) == GroupVersionKind("", "v1", "Pod")
    assert GroupVersionKind.of({"apiVersion": 3, "kind": None}) == GroupVersionKind("", "", "")


def test_api_version_and_string_round_trip() -> None:
    gvk = GroupVersionKind.from_api_version("batch/v1", "Job")
    assert gvk.api_version == "batch/v1"
    assert str(gvk) == "batch/v1, Kind=Job"
    core = GroupVersionKind.from_api_version("v1", "Pod")
    assert core.api_version == "v1"
    assert str(core) == "/v1, Kind=Pod"


def test_kind_arg_round_trip() -> None:
    gvk = GroupVersionKind.from_kind_arg("TrainingRun.v1alpha1.ml.example.com")
    assert gvk == GroupVersionKind("ml.example.com", "v1alpha1", "TrainingRun")
    assert gvk.kind_arg == "TrainingRun.v1alpha1.ml.example.com"
    assert GroupVersionKind.from_kind_arg("Job.v1") is None
    assert GroupVersionKind.from_kind_arg("Pod.v1.") == GroupVersionKind("", "v1", "Pod")


def test_parsed_gvks_are_shared_and_the_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    from shared.kube import gvk as gvk_module

    first = GroupVersionKind.from_api_version("example.com/v1", "Widget")
    assert GroupVersionKind.of({"apiVersion": "example.com/v1", "kind": "Widget"}) is first
    assert first == GroupVersionKind("example.com", "v1", "Widget")
    # a malformed apiVersion is interned with its empty group and version, as parsed
    assert GroupVersionKind.from_api_version("a/b/c", "Widget") is GroupVersionKind.from_api_version(
        "a/b/c", "Widget"
    )
    monkeypatch.setattr(gvk_module, "_INTERNED", {})
    monkeypatch.setattr(gvk_module, "INTERNED_LIMIT", 2)
    for number in range(5):
        assert GroupVersionKind.from_api_version(f"g{number}.io/v1", "K") == GroupVersionKind(
            f"g{number}.io", "v1", "K"
        )
    assert len(gvk_module._INTERNED) == 2
    # past the limit a GVK is still right, only not shared
    assert GroupVersionKind.from_api_version("g4.io/v1", "K") is not GroupVersionKind.from_api_version(
        "g4.io/v1", "K"
    )
