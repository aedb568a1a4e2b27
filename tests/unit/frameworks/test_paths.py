"""Field paths: parse once, get/set/delete, and errors that name the offending prefix."""

from __future__ import annotations

from typing import Any

import pytest

from shared.frameworks.base import AdapterError
from shared.frameworks.paths import FieldPath, PathSyntaxError, parse_path


@pytest.mark.parametrize(
    ("text", "segments", "rendered"),
    [
        ("spec", ("spec",), "spec"),
        ("spec.template", ("spec", "template"), "spec.template"),
        (
            "spec.replicatedJobs[0].template",
            ("spec", "replicatedJobs", 0, "template"),
            "spec.replicatedJobs[0].template",
        ),
        ("a[1][2]", ("a", 1, 2), "a[1][2]"),
        (
            "metadata.annotations[kueue.x-k8s.io/job-min-parallelism]",
            ("metadata", "annotations", "kueue.x-k8s.io/job-min-parallelism"),
            "metadata.annotations[kueue.x-k8s.io/job-min-parallelism]",
        ),
        ("metadata.labels['a.b/c']", ("metadata", "labels", "a.b/c"), "metadata.labels[a.b/c]"),
        ('metadata.labels["x"].y', ("metadata", "labels", "x", "y"), "metadata.labels.x.y"),
        ("[0].name", (0, "name"), "[0].name"),
    ],
)
def test_parse_and_render(text, segments, rendered) -> None:
    path = parse_path(text)
    assert path.segments == segments
    assert path.text == rendered == str(path)


def test_parse_is_cached() -> None:
    assert parse_path("spec.a[3]") is parse_path("spec.a[3]")


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "empty path"),
        (".spec", "unexpected '.'"),
        ("spec.", "ends with '.'"),
        ("spec..a", "unexpected '.'"),
        ("spec[0", "unclosed '['"),
        ("spec[]", "empty index"),
        ("spec[-1]", "negative index"),
        ("spec[0]x", "expected '.' or '['"),
        ("spec]", "expected '.' or '['"),
        ("]", "unexpected ']'"),
        ("a['']", "empty key"),
    ],
)
def test_parse_errors_name_the_text(text, fragment) -> None:
    with pytest.raises(PathSyntaxError) as caught:
        parse_path(text)
    assert fragment in str(caught.value)
    assert repr(text) in str(caught.value)


def sample() -> dict[str, Any]:
    return {"spec": {"jobs": [{"name": "a", "n": 1}, {"name": "b", "n": None}], "s": "text", "flag": True}}


def test_get_values_defaults_and_null_is_absent() -> None:
    obj = sample()
    assert parse_path("spec.jobs[1].name").get(obj) == "b"
    assert parse_path("spec.jobs[1].n").get(obj, default=7) == 7
    assert parse_path("spec.missing.deeper").get(obj, default=None) is None
    assert parse_path("spec.jobs[5].name").get(obj, default="x") == "x"
    assert parse_path("spec.jobs[0]").exists(obj)
    assert not parse_path("spec.jobs[1].n").exists(obj)


@pytest.mark.parametrize(
    ("text", "path", "message"),
    [
        ("spec.missing", "spec.missing", "required field is missing"),
        ("spec.jobs[7].name", "spec.jobs[7]", "required field is missing"),
        ("spec.s.x", "spec.s", "expected an object, got string"),
        ("spec.jobs.x", "spec.jobs", "expected an object, got array"),
        ("spec[0]", "spec", "expected an array, got object"),
        ("spec.jobs[1].n", "spec.jobs[1].n", "required field is missing"),
    ],
)
def test_get_errors_name_the_prefix(text, path, message) -> None:
    with pytest.raises(AdapterError) as caught:
        parse_path(text).get(sample())
    assert (caught.value.path, caught.value.message) == (path, message)


def test_wrong_shape_is_an_error_even_with_a_default() -> None:
    with pytest.raises(AdapterError, match=r"^spec\.s: expected an object, got string$"):
        parse_path("spec.s.x").get(sample(), default=None)


@pytest.mark.parametrize(
    ("text", "expected", "message"),
    [
        ("spec.flag", int, "expected an integer, got boolean"),
        ("spec.s", int, "expected an integer, got string"),
        ("spec.jobs", dict, "expected an object, got array"),
        ("spec.s", bool, "expected a boolean, got string"),
    ],
)
def test_get_typed_rejects_wrong_types(text, expected, message) -> None:
    with pytest.raises(AdapterError) as caught:
        parse_path(text).get_typed(sample(), expected)
    assert (caught.value.path, caught.value.message) == (text, message)


def test_get_typed_returns_default_when_absent() -> None:
    assert parse_path("spec.nope").get_typed(sample(), int, default=3) == 3
    assert parse_path("spec.jobs[0].n").get_typed(sample(), int) == 1


def test_set_creates_intermediate_maps() -> None:
    obj: dict[str, Any] = {}
    parse_path("spec.template.metadata.labels[a.b/c]").set(obj, "v")
    assert obj == {"spec": {"template": {"metadata": {"labels": {"a.b/c": "v"}}}}}


def test_set_into_a_list_element_and_replacing_null() -> None:
    obj = sample()
    parse_path("spec.jobs[1].n").set(obj, 2)
    parse_path("spec.jobs[0]").set(obj, {"name": "z"})
    assert obj["spec"]["jobs"] == [{"name": "z"}, {"name": "b", "n": 2}]


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("spec.jobs[2].name", "spec.jobs[2]"),
        ("spec.jobs[2]", "spec.jobs[2]"),
        ("spec.s.x", "spec.s"),
        ("spec.jobs.x", "spec.jobs"),
    ],
)
def test_set_never_invents_list_elements_or_overwrites_scalars(text, path) -> None:
    with pytest.raises(AdapterError) as caught:
        parse_path(text).set(sample(), 1)
    assert caught.value.path == path


def test_delete() -> None:
    obj = sample()
    assert parse_path("spec.flag").delete(obj) is True
    assert parse_path("spec.flag").delete(obj) is False
    assert parse_path("status.x").delete(obj) is False
    assert "flag" not in obj["spec"]
    with pytest.raises(AdapterError, match="cannot delete a list element"):
        parse_path("spec.jobs[0]").delete(obj)
    with pytest.raises(AdapterError, match=r"^spec\.s: expected an object"):
        parse_path("spec.s.x").delete(obj)


def test_join_index_key() -> None:
    base = parse_path("spec.replicatedJobs").index(2)
    assert base.join(parse_path("template.spec")).text == "spec.replicatedJobs[2].template.spec"
    assert base.key("a/b").text == "spec.replicatedJobs[2][a/b]"
    assert FieldPath(()).join(parse_path("x")).text == "x"
