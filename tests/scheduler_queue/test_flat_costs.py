"""The queue's per-event structures answer as the walks they replace (issue 22).

- InFlight (trimmed front cut off lazily, oldest pod found through a FIFO) is held to the plain
  implementation it replaced: same events since each pod was popped, same gauge deltas.
- UnschedulablePods' cross-topology index and gated count are held to a walk of every parked
  pod, both on their own and inside a SchedulingQueue driven at random.
- Its gated pods grouped by gating plugin give the pods a walk with upstream's skip of gated
  pods (event not registered by the gating plugin) would give, in the same order.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler import testing
from scheduler.api.objects import PodView
from scheduler.framework.events import NODE_ADD, ClusterEvent
from scheduler.queue.event_labels import POD_POPPED
from scheduler.queue.in_flight import InFlight, RecordedEvent
from scheduler.queue.scheduling_queue import SchedulingQueue
from scheduler.queue.types import QueuedPodInfo
from scheduler.queue.unschedulable import UnschedulablePods
from tests.scheduler_queue.conftest import FakeClock, make_pod, priority_less, scheduling_gates


class ReferenceInFlight:
    """The implementation InFlight replaced (a dict's first key, `del log[:n]`)."""

    def __init__(self) -> None:
        self.changes: Counter[str] = Counter()
        self._pods: dict[str, tuple[QueuedPodInfo, int]] = {}
        self._log: list[RecordedEvent] = []
        self._base = 0

    def start(self, pinfo: QueuedPodInfo) -> None:
        if self._pods.pop(pinfo.uid, None) is None:
            self.changes[POD_POPPED] += 1
        self._pods[pinfo.uid] = (pinfo, self._base + len(self._log))

    def record(self, event: ClusterEvent, old: Any, new: Any, label: str) -> bool:
        if not self._pods:
            return False
        self._log.append(RecordedEvent(event, old, new, label))
        self.changes[label] += 1
        return True

    def events_since_popped(self, uid: str) -> list[RecordedEvent]:
        found = self._pods.get(uid)
        return [] if found is None else self._log[found[1] - self._base :]

    def finish(self, uid: str) -> None:
        found = self._pods.pop(uid, None)
        if found is not None:
            self.changes[POD_POPPED] -= 1
        if not self._pods:
            self._trim(len(self._log))
        elif found is not None:
            oldest = next(iter(self._pods.values()))[1]
            if oldest > self._base:
                self._trim(oldest - self._base)

    def _trim(self, count: int) -> None:
        for event in self._log[:count]:
            self.changes[event.label] -= 1
        del self._log[:count]
        self._base += count


UIDS = [f"p{i}" for i in range(6)]
in_flight_op = st.one_of(
    st.tuples(st.just("start"), st.sampled_from(UIDS)),
    st.tuples(st.just("record"), st.sampled_from(["A", "B", "C"])),
    st.tuples(st.just("finish"), st.sampled_from(UIDS)),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(in_flight_op, max_size=400))
def test_in_flight_matches_the_plain_list(ops: list[tuple[str, str]]) -> None:
    changes: Counter[str] = Counter()

    def on_change(label: str, delta: int) -> None:
        changes[label] += delta

    fast, reference = InFlight(on_change), ReferenceInFlight()
    pods = {uid: QueuedPodInfo(pod=make_pod(uid), timestamp=0.0) for uid in UIDS}
    for kind, arg in ops:
        if kind == "start":
            fast.start(pods[arg])
            reference.start(pods[arg])
        elif kind == "record":
            assert fast.record(NODE_ADD, None, arg, arg) == reference.record(
                NODE_ADD, None, arg, arg
            )
        else:
            fast.finish(pods[arg].uid)
            reference.finish(pods[arg].uid)
        for uid in pods:
            assert fast.events_since_popped(f"uid-{uid}") == reference.events_since_popped(
                f"uid-{uid}"
            )
        assert fast.log_length() == len(reference._log)
        assert +changes == +reference.changes


def test_in_flight_trim_releases_events_and_stays_short() -> None:
    """Thousands of pods binding at once, finishing in order: the log holds only the events
    of the pods still in flight, and trimmed events are no longer referenced."""
    flight = InFlight()
    infos = [QueuedPodInfo(pod=make_pod(f"p{i}"), timestamp=0.0) for i in range(5000)]
    for info in infos:
        flight.start(info)
        flight.record(NODE_ADD, None, info.uid, "NodeAdd")
    for done, info in enumerate(infos[:-1], start=1):
        flight.finish(info.uid)
        assert flight.log_length() == len(infos) - done
    assert len(flight._log) <= 2 * flight.log_length() + 64
    flight.finish(infos[-1].uid)
    assert flight.log_length() == 0 and not flight._log


def _walk_candidates(parked: UnschedulablePods, assigned: PodView) -> list[QueuedPodInfo]:
    """Upstream's getUnschedulablePodsWithCrossTopologyTerm (v1.36
    pkg/scheduler/backend/queue/scheduling_queue.go): walk every parked pod, taking those
    PodTopologySpread rejected in the assigned pod's namespace and those with a required
    affinity term the assigned pod matches, whichever plugin rejected them."""
    return [
        pinfo
        for pinfo in parked.values()
        if (
            "PodTopologySpread" in pinfo.unschedulable_plugins
            and pinfo.pod.namespace == assigned.namespace
        )
        or any(term.matches(assigned, None) for term in pinfo.pod.pod_affinity.required_affinity)
    ]


# A required pod affinity term selecting `app: web` pods in the pod's own namespace.
WEB_AFFINITY = {
    "podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "labelSelector": {"matchLabels": {"app": "web"}},
                "topologyKey": "kubernetes.io/hostname",
            }
        ]
    }
}


def _parked_pod(index: int, namespace: str, gates: tuple[str, ...] = (), rv: str = "1") -> PodView:
    """Pods with an odd index carry WEB_AFFINITY."""
    return testing.make_pod(
        f"p{index}",
        namespace=namespace,
        uid=f"uid-p{index}",
        resource_version=rv,
        requests={"cpu": "100m"},
        scheduling_gates=gates,
        affinity=WEB_AFFINITY if index % 2 else None,
    )


def _assigned_pods(namespace: str) -> list[PodView]:
    """Bound pods an affinity term may or may not match."""
    return [
        testing.make_pod(f"bound-{app}", namespace=namespace, labels={"app": app}, node_name="n1")
        for app in ("web", "db")
    ]


REJECTOR_SETS = [
    set(),
    {"NodeResourcesFit"},
    {"InterPodAffinity"},
    {"PodTopologySpread"},
    {"InterPodAffinity", "PodTopologySpread"},
    {"PodTopologySpread", "TaintToleration"},
]
NAMESPACES = ["a", "b"]
GATING_PLUGINS = ["SchedulingGates", "Other", ""]
parked_op = st.one_of(
    st.tuples(
        st.just("put"),
        st.integers(0, 7),
        st.sampled_from(NAMESPACES),
        st.integers(0, len(REJECTOR_SETS) - 1),
        st.sampled_from([None, *GATING_PLUGINS]),
    ),
    st.tuples(st.just("pop"), st.integers(0, 7), st.none(), st.none(), st.none()),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(parked_op, max_size=80))
def test_unschedulable_index_matches_a_walk(ops: list[tuple[Any, ...]]) -> None:
    parked = UnschedulablePods()
    infos: dict[int, QueuedPodInfo] = {}
    for kind, index, namespace, rejectors, gated in ops:
        if kind == "pop":
            parked.pop(f"uid-p{index}")
            continue
        # The queue mutates a parked pod's info in place before parking it again.
        info = infos.get(index)
        if info is None or info.uid not in parked:
            info = infos[index] = QueuedPodInfo(pod=_parked_pod(index, namespace), timestamp=0.0)
        info.unschedulable_plugins = set(REJECTOR_SETS[rejectors])
        info.gated = gated is not None
        info.gating_plugin = gated or ""
        parked.put(info)
        for ns in NAMESPACES:
            for assigned in _assigned_pods(ns):
                expected = _walk_candidates(parked, assigned)
                assert parked.cross_topology_candidates(assigned) == expected
        assert parked.gated_count == sum(1 for p in parked.values() if p.gated)
        for lifted in [set(), {"SchedulingGates"}, {"Other", ""}, set(GATING_PLUGINS)]:
            walk = [p for p in parked.values() if not p.gated or p.gating_plugin in lifted]
            assert parked.candidates(lifted.__contains__) == walk


queue_op = st.one_of(
    st.tuples(st.just("add"), st.integers(0, 7), st.sampled_from(NAMESPACES), st.booleans()),
    st.tuples(st.just("fail"), st.integers(0, len(REJECTOR_SETS) - 1), st.none(), st.none()),
    st.tuples(st.just("bound"), st.sampled_from(NAMESPACES), st.none(), st.none()),
    st.tuples(st.just("ungate"), st.integers(0, 7), st.none(), st.none()),
    st.tuples(st.just("flush"), st.none(), st.none(), st.none()),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(queue_op, max_size=60))
def test_queue_moves_the_pods_a_walk_would(ops: list[tuple[Any, ...]]) -> None:
    asyncio.run(_drive_queue(ops))


async def _drive_queue(ops: list[tuple[Any, ...]]) -> None:
    clock = FakeClock()
    queue = SchedulingQueue(
        less=priority_less, pre_enqueue=scheduling_gates, hints=None, clock=clock
    )
    namespaces: dict[int, str] = {}
    for kind, arg, namespace, gated in ops:
        clock.advance(1)
        if kind == "add":
            namespaces.setdefault(arg, namespace)
            gates = ("g",) if gated else ()
            queue.add(_parked_pod(arg, namespaces[arg], gates))
        elif kind == "ungate" and arg in namespaces:
            queue.update(None, _parked_pod(arg, namespaces[arg], rv="2"))
        elif kind == "fail":
            pinfo = queue.try_pop()
            if pinfo is not None:
                pinfo.unschedulable_plugins = set(REJECTOR_SETS[arg])
                queue.add_unschedulable_if_not_present(pinfo, queue.scheduling_cycle)
        elif kind == "bound":
            for assigned in _assigned_pods(arg):
                expected = _walk_candidates(queue._unschedulable, assigned)
                assert queue._cross_topology_candidates(assigned) == expected
            queue.assigned_pod_added(_assigned_pods(arg)[0])
        else:
            clock.advance(400)
            queue.flush_unschedulable_left_over()
            queue.flush_backoff_completed()
        parked = queue._unschedulable
        assert queue.counts()["gated"] == sum(1 for p in parked.values() if p.gated)
        for ns in NAMESPACES:
            for assigned in _assigned_pods(ns):
                expected = _walk_candidates(parked, assigned)
                assert parked.cross_topology_candidates(assigned) == expected
