"""NodeDeclaredFeatures (PreFilter, Filter): a pod whose spec needs a node-level feature (KEP-5328)
fits only nodes that list it in status.declaredFeatures.

Upstream: pkg/scheduler/framework/plugins/nodedeclaredfeatures/nodedeclaredfeatures.go (newest
stored version, commit 04e983ff98be4ca4867173a7f39355bd28019865, and its AGENTS.md). PreFilter
infers the pod's required features and answers Skip when there are none, so a pod that needs no
feature costs one inference and never reaches Filter. Filter checks that the requirements are a
subset of the node's declared features and rejects with UnschedulableAndUnresolvable:
preempting pods cannot give a node a feature. With the NodeDeclaredFeatures gate off the plugin
is inert (Skip, no events), as upstream's. Upstream's extra Skip for a pod whose in-place
resize is deferred (InPlacePodVerticalScalingSchedulerPreemption, alpha) does not apply: aiosched
does not know that gate, which is off by default.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from scheduler.api.objects import NodeView, PodView
from scheduler.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from scheduler.framework.interface import (
    CycleState,
    Handle,
    PreFilterExtensions,
    PreFilterResult,
    SignFragment,
)
from scheduler.framework.registry import PluginEntry
from scheduler.framework.status import Status
from scheduler.plugins.nodedeclaredfeatures.features import infer_for_scheduling

if TYPE_CHECKING:
    from scheduler.cache.node_info import NodeInfo

NAME = "NodeDeclaredFeatures"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ERR_REASON_UNSATISFIED_REQUIREMENTS = "node(s) didn't match Pod's required features"
#: fwk.FeaturesSignerName (staging/src/k8s.io/kube-scheduler/framework/signers.go).
FEATURES_SIGNER = "v1.Pod.Spec.RequiredFeatures()"

#: The feature gate (pkg/features/kube_features.go): alpha and off in v1.35, beta and on in
#: v1.36, GA and locked on in v1.37.
GATE = "NodeDeclaredFeatures"
GATE_DEFAULTS: Mapping[str, bool] = {GATE: True}


def gate_enabled(feature_gates: Mapping[str, bool] | None) -> bool:
    return bool((feature_gates or {}).get(GATE, GATE_DEFAULTS[GATE]))


def required_features(pod: PodView) -> frozenset[str]:
    """The features a node must declare for `pod` (from its spec, as upstream passes only
    pod.Spec to the library). A cycle asks twice for one pod (PreFilter, and the batch's
    signature): the last spec's answer is kept."""
    spec = pod.raw.get("spec")
    if not isinstance(spec, Mapping):
        spec = {}
    last = _LAST_INFERRED
    if spec is last.spec:
        return last.features
    last.features = infer_for_scheduling(spec)
    last.spec = spec
    return last.features


class _LastInferred:
    """The last spec asked about and its features. The spec object itself is kept, so that
    the identity test cannot be fooled by a recycled id; views never change their spec."""

    __slots__ = ("features", "spec")

    def __init__(self) -> None:
        self.spec: object = None
        self.features: frozenset[str] = frozenset()


_LAST_INFERRED = _LastInferred()


class NodeDeclaredFeatures:
    name = NAME

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        self.enabled = gate_enabled(getattr(handle, "feature_gates", None))
        self._unsatisfied = Status.unresolvable(ERR_REASON_UNSATISFIED_REQUIREMENTS, plugin=NAME)

    def sign_pod(self, pod: PodView) -> tuple[Sequence[SignFragment], Status]:
        """Feasibility reads the required features (upstream SignPod: FeatureSet.String(),
        here the sorted names)."""
        return [(FEATURES_SIGNER, sorted(required_features(pod)))], Status.OK

    def pre_filter(
        self, state: CycleState, pod: PodView, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        if not self.enabled:
            return None, Status.skip()
        required = required_features(pod)
        if not required:
            return None, Status.skip()
        state.write(PRE_FILTER_STATE_KEY, required)
        return None, Status.OK

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    def filter(self, state: CycleState, pod: PodView, node_info: NodeInfo) -> Status:
        if not self.enabled:
            return Status.OK
        try:
            required: frozenset[str] = state.read(PRE_FILTER_STATE_KEY)
        except KeyError:
            return Status.error(f'error reading "{PRE_FILTER_STATE_KEY}" from cycle-state')
        node = node_info.node
        if node is None:
            return Status.error("node not found")
        if not required.issubset(node.declared_features):
            return self._unsatisfied
        return Status.OK

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        if not self.enabled:
            return ()
        return (
            ClusterEventWithHint(
                ClusterEvent(
                    EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_DECLARED_FEATURE
                ),
                self.schedulable_after_node_change,
            ),
            # Upstream's TargetPod Update: an update of the pending pod itself (the hint skips
            # every other pod's update).
            ClusterEventWithHint(
                ClusterEvent(EventResource.UNSCHEDULED_POD, ActionType.UPDATE),
                self.schedulable_after_target_pod_update,
            ),
        )

    @staticmethod
    def schedulable_after_node_change(pod: Any, old: Any, new: Any) -> QueueingHint:
        if not isinstance(new, NodeView):
            return QueueingHint.QUEUE  # unexpected object: be safe, as upstream on errors
        if isinstance(old, NodeView) and old.declared_features == new.declared_features:
            return QueueingHint.SKIP
        return QueueingHint.QUEUE

    @staticmethod
    def schedulable_after_target_pod_update(pod: Any, old: Any, new: Any) -> QueueingHint:
        if not isinstance(old, PodView) or not isinstance(new, PodView):
            return QueueingHint.QUEUE
        if isinstance(pod, PodView) and new.uid != pod.uid:
            return QueueingHint.SKIP
        if required_features(old) == required_features(new):
            return QueueingHint.SKIP
        return QueueingHint.QUEUE


PLUGIN_ENTRY = PluginEntry(NAME, NodeDeclaredFeatures)
