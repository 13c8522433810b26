"""Opportunistic batching: the next pod with the same signature takes the previous pod's
runner-up instead of filtering and scoring the cluster again.

Upstream kube-scheduler (feature gate OpportunisticBatching, beta and on by default since
v1.35): pkg/scheduler/framework/runtime/batch.go, the newest stored version (after v1.35:
re-scoring, kubernetes/kubernetes#140289 for v1.37, and the pod_nominated flush); the
signature in pkg/scheduler/framework/runtime/framework.go (computeBatchablePlugins, SignPod)
and staging/src/k8s.io/kube-scheduler/framework/signers.go (the signer names and what each
fragment holds), the metrics in pkg/scheduler/metrics/metrics.go.

Why it is safe to reuse a ranking: two pods with equal signatures get the same feasibility and
scores on the same nodes (every PreFilter/Filter/PreScore/Score plugin says what of the pod it
reads). When the previous pod took node N, N is the only node whose state the placement
changed. So N is filtered again for the new pod: if it no longer fits, the best remaining
candidate of the previous ranking is the new pod's best among the same candidates; if it still
fits, N is re-scored (PreScore, Score on N alone, then NormalizeScore over N's fresh raw scores
and the candidates' kept raw scores) and competes with them again. v1.35 ended the batch there
(flush reason node_not_full), which left pods that share nodes unbatched. The hinted node
itself is filtered again by the algorithm before it is taken.

What upstream does not check, and neither do we: changes to other nodes made by events between
the two cycles (the batch lives at most 500 ms), and that the sampled candidate set
(numFeasibleNodesToFind) and, once N left the running, the normalisation over the remaining
candidates are those a fresh cycle would have used. ARCHITECTURE.md (the fast-path contract,
batching) says when decisions are identical.

Not ported: upstream reuses a batch between the pods of one PodGroup scheduling cycle
(GenericWorkload); aiosched has no PodGroups yet, so one cycle is always one pod. Upstream
signs a pod when it is queued (newQueuedPodInfo); here the pod is signed when the batch is
asked for a hint, as v1.35 did: signing in the queue would need each profile's signer there
and a new signature on every pod update, more than the queue should change for it now.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import orjson

from scheduler.framework.interface import (
    CycleState,
    SignFragment,
    SignPlugin,
)
from scheduler.framework.status import Status

if TYPE_CHECKING:
    from scheduler.api.objects import PodView
    from scheduler.cache.node_info import NodeInfo
    from scheduler.cache.node_table import IntArray
    from scheduler.framework.interface import Plugin, SnapshotLister

__all__ = [
    "MAX_BATCH_AGE_SECONDS",
    "BatchMetrics",
    "NodeNames",
    "OpportunisticBatch",
    "PodSignature",
    "PodSigner",
    "SortedScoredNodes",
]

#: A pod's signature: canonical JSON of {signer name: fragment}; None: the pod cannot be signed.
PodSignature = bytes

#: batch.go maxBatchAge: an older batch is dropped (long runs of equal pods, long gaps).
MAX_BATCH_AGE_SECONDS = 0.5

# Signer names (signers.go).
DYNAMIC_RESOURCES = "v1.Pod.Spec.DynamicResources"
IMAGE_NAMES = "v1.Pod.Spec.CanonicalImageNames()"
LABELS = "v1.Pod.Labels"
NODE_NAME = "v1.Pod.Spec.NodeName"
NODE_AFFINITY = "v1.Pod.Spec.Affinity.NodeAffinity"
NODE_SELECTOR = "v1.Pod.Spec.Affinity.NodeSelector"
HOST_PORTS = "v1.Pod.Spec.HostPorts()"
RESOURCES = "v1.Pod.Spec.ContainerRequestsAndOverheads()"
SCHEDULER_NAME = "v1.Pod.Spec.SchedulerName"
TOLERATIONS = "v1.Pod.Spec.Tolerations"
VOLUMES = "v1.Pod.Spec.Volumes.NonSyntheticSources()"

# batch_attempts_total{result}
HINT_USED = "hint_used"
HINT_NOT_USED = "hint_not_used"
NO_HINT = "no_hint"
# batch_cache_flushed_total{reason} (metrics.go; v1.35's node_not_full is gone: a still
# feasible node is re-scored)
FLUSH_POD_FAILED = "pod_failed"
FLUSH_POD_SKIPPED = "pod_skipped"
FLUSH_POD_NOMINATED = "pod_nominated"
FLUSH_NODE_MISSING = "node_missing"
FLUSH_EMPTY_LIST = "empty_list"
FLUSH_EXPIRED = "expired"
FLUSH_POD_INCOMPATIBLE = "pod_incompatible"
FLUSH_POD_NOT_BATCHABLE = "pod_not_batchable"
FLUSH_PRESCORE_ERROR = "prescore_error"
FLUSH_RESCORE_ERROR = "rescore_error"
FLUSH_NORMALIZE_ERROR = "normalize_error"
# A Filter error on the node to re-score: the review of kubernetes/kubernetes#140289 flushes
# it (batch.go at review, line 244) rather than re-scoring a node whose filters failed; the
# stored batch.go predates that and re-scores it.
FLUSH_FILTER_ERROR = "filter_error"


# ---- the fragments in-tree plugins contribute (signers.go) ----------------------------------


def _spec(pod: PodView) -> Any:
    spec = pod.raw.get("spec")
    return spec if isinstance(spec, dict) else {}


def resources_fragment(pod: PodView) -> SignFragment:
    """Requests with overhead as the scheduler counts them (NodeResourcesFit,
    NodeResourcesBalancedAllocation)."""
    r = pod.requests
    value = (
        r.milli_cpu, r.memory, r.ephemeral_storage, sorted(r.scalar.items()),
        pod.non_zero_milli_cpu, pod.non_zero_memory,
    )  # fmt: skip
    return (RESOURCES, value)


def tolerations_fragment(pod: PodView) -> SignFragment:
    """TaintToleration, NodeUnschedulable: the tolerations, sorted by key then value."""
    tolerations = [t for t in _spec(pod).get("tolerations") or () if isinstance(t, dict)]
    tolerations.sort(key=lambda t: (str(t.get("key", "")), str(t.get("value", ""))))
    return (TOLERATIONS, tolerations)


def node_affinity_fragments(pod: PodView) -> list[SignFragment]:
    """NodeAffinity: the node affinity as written and the nodeSelector. Upstream sorts terms
    and values; keeping the written order only makes reordered but equal pods sign apart
    (a missed batch, never a wrong one)."""
    affinity = _spec(pod).get("affinity")
    node_affinity = affinity.get("nodeAffinity") if isinstance(affinity, dict) else None
    return [(NODE_AFFINITY, node_affinity), (NODE_SELECTOR, dict(pod.node_selector))]


def node_name_fragment(pod: PodView) -> SignFragment:
    return (NODE_NAME, pod.node_name)


def host_ports_fragment(pod: PodView) -> SignFragment:
    """NodePorts: the distinct host ports, sorted (HostPortsSigner)."""
    return (HOST_PORTS, sorted({port.port for port in pod.host_ports}))


def image_names_fragment(pod: PodView) -> SignFragment:
    """ImageLocality: the normalized image names."""
    return (IMAGE_NAMES, sorted(pod.images))


def volumes_fragment(pod: PodView) -> SignFragment:
    """The volume plugins: every volume source but ConfigMaps and Secrets, which never affect
    scheduling and would make every pod unique (VolumesSigner)."""
    sources = []
    for volume in _spec(pod).get("volumes") or ():
        if not isinstance(volume, dict) or "configMap" in volume or "secret" in volume:
            continue
        source = {k: v for k, v in volume.items() if k != "name"}
        sources.append(orjson.dumps(source, option=orjson.OPT_SORT_KEYS).decode())
    sources.sort()
    return (VOLUMES, sources)


def labels_fragment(pod: PodView) -> SignFragment:
    """InterPodAffinity: existing pods' terms match the incoming pod's labels."""
    return (LABELS, dict(pod.labels))


OK_NO_FRAGMENTS: tuple[Sequence[SignFragment], Status] = ((), Status.OK)


def cannot_sign(reason: str) -> tuple[Sequence[SignFragment], Status]:
    return ((), Status.unschedulable(reason))


# ---- the signature of a pod for one profile (framework.go SignPod) ---------------------------


class PluginTimer(Protocol):
    def on_plugin(self, point: str, plugin: str, status: Status, seconds: float) -> None: ...

    def on_extension_point(self, point: str, status: Status, seconds: float) -> None: ...


class PodSigner:
    """computeBatchablePlugins + SignPod for one profile: every distinct PreFilter, Filter,
    PreScore and Score plugin must implement SignPlugin, and no extender may be configured,
    or no pod of the profile is signed."""

    def __init__(
        self,
        plugins_at_points: Iterable[Plugin],
        has_extenders: bool,
        clock: Callable[[], float],
        observer: PluginTimer,
    ) -> None:
        self.enabled = not has_extenders
        self.signers: list[SignPlugin] = []
        self.unsupported: list[str] = []
        seen: set[str] = set()
        for plugin in plugins_at_points:
            if plugin.name in seen:
                continue
            seen.add(plugin.name)
            if isinstance(plugin, SignPlugin):
                self.signers.append(plugin)
            else:
                self.unsupported.append(plugin.name)
                self.enabled = False
        # A plugin that refuses every pod whatever it holds (PodTopologySpread with default
        # constraints: the default profile) settles every signature at once.
        self.refused_by = next(
            (p.name for p in self.signers if getattr(p, "signs_no_pod", _never)()), ""
        )
        self._clock = clock
        self._observer = observer

    def sign(self, pod: PodView, record_point: bool) -> PodSignature | None:
        """The pod's signature, None when some plugin cannot sign it. Times the Sign point and
        each plugin at it when the cycle records plugin metrics. Upstream times every plugin's
        SignPod on every pod; here, as at the other points, only the sampled cycles are timed,
        which keeps signing a pod no batch will use at a few microseconds."""
        clock = self._clock
        start = clock() if record_point else 0.0
        status = Status.OK
        signature = None
        if self.enabled:
            signature = self._sign(pod, clock if record_point else None)
        if signature is None and self.enabled:
            status = Status.unschedulable()
        if record_point:
            self._observer.on_extension_point("Sign", status, clock() - start)
        return signature

    def _sign(self, pod: PodView, clock: Callable[[], float] | None) -> PodSignature | None:
        """Every signer's fragments; with `clock`, each plugin is timed
        (plugin_execution_duration_seconds{extension_point=Sign}) and asked even when one
        refuses every pod, so the sampled timings stay truthful."""
        if clock is None and self.refused_by:
            return None  # what asking every plugin would end in, without the fragments
        fragments: dict[str, Any] = {SCHEDULER_NAME: pod.scheduler_name}
        for plugin in self.signers:
            start = clock() if clock is not None else 0.0
            pieces, status = _sign_pod(plugin, pod)
            if clock is not None:
                self._observer.on_plugin("Sign", plugin.name, status, clock() - start)
            if not status.is_success:
                return None
            for key, value in pieces:
                fragments[key] = value
        try:
            return orjson.dumps(fragments, option=orjson.OPT_SORT_KEYS)
        except TypeError:
            return None


def _never() -> bool:
    return False


def _sign_pod(plugin: SignPlugin, pod: PodView) -> tuple[Sequence[SignFragment], Status]:
    try:
        return plugin.sign_pod(pod)
    except Exception as exc:  # a plugin bug makes the pod unbatchable, nothing worse
        return (), Status.error(f"SignPod: {exc}")


# ---- the batch (batch.go) ---------------------------------------------------------------------


class BatchMetrics(Protocol):
    """Upstream's batching metrics: scheduler_batch_attempts_total{profile,result},
    scheduler_batch_cache_flushed_total{profile,reason},
    scheduler_batch_rescore_attempts_total{profile},
    scheduler_batch_rescore_duration_seconds{profile},
    scheduler_get_node_hint_duration_seconds{hinted,profile},
    scheduler_store_schedule_results_duration_seconds{profile}."""

    def batch_attempt(self, profile: str, result: str) -> None: ...

    def batch_cache_flushed(self, profile: str, reason: str) -> None: ...

    def batch_rescore_attempt(self, profile: str) -> None: ...

    def batch_rescore_duration(self, profile: str, seconds: float) -> None: ...

    def get_node_hint_duration(self, hinted: str, profile: str, seconds: float) -> None: ...

    def store_schedule_results_duration(self, profile: str, seconds: float) -> None: ...


class NoBatchMetrics:
    def batch_attempt(self, profile: str, result: str) -> None:
        pass

    def batch_cache_flushed(self, profile: str, reason: str) -> None:
        pass

    def batch_rescore_attempt(self, profile: str) -> None:
        pass

    def batch_rescore_duration(self, profile: str, seconds: float) -> None:
        pass

    def get_node_hint_duration(self, hinted: str, profile: str, seconds: float) -> None:
        pass

    def store_schedule_results_duration(self, profile: str, seconds: float) -> None:
        pass


class NodeNames(Protocol):
    """The candidates' node names by position (a list, or a view over the cycle's nodes that
    reads a name only when asked)."""

    def __len__(self) -> int: ...

    def __getitem__(self, index: int, /) -> str: ...


#: (totals | None, status) of candidates from their raw score columns (normalised in place)
#: and a way to list their node names: the framework's normalize_scores bound to one cycle.
Normalizer = Callable[
    [Sequence[str], list["IntArray"], int, Callable[[], Sequence[str]]],
    tuple["IntArray | None", Status],
]


class SortedScoredNodes:
    """The candidates of a scored cycle but the chosen one, best first (upstream's
    SortedScoredNodes: Pop, Len, UnorderedList), with each candidate's raw score per Score
    plugin so that the node the last pod went to can be re-scored and ranked among them.

    Arrays over the scoring cycle's candidates in scan order (`names`, one position each):
    `positions` of the candidates still in (ascending), their weighted `totals` and their `raw`
    scores (one column per plugin of `plugins`). The ranking (best total first, equal totals in
    scan order) is sorted on the first pop or re-score: most cycles store a ranking that no
    later cycle reads."""

    __slots__ = ("_next", "_order", "last_taken", "names", "plugins", "positions", "raw", "totals")

    names: NodeNames

    def __init__(
        self,
        names: NodeNames,
        totals: IntArray | None = None,
        *,
        plugins: Sequence[str] = (),
        raw: Sequence[IntArray] = (),
        chosen: int | None = None,
    ) -> None:
        """Candidates `names` with `totals` (all equal when None) and `raw` columns; `chosen`
        is the position of the node the cycle took, which is left out."""
        count = len(names)
        positions = np.arange(count, dtype=np.intp)
        totals = np.zeros(count, dtype=np.int64) if totals is None else totals
        matrix = np.array(raw, dtype=np.int64).reshape(len(raw), count)
        if chosen is not None:
            positions = np.delete(positions, chosen)
            totals = np.delete(totals, chosen)
            matrix = np.delete(matrix, chosen, axis=1)
        self.names = names
        self.positions = positions
        self.totals = totals
        self.plugins = tuple(plugins)
        self.raw: IntArray = matrix  # one row per plugin, one column per candidate
        # The position of the node that last left the candidates (the chosen one, then each
        # hint popped): the node the next pod's batch re-scores.
        self.last_taken = -1 if chosen is None else chosen
        self._order: IntArray | None = None
        self._next = 0

    def _ranked(self) -> IntArray:
        if self._order is None:
            self._order = np.argsort(-self.totals, kind="stable")
        return self._order

    def pop(self) -> str:
        slot = int(self._ranked()[self._next])
        self._next += 1
        self.last_taken = int(self.positions[slot])
        return self.names[self.last_taken]

    def __len__(self) -> int:
        return len(self.positions) - self._next

    def remaining(self) -> list[str]:
        names = self.names
        return [names[i] for i in self.positions[self._ranked()[self._next :]].tolist()]

    def _position_of(self, name: str) -> int:
        if self.last_taken >= 0 and self.names[self.last_taken] == name:
            return self.last_taken
        for position in range(len(self.names)):  # not reached from the algorithm
            if self.names[position] == name:
                return position
        return -1

    def with_rescored(
        self, name: str, plugins: Sequence[str], fresh: Sequence[int], normalize: Normalizer
    ) -> tuple[SortedScoredNodes | None, Status]:
        """The remaining candidates and node `name` with its `fresh` raw scores, normalised
        together and ranked again (batch.go rescoreHintedNode: UnorderedList plus the node,
        NormalizeScores, NewSortedScoredNodes). The node keeps its place in scan order, so
        equal totals rank as in a fresh cycle's runners-up. A status that is not success says
        why no ranking came out (normalize_error)."""
        if tuple(plugins) != self.plugins:
            return None, Status.error("the Score plugins differ from the kept raw scores")
        alive = (
            np.sort(self._order[self._next :])
            if self._order is not None
            else np.arange(len(self.positions), dtype=np.intp)
        )
        names = self.names
        position = self._position_of(name)
        if position < 0:  # a node the ranking never had (upstream's tests store such rankings)
            names = [*(names[i] for i in range(len(names))), name]
            position = len(names) - 1
        kept = self.positions[alive]
        at = int(np.searchsorted(kept, position))
        # The kept candidates with a free slot at `at` for the re-scored node (one gather per
        # array; np.insert costs more than the rest of the re-score).
        take = np.empty(len(alive) + 1, dtype=np.intp)
        take[:at] = alive[:at]
        take[at] = 0
        take[at + 1 :] = alive[at:]
        positions = self.positions[take]
        positions[at] = position
        raw = self.raw[:, take]
        raw[:, at] = fresh
        listed = names

        def node_names() -> list[str]:
            return [listed[i] for i in positions.tolist()]

        # NormalizeScore works on a copy: the ranking keeps the raw scores for the next pod.
        working = list(raw.copy())
        totals, status = normalize(self.plugins, working, len(positions), node_names)
        if totals is None:
            return None, status
        ranking = SortedScoredNodes.__new__(SortedScoredNodes)
        ranking.names = names
        ranking.positions = positions
        ranking.totals = totals
        ranking.plugins = self.plugins
        ranking.raw = raw
        ranking.last_taken = -1
        ranking._order = None
        ranking._next = 0
        return ranking, Status.OK


@dataclass(slots=True)
class _BatchState:
    signature: PodSignature
    sorted_nodes: SortedScoredNodes
    creation_time: float


@dataclass(slots=True)
class _LastCycle:
    cycle: int = -2
    chosen_node: str = ""
    succeeded: bool = False


class BatchHandle(Protocol):
    """What the batch needs of the framework (batch.go's use of fwk.Handle)."""

    @property
    def profile_name(self) -> str: ...

    def snapshot(self) -> SnapshotLister: ...

    def run_filter_plugins(
        self, state: CycleState, pod: PodView, node_info: NodeInfo
    ) -> Status: ...

    def run_pre_score_plugins(
        self, state: CycleState, pod: PodView, nodes: Sequence[NodeInfo]
    ) -> Status: ...

    def run_raw_score_plugins(
        self, state: CycleState, pod: PodView, node_info: NodeInfo
    ) -> tuple[list[str], list[int], Status]: ...

    def normalize_scores(
        self,
        state: CycleState,
        pod: PodView,
        plugins: Sequence[str],
        raw: list[IntArray],
        count: int,
        names: Callable[[], Sequence[str]],
    ) -> tuple[IntArray | None, Status]: ...


class OpportunisticBatch:
    """One profile's batch: the ranking left by the last scored cycle and what that cycle
    chose. `get_node_hint` before filtering, `store_schedule_results` after a node was
    chosen (schedule_one.go's calls)."""

    def __init__(
        self,
        handle: BatchHandle,
        signer: Callable[[PodView, bool], PodSignature | None],
        clock: Callable[[], float],
        metrics: BatchMetrics | None = None,
    ) -> None:
        self.handle = handle
        self.sign = signer
        self.clock = clock
        self.metrics: BatchMetrics = metrics if metrics is not None else NoBatchMetrics()
        self.state: _BatchState | None = None
        self.last_cycle = _LastCycle()
        # Pods placed on a hint (upstream's batchedPods, for tests).
        self.batched_pods = 0

    def get_node_hint(
        self, state: CycleState, pod: PodView, cycle: int
    ) -> tuple[str, PodSignature | None]:
        """(the node to try first, "" for none; the pod's signature). Pops the hint."""
        start = self.clock()
        profile = self.handle.profile_name
        signature = self.sign(pod, state.record_plugin_metrics)
        hint = ""
        if self._compatible(pod, signature, cycle) and self._refresh_hint_candidates(state, pod):
            assert self.state is not None
            hint = self.state.sorted_nodes.pop()
        else:
            self.metrics.batch_attempt(profile, NO_HINT)
        self.metrics.get_node_hint_duration(
            "hint" if hint else NO_HINT, profile, self.clock() - start
        )
        return hint, signature

    def store_schedule_results(
        self,
        signature: PodSignature | None,
        hinted_node: str,
        chosen_node: str,
        other_nodes: SortedScoredNodes | None,
        cycle: int,
        candidates_left: int | None = None,
    ) -> None:
        """`candidates_left`: how many candidates the cycle left when it built no ranking
        (`other_nodes` None) because the pod was not signed and no batch could use one."""
        start = self.clock()
        profile = self.handle.profile_name
        self.last_cycle = _LastCycle(cycle, chosen_node, True)
        if hinted_node == chosen_node:
            self.metrics.batch_attempt(profile, HINT_USED)
            self.batched_pods += 1
        else:
            if hinted_node:
                self.metrics.batch_attempt(profile, HINT_NOT_USED)
            if signature is not None and other_nodes is not None and len(other_nodes):
                self.state = _BatchState(signature, other_nodes, self.clock())
            else:
                left = len(other_nodes) if other_nodes is not None else candidates_left or 0
                empty = left == 0
                self._flush(FLUSH_EMPTY_LIST if empty else FLUSH_POD_NOT_BATCHABLE)
                self.state = None
        self.metrics.store_schedule_results_duration(profile, self.clock() - start)

    def _flush(self, reason: str) -> None:
        # Upstream counts the reason and keeps the state object; an unusable state is
        # refused again by the next check, so dropping it here changes nothing observable.
        self.metrics.batch_cache_flushed(self.handle.profile_name, reason)

    def _compatible(self, pod: PodView, signature: PodSignature | None, cycle: int) -> bool:
        """batchStateCompatible, in upstream's order of checks."""
        batch = self.state
        if batch is None or not len(batch.sorted_nodes):
            return False
        last = self.last_cycle
        if cycle != last.cycle + 1:
            # A pod of another profile (or one that failed) came in between. Upstream also
            # reuses the batch when the cycle count is equal, between the pods of one PodGroup
            # (GenericWorkload): no PodGroups here, so an equal count never happens.
            self._flush(FLUSH_POD_SKIPPED)
            return False
        if not last.succeeded:
            self._flush(FLUSH_POD_FAILED)
            return False
        if pod.nominated_node_name:
            # A pod nominated by an earlier preemption tries its nominated node instead.
            self._flush(FLUSH_POD_NOMINATED)
            return False
        if signature is None or signature != batch.signature:
            self._flush(FLUSH_POD_INCOMPATIBLE)
            return False
        if self.clock() > batch.creation_time + MAX_BATCH_AGE_SECONDS:
            self._flush(FLUSH_EXPIRED)
            return False
        return True

    def _refresh_hint_candidates(self, state: CycleState, pod: PodView) -> bool:
        """refreshHintCandidates: filter the node the last pod went to for this pod; if it
        still fits, re-score it into the ranking (it may be the best again). False: no hint."""
        last_node = self.handle.snapshot().get(self.last_cycle.chosen_node)
        if last_node is None:
            self._flush(FLUSH_NODE_MISSING)
            return False
        status = self.handle.run_filter_plugins(state, pod, last_node)
        if status.is_success:
            return self._rescore_last_node(state, pod, last_node)
        if not status.is_rejected:
            self._flush(FLUSH_FILTER_ERROR)
            return False
        return True

    def _rescore_last_node(self, state: CycleState, pod: PodView, node: NodeInfo) -> bool:
        """rescoreHintedNode: PreScore and Score on the node alone, then NormalizeScore over it
        and the kept candidates, and rank them again."""
        batch = self.state
        assert batch is not None
        handle = self.handle
        profile = handle.profile_name
        start = self.clock()
        self.metrics.batch_rescore_attempt(profile)
        try:
            status = handle.run_pre_score_plugins(state, pod, (node,))
            if not status.is_success:
                self._flush(FLUSH_PRESCORE_ERROR)
                return False
            plugins, fresh, status = handle.run_raw_score_plugins(state, pod, node)
            if not status.is_success or tuple(plugins) != batch.sorted_nodes.plugins:
                # The second: PreScore skipped other plugins than for the pod that scored the
                # candidates, so the kept raw scores are not comparable (aiosched's own check;
                # equal signatures make it rare).
                self._flush(FLUSH_RESCORE_ERROR)
                return False

            def normalize(
                names: Sequence[str],
                raw: list[IntArray],
                count: int,
                listed: Callable[[], Sequence[str]],
            ) -> tuple[IntArray | None, Status]:
                return handle.normalize_scores(state, pod, names, raw, count, listed)

            ranking, status = batch.sorted_nodes.with_rescored(
                node.node_name, plugins, fresh, normalize
            )
            if ranking is None:
                self._flush(FLUSH_NORMALIZE_ERROR)
                return False
            batch.sorted_nodes = ranking
            return True
        finally:
            # Upstream defers Observe(SinceInSeconds(start)), whose argument Go evaluates at
            # the defer (so it records about 0); the time taken is what the metric means.
            self.metrics.batch_rescore_duration(profile, self.clock() - start)
