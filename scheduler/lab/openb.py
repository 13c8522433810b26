"""The openb traces (Alibaba cluster-trace-gpu-v2023, published with Weng et al., ATC '23) as
replay traces, with the paper's workload: a seeded shuffle, then inflation to a multiple of the
cluster's GPU capacity by seeded sampling, no departures.

Files: a node list (`sn,cpu_milli,memory_mib,gpu,model`) and a pod list (`name,cpu_milli,
memory_mib,num_gpu,gpu_milli,gpu_spec,...`; the other columns are not used, as in the paper).
How they become Kubernetes objects (the simulator's data/pod_csv_to_yaml.py, in DRA terms):

- a node: allocatable cpu, memory and 1001 pods; its GPUs one ResourceSlice of the GPU driver,
  devices `gpu-0`… with the attribute `model` and the capacity `milli: 1000`;
- a task: a pod requesting cpu and memory; with GPUs, a ResourceClaim of the GPU DeviceClass
  for `num_gpu` devices, the models of `gpu_spec` ("V100M16|V100M32") as a CEL selector;
  `gpu_milli` below 1000 (a share of one GPU) as a capacity request of that many milli on a
  device that allows several allocations, when the cluster has DRAConsumableCapacity;
  without it, as one whole GPU.

The workload (the simulator's TunePodsByNodeTotalResource, pkg/simulator/simulator.go): tasks
sorted by name, shuffled with the seed; while the GPU milli requested stays within
`inflate` x capacity, copies of tasks drawn uniformly (with replacement) from the name-sorted
list are appended (a draw whose per-GPU milli would pass the target ends it); above the target,
random tasks are removed instead. Python's random.Random stands for Go's math/rand: seeds are
statistical replicates of the paper's, not the same draws.
"""

from __future__ import annotations

import csv
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from scheduler.lab.trace import PodArrival, Trace, TraceError
from scheduler.plugins.gpushare.frag import TypicalPod, typical_pods
from scheduler.plugins.gpushare.gpus import (
    FULL_GPU_MILLI,
    GPU_CLASS,
    GPU_DRIVER,
    MILLI_CAPACITY,
    MODEL_ATTRIBUTE,
    GpuRequest,
    model_selector,
)

NAMESPACE = "openb"
#: The most rows a CSV may have (the published lists have under 10,000).
MAX_ROWS = 1_000_000


@dataclass(frozen=True, slots=True)
class OpenbNode:
    name: str
    cpu_milli: int
    memory_mib: int
    gpus: int
    model: str


@dataclass(frozen=True, slots=True)
class OpenbTask:
    name: str
    cpu_milli: int
    memory_mib: int
    num_gpu: int
    gpu_milli: int  # per GPU, as pod_csv_to_yaml.py clamps it: 0 < m <= 1000, else 0/1000
    gpu_spec: str

    @property
    def total_gpu_milli(self) -> int:
        return self.num_gpu * self.gpu_milli

    @property
    def shape(self) -> GpuRequest:
        models = frozenset(m for m in self.gpu_spec.split("|") if m)
        return GpuRequest(self.cpu_milli, self.gpu_milli, self.num_gpu, models)


def _rows(path: Path, columns: Sequence[str]) -> Iterator[tuple[str, dict[str, str]]]:
    try:
        with path.open(newline="") as handle:
            reader = csv.DictReader(handle)
            missing = [c for c in columns if c not in (reader.fieldnames or ())]
            if missing:
                raise TraceError(
                    f"{path}: no column {', '.join(missing)} (want {','.join(columns)})"
                )
            for number, row in enumerate(reader, 2):
                if number > MAX_ROWS:
                    raise TraceError(f"{path}: more than {MAX_ROWS} rows")
                yield f"{path}:{number}", row
    except OSError as exc:
        raise TraceError(f"{path}: {exc.strerror or exc}") from None


def _number(row: dict[str, str], column: str, where: str) -> int:
    text = (row.get(column) or "").strip()
    try:
        value = int(float(text)) if text else 0
    except ValueError:
        raise TraceError(f"{where}: {column} {text!r} is not a number") from None
    if value < 0:
        raise TraceError(f"{where}: {column} {value} is negative")
    return value


def read_nodes(path: str | Path) -> list[OpenbNode]:
    nodes: list[OpenbNode] = []
    for where, row in _rows(Path(path), ("sn", "cpu_milli", "memory_mib", "gpu", "model")):
        name = (row.get("sn") or "").strip()
        if not name:
            raise TraceError(f"{where}: empty sn")
        nodes.append(
            OpenbNode(
                name,
                _number(row, "cpu_milli", where),
                _number(row, "memory_mib", where),
                _number(row, "gpu", where),
                (row.get("model") or "").strip(),
            )
        )
    return nodes


def read_tasks(path: str | Path) -> list[OpenbTask]:
    tasks: list[OpenbTask] = []
    # gpu_spec is optional: the multigpu variants of the trace have no such column (no task
    # there asks for a model)
    columns = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
    for where, row in _rows(Path(path), columns):
        num_gpu = _number(row, "num_gpu", where)
        milli = _number(row, "gpu_milli", where)
        # pod_csv_to_yaml.py: the per-GPU milli annotation, only for GPU tasks.
        milli = 0 if num_gpu == 0 or milli <= 0 else min(milli, FULL_GPU_MILLI)
        tasks.append(
            OpenbTask(
                (row.get("name") or "").strip() or f"task-{len(tasks)}",
                _number(row, "cpu_milli", where),
                _number(row, "memory_mib", where),
                num_gpu if milli else 0,
                milli,
                (row.get("gpu_spec") or "").strip() if num_gpu else "",
            )
        )
    return tasks


def gpu_capacity_milli(nodes: Sequence[OpenbNode]) -> int:
    return sum(node.gpus for node in nodes) * FULL_GPU_MILLI


def workload(
    tasks: Sequence[OpenbTask], capacity_milli: int, seed: int, inflate: float
) -> list[OpenbTask]:
    """The paper's pod sequence for `seed` (see the module docstring)."""
    rng = random.Random(seed)
    by_name = sorted(tasks, key=lambda t: t.name)
    pods = list(by_name)
    rng.shuffle(pods)
    total = sum(t.total_gpu_milli for t in pods)
    target = inflate * capacity_milli
    if total < target and by_name:
        copies = 0
        while True:
            task = by_name[rng.randrange(len(by_name))]
            if total + task.gpu_milli > target:  # the per-GPU milli is tested, as upstream
                break
            total += task.total_gpu_milli
            pods.append(replace(task, name=f"{task.name}-tuned-{copies}"))
            copies += 1
    while total > target and pods:
        index = rng.randrange(len(pods))
        total -= pods[index].total_gpu_milli
        del pods[index]
    return pods


def target_workload(tasks: Sequence[OpenbTask]) -> tuple[TypicalPod, ...]:
    """The paper's target workload: the original trace's popular shapes (GetTypicalPods)."""
    return typical_pods([t.shape for t in tasks])


def _node_objects(node: OpenbNode, shareable: bool) -> tuple[dict[str, Any], dict[str, Any] | None]:
    allocatable = {"cpu": f"{node.cpu_milli}m", "memory": f"{node.memory_mib}Mi", "pods": "1001"}
    obj = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": node.name,
            "labels": {"kubernetes.io/hostname": node.name, "gpu.aiosched.io/model": node.model},
        },
        "status": {"capacity": allocatable, "allocatable": allocatable},
    }
    if not node.gpus:
        return obj, None
    devices = []
    for index in range(node.gpus):
        milli: dict[str, Any] = {"value": str(FULL_GPU_MILLI)}
        if shareable:
            # A claim that asks no milli takes the whole GPU (the policy's default).
            milli["requestPolicy"] = {
                "default": str(FULL_GPU_MILLI),
                "validRange": {"min": "1", "step": "1"},
            }
        device: dict[str, Any] = {
            "name": f"gpu-{index}",
            "attributes": {MODEL_ATTRIBUTE: {"string": node.model}, "index": {"int": index}},
            "capacity": {MILLI_CAPACITY: milli},
        }
        if shareable:
            device["allowMultipleAllocations"] = True
        devices.append(device)
    slice_obj = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node.name}-gpu"},
        "spec": {
            "driver": GPU_DRIVER,
            "nodeName": node.name,
            "pool": {"name": node.name, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }
    return obj, slice_obj


def device_class() -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": GPU_CLASS},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{GPU_DRIVER}"'}}]},
    }


def task_objects(task: OpenbTask, shareable: bool) -> PodArrival:
    requests = {"cpu": f"{task.cpu_milli}m", "memory": f"{task.memory_mib}Mi"}
    container: dict[str, Any] = {
        "name": "task",
        "image": "registry.k8s.io/pause:3.9",
        "resources": {"requests": requests, "limits": requests},
    }
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": task.name, "namespace": NAMESPACE},
        "spec": {"containers": [container]},
    }
    if not task.num_gpu:
        return PodArrival(0.0, pod)
    claim_name = f"{task.name}-gpu"
    exactly: dict[str, Any] = {
        "deviceClassName": GPU_CLASS,
        "allocationMode": "ExactCount",
        "count": task.num_gpu,
    }
    models = [m for m in task.gpu_spec.split("|") if m]
    if models:
        exactly["selectors"] = [{"cel": {"expression": model_selector(models)}}]
    if shareable and task.num_gpu == 1 and task.gpu_milli < FULL_GPU_MILLI:
        exactly["capacity"] = {"requests": {MILLI_CAPACITY: str(task.gpu_milli)}}
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": claim_name, "namespace": NAMESPACE},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}},
    }
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim_name}]
    container["resources"]["claims"] = [{"name": "gpu"}]
    return PodArrival(0.0, pod, (claim,))


def openb_trace(
    name: str,
    nodes: Sequence[OpenbNode],
    tasks: Sequence[OpenbTask],
    *,
    shareable: bool = False,
) -> Trace:
    """The cluster and the given task sequence (`workload`'s) as a trace, all arriving at 0
    in order, none leaving."""
    node_objects = []
    slices = []
    for node in nodes:
        obj, slice_obj = _node_objects(node, shareable)
        node_objects.append(obj)
        if slice_obj is not None:
            slices.append(slice_obj)
    return Trace(
        name=name,
        nodes=tuple(node_objects),
        device_classes=(device_class(),),
        resource_slices=tuple(slices),
        pods=tuple(task_objects(task, shareable) for task in tasks),
    )
