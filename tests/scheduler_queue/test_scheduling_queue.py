"""Transitions of the scheduling queue, table-driven.

Cases ported as facts from upstream pkg/scheduler/backend/queue/scheduling_queue_test.go
(TestPriorityQueue_Add / _Pop / _Update / _Delete / _Activate, TestBackOffFlow,
TestPriorityQueue_calculateBackoffDuration, TestHighPriorityFlushUnschedulablePodsLeftover,
TestPriorityQueue_AddUnschedulableIfNotPresent (in-flight events), Test_isPodWorthRequeuing,
TestPriorityQueue_UpdateNominatedPodForNode, TestPriorityQueue_PendingPods).
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler import testing
from scheduler.framework.events import (
    ASSIGNED_POD_DELETE,
    NODE_ADD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from scheduler.queue.backoff import backoff_duration
from scheduler.queue.scheduling_queue import SchedulingQueue
from scheduler.queue.types import QueuedPodInfo


def _node_fits(_pod: Any, _old: Any, new: Any) -> QueueingHint:
    return QueueingHint.QUEUE if new and new.get("fits") else QueueingHint.SKIP


PLUGINS = {
    "SchedulingGates": [
        ClusterEventWithHint(
            ClusterEvent(
                EventResource.UNSCHEDULED_POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED
            )
        )
    ],
    "NodeResourcesFit": [
        ClusterEventWithHint(
            ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE)
        ),
        ClusterEventWithHint(ClusterEvent(EventResource.POD, ActionType.DELETE)),
        ClusterEventWithHint(
            ClusterEvent(EventResource.ASSIGNED_POD, ActionType.UPDATE_POD_SCALE_DOWN)
        ),
    ],
    "TaintToleration": [
        ClusterEventWithHint(
            ClusterEvent(EventResource.UNSCHEDULED_POD, ActionType.UPDATE_POD_TOLERATIONS)
        ),
    ],
    "NodeAffinity": [
        ClusterEventWithHint(
            ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
            _node_fits,
        ),
    ],
    "InterPodAffinity": [
        ClusterEventWithHint(
            ClusterEvent(
                EventResource.ASSIGNED_POD,
                ActionType.ADD | ActionType.DELETE | ActionType.UPDATE_POD_LABEL,
            )
        ),
        ClusterEventWithHint(
            ClusterEvent(EventResource.UNSCHEDULED_POD, ActionType.UPDATE_POD_LABEL)
        ),
    ],
    # Answers Pending (waits for something outside the scheduler) until a claim shows up.
    "ClaimWaiter": [
        ClusterEventWithHint(ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD))
    ],
}

PVC_ADD = ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD, "PvcAdd")
NODE_TAINT = ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_TAINT, "NodeTaint")
ASSIGNED_DELETE = ClusterEvent(EventResource.ASSIGNED_POD, ActionType.DELETE, "AssignedPodDelete")


@pytest.fixture
def q(new_queue: Any) -> SchedulingQueue:
    queue: SchedulingQueue = new_queue(PLUGINS)
    return queue


def pop(queue: SchedulingQueue) -> QueuedPodInfo:
    pinfo = queue.try_pop()
    assert pinfo is not None
    return pinfo


def fail(
    queue: SchedulingQueue,
    pinfo: QueuedPodInfo,
    *plugins: str,
    pending: tuple[str, ...] = (),
) -> None:
    """What the failure handler does: record the rejectors, hand the pod back."""
    pinfo.unschedulable_plugins.update(plugins)
    pinfo.pending_plugins.update(pending)
    queue.add_unschedulable_if_not_present(pinfo, queue.scheduling_cycle)


def popped_names(queue: SchedulingQueue) -> list[str]:
    names = []
    while (pinfo := queue.try_pop()) is not None:
        names.append(pinfo.pod.name)
    return names


# ----------------------------------------------------------------------------- backoff math


@pytest.mark.parametrize(
    ("initial", "maximum", "attempts", "want"),
    [
        (1e-9, 32e-9, 16, 32e-9),  # upstream "normal"
        (1e-9, 2147483647e-9, 32, 2147483647e-9),  # upstream "overflow_32bit"
        (1e-9, 9223372036854775807e-9, 64, 9223372036854775807e-9),  # "overflow_64bit"
        (1.0, 10.0, 0, 0.0),  # never attempted: no penalty
        # TestBackOffFlow: 1s, 2s, 4s, 8s, then capped at 10s.
        (1.0, 10.0, 1, 1.0),
        (1.0, 10.0, 2, 2.0),
        (1.0, 10.0, 3, 4.0),
        (1.0, 10.0, 4, 8.0),
        (1.0, 10.0, 5, 10.0),
        (1.0, 10.0, 6, 10.0),
        (1.0, 10.0, 1000, 10.0),
    ],
)
def test_backoff_duration(initial: float, maximum: float, attempts: int, want: float) -> None:
    assert backoff_duration(attempts, initial, maximum) == pytest.approx(want)


def test_backoff_flow_follows_attempts(q: SchedulingQueue, make_pod: Any, clock: Any) -> None:
    """TestBackOffFlow: each failure doubles the wait before the pod is active again."""
    q.add(make_pod("p"))
    for want in (1.0, 2.0, 4.0, 8.0, 10.0, 10.0):
        pinfo = pop(q)
        fail(q, pinfo)  # an error: straight to backoffQ
        assert q.location(pinfo.uid) == "backoff"
        clock.advance(want - 0.001)
        q.flush_backoff_completed()
        assert q.location(pinfo.uid) == "backoff"
        clock.advance(0.002)
        q.flush_backoff_completed()
        assert q.location(pinfo.uid) == "active"


# ---------------------------------------------------------------------------------- add/pop


def test_pop_order_is_priority_then_age(q: SchedulingQueue, make_pod: Any, clock: Any) -> None:
    for name, prio in [("low", 0), ("high", 100), ("mid", 50), ("low2", 0), ("high2", 100)]:
        q.add(make_pod(name, priority=prio))
        clock.advance(1)
    assert popped_names(q) == ["high", "high2", "mid", "low", "low2"]
    assert q.scheduling_cycle == 5


def test_pop_counts_attempts_and_clears_rejectors(q: SchedulingQueue, make_pod: Any) -> None:
    q.add(make_pod("p"))
    pinfo = pop(q)
    assert (pinfo.attempts, pinfo.initial_attempt_timestamp is not None) == (1, True)
    fail(q, pinfo)
    q.activate([pinfo.pod])
    again = pop(q)
    assert again is pinfo and again.attempts == 2
    assert not again.unschedulable_plugins and not again.pending_plugins


@pytest.mark.parametrize(("gates", "want"), [((), "active"), (("example.com/wait",), "gated")])
def test_add_runs_pre_enqueue(
    q: SchedulingQueue, make_pod: Any, gates: tuple[str, ...], want: str
) -> None:
    pod = make_pod("p", gates=gates)
    q.add(pod)
    assert q.location(pod.uid) == want
    if want == "gated":
        pinfo = q.get(pod.uid)
        assert pinfo is not None and pinfo.attempts == 0
        assert (pinfo.gating_plugin, pinfo.unschedulable_plugins) == (
            "SchedulingGates",
            {"SchedulingGates"},
        )


def test_add_of_known_pod_acts_as_update(q: SchedulingQueue, make_pod: Any) -> None:
    q.add(make_pod("a", priority=1))
    q.add(make_pod("b", priority=5))
    q.add(make_pod("a", priority=10, rv="2"))
    assert q.counts()["active"] == 2
    assert popped_names(q) == ["a", "b"]


# --------------------------------------------------------------- add_unschedulable (in flight)


def _event_none(_q: SchedulingQueue, _p: Any, _pod: Any) -> None:
    pass


def _event_node_add(q: SchedulingQueue, _p: Any, _pod: Any) -> None:
    q.move_all_to_active_or_backoff(NODE_ADD, None, {"fits": True})


def _event_node_add_no_fit(q: SchedulingQueue, _p: Any, _pod: Any) -> None:
    q.move_all_to_active_or_backoff(NODE_ADD, None, {"fits": False})


def _event_node_taint(q: SchedulingQueue, _p: Any, _pod: Any) -> None:
    q.move_all_to_active_or_backoff(NODE_TAINT, None, {"fits": True})


def _event_pvc_add(q: SchedulingQueue, _p: Any, _pod: Any) -> None:
    q.move_all_to_active_or_backoff(PVC_ADD, None, {})


def _event_activate(q: SchedulingQueue, _p: Any, pod: Any) -> None:
    q.activate([pod])


def _event_activate_other(q: SchedulingQueue, make_pod: Any, _pod: Any) -> None:
    q.activate([make_pod("someone-else")])


def _event_tolerations_added(q: SchedulingQueue, make_pod: Any, pod: Any) -> None:
    q.update(pod, make_pod(pod.name, rv="2", tolerations=[{"key": "k", "operator": "Exists"}]))


@pytest.mark.parametrize(
    ("rejectors", "pending", "while_in_flight", "want"),
    [
        # No event while it was being scheduled: wait for one.
        (("NodeResourcesFit",), (), _event_none, "unschedulable"),
        # A matching event arrived: retry after the backoff (1 s, not yet over).
        (("NodeResourcesFit",), (), _event_node_add, "backoff"),
        # The event's hint says it does not help.
        (("NodeAffinity",), (), _event_node_add_no_fit, "unschedulable"),
        (("NodeAffinity",), (), _event_node_add, "backoff"),
        # An event no rejecting plugin registered.
        (("NodeResourcesFit",), (), _event_node_taint, "unschedulable"),
        # Error (no rejector): backoff, whatever happened.
        ((), (), _event_none, "backoff"),
        # A Pending plugin said Queue: skip the backoff.
        ((), ("ClaimWaiter",), _event_pvc_add, "active"),
        (("NodeResourcesFit",), ("ClaimWaiter",), _event_node_add, "backoff"),
        (("NodeResourcesFit",), ("ClaimWaiter",), _event_pvc_add, "active"),
        ((), ("ClaimWaiter",), _event_node_add, "unschedulable"),
        # Activate while in flight: a ForceActivate wildcard for this pod only.
        (("NodeResourcesFit",), (), _event_activate, "backoff"),
        (("NodeResourcesFit",), (), _event_activate_other, "unschedulable"),
        # The pod itself was updated in a way its rejector registered.
        (("TaintToleration",), (), _event_tolerations_added, "backoff"),
        (("NodeResourcesFit",), (), _event_tolerations_added, "unschedulable"),
    ],
)
def test_add_unschedulable_considers_events_while_in_flight(
    q: SchedulingQueue,
    make_pod: Any,
    rejectors: tuple[str, ...],
    pending: tuple[str, ...],
    while_in_flight: Any,
    want: str,
) -> None:
    q.add(make_pod("p"))
    pinfo = pop(q)
    while_in_flight(q, make_pod, pinfo.pod)
    fail(q, pinfo, *rejectors, pending=pending)
    assert q.location(pinfo.uid) == want
    assert q.counts()[want] == 1


def test_events_before_the_pop_do_not_count(q: SchedulingQueue, make_pod: Any) -> None:
    q.add(make_pod("first"))
    q.add(make_pod("second"))
    first = pop(q)
    q.move_all_to_active_or_backoff(NODE_ADD, None, {"fits": True})  # only `first` is in flight
    second = pop(q)
    fail(q, second, "NodeResourcesFit")
    fail(q, first, "NodeResourcesFit")
    assert (q.location(first.uid), q.location(second.uid)) == ("backoff", "unschedulable")


def test_in_flight_update_is_used_on_requeue(q: SchedulingQueue, make_pod: Any) -> None:
    q.add(make_pod("p", priority=1))
    pinfo = pop(q)
    newer = make_pod("p", priority=7, rv="2")
    q.update(pinfo.pod, newer)
    assert q.location(pinfo.uid) == "in_flight"
    fail(q, pinfo, "NodeResourcesFit")
    assert pinfo.pod.priority == 7 and pinfo.pod.resource_version == "2"


def test_pod_deleted_in_flight_is_not_requeued(q: SchedulingQueue, make_pod: Any) -> None:
    q.add(make_pod("p"))
    pinfo = pop(q)
    q.delete(pinfo.pod)
    fail(q, pinfo, "NodeResourcesFit")
    assert q.location(pinfo.uid) is None
    assert q.pending_pods()[0] == []


def test_relist_while_in_flight_is_an_update(q: SchedulingQueue, make_pod: Any) -> None:
    q.add(make_pod("p"))
    pinfo = pop(q)
    q.add(make_pod("p", rv="2"))  # re-listed while in flight → recorded as an update
    fail(q, pinfo, "NodeResourcesFit")
    assert q.counts() == {"active": 0, "backoff": 0, "unschedulable": 1, "gated": 0}


def test_add_unschedulable_ignores_pods_already_queued(q: SchedulingQueue, make_pod: Any) -> None:
    q.add(make_pod("p"))
    pinfo = pop(q)
    q.done(pinfo.uid)
    q.add(make_pod("p", rv="2"))  # back in activeQ by another route
    fail(q, pinfo, "NodeResourcesFit")
    assert q.location(pinfo.uid) == "active"
    assert q.counts()["active"] == 1


def test_error_counts_consecutive_failures(q: SchedulingQueue, make_pod: Any) -> None:
    q.add(make_pod("p"))
    pinfo = pop(q)
    fail(q, pinfo)
    q.activate([pinfo.pod])
    fail(q, pop(q))
    assert pinfo.consecutive_errors == 2
    q.activate([pinfo.pod])
    fail(q, pop(q), "NodeResourcesFit")
    assert pinfo.consecutive_errors == 0


def test_done_forgets_in_flight_pod(q: SchedulingQueue, make_pod: Any) -> None:
    q.add(make_pod("p"))
    pinfo = pop(q)
    q.done(pinfo.uid)
    assert q.location(pinfo.uid) is None
    # An update after binding finished treats it as new again (as upstream does).
    q.update(pinfo.pod, make_pod("p", rv="2"))
    assert q.location(pinfo.uid) == "active"


def test_not_popped_pod_falls_back_on_move_request_cycle(
    q: SchedulingQueue, make_pod: Any, clock: Any
) -> None:
    stranger = QueuedPodInfo(pod=make_pod("x"), timestamp=clock(), attempts=1)
    stranger.unschedulable_plugins.add("NodeResourcesFit")
    q.add_unschedulable_if_not_present(stranger, q.scheduling_cycle)
    assert q.location(stranger.uid) == "unschedulable"


# --------------------------------------------------------------------------- moving requests


def _unschedulable_pod(
    q: SchedulingQueue, make_pod: Any, name: str, *rejectors: str, affinity: bool = False
) -> str:
    """Park pod `name` as rejected by `rejectors`; with `affinity`, it requires a pod labelled
    app=x on its node (a required pod affinity term, namespace "ns")."""
    q.add(_affinity_pod(name) if affinity else make_pod(name))
    pinfo = pop(q)
    fail(q, pinfo, *rejectors)
    assert q.location(pinfo.uid) == "unschedulable"
    return pinfo.uid


@pytest.mark.parametrize(
    ("rejector", "event", "new", "wait", "want"),
    [
        ("NodeResourcesFit", NODE_ADD, {}, 0.0, "backoff"),
        ("NodeResourcesFit", NODE_ADD, {}, 1.5, "active"),  # backoff already over
        ("NodeResourcesFit", NODE_TAINT, {}, 1.5, "unschedulable"),
        ("NodeResourcesFit", ASSIGNED_DELETE, None, 1.5, "active"),  # Pod/Delete covers it
        ("NodeAffinity", NODE_ADD, {"fits": False}, 1.5, "unschedulable"),
        ("NodeAffinity", NODE_ADD, {"fits": True}, 1.5, "active"),
        ("UnknownPlugin", NODE_ADD, {}, 1.5, "unschedulable"),
    ],
)
def test_move_all_routes_by_rejecting_plugin(
    q: SchedulingQueue,
    make_pod: Any,
    clock: Any,
    rejector: str,
    event: ClusterEvent,
    new: Any,
    wait: float,
    want: str,
) -> None:
    uid = _unschedulable_pod(q, make_pod, "p", rejector)
    clock.advance(wait)
    q.move_all_to_active_or_backoff(event, None, new)
    assert q.location(uid) == want


def test_move_all_pre_check(q: SchedulingQueue, make_pod: Any, clock: Any) -> None:
    a = _unschedulable_pod(q, make_pod, "a", "NodeResourcesFit")
    b = _unschedulable_pod(q, make_pod, "b", "NodeResourcesFit")
    clock.advance(2)
    q.move_all_to_active_or_backoff(NODE_ADD, None, {}, lambda pod: pod.name == "b")
    assert (q.location(a), q.location(b)) == ("unschedulable", "active")


def test_without_hints_every_event_requeues(new_queue: Any, make_pod: Any, clock: Any) -> None:
    q = new_queue(no_hints=True)
    uid = _unschedulable_pod(q, make_pod, "p", "NodeResourcesFit")
    clock.advance(2)
    q.move_all_to_active_or_backoff(NODE_TAINT, None, {})
    assert q.location(uid) == "active"


def _affinity_pod(name: str) -> Any:
    return testing.make_pod(
        name,
        namespace="ns",
        uid=f"uid-{name}",
        requests={"cpu": "100m"},
        affinity={
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "zone"}
                ]
            }
        },
    )


# getUnschedulablePodsWithCrossTopologyTerm (v1.36 backend/queue/scheduling_queue.go): an
# assigned pod moves the pods PodTopologySpread rejected in its namespace and the pods with a
# required affinity term it matches; the rejectors' hints then decide.
@pytest.mark.parametrize(
    ("rejector", "affinity", "namespace", "labels", "want"),
    [
        ("InterPodAffinity", True, "ns", {"app": "x"}, "active"),
        ("InterPodAffinity", True, "ns", {"app": "y"}, "unschedulable"),  # term not matched
        ("InterPodAffinity", True, "other", {"app": "x"}, "unschedulable"),  # term's namespace
        # no required affinity term (say, anti-affinity kept it out): a new pod cannot help
        ("InterPodAffinity", False, "ns", {"app": "x"}, "unschedulable"),
        ("PodTopologySpread", False, "ns", {}, "active"),
        ("PodTopologySpread", False, "other", {}, "unschedulable"),
        ("NodeResourcesFit", False, "ns", {}, "unschedulable"),
        # matched, but Fit registered no AssignedPod/Add: its hint is never asked
        ("NodeResourcesFit", True, "ns", {"app": "x"}, "unschedulable"),
    ],
)
def test_assigned_pod_added(
    new_queue: Any,
    make_pod: Any,
    clock: Any,
    rejector: str,
    affinity: bool,
    namespace: str,
    labels: dict[str, str],
    want: str,
) -> None:
    registered = dict(PLUGINS)
    registered["PodTopologySpread"] = [
        ClusterEventWithHint(ClusterEvent(EventResource.POD, ActionType.ALL))
    ]
    q = new_queue(registered, no_hints=False)
    uid = _unschedulable_pod(q, make_pod, "p", rejector, affinity=affinity)
    clock.advance(2)
    q.assigned_pod_added(make_pod("bound", node="n1", namespace=namespace, labels=labels))
    assert q.location(uid) == want


@pytest.mark.parametrize(
    ("new_cpu", "new_labels", "rejector", "want"),
    [
        ("50m", {}, "NodeResourcesFit", "active"),  # scaled down: frees room for anyone
        ("200m", {}, "NodeResourcesFit", "unschedulable"),
        ("100m", {"app": "x"}, "InterPodAffinity", "active"),
        ("100m", {"app": "x"}, "NodeResourcesFit", "unschedulable"),
    ],
)
def test_assigned_pod_updated(
    q: SchedulingQueue,
    make_pod: Any,
    clock: Any,
    new_cpu: str,
    new_labels: dict[str, str],
    rejector: str,
    want: str,
) -> None:
    uid = _unschedulable_pod(q, make_pod, "p", rejector, affinity=True)
    clock.advance(2)
    old = make_pod("bound", node="n1", cpu="100m")
    q.assigned_pod_updated(old, make_pod("bound", node="n1", cpu=new_cpu, labels=new_labels))
    assert q.location(uid) == want


# ----------------------------------------------------------------------------------- flushes


def test_flush_leftover_after_max_unschedulable_duration(
    q: SchedulingQueue, make_pod: Any, clock: Any
) -> None:
    uid = _unschedulable_pod(q, make_pod, "p", "NodeResourcesFit")
    gated = make_pod("g", gates=("wait",))
    q.add(gated)
    clock.advance(299)
    q.flush_unschedulable_left_over()
    assert q.location(uid) == "unschedulable"
    clock.advance(2)
    q.flush_unschedulable_left_over()
    assert (q.location(uid), q.location(gated.uid)) == ("active", "gated")


def test_high_priority_flushed_leftover_pops_first(
    q: SchedulingQueue, make_pod: Any, clock: Any
) -> None:
    """TestHighPriorityFlushUnschedulablePodsLeftover."""
    q.add(make_pod("low", priority=0))
    q.add(make_pod("high", priority=100))
    first, second = pop(q), pop(q)
    fail(q, first, "NodeResourcesFit")
    fail(q, second, "NodeResourcesFit")
    clock.advance(301)
    q.flush_unschedulable_left_over()
    assert popped_names(q) == ["high", "low"]


def test_flush_backoff_moves_only_expired(q: SchedulingQueue, make_pod: Any, clock: Any) -> None:
    q.add(make_pod("a"))
    a = pop(q)
    fail(q, a)  # backoff 1 s
    clock.advance(0.5)
    q.add(make_pod("b"))
    b = pop(q)
    fail(q, b)  # backoff until 1.5 s
    clock.advance(0.6)
    q.flush_backoff_completed()
    assert (q.location(a.uid), q.location(b.uid)) == ("active", "backoff")


# ------------------------------------------------------------------------------------ update


def test_update_ungates_pod(q: SchedulingQueue, make_pod: Any) -> None:
    old = make_pod("p", gates=("a", "b"))
    q.add(old)
    one_left = make_pod("p", gates=("b",), rv="2")
    q.update(old, one_left)
    assert q.location(old.uid) == "gated"
    q.update(one_left, make_pod("p", rv="3"))
    assert q.location(old.uid) == "active"
    assert q.counts() == {"active": 1, "backoff": 0, "unschedulable": 0, "gated": 0}


def test_gated_pods_skip_events_their_gating_plugin_did_not_register(
    new_queue: Any, make_pod: Any
) -> None:
    """Upstream's movePodsToActiveOrBackoffQueue: a gated pod is passed over (not asked, not
    moved) by an event its gating plugin did not register; pods not gated are asked as before."""
    asked: list[tuple[str, str]] = []

    def gate_may_lift(plugin: str, event: ClusterEvent) -> bool:
        asked.append((plugin, event.name))
        return event.resource == EventResource.NODE

    q = new_queue(no_hints=True, gate_may_lift=gate_may_lift)
    gated = make_pod("gated", gates=("g",))
    q.add(gated)
    q.add(make_pod("open"))
    fail(q, pop(q), "NodeResourcesFit")  # without hints, any event moves it
    assert q.counts()["gated"] == 1 and q.counts()["unschedulable"] == 1
    q.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, make_pod("x", node="n1"), None)
    assert q.location(gated.uid) == "gated"
    assert q.counts()["unschedulable"] == 0  # the pod not gated moved
    assert asked == [("SchedulingGates", "AssignedPodDelete")]  # once per plugin, not per pod
    q.move_all_to_active_or_backoff(NODE_ADD, None, {"fits": True})
    assert q.location(gated.uid) == "gated"  # visited, and PreEnqueue keeps it gated


@pytest.mark.parametrize(
    ("change", "rejector", "wait", "want"),
    [
        ({"tolerations": [{"key": "k", "operator": "Exists"}]}, "TaintToleration", 0, "backoff"),
        ({"tolerations": [{"key": "k", "operator": "Exists"}]}, "TaintToleration", 2, "active"),
        ({"labels": {"a": "b"}}, "TaintToleration", 2, "unschedulable"),
        ({"labels": {"a": "b"}}, "InterPodAffinity", 2, "active"),
    ],
)
def test_update_of_unschedulable_pod_asks_hints(
    q: SchedulingQueue,
    make_pod: Any,
    clock: Any,
    change: dict[str, Any],
    rejector: str,
    wait: float,
    want: str,
) -> None:
    q.add(make_pod("p"))
    pinfo = pop(q)
    fail(q, pinfo, rejector)
    clock.advance(wait)
    newer = make_pod("p", rv="2", **change)
    q.update(pinfo.pod, newer)
    assert q.location(pinfo.uid) == want
    found = q.get(pinfo.uid)
    assert found is not None and found.pod is newer


def test_update_in_active_reorders(q: SchedulingQueue, make_pod: Any) -> None:
    a, b = make_pod("a", priority=1), make_pod("b", priority=2)
    q.add(a)
    q.add(b)
    q.update(a, make_pod("a", priority=3, rv="2"))
    assert popped_names(q) == ["a", "b"]


def test_update_in_backoff_keeps_it_there(q: SchedulingQueue, make_pod: Any) -> None:
    q.add(make_pod("p"))
    pinfo = pop(q)
    fail(q, pinfo)
    q.update(pinfo.pod, make_pod("p", rv="2", labels={"x": "y"}))
    assert q.location(pinfo.uid) == "backoff"
    found = q.get(pinfo.uid)
    assert found is not None and found.pod.resource_version == "2"


def test_update_of_unknown_pod_adds_it(q: SchedulingQueue, make_pod: Any) -> None:
    pod = make_pod("p")
    q.update(None, pod)
    assert q.location(pod.uid) == "active"


# ---------------------------------------------------------------------- delete and activate


@pytest.mark.parametrize("where", ["active", "backoff", "unschedulable", "gated"])
def test_delete_from_every_queue(q: SchedulingQueue, make_pod: Any, where: str) -> None:
    pod = make_pod("p", gates=("g",) if where == "gated" else ())
    q.add(pod)
    if where in ("backoff", "unschedulable"):
        pinfo = pop(q)
        fail(q, pinfo, *(["NodeResourcesFit"] if where == "unschedulable" else []))
    assert q.location(pod.uid) == where
    q.delete(pod)
    assert q.location(pod.uid) is None
    assert sum(q.counts().values()) == 0


@pytest.mark.parametrize(
    ("where", "want"),
    [("backoff", "active"), ("unschedulable", "active"), ("gated", "gated"), (None, None)],
)
def test_activate(q: SchedulingQueue, make_pod: Any, where: str | None, want: str) -> None:
    pod = make_pod("p", gates=("g",) if where == "gated" else ())
    if where is not None:
        q.add(pod)
    if where in ("backoff", "unschedulable"):
        fail(q, pop(q), *(["NodeResourcesFit"] if where == "unschedulable" else []))
    q.activate([pod])
    assert q.location(pod.uid) == want


# ------------------------------------------------------------------------------- nominator


def test_nominator_follows_adds_updates_and_deletes(q: SchedulingQueue, make_pod: Any) -> None:
    a = make_pod("a", nominated="n1")
    q.add(a)
    q.add(make_pod("b", nominated="n1"))
    assert [p.name for p in q.nominated_pods_for_node("n1")] == ["a", "b"]
    # Status moves the nomination.
    q.update(a, make_pod("a", nominated="n2", rv="2"))
    assert [p.name for p in q.nominated_pods_for_node("n2")] == ["a"]
    assert [p.name for p in q.nominated_pods_for_node("n1")] == ["b"]
    q.delete(make_pod("b"))
    assert q.nominated_pods_for_node("n1") == []


def test_nomination_in_memory_survives_unrelated_update(q: SchedulingQueue, make_pod: Any) -> None:
    """An update that does not mention nominatedNodeName keeps the scheduler's own nomination."""
    pod = make_pod("p")
    q.add(pod)
    q.add_nominated_pod(pod, "n1")
    newer = make_pod("p", rv="2", labels={"x": "y"})
    q.update(pod, newer)
    assert q.nominated_pods_for_node("n1") == [newer]
    q.add_nominated_pod(newer, "")  # preemption gave up: clear it
    assert q.nominated_pods_for_node("n1") == []


def test_an_update_in_flight_does_not_nominate(q: SchedulingQueue, make_pod: Any) -> None:
    """Upstream's PriorityQueue.Update records an in-flight pod's update as an event only: the
    nominatedNodeName that an earlier attempt's preemption wrote, seen while the pod is being
    bound there, must not leave it nominated once bound (the nominated pods added to the node
    would hold it twice)."""
    q.add(make_pod("p"))
    pinfo = pop(q)
    q.update(pinfo.pod, make_pod("p", nominated="n1", rv="2"))
    assert q.nominated_pods_for_node("n1") == []


def test_bound_pod_is_not_nominated(q: SchedulingQueue, make_pod: Any) -> None:
    q.add_nominated_pod(make_pod("p", node="n2"), "n1")
    assert q.nominated_pods_for_node("n1") == []
    q.add_nominated_pod(make_pod("x", nominated="n3"))
    assert q.nominated_node_name("uid-x") == "n3"
    q.delete_nominated_pod_if_exists(make_pod("x"))
    assert q.nominated_node_name("uid-x") == ""


# ------------------------------------------------------------------ profiles, views, metrics


def test_set_less_reorders_without_losing_pods(q: SchedulingQueue, make_pod: Any) -> None:
    for i in range(20):
        q.add(make_pod(f"p{i:02}", priority=i))
    q.set_less(lambda a, b: a.pod.priority < b.pod.priority)  # lowest first now
    assert popped_names(q) == [f"p{i:02}" for i in range(20)]


def test_drop_if_removes_from_everywhere(q: SchedulingQueue, make_pod: Any) -> None:
    q.add(make_pod("flying"))
    flying = pop(q)
    q.add(make_pod("backing"))
    fail(q, pop(q))
    q.add(make_pod("stuck"))
    fail(q, pop(q), "NodeResourcesFit")
    q.add(make_pod("gated", gates=("g",)))
    q.add(make_pod("keep"))
    q.add(make_pod("active"))
    dropped = q.drop_if(lambda pod: pod.name != "keep")
    assert sorted(p.name for p in dropped) == ["active", "backing", "flying", "gated", "stuck"]
    fail(q, flying, "NodeResourcesFit")  # its attempt ends: not requeued
    assert q.pending_pods()[1] == "activeQ:1; backoffQ:0; unschedulablePods:0"


def test_pending_pods_and_counts(q: SchedulingQueue, make_pod: Any) -> None:
    q.add(make_pod("a1"))
    q.add(make_pod("a2"))
    q.add(make_pod("b"))
    q.add(make_pod("u"))
    q.add(make_pod("g", gates=("x",)))
    # pops a1, a2, b in order... pop the ones to fail by name
    popped = {p.pod.name: p for p in (pop(q), pop(q), pop(q), pop(q))}
    q.add(make_pod("a3"))
    fail(q, popped["b"])
    fail(q, popped["u"], "NodeResourcesFit")
    q.activate([popped["a1"].pod])  # in flight: nothing to move
    q.done(popped["a1"].uid)
    q.done(popped["a2"].uid)
    pods, summary = q.pending_pods()
    assert sorted(p.name for p in pods) == ["a3", "b", "g", "u"]
    assert summary == "activeQ:1; backoffQ:1; unschedulablePods:2"
    assert q.counts() == {"active": 1, "backoff": 1, "unschedulable": 1, "gated": 1}


def test_ten_thousand_pods_queue_and_pop_in_order(q: SchedulingQueue, make_pod: Any) -> None:
    pods = [make_pod(f"p{i}", priority=(i * 7919) % 1000) for i in range(10_000)]
    for pod in pods:
        q.add(pod)
    priorities = []
    while (pinfo := q.try_pop()) is not None:
        priorities.append(pinfo.pod.priority)
    assert priorities == sorted((p.priority for p in pods), reverse=True)


def test_dropped_in_flight_pod_seen_again_is_requeued(q: SchedulingQueue, make_pod: Any) -> None:
    """A profile removed then restored while the pod was being scheduled: it is not lost."""
    q.add(make_pod("p"))
    pinfo = pop(q)
    assert [p.name for p in q.drop_if(lambda pod: True)] == ["p"]
    q.add(make_pod("p", rv="2"))
    assert q.location(pinfo.uid) == "in_flight"
    fail(q, pinfo, "NodeResourcesFit")
    assert q.location(pinfo.uid) == "unschedulable"


def test_events_are_kept_for_the_oldest_pod_still_in_flight(
    q: SchedulingQueue, make_pod: Any
) -> None:
    for name in ("a", "b", "c"):
        q.add(make_pod(name))
    a, b = pop(q), pop(q)
    q.move_all_to_active_or_backoff(NODE_ADD, None, {"fits": True})
    q.done(a.uid)  # a was bound; b still needs the event
    c = pop(q)
    fail(q, c, "NodeResourcesFit")
    fail(q, b, "NodeResourcesFit")
    assert (q.location(b.uid), q.location(c.uid)) == ("backoff", "unschedulable")
