"""A small controller: informers -> handlers -> work queue -> an async reconcile function.

The reconcile function gets a key (``namespace/name``) and reads what it needs from informer
stores; it returns a ``Result`` (or ``None`` for done). Outcomes, as in controller-runtime:

* done -> ``forget`` the key's backoff;
* ``Result(requeue=True)`` -> re-add with the key's rate limit (exponential backoff);
* ``Result(requeue_after=s)`` -> ``forget`` and re-add after ``s`` seconds;
* an API error (the server or an admission webhook refused a request, or it failed) -> one
  WARNING naming the key, the reason and the server's message, counted, re-added with backoff;
  while the same key keeps failing with the same text the repeats are DEBUG, so a denied write
  retried for an hour is one line, not a line per backoff step; a success re-arms it;
* any other exception (a bug) -> logged with its traceback, counted, re-added with backoff;
* a **conflict** (one of ``conflicts``: by default ``Conflict``, i.e. 409 Conflict and AlreadyExists)
  -> re-added with the same backoff but *not* an error: the reconcile acted on a stale informer
  copy (another writer got there first, or our own write has not reached the cache yet), which is
  normal for a level-triggered controller. It is logged at DEBUG with the key, counted in
  ``controller_runtime_reconcile_conflicts_total`` and as a ``requeue`` in
  ``controller_runtime_reconcile_total``; never in ``..._reconcile_errors_total``, never an ERROR.
  A conflict that keeps coming back keeps backing off, like any rate-limited requeue.

Invariants:

* At most ``workers`` reconciles run at once, never two for the same key (the queue guarantees it).
* Workers start only after every watched informer has synced, so a reconcile never acts on a
  partial cache (deleting "orphans" that merely were not listed yet).
* ``shutdown()`` is graceful: no new key is started, in-flight reconciles finish (up to a
  deadline, then they are cancelled). Cancelling ``run()`` stops at once -- what a leader that lost
  its lease must do.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final

from shared.kube.clock import Clock
from shared.kube.errors import BadRequest, Conflict, Forbidden, Invalid, KubeError
from shared.kube.informer import EventHandler, Informer
from shared.kube.observability import KubeMetrics, reconcile_context
from shared.kube.watch import object_key
from shared.kube.workqueue import QueueShutDown, WorkQueue

__all__ = ["Controller", "PriorityRule", "Reconciler", "Result"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Result:
    requeue: bool = False
    requeue_after: float | None = None

    @classmethod
    def done(cls) -> Result:
        return _DONE

    @classmethod
    def again(cls) -> Result:
        return cls(requeue=True)

    @classmethod
    def after(cls, seconds: float) -> Result:
        return cls(requeue_after=seconds)


#: the result of most passes; frozen, so one instance serves them all
_DONE: Final = Result()

Reconciler = Callable[[str], Awaitable[Result | None]]
KeyMapper = Callable[[dict[str, Any]], Iterable[str]]
PriorityRule = Callable[[dict[str, Any], str], int]
"""The work-queue priority of the reconcile of ``key`` after this change of ``obj`` (0: ordinary)."""


def _own_key(obj: dict[str, Any]) -> list[str]:
    return [object_key(obj)]


class Controller:
    def __init__(
        self,
        *,
        name: str,
        reconcile: Reconciler,
        clock: Clock,
        workers: int = 4,
        metrics: KubeMetrics | None = None,
        queue: WorkQueue[str] | None = None,
        conflicts: tuple[type[Exception], ...] = (Conflict,),
    ) -> None:
        """``conflicts``: the exception types that mean "acted on a stale read" (the caller's own
        conflict type too, when its reconcile translates ``Conflict`` into one)."""
        if workers < 1:
            raise ValueError(f"controller {name}: workers must be >= 1, got {workers}")
        self.name = name
        self._reconcile = reconcile
        self._clock = clock
        self.workers = workers
        self._metrics = metrics
        self._conflicts = conflicts
        self.queue: WorkQueue[str] = queue or WorkQueue(name=name, clock=clock, metrics=metrics)
        self._informers: list[Informer] = []
        self._worker_tasks: list[asyncio.Task[None]] = []
        self._started = asyncio.Event()
        #: key -> the text of its last failure, while it keeps failing (reported once)
        self._failing: dict[str, str] = {}
        #: outcome -> this controller's ``reconcile_total`` child, bound on first use (an outcome
        #: never seen is never exposed, as before); ``reconcile_time``'s child likewise: every pass
        #: updates both, and ``KubeMetrics.child`` builds a key tuple per call
        self._outcome_children: dict[str, Any] = {}
        self._time_child: Any = None

    def _report_failure(self, key: str, exc: KubeError) -> None:
        text = str(exc)
        repeated = self._failing.get(key) == text
        self._failing[key] = text
        verdict = "denied" if isinstance(exc, BadRequest | Forbidden | Invalid) else "failed"
        logger.log(
            logging.DEBUG if repeated else logging.WARNING,
            "reconcile of %s %s: %s; retrying with backoff",
            key,
            verdict,
            text,
            extra={"controller": self.name, "key": key, "reason": getattr(exc, "reason", type(exc).__name__)},
        )

    def watch(
        self, informer: Informer, *, keys: KeyMapper | None = None, priority: PriorityRule | None = None
    ) -> None:
        """Enqueue ``keys(obj)`` (default: the object's own key) for every add/update/delete; after an
        add or update with the work-queue priority ``priority(obj, key)`` when given."""
        mapper = keys or _own_key
        queue = self.queue

        def enqueue(obj: dict[str, Any]) -> None:
            for key in mapper(obj):
                queue.add(key)

        changed = enqueue
        if priority is not None:

            def changed(obj: dict[str, Any]) -> None:
                for key in mapper(obj):
                    queue.add(key, priority=priority(obj, key))

        if priority is None:

            def updated(old: dict[str, Any], new: dict[str, Any]) -> None:
                for key in mapper(new):
                    queue.add(key)

        else:

            def updated(old: dict[str, Any], new: dict[str, Any]) -> None:
                for key in mapper(new):
                    queue.add(key, priority=priority(new, key))

        # ``updated`` is ``changed(new)`` without the extra call per update event
        informer.add_handler(EventHandler(on_add=changed, on_update=updated, on_delete=enqueue))
        self._informers.append(informer)

    @property
    def started(self) -> bool:
        return self._started.is_set()

    async def run(self) -> None:
        """Wait for the informers to sync, then work until shut down (or cancelled)."""
        for informer in self._informers:
            await informer.wait_synced()
        self._worker_tasks = [
            asyncio.create_task(self._worker(), name=f"{self.name}-worker-{i}") for i in range(self.workers)
        ]
        self._started.set()
        try:
            await asyncio.gather(*self._worker_tasks)
        finally:
            for task in self._worker_tasks:
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.gather(*self._worker_tasks, return_exceptions=True)

    async def shutdown(self, *, drain_seconds: float = 30.0) -> None:
        """Stop taking keys, let in-flight reconciles finish (cancel them after ``drain_seconds``)."""
        self.queue.shut_down()
        try:
            await self._clock.wait_for(self.queue.wait_idle(), drain_seconds)
        except TimeoutError:
            logger.warning(
                "reconciles still running after the drain deadline; cancelling",
                extra={"controller": self.name, "keys": sorted(self.queue.processing)},
            )
            for task in self._worker_tasks:
                task.cancel()

    async def _worker(self) -> None:
        while True:
            try:
                key = await self.queue.get()
            except QueueShutDown:
                return
            try:
                await self._process(key)
            finally:
                self.queue.done(key)

    async def _process(self, key: str) -> None:
        started = self._clock.now()
        outcome = "error"
        with reconcile_context(key):
            try:
                result = await self._reconcile(key) or _DONE
            except self._conflicts as exc:
                outcome = "requeue"
                logger.debug(
                    "reconcile of %s hit a conflict (stale read), requeued with backoff: %s",
                    key,
                    exc,
                    extra={"controller": self.name},
                )
                if self._metrics is not None:
                    self._metrics.child(self._metrics.reconcile_conflicts, self.name).inc()
                self.queue.add_rate_limited(key)
            except KubeError as exc:
                self._report_failure(key, exc)
                if self._metrics is not None:
                    self._metrics.child(self._metrics.reconcile_errors, self.name).inc()
                self.queue.add_rate_limited(key)
            except Exception:
                logger.exception("reconcile failed", extra={"controller": self.name})
                if self._metrics is not None:
                    self._metrics.child(self._metrics.reconcile_errors, self.name).inc()
                self.queue.add_rate_limited(key)
            else:
                if result.requeue_after is not None and result.requeue_after > 0:
                    outcome = "requeue_after"
                    self.queue.forget(key)
                    self.queue.add_after(key, result.requeue_after)
                elif result.requeue:
                    outcome = "requeue"
                    self.queue.add_rate_limited(key)
                else:
                    outcome = "success"
                    self.queue.forget(key)
                self._failing.pop(key, None)
            finally:
                metrics = self._metrics
                if metrics is not None:
                    total = self._outcome_children.get(outcome)
                    if total is None:
                        total = self._outcome_children[outcome] = metrics.child(
                            metrics.reconcile_total, self.name, outcome
                        )
                    total.inc()
                    if self._time_child is None:
                        self._time_child = metrics.child(metrics.reconcile_time, self.name)
                    self._time_child.observe(self._clock.now() - started)
