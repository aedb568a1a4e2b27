"""CPU per admission of the webhook alone under wrk, no cluster: the admissions of a real job life.

``python -m bench.webhook_latency --kueue`` needs the kit's cluster and sends one request (the captured create of
an already suspended Job, the cheapest admission there is). This one starts the webhook server as
``bench.webhook_latency`` does (its own process on uvloop, batch Jobs, in-memory lookups), pins it to one
core and wrk to the other, and sends the three admissions every Job of the real run gets, shaped as
kube-apiserver sends them (``../shared/fixtures``' captured create, with ``managedFields``):

* ``/mutate`` CREATE of a queued Job without ``spec.suspend`` (answered with a patch);
* ``/validate`` CREATE of the suspended Job;
* ``/validate`` UPDATE that unsuspends it (``object`` and ``oldObject``, as the reconciler's patch
  leaves them: uid, resourceVersion, status, two field managers).

``--mix`` picks which (``real``: the three in turn; ``mutate``, ``create``, ``update``: one of
them; ``suspended``: ``python -m bench.webhook_latency --kueue``'s request). ``--connections 16`` is the closed
loop of ``python -m bench.webhook_latency --kueue``; ``--connections 1`` sends one admission at a time. Prints requests/s, p50/p99 and the server's CPU
microseconds per request (``/proc``, all threads), median and range over ``--rounds``.

    .venv/bin/python -m bench.webhook_wrk [--seconds 5] [--rounds 3] [--connections 16] [--mix real]
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.harness.load import FIXTURE
from bench.harness.processes import load_average, process_cpu_seconds
from bench.harness.webhook_server import webhook_process, write_certificates
from bench.harness.wrk import CLIENT_CORE, SERVER_CORE, WrkResult, parse_wrk, pin
from devrun import shared_dir
from shared.constants import QUEUE_LABEL
from shared.eventloop import run_process_loop

__all__ = ["admissions", "main"]


def admissions() -> dict[str, tuple[str, bytes]]:
    """name -> (path, AdmissionReview body) of a real job's admissions (namespace ``ns``, queue ``q``)."""
    review: dict[str, Any] = json.loads((shared_dir() / FIXTURE).read_text())
    request = review["request"]
    request["namespace"] = "ns"
    job = request["object"]
    job["metadata"]["namespace"] = "ns"
    job["metadata"]["labels"][QUEUE_LABEL] = "q"
    job["metadata"]["managedFields"][0]["fieldsV1"]["f:metadata"]["f:labels"]["f:" + QUEUE_LABEL] = {}

    def body(operation: str, obj: dict[str, Any], old: dict[str, Any] | None) -> bytes:
        shaped = copy.deepcopy(review)
        shaped["request"].update(operation=operation, object=obj, oldObject=old)
        if operation == "UPDATE":
            shaped["request"]["options"] = {"kind": "UpdateOptions", "apiVersion": "meta.k8s.io/v1"}
        return json.dumps(shaped, separators=(",", ":")).encode()

    unsuspended_by_user = copy.deepcopy(job)
    del unsuspended_by_user["spec"]["suspend"]
    stored = copy.deepcopy(job)
    stored["metadata"].update(
        uid="0b9f3c36-5d0c-4d43-8a4c-1f2b3c4d5e6f",
        resourceVersion="1234",
        generation=1,
        creationTimestamp="2026-11-22T02:08:19Z",
    )
    started = copy.deepcopy(stored)
    started["spec"]["suspend"] = False
    started["metadata"]["generation"] = 2
    started["metadata"]["managedFields"].append(
        {
            "manager": "kueue-bridge",
            "operation": "Update",
            "apiVersion": "batch/v1",
            "time": "2026-11-22T02:08:20Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:spec": {"f:suspend": {}}},
        }
    )
    return {
        "mutate": ("/mutate", body("CREATE", unsuspended_by_user, None)),
        "create": ("/validate", body("CREATE", job, None)),
        "update": ("/validate", body("UPDATE", started, stored)),
        "suspended": ("/mutate", body("CREATE", job, None)),
    }


MIXES = {
    "real": ("mutate", "create", "update"),
    "mutate": ("mutate",),
    "create": ("create",),
    "update": ("update",),
    "suspended": ("suspended",),
}


def _script(directory: Path, requests: list[tuple[str, bytes]]) -> Path:
    """A wrk script sending ``requests`` in turn on every connection."""
    lines = ["local requests = {}"]
    for index, (path, body) in enumerate(requests, start=1):
        file = directory / f"body{index}.json"
        file.write_bytes(body)
        lines += [
            f'local f = io.open("{file}", "rb")',
            f'requests[{index}] = wrk.format("POST", "{path}", {{["Content-Type"] = "application/json"}}, f:read("*all"))',
            "f:close()",
        ]
    lines += [
        "local i = 0",
        "request = function()",
        f"  i = i % {len(requests)} + 1",
        "  return requests[i]",
        "end",
    ]
    script = directory / "mix.lua"
    script.write_text("\n".join(lines) + "\n")
    return script


def _wrk(url: str, script: Path, *, seconds: float, connections: int) -> WrkResult:
    command = ["taskset", "-c", CLIENT_CORE, "wrk", "-t1", f"-c{connections}", f"-d{seconds:g}s"]
    command += ["--latency", "-s", str(script), url]
    return parse_wrk(subprocess.run(command, capture_output=True, text=True, check=True).stdout)


async def _measure(args: argparse.Namespace, tmp: Path) -> list[tuple[WrkResult, float, str]]:
    write_certificates(tmp)
    bodies = admissions()
    script = _script(tmp, [bodies[name] for name in MIXES[args.mix]])
    results = []
    async with webhook_process(tmp) as served:
        pid = served.process.pid
        assert pid is not None
        pin(pid)
        await asyncio.to_thread(_wrk, served.webhook_url, script, seconds=2, connections=args.connections)
        for _ in range(args.rounds):
            load = load_average()
            before = process_cpu_seconds(pid)
            result = await asyncio.to_thread(
                _wrk, served.webhook_url, script, seconds=args.seconds, connections=args.connections
            )
            cpu = process_cpu_seconds(pid) - before
            per_request = cpu / max(result.requests, 1) * 1e6
            print(
                f"{result.requests_per_second:8.0f} req/s   p50 {result.p50_ms:6.2f} ms   p99 "
                f"{result.p99_ms:6.2f} ms   {per_request:6.1f} us CPU per request   (load {load})",
                flush=True,
            )
            results.append((result, per_request, load))
    return results


def _spread(values: list[float], digits: int = 0) -> str:
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--mix", choices=sorted(MIXES), default="real")
    args = parser.parse_args(argv)
    if shutil.which("wrk") is None or shutil.which("taskset") is None:
        print("wrk and taskset are needed (apt-get install wrk util-linux)")
        return 2
    with tempfile.TemporaryDirectory(prefix="bench-webhook-wrk-") as tmp:
        results = run_process_loop(_measure(args, Path(tmp)), tune_gc=False)
    print(
        f"{args.mix} mix, wrk -t1 -c{args.connections}, {args.seconds:g}s x {args.rounds}, server on core "
        f"{SERVER_CORE}: {_spread([r.requests_per_second for r, _, _ in results])} req/s, "
        f"{_spread([cpu for _, cpu, _ in results], 1)} us CPU per request, p99 "
        f"{_spread([r.p99_ms for r, _, _ in results], 2)} ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
