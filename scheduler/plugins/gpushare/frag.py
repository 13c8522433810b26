"""The target workload and a node's GPU fragmentation for it (the FGD paper's measure).

From hkust-adsl/kubernetes-scheduler-simulator:
- the target workload M, "typical pods": `GetTypicalPods` (pkg/simulator/simulator.go): pods
  keyed by (milli-CPU, milli-GPU per GPU, GPU count, GPU models), the most frequent keys until
  they cover 95 % of the pods, each weighted by its share among them;
- F_n(m) and F_n(M) = Σ p_m F_n(m): `NodeGpuShareFragAmount` and `GetNodePodFrag`
  (pkg/utils/frag.go). The GPU milli left on node n that a task of shape m cannot use: all of
  it when m needs no GPU, cannot run on the node's model, or does not fit (GPUs or CPU);
  else the GPUs with less left than m asks of one.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from scheduler.plugins.gpushare.gpus import GpuRequest

#: GetTypicalPods' podPopularityThreshold in the paper's runs.
POPULARITY_PERCENT = 95


@dataclass(frozen=True, slots=True)
class TypicalPod:
    shape: GpuRequest
    weight: float


def typical_pods(
    requests: Iterable[GpuRequest], percent: float = POPULARITY_PERCENT
) -> tuple[TypicalPod, ...]:
    """The most frequent shapes covering `percent` % of `requests` (the one crossing the
    threshold included), weights renormalised to sum to 1. Ties in frequency: more CPU, more
    GPU milli, more GPUs, then the models' text first (GetTypicalPods' sort)."""
    counts = Counter(requests)
    total = sum(counts.values())
    if not total:
        return ()
    ordered = sorted(
        counts.items(),
        key=lambda item: (
            -item[1],
            -item[0].cpu_milli,
            -item[0].gpu_milli,
            -item[0].gpu_count,
            "|".join(sorted(item[0].models)),
        ),
    )
    chosen: list[tuple[GpuRequest, int]] = []
    covered = 0
    for shape, count in ordered:
        chosen.append((shape, count))
        covered += count
        if covered * 100 >= percent * total:
            break
    weight_total = sum(count for _, count in chosen)
    return tuple(TypicalPod(shape, count / weight_total) for shape, count in chosen)


def task_frag(cpu_left: int, left: Sequence[int], model: str, shape: GpuRequest) -> int:
    """F_n(m): the GPU milli left on the node that a task of `shape` cannot use."""
    idle = sum(left)
    if shape.gpu_milli == 0 or (shape.models and model not in shape.models):
        return idle  # a CPU-only task uses no GPU; the model constraint excludes the node
    usable = 0
    stranded = 0
    for milli in left:
        if milli >= shape.gpu_milli:
            usable += 1
        else:
            stranded += milli
    if usable >= shape.gpu_count and cpu_left >= shape.cpu_milli:
        return stranded
    return idle  # lacks GPU or CPU: nothing left is usable by it


class FragMeasure:
    """F_n(M) for one target workload, memoised by the node's state (as the simulator's
    fragMemo): nodes of one shape in one state share the answer."""

    __slots__ = ("_cpu_steps", "_memo", "typical")

    def __init__(self, typical: Sequence[TypicalPod]) -> None:
        self.typical = tuple(typical)
        # CPU left matters only through which typical tasks it can hold: the memo keys on that.
        self._cpu_steps = sorted({t.shape.cpu_milli for t in self.typical})
        self._memo: dict[tuple[int, tuple[int, ...], str], float] = {}

    def node(self, cpu_left: int, left: Sequence[int], model: str) -> float:
        if not any(left):
            return 0.0
        step = bisect_right(self._cpu_steps, cpu_left)
        key = (step, tuple(sorted(left)), model)
        value = self._memo.get(key)
        if value is None:
            value = sum(
                t.weight * task_frag(cpu_left, key[1], model, t.shape) for t in self.typical
            )
            if len(self._memo) > 1_000_000:  # bounded: node states are few, but be safe
                self._memo.clear()
            self._memo[key] = value
        return value
