"""``shared.kube.times``: ``metav1.Time`` / ``MicroTime`` text and kubectl's ages, in one place."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from shared.kube.times import age_since, format_micro_time, format_time, human_duration, parse_time


def test_format_time_is_rfc3339_utc_with_second_precision() -> None:
    moment = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    assert format_time(moment) == "2026-01-02T03:04:05Z"
    assert format_micro_time(moment) == "2026-01-02T03:04:05.678901Z"
    east = moment.astimezone(timezone(timedelta(hours=2)))
    assert format_time(east) == "2026-01-02T03:04:05Z"
    assert format_micro_time(datetime(5, 1, 2, 3, 4, 5, 6, tzinfo=UTC)) == "0005-01-02T03:04:05.000006Z"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-01-02T03:04:05Z", datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)),
        ("2026-01-02T03:04:05.123456789Z", datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)),
        ("2026-01-02T05:04:05+02:00", datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)),
        ("2026-01-02t03:04:05z", datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)),
    ],
)
def test_parse_time_reads_rfc3339(text: str, expected: datetime) -> None:
    assert parse_time(text) == expected


@pytest.mark.parametrize(
    "value",
    [
        None,
        "",
        5,
        "2026-01-02",
        "2026-01-02 03:04:05Z",
        "2026-01-02T03:04:05",
        "2026-13-02T03:04:05Z",
        "soon",
    ],
)
def test_parse_time_answers_none_for_anything_else(value: object) -> None:
    assert parse_time(value) is None


def test_round_trip() -> None:
    moment = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert parse_time(format_time(moment)) == moment


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (-5, "<invalid>"),
        (-0.5, "0s"),
        (0, "0s"),
        (119.9, "119s"),
        (120, "2m"),
        (182, "3m2s"),
        (3 * 3600 - 1, "179m"),
        (3 * 3600 + 60, "3h1m"),
        (50 * 3600, "2d2h"),
        (800 * 86400, "2y70d"),
    ],
)
def test_human_duration_is_apimachinery_s(seconds: float, text: str) -> None:
    assert human_duration(seconds) == text


def test_age_since() -> None:
    now = datetime(2026, 1, 2, 3, 5, 0, tzinfo=UTC)
    assert age_since("2026-01-02T03:04:00Z", now=now) == "60s"
    assert age_since(None, now=now) == "<unknown>"
    assert age_since("garbage", now=now, unknown="-") == "-"
