"""MatchLabelKeysInPodTopologySpread (beta, on by default) at both values: with it off,
matchLabelKeys is ignored and only labelSelector selects the pods counted. Ported from
upstream's pkg/scheduler/framework/plugins/podtopologyspread/filtering_test.go
(TestPreFilterState) and scoring_test.go (TestPodTopologySpreadScore), their cases "matchLabelKeys
ignored when feature gate disabled" next to the same pods with the gate on.
"""

from __future__ import annotations

import pytest

from scheduler.api.objects import NodeView, PodView
from scheduler.framework.interface import CycleState, NodeScore
from scheduler.plugins.podtopologyspread import PodTopologySpread
from scheduler.plugins.podtopologyspread.args import LIST_DEFAULTING, PodTopologySpreadArgs
from scheduler.plugins.podtopologyspread.plugin import PRE_FILTER_STATE_KEY
from scheduler.testing import FakeHandle, exists, make_node, make_pod, make_snapshot, spread

HARD, SOFT = "DoNotSchedule", "ScheduleAnyway"
HOST = "kubernetes.io/hostname"
FOO, BAR = exists("foo"), exists("bar")


def plugin(nodes: list[NodeView], pods: list[PodView], enabled: bool) -> PodTopologySpread:
    handle = FakeHandle(make_snapshot(nodes, pods))
    setattr(handle, "feature_gates", {"MatchLabelKeysInPodTopologySpread": enabled})  # noqa: B010
    return PodTopologySpread(PodTopologySpreadArgs((), LIST_DEFAULTING), handle)


def labelled(node: str, **labels: str) -> PodView:
    return make_pod(node_name=node, labels=labels)


FILTER_NODES = [
    make_node(name, labels={"zone": zone, "node": name})
    for name, zone in (("node-a", "zone1"), ("node-b", "zone1"), ("node-x", "zone2"))
] + [make_node("node-y", labels={"zone": "zone2", "node": "node-y"})]
# p-a1, p-a2, p-b1, p-y1, p-y2: label foo; none has bar, the key matchLabelKeys names.
FILTER_PODS = [
    labelled("node-a", foo=""),
    labelled("node-a", foo=""),
    labelled("node-b", foo=""),
    labelled("node-y", foo=""),
    labelled("node-y", foo=""),
]


@pytest.mark.parametrize(
    ("enabled", "want"),
    [
        # "matchLabelKeys ignored when feature gate disabled": every foo pod counts
        (False, {"zone1": 3, "zone2": 2}),
        # on, the constraint also requires bar="" as the incoming pod has it: none matches
        (True, {"zone1": 0, "zone2": 0}),
    ],
)
def test_pre_filter_state(enabled: bool, want: dict[str, int]) -> None:
    pod = make_pod(
        "p",
        labels={"foo": "", "bar": ""},
        spread_constraints=[spread(1, "zone", HARD, FOO, None, None, None, ["bar"])],
    )
    pts = plugin(FILTER_NODES, FILTER_PODS, enabled)
    state = CycleState()
    _, status = pts.pre_filter(state, pod, make_snapshot(FILTER_NODES, FILTER_PODS).node_info_list)
    assert status.is_success
    assert state.read(PRE_FILTER_STATE_KEY).tp_value_to_match_num == [want]


SCORE_NODES = [
    make_node(name, labels={"zone": zone, HOST: name})
    for name, zone in (
        ("node-a", "zone1"),
        ("node-b", "zone1"),
        ("node-c", "zone2"),
        ("node-d", "zone2"),
    )
]
SCORE_PODS = [
    labelled("node-a", foo=""),
    labelled("node-b", foo="", bar=""),
    labelled("node-c", foo=""),
    labelled("node-c", bar=""),
]


@pytest.mark.parametrize(
    ("enabled", "want"),
    [
        # "matchLabelKeys ignored when feature gate disabled"
        (False, [60, 20, 60, 100]),
        # on, baz="" is required too and no existing pod has it: every node scores the same
        (True, [100, 100, 100, 100]),
    ],
)
def test_score(enabled: bool, want: list[int]) -> None:
    pod = make_pod(
        "p",
        labels={"foo": "", "bar": "", "baz": ""},
        spread_constraints=[
            spread(1, "zone", SOFT, FOO, None, None, None, ["baz"]),
            spread(1, HOST, SOFT, BAR, None, None, None, ["baz"]),
        ],
    )
    pts = plugin(SCORE_NODES, SCORE_PODS, enabled)
    infos = make_snapshot(SCORE_NODES, SCORE_PODS).node_info_list
    state = CycleState()
    assert pts.pre_score(state, pod, infos).is_success
    scores = [NodeScore(info.node_name, pts.score(state, pod, info)[0]) for info in infos]
    assert pts.normalize_score(state, pod, scores).is_success
    assert [s.score for s in scores] == want
