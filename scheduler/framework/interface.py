"""Extension-point protocols, CycleState and the values plugins exchange with the runtime.

Mirrors upstream's pkg/scheduler/framework/interface.go and cycle_state.go. A plugin is a small
class with a `name` and the methods of the extension points it implements; the runtime finds them
by `isinstance` against these runtime-checkable protocols. Calls on the scheduling cycle's hot path
(Filter, Score, ...) are plain methods; calls that talk to the API server (PostFilter, PreBind,
Bind, PostBind) are coroutines.

Plugin construction: `PluginClass(args, handle)` where `args` is what the plugin's registry entry
decoded from pluginConfig (or its defaults) and `handle` is the framework `Handle`.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from scheduler.framework.api_client import ApiClient as ApiClient  # re-exported: the plugin API
from scheduler.framework.events import ClusterEventWithHint
from scheduler.framework.status import Status

if TYPE_CHECKING:
    from scheduler.api.objects import PodView
    from scheduler.api.workload import PodGroupView
    from scheduler.cache.node_info import NodeInfo
    from scheduler.framework.extender import Extender
    from scheduler.listers.cluster_objects import ClusterObjects
    from scheduler.queue.types import QueuedPodInfo

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0
MAX_TOTAL_SCORE = 2**63 - 1

# Extension point names as upstream's configuration spells them → the method that implements it.
EXTENSION_POINT_METHODS: Mapping[str, str] = {
    "preEnqueue": "pre_enqueue",
    "queueSort": "less",
    "preFilter": "pre_filter",
    "filter": "filter",
    "postFilter": "post_filter",
    "preScore": "pre_score",
    "score": "score",
    "reserve": "reserve",
    "permit": "permit",
    "preBind": "pre_bind",
    "bind": "bind",
    "postBind": "post_bind",
    # The PodGroup cycle's points (upstream's PlacementGeneratePlugin, PlacementScorePlugin,
    # PlacementFeasiblePlugin, PodGroupPostFilterPlugin).
    "placementGenerate": "generate_placements",
    "placementScore": "score_placement",
    "placementFeasible": "placement_feasible",
    "podGroupPostFilter": "pod_group_post_filter",
}


class CycleState:
    """Per-attempt scratch space plugins share (upstream's CycleState).

    Keys are strings (by convention "PreFilter" + plugin name). `clone` is shallow per key but
    calls `clone()` on values that have one, as upstream's StateData.Clone does; preemption uses
    clones to try removing pods without disturbing the real state.
    """

    __slots__ = (
        "_data",
        "point_seconds",
        "record_plugin_metrics",
        "skip_filter_plugins",
        "skip_pre_bind_plugins",
        "skip_score_plugins",
        "tracer",
    )

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}
        self.record_plugin_metrics = False
        # The attempt's tracer (runtime.CycleTracer) when the attempt is traced; an attribute,
        # not a key, because the runtime looks it up for every plugin call.
        self.tracer: Any = None
        # [point, seconds, point, seconds, ...]: each extension point's duration as the runtime
        # measured it for scheduler_framework_extension_point_duration_seconds, kept for the
        # web view's recent attempts; None (nothing recorded) unless the attempt asks for it.
        # Clones (preemption's dry runs) record nothing.
        self.point_seconds: list[str | float] | None = None
        self.skip_filter_plugins: set[str] = set()
        self.skip_score_plugins: set[str] = set()
        # PreBind plugins whose PreBindPreFlight answered Skip (NominatedNodeNameForExpectation).
        self.skip_pre_bind_plugins: set[str] = set()

    def read(self, key: str) -> Any:
        """The value stored under `key`; KeyError if none (upstream's ErrNotFound)."""
        return self._data[key]

    def write(self, key: str, value: Any) -> None:
        self._data[key] = value

    def delete(self, key: str) -> None:
        self._data.pop(key, None)

    def annotate_span(self, point: str, attributes: Mapping[str, Any]) -> None:
        """Add `attributes` (OpenTelemetry values: str, bool, int, float or sequences of
        them; keys `aiosched.<plugin>.<what>`) to the span of extension point `point` of this
        attempt, if it is traced; nothing otherwise. Call it while that point runs."""
        tracer = self.tracer
        if tracer is not None:
            annotate = getattr(tracer, "annotate", None)
            if annotate is not None:
                annotate(point, attributes)

    def clone(self) -> CycleState:
        copy = CycleState()
        for key, value in self._data.items():
            clone = getattr(value, "clone", None)
            copy._data[key] = clone() if callable(clone) else value
        copy.record_plugin_metrics = self.record_plugin_metrics
        copy.tracer = self.tracer
        copy.skip_filter_plugins = set(self.skip_filter_plugins)
        copy.skip_score_plugins = set(self.skip_score_plugins)
        copy.skip_pre_bind_plugins = set(self.skip_pre_bind_plugins)
        return copy


# Where the scheduling cycle keeps the pods a plugin asks to move to activeQ once the cycle
# (and again the binding cycle) succeeds: upstream's framework.PodsToActivateKey.
PODS_TO_ACTIVATE_KEY = "kubernetes.io/pods-to-activate"


class PodsToActivate:
    """Upstream's framework.PodsToActivate: pods by "namespace/name" to activate."""

    __slots__ = ("pods",)

    def __init__(self) -> None:
        self.pods: dict[str, PodView] = {}

    def clone(self) -> PodsToActivate:
        return self  # upstream's Clone returns the same object: every copy adds to it


@dataclass(slots=True)
class PreFilterResult:
    """Nodes a PreFilter plugin restricts the pod to; `None` means all nodes."""

    node_names: frozenset[str] | None = None

    def all_nodes(self) -> bool:
        return self.node_names is None

    def merge(self, other: PreFilterResult | None) -> PreFilterResult:
        if other is None or other.node_names is None:
            return self
        if self.node_names is None:
            return other
        return PreFilterResult(self.node_names & other.node_names)


@dataclass(slots=True)
class NodeScore:
    name: str
    score: int


@dataclass(slots=True)
class PostFilterResult:
    nominated_node_name: str = ""


@dataclass(frozen=True, slots=True)
class Preemption:
    """A preemption decided in the cycle: what `Handle.start_preemption` carries out."""

    preemptor: PodView
    node_name: str
    victims: tuple[PodView, ...]
    # Lower-priority pods nominated to `node_name` whose nomination is cleared.
    nominations_to_clear: tuple[PodView, ...] = ()
    # Who preempts, as the victims' event and condition name it (upstream's preemptor Type()
    # and UID): "pod" (the preemptor pod) or "podgroup" (workload-aware preemption, whose
    # `node_name` is "cluster").
    preemptor_type: str = "pod"
    preemptor_uid: str = ""


@dataclass(slots=True)
class NodeToStatus:
    """Why each node was rejected in one attempt (upstream's NodeToStatus / Diagnosis input).

    `absent` is the status of nodes that are not in the map (e.g. when a PreFilter result or a
    PreFilter rejection excluded every node): UnschedulableAndUnresolvable by default.
    """

    statuses: dict[str, Status] = field(default_factory=dict)
    absent: Status = field(default_factory=lambda: Status.unresolvable())

    def get(self, node_name: str) -> Status:
        return self.statuses.get(node_name, self.absent)


@runtime_checkable
class Plugin(Protocol):
    name: str


@runtime_checkable
class PreEnqueuePlugin(Plugin, Protocol):
    def pre_enqueue(self, pod: PodView) -> Status: ...


@runtime_checkable
class QueueSortPlugin(Plugin, Protocol):
    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool: ...


@runtime_checkable
class EnqueueExtensions(Plugin, Protocol):
    """Plugins that reject pods say which cluster events could make those pods schedulable."""

    def events_to_register(self) -> Sequence[ClusterEventWithHint]: ...


class PreFilterExtensions(Protocol):
    """Incremental updates of PreFilter state when preemption adds or removes pods."""

    def add_pod(
        self, state: CycleState, pod_to_schedule: PodView, pod_to_add: PodView, node_info: NodeInfo
    ) -> Status: ...

    def remove_pod(
        self,
        state: CycleState,
        pod_to_schedule: PodView,
        pod_to_remove: PodView,
        node_info: NodeInfo,
    ) -> Status: ...


@runtime_checkable
class PreFilterPlugin(Plugin, Protocol):
    def pre_filter(
        self, state: CycleState, pod: PodView, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]: ...

    def pre_filter_extensions(self) -> PreFilterExtensions | None: ...


@runtime_checkable
class FilterPlugin(Plugin, Protocol):
    def filter(self, state: CycleState, pod: PodView, node_info: NodeInfo) -> Status: ...


class NominatedPodsVerdict(Protocol):
    """A Filter plugin's verdict on a node with pods nominated to it, in one step."""

    @property
    def plugin(self) -> str:
        """The name of the plugin whose verdict this is (rejections are attributed to it)."""
        ...

    def __call__(
        self, state: CycleState, pod: PodView, node_info: NodeInfo, nominated: Sequence[PodView]
    ) -> Status:
        """What filtering `node_info` with `nominated` added, and then without them, would
        decide for this plugin: Success, a rejection or an Error."""
        ...


@runtime_checkable
class NominatedPodsFilterPlugin(FilterPlugin, Protocol):
    """Optional, for the row pass: a Filter plugin that can say, for one attempt, that it is
    the only Filter whose verdict pods on a node could change (every other Filter that runs
    keeps its verdict, and no PreFilter extension that runs could fail or matter), and then
    decide a node with nominated pods in one step, instead of filtering a copy of the node
    with those pods added and again without them (upstream's
    RunFilterPluginsWithNominatedPods)."""

    def nominated_pods_verdict(
        self, handle: PreemptionHandle, state: CycleState, pod: PodView
    ) -> NominatedPodsVerdict | None:
        """The one-step verdict for this attempt, or None when it does not apply."""
        ...


@runtime_checkable
class PostFilterPlugin(Plugin, Protocol):
    """Runs inside the scheduling cycle, on that cycle's snapshot, as upstream's PostFilter;
    API calls it needs (preemption's deletions and status patches) go through the Handle,
    which runs them after the cycle."""

    def post_filter(
        self, state: CycleState, pod: PodView, filtered: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]: ...


@runtime_checkable
class PreScorePlugin(Plugin, Protocol):
    def pre_score(self, state: CycleState, pod: PodView, nodes: Sequence[NodeInfo]) -> Status: ...


class ScoreExtensions(Protocol):
    def normalize_score(
        self, state: CycleState, pod: PodView, scores: list[NodeScore]
    ) -> Status: ...


@runtime_checkable
class ScorePlugin(Plugin, Protocol):
    def score(self, state: CycleState, pod: PodView, node_info: NodeInfo) -> tuple[int, Status]: ...

    def score_extensions(self) -> ScoreExtensions | None:
        """NormalizeScore's hook, or None. Optional: a plugin without this method is run as
        one returning None (as pre_filter_extensions and placement_score_extensions are)."""
        ...


def extensions_of(plugin: object, method: str) -> Any:
    """What `plugin.method()` returns (score_extensions, pre_filter_extensions,
    placement_score_extensions), or None when the plugin does not define the method: the
    extensions are optional, as upstream's may be nil, and a plugin that leaves the method out
    must not crash at its first scored pod."""
    get = getattr(plugin, method, None)
    return None if get is None else get()


# ---- the PodGroup cycle's points --------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Placement:
    """A set of nodes a pod group is tried on (upstream's fwk.Placement): `name` says which
    ("" for the parent placement of every node; merged placements join names with "/")."""

    name: str
    nodes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PodGroupPlacementInfo:
    """What the placement points read of the group being placed (upstream's PodGroupInfo with
    its PodGroupState): the group, the (pod key, node) of its members already assumed or
    bound, and how many they are."""

    group: PodGroupView
    scheduled_nodes: Sequence[tuple[str, str]]
    scheduled_count: int


@runtime_checkable
class PlacementGeneratePlugin(Plugin, Protocol):
    """PlacementGenerate: the placements the group may take within `parent`, whose nodes are
    `nodes`. Returning `[parent]` itself says "no constraint of mine" (upstream's generators
    return the parent placement): the runtime then leaves this plugin out of the merge."""

    def generate_placements(
        self, group: PodGroupPlacementInfo, parent: Placement, nodes: Sequence[NodeInfo]
    ) -> tuple[Sequence[Placement], Status]: ...


class PlacementScoreExtensions(Protocol):
    def normalize_placement_score(self, group: PodGroupPlacementInfo, scores: list[int]) -> Status:
        """Normalize `scores` (one per feasible placement, in place) to [0, 100]."""
        ...


@runtime_checkable
class PlacementScorePlugin(Plugin, Protocol):
    """PlacementScore: one feasible placement's score. `placed` is how many members the
    placement's evaluation placed (upstream passes the proposed assignments themselves; its
    in-tree scorer reads only their number, and counting keeps the group cycle free of a
    per-member list)."""

    def score_placement(
        self, group: PodGroupPlacementInfo, placement: Placement, placed: int
    ) -> tuple[int, Status]: ...

    def placement_score_extensions(self) -> PlacementScoreExtensions | None: ...


@runtime_checkable
class PlacementFeasiblePlugin(Plugin, Protocol):
    """PlacementFeasible: whether `group` can still reach its constraint (minCount) with
    `scheduled` members assumed or bound and `remaining` still to try; asked before the first
    member and after each one."""

    def placement_feasible(self, group: PodGroupView, scheduled: int, remaining: int) -> Status: ...


class MutableNodes(Protocol):
    """The snapshot as workload-aware preemption hands it to the group's scheduling function
    (DefaultPreemption's SnapshotBackup)."""

    def add_pod(self, pod: PodView, node_name: str) -> None: ...

    def remove_pod(self, pod: PodView, node_name: str) -> None: ...


# (member with its node set, node, its CycleState): a proposed assignment of a simulation.
ProposedAssignment = tuple["PodView", str, CycleState]


class PodGroupPostFilterResult(Protocol):
    """What the cycle reads of a PodGroupPostFilter result."""

    @property
    def nominations(self) -> Mapping[str, str]: ...


@runtime_checkable
class PodGroupPostFilterPlugin(Plugin, Protocol):
    """PodGroupPostFilter: runs when no placement of the group is feasible (upstream's only
    one is DefaultPreemption's workload-aware preemption); `schedule_group` runs the group's
    algorithm on the nodes it is given."""

    def pod_group_post_filter(
        self,
        group: PodGroupView,
        members: Sequence[PodView],
        schedule_group: Callable[
            [MutableNodes], Awaitable[tuple[Status, list[ProposedAssignment]]]
        ],
    ) -> Awaitable[tuple[PodGroupPostFilterResult | None, Status]]: ...


@runtime_checkable
class ReservePlugin(Plugin, Protocol):
    def reserve(self, state: CycleState, pod: PodView, node_name: str) -> Status: ...

    def unreserve(self, state: CycleState, pod: PodView, node_name: str) -> None: ...


@runtime_checkable
class PermitPlugin(Plugin, Protocol):
    def permit(self, state: CycleState, pod: PodView, node_name: str) -> tuple[Status, float]:
        """Status Success, Wait (with the timeout in seconds, the second value) or a rejection."""
        ...


@runtime_checkable
class PreBindPlugin(Plugin, Protocol):
    async def pre_bind(self, state: CycleState, pod: PodView, node_name: str) -> Status: ...


@runtime_checkable
class BindPlugin(Plugin, Protocol):
    async def bind(self, state: CycleState, pod: PodView, node_name: str) -> Status: ...


@runtime_checkable
class PostBindPlugin(Plugin, Protocol):
    async def post_bind(self, state: CycleState, pod: PodView, node_name: str) -> None: ...


#: One piece of a pod's scheduling signature: (signer name, a JSON-serialisable value).
#: Upstream: fwk.SignFragment (staging/src/k8s.io/kube-scheduler/framework/signers.go names).
SignFragment = tuple[str, Any]


@runtime_checkable
class SignPlugin(Plugin, Protocol):
    """A PreFilter, Filter, PreScore or Score plugin that can say what of a pod it reads
    (upstream's fwk.SignPlugin, v1.35). Two pods with equal fragments from every such plugin
    get the same feasibility and scores on the same nodes, so opportunistic batching may reuse
    one's ranking for the other (scheduler/framework/runtime/batch.py). A non-success Status
    means this pod cannot be signed (it is then never batched); a profile with a plugin at
    those points that lacks `sign_pod` batches no pod at all.

    A plugin whose refusal does not depend on the pod may also offer `signs_no_pod() -> bool`
    (PodTopologySpread with default constraints): the signer then skips the other plugins'
    fragments for pods that would be refused anyway."""

    def sign_pod(self, pod: PodView) -> tuple[Sequence[SignFragment], Status]: ...


#: Per node name, what a plugin adds to its Filter verdict in explain and what-if: JSON-ready
#: mappings of strings (DynamicResources: {"claim", "request", "reason"}).
NodeDetails = Mapping[str, Sequence[Mapping[str, str]]]


@runtime_checkable
class FilterDetailsPlugin(Plugin, Protocol):
    """A Filter plugin that can say more about a rejection than its Status message, which
    stays upstream's (events, conditions and the FitError show only that). Asked only by
    `aiosched explain` when it records a failed attempt and by what-if, after Filter, with the
    attempt's CycleState and the nodes this plugin rejected; never while scheduling."""

    def filter_details(
        self, state: CycleState, pod: PodView, node_names: Sequence[str]
    ) -> NodeDetails: ...


class WaitingPod(Protocol):
    """A pod parked in WaitOnPermit; other plugins may allow or reject it."""

    @property
    def pod(self) -> PodView: ...

    def pending_plugins(self) -> list[str]: ...

    def allow(self, plugin: str) -> None: ...

    def reject(self, plugin: str, message: str) -> None: ...


class SnapshotLister(Protocol):
    """Read access to the current cycle's snapshot."""

    def list(self) -> Sequence[NodeInfo]: ...

    def get(self, node_name: str) -> NodeInfo | None: ...

    def have_pods_with_affinity_list(self) -> Sequence[NodeInfo]: ...

    def have_pods_with_required_anti_affinity_list(self) -> Sequence[NodeInfo]: ...


class Handle(Protocol):
    """What the framework offers plugins (upstream's framework.Handle)."""

    @property
    def profile_name(self) -> str: ...

    def snapshot(self) -> SnapshotLister: ...

    @property
    def client(self) -> ApiClient: ...

    def get_waiting_pod(self, uid: str) -> WaitingPod | None: ...

    def iterate_waiting_pods(self) -> Iterable[WaitingPod]: ...

    def reject_waiting_pod(self, uid: str) -> bool: ...

    def nominated_pods_for_node(self, node_name: str) -> Sequence[PodView]: ...

    @property
    def parallelism(self) -> int: ...

    @property
    def cluster_objects(self) -> ClusterObjects:
        """Namespaces, Services, workload controllers and PodDisruptionBudgets."""
        ...

    @property
    def rng(self) -> random.Random:
        """The scheduler's injected randomness (preemption's candidate offset)."""
        ...

    def pod_exists(self, pod: PodView) -> bool:
        """Whether the pod is still known to the scheduler's pod informer (upstream's pod
        lister; VolumeBinding stops waiting for a deleted pod's volumes)."""
        ...


class PreemptionHandle(Handle, Protocol):
    """The Handle plus what preemption's dry runs need from the framework (upstream's
    PluginsRunner and Handle.Extenders): a separate Protocol so that a plugin (and a test's
    FakeHandle) that does not preempt has only the small Handle to satisfy. The framework
    implements both; DefaultPreemption takes this one."""

    @property
    def pre_filter_plugins(self) -> Sequence[PreFilterPlugin]:
        """The profile's PreFilter plugins in the order they run."""
        ...

    @property
    def filter_plugins(self) -> Sequence[FilterPlugin]:
        """The profile's Filter plugins in the order they run."""
        ...

    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod: PodView, node_info: NodeInfo
    ) -> Status: ...

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: PodView, pod_to_add: PodView, node_info: NodeInfo
    ) -> Status: ...

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: PodView, pod_to_remove: PodView, node_info: NodeInfo
    ) -> Status: ...

    def start_preemption(self, preemption: Preemption) -> None:
        """Carry out a chosen preemption's API calls after the cycle (the scheduler owns the
        task): victims get a DisruptionTarget condition and are deleted, lower-priority pods
        nominated to the node lose their nomination, the preemptor's nominatedNodeName is
        set."""
        ...

    def extenders(self) -> Sequence[Extender]:
        """The configured scheduler extenders in calling order (upstream's Handle.Extenders):
        preemption offers its candidates to those that support it (`process_preemption`)."""
        ...
