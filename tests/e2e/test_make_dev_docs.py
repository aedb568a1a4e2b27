"""The README's Quick start and docs/local-development.md cannot drift from the commands.

Quick start promises exactly two commands on a fresh machine; the flag tables of Local development
must list exactly the flags ``kueue-bridge dev`` and ``kueue-bridge devcluster`` accept.
"""

from __future__ import annotations

import argparse
import re

from devcluster.__main__ import build_parser as devcluster_parser
from devrun.__main__ import build_parser as dev_parser
from tests.docs_text import README, page, section


def flags_of(parser: argparse.ArgumentParser) -> set[str]:
    return {option for action in parser._actions for option in action.option_strings} - {"-h", "--help"}


def table_flags(text: str) -> set[str]:
    """Flags in the first column of the markdown table rows of ``text``."""
    found: set[str] = set()
    for line in text.splitlines():
        if line.startswith("| `-"):
            first_cell = line.split("|")[1]
            found |= set(re.findall(r"`(-{1,2}[a-z][a-z-]*)", first_cell))
    return found


def test_quick_start_is_exactly_make_dev_and_make_test() -> None:
    text = section(README.read_text(encoding="utf-8"), "## Quick start")
    first_block = re.search(r"```\n(.*?)```", text, re.S)
    assert first_block is not None
    assert first_block.group(1).split("\n")[:-1] == ["make dev", "make test"]


def test_local_development_lists_every_dev_and_devcluster_flag() -> None:
    text = page("local-development.md")
    split = text.index("`kueue-bridge devcluster` runs")
    assert table_flags(text[:split]) == flags_of(dev_parser())
    assert table_flags(text[split:]) == flags_of(devcluster_parser())
