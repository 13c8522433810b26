"""DRA device selectors that may be expensive, compiled and evaluated off the event loop.

Why: cel-python is about a thousand times slower than cel-go, so a selector that upstream's
runtime cost limit (1,000,000 units) lets through, such as three nested `all()` macros over a
20-element list, takes about a second per device here; run inside a scheduling cycle it would
hold the event loop (the Lease renewals, /healthz, every other pod) that long for every device.

How: before a pod with claims is attempted (PreEnqueue, and again in PreFilter against the
slices that cycle's allocator holds), the plugin asks `SelectorGate.pending` whether every
selector of its claims and classes is compiled and, for the selectors whose static estimate is
over cel.INLINE_MAX_COST, evaluated on every device. What is missing goes to one worker
thread and the pod waits, gated, as for a claim not created yet; the thread gives up the
interpreter lock every few dozen cost units, stores its outcomes in the shared CelCache from
the event loop's thread when done, and asks the queue to activate the waiting pods, which
PreEnqueue then lets through. The allocator finds every outcome cached, so the decision is the
one evaluating inline would have given (the same expression, the same cost limit and
messages), only later. Selectors within the inline bound (the plain comparisons) are untouched.

Without a running event loop or a queue to activate pods (tests' fake handles, the policy lab's
replays, what-if), everything is evaluated inline, as before.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from scheduler.api.objects import PodView
from scheduler.api.resource import DeviceClassView, ResourceClaimView, ResourceSliceView
from scheduler.plugins.dynamicresources.cel import (
    INLINE_COMPILE_LENGTH,
    CelCache,
    CompiledSelector,
    EvaluationCancelled,
    ResultKey,
    SelectorWork,
    compile_selector,
)

log = logging.getLogger(__name__)

WAITING_MESSAGE = "waiting for the evaluation of expensive device selectors"
# The worker thread ends after this long without work (a reload builds a new plugin and
# worker; the old one's thread then ends by itself).
IDLE_SECONDS = 10.0
# At most this many evaluations per batch handed back to the loop, so that pods waiting on
# few devices are activated while a long backlog is still being evaluated.
BATCH = 64


@dataclass(slots=True)
class _Job:
    loop: asyncio.AbstractEventLoop
    expressions: list[str]
    work: list[SelectorWork]


def claim_selectors(
    claims: Iterable[ResourceClaimView], classes: Callable[[str], DeviceClassView | None]
) -> list[str]:
    """Every CEL expression the allocator may evaluate for `claims` (the claims still to
    allocate): each request's and sub-request's selectors and those of its class."""
    expressions: dict[str, None] = {}
    for claim in claims:
        if claim.allocation is not None:
            continue
        for request in claim.requests:
            subs = (request.exactly,) if request.exactly is not None else request.first_available
            for sub in subs:
                if sub is None:
                    continue
                device_class = classes(sub.device_class_name)
                if device_class is not None:
                    expressions.update(dict.fromkeys(device_class.selectors))
                expressions.update(dict.fromkeys(sub.selectors))
    return list(expressions)


class SelectorGate:
    """The worker thread and the pods waiting for it. Lives on the event loop's thread but
    for `_run`, which only reads the work handed to it and the compiled programs."""

    def __init__(
        self, cache: CelCache, activate: Callable[[Sequence[PodView]], None] | None
    ) -> None:
        self._cache = cache
        self._activate = activate
        self._queue: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()  # the thread's start and end
        self._stop = threading.Event()
        # handed to the thread and not back yet: never handed twice
        self._in_progress: set[ResultKey] = set()
        self._compiling: set[str] = set()
        self._waiting: dict[str, PodView] = {}

    def pending(
        self,
        pod: PodView,
        expressions: Sequence[str],
        slices: Callable[[], Sequence[ResourceSliceView]],
    ) -> bool:
        """Whether `pod` must wait for the worker (then it is activated once the worker has
        stored what it evaluated); False when everything is cached or cheap, or when there is
        no worker here (then the allocator evaluates inline)."""
        if self._activate is None or not expressions:
            return False
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return False
        cache = self._cache
        listed: Sequence[ResourceSliceView] | None = None
        to_compile: list[str] = []
        work: list[SelectorWork] = []
        waits = False
        for expression in expressions:
            compiled = cache.compiled(expression)
            if compiled is None:
                if len(expression) <= INLINE_COMPILE_LENGTH:
                    compiled = cache.get_or_compile(expression)
                else:
                    waits = True
                    if expression not in self._compiling:
                        self._compiling.add(expression)
                        to_compile.append(expression)
                    continue
            if not compiled.off_loop:
                continue
            if listed is None:
                listed = slices()
            for item in cache.missing(compiled, listed):
                waits = True
                if item.key not in self._in_progress:
                    self._in_progress.add(item.key)
                    work.append(item)
        if not waits:
            return False
        self._waiting[pod.uid] = pod
        if to_compile or work:
            for start in range(0, max(len(work), 1), BATCH):
                batch = work[start : start + BATCH]
                self._queue.put(_Job(loop, to_compile if start == 0 else [], batch))
            self._ensure_thread()
        return True

    def close(self) -> None:
        """Stop the worker: the evaluation under way ends within a few dozen cost units."""
        self._stop.set()

    # -- the worker thread -----------------------------------------------------------------

    def _ensure_thread(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="dra-selectors", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                job = self._queue.get(timeout=IDLE_SECONDS)
            except queue.Empty:
                with self._lock:  # _ensure_thread puts first, then looks for a thread
                    if self._queue.empty():
                        self._thread = None
                        return
                continue
            try:
                compiled = [
                    compile_selector(e, consumable_capacity=self._cache.consumable_capacity)
                    for e in job.expressions
                ]
                outcomes = [(item.key, self._cache.evaluate(item, self._stop)) for item in job.work]
            except EvaluationCancelled:
                return
            except Exception as exc:  # a bug: the pods fail with it rather than wait forever
                log.exception("evaluating DRA device selectors failed")
                compiled = []
                outcomes = [(item.key, f"internal error: {exc}") for item in job.work]
            try:
                job.loop.call_soon_threadsafe(self._finished, job, compiled, outcomes)
            except RuntimeError:  # the loop is closed: the scheduler has stopped
                return

    # -- back on the event loop's thread ---------------------------------------------------

    def _finished(
        self,
        job: _Job,
        compiled: list[CompiledSelector],
        outcomes: list[tuple[ResultKey, bool | str]],
    ) -> None:
        for selector in compiled:
            self._cache.put_compiled(selector)
        self._compiling.difference_update(job.expressions)
        self._cache.record(outcomes)
        self._in_progress.difference_update(item.key for item in job.work)
        waiting = list(self._waiting.values())
        self._waiting.clear()
        if waiting and self._activate is not None:
            # Their PreEnqueue runs again: those still missing something wait again.
            self._activate(waiting)
