"""How a pod's backoff is counted and where PreEnqueue runs, at both values of
SchedulerPopFromBackoffQ. Ported from upstream's pkg/scheduler/backend/queue:
backoff_queue_test.go (TestBackoffQueue_getBackoffTime) and scheduling_queue_test.go
(TestBackOffFlow, TestPriorityQueue_moveToActiveQ, TestPriorityQueue_moveToBackoffQ).

The backoff doubles with the attempts that ended rejected (UnschedulableCount), or with the
run of errors while there is one (ConsecutiveErrorsCount), never with the pops: a pod popped
early from backoffQ when activeQ is empty owes no more for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from scheduler.api.objects import PodView
from scheduler.framework.events import FORCE_ACTIVATE, UNSCHEDULABLE_TIMEOUT
from scheduler.framework.status import Status
from scheduler.queue.event_labels import BACKOFF_COMPLETE, UNSCHEDULED_POD_ADD
from scheduler.queue.scheduling_queue import SchedulingQueue, _Strategy
from scheduler.queue.types import QueuedPodInfo


def per_gate_value(cases: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Upstream's cases, each at the gate values its popFromBackoffQEnabled lists (the last
    field) as the cases' last field."""
    return [(*case[:-1], enabled) for case in cases for enabled in case[-1]]


@pytest.mark.parametrize("enabled", [True, False])
@pytest.mark.parametrize(
    ("initial", "maximum", "unschedulable", "errors", "want"),
    [
        (1.0, 32.0, 0, 0, None),  # "no backoff"
        (1.0, 32.0, 16, 0, 32.0),  # "backoff by UnschedulableCount"
        (1.0, 32.0, 5, 16, 32.0),  # "backoff is calculated with ConsecutiveErrorsCount"
        (1.0, 32.0, 5, 1, 1.0),  # one error after five rejections: the errors count
        (0.0, 0.0, 16, 0, None),  # "zero maxBackoffDuration means no backoff"
    ],
)
def test_backoff_time(
    new_queue: Any,
    make_pod: Any,
    enabled: bool,
    initial: float,
    maximum: float,
    unschedulable: int,
    errors: int,
    want: float | None,
) -> None:
    """TestBackoffQueue_getBackoffTime (its cached-expiry case has no counterpart: the expiry
    is kept with the pod's backoffQ slot)."""
    q: SchedulingQueue = new_queue(
        pop_from_backoff_q=enabled, initial_backoff=initial, max_backoff=maximum
    )
    timestamp = 2000.0  # a window's start: alignment changes nothing
    pinfo = QueuedPodInfo(pod=make_pod("p"), timestamp=timestamp, attempts=40)
    pinfo.unschedulable_count = unschedulable
    pinfo.consecutive_errors = errors
    expiry = q._backoff_expiry(pinfo)
    assert expiry == (None if want is None else timestamp + want)


@pytest.mark.parametrize("enabled", [True, False])
def test_backoff_flow(new_queue: Any, make_pod: Any, clock: Any, enabled: bool) -> None:
    """TestBackOffFlow: rejected again and again, each time moved by an event, the pod waits
    1 s, 2 s, 4 s, 8 s, then 10 s; under the gate its expiry is truncated to its one-second
    window and it backs off until that window is over."""
    clock.now = 1000.3  # not on a window's start, as upstream's time.Now()
    q: SchedulingQueue = new_queue(pop_from_backoff_q=enabled)
    q.add(make_pod("p"))
    for i, want in enumerate((1.0, 2.0, 4.0, 8.0, 10.0, 10.0, 10.0)):
        pinfo = q.try_pop()
        assert pinfo is not None and pinfo.attempts == i + 1
        pinfo.unschedulable_plugins.add("unsched-plugin")
        q.add_unschedulable_if_not_present(pinfo, i)
        # An event happens.
        q.move_all_to_active_or_backoff(UNSCHEDULABLE_TIMEOUT, None, None)
        assert q.location(pinfo.uid) == "backoff"
        # Still in backoffQ after an early flush, a window later.
        clock.advance(1.0)
        q.flush_backoff_completed()
        assert q.location(pinfo.uid) == "backoff"
        # Out of it once the backoff has passed too.
        clock.advance(want)
        q.flush_backoff_completed()
        assert q.location(pinfo.uid) == "active"


def allowlists(*lists: Sequence[str]) -> Any:
    """PreEnqueue plugins as upstream's test has them: each lets a pod in when one of the pod's
    labels is in its allowlist, else answers UnschedulableAndUnresolvable; the first refusal
    gates the pod (runPreEnqueuePlugins)."""

    def pre_enqueue(pod: PodView) -> Status:
        for i, allowed in enumerate(lists):
            if not any(label in allowed for label in pod.labels):
                return Status.unresolvable("pod name not in allowlists", plugin=f"allowlist{i}")
        return Status.OK

    return pre_enqueue


NONE_ALLOWED = allowlists((), ())
BAR_REFUSED_BY_ONE = allowlists(("foo", "bar"), ("foo",))
BAR_ALLOWED = allowlists(("foo", "bar"), ("bar",))


@pytest.mark.parametrize(
    ("pre_enqueue", "name", "event", "from_backoff", "want_success", "enabled"),
    per_gate_value(
        [
            # "no plugins registered"
            (None, "p", UNSCHEDULED_POD_ADD, False, True, (True, False)),
            # "preEnqueue plugin registered, pod name not in allowlists"
            (NONE_ALLOWED, "p", UNSCHEDULED_POD_ADD, False, False, (True, False)),
            # "preEnqueue plugin registered, pod failed one preEnqueue plugin"
            (BAR_REFUSED_BY_ONE, "bar", UNSCHEDULED_POD_ADD, False, False, (True, False)),
            # "..., preEnqueue rejects the pod, even if it is after backoff"
            (BAR_REFUSED_BY_ONE, "bar", BACKOFF_COMPLETE, False, False, (False,)),
            # "..., but it is moved from backoffQ after completing backoff, so preEnqueue is not
            # executed"
            (BAR_REFUSED_BY_ONE, "bar", BACKOFF_COMPLETE, True, True, (True,)),
            # "..., pod failed one preEnqueue plugin when activated from unschedulablePods"
            (BAR_REFUSED_BY_ONE, "bar", FORCE_ACTIVATE.label, False, False, (True,)),
            # "..., but was activated from backoffQ, so preEnqueue is not executed"
            (BAR_REFUSED_BY_ONE, "bar", FORCE_ACTIVATE.label, True, True, (True,)),
            # "preEnqueue plugin registered, pod passed all preEnqueue plugins"
            (BAR_ALLOWED, "bar", UNSCHEDULED_POD_ADD, False, True, (True, False)),
        ]
    ),
)
def test_move_to_active(
    new_queue: Any,
    make_pod: Any,
    clock: Any,
    pre_enqueue: Any,
    name: str,
    event: str,
    from_backoff: bool,
    want_success: bool,
    enabled: bool,
) -> None:
    """TestPriorityQueue_moveToActiveQ: a gated pod goes to the unschedulable pods, and stays
    there on an update."""
    kwargs: dict[str, Any] = {} if pre_enqueue is None else {"pre_enqueue": pre_enqueue}
    q: SchedulingQueue = new_queue(
        pop_from_backoff_q=enabled, initial_backoff=30.0, max_backoff=60.0, **kwargs
    )
    pod = make_pod(name, labels={name: ""})
    pinfo = QueuedPodInfo(pod=pod, timestamp=clock())
    assert q._move_to_active(pinfo, event, from_backoff) is want_success
    want_unschedulable = 0 if want_success else 1
    assert q.counts()["gated"] == want_unschedulable
    # An update (an annotation) leaves the gated pod where it is.
    q.update(pod, make_pod(name, labels={name: ""}, rv="2"))
    assert q.counts()["gated"] == want_unschedulable


@pytest.mark.parametrize(
    ("pre_enqueue", "name", "want_success", "enabled"),
    per_gate_value(
        [
            # "no plugins registered"
            (None, "p", True, (True, False)),
            # "preEnqueue plugin registered, pod name would not be in allowlists" (not run)
            (NONE_ALLOWED, "p", True, (False,)),
            # "preEnqueue plugin registered, pod name not in allowlists"
            (NONE_ALLOWED, "p", False, (True,)),
            # "preEnqueue plugin registered, preEnqueue plugin would reject the pod, but isn't run"
            (BAR_REFUSED_BY_ONE, "bar", True, (False,)),
            # "preEnqueue plugin registered, pod failed one preEnqueue plugin"
            (BAR_REFUSED_BY_ONE, "bar", False, (True,)),
            # "preEnqueue plugin registered, pod passed all preEnqueue plugins"
            (BAR_ALLOWED, "bar", True, (True, False)),
        ]
    ),
)
def test_move_to_backoff(
    new_queue: Any,
    make_pod: Any,
    clock: Any,
    pre_enqueue: Any,
    name: str,
    want_success: bool,
    enabled: bool,
) -> None:
    """TestPriorityQueue_moveToBackoffQ: under the gate PreEnqueue runs on the way into
    backoffQ (the pod may be popped from there without another look); without it, on the way
    out."""
    kwargs: dict[str, Any] = {} if pre_enqueue is None else {"pre_enqueue": pre_enqueue}
    q: SchedulingQueue = new_queue(
        pop_from_backoff_q=enabled, initial_backoff=30.0, max_backoff=60.0, **kwargs
    )
    pinfo = QueuedPodInfo(pod=make_pod(name, labels={name: ""}), timestamp=clock())
    pinfo.unschedulable_count = 1  # backing off for 30 s
    pinfo.unschedulable_plugins.add("plugin")
    where = q._requeue(pinfo, _Strategy.AFTER_BACKOFF, UNSCHEDULED_POD_ADD)
    assert (where == "backoff") is want_success
