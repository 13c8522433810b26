"""bench.decisions, the pod-by-pod comparison with kube-scheduler: its workloads are the same for a
seed, and its comparison flags what differs and forgives only ties."""

from __future__ import annotations

import argparse

import pytest

from bench import decisions_compare as cmp
from bench.decisions import parse_seeds, priorities
from bench.decisions_workload import generate


def test_a_seed_always_generates_the_same_workload() -> None:
    assert generate(3, pods=40) == generate(3, pods=40)
    assert generate(3, pods=40) != generate(4, pods=40)


def test_the_workload_exercises_every_feature_it_promises() -> None:
    pods = [p for seed in range(1, 5) for p in generate(seed, pods=50).pods]
    specs = [p["spec"] for p in pods]
    affinities = [s.get("affinity") or {} for s in specs]
    assert any("tolerations" in s for s in specs)
    assert any("nodeSelector" in s for s in specs)
    assert any("topologySpreadConstraints" in s for s in specs)
    assert any("ports" in s["containers"][0] for s in specs)
    for kind in ("nodeAffinity", "podAffinity", "podAntiAffinity"):
        assert any(kind in a for a in affinities), kind
    bands = {s["priorityClassName"].rsplit("-", 1)[0] for s in specs}
    assert bands == {"decisions-low", "decisions-mid", "decisions-high", "decisions-high-never"}
    assert any(
        c.get("restartPolicy") == "Always" for s in specs for c in s.get("initContainers", [])
    )
    spreads = [c for s in specs for c in s.get("topologySpreadConstraints", [])]
    assert any("minDomains" in c for c in spreads)
    assert any("nodeTaintsPolicy" in c for c in spreads)
    nodes = [n for seed in range(1, 5) for n in generate(seed, pods=1).nodes]
    assert any("taints" in n["spec"] for n in nodes)
    assert any("example.com/gpu" in n["status"]["capacity"] for n in nodes)
    assert any(n["status"]["images"] for n in nodes)
    budgets = generate(1, pods=1).pod_disruption_budgets
    assert budgets and all(b["spec"]["selector"]["matchLabels"]["app"] for b in budgets)


def test_bad_sizes_and_seeds_are_refused_with_the_reason() -> None:
    with pytest.raises(ValueError, match="pods=0"):
        generate(1, pods=0)
    assert parse_seeds("1-3,7") == [1, 2, 3, 7]
    with pytest.raises(argparse.ArgumentTypeError, match="'4-2'"):
        parse_seeds("4-2")


def _outcome(pod: str, node: str | None, **fields: object) -> cmp.PodOutcome:
    return cmp.PodOutcome(pod=pod, node=node, **fields)  # type: ignore[arg-type]


def test_a_planted_difference_is_flagged_and_later_pods_marked() -> None:
    reference = [_outcome("a", "n1"), _outcome("b", None, message="0/2 nodes are available")]
    ours = [
        _outcome("a", "n2", totals={"n2": 300.0, "n1": 299.0}),
        _outcome("b", None, message="0/2 nodes are available"),
    ]
    rows = cmp.compare(reference, ours, {})
    assert [(r.verdict, r.after_divergence) for r in rows] == [
        (cmp.DIFFER, False),
        (cmp.AGREE, True),
    ]
    assert rows[0].fields == {"node": ("n1", "n2")}
    assert cmp.summary(rows)["differBeforeDivergence"] == 1


def test_another_node_of_equal_total_score_is_a_tie() -> None:
    # bound by aiosched elsewhere, with the reference's node scored as high
    ours = _outcome("a", "n2", totals={"n2": 300.0, "n1": 300.0, "n3": 250.0})
    rows = cmp.compare([_outcome("a", "n1")], [ours], {})
    assert rows[0].verdict == cmp.TIE
    # created on the reference's node because what-if found the tie: a tie, naming the nodes
    pinned = _outcome("a", "n1", totals={"n2": 300.0, "n1": 300.0, "n3": 250.0}, pinned=True)
    verdict, fields = cmp.compare_pod(_outcome("a", "n1"), pinned, {})
    assert (verdict, fields) == (cmp.TIE, {"node": ("n1", ["n1", "n2"])})


@pytest.mark.parametrize(
    ("totals", "node", "tie"),
    [
        ({"n1": 5.0, "n2": 5.0}, "n1", True),
        ({"n1": 5.0, "n2": 4.0}, "n1", False),  # the only best node: no choice to make
        ({"n1": 5.0, "n2": 4.0}, "n2", False),
        ({"n2": 5.0, "n3": 5.0}, "n9", True),  # not listed, but every listed node ties
        ({"n2": 5.0, "n3": 4.0}, "n9", False),
        ({"n1": 5.0}, "n1", False),
    ],
)
def test_ties_are_read_from_the_best_nodes_scores(
    totals: dict[str, float], node: str, tie: bool
) -> None:
    assert cmp.is_tie(totals, node) is tie


def test_messages_and_preemption_are_compared() -> None:
    prio = {"v1": 100, "v2": 100, "v3": 1000}
    ref = _outcome("p", "n1", message="m", nominated="n1", victims=["v1"])
    same_weight = _outcome("p", "n2", message="m", nominated="n2", victims=["v2"])
    heavier = _outcome("p", "n2", message="m", nominated="n2", victims=["v3"])
    other_message = _outcome("p", "n1", message="m2", nominated="n1", victims=["v1"])
    assert cmp.compare_pod(ref, same_weight, prio)[0] == cmp.TIE
    assert cmp.compare_pod(ref, heavier, prio)[0] == cmp.DIFFER
    verdict, fields = cmp.compare_pod(ref, other_message, prio)
    assert verdict == cmp.DIFFER and fields == {"message": ("m", "m2")}


def test_a_preemptor_bound_before_its_condition_was_seen_agrees() -> None:
    """The same victims and node; one side bound the preemptor before a poll saw it pending."""
    seen = _outcome("p", "n1", message="0/2 nodes are available", nominated="n1", victims=["v1"])
    unseen = _outcome("p", "n1", victims=["v1"])
    assert cmp.compare_pod(unseen, seen, {"v1": 1})[0] == cmp.AGREE
    assert cmp.compare_pod(seen, unseen, {"v1": 1})[0] == cmp.AGREE
    other_victim = _outcome("p", "n1", victims=["v2"])
    assert cmp.compare_pod(other_victim, seen, {"v1": 1, "v2": 1})[0] == cmp.DIFFER


def test_every_pod_has_the_priority_of_its_class() -> None:
    workload = generate(2, pods=20)
    assert set(priorities(workload).values()) <= {
        base + step for base in (100, 1000, 10000) for step in range(4)
    }
