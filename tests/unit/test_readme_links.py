"""The README's links lead somewhere: every relative link names a file of the repository, and every
anchor one of that page's headings.

The docs site's own links are checked by ``make docs`` (``mkdocs build --strict``); the README is
not a page of the site, so its links are checked here, with the slugs the site's ``toc`` extension
gives headings.
"""

from __future__ import annotations

import re

import pytest
from markdown.extensions.toc import slugify  # type: ignore[import-untyped]  # the site's slugs

from tests.conftest import REPO_ROOT
from tests.docs_text import README

_LINK = re.compile(r"\]\((?P<target>[^)\s]+)\)")
_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def relative_links() -> list[str]:
    text = _FENCE.sub("", README.read_text(encoding="utf-8"))
    return [match["target"] for match in _LINK.finditer(text) if not re.match(r"[a-z]+:", match["target"])]


def headings(markdown: str) -> set[str]:
    """The anchors of a page's headings, as the site's ``toc`` extension makes them."""
    text = _FENCE.sub("", markdown)
    return {
        slugify(re.sub(r"[`*]", "", line.lstrip("#").strip()), "-")
        for line in text.splitlines()
        if re.match(r"#+ ", line)
    }


def test_the_readme_links_to_the_docs() -> None:
    assert sum(link.startswith("docs/") for link in relative_links()) >= 10


@pytest.mark.parametrize("link", relative_links())
def test_every_readme_link_resolves(link: str) -> None:
    path, _, anchor = link.partition("#")
    target = REPO_ROOT / path if path else README
    assert target.is_file(), f"README links to {link}, which does not exist"
    if anchor:
        assert anchor in headings(target.read_text(encoding="utf-8")), f"{path} has no heading #{anchor}"


def test_a_heading_gets_the_sites_slug() -> None:
    assert "several-clusters-make-dev-multicluster" in headings(
        "## Several clusters: `make dev-multicluster`\n"
    )
