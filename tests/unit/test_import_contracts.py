"""The import contracts in pyproject.toml are live: a deliberate violation breaks exactly its contract.

Each case copies the root packages and pyproject.toml into a temporary directory, appends one
forbidden import to one module of the copy and runs ``lint-imports`` there (it analyses the
packages found from its working directory first, so the copy is what it reads). The unmodified copy
must keep every contract, so a broken contract in a case can only come from the injected line.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
_VERDICT = re.compile(r"(?P<name>.+) (?P<verdict>KEPT|BROKEN)(?: \(\d+ ignored imports?\))?")


def _contracts() -> list[str]:
    config = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    return [contract["name"] for contract in config["contracts"]]


def _contract(prefix: str) -> str:
    (name,) = [name for name in _contracts() if name.startswith(prefix)]
    return name


APISERVER = "The devcluster API server never imports"
APISERVER_FLOORS = "The devcluster API server's floors"
STANDIN = "The stand-in reaches the API server over HTTP only"
NOBODY_IMPORTS_DEVRUN = "Nothing imports the dev runner"
DEVRUN_PUBLIC_API = "The dev runner uses the API server and the stand-in through their packages' public API"
DEVRUN_NO_COMPONENTS = "The dev runner starts the components as processes"
PRODUCTION = "Production components never import the devcluster"
TOOLS = "Operator tools read the cluster through shared only"
NOBODY_IMPORTS_TOOLS = "Production components and the devcluster never import the operator tools"
TOOLS_APART = "The operator tools never import each other"
WEBHOOK_LAYERS = "The webhook's layers"
WEBHOOK_RULES = "The webhook's rules use no web framework"
INDEPENDENT = "Components never import each other"
FLOORS = "shared's floors"
KUBE_LEAF = "shared.kube is a leaf library"
BUILTIN_TABLE = "The table of built-in kinds imports no adapter"
ONE_CLIENT = "One client per process"
ONE_SCAFFOLD = "The controller processes run through shared.manager"
ACYCLIC = "No import circles between the modules of a package"
NOBODY_IMPORTS_BENCH = "Nothing of the product imports the benchmarks"
BENCH_PUBLIC_API = "The benchmarks use the dev cluster and the dev runner through their packages' public API"
BENCH_HARNESS = "The benchmark harness imports no benchmark"


def _copy(tmp_path: Path) -> Path:
    config = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    for package in config["root_packages"]:
        shutil.copytree(REPO_ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO_ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def _lint(root: Path) -> dict[str, str]:
    """``lint-imports`` on ``root``: contract name -> "KEPT" or "BROKEN"."""
    result = subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=root,
        env={**os.environ, "COLUMNS": "1000", "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    verdicts = {}
    for line in result.stdout.splitlines():
        verdict_line = _VERDICT.fullmatch(line.rstrip())  # "NAME KEPT" or "NAME KEPT (3 ignored imports)"
        if verdict_line is not None:
            verdicts[verdict_line["name"]] = verdict_line["verdict"]
    assert set(verdicts) == set(_contracts()), result.stdout + result.stderr
    assert (result.returncode != 0) == ("BROKEN" in verdicts.values()), result.stdout
    return verdicts


def test_the_unmodified_copy_keeps_every_contract(tmp_path: Path) -> None:
    verdicts = _lint(_copy(tmp_path))
    assert set(verdicts.values()) == {"KEPT"}


@pytest.mark.parametrize(
    ("module", "line", "broken"),
    [
        pytest.param(
            "devcluster/apiserver/storage/store.py",
            "from devcluster.standin import start_addons",
            {APISERVER},
            id="apiserver-imports-standin",
        ),
        pytest.param(
            "devcluster/apiserver/core.py",
            "import devcluster.server",
            {APISERVER, APISERVER_FLOORS, ACYCLIC},  # the host imports the server: a circle; core reaches app
            id="apiserver-imports-its-host",
        ),
        pytest.param(
            "devcluster/apiserver/output/printers.py",
            "import devcluster.apiserver.storage.store",
            {APISERVER_FLOORS},
            id="apiserver-parts-of-one-floor-import-each-other",
        ),
        pytest.param(
            "devcluster/apiserver/storage/watch.py",
            "import devcluster.apiserver.rest",
            {APISERVER_FLOORS, ACYCLIC},  # the verbs use the store: a circle too
            id="apiserver-storage-imports-the-verbs",
        ),
        pytest.param(
            "devcluster/standin/client.py",
            "import devcluster.apiserver.storage.store",
            {STANDIN},
            id="standin-imports-apiserver-internals",
        ),
        pytest.param(
            "devcluster/standin/scheduling_stats.py",
            "import devrun.progress",
            {STANDIN, NOBODY_IMPORTS_DEVRUN},
            id="standin-imports-runner",
        ),
        pytest.param(
            "devcluster/apiserver/errors.py",
            "import devrun",
            # devrun's public API (what bench uses) reaches the API server's host and the operator
            # tools (devrun.cluster, devrun.identities): from the bottom floor, those break too
            {APISERVER, NOBODY_IMPORTS_DEVRUN, APISERVER_FLOORS, NOBODY_IMPORTS_TOOLS},
            id="apiserver-imports-runner",
        ),
        pytest.param(
            "devrun/progress.py",
            "import devcluster.apiserver.rest",
            {DEVRUN_PUBLIC_API},
            id="runner-imports-apiserver-internals",
        ),
        pytest.param(
            "devrun/samples.py",
            "import webhook.serving.admission_review",
            {DEVRUN_NO_COMPONENTS},
            id="runner-imports-a-component",
        ),
        pytest.param(
            "reconciler/__init__.py",
            "import devcluster.apiserver",
            {PRODUCTION},
            id="component-imports-devcluster",
        ),
        pytest.param(
            "bridge_tools/quota.py",
            "import reconciler.ancestry",
            {TOOLS, DEVRUN_NO_COMPONENTS},  # the runner imports the tools, so it would reach it too
            id="tools-import-a-component",
        ),
        pytest.param(
            "bridge_tools/kinds.py",
            "import devrun.progress",
            {TOOLS},
            id="tools-import-the-runner",
        ),
        pytest.param(
            "webhook/__init__.py",
            "import bridge_tools.explain.diagnosis",
            {NOBODY_IMPORTS_TOOLS},
            id="component-imports-tools",
        ),
        pytest.param(
            "bridge_tools/adapter/dry_run.py",
            "from bridge_tools.explain.verdict import Explanation",
            {TOOLS_APART},
            id="one-tool-imports-another",
        ),
        pytest.param(
            "devcluster/standin/client.py",
            "import bridge_tools.quota",
            {NOBODY_IMPORTS_TOOLS},
            id="standin-imports-tools",
        ),
        pytest.param(
            "appwrapper/phases.py",
            "import reconciler.job_reconciler",
            {INDEPENDENT},
            id="appwrapper-imports-the-reconciler",
        ),
        pytest.param(
            "appwrapper/__init__.py",
            "import devcluster.standin",
            {PRODUCTION},
            id="appwrapper-imports-devcluster",
        ),
        pytest.param(
            "shared/kube/clock.py",
            "import shared.frameworks.base",
            {FLOORS, KUBE_LEAF, ACYCLIC},  # the adapters import shared.kube: a circle too
            id="kube-imports-the-adapters",
        ),
        pytest.param(
            "shared/kube/watch.py",
            "import shared.jsontree",
            {KUBE_LEAF},
            id="kube-imports-a-loose-shared-module",
        ),
        pytest.param(
            "shared/models/base.py",
            "import shared.config",
            {FLOORS, ACYCLIC},
            id="models-import-the-configuration",
        ),
        pytest.param(
            "shared/frameworks/paths.py",
            "import shared.leading",
            {FLOORS, ACYCLIC},
            id="adapters-import-process-start-up",
        ),
        pytest.param(
            "appwrapper/__main__.py",
            "from shared.leading import serve_while_leading",
            {ONE_SCAFFOLD},
            id="a-controller-process-wires-its-own-election",
        ),
        pytest.param(
            "multikueue/__main__.py",
            "from shared.probes import ProbeServer",
            {ONE_SCAFFOLD},
            id="a-controller-process-serves-its-own-probes",
        ),
        pytest.param(
            "multikueue/workload_steps.py",
            "from multikueue.workload import WorkloadReconciler",
            {ACYCLIC},
            id="the-multikueue-decisions-import-the-reconciler-again",
        ),
        pytest.param(
            "shared/kube/informer.py",
            "import shared.kube.controller",
            {ACYCLIC},
            id="a-circle-inside-shared-kube",
        ),
        pytest.param(
            "webhook/rules/patch.py",
            "import fastapi",
            {WEBHOOK_RULES},
            id="the-webhook-rules-see-http",
        ),
        pytest.param(
            "webhook/registration.py",
            "import webhook.informer_lookups",
            {WEBHOOK_LAYERS},
            id="webhook-siblings-of-one-layer-import-each-other",
        ),
        pytest.param(
            "webhook/rules/settings.py",
            "import webhook.settings_from_config",
            {WEBHOOK_LAYERS, ACYCLIC},  # settings_from_config builds the rules' settings: a circle too
            id="the-webhook-rules-import-the-assembly",
        ),
        pytest.param(
            "shared/frameworks/builtin_kinds.py",
            "import shared.frameworks.registry",
            {BUILTIN_TABLE, ACYCLIC},  # the registry reads the table: a circle too
            id="the-table-of-built-in-kinds-imports-the-registry",
        ),
        pytest.param(
            "certs/kubeapi.py",
            "import httpx",
            {ONE_CLIENT},
            id="certs-opens-a-second-client",
        ),
        pytest.param(
            "webhook/rules/access_review.py",
            "from kubernetes import client",
            {ONE_CLIENT},
            id="webhook-uses-the-kubernetes-package",
        ),
        pytest.param(
            "shared/eventloop.py",
            "import bench.harness.processes",
            {NOBODY_IMPORTS_BENCH},
            id="shared-imports-the-benchmarks",
        ),
        pytest.param(
            "devrun/cluster.py",
            "import bench.client",
            {NOBODY_IMPORTS_BENCH, BENCH_HARNESS},  # the harness uses the runner: now a benchmark too
            id="the-runner-imports-a-benchmark",
        ),
        pytest.param(
            "bench/client.py",
            "from devcluster.standin.jobrunner import JobRunner",
            {BENCH_PUBLIC_API},
            id="a-benchmark-imports-standin-internals",
        ),
        pytest.param(
            "bench/harness/clusters.py",
            "from devrun.samples import crd_files",
            {BENCH_PUBLIC_API},
            id="the-harness-imports-a-runner-module",
        ),
        pytest.param(
            "bench/harness/metrics.py",
            "import bench.io_floor",
            {BENCH_HARNESS, ACYCLIC},  # the benchmark reads the harness: a circle too
            id="the-harness-imports-a-benchmark",
        ),
        pytest.param(
            "bench/webhook_vs_kueue.py",
            "import bench.webhook_latency",
            {ACYCLIC},  # --kueue of webhook_latency is webhook_vs_kueue
            id="a-circle-between-benchmarks",
        ),
        pytest.param(
            "bench/harness/processes.py",
            "import bench.harness.lifecycles",
            {ACYCLIC},  # lifecycles reads CPU through processes
            id="a-circle-inside-the-harness",
        ),
    ],
)
def test_a_forbidden_import_breaks_its_contract(
    tmp_path: Path, module: str, line: str, broken: set[str]
) -> None:
    root = _copy(tmp_path)
    with (root / module).open("a") as source:
        source.write(f"\n{line}  # deliberate violation\n")
    verdicts = _lint(root)
    assert {name for name, verdict in verdicts.items() if verdict == "BROKEN"} == {
        _contract(prefix) for prefix in broken
    }
