"""The PodGroup cycle's configurable extension points (placementGenerate, placementScore,
placementFeasible, podGroupPostFilter), as upstream's tables state them: the v1 Plugins fields
(staging/src/k8s.io/kube-scheduler/config/v1/types.go), the default MultiPoint with
TopologyAwareWorkloadScheduling (pkg/scheduler/apis/config/v1/AGENTS.md: "Appends
TopologyPlacementGenerator and PodGroupPodsCount (weight: 1)"), MultiPoint expansion, the
runtime's merge of generators' placements (placement_merging_test.go's
TestRunPlacementGeneratePluginsMerge), PodGroupPodsCount's normalization
(podgroup_pods_count.go) and what a profile without PodGroupPodsCount chooses."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from profiles.api import load_config_text
from profiles.defaults import default_multi_point
from profiles.render import check_config_main
from scheduler.cache.node_info import NodeInfo
from scheduler.cycle.profile_set import registry_for_config
from scheduler.framework.interface import Placement, PodGroupPlacementInfo
from scheduler.framework.runtime import Framework, HandleDeps
from scheduler.framework.runtime.placement import NO_COMMON_PLACEMENT
from scheduler.framework.status import Code, Status
from scheduler.plugins.podgrouppodscount import NO_PODS_ASSIGNED, PodGroupPodsCount
from scheduler.plugins.registry import in_tree_registry
from scheduler.testing import MakeNode
from tests.scheduler_gang import test_topology_placement as tas
from tests.scheduler_gang.gang_builders import pod_group

TAS_GATES = {
    "GenericWorkload": True,
    "GangScheduling": True,
    "TopologyAwareWorkloadScheduling": True,
}
CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
"""


# -- configuration ----------------------------------------------------------------------------


def test_the_gate_appends_the_two_placement_plugins_to_the_default_multi_point() -> None:
    names = [(p.name, p.weight) for p in default_multi_point(TAS_GATES)]
    assert names[-3:] == [
        ("GangScheduling", None),
        ("TopologyPlacementGenerator", None),
        ("PodGroupPodsCount", 1),
    ]
    assert "PodGroupPodsCount" not in [p.name for p in default_multi_point({})]


def test_multi_point_binds_each_plugin_to_the_placement_points_it_implements() -> None:
    config = load_config_text(
        CONFIG, registry_for_config(in_tree_registry()), feature_gates=TAS_GATES
    )
    profile = config.profiles[0]
    assert profile.names_at("placementGenerate") == ("TopologyPlacementGenerator",)
    assert [(p.name, p.weight) for p in profile.at("placementScore")] == [("PodGroupPodsCount", 1)]
    assert profile.names_at("placementFeasible") == ("GangScheduling",)
    assert profile.names_at("podGroupPostFilter") == ("DefaultPreemption",)


def test_check_config_accepts_and_prints_the_placement_points(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        CONFIG
        + """\
  plugins:
    placementScore:
      enabled:
      - name: PodGroupPodsCount
        weight: 3
    podGroupPostFilter:
      disabled:
      - name: DefaultPreemption
"""
    )
    out, err = io.StringIO(), io.StringIO()
    registry = registry_for_config(in_tree_registry())
    assert check_config_main(path, registry, out, err, feature_gates=TAS_GATES) == 0, err.getvalue()
    text = out.getvalue()
    assert "placementScore:\n    - PodGroupPodsCount (weight 3)" in text
    assert "placementGenerate:\n    - TopologyPlacementGenerator" in text
    assert "podGroupPostFilter" not in text


def test_a_plugin_at_a_placement_point_it_does_not_implement_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        CONFIG + "  plugins:\n    placementScore:\n      enabled:\n      - name: NodeName\n"
    )
    err = io.StringIO()
    registry = registry_for_config(in_tree_registry())
    assert check_config_main(path, registry, io.StringIO(), err) == 1
    assert "plugin 'NodeName' does not implement placementScore" in err.getvalue()


# -- the runtime's PlacementGenerate merge (TestRunPlacementGeneratePluginsMerge) ---------------


class _Generator:
    def __init__(
        self, name: str, placements: Sequence[Placement] | None, code: Code = Code.SUCCESS
    ):
        self.name = name
        self._placements = placements  # None: returns the parent (unconstrained)
        self._code = code

    def generate_placements(
        self, group: PodGroupPlacementInfo, parent: Placement, nodes: Sequence[NodeInfo]
    ) -> tuple[Sequence[Placement], Status]:
        if self._code != Code.SUCCESS:
            return [], Status(self._code, "injected")
        return ([parent] if self._placements is None else self._placements), Status.OK


def _framework(generators: list[_Generator]) -> Framework:
    return Framework("p", {"placementGenerate": [(g, 0) for g in generators]}, _deps())


def _deps() -> HandleDeps:
    return HandleDeps(snapshot=lambda: None, client=None)  # type: ignore[arg-type,return-value]


def _nodes(*names: str) -> list[NodeInfo]:
    out = []
    for name in names:
        info = NodeInfo()
        info.set_node(MakeNode(name).obj())
        out.append(info)
    return out


def _p(name: str, *nodes: str) -> Placement:
    return Placement(name, nodes)


@pytest.mark.parametrize(
    "generators, code, want",
    [
        (  # two single-placement plugins intersect
            [
                _Generator("a", [_p("a", "n1", "n2", "n3")]),
                _Generator("b", [_p("b", "n2", "n3", "n4")]),
            ],
            Code.SUCCESS,
            [_p("a/b", "n2", "n3")],
        ),
        (  # cross product drops empty intersections
            [
                _Generator("a", [_p("a1", "n1", "n2"), _p("a2", "n3", "n4")]),
                _Generator("b", [_p("b1", "n2", "n3")]),
            ],
            Code.SUCCESS,
            [_p("a1/b1", "n2"), _p("a2/b1", "n3")],
        ),
        (  # three plugins fold-merge
            [
                _Generator("a", [_p("a", "n1", "n2", "n3")]),
                _Generator("b", [_p("b", "n2", "n3", "n4")]),
                _Generator("c", [_p("c", "n3", "n4")]),
            ],
            Code.SUCCESS,
            [_p("a/b/c", "n3")],
        ),
        (  # no overlap is unschedulable
            [_Generator("a", [_p("a", "n1")]), _Generator("b", [_p("b", "n2")])],
            Code.UNSCHEDULABLE,
            [],
        ),
        (  # unconstrained plugin is skipped
            [_Generator("a", None), _Generator("b", [_p("b", "n2", "n3")])],
            Code.SUCCESS,
            [_p("b", "n2", "n3")],
        ),
        (  # all unconstrained returns input placement
            [_Generator("a", None), _Generator("b", None)],
            Code.SUCCESS,
            [_p("", "n1", "n2", "n3", "n4")],
        ),
        (  # same placement name from different plugins succeeds
            [_Generator("a", [_p("dup", "n1", "n2")]), _Generator("b", [_p("dup", "n2", "n3")])],
            Code.SUCCESS,
            [_p("dup/dup", "n2")],
        ),
        (  # empty and slash-containing placement names succeed
            [
                _Generator("a", [_p("zone-a/rack-1", "n1", "n2")]),
                _Generator("b", [_p("", "n2", "n3")]),
            ],
            Code.SUCCESS,
            [_p("zone-a/rack-1/", "n2")],
        ),
        ([], Code.SUCCESS, [_p("", "n1", "n2", "n3", "n4")]),  # no plugin: the parent
        ([_Generator("a", None, Code.ERROR)], Code.ERROR, []),
    ],
)
def test_placement_generate_plugins_merge(
    generators: list[_Generator], code: Code, want: list[Placement]
) -> None:
    framework = _framework(generators)
    info = PodGroupPlacementInfo(pod_group("pg", 1), (), 0)
    got, status = framework.run_placement_generate_plugins(info, _nodes("n1", "n2", "n3", "n4"))
    assert status.code == code
    assert got == want
    if code == Code.UNSCHEDULABLE:
        assert status.message == NO_COMMON_PLACEMENT
    if code == Code.ERROR:
        assert status.plugin == "a"


# -- PlacementScore: normalization and weights ------------------------------------------------


def _scorer_framework(weight: int) -> Framework:
    plugin = PodGroupPodsCount(None, Any)  # type: ignore[arg-type]
    return Framework("p", {"placementScore": [(plugin, weight)]}, _deps())


@pytest.mark.parametrize(
    "scheduled, placed, weight, want",
    [
        (0, [2, 4], 1, [50, 100]),  # TestNormalizePlacementScore: [2, 4] scale to [50, 100]
        (0, [3], 1, [100]),  # one candidate scales to MaxScore
        (2, [1, 2], 1, [75, 100]),  # scheduled members count in every placement
        (0, [2, 4], 3, [150, 300]),  # the profile's weight multiplies the normalized score
    ],
)
def test_placement_score_totals(
    scheduled: int, placed: list[int], weight: int, want: list[int]
) -> None:
    framework = _scorer_framework(weight)
    info = PodGroupPlacementInfo(pod_group("pg", 1), (), scheduled)
    placements = [_p(str(i)) for i in range(len(placed))]
    totals, status = framework.run_placement_score_plugins(info, placements, placed)
    assert status.is_success
    assert totals == want


def test_all_candidates_scoring_zero_is_an_error() -> None:
    framework = _scorer_framework(1)
    info = PodGroupPlacementInfo(pod_group("pg", 1), (), 0)
    _, status = framework.run_placement_score_plugins(info, [_p("a"), _p("b")], [0, 0])
    assert status.code == Code.ERROR
    assert NO_PODS_ASSIGNED in status.message


def test_without_placement_score_plugins_every_total_is_zero() -> None:
    framework = Framework("p", {}, _deps())
    info = PodGroupPlacementInfo(pod_group("pg", 1), (), 0)
    assert framework.run_placement_score_plugins(info, [_p("a"), _p("b")], [2, 3]) == (
        [0, 0],
        Status.OK,
    )


# -- a profile without PodGroupPodsCount (the PodGroup cycle) -----------------------------------


NO_PODS_COUNT = (
    tas.GANG_CONFIG
    + """\
    placementScore:
      disabled:
      - name: PodGroupPodsCount
"""
)


def test_disabling_pod_group_pods_count_leaves_the_choice_to_chance(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """minCount 2 of 4 members, zone a holds 2 and zone b 3: with PodGroupPodsCount the gang
    always goes to b; without a PlacementScore plugin every feasible placement totals 0 and
    upstream's Randomizer picks among them, so some seeds choose a."""
    chosen: set[str] = set()
    for seed in range(12):

        def scheduler(gates: dict[str, bool], explain: Any = None, seed: int = seed) -> Any:
            registry = in_tree_registry()
            config = load_config_text(
                NO_PODS_COUNT, registry_for_config(registry), feature_gates=gates
            )
            assert config.profiles[0].names_at("placementScore") == ()
            return tas.Scheduler(
                tas.cast(tas.KubeClient, tas._NoClient()),
                config,
                registry,
                tas.SchedulerOptions(seed=seed, feature_gates=gates),
                explain=explain,
            )

        monkeypatch.setattr(tas, "_scheduler", scheduler)
        placed, _ = asyncio.run(tas._one_cycle(tas.TWO_ZONES, 4, 2))
        zones = {node[0] for node in placed.values()}
        assert len(zones) == 1
        chosen |= zones
    assert chosen == {"a", "b"}
