"""The six policies' node scores and the GPU a shared request takes, as pure functions of the
pod's request and the node's state (CPU left, milli left per GPU, model).

Each follows its file in hkust-adsl/kubernetes-scheduler-simulator pkg/simulator/plugin/
(cited per function), with its integer arithmetic: Go's int64() truncation and integer
division are kept, since ties between nodes then go the same way.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

from scheduler.plugins.gpushare.frag import FragMeasure
from scheduler.plugins.gpushare.gpus import FULL_GPU_MILLI, GpuRequest

#: MaxSpecCpu and MaxSpecGpu (pkg/type/open-gpu-share/utils/const.go): the normalisers.
MAX_SPEC_CPU = 128_000
MAX_SPEC_GPU = 8_000


def _go_div(a: int, b: int) -> int:
    """Go's integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def dot_product_score(pod: GpuRequest, cpu_left: int, left: Sequence[int]) -> int:
    """dot_product_score.go with dimExt "merge", norm "max": free resources · request,
    normalised by the largest node, averaged over the two dimensions; less is better."""
    if cpu_left < pod.cpu_milli:
        return 0
    node = (cpu_left / MAX_SPEC_CPU, sum(left) / MAX_SPEC_GPU)
    asked = (pod.cpu_milli / MAX_SPEC_CPU, pod.total_gpu_milli / MAX_SPEC_GPU)
    dot = (node[0] * asked[0] + node[1] * asked[1]) / 2
    return int(100 * (1 - dot))


def affinity_tag(pod: GpuRequest) -> str:
    """GetGpuAffinityFromPodAnnotation (pkg/type/open-gpu-share/utils/pod.go)."""
    if pod.gpu_count == 0 or pod.gpu_milli == 0:
        return "no-gpu"
    if pod.gpu_count == 1 and pod.gpu_milli < FULL_GPU_MILLI:
        return "share-gpu"
    return f"{pod.gpu_count}-gpu"


def gpu_clustering_score(pod: GpuRequest, left: Sequence[int], tags: dict[str, int]) -> int:
    """gpu_clustering_score.go: pods of one kind together. `tags`: the node's GPU pods by
    affinity tag ("no-gpu" not counted)."""
    if pod.gpu_count == 0 or pod.gpu_milli == 0:
        return 0
    base = _go_div(25 * (MAX_SPEC_GPU - sum(left)), MAX_SPEC_GPU)
    tag = affinity_tag(pod)
    present = {name for name, count in tags.items() if count > 0}
    if tag in present:
        return base + (75 if present == {tag} else 50)
    if not present:
        return base + 25
    return base


def gpu_packing_score(pod: GpuRequest, left: Sequence[int]) -> int:
    """gpu_packing_score.go: partly used GPUs first (case 1), then nodes partly used (case 2),
    idle nodes last (case 3)."""
    if pod.gpu_count == 0 or pod.gpu_milli == 0:
        return 0
    free = sum(1 for milli in left if milli == FULL_GPU_MILLI)
    if free == len(left):
        return max(33 - free, free)
    taken = [milli for milli in sorted(left) if milli >= pod.gpu_milli][: pod.gpu_count]
    if len(taken) < pod.gpu_count:
        return 0  # Filter rejects such a node; the simulator returns an error
    whole = sum(1 for milli in taken if milli == FULL_GPU_MILLI)
    if whole:
        return max(50 - whole, 33)
    return max(100 - _go_div(sum(_go_div(milli * 100, FULL_GPU_MILLI) for milli in taken), 10), 50)


def best_fit_raw(pod: GpuRequest, cpu_left: int, left: Sequence[int]) -> int:
    """best_fit_score.go before NormalizeScore: the least left over after placing the pod."""
    s = 0.5 * (cpu_left - pod.cpu_milli) / MAX_SPEC_CPU
    s += 0.5 * (sum(left) - pod.total_gpu_milli) / MAX_SPEC_GPU
    return int(100 * (1 - s))


def _sigmoid(x: float) -> float:
    if x < -700:
        return 0.0
    return 1 / (1 + math.exp(-x))


def _take_whole(left: Sequence[int], pod: GpuRequest) -> list[int]:
    """The node after a non-shared request: the first GPUs in ascending-left stable order with
    enough left (for whole GPUs: the lowest-index free ones), `gpu_count` of them."""
    after = list(left)
    order = sorted(range(len(left)), key=lambda i: left[i])
    taken = 0
    for index in order:
        if taken == pod.gpu_count:
            break
        if left[index] >= pod.gpu_milli:
            after[index] -= pod.gpu_milli
            taken += 1
    return after


def fgd_score(
    pod: GpuRequest, cpu_left: int, left: Sequence[int], model: str, frag: FragMeasure
) -> tuple[int, int | None]:
    """fgd_score.go: 100·sigmoid((F_before - F_after)/1000), truncated; for a shared request
    the GPU giving the best score (the lowest index on ties). Returns (score, GPU index or
    None when the request is not a share)."""
    before = frag.node(cpu_left, left, model)
    cpu_after = cpu_left - pod.cpu_milli
    if pod.is_share:
        best: int | None = None
        gpu: int | None = None
        for index, milli in enumerate(left):
            if milli < pod.gpu_milli:
                continue
            after = list(left)
            after[index] -= pod.gpu_milli
            score = int(100 * _sigmoid((before - frag.node(cpu_after, after, model)) / 1000))
            if best is None or score > best:
                best, gpu = score, index
        return (best if best is not None else 0), gpu
    after_left = _take_whole(left, pod) if pod.gpu_count else list(left)
    return int(100 * _sigmoid((before - frag.node(cpu_after, after_left, model)) / 1000)), None


def best_fit_gpu(pod: GpuRequest, left: Sequence[int]) -> int | None:
    """The `best` GPU selection (open_gpu_share.go): the GPU with the least left that holds
    the share, the lowest index on ties."""
    best: int | None = None
    for index, milli in enumerate(left):
        if milli >= pod.gpu_milli and (best is None or milli < left[best]):
            best = index
    return best


def random_gpu(pod: GpuRequest, left: Sequence[int], rng: random.Random) -> int | None:
    """The `random` GPU selection: uniform over the GPUs that hold the share."""
    fits = [index for index, milli in enumerate(left) if milli >= pod.gpu_milli]
    return rng.choice(fits) if fits else None
