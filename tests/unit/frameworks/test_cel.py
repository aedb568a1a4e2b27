"""CEL programs: compiled once, errors and wrong result types name the configuration field."""

from __future__ import annotations

import pytest

from shared.frameworks.base import AdapterConfigError, AdapterError
from shared.frameworks.cel import CelSyntaxError, compile_expression

FIELD = "integrations.externalFrameworks[0].adapter.finished"
OBJ = {"spec": {"replicas": 3, "items": [{"n": 2}, {"n": 5}]}, "status": {"phase": "Running"}}


def test_evaluates_with_object_element_and_index() -> None:
    expression = compile_expression("object.spec.replicas * element.n + index", field=FIELD)
    assert expression.evaluate_int(OBJ, element={"n": 2}, index=1) == 7


def test_element_and_index_are_null_outside_for_each() -> None:
    assert compile_expression("element == null && index == null", field=FIELD).evaluate_bool(OBJ) is True


def test_programs_are_cached_by_source() -> None:
    first = compile_expression("object.spec.replicas > 1", field="a")
    second = compile_expression("object.spec.replicas > 1", field="b")
    assert first.program is second.program
    assert (first.field, second.field) == ("a", "b")


@pytest.mark.parametrize("source", ["1 +", "object.spec.(", ""])
def test_syntax_errors_name_the_field(source) -> None:
    with pytest.raises(CelSyntaxError) as caught:
        compile_expression(source, field=FIELD)
    assert caught.value.path == FIELD
    assert isinstance(caught.value, AdapterConfigError)


@pytest.mark.parametrize(
    ("source", "fragment"),
    [
        ("object.status.message", "no such key"),
        ("object.spec.replicas / 0", "division by zero"),
        ("'a' + 1", "failed"),
        ("nosuchvariable", "failed"),
        ("has(object.nope.deeper)", "no such key"),
    ],
)
def test_evaluation_errors_name_the_field(source, fragment) -> None:
    with pytest.raises(AdapterError) as caught:
        compile_expression(source, field=FIELD).evaluate(OBJ)
    assert caught.value.path == FIELD
    assert fragment in caught.value.message
    assert repr(source) in caught.value.message


@pytest.mark.parametrize(
    ("source", "method", "wanted"),
    [
        ("object.spec.replicas", "evaluate_bool", "a bool"),
        ("true", "evaluate_int", "an int"),
        ("2.5", "evaluate_int", "an int"),
        ("'3'", "evaluate_int", "an int"),
        ("3", "evaluate_str", "a string"),
        ("[1]", "evaluate_optional_str", "a string or null"),
    ],
)
def test_wrong_result_types_name_the_field(source, method, wanted) -> None:
    with pytest.raises(AdapterError) as caught:
        getattr(compile_expression(source, field=FIELD), method)(OBJ)
    assert caught.value.path == FIELD
    assert f"must evaluate to {wanted}" in caught.value.message


def test_optional_string_maps_null_and_empty_to_none() -> None:
    assert compile_expression("null", field=FIELD).evaluate_optional_str(OBJ) is None
    assert compile_expression("''", field=FIELD).evaluate_optional_str(OBJ) is None
    assert compile_expression("'high'", field=FIELD).evaluate_optional_str(OBJ) == "high"
