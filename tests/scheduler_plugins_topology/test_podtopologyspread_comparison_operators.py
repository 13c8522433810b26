"""PodTopologySpread's nodeTaintsPolicy Honor under the TaintTolerationComparisonOperators gate:
upstream's matchNodeInclusionPolicies hands the gate to FindMatchingUntoleratedTaint
(podtopologyspread/filtering.go, scoring.go, v1.36), so an `Lt` / `Gt` toleration brings a
tainted node's domain into the count only with the gate on. Checked per node, through the row
fast path, and on the reference (copied node list) path, for Filter and Score."""

from __future__ import annotations

import numpy as np
import pytest

from scheduler.api.objects import PodView
from scheduler.framework.interface import CycleState, NodeScore
from scheduler.framework.status import Status
from scheduler.plugins.podtopologyspread import ERR_REASON_CONSTRAINTS_NOT_MATCH, PodTopologySpread
from scheduler.plugins.podtopologyspread.args import LIST_DEFAULTING, PodTopologySpreadArgs
from scheduler.testing import (
    FakeHandle,
    cluster_objects,
    exists,
    make_node,
    make_pod,
    make_snapshot,
    spread,
)

SLA = "node.kubernetes.io/sla"
NODES = [
    make_node("node-a", labels={"zone": "zone1"}),
    make_node(
        "node-b",
        labels={"zone": "zone2"},
        taints=[{"key": SLA, "value": "950", "effect": "NoSchedule"}],
    ),
]
EXISTING = [make_pod("e1", node_name="node-a", labels={"foo": ""})]
GT_750 = {"key": SLA, "operator": "Gt", "value": "750", "effect": "NoSchedule"}


def incoming(action: str) -> PodView:
    constraint = spread(1, "zone", action, exists("foo"), node_taints_policy="Honor")
    return make_pod("p", labels={"foo": ""}, spread_constraints=[constraint], tolerations=[GT_750])


def plugin(gate: bool, existing: list[PodView] = EXISTING) -> PodTopologySpread:
    handle = FakeHandle(
        make_snapshot(NODES, existing),
        cluster_objects(),
        feature_gates={"TaintTolerationComparisonOperators": gate},
    )
    return PodTopologySpread(PodTopologySpreadArgs((), LIST_DEFAULTING), handle)


def infos_of(p: PodTopologySpread, fast: bool) -> list[object]:
    snapshot = p._handle.snapshot()  # type: ignore[union-attr]
    return snapshot.node_info_list if fast else list(snapshot.node_info_list)


# With the gate on node-b's zone counts (0 matching pods), so node-a (zone1, 1 pod) would skew
# by 2; with it off zone2 is left out and node-a fits.
@pytest.mark.parametrize(
    ("gate", "want_a"),
    [(True, Status.unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH)), (False, Status.OK)],
    ids=["gate-on", "gate-off"],
)
@pytest.mark.parametrize("fast", [True, False], ids=["node-table", "reference"])
def test_filter_honours_comparison_tolerations(gate: bool, want_a: Status, fast: bool) -> None:
    p = plugin(gate)
    pod = incoming("DoNotSchedule")
    infos = infos_of(p, fast)
    state = CycleState()
    _, status = p.pre_filter(state, pod, infos)  # type: ignore[arg-type]
    assert status.is_success
    assert [p.filter(state, pod, info) for info in infos] == [want_a, Status.OK]  # type: ignore[arg-type]
    table = p._handle.snapshot().node_table()  # type: ignore[union-attr]
    verdict = p.filter_rows(state, pod, table, np.arange(len(table), dtype=np.intp))
    assert verdict is not None
    assert verdict.passed.tolist() == [want_a.is_success, True]


@pytest.mark.parametrize(
    ("gate", "want"), [(True, [100, 100]), (False, [0, 100])], ids=["gate-on", "gate-off"]
)
def test_score_honours_comparison_tolerations(gate: bool, want: list[int]) -> None:
    """Soft constraint, one matching pod in each zone: with the gate on both are counted and
    the nodes score alike; with it off node-b's pod is not counted (upstream's scoring.go
    skips a node the inclusion policies leave out) and its zone looks emptier."""
    existing = [*EXISTING, make_pod("e2", node_name="node-b", labels={"foo": ""})]
    p = plugin(gate, existing)
    pod = incoming("ScheduleAnyway")
    infos = infos_of(p, True)
    state = CycleState()
    assert p.pre_score(state, pod, infos).is_success  # type: ignore[arg-type]
    scores = []
    for info in infos:
        value, status = p.score(state, pod, info)  # type: ignore[arg-type]
        assert status.is_success
        scores.append(NodeScore(info.node_name, value))  # type: ignore[attr-defined]
    assert p.score_extensions().normalize_score(state, pod, scores).is_success
    assert [s.score for s in scores] == want
