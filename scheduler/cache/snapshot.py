"""The per-cycle copy of the cache plugins read (upstream's internal/cache/snapshot.go).

Implements framework.interface.SnapshotLister. The cache updates it in place at the start of each
scheduling cycle (Cache.update_snapshot), copying only the nodes whose generation moved, so
plugins never see an event applied halfway through a cycle.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import Any

from scheduler.cache.node_info import NodeInfo
from scheduler.cache.node_table import NodeTable


class Snapshot:
    __slots__ = (
        "_positions",
        "_positions_of",
        "_table",
        "_table_changed",
        "_used_pvc_set",
        "generation",
        "have_pods_with_affinity_node_info_list",
        "have_pods_with_required_anti_affinity_node_info_list",
        "node_info_list",
        "node_info_map",
        "tree_version",
    )

    def __init__(self) -> None:
        self.node_info_map: dict[str, NodeInfo] = {}
        self.node_info_list: list[NodeInfo] = []
        self.have_pods_with_affinity_node_info_list: list[NodeInfo] = []
        self.have_pods_with_required_anti_affinity_node_info_list: list[NodeInfo] = []
        # "namespace/claim" of every PVC some pod in the snapshot uses; None: collect on use
        # (only ReadWriteOncePod claims ask, and binding pods with claims changes it often).
        self._used_pvc_set: set[str] | None = set()
        # The cache generation this snapshot reflects; 0 means never updated.
        self.generation = 0
        # The cache's node tree version node_info_list was built from (-1: never).
        self.tree_version = -1
        # The columnar copy for fast paths, built on first use; None means rebuild.
        self._table: NodeTable | None = None
        # Nodes copied since the table was last brought up to date.
        self._table_changed: set[str] = set()
        # Each node's index in node_info_list, and the list (by identity) it was built from:
        # every reorder assigns a new list (Cache.update_snapshot, what-if swaps), so a list
        # that is not the one indexed means rebuild.
        self._positions: dict[str, int] = {}
        self._positions_of: list[NodeInfo] | None = None

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
        self._used_pvc_set = None

    def forget_used_pvcs(self) -> None:
        """Some node's PVCs changed: collect the set again when it is next asked for."""
        self._used_pvc_set = None

    @property
    def used_pvc_set(self) -> set[str]:
        if self._used_pvc_set is None:
            self._used_pvc_set = {
                key for info in self.node_info_list for key in info.pvc_ref_counts
            }
        return self._used_pvc_set

    # Columnar table

    def nodes_changed(self, names: Iterable[str], *, reordered: bool) -> None:
        """The cache copied these nodes into the snapshot (and rebuilt the list if reordered)."""
        if reordered:
            self.invalidate_table()
        elif self._table is not None:
            self._table_changed.update(names)

    def invalidate_table(self) -> None:
        """Forget the table (call after changing node_info_list or its NodeInfos directly)."""
        self._table = None
        self._table_changed.clear()

    def node_table(self) -> NodeTable:
        """The NodeTable over node_info_list, brought up to date with the copied nodes."""
        table = self._table
        if table is None or len(table) != len(self.node_info_list):
            table = self._table = NodeTable(self.node_info_list)
            self._table_changed.clear()
        elif self._table_changed:
            table.refresh(self._table_changed)
            self._table_changed.clear()
        return table

    def positions(self) -> dict[str, int]:
        """Each node's index in node_info_list (read-only), built once per node list."""
        nodes = self.node_info_list
        if self._positions_of is not nodes or len(self._positions) != len(nodes):
            self._positions = {info.node_name: index for index, info in enumerate(nodes)}
            self._positions_of = nodes
        return self._positions

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


def nodes_named(snapshot: Any, names: Collection[str]) -> list[NodeInfo]:
    """The snapshot's nodes whose name is in `names`, in the snapshot's order; names the
    snapshot lacks are skipped. Looked up by name (upstream's findNodesThatFitPod gets each
    name of a PreFilterResult from the snapshot) when `snapshot` is a Snapshot, so a pod
    pinned to one node costs O(1), not a walk over every node; a plain lister is walked."""
    all_nodes: Sequence[NodeInfo] = snapshot.list()
    if not isinstance(snapshot, Snapshot):
        return [info for info in all_nodes if info.node_name in names]
    positions = snapshot.positions()
    rows = sorted(row for name in names if (row := positions.get(name)) is not None)
    return [all_nodes[row] for row in rows]


def node_table_for(snapshot: Any, nodes: Sequence[NodeInfo] | None = None) -> NodeTable | None:
    """`snapshot`'s NodeTable, brought up to date, when it is a Snapshot and `nodes` (when
    given) is its own node list: the precondition of the plugins' table fast paths. None
    otherwise (a plain lister, or nodes a caller assembled), for the per-node path."""
    if not isinstance(snapshot, Snapshot):
        return None
    if nodes is not None and nodes is not snapshot.node_info_list:
        return None
    return snapshot.node_table()
