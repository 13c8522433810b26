"""Property: whatever happens, every live pod is in exactly one place, and activeQ pops in order.

Live pods are those added and neither deleted, dropped, nor finished (bound) after a pop.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.api.objects import PodView
from scheduler.framework.events import (
    NODE_ADD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
)
from scheduler.queue.scheduling_queue import SchedulingQueue
from scheduler.queue.types import QueuedPodInfo

NAMES = [f"p{i}" for i in range(3)]  # few names: more collisions
REJECTORS: list[tuple[tuple[str, ...], tuple[str, ...]]] = [
    ((), ()),  # error
    (("NodeResourcesFit",), ()),
    (("TaintToleration",), ()),
    ((), ("ClaimWaiter",)),
]
PVC_ADD = ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD)
EVENTS = [NODE_ADD, PVC_ADD, ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_TAINT)]
PLUGINS = {
    "SchedulingGates": [
        ClusterEventWithHint(
            ClusterEvent(
                EventResource.UNSCHEDULED_POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED
            )
        )
    ],
    "NodeResourcesFit": [ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.ADD))],
    "TaintToleration": [
        ClusterEventWithHint(
            ClusterEvent(EventResource.UNSCHEDULED_POD, ActionType.UPDATE_POD_TOLERATIONS)
        )
    ],
    "ClaimWaiter": [ClusterEventWithHint(PVC_ADD)],
}

name = st.sampled_from(NAMES)
pod_spec = st.tuples(name, st.integers(0, 3), st.booleans(), st.booleans())
operation = st.one_of(
    st.tuples(st.just("add"), pod_spec),
    st.tuples(st.just("update"), pod_spec),
    st.tuples(st.just("delete"), name),
    st.tuples(st.just("pop"), st.none()),
    st.tuples(st.just("fail"), st.tuples(st.integers(0, 5), st.integers(0, len(REJECTORS) - 1))),
    st.tuples(st.just("done"), st.integers(0, 5)),
    st.tuples(st.just("move"), st.integers(0, len(EVENTS) - 1)),
    st.tuples(st.just("activate"), name),
    st.tuples(st.just("flush_backoff"), st.none()),
    st.tuples(st.just("flush_leftover"), st.none()),
    st.tuples(st.just("advance"), st.sampled_from([0.5, 3.0, 400.0])),
    st.tuples(st.just("reverse_order"), st.none()),
    st.tuples(st.just("drop"), name),
)


def _ascending(a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
    return a.pod.priority < b.pod.priority


def _named(pod_name: str) -> Callable[[PodView], bool]:
    return lambda pod: pod.name == pod_name


def _check_partition(q: SchedulingQueue, live: set[str]) -> None:
    places: dict[str, list[str]] = {}
    for where, uids in (
        ("active", [p.uid for p in q._active]),
        ("backoff", [p.uid for p in q._backoff]),
        ("unschedulable", list(q._unschedulable)),
        (
            "in_flight",
            [p.uid for p in q._in_flight.pods() if p.uid not in q._deleted_in_flight],
        ),
    ):
        for uid in uids:
            places.setdefault(uid, []).append(where)
    assert all(len(found) == 1 for found in places.values()), places
    assert set(places) == {f"uid-{n}" for n in live}
    counts = q.counts()
    queued = sum(counts.values())
    assert queued == len(places) - sum(1 for found in places.values() if found == ["in_flight"])


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(ops=st.lists(operation, max_size=40), pop_from_backoff=st.booleans())
def test_every_live_pod_is_in_exactly_one_place(
    new_queue: Any, make_pod: Any, clock: Any, ops: list[tuple[str, Any]], pop_from_backoff: bool
) -> None:
    # Either value of SchedulerPopFromBackoffQ.
    q: SchedulingQueue = new_queue(PLUGINS, pop_from_backoff_q=pop_from_backoff)
    less = q._active._less
    live: set[str] = set()
    versions: dict[str, int] = {}
    in_flight: list[QueuedPodInfo] = []

    def build(spec: tuple[str, int, bool, bool]) -> Any:
        pod_name, priority, gated, tolerate = spec
        versions[pod_name] = versions.get(pod_name, 0) + 1
        return make_pod(
            pod_name,
            priority=priority,
            gates=("g",) if gated else (),
            tolerations=[{"key": "k", "operator": "Exists"}] if tolerate else [],
            rv=str(versions[pod_name]),
        )

    for op, arg in ops:
        if op == "add":
            q.add(build(arg))
            live.add(arg[0])
        elif op == "update":
            current = q.get(f"uid-{arg[0]}")
            q.update(current.pod if current else None, build(arg))
            live.add(arg[0])
        elif op == "delete" or op == "drop":
            if op == "delete":
                q.delete(make_pod(arg))
            else:
                q.drop_if(_named(arg))
            live.discard(arg)
        elif op == "pop":
            pinfo = q.try_pop()
            if pinfo is not None:
                # Nothing left in activeQ should have come before it.
                assert not any(less(other, pinfo) for other in q._active)
                assert not pinfo.gated
                in_flight.append(pinfo)
            elif pop_from_backoff:
                # Nothing to pop means no pod a plugin rejected is backing off either.
                assert q._backoff.poppable() == 0
        elif op in ("fail", "done") and in_flight:
            index = (arg[0] if op == "fail" else arg) % len(in_flight)
            pinfo = in_flight.pop(index)
            still_live = pinfo.pod.name in live and pinfo.uid not in q._deleted_in_flight
            if op == "fail":
                rejectors, pending = REJECTORS[arg[1]]
                pinfo.unschedulable_plugins.update(rejectors)
                pinfo.pending_plugins.update(pending)
                q.add_unschedulable_if_not_present(pinfo, q.scheduling_cycle)
                if not still_live:
                    live.discard(pinfo.pod.name)
            else:
                q.done(pinfo.uid)  # bound: it leaves the queue
                live.discard(pinfo.pod.name)
        elif op == "move":
            q.move_all_to_active_or_backoff(EVENTS[arg], None, None)
        elif op == "activate":
            q.activate([make_pod(arg)])
        elif op == "flush_backoff":
            q.flush_backoff_completed()
        elif op == "flush_leftover":
            q.flush_unschedulable_left_over()
        elif op == "advance":
            clock.advance(arg)
        elif op == "reverse_order":
            less = _ascending
            q.set_less(less)
        _check_partition(q, live)
