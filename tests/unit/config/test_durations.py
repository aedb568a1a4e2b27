from __future__ import annotations

from datetime import timedelta

import pytest

from shared.durations import DurationError, format_go_duration, parse_go_duration


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", timedelta(0)),
        ("0s", timedelta(0)),
        ("-0", timedelta(0)),
        ("1m30s", timedelta(minutes=1, seconds=30)),
        ("15m", timedelta(minutes=15)),
        ("500ms", timedelta(milliseconds=500)),
        ("1h", timedelta(hours=1)),
        ("2h45m", timedelta(hours=2, minutes=45)),
        ("1.5h", timedelta(hours=1, minutes=30)),
        (".5s", timedelta(milliseconds=500)),
        ("1.s", timedelta(seconds=1)),
        ("+5s", timedelta(seconds=5)),
        ("-1m", timedelta(minutes=-1)),
        ("1000ns", timedelta(microseconds=1)),
        ("3us", timedelta(microseconds=3)),
        ("3\u00b5s", timedelta(microseconds=3)),
        ("3\u03bcs", timedelta(microseconds=3)),
        ("1h1m1s1ms1us", timedelta(hours=1, minutes=1, seconds=1, milliseconds=1, microseconds=1)),
        ("0.1s0.2s", timedelta(milliseconds=300)),
        ("1s1s", timedelta(seconds=2)),
    ],
)
def test_parses_go_syntax(text: str, expected: timedelta) -> None:
    assert parse_go_duration(text) == expected


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "empty string"),
        ("1", "missing unit"),
        ("10", "missing unit"),
        ("1x", 'unknown unit "x"'),
        ("1 s", 'unknown unit " s"'),
        ("s", "expected a number"),
        (".s", "expected a number"),
        ("-", "invalid duration"),
        ("1.5us", "finer than a microsecond"),
        ("1ns", "finer than a microsecond"),
        ("3000000h", "out of range"),
        ("1d", 'unknown unit "d"'),
    ],
)
def test_rejects_what_go_rejects(text: str, fragment: str) -> None:
    with pytest.raises(DurationError, match=fragment):
        parse_go_duration(text)


def test_duration_error_is_a_value_error() -> None:
    assert issubclass(DurationError, ValueError)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (timedelta(0), "0s"),
        (timedelta(hours=1), "1h0m0s"),
        (timedelta(minutes=15), "15m0s"),
        (timedelta(minutes=1, seconds=30), "1m30s"),
        (timedelta(seconds=2), "2s"),
        (timedelta(seconds=1, milliseconds=500), "1.5s"),
        (timedelta(milliseconds=500), "500ms"),
        (timedelta(milliseconds=1, microseconds=500), "1.5ms"),
        (timedelta(microseconds=250), "250\u00b5s"),
        (timedelta(days=2), "48h0m0s"),
        (timedelta(minutes=-5), "-5m0s"),
        (timedelta(hours=2, minutes=3, seconds=4, microseconds=5), "2h3m4.000005s"),
    ],
)
def test_formats_like_go(value: timedelta, expected: str) -> None:
    assert format_go_duration(value) == expected


@pytest.mark.parametrize("text", ["1m30s", "15m", "500ms", "1h0m0s", "-2.5s", "250us", "36h"])
def test_format_then_parse_round_trips(text: str) -> None:
    value = parse_go_duration(text)
    assert parse_go_duration(format_go_duration(value)) == value
