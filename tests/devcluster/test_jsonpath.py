"""The pieces of server-side printing that need no server: JSONPath, ages, Accept negotiation."""

from __future__ import annotations

from typing import Any

import pytest

from devcluster.apiserver.output.jsonpath import JSONPathError, compile_path, find, go_number, print_value
from devcluster.apiserver.output.printers import format_label_selector
from devcluster.apiserver.output.tables import negotiate
from shared.kube.times import human_duration

WORKLOAD: dict[str, Any] = {
    "spec": {"queueName": "team-a", "podSets": [{"name": "main", "count": 2}, {"name": "aux", "count": 1}]},
    "status": {
        "conditions": [
            {"type": "QuotaReserved", "status": "True", "priority": 1},
            {"type": "Admitted", "status": "False", "priority": 2},
        ]
    },
}


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (".spec.queueName", ["team-a"]),
        ("$.spec.queueName", ["team-a"]),
        ("{.spec.queueName}", ["team-a"]),
        (".status.conditions[?(@.type=='Admitted')].status", ["False"]),
        ('.status.conditions[?(@.type=="QuotaReserved")].status', ["True"]),
        (".status.conditions[?(@.type!='Admitted')].type", ["QuotaReserved"]),
        (".status.conditions[?(@.priority>1)].type", ["Admitted"]),
        (".status.conditions[?(@.missing)].type", []),
        (".status.conditions[?(@.priority)].type", ["QuotaReserved", "Admitted"]),
        (".spec.podSets[*].name", ["main", "aux"]),
        (".spec.podSets[-1].count", [1]),
        (".spec.podSets[0:1].name", ["main"]),
        (".spec.podSets[0,1].count", [2, 1]),
        (".spec['queueName']", ["team-a"]),
        ("..count", [2, 1]),
        (".spec.nothing.deeper", []),
        (".spec.queueName.deeper", []),
    ],
)
def test_paths_select_like_client_go(path: str, expected: list[Any]) -> None:
    assert find(compile_path(path), WORKLOAD) == expected


@pytest.mark.parametrize(
    "path",
    [
        ".spec.podSets[5]",  # out of range
        ".spec.queueName[0]",  # index on a string
        ".status.conditions[?(@.priority=='1')].type",  # int compared with a string
        ".status.conditions[?(@.priority==1.0)].type",  # int compared with a float
    ],
)
def test_evaluation_errors(path: str) -> None:
    with pytest.raises(JSONPathError):
        find(compile_path(path), WORKLOAD)


@pytest.mark.parametrize("path", [".spec.podSets[", ".status.conditions[?(@.type=~'x')]", ".spec[abc]"])
def test_unparseable_paths(path: str) -> None:
    with pytest.raises(JSONPathError):
        compile_path(path)


@pytest.mark.parametrize(
    ("value", "printed"),
    [
        ("text", "text"),
        (3, "3"),
        (True, "true"),
        (None, "<no value>"),
        ({"b": 1, "a": ["<&>"]}, '{"a":["\\u003c\\u0026\\u003e"],"b":1}'),
        (1.5, "1.5"),
    ],
)
def test_values_print_like_printresults(value: Any, printed: str) -> None:
    assert print_value(value) == printed


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (3.0, "3"),
        (1e6, "1e+06"),
        (123456.0, "123456"),
        (0.0001, "0.0001"),
        (1e-05, "1e-05"),
        (-2.25, "-2.25"),
    ],
)
def test_floats_print_like_go_fmt(value: float, text: str) -> None:
    assert go_number(value) == text


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (-5, "<invalid>"),
        (-1.5, "0s"),
        (0, "0s"),
        (119.9, "119s"),
        (120, "2m"),
        (182, "3m2s"),
        (600, "10m"),
        (3 * 3600 - 1, "179m"),
        (3 * 3600 + 60, "3h1m"),
        (8 * 3600, "8h"),
        (50 * 3600, "2d2h"),
        (10 * 86400, "10d"),
        (800 * 86400, "2y70d"),
        (9 * 365 * 86400, "9y"),
    ],
)
def test_human_duration(seconds: float, text: str) -> None:
    assert human_duration(seconds) == text


def test_label_selectors_format_like_kube() -> None:
    selector = {
        "matchLabels": {"b": "2", "a": "1"},
        "matchExpressions": [
            {"key": "c", "operator": "In", "values": ["y", "x"]},
            {"key": "d", "operator": "DoesNotExist"},
        ],
    }
    assert format_label_selector(selector) == "a=1,b=2,c in (x,y),!d"
    assert format_label_selector(None) == "<none>"
    assert format_label_selector({}) == "<none>"


@pytest.mark.parametrize(
    ("accept", "served"),
    [
        ("application/json;as=Table;v=v1;g=meta.k8s.io,application/json", "meta.k8s.io/v1"),
        ("application/json;as=Table;v=v1beta1;g=meta.k8s.io", "meta.k8s.io/v1beta1"),
        ("application/json;as=Table;v=v9;g=meta.k8s.io,application/json", None),
        ("application/json", None),
        ("*/*", None),
        ("application/json;q=0.9,application/json;as=Table;v=v1;g=meta.k8s.io", "meta.k8s.io/v1"),
        ("application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json", None),
    ],
)
def test_accept_negotiation(accept: str, served: str | None) -> None:
    assert negotiate(accept) == served
