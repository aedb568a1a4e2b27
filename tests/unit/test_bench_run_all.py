"""``make bench`` runs ``python -m bench.run_all``, and that lists every benchmark of ``bench``.

Running the benchmarks is not done here (``tests/e2e/test_bench_*_runs.py`` runs each one small);
this checks the wiring: the Makefile's entry point exists, every module it lists exists and declares
the options it is given, and no runnable module of ``bench`` is left out without a reason.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys

from bench.harness.processes import REPO_ROOT
from bench.run_all import BENCHES, NOT_BENCHES

BENCH_DIR = REPO_ROOT / "bench"


def _has_main_block(source: str) -> bool:
    for node in ast.parse(source).body:
        if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test):
            return True
    return False


def test_make_bench_runs_run_all() -> None:
    recipe = re.search(r"^bench:.*\n\t(.+)$", (REPO_ROOT / "Makefile").read_text(), re.MULTILINE)
    assert recipe is not None, "the Makefile has a bench target"
    assert recipe.group(1).split()[-2:] == ["-m", "bench.run_all"]
    assert _has_main_block((BENCH_DIR / "run_all.py").read_text())


def test_every_listed_bench_exists_and_declares_its_options() -> None:
    for bench in BENCHES:
        module = BENCH_DIR / f"{bench.module}.py"
        assert module.is_file(), bench
        source = module.read_text()
        assert _has_main_block(source), f"bench.{bench.module} is runnable"
        for option in bench.options:
            if option.startswith("--"):
                assert f'"{option}"' in source, f"bench.{bench.module} declares {option}"


def test_every_runnable_module_is_listed_or_excused() -> None:
    runnable = {
        path.stem
        for path in BENCH_DIR.glob("*.py")
        if path.stem != "run_all" and _has_main_block(path.read_text())
    }
    listed = {bench.module for bench in BENCHES}
    assert runnable == listed | set(NOT_BENCHES)
    assert not listed & set(NOT_BENCHES)


def test_the_harness_runs_nothing_of_its_own() -> None:
    """Only benchmarks are run: a harness module with a ``__main__`` block would be a script again."""
    assert not [
        path.name for path in (BENCH_DIR / "harness").glob("*.py") if _has_main_block(path.read_text())
    ]


def test_list_prints_each_command_without_running_it() -> None:
    finished = subprocess.run(
        [sys.executable, "-m", "bench.run_all", "--list"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert finished.stdout.splitlines() == [f"{bench.name}: {bench.shown()}" for bench in BENCHES]
    assert all(line.split(": ", 1)[1].startswith("python -m bench.") for line in finished.stdout.splitlines())


def test_an_unknown_name_is_a_usage_error() -> None:
    finished = subprocess.run(
        [sys.executable, "-m", "bench.run_all", "--only", "nope", "--list"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert finished.returncode == 2
    assert "unknown benchmark(s): nope" in finished.stderr
