"""Where a controller process spends its CPU: py-spy's raw samples sorted into a few named parts.

``py-spy record --format raw`` writes one line per distinct stack: the frames outermost first,
separated by ``;``, then a space and the number of samples that stack was seen in. Each stack is
put into exactly one part, so the parts add up to the samples taken:

* **events** -- any frame of ``shared/kube/events.py`` (the recorder's queue and writer tasks,
  including the HTTP requests they make) or of the reconciler's event sink;
* **watch decoding** -- any frame of ``shared/kube/watch.py``: reading the watch streams, splitting
  lines, ``orjson`` decoding, and the list calls of (re)lists;
* otherwise the *innermost* frame of our own code decides (library frames -- aiohttp, ssl,
  pydantic, orjson inside it -- count for the code that called them):
  **API writes (encode + HTTP/TLS)** (``shared/kube`` client, verbs, transport, ``http1`` -- whose
  protocol callbacks parse the answers of requests only --, rate limiter, errors, discovery),
  **informer/queue** (``shared/kube`` informer, work queue, controller, observability, clock;
  ``reconciler/manager.py``'s key mappers) or **reconcile logic** (everything else of ours:
  ``reconciler/``, ``shared/`` models, adapters, naming);
* **event loop, I/O callbacks** -- stacks with none of our frames: the loop itself, aiohttp's
  protocol callbacks for watch streams, the garbage collector. Entry points (``kueue_bridge``,
  ``shared/eventloop.py``, the components' ``__main__``) are not counted as ours: they are on the
  stack only while the loop itself runs.

Why innermost: a reconcile that writes shows ``controller -> reconciler -> client -> transport``;
the write is what costs there. Why events and watches first: their HTTP frames are not writes of
the reconcile logic.

Invariant: a sample is counted once; the shares are of the samples, the CPU seconds are the
process's own (``/proc``) times these shares.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "PARTS",
    "Breakdown",
    "breakdown",
    "classify",
    "parse_perf_script",
    "parse_raw",
    "read_breakdown",
    "top_functions",
]

EVENTS = "events"
WATCH = "watch decoding"
WRITES = "API writes (encode + HTTP/TLS)"
INFORMER = "informer/queue"
LOGIC = "reconcile logic"
LOOP = "event loop, I/O callbacks"
PARTS = (WATCH, LOGIC, WRITES, EVENTS, INFORMER, LOOP)

_FRAME = re.compile(r"^(?P<function>.*) \((?P<file>[^():]*)(?::(?P<line>\d+))?\)$")

_EVENT_FILES = ("shared/kube/events.py", "reconciler/event_reporting.py")
_WATCH_FILES = ("shared/kube/watch.py",)
_WRITE_PREFIXES = (
    "shared/kube/client.py",
    "shared/kube/http1.py",
    "shared/kube/verbs.py",
    "shared/kube/transport.py",
    "shared/kube/connection.py",
    "shared/kube/ratelimit.py",
    "shared/kube/errors.py",
    "shared/kube/auth.py",
    "shared/kube/discovery.py",
)
_INFORMER_PREFIXES = (
    "shared/kube/informer.py",
    "shared/kube/workqueue.py",
    "shared/kube/controller.py",
    "shared/kube/observability.py",
    "shared/kube/clock.py",
    "reconciler/manager.py",
    "shared/manager.py",
)
_LOGIC_PREFIXES = ("reconciler/", "shared/", "pydantic", "cel/")
#: entry points: on the stack only while the loop itself runs (a task's stack starts at its coroutine)
_ROOT_FILES = ("kueue_bridge/", "shared/eventloop.py", "reconciler/__main__.py", "webhook/__main__.py")


@dataclass(frozen=True)
class Breakdown:
    """Samples per part (``PARTS``), and in all."""

    samples: dict[str, int]
    total: int

    def share(self, part: str) -> float:
        return self.samples.get(part, 0) / self.total if self.total else 0.0


def _split(frame: str) -> tuple[str, str]:
    match = _FRAME.match(frame.strip())
    return (match.group("function"), match.group("file")) if match else ("", "")


def _in(path: str, prefixes: Iterable[str]) -> bool:
    return any(path.startswith(prefix) or f"/{prefix}" in path for prefix in prefixes)


def classify(frames: list[str]) -> str:
    """The part one stack (outermost frame first) belongs to."""
    split = [_split(frame) for frame in frames]
    files = [path for _, path in split]
    if any(_in(path, _EVENT_FILES) for path in files):
        return EVENTS
    if any(_in(path, _WATCH_FILES) for path in files):
        return WATCH
    for path in reversed(files):
        if _in(path, _ROOT_FILES):
            continue
        if _in(path, _WRITE_PREFIXES):
            return WRITES
        if _in(path, _INFORMER_PREFIXES):
            return INFORMER
        if _in(path, _LOGIC_PREFIXES):
            return LOGIC
    return LOOP


def parse_raw(text: str) -> list[tuple[list[str], int]]:
    """``[(frames outermost first, samples)]`` of a py-spy raw file; malformed lines are skipped."""
    stacks = []
    for line in text.splitlines():
        stack, _, count = line.rstrip().rpartition(" ")
        if not stack or not count.isdigit():
            continue
        stacks.append((stack.split(";"), int(count)))
    return stacks


_PERF_PYTHON_FRAME = re.compile(r"\bpy::(?P<function>[^:]+):(?P<file>.+?)\+0x[0-9a-f]+")


def parse_perf_script(text: str) -> list[tuple[list[str], int]]:
    """``[(frames, samples)]`` of ``perf script`` output taken with Python's perf trampolines.

    Python 3.12+ run with ``PYTHONPERFSUPPORT=1`` enters every Python function through a small
    trampoline that ``/tmp/perf-PID.map`` names ``py::function:file``. ``perf record --call-graph
    dwarf`` unwinds from the sampled instruction up to the first trampoline and no further (the
    trampolines carry no unwind tables), so each sample yields one frame: the Python function that
    was running, with the C code it called (orjson, ssl, the dict and allocation functions) counted
    for it. Unlike py-spy's, these samples are CPU cycles only: a process that waits for a core is
    not sampled. A sample with no Python frame (the event loop's C code, the collector, the kernel)
    gets no frame and so counts as the event loop. With one frame a sample, ``classify`` goes by
    that frame alone: the HTTP time of an event write counts as an API write, not as events.
    A sample starts at an unindented header line; its frame lines are indented.
    """
    counts: Counter[tuple[str, ...]] = Counter()
    frame: tuple[str, ...] | None = None
    in_sample = False
    for line in [*text.splitlines(), ""]:
        header = bool(line.strip()) and not line[0].isspace()
        if in_sample and (header or not line.strip()):
            counts[frame or ()] += 1
            frame, in_sample = None, False
        if header:
            in_sample = True
        elif in_sample and frame is None:
            match = _PERF_PYTHON_FRAME.search(line)
            if match:
                frame = (f"{match.group('function')} ({match.group('file')})",)
    return [(list(frames), count) for frames, count in counts.most_common()]


def breakdown(stacks: list[tuple[list[str], int]]) -> Breakdown:
    samples: Counter[str] = Counter()
    for frames, count in stacks:
        samples[classify(frames)] += count
    return Breakdown(samples=dict(samples), total=sum(samples.values()))


def top_functions(stacks: list[tuple[list[str], int]], *, limit: int = 15) -> list[tuple[str, int, int]]:
    """``(function, self samples, total samples)`` of the most-sampled functions by self time."""
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    for frames, count in stacks:
        if not frames:
            continue
        own[_strip_line(frames[-1])] += count
        for name in {_strip_line(frame) for frame in frames}:
            inclusive[name] += count
    return [(name, samples, inclusive[name]) for name, samples in own.most_common(limit)]


def _strip_line(frame: str) -> str:
    match = _FRAME.match(frame.strip())
    if not match:
        return frame.strip()
    return f"{match.group('function')} ({match.group('file')})"


def read_breakdown(path: Path) -> tuple[Breakdown, list[tuple[list[str], int]]]:
    """The breakdown of a py-spy raw file, or of a ``perf script`` text file (``*.perf.txt``)."""
    text = path.read_text(errors="replace")
    stacks = parse_perf_script(text) if path.name.endswith(".perf.txt") else parse_raw(text)
    return breakdown(stacks), stacks
