"""``bench.harness.profile_breakdown`` sorts py-spy stacks into the parts ``bench.reconciler_cpu`` prints."""

from __future__ import annotations

from pathlib import Path

from bench.harness.profile_breakdown import (
    EVENTS,
    INFORMER,
    LOGIC,
    LOOP,
    WATCH,
    WRITES,
    breakdown,
    classify,
    parse_perf_script,
    parse_raw,
    read_breakdown,
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


#: ``perf script`` of three CPU samples of a process run with Python's perf trampolines: the running
#: Python function is the first ``py::`` frame up from the sampled instruction
PERF_SCRIPT = """\
python  4768 55733.127275:    3344481 cpu-clock:pppH:
\t          1cfe1f _PyObject_Malloc+0x6f (/usr/lib/libpython3.12.so.1.0)
\t          110811 _PyEval_EvalFrameDefault+0x4a51 (/usr/lib/libpython3.12.so.1.0)
\t    7f937e7f77bb py::_Connection.exchange:/srv/app/shared/kube/http1.py+0x5 (/tmp/perf-4768.map)

python  4768 55733.131748:    3344481 cpu-clock:pppH:
\t          16ff00 _Py_CheckFunctionResult+0x0 (/usr/lib/libpython3.12.so.1.0)
\t          1318cb __pyx_f_6uvloop_4loop_4Loop__on_idle+0x49b (/venv/uvloop/loop.so)

python  4768 55733.135001:    3344481 cpu-clock:pppH:
\t          110811 _PyEval_EvalFrameDefault+0x4a51 (/usr/lib/libpython3.12.so.1.0)
\t    7f937e7f1000 py::JobReconciler._reconcile:/srv/app/reconciler/job_reconciler.py+0x5 (/tmp/perf-4768.map)
\t    7f937e7f2000 py::Controller._process:/srv/app/shared/kube/controller.py+0x5 (/tmp/perf-4768.map)
python  4768 55733.139002:    3344481 cpu-clock:pppH:
\t    7f937e7f77bb py::_Connection.exchange:/srv/app/shared/kube/http1.py+0x5 (/tmp/perf-4768.map)
"""


def test_perf_samples_are_named_by_the_running_python_function() -> None:
    stacks = {tuple(frames): count for frames, count in parse_perf_script(PERF_SCRIPT)}
    assert stacks == {
        ("_Connection.exchange (/srv/app/shared/kube/http1.py)",): 2,
        ("JobReconciler._reconcile (/srv/app/reconciler/job_reconciler.py)",): 1,
        (): 1,  # no Python frame: the event loop's own C code
    }
    shares = breakdown(parse_perf_script(PERF_SCRIPT))
    assert shares.total == 4
    assert shares.samples == {WRITES: 2, LOGIC: 1, LOOP: 1}


def test_a_perf_text_file_is_read_as_perf_and_a_py_spy_file_as_raw(tmp_path: Path) -> None:
    perf = tmp_path / "real-reconciler-round1.perf.txt"
    perf.write_text(PERF_SCRIPT)
    raw = tmp_path / "real-reconciler-round1.pyspy.txt"
    raw.write_text(RAW)
    assert read_breakdown(perf)[0].total == 4
    assert read_breakdown(raw)[0] == breakdown(parse_raw(RAW))
