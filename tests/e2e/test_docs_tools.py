"""The docs' ``explain``, ``preflight`` and ``adapter test`` examples are real output.

Each example is a fenced block whose first line is ``$ kueue-bridge ...``; the rest is what the
command prints, on any page of the docs or in the README. The test recreates the situation the
page describes and runs the command:

* ``explain``: the ``make dev`` queues and samples (``examples/dev``) on a devcluster with the Kueue
  stand-in and a real ``kueue-bridge reconciler`` process, created one by one so that ``hello`` and
  ``pi`` hold the ClusterQueue's 2 CPUs and ``report`` waits. Ages, the hash suffix of Workload
  names (the hash covers the job's UID) and the queue position among jobs created in the same
  second (Kueue breaks that tie by UID) differ from run to run, so they are masked, and runs of
  blanks are compared as one (a longer age widens a column);
* ``preflight``: in the same situation; only the webhook's port is masked;
* ``adapter test``: the worked example's configuration and object, compared byte for byte.
"""

from __future__ import annotations

import asyncio
import io
import re
import shlex
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from bridge_tools.adapter.cli import main as adapter_main
from bridge_tools.explain.cli import main as explain_main
from bridge_tools.preflight.cli import main as preflight_main
from certs import generate_ca
from devcluster.apiserver import ServerOptions
from devcluster.server import ThreadedDevCluster
from devrun.cluster import publish_standin_configuration
from devrun.samples import apply_queues, crd_files, install_crds, load_manifests
from shared.config import Configuration, load_config
from shared.frameworks.registry import gvk_of
from tests.conftest import REPO_ROOT
from tests.docs_text import documentation_files
from tests.e2e.conftest import kube_client
from tests.e2e.explain_support import explained
from tests.e2e.test_reconciler_support import ReconcilerProcess, running_processes
from tests.e2e.test_webhook_e2e import issue, readyz, register, running_webhook
from tests.polling import eventually
from tests.unit.frameworks.test_docs_adapter_example import adapter_examples

pytestmark = [pytest.mark.e2e, pytest.mark.needs_shared]

EXAMPLES = REPO_ROOT / "examples" / "dev"
_BLOCK = re.compile(r"```\n\$ (kueue-bridge [^\n]*)\n(.*?)```", re.DOTALL)


def examples(command: str) -> list[tuple[list[str], str]]:
    """(argv without ``kueue-bridge``, expected output) of every documented example of ``command``."""
    found = []
    for path in documentation_files():
        for match in _BLOCK.finditer(path.read_text(encoding="utf-8")):
            argv = shlex.split(match.group(1))[1:]
            if argv[0] == command:
                found.append((argv[1:], match.group(2)))
    assert found, f"the docs have no `$ kueue-bridge {command}` example"
    return found


def masked(text: str) -> list[str]:
    """Names' hashes and ages masked, spaces collapsed, and each CONDITION table's rows sorted: they
    are in stored order, which depends on whether the reconciler's PodsReady or the stand-in's
    QuotaReserved was written first (a race a loaded machine decides either way)."""
    text = re.sub(r"\b((?:job|samplejob)-[a-z0-9.-]+?)-[0-9a-f]{5}\b", r"\1-HASH", text)
    text = re.sub(r"\b\d+(?:h\d+m|h|m\d+s|m|s)\b", "AGE", text)
    # report, train-small and train-large are often created within one second: Kueue then orders
    # them by UID, so the estimated position among them differs from run to run
    text = re.sub(
        r"^(\s*position\s+)\d+ of 3 pending in the ClusterQueue, \d+ of 3",
        r"\1N of 3 pending in the ClusterQueue, N of 3",
        text,
        flags=re.M,
    )
    lines = [" ".join(line.split()) for line in text.splitlines()]
    for start, line in enumerate(lines):
        if line.startswith("CONDITION "):
            end = next((i for i in range(start + 1, len(lines)) if not lines[i]), len(lines))
            lines[start + 1 : end] = sorted(lines[start + 1 : end])
    return lines


def run(main: Callable[..., int], argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


# --- explain ----------------------------------------------------------------------------------------


async def _make_dev_situation(kubeconfig: Path) -> None:
    """The samples created one at a time, suspended (as the webhook leaves them), each Workload awaited."""
    async with kube_client(kubeconfig) as client:
        await install_crds(client, crd_files()[0])
        await apply_queues(client, load_manifests(EXAMPLES / "queues.yaml"))
        for document in load_manifests(EXAMPLES / "jobs.yaml"):
            if document["kind"] == "AppWrapper":
                continue  # no appwrapper controller here; the example is about the Job and SampleJobs
            document["spec"]["suspend"] = True
            name = document["metadata"]["name"]
            await client.create(gvk_of(document), document, namespace="team-a")
            kind = document["kind"].lower()

            async def has_workload(kind: str = kind, name: str = name) -> bool:
                explanation = await explained(
                    client, name, namespace="team-a", kind=kind, config=_dev_config()
                )
                return not explanation.verdict.startswith(("Waiting", "Not queued"))

            # The reconciler started before the CRDs were installed: its watches retry with backoff,
            # up to WatchSettings.backoff_max (30 s) apart, so the first Workload may take that long
            # (a safety net, never a speed claim).
            await eventually(has_workload, what=f"a Workload for {name}", within_seconds=120)

        async def settled() -> bool:
            explanation = await explained(client, "report", namespace="team-a", config=_dev_config())
            conditions = {row[0] for row in explanation.section("Workload").rows}
            events = {row[2] for row in explanation.section("Events").rows}
            position = dict(explanation.section("ClusterQueue").fields).get("position", "")
            return (
                explanation.verdict.startswith("Pending: ClusterQueue dev-cluster-queue has 2/2 cpu")
                and {"QuotaReserved", "PodsReady"} <= conditions
                and "CreatedWorkload" in events
                and " of 3 pending in the ClusterQueue" in position
            )

        await eventually(settled, what="report waiting for quota", within_seconds=30)


def _dev_config() -> Configuration:
    return load_config(EXAMPLES / "config.yaml")


async def _as_on_make_dev(
    kubeconfig: Path, commands: list[tuple[Callable[..., int], list[str]]], cert_dir: Path
) -> list[tuple[int, str, str]]:
    """``make dev``'s situation, then the commands, with what ``make dev`` has besides: the Kueue
    stand-in's published Configuration and the webhook registered (explain's Preflight section,
    preflight's webhook checks)."""
    await _make_dev_situation(kubeconfig)
    ca = generate_ca()
    issue(cert_dir, ca)
    async with kube_client(kubeconfig) as client:
        await publish_standin_configuration(client, config=EXAMPLES / "config.yaml")
        async with running_webhook(_dev_config(), kubeconfig=kubeconfig, cert_dir=cert_dir) as webhook:
            url = f"https://127.0.0.1:{webhook.server.port}"

            async def ready() -> bool:
                return (await readyz(url, ca)).status_code == 200

            await eventually(ready, what="webhook /readyz 200")
            await register(client, _dev_config(), url=url, ca_pem=ca.cert_pem)
            results = []
            for main, argv in commands:
                # the commands run their own event loop; the in-process webhook needs this one
                results.append(await asyncio.to_thread(run, main, [*argv, "--kubeconfig", str(kubeconfig)]))
            return results


def _repo_paths(argv: list[str]) -> list[str]:
    return [str(REPO_ROOT / a) if a.startswith("examples/") else a for a in argv]


def masked_preflight(text: str) -> list[str]:
    text = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", text)
    return [" ".join(line.split()) for line in text.splitlines()]


def test_documented_explain_and_preflight_examples_are_real_output(shared_dir: Path, tmp_path: Path) -> None:
    [(explain_argv, explain_expected)] = examples("explain")
    [(preflight_argv, preflight_expected)] = examples("preflight")
    cluster = ThreadedDevCluster(options=ServerOptions(kueue_standin=True)).start()
    try:
        reconciler = ReconcilerProcess(
            config=EXAMPLES / "config.yaml",
            kubeconfig=cluster.kubeconfig_path,
            identity="docs",
            log_path=tmp_path / "reconciler.log",
        )
        with running_processes(reconciler):
            commands = [
                (explain_main, _repo_paths(explain_argv)),
                (preflight_main, _repo_paths(preflight_argv)),
            ]
            (code, out, err), (preflight_code, preflight_out, preflight_err) = asyncio.run(
                _as_on_make_dev(cluster.kubeconfig_path, commands, tmp_path / "certs")
            )
    finally:
        cluster.stop()
    assert (code, err) == (0, "")
    assert masked(out) == masked(explain_expected), (
        f"the documented explain example is stale; the command printed:\n{out}"
    )
    assert (preflight_code, preflight_err) == (0, "")
    assert masked_preflight(preflight_out) == masked_preflight(preflight_expected), (
        f"the documented preflight example is stale; the command printed:\n{preflight_out}"
    )


# --- adapter test -----------------------------------------------------------------------------------


def test_documented_adapter_test_examples_are_real_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocks = adapter_examples()
    header = {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration"}
    (tmp_path / "trainingrun.yaml").write_text(yaml.safe_dump({**header, **blocks["trainingrun-config"]}))
    (tmp_path / "resnet.yaml").write_text(yaml.safe_dump(blocks["trainingrun-object"]))
    broken = blocks["trainingrun-object"]
    broken["spec"]["workerGroups"][0]["replicas"] = "four"
    (tmp_path / "resnet-broken.yaml").write_text(yaml.safe_dump(broken))
    monkeypatch.chdir(tmp_path)
    cases = examples("adapter")
    assert len(cases) == 2
    for argv, expected in cases:
        code, out, err = run(adapter_main, argv)
        printed = out + err  # a failing run prints its problems on stderr
        assert code == (1 if err else 0)
        assert printed == expected, (
            f"the documented example `{' '.join(argv)}` is stale; it printed:\n{printed}"
        )
