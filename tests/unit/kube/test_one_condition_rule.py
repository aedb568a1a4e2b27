"""Every condition read and write goes through ``shared.kube.conditions``: a check over the source.

A condition's status is read with ``is_true``/``is_false``/``is_undecided`` (or ``is_condition_true``
on a list) and written with ``set_condition``; an inline ``status == "True"`` or a second
``set_condition`` is a second implementation of the rule, free to drift from the first (one once
dropped other controllers' malformed conditions on write).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PACKAGES = (
    "kueue_bridge",
    "shared",
    "webhook",
    "reconciler",
    "multikueue",
    "appwrapper",
    "certs",
    "devcluster",
    "devrun",
    "bridge_tools",
)
THE_ONE = Path("shared/kube/conditions.py")

_STATUS = r"""["'](?:True|False|Unknown)["']"""
#: ``x == "True"``, ``"False" != x``, ``x in ("True", "False")``, ``x not in ("True", ...)``
INLINE_STATUS_CHECK = re.compile(
    rf"""(?:[=!]=\s*{_STATUS})|(?:{_STATUS}\s*[=!]=)|(?:\bin\s*[(\[{{]\s*{_STATUS})"""
)
SET_CONDITION_DEFINITION = re.compile(r"^\s*(?:async\s+)?def\s+set_condition\b", re.M)


def _sources() -> list[Path]:
    return sorted(path for package in PACKAGES for path in (ROOT / package).rglob("*.py"))


def test_the_scan_sees_the_product_source() -> None:
    sources = {path.relative_to(ROOT) for path in _sources()}
    assert THE_ONE in sources
    assert Path("multikueue/conditions.py") in sources
    assert len(sources) > 200


@pytest.mark.parametrize(
    "line",
    [
        'if condition.get("status") == "True":',
        "return c.status != 'False'",
        'ok = "True" == status',
        'if condition.get("status") not in ("True", "False"):',
        'x = status in ["Unknown"]',
    ],
)
def test_the_pattern_catches_inline_checks(line: str) -> None:
    assert INLINE_STATUS_CHECK.search(line)


@pytest.mark.parametrize(
    "line", ['status="True" if ok else "False"', 'if value == "true":', "return is_true(c)"]
)
def test_the_pattern_leaves_other_code_alone(line: str) -> None:
    assert not INLINE_STATUS_CHECK.search(line)


def test_no_inline_condition_status_checks_outside_shared_kube_conditions() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in _sources()
        if path.relative_to(ROOT) != THE_ONE
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if INLINE_STATUS_CHECK.search(line)
    ]
    assert found == [], "read a condition's status with shared.kube.conditions:\n" + "\n".join(found)


def test_set_condition_is_defined_once() -> None:
    definitions = [
        str(path.relative_to(ROOT))
        for path in _sources()
        if SET_CONDITION_DEFINITION.search(path.read_text())
    ]
    assert definitions == [str(THE_ONE)]
