"""``kueue-bridge explain`` on a MultiKueue manager: the fleet of ``multikueue_support`` (a manager
devcluster and two workers, every component running), explained from the manager cluster only.

The verdicts: waiting for the MultiKueue check while no worker admits its copy (and which workers
hold copies), a worker cluster that became inactive named in that verdict, and running on the
worker that admitted it. ``explain`` is given the manager's kubeconfig only -- it never reads a
worker (``bridge_tools.explain.multikueue``).
"""

from __future__ import annotations

import asyncio
import io
from pathlib import Path
from typing import Any

import pytest

from bridge_tools.explain.cli import main as explain_main
from bridge_tools.explain.verdict import Explanation
from tests.e2e.explain_support import wait_for_verdict
from tests.e2e.multikueue_support import JOB, NAMESPACE, Fleet, fleet, new_job

pytestmark = [pytest.mark.e2e, pytest.mark.needs_shared, pytest.mark.slow]


async def verdict_of(f: Fleet, job: str, verdict: str, **kwargs: Any) -> Explanation:
    return await wait_for_verdict(
        f.manager, job, namespace=NAMESPACE, verdict=verdict, config=f.config, within_seconds=40, **kwargs
    )


def multikueue(explanation: Explanation) -> tuple[dict[str, str], list[tuple[str, ...]]]:
    section = explanation.section("MultiKueue")
    return dict(section.fields), [row[:4] for row in section.rows]


async def test_pending_while_no_worker_admits_then_a_worker_inactive(
    devcluster_factory: Any, shared_dir: Path
) -> None:
    # 3 cpu fits the manager's 4 but neither worker's 2: both hold a copy, neither admits it
    async with fleet(devcluster_factory, shared_dir) as f:
        await f.manager.create(JOB, new_job("big", cpu="3"), namespace=NAMESPACE)
        pending = (
            "Quota reserved: in ClusterQueue cq, waiting for admission check 'mk' "
            "(Pending: no worker has admitted it yet; copies on w1, w2)"
        )
        explanation = await verdict_of(f, "big", pending, until=lambda e: e.verdict == pending)
        fields, rows = multikueue(explanation)
        assert fields["admission check"] == "mk"
        assert fields["MultiKueueConfig"] == "cfg"
        assert fields["clusterName"] == "- (no worker has admitted it yet)"
        assert fields["nominatedClusterNames"] == "w1, w2"
        assert rows == [
            ("w1", "True", "Active", "copy (nominated)"),
            ("w2", "True", "Active", "copy (nominated)"),
        ]

        await f.proxies["w2"].cut()
        named = "; MultiKueueCluster w2 is inactive (ClientConnectionFailed))"
        explanation = await verdict_of(
            f,
            "big",
            "Quota reserved: in ClusterQueue cq, waiting for admission check 'mk' "
            "(Pending: no worker has admitted it yet; copies on ",
            until=lambda e: e.verdict.endswith(named),
        )
        fields, rows = multikueue(explanation)
        # the copies are what the manager nominated: w2's stays listed until MultiKueue reconciles
        # the Workload again (then only the usable w1)
        assert fields["nominatedClusterNames"] in ("w1, w2", "w1")
        assert f"copies on {fields['nominatedClusterNames']}{named}" in explanation.verdict
        assert rows[0] == ("w1", "True", "Active", "copy (nominated)")
        assert rows[1][:3] == ("w2", "False", "ClientConnectionFailed")
        message = explanation.section("MultiKueue").rows[1][4]
        assert "connection attempts: " in message, "Kueue's condition message is shown as written"
        assert explanation.section("Admission checks").rows[0][:3] == (
            "mk",
            "kueue-bridge.dev/multikueue",
            "Pending",
        )


async def test_running_on_the_worker_that_admitted_it(devcluster_factory: Any, shared_dir: Path) -> None:
    async with fleet(devcluster_factory, shared_dir) as f:
        await f.manager.create(JOB, new_job("hello", run_seconds=60), namespace=NAMESPACE)
        explanation = await verdict_of(f, "hello", "Running:")
        check = await f.check_of("hello")
        assert check is not None and check["state"] == "Ready"
        winner = check["message"].split('"')[1]
        assert explanation.verdict == f"Running: on worker cluster '{winner}' (admitted by ClusterQueue cq)"
        fields, rows = multikueue(explanation)
        assert fields["clusterName"] == winner
        local = await f.workload_of("hello")
        assert local is not None
        # explain shows the nomination as written; MultiKueue clears it by leaving it out of its
        # kueue-admission apply, which the devcluster (no field ownership yet) does not carry out:
        # test_multikueue_e2e.py::test_the_nomination_is_cleared_once_admitted
        nominated = local["status"].get("nominatedClusterNames") or []
        assert fields["nominatedClusterNames"] == (", ".join(nominated) or "-")
        assert [(row[0], row[3]) for row in rows] == [
            (name, "runs here" if name == winner else "copy (nominated)" if name in nominated else "-")
            for name in ("w1", "w2")
        ]

        # the command, given the manager's kubeconfig only
        manager = f.clusters["manager"]
        config = manager.kubeconfig_path.parent / "kueue-bridge.yaml"
        config.write_text(
            "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nnamespace: kueue-system\n"
        )
        argv = ["job/hello", "-n", NAMESPACE, "--kubeconfig", str(manager.kubeconfig_path)]
        out, err = io.StringIO(), io.StringIO()
        code = await asyncio.to_thread(explain_main, [*argv, "--config", str(config)], stdout=out, stderr=err)
        assert (code, err.getvalue()) == (0, "")
        text = out.getvalue()
        assert text.splitlines()[0] == explanation.verdict
        assert "\nMultiKueue\n  admission check        mk\n" in text
