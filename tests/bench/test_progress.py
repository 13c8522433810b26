"""bench.progress: the progress line's words, its rate and time left, and how it is drawn."""

from __future__ import annotations

import io
from dataclasses import dataclass, field

import pytest

from bench.progress import (
    CLEAR_LINE,
    ProgressReporter,
    RunWatcher,
    Snapshot,
    format_progress,
    watcher_for,
)
from bench.workloads import WORKLOADS, Workload


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@dataclass
class FakeTracker:
    bound_count: int = 0


@dataclass
class FakeRun:
    workload: Workload = field(default_factory=lambda: WORKLOADS["SchedulingBasic/500Nodes"])
    phase: str = "starting aiosched cluster"
    measuring: bool = False
    nodes_created: int = 0
    created: int = 0
    expected: int = 0
    tracker: FakeTracker | None = None


def test_format_measuring() -> None:
    line = format_progress(
        Snapshot(
            "SchedulingBasic/5000Nodes_10000Pods",
            "measuring 10000 pods",
            measuring=True,
            elapsed=83,
            unit="pods",
            done=4200,
            total=10000,
            created=6000,
            rate=850.4,
            remaining=6.8,
        )
    )
    assert line == (
        "SchedulingBasic/5000Nodes_10000Pods [1m23s] measuring 10000 pods, "
        "4200/10000 pods bound, 6000 created, 850 pods/s, ~7s left"
    )


def test_format_setup_nodes_and_a_phase_without_counts() -> None:
    nodes = Snapshot("W", "creating 5000 nodes", False, 12, "nodes", 1234, 5000, None, 400, 9.4)
    assert format_progress(nodes) == (
        "W [12s] setup: creating 5000 nodes, 1234/5000 nodes created, 400 nodes/s, ~9s left"
    )
    bare = Snapshot("W", "starting the scheduler", False, 3725)
    assert format_progress(bare) == "W [1h02m] setup: starting the scheduler"


def test_watcher_rates_and_time_left() -> None:
    clock = FakeClock()
    run = FakeRun()
    watcher = watcher_for(run.workload, clock)
    assert watcher.snapshot(run).unit == ""  # nothing counted yet
    run.phase, run.nodes_created = "creating 500 nodes", 100
    first = watcher.snapshot(run)
    assert (first.unit, first.done, first.total, first.rate) == ("nodes", 100, 500, None)
    clock.now += 2
    run.nodes_created = 300
    second = watcher.snapshot(run)
    assert second.rate == pytest.approx(100.0)
    assert second.remaining == pytest.approx(2.0)
    clock.now += 1
    run.nodes_created = 500
    done = watcher.snapshot(run)
    assert done.rate is None and done.remaining is None  # complete: nothing left to estimate

    # a pod phase starts its own history: the nodes' rate is not carried over
    run.phase, run.measuring = "measuring 1000 pods", True
    run.tracker, run.expected, run.created = FakeTracker(0), 1000, 50
    pods = watcher.snapshot(run)
    assert (pods.unit, pods.total, pods.created, pods.rate) == ("pods", 1000, 50, None)
    for _ in range(9):
        clock.now += 1
        run.tracker.bound_count += 100
        pods = watcher.snapshot(run)
    # the rate is over the last RATE_WINDOW seconds, the time left what remains at that rate
    assert pods.rate == pytest.approx(100.0)
    assert pods.remaining == pytest.approx(1.0)


def test_watcher_window_follows_a_change_of_rate() -> None:
    clock = FakeClock()
    run = FakeRun(tracker=FakeTracker(), expected=100_000, measuring=True, phase="measuring")
    watcher = RunWatcher("W", 0, None, clock)
    for rate in [1000] * 20 + [200] * 10:
        clock.now += 1
        run.tracker.bound_count += rate  # type: ignore[union-attr]
        snap = watcher.snapshot(run)
    assert snap.rate == pytest.approx(200.0)  # the old rate has left the window
    assert snap.remaining == pytest.approx((100_000 - 22_000) / 200)


def test_steady_state_counts_down_its_duration() -> None:
    clock = FakeClock()
    workload = WORKLOADS["SteadyStateClusterResourceClaimTemplate/empty_500nodes"]
    assert workload.dra is not None and workload.dra.steady_seconds
    run = FakeRun(workload=workload, tracker=FakeTracker(), expected=10, measuring=True)
    watcher = watcher_for(workload, clock)
    watcher.snapshot(run)
    clock.now += 4
    run.tracker.bound_count = 300  # type: ignore[union-attr]
    snap = watcher.snapshot(run)
    assert snap.total is None  # open-ended: as many pods as it binds
    assert snap.remaining == pytest.approx(workload.dra.steady_seconds - 4)
    assert "300 pods bound" in format_progress(snap)


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _snap(done: int) -> Snapshot:
    return Snapshot("W", "measuring 10 pods", True, 1, "pods", done, 10)


def test_terminal_redraws_one_line_in_place() -> None:
    out, clock = FakeTerminal(), FakeClock()
    reporter = ProgressReporter(out, clock=clock, width=lambda: 200)
    assert reporter.tty
    reporter.show(_snap(1))  # the first interval starts: nothing drawn for a short run
    assert out.getvalue() == ""
    clock.now += 0.6
    reporter.show(_snap(2))
    clock.now += 0.1
    reporter.show(_snap(3))  # too soon: not redrawn
    clock.now += 0.6
    reporter.show(_snap(4))
    text = out.getvalue()
    assert "\n" not in text
    assert text.split(CLEAR_LINE)[1:] == [format_progress(_snap(2)), format_progress(_snap(4))]
    reporter.log("W: ok")  # a log line clears the progress line, then puts it back under it
    assert out.getvalue()[len(text) :] == CLEAR_LINE + "W: ok\n" + CLEAR_LINE + format_progress(
        _snap(4)
    )
    reporter.finish()
    assert out.getvalue().endswith(CLEAR_LINE)


def test_terminal_line_is_cut_to_the_width() -> None:
    out, clock = FakeTerminal(), FakeClock()
    reporter = ProgressReporter(out, clock=clock, width=lambda: 40)
    reporter.show(_snap(1))
    clock.now += 1
    reporter.show(_snap(2))
    line = out.getvalue().removeprefix(CLEAR_LINE)
    assert len(line) == 39 and line.endswith("…")  # one column spare: no wrap


def test_a_log_gets_one_line_every_few_seconds() -> None:
    out, clock = io.StringIO(), FakeClock()
    reporter = ProgressReporter(out, clock=clock, line_interval=5.0)
    assert not reporter.tty
    for done in range(12):
        reporter.show(_snap(done))
        clock.now += 1
    lines = out.getvalue().splitlines()
    assert lines == [format_progress(_snap(5)), format_progress(_snap(10))]
    assert CLEAR_LINE not in out.getvalue()
    reporter.log("W: ok")
    assert out.getvalue().endswith(format_progress(_snap(10)) + "\nW: ok\n")


def test_quiet_shows_no_progress_but_the_log() -> None:
    out, clock = FakeTerminal(), FakeClock()
    reporter = ProgressReporter(out, enabled=False, clock=clock)
    for done in range(10):
        reporter.show(_snap(done))
        clock.now += 1
    reporter.log("W: ok")
    reporter.finish()
    assert out.getvalue() == "W: ok\n"


def test_a_failing_display_stops_itself_not_the_run() -> None:
    import asyncio

    from bench.progress import watch

    class Broken:
        workload = WORKLOADS["SchedulingBasic/Smoke"]
        phase, measuring, nodes_created, created, expected = "x", False, 0, 0, 0

        @property
        def tracker(self) -> FakeTracker | None:
            raise RuntimeError("boom")

    out = io.StringIO()

    async def main() -> None:
        await asyncio.wait_for(watch(Broken(), ProgressReporter(out)), 5)

    asyncio.run(main())  # returns instead of raising into the run's task group
    assert "progress stopped" in out.getvalue() and "boom" in out.getvalue()
