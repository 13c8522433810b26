"""The six policies as Score plugins (see the package docstring for their sources).

Each reads, in PreScore, the pod's GPU request (its ResourceClaims of the GPU DeviceClass) and
the devices the DRA claim tracker holds allocated, once per cycle; Score then reads one node's
GPUs from that. A CPU-only pod is scored too (FGD, DotProduct, BestFit weigh its CPU; the
others give it 0, as the simulator). None signs pods for opportunistic batching: every pod gets
a full cycle, as in the paper.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from scheduler.api.node import NodeView
from scheduler.api.objects import PodView
from scheduler.api.resource import DeviceSubRequest
from scheduler.framework.interface import MAX_NODE_SCORE, CycleState, Handle, NodeScore
from scheduler.framework.registry import ArgsError, PluginEntry, check_known_fields
from scheduler.framework.status import Status
from scheduler.listers.resource_objects import DeviceID
from scheduler.plugins.dynamicresources.claims import ClaimsNotReady, pod_claims
from scheduler.plugins.dynamicresources.ranking import DeviceChoice, DeviceRanker
from scheduler.plugins.gpushare.draws import draws_below
from scheduler.plugins.gpushare.frag import FragMeasure, TypicalPod, typical_pods
from scheduler.plugins.gpushare.gpus import (
    Allocated,
    GpuIndex,
    GpuRequest,
    NodeGpus,
    gpu_request,
)
from scheduler.plugins.gpushare.row_scores import RowScoreMemo
from scheduler.plugins.gpushare.scores import (
    affinity_tag,
    best_fit_gpu,
    best_fit_raw,
    dot_product_score,
    fgd_score,
    gpu_clustering_score,
    gpu_packing_score,
)

if TYPE_CHECKING:
    from scheduler.cache.node_info import NodeInfo
    from scheduler.cache.node_table import IntArray, NodeTable
    from scheduler.cache.rows import Rows

_NO_GPUS = NodeGpus((), "")
#: FGD's scores kept at most before its memo starts over.
_SCORE_MEMO_MAX = 100_000


@dataclass(frozen=True, slots=True)
class _Cycle:
    request: GpuRequest
    allocated: Allocated


class _GpuPolicy:
    """What the six share: the request and the GPUs' state per cycle, a node's GPUs."""

    name = ""

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        if handle is None:
            raise ValueError(f"{self.name} needs a framework handle")
        self._handle = handle
        self._resources = handle.cluster_objects.resources
        self._gpus = GpuIndex(self._resources)
        self._state_key = f"PreScore{self.name}"
        # The last pod's request: the ranker is asked once per node in a cycle.
        self._last: tuple[str, str, GpuRequest] | None = None
        # Scores per row across cycles (row_scores.py)
        self._row_scores = RowScoreMemo()
        self._resources.slices.subscribe(self._row_scores.slices_changed)

    def _request(self, pod: PodView) -> GpuRequest:
        last = self._last
        if last is not None and last[0] == pod.uid and last[1] == pod.resource_version:
            return last[2]
        try:
            claims = pod_claims(pod, self._resources)
        except ClaimsNotReady:
            claims = []
        request = gpu_request(pod.requests.milli_cpu, claims)
        self._last = (pod.uid, pod.resource_version, request)
        return request

    def device_ranker_for(self, pod: PodView) -> DeviceRanker | None:
        """For a share of one GPU: a DeviceRanker that offers the GPU this policy picks first
        (open_gpu_share.go's gpuSelMethod); whole GPUs go in device order (the lowest-index
        free ones, as the simulator's AllocateExclusiveGpuId). DynamicResources asks it in
        PreFilter, once per cycle (ranking.py, PodDeviceRankers): the GPUs' state is read then,
        as its allocator's."""
        request = self._request(pod)
        if not request.is_share:
            return None
        return _PolicyRanker(self, request, Allocated.read(self._resources))

    def choose_gpu_on(
        self, request: GpuRequest, node_name: str, allocated: Allocated
    ) -> DeviceID | None:
        gpus = self._gpus.by_node().get(node_name)
        if gpus is None:
            return None
        node_info = self._handle.snapshot().get(node_name)
        cpu_left = 0
        if node_info is not None:
            cpu_left = node_info.allocatable.milli_cpu - node_info.requested.milli_cpu
        chosen = self._choose_gpu(request, cpu_left, allocated.left(gpus), gpus.model)
        return None if chosen is None else gpus.devices[chosen]

    def _choose_gpu(
        self, request: GpuRequest, cpu_left: int, left: tuple[int, ...], model: str
    ) -> int | None:
        return best_fit_gpu(request, left)

    def pre_score(self, state: CycleState, pod: PodView, nodes: Sequence[NodeInfo]) -> Status:
        state.write(self._state_key, _Cycle(self._request(pod), Allocated.read(self._resources)))
        return Status.OK

    def _node(
        self, state: CycleState, pod: PodView, node_info: NodeInfo
    ) -> tuple[_Cycle, int, tuple[int, ...], str]:
        try:
            cycle: _Cycle = state.read(self._state_key)
        except KeyError:  # PreScore not enabled (a profile may enable the plugin at score only)
            cycle = _Cycle(self._request(pod), Allocated.read(self._resources))
            state.write(self._state_key, cycle)
        gpus = self._gpus.by_node().get(node_info.node_name, _NO_GPUS)
        cpu_left = node_info.allocatable.milli_cpu - node_info.requested.milli_cpu
        return cycle, cpu_left, cycle.allocated.left(gpus), gpus.model

    def score(self, state: CycleState, pod: PodView, node_info: NodeInfo) -> tuple[int, Status]:
        cycle, cpu_left, left, model = self._node(state, pod, node_info)
        return self._score(cycle, node_info, cpu_left, left, model), Status.OK

    def score_rows(
        self, state: CycleState, pod: PodView, table: NodeTable, rows: Rows
    ) -> IntArray | None:
        """`score` for each row, in the rows' order (RandomFit draws in that order), without
        the per-node adapter's calls: the policies score every node of a GPU cluster."""
        if not len(rows):
            return np.zeros(0, dtype=np.int64)
        cycle = self._node(state, pod, table.infos[int(rows[0])])[0]
        by_node = self._gpus.by_node()
        infos = table.infos
        left_of = cycle.allocated.left
        score = self._score

        def score_row(row: int) -> int:
            info = infos[row]
            gpus = by_node.get(info.node_name, _NO_GPUS)
            cpu_left = info.allocatable.milli_cpu - info.requested.milli_cpu
            return score(cycle, info, cpu_left, left_of(gpus), gpus.model)

        memo_key = self._row_memo_key(cycle)
        tracker = self._resources.tracker
        if memo_key is None or cycle.allocated.version != tracker.version:
            return np.fromiter(map(score_row, rows.tolist()), dtype=np.int64, count=len(rows))
        return self._row_scores.scores(
            memo_key, table, rows, tracker, self._gpus.pools_by_node(), score_row
        )

    def _row_memo_key(self, cycle: _Cycle) -> Hashable | None:
        """What, besides the node, this policy's score of a node reads (row_scores.py); None:
        not a function of the node (RandomFit draws)."""
        return cycle.request

    def _score(
        self, cycle: _Cycle, node_info: NodeInfo, cpu_left: int, left: tuple[int, ...], model: str
    ) -> int:
        raise NotImplementedError

    def score_extensions(self) -> Any:
        return None


class _PolicyRanker:
    """DynamicResources' DeviceRanker (dynamicresources/ranking.py) for one pod's share: the
    policy's GPU first, the others after it in the allocator's order."""

    __slots__ = ("_allocated", "_policy", "_request")

    def __init__(self, policy: _GpuPolicy, request: GpuRequest, allocated: Allocated) -> None:
        self._policy = policy
        self._request = request
        self._allocated = allocated

    @property
    def memo_key(self) -> tuple[str, int, GpuRequest]:
        """What tells this ranker's answers apart for DynamicResources' memo of Filter's
        allocations (dynamicresources/memo.py): the policy and the request. The rest of what
        it reads is the node's (CPU left, its GPUs' state), which the memo checks itself."""
        request = self._request
        if type(self._policy)._choose_gpu is _GpuPolicy._choose_gpu:
            # the "best" GPU choice reads neither the pod's CPU nor the node's: pods that
            # differ only in CPU share the answers
            request = dataclasses.replace(request, cpu_milli=0)
        return (self._policy.name, id(self._policy), request)

    def rank(
        self, node: NodeView, request: DeviceSubRequest, choices: Sequence[DeviceChoice]
    ) -> Sequence[DeviceChoice]:
        preferred = self._policy.choose_gpu_on(self._request, node.name, self._allocated)
        if preferred is None:
            return choices
        return sorted(choices, key=lambda choice: choice.device_id != preferred)


class RandomFit(_GpuPolicy):
    """random_score.go draws one feasible node in PreScore and scores it 100, the others 0:
    a uniform choice among the feasible nodes. Here every node draws its score uniformly
    (ties go at random in selectHost), the same uniform choice, with or without PreScore."""

    name = "RandomFit"

    def _score(
        self, cycle: _Cycle, node_info: NodeInfo, cpu_left: int, left: Any, model: str
    ) -> int:
        return self._handle.rng.randrange(MAX_NODE_SCORE + 1)

    def _row_memo_key(self, cycle: _Cycle) -> Hashable | None:
        return None

    def score_rows(
        self, state: CycleState, pod: PodView, table: NodeTable, rows: Rows
    ) -> IntArray | None:
        """One draw per row, in the rows' order: what `score` draws for each, without reading
        the nodes' GPUs (the draw does not depend on them)."""
        return draws_below(self._handle.rng, MAX_NODE_SCORE + 1, len(rows))


class DotProduct(_GpuPolicy):
    """dot_product_score.go (dimExt merge, norm max)."""

    name = "DotProduct"

    def _score(
        self, cycle: _Cycle, node_info: NodeInfo, cpu_left: int, left: Any, model: str
    ) -> int:
        return dot_product_score(cycle.request, cpu_left, left)


class GpuClustering(_GpuPolicy):
    """gpu_clustering_score.go: the node's GPU pods by affinity tag, kept per node generation."""

    name = "GpuClustering"

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        super().__init__(args, handle)
        self._tags: dict[str, tuple[int, dict[str, int]]] = {}

    def _node_tags(self, node_info: NodeInfo) -> dict[str, int]:
        kept = self._tags.get(node_info.node_name)
        if kept is not None and kept[0] == node_info.generation:
            return kept[1]
        tags: dict[str, int] = {}
        for pod in node_info.pods:
            tag = affinity_tag(self._request(pod)) if pod.resource_claims else "no-gpu"
            if tag != "no-gpu":
                tags[tag] = tags.get(tag, 0) + 1
        self._tags[node_info.node_name] = (node_info.generation, tags)
        return tags

    def _score(
        self, cycle: _Cycle, node_info: NodeInfo, cpu_left: int, left: Any, model: str
    ) -> int:
        if cycle.request.gpu_count == 0:
            return 0
        return gpu_clustering_score(cycle.request, left, self._node_tags(node_info))


class GpuPacking(_GpuPolicy):
    """gpu_packing_score.go."""

    name = "GpuPacking"

    def _score(
        self, cycle: _Cycle, node_info: NodeInfo, cpu_left: int, left: Any, model: str
    ) -> int:
        return gpu_packing_score(cycle.request, left)


class BestFit(_GpuPolicy):
    """best_fit_score.go, with its min-max NormalizeScore (plugin_utils.NormalizeScore)."""

    name = "BestFit"

    def _score(
        self, cycle: _Cycle, node_info: NodeInfo, cpu_left: int, left: Any, model: str
    ) -> int:
        return best_fit_raw(cycle.request, cpu_left, left)

    def score_extensions(self) -> BestFit:
        return self

    def normalize_score(self, state: CycleState, pod: PodView, scores: list[NodeScore]) -> Status:
        if not scores:
            return Status.OK
        low = min(s.score for s in scores)
        high = max(s.score for s in scores)
        for entry in scores:
            entry.score = 0 if high == low else (entry.score - low) * MAX_NODE_SCORE // (high - low)
        return Status.OK


@dataclass(frozen=True, slots=True)
class FGDArgs:
    """FGD's target workload: the task shapes and their weights. Empty: learnt from the pods
    the plugin scores (each pod's shape counted once), the 95 % most popular."""

    typical_pods: tuple[TypicalPod, ...] = ()


def _int(raw: Mapping[str, Any], key: str, path: str) -> int:
    value = raw.get(key, 0)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ArgsError(f"{path}.{key}", f"must be a whole number >= 0, got {value!r}")
    return value


def decode_fgd_args(raw: Mapping[str, Any] | None) -> FGDArgs:
    if not raw:
        return FGDArgs()
    check_known_fields(raw, ("typicalPods",))
    items = raw.get("typicalPods") or []
    if not isinstance(items, list):
        raise ArgsError("typicalPods", "must be a list")
    typical = []
    for index, item in enumerate(items):
        path = f"typicalPods[{index}]"
        if not isinstance(item, Mapping):
            raise ArgsError(path, "must be an object")
        check_known_fields(item, ("cpuMilli", "gpuMilli", "gpuCount", "models", "weight"), path)
        models = item.get("models") or []
        if not isinstance(models, list) or not all(isinstance(m, str) for m in models):
            raise ArgsError(f"{path}.models", "must be a list of GPU model names")
        weight = item.get("weight", 1)
        if not isinstance(weight, int | float) or isinstance(weight, bool) or weight <= 0:
            raise ArgsError(f"{path}.weight", f"must be a number > 0, got {weight!r}")
        gpu_milli = _int(item, "gpuMilli", path)
        if gpu_milli > 1000:
            raise ArgsError(f"{path}.gpuMilli", f"must be at most 1000, got {gpu_milli}")
        shape = GpuRequest(
            _int(item, "cpuMilli", path), gpu_milli, _int(item, "gpuCount", path), frozenset(models)
        )
        typical.append(TypicalPod(shape, float(weight)))
    total = sum(t.weight for t in typical)
    return FGDArgs(tuple(TypicalPod(t.shape, t.weight / total) for t in typical))


class FGD(_GpuPolicy):
    """fgd_score.go: the node (and, for a share, the GPU) whose fragmentation of the target
    workload grows least."""

    name = "FGD"

    def __init__(self, args: FGDArgs | None = None, handle: Handle | None = None) -> None:
        super().__init__(args, handle)
        self._fixed = bool(args and args.typical_pods)
        self._measure = FragMeasure(args.typical_pods if args else ())
        self._seen: dict[GpuRequest, int] = {}
        self._learnt_from = 0
        self._measure_version = 0
        # (the measure they were computed with, (request, CPU left, GPUs left, model) → score)
        self._scores: tuple[FragMeasure, dict[tuple[GpuRequest, int, Any, str], int]] = (
            self._measure,
            {},
        )

    def _row_memo_key(self, cycle: _Cycle) -> Hashable | None:
        return (cycle.request, self._measure_version)

    def pre_score(self, state: CycleState, pod: PodView, nodes: Sequence[NodeInfo]) -> Status:
        status = super().pre_score(state, pod, nodes)
        if not self._fixed:
            cycle: _Cycle = state.read(self._state_key)
            self._seen[cycle.request] = self._seen.get(cycle.request, 0) + 1
            total = sum(self._seen.values())
            # Relearn as the workload doubles: the measure's memo stays useful meanwhile.
            if total >= 2 * self._learnt_from or len(self._seen) > 10_000:
                counts = [shape for shape, n in self._seen.items() for _ in range(n)]
                self._measure = FragMeasure(typical_pods(counts))
                self._measure_version += 1
                self._learnt_from = total
                if len(self._seen) > 10_000:
                    self._seen.clear()
        return status

    def _score(
        self, cycle: _Cycle, node_info: NodeInfo, cpu_left: int, left: Any, model: str
    ) -> int:
        # A pure function of these and the measure: most nodes look alike (same model, same
        # GPUs left), and a node is scored again for every pod until it changes.
        key = (cycle.request, cpu_left, left, model)
        memo = self._scores
        if memo[0] is not self._measure or len(memo[1]) > _SCORE_MEMO_MAX:
            memo = self._scores = (self._measure, {})
        score = memo[1].get(key)
        if score is None:
            score = memo[1][key] = fgd_score(cycle.request, cpu_left, left, model, self._measure)[0]
        return score


class NodeRank:
    """The simulator's tie-break, as a Score plugin: each node gets a random rank, drawn once
    from the scheduler's seeded randomness the first time it is scored, and scores it
    (0-100). Enabled at weight 1 beside a policy at weight 1000, it only decides between nodes
    the policy scores equally, and always the same way: the paper's kube-scheduler fork sends
    ties to the node with the smallest seeded rank (selectHost on names prefixed by a seeded
    permutation), which consolidates pods that upstream's uniform tie-break spreads."""

    name = "NodeRank"

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        if handle is None:
            raise ValueError(f"{self.name} needs a framework handle")
        self._rng = handle.rng
        self._ranks: dict[str, int] = {}
        # (the NodeTable, rank per row, -1 unknown): a cycle reads ranks with one array index
        self._table_ranks: tuple[NodeTable, IntArray] | None = None

    def score(self, state: CycleState, pod: PodView, node_info: NodeInfo) -> tuple[int, Status]:
        rank = self._ranks.get(node_info.node_name)
        if rank is None:
            rank = self._ranks[node_info.node_name] = self._rng.randrange(MAX_NODE_SCORE + 1)
            if len(self._ranks) > 1_000_000:  # bounded: nodes come and go over months
                self._ranks.clear()
                self._table_ranks = None
        return rank, Status.OK

    def score_rows(
        self, state: CycleState, pod: PodView, table: NodeTable, rows: Rows
    ) -> IntArray | None:
        """`score` per row in the rows' order (new nodes draw their ranks in that order)."""
        kept = self._table_ranks
        if kept is None or kept[0] is not table or len(kept[1]) != len(table):
            kept = self._table_ranks = (table, np.full(len(table), -1, dtype=np.int64))
        by_row = kept[1]
        scores = by_row[rows]
        if (scores < 0).any():
            # rows not seen in this table yet, in the rows' order (new nodes draw in it)
            infos = table.infos
            for position in np.flatnonzero(scores < 0).tolist():
                row = int(rows[position])
                rank = self._ranks.get(infos[row].node_name)
                if rank is None:
                    rank = self.score(state, pod, infos[row])[0]
                scores[position] = by_row[row] = rank
        return scores

    def score_extensions(self) -> None:
        return None


PLUGIN_ENTRIES = (
    PluginEntry(RandomFit.name, RandomFit),
    PluginEntry(DotProduct.name, DotProduct),
    PluginEntry(GpuClustering.name, GpuClustering),
    PluginEntry(GpuPacking.name, GpuPacking),
    PluginEntry(BestFit.name, BestFit),
    PluginEntry(FGD.name, FGD, decode_fgd_args),
    PluginEntry(NodeRank.name, NodeRank),
)
