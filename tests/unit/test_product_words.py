"""Product text describes the product as it is now: no work history in docs, code, comments or tests.

Our work history (which work session changed what, our own issue numbers) lives in git only. This
test reads every product file of the repository (source, tests, docs, configuration, manifests)
and rejects a reference to a work session (by its number, or as "this" or "the last" one) or to one
of our own issues (by its number, or in the possessive). This file passes its own scan: its examples
are templates whose words are filled in at run time.

References to upstream projects stay, written with the project's name: ``Kueue #2478``,
``kubernetes-sigs/kueue#1234``, ``AppWrapper issue #276``, ``tekton-kueue #319``. "Session" in its
other senses (an HTTP or TLS session, ``aiohttp.ClientSession``, pytest's session scope, a POSIX
session, the dev runner's ``Session``) is not a number or a reference, and is not matched.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest

from tests.conftest import REPO_ROOT

#: What is read: text files of the product, by suffix or name.
PRODUCT_SUFFIXES: Final = frozenset(
    {".py", ".md", ".yaml", ".yml", ".toml", ".json", ".cfg", ".ini", ".sh", ".txt", ".j2", ".tpl"}
)
PRODUCT_NAMES: Final = frozenset({"Makefile", "Dockerfile", ".gitignore", ".dockerignore"})
#: Hidden folders that are part of the product; every other one is a tool's cache or local state.
PRODUCT_HIDDEN_FOLDERS: Final = frozenset({".ci", ".github"})
#: Folders that are not the product: build output, local state, virtualenvs.
SKIPPED_FOLDERS: Final = frozenset(
    {".git", ".venv", "venv", "node_modules", "site", "build", "dist", ".dev", "__pycache__"}
)

#: Upstream projects whose issue numbers may be cited: the name comes just before the reference
#: (or before the list it is part of).
UPSTREAM_BEFORE: Final = re.compile(
    r"\b(?:kueue|appwrapper|tekton|kubernetes|jobset|codeflare|kubeflow|ray|go)(?:'s)?\s*(?:issues?\s*)?"
    r"(?:#\d+\s*(?:,|->|/|and|or)\s*)*$",  # and the rest of a list: "Kueue #13047, #14997"
    re.IGNORECASE,
)

#: A work session by number ("session" and a number, "#" allowed) or by position ("this", "last", ...).
SESSIONS: Final = (
    re.compile(r"\bsessions?\s*#?\d+", re.IGNORECASE),
    re.compile(r"\b(?:this|last|next|previous|earlier|a later|the same) session\b", re.IGNORECASE),
)
#: An issue reference: "issue" and a number, a "#" and a number on its own (not ``owner/repo#N``, not
#: the second of "#N/#M"), its possessive; ours unless ``UPSTREAM_BEFORE`` names a project.
ISSUE_REFERENCE: Final = re.compile(
    r"\bissues?\s*#?\d+|(?<![\w/#&])#\d+\b|\bthe issue(?:'s)?\b(?! (?:is|was|here|with|of)\b)",
    re.IGNORECASE,
)


def product_files(root: Path) -> Iterator[Path]:
    """Every product text file under ``root``, skipping tools' caches and build output."""
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        folders = relative.parts[:-1]
        if any(part in SKIPPED_FOLDERS or part.endswith(".egg-info") for part in folders):
            continue
        if any(part.startswith(".") and part not in PRODUCT_HIDDEN_FOLDERS for part in folders):
            continue
        scripts = bool(folders) and folders[0] == ".ci"  # CI's scripts have no suffix
        if path.is_file() and (path.suffix in PRODUCT_SUFFIXES or path.name in PRODUCT_NAMES or scripts):
            yield path


def work_history(text: str) -> list[str]:
    """The work-history references in ``text``, one ``line N: ...`` entry each."""
    found: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        matches = [match for pattern in SESSIONS for match in pattern.finditer(line)]
        matches += [
            match
            for match in ISSUE_REFERENCE.finditer(line)
            if not UPSTREAM_BEFORE.search(line[max(0, match.start() - 40) : match.start()])
        ]
        found += [f"line {number}: {match.group(0)!r} in {line.strip()[:120]!r}" for match in matches]
    return found


def test_no_product_file_mentions_our_work_history() -> None:
    offences = {}
    for path in product_files(REPO_ROOT):
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        if found := work_history(text):
            offences[str(path.relative_to(REPO_ROOT))] = found
    assert not offences, (
        f"product text describes the product as it is now; work history belongs in git: {offences}"
    )


#: The words the templates below are written with, so that this file holds no reference itself.
WORDS: Final = {"s": "session", "S": "Session", "i": "issue", "h": "#"}


@pytest.mark.parametrize(
    "template",
    [
        "measured in {s} 13, 2026-11-27",
        "{S} 12's 2.04x at 500 Jobs",
        "after {s}s 10 and 11",
        "the figures of this {s}",
        "Targets ({i} {h}27): reconciler <= 4 ms",
        "kueue-bridge before {i} {h}24",
        "kubectl's protobuf bodies ({i} 17)",
        "a traceback ({i} 11 item 7)",
        "against the {i}'s targets",
        "what the {i} promises",
        "README {h}27: figures on an idle machine",
        "as in {h}12 and {h}13",
    ],
)
def test_work_history_is_found(template: str) -> None:
    text = template.format(**WORDS)
    assert work_history(text), text


@pytest.mark.parametrize(
    "text",
    [
        "Kueue's ClusterRole for externalFrameworks kinds (kueue #2478)",
        "Kueue #14734 does it for Jobs",
        "the default-queue fix (Kueue #13374)",
        "see kubernetes-sigs/kueue#1234",
        "deletion used to hang on it (AppWrapper issue #276)",
        "AppWrapper #112/#150 ask for this check",
        "sync failures, not completions (Kueue #13047, #14997)",
        "Kueue #12540 -> #12643",
        "a short timeout fails creates: tekton-kueue #319",
        "async with aiohttp.ClientSession() as session:",
        "@pytest.fixture(scope='session')",
        "children run in their own session so a Ctrl-C reaches only the runner",
        "the session's event loop",
        "a TLS session is resumed",
        "color: #fff; item #a",
    ],
)
def test_upstream_references_and_other_sessions_pass(text: str) -> None:
    assert work_history(text) == [], text


def test_the_scan_reads_docs_source_tests_and_manifests() -> None:
    files = {str(path.relative_to(REPO_ROOT)) for path in product_files(REPO_ROOT)}
    assert {"README.md", "docs/benchmarks.md", "pyproject.toml", "Makefile", "shared/__init__.py"} <= files
    assert any(name.startswith("tests/") for name in files)
    assert any(name.startswith("deploy/") and name.endswith(".yaml") for name in files)
    assert ".ci/run" in files
    assert not any(name.startswith((".venv/", ".mypy_cache/", ".git/")) for name in files)
