"""``make bench`` runs ``bench/run_all.py``, and that lists every benchmark under ``bench/``.

Running the benchmarks is not done here (``tests/e2e/test_bench_*_runs.py`` runs each one small);
this checks the wiring that used to be broken: the Makefile's entry point exists, every script it
lists exists and declares the options it is given, and no runnable script under ``bench/`` is left
out without a reason.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys

from bench.run_all import BENCHES, NOT_BENCHES, REPO_ROOT

BENCH_DIR = REPO_ROOT / "bench"


def _has_main_block(source: str) -> bool:
    for node in ast.parse(source).body:
        if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test):
            return True
    return False


def test_make_bench_runs_run_all() -> None:
    recipe = re.search(r"^bench:.*\n\t(.+)$", (REPO_ROOT / "Makefile").read_text(), re.MULTILINE)
    assert recipe is not None, "the Makefile has a bench target"
    assert recipe.group(1).split()[-1] == "bench/run_all.py"
    assert (BENCH_DIR / "run_all.py").is_file()


def test_every_listed_bench_exists_and_declares_its_options() -> None:
    for bench in BENCHES:
        script = BENCH_DIR / bench.script
        assert script.is_file(), bench
        source = script.read_text()
        assert _has_main_block(source), f"{bench.script} is runnable"
        for option in bench.options:
            if option.startswith("--"):
                assert f'"{option}"' in source, f"{bench.script} declares {option}"


def test_every_runnable_script_is_listed_or_excused() -> None:
    runnable = {
        path.name
        for path in BENCH_DIR.glob("*.py")
        if path.name != "run_all.py" and _has_main_block(path.read_text())
    }
    listed = {bench.script for bench in BENCHES}
    assert runnable == listed | set(NOT_BENCHES)
    assert not listed & set(NOT_BENCHES)


def test_list_prints_each_command_without_running_it() -> None:
    finished = subprocess.run(
        [sys.executable, str(BENCH_DIR / "run_all.py"), "--list"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert finished.stdout.splitlines() == [f"{bench.name}: {bench.shown()}" for bench in BENCHES]


def test_an_unknown_name_is_a_usage_error() -> None:
    finished = subprocess.run(
        [sys.executable, str(BENCH_DIR / "run_all.py"), "--only", "nope", "--list"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert finished.returncode == 2
    assert "unknown benchmark(s): nope" in finished.stderr
