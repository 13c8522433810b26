"""Per-node aggregate the plugins read (upstream framework.NodeInfo, framework/types.go).

Every change takes a fresh number from the `Generations` counter the NodeInfo was built with (one
per cache), so the cache can tell which nodes changed since a snapshot was last updated.

The pods are an append-only log shared with the copies a snapshot takes: a removal marks the
pod's entry with the generation that removed it instead of taking it out, and a NodeInfo sees the
entries of its log (up to the length it was copied at) not removed as of its own generation. So
`copy_into`, which runs for the changed nodes before every scheduling cycle, copies no pod list,
and a removal does not walk the node's pods; the log is compacted (into new lists, the copies
keep the old ones) once a sixteenth of it is removed. Upstream copies `NodeInfo.Pods` per
snapshot and walks it per removal, which in Python cost ~35 % of the scheduler's time with
40,000 pods on one node (scheduler_perf's SchedulingWhileGated binds every pod to one node, and
a bound pod is removed and added again when its binding and its Running status are seen).
`pods`, the list plugins read, is built from the log when first read and kept until the next
change.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import NamedTuple

from scheduler.api.objects import HostPort, NodeView, PodView, Resource
from scheduler.api.pod import pod_has_affinity, pod_has_required_anti_affinity

DEFAULT_BIND_ALL_HOST_IP = "0.0.0.0"
# "removed at generation" of a log entry whose pod is still on the node
_LIVE = sys.maxsize
# Compact a log once its removed entries outnumber a sixteenth of its pods: a removed entry
# keeps its PodView alive, and most removed views are otherwise garbage (a bound pod's update
# replaces its view), so what a log may hold beyond its pods is memory, on every node. A
# compaction is a pass over the log: about seventeen entries per removal on a crowded node, and
# on a node with a few pods about what taking the pod out of a list cost.
_COMPACT_SHIFT = 4
DEFAULT_PROTOCOL = "TCP"


class Generations:
    """A monotonic counter shared by the NodeInfos of one cache (upstream's nextGeneration)."""

    __slots__ = ("current",)

    def __init__(self, start: int = 0) -> None:
        self.current = start

    def next(self) -> int:
        self.current += 1
        return self.current


class ImageStateSummary(NamedTuple):
    """An image on a node: its size and how many nodes in the cluster have it (ImageLocality)."""

    size: int
    num_nodes: int


class UsedPorts:
    """Host ports in use on a node: ip → {(protocol, port): number of pods using it}.

    Upstream's HostPortInfo is a set; counting users keeps a port in use while any pod still
    holds it (two pods can end up on one port when a kubelet admits them despite the Filter).
    """

    __slots__ = ("_by_ip",)

    def __init__(self, by_ip: dict[str, dict[tuple[str, int], int]] | None = None) -> None:
        self._by_ip: dict[str, dict[tuple[str, int], int]] = by_ip if by_ip is not None else {}

    def add(self, port: HostPort) -> None:
        ip, key = _sanitize(port)
        entries = self._by_ip.setdefault(ip, {})
        entries[key] = entries.get(key, 0) + 1

    def remove(self, port: HostPort) -> None:
        ip, key = _sanitize(port)
        entries = self._by_ip.get(ip)
        if entries is None or key not in entries:
            return
        if entries[key] <= 1:
            del entries[key]
            if not entries:
                del self._by_ip[ip]
        else:
            entries[key] -= 1

    def conflicts(self, port: HostPort) -> bool:
        """Upstream's HostPortInfo.CheckConflict: 0.0.0.0 conflicts with every ip."""
        if port.port <= 0:
            return False
        ip, key = _sanitize(port)
        if ip == DEFAULT_BIND_ALL_HOST_IP:
            return any(key in entries for entries in self._by_ip.values())
        for candidate in (ip, DEFAULT_BIND_ALL_HOST_IP):
            entries = self._by_ip.get(candidate)
            if entries is not None and key in entries:
                return True
        return False

    def copy(self) -> UsedPorts:
        return UsedPorts({ip: dict(entries) for ip, entries in self._by_ip.items()})

    def as_set(self) -> set[tuple[str, str, int]]:
        """(ip, protocol, port) triples in use."""
        return {(ip, proto, port) for ip, entries in self._by_ip.items() for proto, port in entries}

    def __len__(self) -> int:
        return sum(len(entries) for entries in self._by_ip.values())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, UsedPorts):
            return NotImplemented
        return self._by_ip == other._by_ip

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"UsedPorts({sorted(self.as_set())})"


def _sanitize(port: HostPort) -> tuple[str, tuple[str, int]]:
    return (port.ip or DEFAULT_BIND_ALL_HOST_IP, (port.protocol or DEFAULT_PROTOCOL, port.port))


class NodeInfo:
    """Aggregated information about one node and the (bound or assumed) pods on it."""

    __slots__ = (
        "_generations",
        "_live",
        "_log_len",
        "_log_pods",
        "_log_removed",
        "_pod_count",
        "_pod_list",
        "allocatable",
        "counted_generation",
        "generation",
        "image_states",
        "node",
        "non_zero_requested",
        "pods_with_affinity",
        "pods_with_required_anti_affinity",
        "pvc_ref_counts",
        "requested",
        "used_ports",
    )

    def __init__(
        self,
        node: NodeView | None = None,
        pods: Iterable[PodView] = (),
        *,
        generations: Generations | None = None,
    ) -> None:
        self._generations = generations if generations is not None else Generations()
        self.node: NodeView | None = None
        # The pod log (see the module's docstring): pods in the order added, and the generation
        # that removed each (_LIVE while on the node); this NodeInfo sees the first _log_len.
        self._log_pods: list[PodView] = []
        self._log_removed: list[int] = []
        self._log_len = 0
        # uid → index in the log of the pods on the node; None while the log is a copy's
        # (shared with the NodeInfo it was copied from, so not to be written)
        self._live: dict[str, int] | None = {}
        self._pod_count = 0
        # the pods as a list (None: not built since the last change, see `pods`)
        self._pod_list: list[PodView] | None = []
        self.pods_with_affinity: list[PodView] = []
        self.pods_with_required_anti_affinity: list[PodView] = []
        self.used_ports = UsedPorts()
        self.requested = Resource()
        # Only cpu and memory, with upstream's defaults for containers that request none.
        self.non_zero_requested = Resource()
        self.allocatable = Resource()
        self.image_states: dict[str, ImageStateSummary] = {}
        # "namespace/claim" → number of pods on this node using it.
        self.pvc_ref_counts: dict[str, int] = {}
        self.generation = self._generations.next()
        # The generation of the last change to what the node's NodeTable row holds (everything
        # but the swap of a pod's view for one that counts the same: see replace_pod).
        self.counted_generation = self.generation
        if node is not None:
            self.set_node(node)
        for pod in pods:
            self.add_pod(pod)

    @property
    def pods(self) -> list[PodView]:
        """The pods, in the order they were added (removals keep the others' order). Read-only:
        change them through add_pod / remove_pod."""
        pods = self._pod_list
        if pods is None:
            length = self._log_len
            logged = self._log_pods
            if length == self._pod_count:  # nothing removed among the entries seen
                pods = logged[:length]
            else:
                removed = self._log_removed
                if length < len(logged):
                    logged, removed = logged[:length], removed[:length]
                generation = self.generation
                pods = [pod for pod, gone in zip(logged, removed, strict=True) if gone > generation]
            self._pod_list = pods
        return pods

    @property
    def num_pods(self) -> int:
        """len(self.pods), without building the list."""
        return self._pod_count

    def _own_log(self) -> dict[str, int]:
        """The uid index of a log this NodeInfo may write: a copy first takes its own log."""
        live = self._live
        if live is None:
            pods = list(self.pods)
            self._log_pods = pods
            self._log_removed = [_LIVE] * len(pods)
            self._log_len = len(pods)
            live = self._live = {pod.uid: index for index, pod in enumerate(pods)}
        return live

    def _compact_log(self) -> None:
        """Drop removed entries into new lists (copies sharing the old ones keep them)."""
        removed = self._log_removed
        pods = [pod for pod, gone in zip(self._log_pods, removed, strict=True) if gone == _LIVE]
        self._log_pods = pods
        self._log_removed = [_LIVE] * len(pods)
        self._log_len = len(pods)
        self._live = {pod.uid: index for index, pod in enumerate(pods)}

    @property
    def node_name(self) -> str:
        return self.node.name if self.node is not None else ""

    def set_node(self, node: NodeView) -> None:
        self.node = node
        self.allocatable = node.allocatable.clone()
        self.generation = self.counted_generation = self._generations.next()

    def remove_node(self) -> None:
        """Forget the node object; pods stay (upstream keeps them until their delete events)."""
        self.node = None
        self.allocatable = Resource()
        self.generation = self.counted_generation = self._generations.next()

    def add_pod(self, pod: PodView) -> None:
        """Add a pod not on this node yet (a pod's uid is on a node at most once: the cache
        removes the old version of a pod before adding the new one)."""
        live = self._own_log()
        if pod.uid in live:
            raise ValueError(f"pod {pod.key} ({pod.uid}) is already on node {self.node_name!r}")
        live[pod.uid] = self._log_len
        self._log_pods.append(pod)
        self._log_removed.append(_LIVE)
        self._log_len += 1
        self._pod_count += 1
        if self._pod_list is not None:
            self._pod_list.append(pod)
        if pod_has_affinity(pod):
            self.pods_with_affinity.append(pod)
        if pod_has_required_anti_affinity(pod):
            self.pods_with_required_anti_affinity.append(pod)
        self._update(pod, 1)

    def remove_pod(self, pod: PodView) -> None:
        """Remove the pod with `pod.uid`; KeyError if it is not on this node."""
        uid = pod.uid
        _remove_by_uid(self.pods_with_affinity, uid)
        _remove_by_uid(self.pods_with_required_anti_affinity, uid)
        index = self._own_log().pop(uid, None)
        if index is None:
            raise KeyError(f"no pod {pod.key} ({uid}) on node {self.node_name!r}")
        stored = self._log_pods[index]
        self._pod_count -= 1
        self._pod_list = None
        # Undo what the stored view added: the caller's view may be a newer version.
        self._update(stored, -1)
        # Copies taken before this generation still see the pod.
        self._log_removed[index] = self.generation
        if self._log_len - self._pod_count > self._pod_count >> _COMPACT_SHIFT:
            self._compact_log()

    def replace_pod(self, pod: PodView) -> bool:
        """Put `pod` in place of the stored view of its uid, when the two count the same
        (`counts_the_same`): remove_pod + add_pod, the pod moving to the end of the list as
        there, without recounting. False, and nothing changed, otherwise.

        The confirmation of a bound pod and its status updates are such swaps: two of the three
        watch events of every scheduled pod. The generation moves on (a snapshot must show the
        new view: preemption reads a victim's start time from its status), the counted
        generation does not (the node's table row stays as it is)."""
        live = self._own_log()
        index = live.get(pod.uid)
        if index is None or not counts_the_same(self._log_pods[index], pod):
            return False
        self.generation = self._generations.next()
        self._log_removed[index] = self.generation  # copies taken before keep the old view
        live[pod.uid] = self._log_len
        self._log_pods.append(pod)
        self._log_removed.append(_LIVE)
        self._log_len += 1
        self._pod_list = None
        if self.pods_with_affinity:
            _replace_by_uid(self.pods_with_affinity, pod)
        if self.pods_with_required_anti_affinity:
            _replace_by_uid(self.pods_with_required_anti_affinity, pod)
        if self._log_len - self._pod_count > self._pod_count >> _COMPACT_SHIFT:
            self._compact_log()
        return True

    def ports_conflict(self, host_ports: Iterable[HostPort]) -> bool:
        """Whether any of `host_ports` is already in use on this node (NodePorts' fitsPorts)."""
        used = self.used_ports
        return any(used.conflicts(port) for port in host_ports)

    def snapshot(self) -> NodeInfo:
        """A copy whose containers can change without touching this one (pods are shared)."""
        copy = NodeInfo.__new__(NodeInfo)
        self.copy_into(copy)
        return copy

    clone = snapshot

    def copy_into(self, target: NodeInfo) -> None:
        """Make `target` a snapshot of this NodeInfo, keeping `target`'s identity."""
        target._generations = self._generations
        target.node = self.node
        # The log is shared, not copied: the target sees what this NodeInfo sees now.
        target._log_pods = self._log_pods
        target._log_removed = self._log_removed
        target._log_len = self._log_len
        target._live = None
        target._pod_count = self._pod_count
        target._pod_list = None
        target.pods_with_affinity = list(self.pods_with_affinity)
        target.pods_with_required_anti_affinity = list(self.pods_with_required_anti_affinity)
        target.used_ports = self.used_ports.copy()
        target.requested = self.requested.clone()
        target.non_zero_requested = self.non_zero_requested.clone()
        target.allocatable = self.allocatable.clone()
        target.image_states = dict(self.image_states)
        target.pvc_ref_counts = dict(self.pvc_ref_counts)
        target.generation = self.generation
        target.counted_generation = self.counted_generation

    def _update(self, pod: PodView, sign: int) -> None:
        requests = pod.requests
        requested = self.requested
        if sign > 0:
            requested.add(requests)
        else:
            requested.subtract(requests)
            # Drop scalar entries that went back to zero so equal NodeInfos compare equal.
            for name in [n for n, amount in requested.scalar.items() if amount == 0]:
                del requested.scalar[name]
        self.non_zero_requested.milli_cpu += sign * pod.non_zero_milli_cpu
        self.non_zero_requested.memory += sign * pod.non_zero_memory
        for port in pod.host_ports:
            if sign > 0:
                self.used_ports.add(port)
            else:
                self.used_ports.remove(port)
        if pod.pvc_names:
            counts = self.pvc_ref_counts
            for claim in pod.pvc_names:
                key = f"{pod.namespace}/{claim}"
                count = counts.get(key, 0) + sign
                if count > 0:
                    counts[key] = count
                else:
                    counts.pop(key, None)
        self.generation = self.counted_generation = self._generations.next()

    def __repr__(self) -> str:
        return (
            f"NodeInfo(node={self.node_name!r}, pods={[p.key for p in self.pods]}, "
            f"requested={self.requested!r}, generation={self.generation})"
        )


def _index_by_uid(pods: list[PodView], uid: str) -> int:
    for index, pod in enumerate(pods):
        if pod.uid == uid:
            return index
    return -1


def counts_the_same(stored: PodView, pod: PodView) -> bool:
    """Whether a NodeInfo and its NodeTable row count `pod` exactly as `stored`: the same node,
    requests, ports, claims, priority, and what the topology indexes group pods by (namespace,
    labels, terminating, inter-pod affinity terms). An update that changed only the status or
    the metadata's bookkeeping shares the spec's derived values with the previous view
    (pod_view_from_dict), so the identity checks settle most cases."""
    return (
        stored.node_name == pod.node_name
        and (stored.requests is pod.requests or stored.requests == pod.requests)
        and stored.non_zero_milli_cpu == pod.non_zero_milli_cpu
        and stored.non_zero_memory == pod.non_zero_memory
        and stored.priority == pod.priority
        and stored.namespace == pod.namespace
        and stored.deletion_timestamp == pod.deletion_timestamp
        and (stored.host_ports is pod.host_ports or stored.host_ports == pod.host_ports)
        and (stored.pvc_names is pod.pvc_names or stored.pvc_names == pod.pvc_names)
        and (stored.pod_affinity is pod.pod_affinity or stored.pod_affinity == pod.pod_affinity)
        and pod_has_affinity(stored) == pod_has_affinity(pod)
        and pod_has_required_anti_affinity(stored) == pod_has_required_anti_affinity(pod)
        and stored.labels == pod.labels
    )


def _replace_by_uid(pods: list[PodView], pod: PodView) -> None:
    """The new view at the end, as remove_pod + add_pod would leave it."""
    index = _index_by_uid(pods, pod.uid)
    if index >= 0:
        pods.pop(index)
        pods.append(pod)


def _remove_by_uid(pods: list[PodView], uid: str) -> None:
    index = _index_by_uid(pods, uid)
    if index >= 0:
        pods.pop(index)
