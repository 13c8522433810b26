"""GPUs as DRA devices, and what each node has left of them.

The modelling (docs/policy-lab.md): a node's GPUs are the devices of one driver in its
ResourceSlices, each with a string attribute `model` and a capacity `milli` of 1000 (one whole
GPU). A pod asks for GPUs through a ResourceClaim of the GPU DeviceClass: `count` devices, and,
for a share of one GPU, a capacity request of `milli` below 1000 on a device that allows
multiple allocations (DRAConsumableCapacity); a model constraint is a CEL selector.

The simulator's view of a node (utils.GetNodeResourceViaNodeInfo in
hkust-adsl/kubernetes-scheduler-simulator pkg/utils/utils.go): CPU left, the milli left on each
GPU in device order, the model. Here the milli left is 1000 for a free device, 0 for one a claim
holds whole, 1000 minus what shares consumed for a shared one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from scheduler.api.objects import PodView
from scheduler.api.resource import ResourceClaimView, ResourceSliceView
from scheduler.listers.resource_objects import DeviceID, ResourceObjects

GPU_DRIVER = "gpu.aiosched.io"
GPU_CLASS = "gpu.aiosched.io"
MODEL_ATTRIBUTE = "model"
MILLI_CAPACITY = "milli"
FULL_GPU_MILLI = 1000
NANOS = 10**9

_MODELS_IN = re.compile(r"\.model\s+in\s+\[([^\]]*)\]")
_MODEL_EQ = re.compile(r"\.model\s*==\s*\"([^\"]*)\"")


def model_selector(models: Iterable[str], driver: str = GPU_DRIVER) -> str:
    """The CEL selector for "one of these models" (the openb trace's `V100M16|V100M32`)."""
    listed = ", ".join(f'"{model}"' for model in dict.fromkeys(models))
    return f'device.attributes["{driver}"].{MODEL_ATTRIBUTE} in [{listed}]'


def models_of(selectors: Iterable[str]) -> frozenset[str]:
    """The models a request's selectors written by `model_selector` (or `.model == "X"`)
    allow; empty: any model (other selectors are not read: Filter has applied them)."""
    found: set[str] = set()
    for selector in selectors:
        for listed in _MODELS_IN.findall(selector):
            found.update(m.strip().strip('"') for m in listed.split(",") if m.strip())
        found.update(_MODEL_EQ.findall(selector))
    return frozenset(found)


@dataclass(frozen=True, slots=True)
class GpuRequest:
    """A pod's demand as the simulator's utils.GetPodResource sees it."""

    cpu_milli: int
    gpu_milli: int  # per GPU: 1000 for whole GPUs, 0 for a CPU-only pod
    gpu_count: int
    models: frozenset[str] = frozenset()

    @property
    def total_gpu_milli(self) -> int:
        return self.gpu_milli * self.gpu_count

    @property
    def is_share(self) -> bool:
        return self.gpu_count == 1 and 0 < self.gpu_milli < FULL_GPU_MILLI


def gpu_request(
    cpu_milli: int, claims: Sequence[ResourceClaimView], device_class: str = GPU_CLASS
) -> GpuRequest:
    """What `claims` ask of the GPU class: the devices counted, the milli asked of each."""
    count = 0
    milli = 0
    models: set[str] = set()
    for claim in claims:
        for request in claim.requests:
            sub = request.exactly
            if sub is None or sub.device_class_name != device_class:
                continue
            count += sub.count
            asked = sub.capacity.get(MILLI_CAPACITY)
            per_gpu = FULL_GPU_MILLI if asked is None else min(asked // NANOS, FULL_GPU_MILLI)
            milli = max(milli, per_gpu)
            models |= models_of(sub.selectors)
    return GpuRequest(cpu_milli, milli if count else 0, count, frozenset(models))


def pod_cpu_milli(pod: PodView) -> int:
    return pod.requests.milli_cpu


@dataclass(frozen=True, slots=True)
class NodeGpus:
    """One node's GPUs: their device ids in index order and the model (of the first)."""

    devices: tuple[DeviceID, ...]
    model: str

    @property
    def pools(self) -> tuple[tuple[str, str], ...]:
        """The (driver, pool) of the GPUs: where the claim tracker counts their changes."""
        return tuple(dict.fromkeys(device[:2] for device in self.devices))


def _index(name: str) -> tuple[int, str]:
    digits = re.search(r"(\d+)$", name)
    return (int(digits.group(1)) if digits else -1, name)


class GpuIndex:
    """Node name → NodeGpus, from the ResourceSlices of the GPU driver; rebuilt when a slice
    changes (slices change when drivers publish, not per pod)."""

    def __init__(self, resources: ResourceObjects, driver: str = GPU_DRIVER) -> None:
        self._resources = resources
        self._driver = driver
        self._by_node: dict[str, NodeGpus] | None = None
        self._pools: dict[str, tuple[tuple[str, str], ...]] = {}
        resources.slices.subscribe(self._invalidate)

    def _invalidate(self, old: object, new: object) -> None:
        self._by_node = None

    def by_node(self) -> Mapping[str, NodeGpus]:
        if self._by_node is None:
            self._by_node = self._build(self._resources.slices.list())
            self._pools = {name: gpus.pools for name, gpus in self._by_node.items()}
        return self._by_node

    def pools_by_node(self) -> Mapping[str, tuple[tuple[str, str], ...]]:
        """Node name → the (driver, pool) of its GPUs."""
        self.by_node()
        return self._pools

    def _build(self, slices: Iterable[ResourceSliceView]) -> dict[str, NodeGpus]:
        found: dict[str, list[tuple[tuple[int, str], DeviceID, str]]] = {}
        for piece in slices:
            if piece.driver != self._driver or not piece.node_name:
                continue
            for device in piece.devices:
                model = device.attributes.get(MODEL_ATTRIBUTE)
                if model is None:
                    model = device.attributes.get(f"{piece.driver}/{MODEL_ATTRIBUTE}")
                found.setdefault(piece.node_name, []).append(
                    (
                        _index(device.name),
                        (piece.driver, piece.pool_name, device.name),
                        model if isinstance(model, str) else "",
                    )
                )
        by_node = {}
        for node, devices in found.items():
            devices.sort()
            by_node[node] = NodeGpus(tuple(d[1] for d in devices), devices[0][2])
        return by_node


@dataclass(frozen=True, slots=True)
class Allocated:
    """The claim tracker's allocated devices, read once per cycle (PreScore)."""

    whole: AbstractSet[DeviceID]
    consumed: Mapping[DeviceID, Mapping[str, int]]
    #: The claim tracker's version read
    version: int = -1

    @classmethod
    def read(cls, resources: ResourceObjects) -> Allocated:
        tracker = resources.tracker
        _, consumed = tracker.allocated_shared()
        return cls(tracker.allocated_devices(), consumed, tracker.version)

    def left(self, gpus: NodeGpus) -> tuple[int, ...]:
        """The milli left on each GPU of the node, in index order."""
        left = []
        for device in gpus.devices:
            if device in self.whole:
                left.append(0)
                continue
            used = self.consumed.get(device, {}).get(MILLI_CAPACITY, 0) // NANOS
            left.append(max(FULL_GPU_MILLI - used, 0))
        return tuple(left)
