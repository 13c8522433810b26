"""The unschedulable pods (upstream's unschedulablePods, backend/queue/scheduling_queue.go), with
indexes so that what runs per event or per scrape does not walk every one of them.

Every bound pod is an AssignedPodAdd event, and upstream's getUnschedulablePodsWithCrossTopologyTerm
walks all unschedulable pods to find those an assigned pod could help: rejected by
PodTopologySpread and in the pod's namespace, or with a required pod affinity term the pod
matches (whichever plugin rejected them). With tens of thousands of unschedulable pods that walk
ran once per binding. Here the pods PodTopologySpread rejected and the pods with required
affinity terms are indexed when they are parked, and the candidates come back in the order a
walk of all pods would have met them (parking order, as a dict keeps it), so which pods move,
and in which order, is unchanged.
The number of gated pods is counted as they come and go (scheduler_pending_pods reads it at
every scrape). Gated pods are also kept apart by the plugin that gates them: upstream's
movePodsToActiveOrBackoffQueue skips a gated pod when the event is not one its gating plugin
registered, and every assigned pod's deletion walks all unschedulable pods, so with 10,000
gated pods (scheduler_perf's SchedulingWhileGated) a walk that met every gated pod cost ~70 ms
per deletion; ``candidates`` leaves out whole groups of gated pods instead.

A parked QueuedPodInfo must not change its rejectors, namespace or `gated` flag without being
parked again (``put``): the queue changes them only on the way out or back in.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, ValuesView
from operator import itemgetter
from typing import NamedTuple

from scheduler.api.objects import PodView
from scheduler.queue.types import QueuedPodInfo

POD_TOPOLOGY_SPREAD = "PodTopologySpread"


class _Indexed(NamedTuple):
    """How a parked pod was indexed when parked (its QueuedPodInfo may change afterwards)."""

    seq: int  # parking order
    gated: bool
    gating_plugin: str  # the plugin that gated it ("" when not gated)
    affinity: bool  # has required pod affinity terms
    spread_namespace: str | None  # rejected by PodTopologySpread


class UnschedulablePods:
    """uid → QueuedPodInfo in parking order, plus the cross-topology indexes and gated count."""

    __slots__ = (
        "_affinity",
        "_gated",
        "_gated_by_plugin",
        "_indexed",
        "_pods",
        "_seq",
        "_spread",
        "_ungated",
    )

    def __init__(self) -> None:
        self._pods: dict[str, QueuedPodInfo] = {}
        self._indexed: dict[str, _Indexed] = {}
        # Parking sequence numbers; a parked pod parked again keeps its number, as a dict keeps
        # the position of a key that is set again.
        self._seq = itertools.count()
        # uid → sequence number of pods with required pod affinity terms
        self._affinity: dict[str, int] = {}
        # namespace → uid → sequence number of pods PodTopologySpread rejected
        self._spread: dict[str, dict[str, int]] = {}
        self._gated = 0
        # uid → sequence number of the pods not gated, and by gating plugin of those gated
        self._ungated: dict[str, int] = {}
        self._gated_by_plugin: dict[str, dict[str, int]] = {}

    def __len__(self) -> int:
        return len(self._pods)

    def __contains__(self, uid: object) -> bool:
        return uid in self._pods

    def __iter__(self) -> Iterator[str]:
        return iter(self._pods)

    def get(self, uid: str) -> QueuedPodInfo | None:
        return self._pods.get(uid)

    def values(self) -> ValuesView[QueuedPodInfo]:
        return self._pods.values()

    @property
    def gated_count(self) -> int:
        return self._gated

    def put(self, pinfo: QueuedPodInfo) -> None:
        """Park (or park again) a pod, indexing it by what it is now."""
        uid = pinfo.uid
        previous = self._indexed.get(uid)
        if previous is not None:
            self._unindex(uid, previous)
            seq = previous.seq
        else:
            seq = next(self._seq)
        self._pods[uid] = pinfo
        self._index(pinfo, seq)

    def pop(self, uid: str) -> QueuedPodInfo | None:
        pinfo = self._pods.pop(uid, None)
        if pinfo is not None:
            self._unindex(uid, self._indexed.pop(uid))
        return pinfo

    def cross_topology_candidates(
        self, assigned: PodView, namespace_labels: Mapping[str, str] | None = None
    ) -> list[QueuedPodInfo]:
        """Pods the `assigned` pod may help, in parking order: rejected by PodTopologySpread
        and in its namespace, or with a required pod affinity term it matches
        (`namespace_labels`: the labels of its namespace, for terms' namespaceSelectors)."""
        affinity = self._affinity
        spread = self._spread.get(assigned.namespace)
        if not affinity and not spread:
            return []
        pods = self._pods
        found = list(spread.items()) if spread else []
        for uid, seq in affinity.items():
            if spread and uid in spread:
                continue
            terms = pods[uid].pod.pod_affinity.required_affinity
            if any(term.matches(assigned, namespace_labels) for term in terms):
                found.append((uid, seq))
        found.sort(key=itemgetter(1))  # nearly sorted already: linear in practice
        return [pods[uid] for uid, _ in found]

    def candidates(self, gate_may_lift: Callable[[str], bool]) -> list[QueuedPodInfo]:
        """The pods an event may move, in parking order: every pod not gated, and the gated
        pods whose gating plugin `gate_may_lift` names (upstream's
        ``pInfo.Gated() && !MatchAnyClusterEvent(event, pInfo.GatingPluginEvents)`` skip,
        pkg/scheduler/backend/queue/scheduling_queue.go, decided once per gating plugin)."""
        found = list(self._ungated.items())
        for plugin, by_uid in self._gated_by_plugin.items():
            if gate_may_lift(plugin):
                found.extend(by_uid.items())
        found.sort(key=itemgetter(1))  # nearly sorted already: linear in practice
        pods = self._pods
        return [pods[uid] for uid, _ in found]

    def _index(self, pinfo: QueuedPodInfo, seq: int) -> None:
        uid = pinfo.uid
        rejectors = pinfo.unschedulable_plugins
        affinity = bool(pinfo.pod.pod_affinity.required_affinity)
        spread_namespace = None
        if affinity:
            self._affinity[uid] = seq
        if POD_TOPOLOGY_SPREAD in rejectors:
            spread_namespace = pinfo.pod.namespace
            self._spread.setdefault(spread_namespace, {})[uid] = seq
        gating_plugin = ""
        if pinfo.gated:
            self._gated += 1
            gating_plugin = pinfo.gating_plugin
            self._gated_by_plugin.setdefault(gating_plugin, {})[uid] = seq
        else:
            self._ungated[uid] = seq
        self._indexed[uid] = _Indexed(seq, pinfo.gated, gating_plugin, affinity, spread_namespace)

    def _unindex(self, uid: str, indexed: _Indexed) -> None:
        if indexed.affinity:
            del self._affinity[uid]
        if indexed.spread_namespace is not None:
            by_uid = self._spread[indexed.spread_namespace]
            del by_uid[uid]
            if not by_uid:
                del self._spread[indexed.spread_namespace]
        if indexed.gated:
            self._gated -= 1
            gated = self._gated_by_plugin[indexed.gating_plugin]
            del gated[uid]
            if not gated:
                del self._gated_by_plugin[indexed.gating_plugin]
        else:
            del self._ungated[uid]
