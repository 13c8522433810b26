"""The scheduler cache: nodes, bound pods and assumed pods (upstream's internal/cache/cache.go).

Pod life cycle in the cache, as upstream:

    assume_pod ──▶ Assumed ──finish_binding──▶ Assumed, binding finished ──(ttl)──▶ Expired
                      │  └─add_pod (the watch shows it bound)──▶ Added ◀── add_pod (never assumed)
                      └─forget_pod──▶ gone                          └─ remove_pod ──▶ gone

Deviations, chosen so that an informer replaying events after a relist can never corrupt it:
- `add_pod` and `update_pod` are the same upsert (a pod moving nodes is moved, where upstream
  exits the process); a terminal pod (Succeeded / Failed) is removed; an unbound pod is ignored.
  `update_pod` / `update_node` take (old, new) like upstream, or just the new object.
- `remove_pod` of an unknown pod is a no-op that returns False.
- Host ports are counted per pod (see UsedPorts), not kept as a set.
Assumed pods expire only when a ttl is configured (upstream today: no expiry); call
`cleanup_expired_assumed_pods` periodically when one is.

Everything here is synchronous and runs on the event loop thread, so no locking is needed.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from scheduler.api.objects import NodeView, PodView
from scheduler.cache.node_info import Generations, ImageStateSummary, NodeInfo
from scheduler.cache.node_tree import NodeTree
from scheduler.cache.snapshot import Snapshot


def _patch(infos: list[NodeInfo], changes: list[tuple[NodeInfo, bool]]) -> None:
    """Add (True) or drop (False) NodeInfos of a snapshot's affinity list, in place. The list
    then follows the order nodes gained such pods, not the node order (its users only sum)."""
    if not changes:
        return
    dropped = {id(info) for info, gained in changes if not gained}
    if dropped:
        infos[:] = [info for info in infos if id(info) not in dropped]
    infos.extend(info for info, gained in changes if gained)


class CacheError(Exception):
    """A call that contradicts the cache's state (assuming a pod twice, forgetting a bound pod)."""


@dataclass(slots=True)
class _PodState:
    pod: PodView
    # Set by finish_binding when a ttl is configured; the pod expires after it.
    deadline: float | None = None
    binding_finished: bool = False


@dataclass(slots=True)
class CacheDump:
    """A consistent copy of the cache for debugging (upstream's Dump)."""

    nodes: dict[str, NodeInfo] = field(default_factory=dict)
    assumed_pods: set[str] = field(default_factory=set)


@dataclass(slots=True)
class _Image:
    size: int
    nodes: set[str] = field(default_factory=set)


class Cache:
    def __init__(
        self, *, ttl: float | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._ttl = ttl
        self._clock = clock
        self._generations = Generations()
        # Node name → NodeInfo, least recently changed first; includes "imaginary" nodes (pods
        # whose node is not known yet, or was deleted while pods remain), whose node is None.
        self._nodes: OrderedDict[str, NodeInfo] = OrderedDict()
        self._tree = NodeTree()
        self._pod_states: dict[str, _PodState] = {}
        self._assumed: set[str] = set()
        self._images: dict[str, _Image] = {}
        # Image name → generation at which the set of nodes having it last changed.
        self._image_generation: dict[str, int] = {}
        self._max_image_generation = 0
        self._default_snapshot = Snapshot()

    # Nodes

    def add_node(self, node: NodeView) -> NodeInfo:
        """Add or update a node (upstream's AddNode / UpdateNode)."""
        info = self._nodes.get(node.name)
        if info is None:
            info = NodeInfo(generations=self._generations)
            self._nodes[node.name] = info
        previous = info.node
        info.set_node(node)
        if previous is not None:
            self._remove_node_images(previous)
        self._tree.add(node.name, node.labels)
        self._add_node_images(node)
        # As of this update; snapshots get current counts (see update_snapshot).
        info.image_states = self._image_summary(node)
        self._touch(node.name)
        return info

    def update_node(self, old: NodeView, new: NodeView | None = None) -> NodeInfo:
        """Upstream's UpdateNode(old, new); `update_node(node)` works too (an upsert)."""
        if new is None:
            return self.add_node(old)
        if old.name != new.name:
            self.remove_node(old)
        return self.add_node(new)

    def remove_node(self, node: NodeView | str) -> bool:
        """Remove a node; its NodeInfo stays (without a node) while pods remain on it."""
        name = node if isinstance(node, str) else node.name
        info = self._nodes.get(name)
        if info is None or info.node is None:
            return False
        previous = info.node
        info.remove_node()
        self._remove_node_images(previous)
        info.image_states = {}
        self._tree.remove(name)
        if info.num_pods:
            self._touch(name)
        else:
            del self._nodes[name]
        return True

    # Pods

    def add_pod(self, pod: PodView) -> None:
        """A bound pod the watch reports (added or updated); confirms it if it was assumed."""
        if not pod.node_name:
            return
        if pod.is_terminal:
            self.remove_pod(pod)
            return
        state = self._pod_states.get(pod.uid)
        if state is None:
            self._add_to_node(pod)
            self._pod_states[pod.uid] = _PodState(pod)
            return
        info = self._nodes.get(pod.node_name)
        if info is not None and info.replace_pod(pod):  # counted as before: a status update
            self._touch(pod.node_name)
        else:
            self._remove_from_node(state.pod)
            self._add_to_node(pod)
        state.pod = pod
        if pod.uid in self._assumed:
            self._assumed.discard(pod.uid)
            state.deadline = None

    def update_pod(self, old: PodView, new: PodView | None = None) -> None:
        """Upstream's UpdatePod(old, new); `update_pod(pod)` works too (same as add_pod)."""
        if new is None:
            self.add_pod(old)
            return
        if old.uid != new.uid:  # deleted and recreated under the same name
            self.remove_pod(old)
        self.add_pod(new)

    def remove_pod(self, pod: PodView) -> bool:
        """Remove a pod (deleted, or turned terminal); False if the cache does not have it."""
        state = self._pod_states.pop(pod.uid, None)
        if state is None:
            return False
        self._assumed.discard(pod.uid)
        self._remove_from_node(state.pod)
        return True

    def assume_pod(self, pod: PodView) -> None:
        """Count `pod` (whose node_name is the chosen node) before the API confirms it."""
        if not pod.node_name:
            raise CacheError(f"pod {pod.key} has no node to be assumed on")
        if pod.uid in self._pod_states:
            raise CacheError(f"pod {pod.key} ({pod.uid}) is in the cache, so can't be assumed")
        self._add_to_node(pod)
        self._pod_states[pod.uid] = _PodState(pod)
        self._assumed.add(pod.uid)

    def finish_binding(self, pod: PodView) -> None:
        """The binding call returned; start the expiry clock if a ttl is configured."""
        state = self._pod_states.get(pod.uid)
        if state is None or pod.uid not in self._assumed:
            return
        state.binding_finished = True
        state.deadline = None if self._ttl is None else self._clock() + self._ttl

    def forget_pod(self, pod: PodView) -> None:
        """Undo assume_pod (binding failed). CacheError if the pod is not assumed there."""
        state = self._pod_states.get(pod.uid)
        if state is not None and state.pod.node_name != pod.node_name:
            raise CacheError(
                f"pod {pod.key} ({pod.uid}) was assumed on {state.pod.node_name} "
                f"but assigned to {pod.node_name}"
            )
        if state is None or pod.uid not in self._assumed:
            raise CacheError(f"pod {pod.key} ({pod.uid}) wasn't assumed so cannot be forgotten")
        self._remove_from_node(state.pod)
        del self._pod_states[pod.uid]
        self._assumed.discard(pod.uid)

    def cleanup_expired_assumed_pods(self) -> list[PodView]:
        """Drop assumed pods whose binding finished longer than ttl ago; returns them."""
        if self._ttl is None or not self._assumed:
            return []
        now = self._clock()
        expired: list[PodView] = []
        for uid in list(self._assumed):
            state = self._pod_states[uid]
            if state.binding_finished and state.deadline is not None and now > state.deadline:
                expired.append(state.pod)
                self._remove_from_node(state.pod)
                del self._pod_states[uid]
                self._assumed.discard(uid)
        return expired

    # Queries

    def is_assumed_pod(self, pod: PodView | str) -> bool:
        return (pod if isinstance(pod, str) else pod.uid) in self._assumed

    def get_pod(self, pod: PodView | str) -> PodView | None:
        """The cached version of a pod, by view or uid."""
        state = self._pod_states.get(pod if isinstance(pod, str) else pod.uid)
        return state.pod if state is not None else None

    def get_node_info(self, name: str) -> NodeInfo | None:
        """The live NodeInfo (not a copy): read it, never change it."""
        return self._nodes.get(name)

    def node_count(self) -> int:
        """Nodes known from the API (imaginary node infos are not counted)."""
        return len(self._tree)

    def pod_count(self) -> int:
        """Pods on all node infos, assumed ones included: every pod the cache tracks is on
        exactly one NodeInfo, so this is a length, not a walk over the nodes."""
        return len(self._pod_states)

    def assumed_pod_count(self) -> int:
        return len(self._assumed)

    def dump(self) -> CacheDump:
        return CacheDump(
            nodes={name: info.snapshot() for name, info in self._nodes.items()},
            assumed_pods=set(self._assumed),
        )

    # Snapshot

    def update_snapshot(self, snapshot: Snapshot | None = None) -> Snapshot:
        """Bring `snapshot` (or the cache's own) up to date, copying only changed nodes."""
        snapshot = snapshot if snapshot is not None else self._default_snapshot
        since = snapshot.generation
        update_all = snapshot.tree_version != self._tree.version or since == 0
        update_pvc = False
        # NodeInfos (of nodes already in the snapshot) that gained or lost pods with affinity /
        # required anti-affinity: the lists are patched, not rebuilt from every node.
        affinity_changed: list[tuple[NodeInfo, bool]] = []
        anti_affinity_changed: list[tuple[NodeInfo, bool]] = []
        node_map = snapshot.node_info_map
        copied: set[str] = set()

        for info in reversed(self._nodes.values()):
            if info.generation <= since:
                break
            node = info.node
            if node is None:
                continue
            existing = node_map.get(node.name)
            if existing is None:
                existing = NodeInfo.__new__(NodeInfo)
                node_map[node.name] = existing
                had_affinity = had_anti_affinity = False
                old_pvcs: set[str] = set()
                update_all = True
            else:
                had_affinity = bool(existing.pods_with_affinity)
                had_anti_affinity = bool(existing.pods_with_required_anti_affinity)
                old_pvcs = set(existing.pvc_ref_counts)
            info.copy_into(existing)
            # Image counts as of now: the cache's own summary dates from the node's last update.
            existing.image_states = self._image_summary(node)
            copied.add(node.name)
            if had_affinity != bool(existing.pods_with_affinity):
                affinity_changed.append((existing, not had_affinity))
            if had_anti_affinity != bool(existing.pods_with_required_anti_affinity):
                anti_affinity_changed.append((existing, not had_anti_affinity))
            update_pvc |= old_pvcs != existing.pvc_ref_counts.keys()

        if self._max_image_generation > since:
            self._refresh_image_counts(snapshot, since, copied)

        if len(node_map) > len(self._tree):
            for name in [n for n in node_map if n not in self._tree]:
                del node_map[name]
            update_all = True

        if update_all:
            snapshot.node_info_list = [node_map[name] for name in self._tree.list()]
            snapshot.tree_version = self._tree.version
            snapshot.rebuild_derived_lists()
        else:
            _patch(snapshot.have_pods_with_affinity_node_info_list, affinity_changed)
            _patch(
                snapshot.have_pods_with_required_anti_affinity_node_info_list, anti_affinity_changed
            )
            if update_pvc:
                snapshot.forget_used_pvcs()
        snapshot.nodes_changed(copied, reordered=update_all)
        snapshot.generation = self._generations.current
        return snapshot

    # Internals

    def _touch(self, name: str) -> None:
        """Mark the node most recently changed (update_snapshot walks from the newest)."""
        self._nodes.move_to_end(name)

    def _add_to_node(self, pod: PodView) -> None:
        info = self._nodes.get(pod.node_name)
        if info is None:
            info = NodeInfo(generations=self._generations)
            self._nodes[pod.node_name] = info
        info.add_pod(pod)
        self._touch(pod.node_name)

    def _remove_from_node(self, pod: PodView) -> None:
        info = self._nodes.get(pod.node_name)
        if info is None:
            return
        try:
            info.remove_pod(pod)
        except KeyError:
            return
        if info.node is None and not info.num_pods:
            del self._nodes[pod.node_name]
        else:
            self._touch(pod.node_name)

    def _add_node_images(self, node: NodeView) -> None:
        for image in node.images:
            for name in image.names:
                state = self._images.get(name)
                if state is None:
                    state = self._images[name] = _Image(image.size_bytes)
                if node.name not in state.nodes:
                    state.nodes.add(node.name)
                    self._mark_image_changed(name)

    def _remove_node_images(self, node: NodeView) -> None:
        for image in node.images:
            for name in image.names:
                state = self._images.get(name)
                if state is None or node.name not in state.nodes:
                    continue
                state.nodes.discard(node.name)
                if not state.nodes:
                    del self._images[name]
                self._mark_image_changed(name)

    def _mark_image_changed(self, name: str) -> None:
        # Called after the node's own generation bump, so the change is newer than any
        # snapshot taken so far.
        generation = self._generations.current
        self._image_generation[name] = generation
        self._max_image_generation = max(self._max_image_generation, generation)

    def _image_summary(self, node: NodeView) -> dict[str, ImageStateSummary]:
        summary: dict[str, ImageStateSummary] = {}
        for image in node.images:
            for name in image.names:
                state = self._images.get(name)
                if state is not None and name not in summary:
                    summary[name] = ImageStateSummary(state.size, len(state.nodes))
        return summary

    def _refresh_image_counts(self, snapshot: Snapshot, since: int, copied: set[str]) -> None:
        """Unchanged nodes still see new num_nodes for images that other nodes added or removed."""
        node_map = snapshot.node_info_map
        for name, generation in self._image_generation.items():
            if generation <= since:
                continue
            state = self._images.get(name)
            if state is None:
                continue
            summary = ImageStateSummary(state.size, len(state.nodes))
            for node_name in state.nodes:
                if node_name in copied:
                    continue
                info = node_map.get(node_name)
                if info is not None:
                    info.image_states[name] = summary
        # Images no node has any more need no refresh: only the nodes that dropped them (which
        # were copied or removed) ever listed them.
        self._image_generation = {
            n: g for n, g in self._image_generation.items() if n in self._images
        }
