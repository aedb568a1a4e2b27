from __future__ import annotations

import io
import logging
import sys
from collections.abc import Iterator

import orjson
import pytest

from shared.kube.observability import (
    JsonFormatter,
    configure_logging,
    current_object_key,
    current_reconcile_id,
    reconcile_context,
)


@pytest.fixture
def restore_root_logger() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def test_json_lines_carry_object_key_reconcile_id_and_extras(restore_root_logger: None) -> None:
    stream = io.StringIO()
    configure_logging(json=True, level=logging.INFO, stream=stream)
    log = logging.getLogger("kueue_bridge.test")
    with reconcile_context("team-a/job-1", reconcile_id="r-123"):
        log.info("created workload %s", "wl-1", extra={"workload": "wl-1"})
    log.warning("outside")
    first, second = (orjson.loads(line) for line in stream.getvalue().splitlines())
    assert first["message"] == "created workload wl-1"
    assert first["level"] == "INFO"
    assert first["logger"] == "kueue_bridge.test"
    assert first["object_key"] == "team-a/job-1"
    assert first["reconcile_id"] == "r-123"
    assert first["workload"] == "wl-1"
    assert "object_key" not in second


def test_plain_format_appends_context_fields(restore_root_logger: None) -> None:
    stream = io.StringIO()
    configure_logging(json=False, stream=stream)
    configure_logging(json=False, stream=stream)  # replaces, does not duplicate
    with reconcile_context("ns/x") as reconcile_id:
        logging.getLogger("t").info("hello")
    [line] = stream.getvalue().splitlines()
    assert "hello" in line
    assert "object_key=ns/x" in line
    assert f"reconcile_id={reconcile_id}" in line


def test_context_is_restored_and_ids_are_fresh() -> None:
    with reconcile_context("a") as first:
        with reconcile_context("b") as second:
            assert current_object_key() == "b"
            assert second != first
        assert current_reconcile_id() == first
    assert current_object_key() is None


def test_exceptions_are_rendered() -> None:
    formatter = JsonFormatter()
    try:
        raise ValueError("bad spec.podSets[0]")
    except ValueError:
        record = logging.getLogger("t").makeRecord("t", logging.ERROR, "f", 1, "failed", (), sys.exc_info())
    payload = orjson.loads(formatter.format(record))
    assert "bad spec.podSets[0]" in payload["exception"]
