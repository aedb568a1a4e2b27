"""The documentation the tests hold to the code: ``README.md`` and the pages of the docs site.

Pages are named by their file under ``docs/`` (``mkdocs.yml`` lists them); a section is the text
from its heading to the next heading of the same or a higher level, so a test that reads one
section does not depend on where the page puts the others.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

from tests.conftest import REPO_ROOT

__all__ = ["DOCS_DIR", "README", "documentation_files", "page", "section"]

README: Final = REPO_ROOT / "README.md"
DOCS_DIR: Final = REPO_ROOT / "docs"


def page(name: str) -> str:
    """The text of ``docs/<name>``."""
    return (DOCS_DIR / name).read_text(encoding="utf-8")


def documentation_files() -> list[Path]:
    """The README and every page of the docs site."""
    return [README, *sorted(DOCS_DIR.glob("*.md"))]


def section(text: str, heading: str) -> str:
    """The section of ``text`` whose heading line is ``heading`` (e.g. ``## Quick start``).

    Headings inside fenced blocks are not headings.
    """
    level = len(heading) - len(heading.lstrip("#"))
    lines = text.splitlines(keepends=True)
    fenced = False
    start: int | None = None
    for index, line in enumerate(lines):
        if line.startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        if start is None:
            if line.rstrip("\n") == heading:
                start = index
            continue
        match = re.match(r"(#+) ", line)
        if match and len(match.group(1)) <= level:
            return "".join(lines[start:index])
    if start is None:
        raise LookupError(f"no heading {heading!r}")
    return "".join(lines[start:])
