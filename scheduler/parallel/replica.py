"""The filter workers' replica of the scheduler's cache, kept by the same changes.

`ReplicatedCache` is the scheduler's Cache; once filter workers run, it also records each
change it applies, in a compact form (the object's raw JSON as bytes, encoded once for every
worker). A worker applies the same calls in the same order to its own Cache, so its snapshot
(nodes in the same order, the same pods, assumed ones included) is the scheduler's. A worker
that starts later gets a bootstrap: the nodes in the node tree's order and every pod, which
rebuilds the same tree (zones in the order they appear in the tree's round robin, nodes in
order within a zone) and the same pods.

Nothing is recorded while no worker runs: a scheduler whose cycles stay in process pays only a
None test per change.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import orjson

from scheduler.api.node import node_view_from_dict
from scheduler.api.objects import NodeView, PodView
from scheduler.api.pod import pod_view_from_dict
from scheduler.cache.cache import Cache
from scheduler.cache.snapshot import Snapshot

# One recorded change: the Cache method's name and its arguments, views as raw JSON bytes.
Change = tuple[Any, ...]

ADD_NODE, REMOVE_NODE, ADD_POD, REMOVE_POD, ASSUME_POD, FORGET_POD = range(6)


def _plain(value: Any) -> Any:
    """What orjson does not serialise itself: read-only mappings (views may hold them)."""
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"cannot encode {type(value).__name__}")


def _json(view: PodView | NodeView) -> bytes:
    return orjson.dumps(view.raw, default=_plain)


class ReplicatedCache(Cache):
    """A Cache whose changes are also appended to `changes` while that is a list.

    Only the outermost call of a change is recorded (update_node and update_pod are made of
    add and remove calls, add_pod of a terminal pod removes it), and only once it succeeded
    (a refused assume or forget changes nothing)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.changes: list[Change] | None = None
        # Called when `flush_at` changes are waiting (the pool sends them on to its workers).
        self.flush: Callable[[], None] | None = None
        self.flush_at = 512
        self._depth = 0
        # The changes recorded since `fresh_snapshot` was last brought up to date.
        self._since_snapshot = 0
        self._fresh_snapshot: Snapshot | None = None

    def _record(self, change: Callable[[], Any], *recorded: Any) -> Any:
        if self.changes is None or self._depth:
            return change()
        self._depth += 1
        try:
            result = change()
        finally:
            self._depth -= 1
        self.changes.append(recorded)
        self._since_snapshot += 1
        if len(self.changes) >= self.flush_at and self.flush is not None:
            self.flush()
        return result

    # Each change goes straight to the Cache while nothing records (no worker runs): no
    # closure, no bookkeeping on the scheduler's path.

    def add_node(self, node: NodeView) -> Any:
        if self.changes is None:
            return super().add_node(node)
        return self._record(lambda: super(ReplicatedCache, self).add_node(node), ADD_NODE, node)

    def update_node(self, old: NodeView, new: NodeView | None = None) -> Any:
        if new is None or old.name == new.name:
            return self.add_node(new or old)
        self.remove_node(old)
        return self.add_node(new)

    def remove_node(self, node: NodeView | str) -> bool:
        if self.changes is None:
            return super().remove_node(node)
        name = node if isinstance(node, str) else node.name
        removed: bool = self._record(
            lambda: super(ReplicatedCache, self).remove_node(name), REMOVE_NODE, name
        )
        return removed

    def add_pod(self, pod: PodView) -> None:
        if self.changes is None:
            super().add_pod(pod)
            return
        self._record(lambda: super(ReplicatedCache, self).add_pod(pod), ADD_POD, pod)

    def update_pod(self, old: PodView, new: PodView | None = None) -> None:
        if new is not None and old.uid != new.uid:
            self.remove_pod(old)
        self.add_pod(new or old)

    def remove_pod(self, pod: PodView) -> bool:
        if self.changes is None:
            return super().remove_pod(pod)
        removed: bool = self._record(
            lambda: super(ReplicatedCache, self).remove_pod(pod), REMOVE_POD, pod
        )
        return removed

    def assume_pod(self, pod: PodView) -> None:
        if self.changes is None:
            super().assume_pod(pod)
            return
        self._record(lambda: super(ReplicatedCache, self).assume_pod(pod), ASSUME_POD, pod)

    def forget_pod(self, pod: PodView) -> None:
        if self.changes is None:
            super().forget_pod(pod)
            return
        self._record(lambda: super(ReplicatedCache, self).forget_pod(pod), FORGET_POD, pod)

    def cleanup_expired_assumed_pods(self) -> list[PodView]:
        expired = super().cleanup_expired_assumed_pods()
        if self.changes is not None:
            self.changes.extend((FORGET_POD, pod) for pod in expired)
            self._since_snapshot += len(expired)
        return expired

    def update_snapshot(self, snapshot: Snapshot | None = None) -> Snapshot:
        updated = super().update_snapshot(snapshot)
        self._fresh_snapshot, self._since_snapshot = updated, 0
        return updated

    def replica_matches(self, snapshot: Snapshot) -> bool:
        """Whether `snapshot` was the last one brought up to date and nothing changed since:
        then a replica brought up to date now sees what `snapshot` shows."""
        return self._fresh_snapshot is snapshot and not self._since_snapshot

    def bootstrap(self) -> tuple[list[Change], list[str]]:
        """The changes that rebuild this cache in an empty one, and its node tree's order
        (the replica checks it got the same)."""
        order = self._tree.list()
        changes: list[Change] = [(ADD_NODE, self._nodes[name].node) for name in order]
        for uid, state in self._pod_states.items():
            changes.append((ASSUME_POD if uid in self._assumed else ADD_POD, state.pod))
        return changes, order

    def node_order(self) -> list[str]:
        return self._tree.list()


def encode(changes: Sequence[Change]) -> list[tuple[int, bytes | str]]:
    """Changes as they travel: views as their raw JSON (the worker decodes them as the
    informers do), node names as they are."""
    return [
        (kind, subject if isinstance(subject, str) else _json(subject)) for kind, subject in changes
    ]


def apply(cache: Cache, changes: Sequence[tuple[int, bytes | str]]) -> None:
    """Replay encoded changes on a worker's cache, in order."""
    for kind, subject in changes:
        if kind == REMOVE_NODE:
            cache.remove_node(str(subject))
        elif kind == ADD_NODE:
            cache.add_node(node_view_from_dict(orjson.loads(subject)))
        else:
            pod = pod_view_from_dict(orjson.loads(subject))
            if kind == ADD_POD:
                cache.add_pod(pod)
            elif kind == REMOVE_POD:
                cache.remove_pod(pod)
            elif kind == ASSUME_POD:
                cache.assume_pod(pod)
            else:
                cache.forget_pod(pod)
