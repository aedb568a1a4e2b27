"""Every package's ``__init__`` docstring lists its modules, and the list is kept in step.

The convention: the docstring has a line ``Modules:``; after it (a blank line may come first) one
bullet per module and subpackage, ``* ``name`` -- what it is`` (a subpackage is written
``name/``), a bullet's text continuing on lines indented by two spaces; the first other line ends
the list. A package is every folder with an ``__init__.py`` under the root packages of the import
contracts (``[tool.importlinter] root_packages``): the product, the dev tools, the test harness and
the benchmarks. A module added, removed or renamed without its line fails here.
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_BULLET = re.compile(r"\* ``(?P<name>[A-Za-z_][A-Za-z0-9_]*/?)`` -- \S")


def _root_packages() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return list(config["tool"]["importlinter"]["root_packages"])


def _packages() -> list[Path]:
    return sorted(
        init.parent
        for package in _root_packages()
        for init in (ROOT / package).rglob("__init__.py")
        if "__pycache__" not in init.parts
    )


def members(package: Path) -> set[str]:
    """The modules (``name``) and subpackages (``name/``) of one package folder."""
    modules = {path.stem for path in package.glob("*.py") if path.name != "__init__.py"}
    subpackages = {f"{path.name}/" for path in package.iterdir() if (path / "__init__.py").is_file()}
    return modules | subpackages


def listed_modules(docstring: str) -> list[str]:
    """The names of the ``Modules:`` list of a package docstring, in order; [] when it has none."""
    lines = docstring.splitlines()
    try:
        start = lines.index("Modules:") + 1
    except ValueError:
        return []
    while start < len(lines) and not lines[start].strip():
        start += 1
    names = []
    for line in lines[start:]:
        bullet = _BULLET.match(line)
        if bullet is not None:
            names.append(bullet["name"])
        elif not (line.startswith("  ") and line.strip() and names):
            break
    return names


def _docstring(package: Path) -> str:
    return ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""


def test_the_scan_sees_every_root_package() -> None:
    packages = {path.relative_to(ROOT).as_posix() for path in _packages()}
    assert set(_root_packages()) <= packages
    assert {"shared/kube", "shared/kueue", "shared/runtime", "devcluster/apiserver/storage"} <= packages


@pytest.mark.parametrize("package", _packages(), ids=lambda path: path.relative_to(ROOT).as_posix())
def test_the_docstring_lists_every_module(package: Path) -> None:
    listed = listed_modules(_docstring(package))
    assert len(listed) == len(set(listed)), f"a module is listed twice: {sorted(listed)}"
    actual = members(package)
    assert set(listed) == actual, (
        f"{package.relative_to(ROOT)}/__init__.py: not listed {sorted(actual - set(listed))}, "
        f"listed but absent {sorted(set(listed) - actual)}"
    )


def test_the_list_ends_at_the_first_other_line() -> None:
    docstring = """Title.

Modules:

* ``client`` -- the client; its text
  goes on here
* ``kube/`` -- a subpackage

* ``after`` -- past the blank line: not part of the list
"""
    assert listed_modules(docstring) == ["client", "kube/"]


def test_a_missing_or_stale_line_is_caught(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "__init__.py").write_text("")
    (tmp_path / "kept.py").write_text("")
    (tmp_path / "added.py").write_text("")
    docstring = "Title.\n\nModules:\n\n* ``kept`` -- here\n* ``removed`` -- gone\n* ``sub/`` -- a package\n"
    assert members(tmp_path) == {"kept", "added", "sub/"}
    assert set(listed_modules(docstring)) ^ members(tmp_path) == {"added", "removed"}
    assert listed_modules("Title.\n\nNo list here.\n") == []
