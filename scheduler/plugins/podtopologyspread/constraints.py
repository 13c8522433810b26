"""A pod's topology spread constraints, parsed, and the per-node helpers both phases share.

Upstream: pkg/scheduler/framework/plugins/podtopologyspread/common.go
(filterTopologySpreadConstraints, mergeLabelSetWithSelector, buildDefaultConstraints,
nodeLabelsMatchSpreadConstraints, matchNodeInclusionPolicies, countPodsMatchSelector,
podLabelsMatchSpreadConstraints). NodeInclusionPolicyInPodTopologySpread is GA and locked on;
MatchLabelKeysInPodTopologySpread (beta, on by default) can be turned off, and then
matchLabelKeys is ignored, as upstream's enableMatchLabelKeysInPodTopologySpread does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from apimachinery.labels import IN, LabelSelector, Requirement
from scheduler.api.errors import MalformedObject
from scheduler.api.objects import NodeView, PodView
from scheduler.api.taints import NO_EXECUTE, NO_SCHEDULE, find_matching_untolerated_taint
from scheduler.plugins.nodeaffinity import required_affinity_matches
from scheduler.plugins.podtopologyspread.args import (
    HONOR,
    IGNORE,
    DefaultConstraint,
)

if TYPE_CHECKING:
    from scheduler.listers.cluster_objects import ClusterObjects

DO_NOT_SCHEDULE_EFFECTS = frozenset({NO_SCHEDULE, NO_EXECUTE})


class ConstraintError(Exception):
    """A constraint that cannot be used (upstream: LabelSelectorAsSelector failed)."""


@dataclass(frozen=True, slots=True)
class Constraint:
    """Upstream's topologySpreadConstraint: a v1.TopologySpreadConstraint with its selector
    parsed (and matchLabelKeys merged into it) and its optional fields defaulted."""

    max_skew: int
    topology_key: str
    selector: LabelSelector
    min_domains: int = 1
    node_affinity_policy: str = HONOR
    node_taints_policy: str = IGNORE
    # The TaintTolerationComparisonOperators gate, which upstream's matchNodeInclusionPolicies
    # is handed (plugin.go's enableTaintTolerationComparisonOperators): Lt / Gt tolerations
    # count under nodeTaintsPolicy Honor only with it on.
    comparison_operators: bool = False

    def match_node_inclusion_policies(self, pod: PodView, node: NodeView) -> bool:
        if self.node_affinity_policy == HONOR and not required_affinity_matches(pod, node):
            return False
        return not (
            self.node_taints_policy == HONOR and untolerated(pod, node, self.comparison_operators)
        )


def untolerated(pod: PodView, node: NodeView, comparison_operators: bool = False) -> bool:
    """Whether the node has a NoSchedule / NoExecute taint the pod does not tolerate."""
    if not node.taints:
        return False
    taint = find_matching_untolerated_taint(
        node.taints, pod.tolerations, DO_NOT_SCHEDULE_EFFECTS, comparison_operators
    )
    return taint is not None


def merge_match_labels(match_labels: Mapping[str, str], selector: LabelSelector) -> LabelSelector:
    """mergeLabelSetWithSelector: the pod's values of matchLabelKeys ANDed with the selector
    (a selector that matches nothing stays so)."""
    if selector.matches_nothing:
        return selector
    requirements = [Requirement(k, IN, frozenset((v,))) for k, v in match_labels.items()]
    requirements.extend(selector.requirements)
    requirements.sort(key=lambda r: (r.key, r.operator))
    return LabelSelector(tuple(requirements))


def _match_label_keys_selector(
    keys: Iterable[Any], pod_labels: Mapping[str, str], selector: LabelSelector
) -> LabelSelector:
    match_labels = {k: pod_labels[k] for k in keys if isinstance(k, str) and k in pod_labels}
    return merge_match_labels(match_labels, selector) if match_labels else selector


def _int(value: Any, default: int, field: str) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConstraintError(f"{field}: expected an integer")
    return value


def _policy(value: Any, default: str) -> str:
    return value if isinstance(value, str) and value else default


def parse_pod_constraints(
    raw: Sequence[Any],
    pod_labels: Mapping[str, str],
    action: str,
    *,
    comparison_operators: bool = False,
    match_label_keys: bool = True,
) -> tuple[Constraint, ...]:
    """filterTopologySpreadConstraints over spec.topologySpreadConstraints (raw JSON);
    `comparison_operators` is the TaintTolerationComparisonOperators gate and
    `match_label_keys` the MatchLabelKeysInPodTopologySpread gate."""
    result: list[Constraint] = []
    for index, item in enumerate(raw):
        if not isinstance(item, Mapping) or item.get("whenUnsatisfiable") != action:
            continue
        path = f"spec.topologySpreadConstraints[{index}]"
        try:
            selector = LabelSelector.from_dict(item.get("labelSelector"), f"{path}.labelSelector")
        except MalformedObject as err:
            raise ConstraintError(str(err)) from None
        keys = item.get("matchLabelKeys")
        if match_label_keys and isinstance(keys, list) and keys:
            selector = _match_label_keys_selector(keys, pod_labels, selector)
        key = item.get("topologyKey")
        result.append(
            Constraint(
                max_skew=_int(item.get("maxSkew"), 0, f"{path}.maxSkew"),
                topology_key=key if isinstance(key, str) else "",
                selector=selector,
                min_domains=_int(item.get("minDomains"), 1, f"{path}.minDomains"),
                node_affinity_policy=_policy(item.get("nodeAffinityPolicy"), HONOR),
                node_taints_policy=_policy(item.get("nodeTaintsPolicy"), IGNORE),
                comparison_operators=comparison_operators,
            )
        )
    return tuple(result)


def default_constraints_for(
    defaults: Sequence[DefaultConstraint],
    pod: PodView,
    action: str,
    cluster_objects: ClusterObjects | None,
    comparison_operators: bool = False,
) -> tuple[Constraint, ...]:
    """buildDefaultConstraints: the args' constraints of this action, each selecting the pod's
    siblings (helper.DefaultSelector); none when nothing selects the pod."""
    if cluster_objects is None or not cluster_objects.may_select(pod):
        return ()
    chosen = [d for d in defaults if d.when_unsatisfiable == action]
    if not chosen:
        return ()
    selector = cluster_objects.default_selector(pod)
    if selector.is_everything():
        return ()
    return tuple(
        Constraint(
            max_skew=d.max_skew,
            topology_key=d.topology_key,
            selector=selector,
            min_domains=1 if d.min_domains is None else d.min_domains,
            node_affinity_policy=d.node_affinity_policy or HONOR,
            node_taints_policy=d.node_taints_policy or IGNORE,
            comparison_operators=comparison_operators,
        )
        for d in chosen
    )


def raw_constraints(pod: PodView) -> Sequence[Any]:
    """spec.topologySpreadConstraints as raw JSON (empty when absent or malformed)."""
    spec = pod.raw.get("spec")
    raw = spec.get("topologySpreadConstraints") if isinstance(spec, Mapping) else None
    return raw if isinstance(raw, list) else ()


def node_labels_match_spread_constraints(
    labels: Mapping[str, str], constraints: Sequence[Constraint]
) -> bool:
    """Whether the node has every constraint's topology key."""
    for c in constraints:  # noqa: SIM110 (hot path)
        if c.topology_key not in labels:
            return False
    return True


def pod_labels_match_spread_constraints(
    constraints: Sequence[Constraint], labels: Mapping[str, str]
) -> bool:
    return any(c.selector.matches(labels) for c in constraints)


def count_pods_match_selector(pods: Iterable[PodView], selector: LabelSelector, ns: str) -> int:
    """Pods in `ns` matching `selector`, skipping terminating pods; an empty selector counts
    nothing (upstream's countPodsMatchSelector)."""
    if selector.is_everything():
        return 0
    count = 0
    for pod in pods:
        if pod.deletion_timestamp is not None or pod.namespace != ns:
            continue
        if selector.matches(pod.labels):
            count += 1
    return count
