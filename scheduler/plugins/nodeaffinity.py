"""NodeAffinity (PreFilter, Filter, PreScore, Score): spec.nodeSelector, required and preferred
node affinity, plus the scheduler-enforced NodeAffinityArgs.addedAffinity.

Upstream: pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go (queueing hints
enabled) and component-helpers/scheduling/corev1/nodeaffinity. The pod's selectors are parsed
once into its PodView; a required term that failed to parse never matches (upstream ignores the
error in Filter), a preferred term that failed to parse makes PreScore fail, as upstream.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from apimachinery.labels import IN
from scheduler.api.errors import MalformedObject
from scheduler.api.fields import is_mapping
from scheduler.api.objects import NodeView, PodView, PreferredSchedulingTerm
from scheduler.api.selectors import NODE_NAME_FIELD, NodeSelector, parse_node_selector_term
from scheduler.cache.node_table import IntArray, NodeTable
from scheduler.cache.rows import (
    Rows,
    RowVerdict,
    all_rows_pass,
    default_normalize_rows,
    verdict_per_node,
    verdict_with_status,
)
from scheduler.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from scheduler.framework.interface import (
    MAX_NODE_SCORE,
    CycleState,
    Handle,
    NodeScore,
    PreFilterResult,
    SignFragment,
)
from scheduler.framework.registry import (
    ArgsError,
    PluginEntry,
    check_args_kind,
    check_known_fields,
)
from scheduler.framework.runtime import batch as signers
from scheduler.framework.status import Status
from scheduler.plugins.normalize_score import default_normalize_score

if TYPE_CHECKING:
    from scheduler.cache.node_info import NodeInfo
    from scheduler.framework.interface import PreFilterExtensions

NAME = "NodeAffinity"
PRE_SCORE_STATE_KEY = "PreScore" + NAME
ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"

_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


# Args


@dataclass(frozen=True, slots=True)
class NodeAffinityArgs:
    """NodeAffinityArgs.addedAffinity, parsed: applied to every pod of the profile."""

    added_required: NodeSelector | None = None
    added_preferred: tuple[PreferredSchedulingTerm, ...] = ()


def decode_node_affinity_args(raw: Mapping[str, Any] | None) -> NodeAffinityArgs:
    """Decode and validate (upstream's ValidateNodeAffinityArgs: every term must parse)."""
    raw = raw or {}
    check_known_fields(raw, {"apiVersion", "kind", "addedAffinity"}, "")
    check_args_kind(raw, "NodeAffinityArgs")
    added = raw.get("addedAffinity")
    if added is None:
        return NodeAffinityArgs()
    if not isinstance(added, Mapping):
        raise ArgsError("addedAffinity", f"expected an object, got {type(added).__name__}")
    check_known_fields(added, {_REQUIRED, _PREFERRED}, "addedAffinity")
    try:
        required = _decode_required(added.get(_REQUIRED))
        preferred = _decode_preferred(added.get(_PREFERRED))
    except MalformedObject as err:
        raise _args_error(str(err)) from None
    return NodeAffinityArgs(required, preferred)


def _decode_required(raw: Any) -> NodeSelector | None:
    if raw is None:
        return None
    selector = NodeSelector.from_dict(raw, f"addedAffinity.{_REQUIRED}")
    if selector.parse_errors:
        raise _args_error(selector.parse_errors[0])
    return selector


def _decode_preferred(raw: Any) -> tuple[PreferredSchedulingTerm, ...]:
    path = f"addedAffinity.{_PREFERRED}"
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ArgsError(path, f"expected a list, got {type(raw).__name__}")
    terms: list[PreferredSchedulingTerm] = []
    for index, item in enumerate(raw):
        item_path = f"{path}[{index}]"
        if not isinstance(item, Mapping):
            raise ArgsError(item_path, f"expected an object, got {type(item).__name__}")
        check_known_fields(item, {"weight", "preference"}, item_path)
        weight = item.get("weight", 0)
        if isinstance(weight, bool) or not isinstance(weight, int):
            raise ArgsError(f"{item_path}.weight", "expected an integer")
        term = parse_node_selector_term(item.get("preference"), f"{item_path}.preference")
        # Upstream's NewPreferredSchedulingTerms drops zero weights and empty preferences.
        if weight == 0 or term is None:
            continue
        if term.parse_error is not None:
            raise _args_error(term.parse_error)
        terms.append(PreferredSchedulingTerm(weight, NodeSelector((term,))))
    return tuple(terms)


def _args_error(text: str) -> ArgsError:
    path, _, message = text.partition(": ")
    return ArgsError(path, message) if message else ArgsError("", text)


# Matching


def required_affinity_matches(pod: PodView, node: NodeView) -> bool:
    """Upstream's RequiredNodeAffinity.Match: spec.nodeSelector AND the required terms."""
    labels = node.labels
    for key, value in pod.node_selector.items():
        if labels.get(key) != value:
            return False
    required = pod.required_node_affinity
    return required is None or required.matches(labels, node.name)


def preferred_score(terms: Sequence[PreferredSchedulingTerm], node: NodeView) -> int:
    """Sum of the weights of the terms the node matches (PreferredSchedulingTerms.Score)."""
    total = 0
    labels = node.labels
    for term in terms:
        if term.preference.matches(labels, node.name):
            total += term.weight
    return total


def _spec(pod: PodView) -> Mapping[str, Any]:
    spec = pod.raw.get("spec")
    return spec if is_mapping(spec) else {}


def _raw_node_affinity(pod: PodView) -> Mapping[str, Any]:
    affinity = _spec(pod).get("affinity")
    node_affinity = affinity.get("nodeAffinity") if is_mapping(affinity) else None
    return node_affinity if is_mapping(node_affinity) else {}


def node_names_from_match_fields(raw_terms: Sequence[Any]) -> frozenset[str] | None:
    """Nodes the required terms restrict the pod to by `metadata.name In`, None for any node.

    Terms are ORed, so one term without such a requirement allows every node; requirements
    within a term are ANDed (intersected). Works on the raw terms, as upstream's PreFilter.
    """
    node_names: set[str] | None = None
    for term in raw_terms:
        term_names: set[str] | None = None
        fields = term.get("matchFields") if isinstance(term, Mapping) else None
        for requirement in fields or ():
            if not isinstance(requirement, Mapping):
                continue
            if requirement.get("key") == NODE_NAME_FIELD and requirement.get("operator") == IN:
                values = {v for v in requirement.get("values") or () if isinstance(v, str)}
                term_names = values if term_names is None else term_names & values
        if term_names is None:
            return None
        node_names = term_names if node_names is None else node_names | term_names
    return None if node_names is None else frozenset(node_names)


# Plugin


class NodeAffinity:
    name = NAME

    def sign_pod(self, pod: PodView) -> tuple[Sequence[SignFragment], Status]:
        """Feasibility and scoring read the node affinity and nodeSelector (upstream SignPod)."""
        return signers.node_affinity_fragments(pod), Status.OK

    def __init__(self, args: NodeAffinityArgs | None = None, handle: Handle | None = None) -> None:
        args = args or NodeAffinityArgs()
        self._added_required = args.added_required
        self._added_preferred = args.added_preferred
        self._enforced = Status.unresolvable(ERR_REASON_ENFORCED)
        self._mismatch = Status.unresolvable(ERR_REASON_POD)

    # PreFilter / Filter

    def pre_filter(
        self, state: CycleState, pod: PodView, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        required_raw = _raw_node_affinity(pod).get(_REQUIRED)
        has_node_selector = _spec(pod).get("nodeSelector") is not None
        if required_raw is None and self._added_required is None and not has_node_selector:
            return None, Status.skip()
        terms = required_raw.get("nodeSelectorTerms") if isinstance(required_raw, Mapping) else None
        if not terms:
            return None, Status.OK
        node_names = node_names_from_match_fields(terms)
        if node_names is None:
            return None, Status.OK
        if not node_names:
            return None, Status.unresolvable(ERR_REASON_CONFLICT)
        return PreFilterResult(node_names), Status.OK

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    def filter(self, state: CycleState, pod: PodView, node_info: NodeInfo) -> Status:
        node = node_info.node
        if node is None:
            return Status.error("node not found")
        added = self._added_required
        if added is not None and not added.matches(node.labels, node.name):
            return self._enforced
        if not required_affinity_matches(pod, node):
            return self._mismatch
        return Status.OK

    def filter_rows(
        self, state: CycleState, pod: PodView, table: NodeTable, rows: Rows
    ) -> RowVerdict:
        """Every node passes a pod without selectors; otherwise each node is matched."""
        if (
            self._added_required is None
            and not pod.node_selector
            and pod.required_node_affinity is None
        ):
            return verdict_with_status(all_rows_pass(len(rows)), self._mismatch)
        return verdict_per_node(self.filter, state, pod, table, rows)

    # PreScore / Score

    def pre_score(self, state: CycleState, pod: PodView, nodes: Sequence[NodeInfo]) -> Status:
        has_preferred = _raw_node_affinity(pod).get(_PREFERRED) is not None
        if not has_preferred and not self._added_preferred:
            return Status.skip()
        terms, status = self._preferred_terms(pod)
        if status.is_success:
            state.write(PRE_SCORE_STATE_KEY, terms)
        return status

    def _preferred_terms(self, pod: PodView) -> tuple[tuple[PreferredSchedulingTerm, ...], Status]:
        errors = [e for t in pod.preferred_node_affinity for e in t.preference.parse_errors]
        if errors:
            return (), Status.error("; ".join(errors))
        return self._added_preferred + pod.preferred_node_affinity, Status.OK

    def _state_terms(
        self, state: CycleState, pod: PodView
    ) -> tuple[tuple[PreferredSchedulingTerm, ...], Status]:
        try:
            terms: tuple[PreferredSchedulingTerm, ...] = state.read(PRE_SCORE_STATE_KEY)
        except KeyError:
            return self._preferred_terms(pod)  # PreScore disabled: compute here, as upstream
        return terms, Status.OK

    def score(self, state: CycleState, pod: PodView, node_info: NodeInfo) -> tuple[int, Status]:
        terms, status = self._state_terms(state, pod)
        if not status.is_success:
            return 0, status
        node = node_info.node
        if node is None:
            return 0, Status.error("node not found")
        return preferred_score(terms, node), Status.OK

    def score_rows(
        self, state: CycleState, pod: PodView, table: NodeTable, rows: Rows
    ) -> IntArray | None:
        terms, status = self._state_terms(state, pod)
        if not status.is_success:
            return None
        scores = np.zeros(len(rows), dtype=np.int64)
        if not terms:
            return scores
        infos = table.infos
        for position, row in enumerate(rows.tolist()):
            node = infos[row].node
            if node is None:
                return None
            scores[position] = preferred_score(terms, node)
        return scores

    def score_extensions(self) -> NodeAffinity:
        return self

    def normalize_rows(self, state: CycleState, pod: PodView, scores: IntArray) -> IntArray:
        return default_normalize_rows(MAX_NODE_SCORE, False, scores)

    def normalize_score(self, state: CycleState, pod: PodView, scores: list[NodeScore]) -> Status:
        return default_normalize_score(MAX_NODE_SCORE, False, scores)

    # Queueing

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return (
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
                self._schedulable_after_node_change,
            ),
        )

    def _schedulable_after_node_change(self, pod: Any, old: Any, new: Any) -> QueueingHint:
        if not isinstance(new, NodeView) or not isinstance(pod, PodView):
            return QueueingHint.QUEUE
        if old is not None and not isinstance(old, NodeView):
            return QueueingHint.QUEUE
        added = self._added_required
        if added is not None and not added.matches(new.labels, new.name):
            return QueueingHint.SKIP
        if not required_affinity_matches(pod, new):
            # Upstream's Match reports a broken required term as an error, which queues.
            required = pod.required_node_affinity
            broken = required is not None and bool(required.parse_errors)
            return QueueingHint.QUEUE if broken else QueueingHint.SKIP
        if old is None:
            return QueueingHint.QUEUE
        # An update helps only if the node did not match before.
        return QueueingHint.SKIP if required_affinity_matches(pod, old) else QueueingHint.QUEUE


PLUGIN_ENTRY = PluginEntry(NAME, NodeAffinity, decode_node_affinity_args)
