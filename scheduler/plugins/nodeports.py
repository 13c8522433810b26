"""NodePorts (PreFilter, Filter): a pod's host ports must be free on the node.

Upstream: pkg/scheduler/framework/plugins/nodeports/node_ports.go (queueing hints enabled).
The pod's host ports (containers and sidecars, hostPort > 0) are precomputed by PodView; the
node's ports in use live in NodeInfo.used_ports, whose `conflicts` is upstream's CheckConflict
(0.0.0.0 on either side conflicts with every address).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from scheduler.api.objects import HostPort, PodView
from scheduler.cache.node_info import UsedPorts
from scheduler.cache.node_table import NodeTable
from scheduler.cache.rows import Rows, RowVerdict, verdict_per_node
from scheduler.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from scheduler.framework.interface import CycleState, Handle, PreFilterResult, SignFragment
from scheduler.framework.registry import PluginEntry
from scheduler.framework.runtime import batch as signers
from scheduler.framework.status import Status

if TYPE_CHECKING:
    from scheduler.cache.node_info import NodeInfo
    from scheduler.framework.interface import PreFilterExtensions

NAME = "NodePorts"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ERR_REASON = "node(s) didn't have free ports for the requested pod ports"


def fits_ports(wanted: Iterable[HostPort], used: UsedPorts) -> bool:
    """Upstream's fitsPorts: no wanted port conflicts with one in use."""
    for port in wanted:  # noqa: SIM110 (hot path)
        if used.conflicts(port):
            return False
    return True


class NodePorts:
    name = NAME

    def sign_pod(self, pod: PodView) -> tuple[Sequence[SignFragment], Status]:
        """Feasibility reads the host ports (upstream SignPod)."""
        return [signers.host_ports_fragment(pod)], Status.OK

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        self._unschedulable = Status.unschedulable(ERR_REASON)

    def pre_filter(
        self, state: CycleState, pod: PodView, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        if not pod.host_ports:
            return None, Status.skip()
        state.write(PRE_FILTER_STATE_KEY, pod.host_ports)
        return None, Status.OK

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    def filter(self, state: CycleState, pod: PodView, node_info: NodeInfo) -> Status:
        try:
            wanted: tuple[HostPort, ...] = state.read(PRE_FILTER_STATE_KEY)
        except KeyError:
            return _state_missing()
        if not fits_ports(wanted, node_info.used_ports):
            return self._unschedulable
        return Status.OK

    def filter_rows(
        self, state: CycleState, pod: PodView, table: NodeTable, rows: Rows
    ) -> RowVerdict:
        """Nodes with no host port in use pass; the others are checked per node."""
        try:
            state.read(PRE_FILTER_STATE_KEY)
        except KeyError:
            return verdict_per_node(self.filter, state, pod, table, rows)  # every row errs
        return verdict_per_node(self.filter, state, pod, table, rows, table.used_ports[rows])

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return (
            # Host ports are immutable, so only a deleted pod can free one.
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.DELETE),
                self._schedulable_after_pod_deleted,
            ),
            # Always Queue: a new node has no ports in use.
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.ADD)),
        )

    @staticmethod
    def _schedulable_after_pod_deleted(pod: Any, old: Any, new: Any) -> QueueingHint:
        if not isinstance(old, PodView) or not isinstance(pod, PodView):
            return QueueingHint.QUEUE
        # An unscheduled pod held no ports anywhere.
        if not old.node_name and not old.nominated_node_name:
            return QueueingHint.SKIP
        released = UsedPorts()
        for port in old.host_ports:
            released.add(port)
        if not released or fits_ports(pod.host_ports, released):
            return QueueingHint.SKIP
        return QueueingHint.QUEUE


def _state_missing() -> Status:
    return Status.error(f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')


PLUGIN_ENTRY = PluginEntry(NAME, NodePorts)
