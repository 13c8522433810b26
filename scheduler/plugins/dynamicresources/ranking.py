"""A hook to rank the devices the structured allocator may pick for one request on one node.

By default the allocator tries devices in upstream's order (pools, slices and devices as the
node sees them, the first full solution wins) and nothing here runs. A plugin that wants
another choice, such as packing shares onto the fullest shareable GPU, gives DynamicResources a
`DeviceRanker`: subclass the plugin, set the class attribute `device_ranker`, and register the
subclass under its own name in an out-of-tree registry, in place of DynamicResources in the
profiles that should use it (docs/dra.md shows one). The default profile never ranks.

The ranker is asked once per request (and per device of a request that wants several) on each
node Filter visits, with the devices that can take the request right now: selected by the
class and request, not in use, with room in their capacity. It answers them in the order to
try; devices it leaves out are not tried. It must be cheap, deterministic and must not keep the
choices past the call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from scheduler.api.node import NodeView
from scheduler.api.pod import PodView
from scheduler.api.resource import DeviceSubRequest, DeviceView


@dataclass(frozen=True, slots=True)
class DeviceChoice:
    """One device the request could get: its id (driver, pool, device), what the slice
    publishes, whether it is shared by capacity (allowMultipleAllocations with
    DRAConsumableCapacity) and, per capacity name as published, how much is left after the
    claims allocated, in flight and being allocated in this attempt (nanos of the quantity)."""

    device_id: tuple[str, str, str]
    device: DeviceView
    shared: bool
    free: Mapping[str, int]


class DeviceRanker(Protocol):
    def rank(
        self, node: NodeView, request: DeviceSubRequest, choices: Sequence[DeviceChoice]
    ) -> Sequence[DeviceChoice]:
        """The choices to try, best first (a subset of `choices`, in any order)."""
        ...


class PodDeviceRankers(Protocol):
    """A Score plugin of the profile that ranks devices for each pod (the FGD paper's GPU
    policies, scheduler/plugins/gpushare/), so that enabling it is enough: no subclass."""

    def device_ranker_for(self, pod: PodView) -> DeviceRanker | None:
        """The ranker for this pod's claims, asked once per cycle in PreFilter; None: none."""
        ...


def profile_device_ranker(handle: object, pod: PodView) -> DeviceRanker | None:
    """The DeviceRanker the profile's Score plugins offer for `pod` (the first that offers
    one), for a DynamicResources without a `device_ranker` of its own. The default profile's
    plugins offer none: its order stays upstream's."""
    # The framework's score plugins (the Handle protocol does not list them for plugins).
    for plugin in getattr(handle, "score_plugins", ()):
        ranker_for = getattr(plugin, "device_ranker_for", None)
        if ranker_for is not None:
            ranker: DeviceRanker | None = ranker_for(pod)
            if ranker is not None:
                return ranker
    return None
