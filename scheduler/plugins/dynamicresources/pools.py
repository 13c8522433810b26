"""Resource pools as the structured allocator sees them from one node (upstream's
structured/internal/stable/pools_stable.go, GatherPools).

A pool is every ResourceSlice of one driver with one pool name. Only slices whose devices the
node can reach count (slice nodeName / nodeSelector / allNodes, or with perDeviceNodeSelection at
least one device that the node can reach); of those only the newest generation; the pool is
incomplete when fewer of them than `resourceSliceCount` are seen, invalid when a device name
repeats. Both are recorded rather than raised: the allocator skips such pools for ExactCount
requests and fails a request for All devices on them.

Kept apart from the allocator so the per-node gathering, which the plugin repeats for every node
of every cycle, can be indexed once per cycle (`SliceIndex`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from scheduler.api.node import NodeView
from scheduler.api.resource import ResourceSliceView
from scheduler.api.selectors import NodeSelector


@dataclass(slots=True)
class Pool:
    driver: str
    name: str
    slices: list[ResourceSliceView] = field(default_factory=list)
    incomplete: bool = False
    invalid: bool = False
    invalid_reason: str = ""

    @property
    def pool_id(self) -> str:
        return f"{self.driver}/{self.name}"


class NodeSelectionError(Exception):
    """A slice's or device's node selector cannot be parsed (nodeaffinity.NewNodeSelector)."""


def node_matches(
    node: NodeView, node_name: str, all_nodes: bool, selector: NodeSelector | None
) -> bool:
    """nodeMatches: a named node, all nodes, or a node selector; nothing set matches nothing."""
    if node_name:
        return node.name == node_name
    if all_nodes:
        return True
    if selector is not None:
        if selector.parse_errors:
            raise NodeSelectionError("; ".join(selector.parse_errors))
        return selector.matches(node.labels, node.name)
    return False


class SliceIndex:
    """The cycle's slices, split so that gathering for one node reads only the slices that
    name that node plus those that select nodes otherwise."""

    def __init__(self, slices: Sequence[ResourceSliceView], partitionable_devices: bool) -> None:
        self.by_node: dict[str, list[ResourceSliceView]] = {}
        self.other: list[ResourceSliceView] = []
        for resource_slice in slices:
            if not partitionable_devices and resource_slice.per_device_node_selection:
                continue
            if resource_slice.node_name:
                self.by_node.setdefault(resource_slice.node_name, []).append(resource_slice)
            elif (
                resource_slice.all_nodes
                or resource_slice.node_selector is not None
                or resource_slice.per_device_node_selection
            ):
                self.other.append(resource_slice)
            # else: some future way of selecting nodes: skipped, as upstream does
        self._order = {id(s): i for i, s in enumerate(slices)}

    def gather(self, node: NodeView) -> list[Pool]:
        """GatherPools for `node`. Raises NodeSelectionError with upstream's wording."""
        candidates = list(self.by_node.get(node.name, ()))
        for resource_slice in self.other:
            if resource_slice.per_device_node_selection and not (
                resource_slice.node_name
                or resource_slice.all_nodes
                or resource_slice.node_selector is not None
            ):
                for device in resource_slice.devices:
                    try:
                        matched = node_matches(
                            node, device.node_name, device.all_nodes, device.node_selector
                        )
                    except NodeSelectionError as err:
                        raise NodeSelectionError(
                            f"failed to perform node selection for device {device.name} in "
                            f"slice {resource_slice.name}: {err}"
                        ) from None
                    if matched:
                        candidates.append(resource_slice)
                        break
                continue
            try:
                matched = node_matches(
                    node, "", resource_slice.all_nodes, resource_slice.node_selector
                )
            except NodeSelectionError as err:
                raise NodeSelectionError(
                    f"failed to perform node selection for slice {resource_slice.name}: "
                    f"failed to parse node selector: {err}"
                ) from None
            if matched:
                candidates.append(resource_slice)
        if len(candidates) > 1:
            # upstream walks the slices in the order it was given them
            candidates.sort(key=lambda s: self._order[id(s)])
        pools: dict[tuple[str, str], Pool] = {}
        for resource_slice in candidates:
            key = (resource_slice.driver, resource_slice.pool_name)
            pool = pools.get(key)
            if pool is None:
                pools[key] = Pool(resource_slice.driver, resource_slice.pool_name, [resource_slice])
                continue
            generation = pool.slices[0].pool_generation
            if resource_slice.pool_generation < generation:
                continue  # out-dated
            if resource_slice.pool_generation > generation:
                pool.slices = []  # newer generation replaces the older slices
            pool.slices.append(resource_slice)
        result = list(pools.values())
        for pool in result:
            pool.incomplete = len(pool.slices) != pool.slices[0].pool_slice_count
            pool.invalid, pool.invalid_reason = _pool_is_invalid(pool)
        return result


def _pool_is_invalid(pool: Pool) -> tuple[bool, str]:
    seen: set[str] = set()
    for resource_slice in pool.slices:
        for device in resource_slice.devices:
            if device.name in seen:
                return True, f"duplicate device name {device.name}"
            seen.add(device.name)
    return False, ""
