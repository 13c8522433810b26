"""Live progress of `aiosched bench` on stderr, so a run of several minutes is not silent.

A watcher polls the running workload (its phase text, nodes created, pods created and seen
bound) a few times a second and hands a Snapshot to a ProgressReporter, which on a terminal
redraws one line in place (carriage return) and otherwise, in a log or CI, writes a line every
few seconds. The rate is taken over the last RATE_WINDOW seconds, and the time left is what is
still to come at that rate (for a steady state: its remaining duration). The runner only keeps
its counters up to date; nothing here touches the measurement.
"""

from __future__ import annotations

import asyncio
import shutil
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, TextIO

from bench.workloads import Workload

RATE_WINDOW = 5.0  # seconds of history behind "current rate"
TTY_INTERVAL = 0.5  # a terminal's line is redrawn this often
LINE_INTERVAL = 5.0  # elsewhere, one line this often
POLL_INTERVAL = 0.25
CLEAR_LINE = "\r\x1b[K"  # back to the line's start, erase to its end (VT100, every terminal)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What a workload run is doing now, as one progress line shows it."""

    workload: str
    phase: str  # the runner's words: "creating 5000 nodes", "measuring 10000 pods"
    measuring: bool
    elapsed: float  # seconds since the workload started
    unit: str = ""  # "nodes" or "pods": what `done` counts ("" for none)
    done: int = 0  # nodes created, or pods seen bound
    total: int | None = None  # of `done`; None when open-ended (a steady state)
    created: int | None = None  # pods created so far (pod phases)
    rate: float | None = None  # `unit` per second over the last RATE_WINDOW
    remaining: float | None = None  # seconds left, estimated


def _duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def format_progress(s: Snapshot) -> str:
    """One line: workload, stage and phase, counts, rate, time left, elapsed."""
    stage = "" if s.measuring else "setup: "  # the measuring phase says "measuring"
    parts = [f"{s.workload} [{_duration(s.elapsed)}] {stage}{s.phase}"]
    if s.unit:
        count = f"{s.done}/{s.total}" if s.total is not None else f"{s.done}"
        if s.unit == "pods":
            count += " pods bound" + (f", {s.created} created" if s.created is not None else "")
        else:
            count += f" {s.unit} created"
        parts.append(count)
    if s.rate is not None:
        parts.append(f"{s.rate:.0f} {s.unit or 'items'}/s")
    if s.remaining is not None:
        parts.append(f"~{_duration(s.remaining)} left")
    return ", ".join(parts)


class ProgressReporter:
    """Shows snapshots on `stream`: one redrawn line on a terminal, a line every
    `line_interval` seconds elsewhere, nothing when disabled. Log lines go through `log` so
    they do not land in the middle of the progress line."""

    def __init__(
        self,
        stream: TextIO,
        enabled: bool = True,
        tty: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
        line_interval: float = LINE_INTERVAL,
        width: Callable[[], int] | None = None,
    ) -> None:
        self.stream = stream
        self.enabled = enabled
        self.tty = stream.isatty() if tty is None else tty
        self.clock = clock
        self.interval = TTY_INTERVAL if self.tty else line_interval
        self._width = width or (lambda: shutil.get_terminal_size().columns)
        self._last_shown: float | None = None
        self._line = ""  # on a terminal: the line now on screen

    def show(self, snapshot: Snapshot) -> None:
        if not self.enabled:
            return
        now = self.clock()
        if self._last_shown is None:  # the first line one interval in: a short run shows none
            self._last_shown = now
            return
        if now - self._last_shown < self.interval:
            return
        self._last_shown = now
        text = format_progress(snapshot)
        if self.tty:
            width = max(20, self._width() - 1)  # a wrapped line could not be redrawn in place
            self._line = text if len(text) <= width else text[: width - 1] + "…"
            self.stream.write(CLEAR_LINE + self._line)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def clear(self) -> None:
        """Take the progress line off a terminal (before other output, or at a run's end)."""
        if self.tty and self._line:
            self.stream.write(CLEAR_LINE)
            self.stream.flush()
            self._line = ""

    def finish(self) -> None:
        """A workload is over: clear its line, and start the next one's interval afresh."""
        self.clear()
        self._last_shown = None

    def log(self, message: str) -> None:
        line = self._line
        self.clear()
        self.stream.write(message + "\n")
        if line:  # put the progress line back under the message
            self._line = line
            self.stream.write(CLEAR_LINE + line)
        self.stream.flush()


# ---- reading a run ---------------------------------------------------------------------------


class BoundCounter(Protocol):
    @property
    def bound_count(self) -> int: ...


class Observed(Protocol):
    """What the watcher reads of a running workload (bench.runner.WorkloadRun)."""

    @property
    def workload(self) -> Workload: ...
    @property
    def phase(self) -> str: ...
    @property
    def measuring(self) -> bool: ...
    @property
    def nodes_created(self) -> int: ...
    @property
    def created(self) -> int: ...  # pods created in the pod phase under way
    @property
    def expected(self) -> int: ...  # pods that phase creates
    @property
    def tracker(self) -> BoundCounter | None: ...


class RunWatcher:
    """Turns polls of a run into snapshots with a rate over the last RATE_WINDOW seconds."""

    def __init__(
        self,
        name: str,
        init_nodes: int,
        steady_seconds: float | None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = name
        self.init_nodes = init_nodes
        self.steady_seconds = steady_seconds
        self.clock = clock
        self.started = clock()
        self._measure_started: float | None = None
        self._counter: object = None  # what the history counts (a tracker, or "nodes")
        self._history: deque[tuple[float, int]] = deque()

    def _rate(self, counter: object, now: float, done: int) -> float | None:
        if counter is not self._counter:  # another phase: its own history
            self._counter = counter
            self._history.clear()
        history = self._history
        history.append((now, done))
        while len(history) > 2 and now - history[1][0] >= RATE_WINDOW:
            history.popleft()
        then, done_then = history[0]
        if now - then < 1.0:  # too short to tell
            return None
        return (done - done_then) / (now - then)

    def snapshot(self, run: Observed) -> Snapshot:
        now = self.clock()
        elapsed = now - self.started
        if run.measuring and self._measure_started is None:
            self._measure_started = now
        tracker = run.tracker
        if tracker is None:
            if not run.nodes_created:
                return Snapshot(self.name, run.phase, run.measuring, elapsed)
            counter: object = "nodes"
            total: int | None = self.init_nodes
            unit, done, created = "nodes", run.nodes_created, None
        else:
            counter, unit, done = tracker, "pods", tracker.bound_count
            created = run.created
            total = run.expected or None
        rate = self._rate(counter, now, done)
        remaining = None
        if run.measuring and self.steady_seconds and self._measure_started is not None:
            # a steady state runs for its duration, however many pods it binds
            total = None
            remaining = max(0.0, self.steady_seconds - (now - self._measure_started))
        elif total is not None and done >= total:  # that count is complete: nothing to estimate
            rate = None
        elif total is not None and rate:
            remaining = (total - done) / rate
        return Snapshot(
            self.name,
            run.phase,
            run.measuring,
            elapsed,
            unit,
            done,
            total,
            created,
            rate,
            remaining,
        )


def watcher_for(workload: Workload, clock: Callable[[], float] = time.monotonic) -> RunWatcher:
    dra = workload.dra
    steady = dra.steady_seconds if dra is not None and dra.steady_seconds else None
    return RunWatcher(workload.name, workload.init_nodes, steady, clock)


async def watch(run: Observed, reporter: ProgressReporter) -> None:
    """Report `run`'s progress until cancelled (run_workloads's `watch`, beside each run)."""
    watcher = watcher_for(run.workload, reporter.clock)
    try:
        while True:
            try:
                reporter.show(watcher.snapshot(run))
            except Exception as exc:  # a display's failure must not end a measurement
                reporter.log(f"{run.workload.name}: progress stopped: {exc!r}")
                return
            await asyncio.sleep(POLL_INTERVAL)
    finally:
        reporter.finish()
