"""GPU allocation and fragmentation along a replay, as the FGD paper measures them.

After every pod event (placed, failed, departed) the ledger notes the GPU milli requested by
the pods arrived so far (failed ones included), the GPU milli allocated, and the cluster's
fragmentation Σ_n F_n(M) for the target workload M (frag.py), updated for the one node that
changed. `curves` then turns the events into the paper's discretised columns (the simulator's
experiments/analysis/merge_alloc_discrete.py and merge_frag_discrete.py): for every whole
percent a of arrived GPU workload, the mean over the events whose arrived workload rounds to a
(else to a±1) of the allocated GPU share, and of the fragmented one, in % of capacity.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from scheduler.api.objects import NodeView, PodView
from scheduler.api.resource import ResourceClaimView, ResourceSliceView
from scheduler.lab.trace import PodArrival, Trace
from scheduler.listers.resource_objects import DeviceID, ResourceObjects
from scheduler.plugins.gpushare.frag import FragMeasure, TypicalPod, typical_pods
from scheduler.plugins.gpushare.gpus import (
    FULL_GPU_MILLI,
    GPU_DRIVER,
    MILLI_CAPACITY,
    NANOS,
    GpuIndex,
    GpuRequest,
    gpu_request,
)

#: The arrived-workload axis of the reports: 0 … 130 % of GPU capacity.
PERCENT_AXIS = range(131)


def arrival_request(arrival: PodArrival) -> GpuRequest:
    """What the pod of `arrival` asks of GPUs and CPU (its claims as the trace has them)."""
    pod = PodView.from_dict(arrival.pod)
    claims = [ResourceClaimView.from_dict(claim) for claim in arrival.claims]
    return gpu_request(pod.requests.milli_cpu, claims)


def trace_target_workload(trace: Trace) -> tuple[TypicalPod, ...]:
    return typical_pods([arrival_request(a) for a in trace.pods])


@dataclass(slots=True)
class _Node:
    cpu_left: int
    left: list[int]
    model: str
    frag: float = 0.0


@dataclass(slots=True)
class GpuLedger:
    """A ReplayObserver (engine.py) keeping the paper's per-event measures."""

    nodes: dict[str, _Node]
    devices: dict[DeviceID, tuple[str, int]]
    measure: FragMeasure
    capacity_milli: int
    arrived: int = 0
    used: int = 0
    frag: float = 0.0
    cpu_capacity: int = 0
    cpu_used: int = 0
    #: (arrived GPU milli, allocated GPU milli, fragmented GPU milli) after each event.
    events: list[tuple[int, int, float]] = field(default_factory=list)

    @classmethod
    def for_trace(cls, trace: Trace, typical: Sequence[TypicalPod]) -> GpuLedger:
        resources = ResourceObjects()
        resources.add(*(ResourceSliceView.from_dict(s) for s in trace.resource_slices))
        by_node = GpuIndex(resources, GPU_DRIVER).by_node()
        nodes: dict[str, _Node] = {}
        devices: dict[DeviceID, tuple[str, int]] = {}
        measure = FragMeasure(typical)
        cpu_capacity = 0
        for raw in trace.nodes:
            view = NodeView.from_dict(raw)
            gpus = by_node.get(view.name)
            left = [FULL_GPU_MILLI] * len(gpus.devices) if gpus else []
            model = gpus.model if gpus else ""
            cpu = view.allocatable.milli_cpu
            cpu_capacity += cpu
            nodes[view.name] = _Node(cpu, left, model, measure.node(cpu, left, model))
            for index, device in enumerate(gpus.devices if gpus else ()):
                devices[device] = (view.name, index)
        capacity = sum(len(n.left) for n in nodes.values()) * FULL_GPU_MILLI
        ledger = cls(nodes, devices, measure, capacity, cpu_capacity=cpu_capacity)
        ledger.frag = sum(n.frag for n in nodes.values())
        return ledger

    def _change(self, pod: PodView, claims: Sequence[ResourceClaimView], sign: int) -> None:
        node = self.nodes.get(pod.node_name)
        if node is None:
            return
        cpu = pod.requests.milli_cpu
        node.cpu_left -= sign * cpu
        self.cpu_used += sign * cpu
        for claim in claims:
            if claim.allocation is None:
                continue
            for device in claim.allocation.devices:
                where = self.devices.get(device.device_id)
                if where is None or device.admin_access:
                    continue
                milli = FULL_GPU_MILLI
                if device.share_id:
                    milli = device.consumed_capacity.get(MILLI_CAPACITY, 0) // NANOS
                node.left[where[1]] -= sign * milli
                self.used += sign * milli
        self.frag -= node.frag
        node.frag = self.measure.node(node.cpu_left, node.left, node.model)
        self.frag += node.frag

    def _note(self) -> None:
        self.events.append((self.arrived, self.used, self.frag))

    def placed(
        self, arrival: PodArrival, pod: PodView, claims: Sequence[ResourceClaimView]
    ) -> None:
        self.arrived += arrival_request(arrival).total_gpu_milli
        self._change(pod, claims, 1)
        self._note()

    def failed(self, arrival: PodArrival) -> None:
        self.arrived += arrival_request(arrival).total_gpu_milli
        self._note()

    def departed(
        self, arrival: PodArrival, pod: PodView, claims: Sequence[ResourceClaimView]
    ) -> None:
        self._change(pod, claims, -1)
        self._note()

    def curves(self) -> tuple[dict[str, float], dict[str, float]]:
        """(allocation %, fragmentation %) by whole percent of arrived GPU workload."""
        gpus = self.capacity_milli / FULL_GPU_MILLI
        if not gpus:
            return {}, {}
        by_percent: dict[int, list[tuple[float, float]]] = {}
        for arrived, used, frag in self.events:
            percent = round(arrived / gpus / 10)  # Python's round: half to even, as upstream
            by_percent.setdefault(percent, []).append((round(used / gpus / 10, 2), frag))
        allocation: dict[str, float] = {}
        fragmentation: dict[str, float] = {}
        for percent in PERCENT_AXIS:
            rows = by_percent.get(percent)
            if not rows:
                rows = [
                    r for p in (percent - 1, percent, percent + 1) for r in by_percent.get(p, ())
                ]
            if not rows:
                continue
            allocation[str(percent)] = round(sum(r[0] for r in rows) / len(rows), 2)
            mean_frag = sum(r[1] for r in rows) / len(rows)
            fragmentation[str(percent)] = max(0.0, round(100 * mean_frag / 1000 / gpus, 2))
        return allocation, fragmentation
