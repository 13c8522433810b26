"""TopologyPlacementGenerator (PlacementGenerate): the placements of a pod group whose
`spec.schedulingConstraints.topology[0].key` is set, one per domain of that node label, so that
every member lands in one zone or rack.

Upstream: pkg/scheduler/framework/plugins/topologyaware/topology_placement.go (the plugin's
name is names.TopologyPlacementGenerator), in the default profile with the
TopologyAwareWorkloadScheduling gate. What it specifies:

- A group without a topology constraint: no constraint of this plugin; it returns the parent
  placement (every node), which the runtime leaves out of the merge.
- With a key: one placement per value of that label among the parent's nodes (nodes without the
  label belong to none); when members are already scheduled (assumed or bound) the only
  placement is their domain, and members in two domains, or on a node without the label, are an
  error ("cannot determine domain for already scheduled pods: ..."). No placement at all:
  Unschedulable "no feasible placements found". Upstream iterates a map; aiosched returns the
  domains in name order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from scheduler.framework.interface import Handle, Placement, PodGroupPlacementInfo
from scheduler.framework.registry import PluginEntry
from scheduler.framework.status import Code, Status

if TYPE_CHECKING:
    from scheduler.cache.node_info import NodeInfo

NAME = "TopologyPlacementGenerator"
#: The status when no domain has a node.
NO_FEASIBLE_PLACEMENTS = "no feasible placements found"


class TopologyPlacementGenerator:
    name = NAME

    def __init__(self, args: Any, handle: Handle) -> None:
        self.handle = handle

    def generate_placements(
        self, group: PodGroupPlacementInfo, parent: Placement, nodes: Sequence[NodeInfo]
    ) -> tuple[Sequence[Placement], Status]:
        keys = group.group.topology_keys
        if not keys:
            return [parent], Status.OK
        # Only one topology constraint is allowed by the API (+k8s:maxItems=1).
        key = keys[0]
        by_name = {info.node_name: info for info in nodes}
        required: str | None = None
        for pod_key, node_name in group.scheduled_nodes:
            info = by_name.get(node_name)
            if info is None or info.node is None:
                missing = f"node {node_name!r} not found"
                return [], _domain_error(f"getting node for pod {pod_key}: {missing}")
            domain = info.node.labels.get(key)
            if domain is None:
                return [], _domain_error(f"no topology domain found for pod {pod_key}")
            if required is not None and required != domain:
                return [], _domain_error(
                    f"more than 1 domain found for pod group: {required}, {domain}"
                )
            required = domain
        domains: dict[str, list[str]] = {}
        for info in nodes:
            node = info.node
            if node is None:
                continue
            domain = node.labels.get(key)
            if domain is not None and (required is None or domain == required):
                domains.setdefault(domain, []).append(info.node_name)
        if not domains:
            return [], Status(Code.UNSCHEDULABLE, NO_FEASIBLE_PLACEMENTS, plugin=NAME)
        return [Placement(name, tuple(domains[name])) for name in sorted(domains)], Status.OK


def _domain_error(reason: str) -> Status:
    return Status.error(
        f"cannot determine domain for already scheduled pods: {reason}", plugin=NAME
    )


PLUGIN_ENTRY = PluginEntry(NAME, TopologyPlacementGenerator)
