"""NodeName (Filter): a pod that names a node in spec.nodeName fits only that node.

Upstream: pkg/scheduler/framework/plugins/nodename/node_name.go, with queueing hints enabled
(the default since v1.32): only a node being added can help, and only the named one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from scheduler.api.objects import NodeView, PodView
from scheduler.cache.node_table import NodeTable
from scheduler.cache.rows import Rows, RowVerdict, all_rows_pass, verdict_with_status
from scheduler.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from scheduler.framework.interface import CycleState, Handle, SignFragment
from scheduler.framework.registry import PluginEntry
from scheduler.framework.runtime import batch as signers
from scheduler.framework.status import Status

if TYPE_CHECKING:
    from scheduler.cache.node_info import NodeInfo

NAME = "NodeName"
ERR_REASON = "node(s) didn't match the requested node name"


def fits(pod: PodView, node_name: str) -> bool:
    """Upstream's nodename.Fits."""
    return not pod.node_name or pod.node_name == node_name


class NodeName:
    name = NAME

    def sign_pod(self, pod: PodView) -> tuple[Sequence[SignFragment], Status]:
        """Feasibility reads spec.nodeName (upstream SignPod)."""
        return [signers.node_name_fragment(pod)], Status.OK

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        self._unresolvable = Status.unresolvable(ERR_REASON, plugin=NAME)

    def filter(self, state: CycleState, pod: PodView, node_info: NodeInfo) -> Status:
        node = node_info.node
        if node is None:
            return Status.error("node not found")
        if not fits(pod, node.name):
            return self._unresolvable
        return Status.OK

    def filter_rows(
        self, state: CycleState, pod: PodView, table: NodeTable, rows: Rows
    ) -> RowVerdict:
        wanted = pod.node_name
        if not wanted:
            return verdict_with_status(all_rows_pass(len(rows)), self._unresolvable)
        return verdict_with_status(rows == table.row_of.get(wanted, -1), self._unresolvable)

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return (
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD), self._schedulable_after_node_add
            ),
        )

    @staticmethod
    def _schedulable_after_node_add(pod: Any, old: Any, new: Any) -> QueueingHint:
        if not isinstance(new, NodeView) or not isinstance(pod, PodView):
            return QueueingHint.QUEUE  # unexpected objects: be safe, as upstream on errors
        return QueueingHint.QUEUE if fits(pod, new.name) else QueueingHint.SKIP


PLUGIN_ENTRY = PluginEntry(NAME, NodeName)
