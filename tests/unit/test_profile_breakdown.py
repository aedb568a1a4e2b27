"""``bench/profile_breakdown.py`` sorts py-spy stacks into the parts ``bench/reconciler_cpu.py`` prints."""

from __future__ import annotations

from bench.profile_breakdown import (
    EVENTS,
    INFORMER,
    LOGIC,
    LOOP,
    WATCH,
    WRITES,
    breakdown,
    classify,
    parse_raw,
    top_functions,
)

ROOT = (
    "<module> (kueue_bridge/cli.py:9);run_process_loop (shared/eventloop.py:57);run (asyncio/runners.py:118)"
)
WORKER = (
    "Controller._worker (shared/kube/controller.py:140);Controller._process (shared/kube/controller.py:150)"
)
RECONCILE = f"{WORKER};JobReconciler._reconcile (reconciler/job_reconciler.py:170)"
RAW = f"""\
{ROOT};{RECONCILE};WorkloadSync.write_status (reconciler/workload_sync.py:140);KubeClient._attempt (shared/kube/client.py:250);_Connection.exchange (shared/kube/http1.py:135) 7
{ROOT};{RECONCILE};KubeModel.from_wire (shared/models/base.py:53);BaseModel.model_validate (pydantic/main.py:700) 5
{ROOT};EventRecorder._writer (shared/kube/events.py:230);KubeClient._attempt (shared/kube/client.py:250) 3
{ROOT};{RECONCILE};RecorderSink.record (reconciler/event_reporting.py:80);EventRecorder.event (shared/kube/events.py:170) 1
{ROOT};Informer.run (shared/kube/informer.py:300);Watch.events (shared/kube/watch.py:190);Watch._decode (shared/kube/watch.py:330) 4
{ROOT};Informer.run (shared/kube/informer.py:300);Store.upsert (shared/kube/informer.py:140) 2
{ROOT};{WORKER};reconcile_context.__enter__ (shared/kube/observability.py:70) 1
{ROOT};ResponseHandler.data_received (aiohttp/client_proto.py:400) 2
{ROOT} 3
not a stack line
"""


def test_every_stack_goes_to_exactly_one_part() -> None:
    stacks = parse_raw(RAW)
    assert [classify(frames) for frames, _ in stacks] == [
        WRITES,
        LOGIC,
        EVENTS,
        EVENTS,
        WATCH,
        INFORMER,
        INFORMER,
        LOOP,
        LOOP,
    ]
    parts = breakdown(stacks)
    assert parts.total == 28
    assert parts.samples == {WRITES: 7, LOGIC: 5, EVENTS: 4, WATCH: 4, INFORMER: 3, LOOP: 5}
    assert abs(sum(parts.share(part) for part in parts.samples) - 1.0) < 1e-9


def test_top_functions_rank_own_samples_and_count_callers_once() -> None:
    top = top_functions(parse_raw(RAW), limit=2)
    assert top[0] == ("_Connection.exchange (shared/kube/http1.py)", 7, 7)
    assert top[1][1] == 5
