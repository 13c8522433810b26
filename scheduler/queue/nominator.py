"""Pods nominated to nodes by preemption (upstream's nominator, backend/queue/nominator.go).

Filter plugins account for nominated pods of equal or higher priority on a node, so a preemptor
keeps the room it made while it waits for its victims to go away.
"""

from __future__ import annotations

from scheduler.api.objects import PodView


class Nominator:
    __slots__ = ("_by_node", "_node_of")

    def __init__(self) -> None:
        self._by_node: dict[str, dict[str, PodView]] = {}
        self._node_of: dict[str, str] = {}

    def add(self, pod: PodView, node_name: str | None = None) -> None:
        """Nominate `pod` to `node_name`, or to its status.nominatedNodeName when None.

        An explicit "" clears the nomination. A pod already bound is never nominated.
        """
        self.delete(pod.uid)
        target = pod.nominated_node_name if node_name is None else node_name
        if not target or pod.node_name:
            return
        self._node_of[pod.uid] = target
        self._by_node.setdefault(target, {})[pod.uid] = pod

    def update(self, old: PodView | None, new: PodView) -> None:
        """Follow a pod update; keep an in-memory nomination the update does not mention.

        An update that neither sets nor clears status.nominatedNodeName (e.g. one that raced with
        the scheduler's own nomination) must not drop the node reserved for the pod.
        """
        node_name: str | None = None
        old_nominated = old.nominated_node_name if old is not None else ""
        if not old_nominated and not new.nominated_node_name:
            node_name = self._node_of.get(new.uid)
        self.add(new, node_name)

    def delete(self, uid: str) -> None:
        node_name = self._node_of.pop(uid, None)
        if node_name is None:
            return
        pods = self._by_node[node_name]
        del pods[uid]
        if not pods:
            del self._by_node[node_name]

    def __len__(self) -> int:
        """Number of nominated pods."""
        return len(self._node_of)

    def node_of(self, uid: str) -> str:
        return self._node_of.get(uid, "")

    def node_names(self) -> list[str]:
        """The nodes some pod is nominated to."""
        return list(self._by_node)

    def pods_for_node(self, node_name: str) -> list[PodView]:
        return list(self._by_node.get(node_name, {}).values())
