"""The per-cycle copy of the cache plugins read (upstream's internal/cache/snapshot.go).

Implements framework.interface.SnapshotLister. The cache updates it in place at the start of each
scheduling cycle (Cache.update_snapshot), copying only the nodes whose generation moved, so
plugins never see an event applied halfway through a cycle.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from scheduler.cache.node_info import NodeInfo


class Snapshot:
    __slots__ = (
        "generation",
        "have_pods_with_affinity_node_info_list",
        "have_pods_with_required_anti_affinity_node_info_list",
        "node_info_list",
        "node_info_map",
        "tree_version",
        "used_pvc_set",
    )

    def __init__(self) -> None:
        self.node_info_map: dict[str, NodeInfo] = {}
        self.node_info_list: list[NodeInfo] = []
        self.have_pods_with_affinity_node_info_list: list[NodeInfo] = []
        self.have_pods_with_required_anti_affinity_node_info_list: list[NodeInfo] = []
        # "namespace/claim" of every PVC some pod in the snapshot uses.
        self.used_pvc_set: set[str] = set()
        # The cache generation this snapshot reflects; 0 means never updated.
        self.generation = 0
        # The cache's node tree version node_info_list was built from (-1: never).
        self.tree_version = -1

    @classmethod
    def from_node_infos(cls, node_infos: Iterable[NodeInfo]) -> Snapshot:
        """A standalone snapshot (tests, simulations) over NodeInfos that have nodes."""
        snapshot = cls()
        for info in node_infos:
            if info.node is not None:
                snapshot.node_info_map[info.node.name] = info
                snapshot.node_info_list.append(info)
        snapshot.rebuild_derived_lists()
        return snapshot

    def rebuild_derived_lists(self) -> None:
        """Recompute the affinity lists and the PVC set from node_info_list."""
        self.have_pods_with_affinity_node_info_list = [
            info for info in self.node_info_list if info.pods_with_affinity
        ]
        self.have_pods_with_required_anti_affinity_node_info_list = [
            info for info in self.node_info_list if info.pods_with_required_anti_affinity
        ]
        self.used_pvc_set = {key for info in self.node_info_list for key in info.pvc_ref_counts}

    # SnapshotLister
    def list(self) -> Sequence[NodeInfo]:
        return self.node_info_list

    def get(self, node_name: str) -> NodeInfo | None:
        return self.node_info_map.get(node_name)

    def have_pods_with_affinity_list(self) -> Sequence[NodeInfo]:
        return self.have_pods_with_affinity_node_info_list

    def have_pods_with_required_anti_affinity_list(self) -> Sequence[NodeInfo]:
        return self.have_pods_with_required_anti_affinity_node_info_list

    def is_pvc_used_by_pods(self, key: str) -> bool:
        """Whether "namespace/claim" is used by a pod here (upstream's IsPVCUsedByPods)."""
        return key in self.used_pvc_set

    def num_nodes(self) -> int:
        return len(self.node_info_list)

    def __len__(self) -> int:
        return len(self.node_info_list)
