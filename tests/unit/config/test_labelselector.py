from __future__ import annotations

import pytest
from pydantic import ValidationError

from shared.labelselector import (
    LabelSelector,
    Operator,
    Requirement,
    Selector,
    SelectorSyntaxError,
    format_selector,
    parse_selector_string,
)


def _selector(**wire: object) -> LabelSelector:
    return LabelSelector.model_validate(wire)


# --- structured selectors ----------------------------------------------------------------------------
def test_empty_selector_matches_everything() -> None:
    assert _selector().matches({})
    assert _selector().matches({"a": "b"})


def test_match_labels_need_every_pair() -> None:
    selector = _selector(matchLabels={"app": "web", "tier": "front"})
    assert selector.matches({"app": "web", "tier": "front", "other": "x"})
    assert not selector.matches({"app": "web"})
    assert not selector.matches({"app": "web", "tier": "back"})


@pytest.mark.parametrize(
    ("operator", "values", "labels", "expected"),
    [
        ("In", ["a", "b"], {"k": "a"}, True),
        ("In", ["a", "b"], {"k": "c"}, False),
        ("In", ["a"], {}, False),
        ("NotIn", ["a"], {"k": "b"}, True),
        ("NotIn", ["a"], {"k": "a"}, False),
        ("NotIn", ["a"], {}, True),  # absent key matches NotIn, as in apimachinery
        ("Exists", [], {"k": ""}, True),
        ("Exists", [], {}, False),
        ("DoesNotExist", [], {}, True),
        ("DoesNotExist", [], {"k": "x"}, False),
    ],
)
def test_expression_operators(
    operator: str, values: list[str], labels: dict[str, str], expected: bool
) -> None:
    expression: dict[str, object] = {"key": "k", "operator": operator}
    if values:
        expression["values"] = values
    assert _selector(matchExpressions=[expression]).matches(labels) is expected


def test_labels_and_expressions_are_anded() -> None:
    selector = _selector(
        matchLabels={"app": "web"}, matchExpressions=[{"key": "env", "operator": "In", "values": ["prod"]}]
    )
    assert selector.matches({"app": "web", "env": "prod"})
    assert not selector.matches({"app": "web", "env": "dev"})
    assert not selector.matches({"env": "prod"})


def _errors(wire: object) -> list[tuple[tuple[object, ...], str]]:
    with pytest.raises(ValidationError) as caught:
        LabelSelector.model_validate(wire)
    return [(tuple(error["loc"]), error["msg"]) for error in caught.value.errors()]


def test_in_and_notin_need_values() -> None:
    errors = _errors(
        {"matchExpressions": [{"key": "k", "operator": "In"}, {"key": "k", "operator": "NotIn"}]}
    )
    message = "Required value: must be specified when `operator` is 'In' or 'NotIn'"
    assert errors == [
        (("matchExpressions", 0, "values"), message),
        (("matchExpressions", 1, "values"), message),
    ]


def test_exists_and_does_not_exist_forbid_values() -> None:
    errors = _errors({"matchExpressions": [{"key": "k", "operator": "Exists", "values": ["x"]}]})
    assert errors == [
        (
            ("matchExpressions", 0, "values"),
            "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
        )
    ]


def test_unknown_operator_names_its_path() -> None:
    errors = _errors({"matchExpressions": [{"key": "k", "operator": "Equals", "values": ["x"]}]})
    assert errors == [
        (("matchExpressions", 0, "operator"), 'Invalid value: "Equals": not a valid selector operator')
    ]


def test_invalid_keys_values_and_unknown_fields_are_errors() -> None:
    errors = _errors(
        {
            "matchLabels": {"bad key": "v"},
            "matchExpressions": [{"key": "k", "operator": "In", "values": ["bad value"]}],
            "matchFields": {},
        }
    )
    locations = [loc for loc, _ in errors]
    assert locations == [("matchLabels",), ("matchExpressions", 0, "values"), ("matchFields",)]
    assert errors[0][1].startswith('Invalid value: "bad key": name part must consist of alphanumeric')


def test_serialises_like_the_api_server() -> None:
    wire = {
        "matchExpressions": [
            {"key": "k", "operator": "Exists"},
            {"key": "j", "operator": "In", "values": ["a"]},
        ]
    }
    assert _selector(**wire).to_wire() == wire
    assert _selector().model_dump() == {}


# --- names: the one set of validators (shared.validation_k8s), as kube-apiserver judges them ------
@pytest.mark.parametrize("key", ["app", "example.com/app", "a.b-c_d", "A1", "x" * 63])
def test_valid_label_keys(key: str) -> None:
    assert _selector(matchLabels={key: "v"}).matches({key: "v"})


@pytest.mark.parametrize(
    ("key", "fragment"),
    [
        ("", "name part must be non-empty"),
        ("/app", "prefix part must be non-empty"),
        ("Example.com/app", "prefix part a lowercase RFC 1123 subdomain"),
        ("a/b/c", "a valid label key must consist"),
        ("x" * 64, "name part must be no more than 63 bytes"),
        ("é" * 32, "name part must be no more than 63 bytes"),  # 64 bytes in 32 characters
        ("-app", "name part must consist"),
        ("app\n", "name part must consist"),  # ^...$ in Go does not accept a trailing newline
    ],
)
def test_invalid_label_keys(key: str, fragment: str) -> None:
    [(location, message)] = _errors({"matchLabels": {key: "v"}})
    assert location == ("matchLabels",)
    assert fragment in message


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("x" * 64, "must be no more than 63 bytes"),
        ("é" * 32, "must be no more than 63 bytes"),
        ("web\n", "a valid label must be an empty string"),
        ("-a", "regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?'"),
    ],
)
def test_invalid_label_values(value: str, fragment: str) -> None:
    assert _selector(matchLabels={"k": ""}).matches({"k": ""})
    [(_, message)] = _errors({"matchExpressions": [{"key": "k", "operator": "In", "values": [value]}]})
    assert fragment in message


def test_the_string_form_uses_the_same_validators() -> None:
    with pytest.raises(SelectorSyntaxError, match="63 bytes"):
        parse_selector_string("k=" + "é" * 32)
    with pytest.raises(SelectorSyntaxError, match="must be an integer"):
        parse_selector_string("k>1_0")
    with pytest.raises(SelectorSyntaxError, match="must be an integer"):
        parse_selector_string(f"k>{2**63}")  # strconv.ParseInt(.., 10, 64) range
    assert parse_selector_string("k>9").matches({"k": "10"})
    assert not parse_selector_string("k>9").matches({"k": "\uff11\uff10"})  # fullwidth digits are no integer


# --- string selectors --------------------------------------------------------------------------------
def test_empty_string_selects_everything() -> None:
    assert parse_selector_string("") == Selector()
    assert parse_selector_string("   ").matches({"a": "b"})


@pytest.mark.parametrize(
    ("text", "requirement"),
    [
        ("a=b", Requirement("a", Operator.EQUALS, ("b",))),
        ("a==b", Requirement("a", Operator.DOUBLE_EQUALS, ("b",))),
        ("a!=b", Requirement("a", Operator.NOT_EQUALS, ("b",))),
        ("a=", Requirement("a", Operator.EQUALS, ("",))),
        ("a in (c, b,b)", Requirement("a", Operator.IN, ("b", "c"))),
        ("a notin (b)", Requirement("a", Operator.NOT_IN, ("b",))),
        ("a", Requirement("a", Operator.EXISTS)),
        ("!a", Requirement("a", Operator.DOES_NOT_EXIST)),
        ("a>5", Requirement("a", Operator.GREATER_THAN, ("5",))),
        ("a<5", Requirement("a", Operator.LESS_THAN, ("5",))),
        ("example.com/a = b", Requirement("example.com/a", Operator.EQUALS, ("b",))),
    ],
)
def test_parses_each_operator(text: str, requirement: Requirement) -> None:
    assert parse_selector_string(text).requirements == (requirement,)


@pytest.mark.parametrize(
    ("text", "labels", "expected"),
    [
        ("a=b", {"a": "b"}, True),
        ("a=b", {"a": "c"}, False),
        ("a=b", {}, False),
        ("a!=b", {}, True),
        ("a!=b", {"a": "b"}, False),
        ("a in (b,c)", {"a": "c"}, True),
        ("a notin (b,c)", {}, True),
        ("a notin (b,c)", {"a": "b"}, False),
        ("a", {"a": ""}, True),
        ("!a", {"a": ""}, False),
        ("a>5", {"a": "6"}, True),
        ("a>5", {"a": "5"}, False),
        ("a<5", {"a": "x"}, False),
        ("a=b,c", {"a": "b"}, False),
        ("a=b,c", {"a": "b", "c": "1"}, True),
        # "()" is the set of the empty value (apimachinery's parseValues)
        ("a in ()", {"a": ""}, True),
        ("a in ()", {"a": "x"}, False),
        ("a in ()", {}, False),
        ("a notin ()", {}, True),
        ("a notin ()", {"a": ""}, False),
        ("a in (x,,y)", {"a": ""}, True),
    ],
)
def test_string_selector_matching(text: str, labels: dict[str, str], expected: bool) -> None:
    assert parse_selector_string(text).matches(labels) is expected


@pytest.mark.parametrize(
    ("text", "offset", "fragment"),
    [
        ("a b", 2, "unknown operator 'b'"),
        ("a,", 2, "expected a label key"),
        (",a", 0, "expected a label key"),
        ("a in (x", 7, "expected ',' or ')'"),
        ("a in x", 5, "expected '('"),
        ("a>b", 1, "must be an integer"),
        ("in", 0, "expected a label key"),
        ("a=b c", 4, "expected ','"),
        ("bad key!=x", 4, "unknown operator"),
        ("-a=b", 0, "invalid label key"),
        ("a=-b", 2, "invalid label value"),
    ],
)
def test_syntax_errors_name_the_offset(text: str, offset: int, fragment: str) -> None:
    with pytest.raises(SelectorSyntaxError) as caught:
        parse_selector_string(text)
    assert fragment in caught.value.message
    assert caught.value.position == offset
    assert caught.value.text == text


def test_format_is_canonical_and_round_trips() -> None:
    text = "z notin (y,x), a=1,!b, c, d!=2, e in (f), g>3, h=="
    formatted = format_selector(parse_selector_string(text))
    assert formatted == "a=1,!b,c,d!=2,e in (f),g>3,h==,z notin (x,y)"
    assert format_selector(parse_selector_string(formatted)) == formatted


def test_format_structured_selector_matches_label_selector_as_selector() -> None:
    selector = _selector(
        matchLabels={"b": "1"},
        matchExpressions=[
            {"key": "a", "operator": "NotIn", "values": ["y", "x"]},
            {"key": "c", "operator": "DoesNotExist"},
        ],
    )
    assert format_selector(selector) == "a notin (x,y),b=1,!c"
    reparsed = parse_selector_string(format_selector(selector))
    for labels in ({}, {"b": "1"}, {"b": "1", "a": "x"}, {"b": "1", "c": ""}, {"b": "1", "a": "z"}):
        assert reparsed.matches(labels) == selector.matches(labels)
