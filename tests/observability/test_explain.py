"""ExplainStore: compression, bounds, lookup, and the text rendering users read."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from observability.explain import ExplainStore, ResolvedDetails, build_explanation, render_text

TAINT = "node(s) had untolerated taint(s)"


def record_taints_and_cpu(store: ExplainStore, uid: str = "u1", name: str = "web") -> None:
    verdicts = {f"worker-{i}": ("NodeResourcesFit", "Insufficient cpu") for i in range(30)}
    verdicts |= {"cp-1": ("TaintToleration", TAINT), "cp-2": ("TaintToleration", TAINT)}
    store.record(
        uid,
        "default",
        name,
        profile="default-scheduler",
        attempt=3,
        result="unschedulable",
        message=f"0/32 nodes are available: 30 Insufficient cpu, 2 {TAINT}.",
        filter_verdicts=verdicts,
        evaluated_nodes=32,
        feasible_nodes=0,
    )


def test_groups_nodes_by_identical_verdict_keeping_a_few_names() -> None:
    store = ExplainStore(max_names_per_group=3, clock=lambda: 0.0)
    record_taints_and_cpu(store)
    data = store.get("default", "web")
    assert data is not None
    assert data["filterVerdicts"] == [
        {
            "plugin": "NodeResourcesFit",
            "reason": "Insufficient cpu",
            "count": 30,
            "nodes": ["worker-0", "worker-1", "worker-10"],
        },
        {"plugin": "TaintToleration", "reason": TAINT, "count": 2, "nodes": ["cp-1", "cp-2"]},
    ]
    assert (data["rejectedNodes"], data["evaluatedNodes"], data["feasibleNodes"]) == (32, 32, 0)


def test_keeps_top_k_scores_and_the_chosen_node() -> None:
    store = ExplainStore(top_k=2)
    scores = {
        "a": {"NodeResourcesFit": 50, "ImageLocality": 0},
        "b": {"NodeResourcesFit": 90, "ImageLocality": 10},
        "c": {"NodeResourcesFit": 60, "ImageLocality": 0},
        "d": {"NodeResourcesFit": 60, "ImageLocality": 0},
    }
    store.record(
        "u", "ns", "p", profile="p", attempt=1, result="scheduled", node="b", scores=scores
    )
    data = store.get("ns", "p")
    assert data is not None
    assert data["node"] == "b"
    assert data["topNodes"] == [
        {"node": "b", "total": 100, "plugins": {"NodeResourcesFit": 90, "ImageLocality": 10}},
        {"node": "c", "total": 60, "plugins": {"NodeResourcesFit": 60, "ImageLocality": 0}},
    ]


def test_last_attempt_replaces_the_previous_one() -> None:
    store = ExplainStore()
    store.record("u", "ns", "p", profile="p", attempt=1, result="unschedulable", message="one")
    store.record("u", "ns", "p", profile="p", attempt=2, result="unschedulable", message="two")
    data = store.get("ns", "p")
    assert data is not None and (data["attempt"], data["message"]) == (2, "two")
    assert len(store) == 1


def test_forget_and_unknown_pods() -> None:
    store = ExplainStore()
    record_taints_and_cpu(store)
    store.forget("u1")
    store.forget("never-seen")
    assert store.get("default", "web") is None
    assert len(store) == 0


def test_recreated_pod_with_same_name_is_found_and_old_uid_forget_is_harmless() -> None:
    store = ExplainStore()
    store.record("old", "ns", "p", profile="p", attempt=1, result="unschedulable")
    store.record("new", "ns", "p", profile="p", attempt=1, result="error")
    store.forget("old")
    data = store.get("ns", "p")
    assert data is not None and data["pod"]["uid"] == "new"


def test_disabled_store_records_nothing() -> None:
    store = ExplainStore(max_pods=0)
    record_taints_and_cpu(store)
    assert not store.enabled and len(store) == 0


@given(st.lists(st.integers(min_value=0, max_value=40), max_size=120), st.integers(1, 10))
def test_never_holds_more_than_max_pods_and_evicts_oldest(pods: list[int], limit: int) -> None:
    store = ExplainStore(max_pods=limit)
    for n in pods:
        store.record(f"u{n}", "ns", f"p{n}", profile="p", attempt=1, result="unschedulable")
    assert len(store) <= limit
    recent: list[int] = []
    for n in reversed(pods):
        if n not in recent:
            recent.append(n)
    kept = recent[:limit]
    for n in set(pods):
        assert (store.get("ns", f"p{n}") is not None) == (n in kept)


def test_render_text_for_a_rejected_pod() -> None:
    store = ExplainStore(max_names_per_group=2, clock=lambda: 0.0)
    record_taints_and_cpu(store)
    data = store.get("default", "web")
    assert data is not None
    assert render_text(data) == (
        "Pod:      default/web (uid u1)\n"
        "Profile:  default-scheduler\n"
        "Attempt:  3 at 1970-01-01T00:00:00Z\n"
        "Result:   unschedulable\n"
        f"Message:  0/32 nodes are available: 30 Insufficient cpu, 2 {TAINT}.\n"
        "Nodes:    32 evaluated, 0 feasible, 32 rejected\n"
        "\n"
        "Filter verdicts (nodes grouped by the plugin that rejected them):\n"
        f"  PLUGIN            {'REASON'.ljust(len(TAINT))}  NODES  EXAMPLES\n"
        f"  NodeResourcesFit  {'Insufficient cpu'.ljust(len(TAINT))}  30     "
        "worker-0, worker-1 (+28 more)\n"
        f"  TaintToleration   {TAINT}  2      cp-1, cp-2\n"
    )


def test_render_text_for_a_scheduled_pod_shows_score_table() -> None:
    store = ExplainStore(clock=lambda: 0.0)
    store.record(
        "u",
        "ns",
        "p",
        profile="p",
        attempt=1,
        result="scheduled",
        node="b",
        scores={"a": {"X": 1, "Y": 2}, "b": {"X": 5}},
    )
    data = store.get("ns", "p")
    assert data is not None
    text = render_text(data)
    assert "Result:   scheduled on node b\n" in text
    assert text.endswith(
        "Top nodes by score:\n  NODE  TOTAL  X  Y\n  b     5      5  -\n  a     3      1  2\n"
    )


# ---- recent successes, kept by reference and explained on request


class CountingDetails:
    """LazyDetails that counts how often it is resolved (compression happens on request only)."""

    def __init__(self, node: str = "b") -> None:
        self.node = node
        self.resolved = 0

    def resolve(self, top_k: int) -> ResolvedDetails:
        self.resolved += 1
        scores = {"a": {"X": 1}, self.node: {"X": 9}, "c": {"X": 5}}
        return {"t": ("TaintToleration", TAINT)}, scores, None


def record_success(
    store: ExplainStore, n: int, profile: str = "default-scheduler", details: Any = None
) -> Any:
    details = details or CountingDetails()
    store.record_recent(
        f"u{n}", "ns", f"p{n}", profile=profile, attempt=1, node="b",
        evaluated_nodes=4, feasible_nodes=3, details=details,
    )  # fmt: skip
    return details


def test_recent_success_is_explained_lazily_in_the_same_format() -> None:
    store = ExplainStore(top_k=2, clock=lambda: 0.0)
    details = record_success(store, 1)
    assert details.resolved == 0  # nothing compressed at record time
    data = store.get("ns", "p1")
    assert details.resolved == 1
    assert data is not None
    assert data == {
        "pod": {"namespace": "ns", "name": "p1", "uid": "u1"},
        "profile": "default-scheduler",
        "attempt": 1,
        "timestamp": 0.0,
        "result": "scheduled",
        "message": "",
        "node": "b",
        "evaluatedNodes": 4,
        "feasibleNodes": 3,
        "rejectedNodes": 1,
        "filterVerdicts": [
            {"plugin": "TaintToleration", "reason": TAINT, "count": 1, "nodes": ["t"]}
        ],
        "topNodes": [
            {"node": "b", "total": 9, "plugins": {"X": 9}},
            {"node": "c", "total": 5, "plugins": {"X": 5}},
        ],
    }


@given(
    st.lists(st.tuples(st.integers(0, 30), st.sampled_from(["a", "b"])), max_size=80),
    st.integers(1, 6),
)
def test_ring_keeps_the_last_n_successes_per_profile(
    successes: list[tuple[int, str]], limit: int
) -> None:
    store = ExplainStore(recent_per_profile=limit)
    for n, profile in successes:
        store.record_recent(
            f"{profile}{n}", "ns", f"{profile}{n}", profile=profile, attempt=1, node="b",
            evaluated_nodes=None, feasible_nodes=None, details=CountingDetails(),
        )  # fmt: skip
    for profile in ("a", "b"):
        ring = [f"{profile}{n}" for n, p in successes if p == profile][-limit:]
        for name in {f"{profile}{n}" for n, p in successes if p == profile}:
            assert (store.get("ns", name) is not None) == (name in ring), name
    assert store.recent_count() == sum(
        len(set([f"{p}{n}" for n, p in successes if p == profile][-limit:]))
        for profile in ("a", "b")
    )


def test_later_failure_replaces_a_recent_success_and_forget_drops_both() -> None:
    times = iter(range(100))
    store = ExplainStore(clock=lambda: float(next(times)))
    record_success(store, 1)
    store.record("u1", "ns", "p1", profile="p", attempt=2, result="error", message="bind failed")
    data = store.get("ns", "p1")
    assert data is not None and (data["result"], data["message"]) == ("error", "bind failed")
    assert store.recent_count() == 0
    record_success(store, 2)
    store.forget("u2")
    assert store.get("ns", "p2") is None


def test_recreated_pod_shows_its_newest_attempt() -> None:
    times = iter(range(100))
    store = ExplainStore(clock=lambda: float(next(times)))
    store.record("old", "ns", "p1", profile="p", attempt=3, result="unschedulable")
    record_success(store, 1)  # the new pod "p1" (uid u1) bound at its first attempt
    data = store.get("ns", "p1")
    assert data is not None and (data["pod"]["uid"], data["result"]) == ("u1", "scheduled")


def test_a_ring_of_zero_keeps_nothing() -> None:
    store = ExplainStore(recent_per_profile=0)
    details = record_success(store, 1)
    assert (store.get("ns", "p1"), store.recent_count(), store.keeps_recent) == (None, 0, False)
    assert details.resolved == 0


def test_render_text_of_a_what_if_answer() -> None:
    data = build_explanation(
        "what-if-1", "default", "web", profile="default-scheduler", attempt=0, timestamp=0.0,
        result="unschedulable", message="0/2 nodes are available: 2 Insufficient cpu.",
        filter_verdicts={"a": ("NodeResourcesFit", "Insufficient cpu")},
    ).to_dict()  # fmt: skip
    data["whatIf"] = {"configuration": "candidate", "snapshotNodes": 2, "note": "needs preemption"}
    assert render_text(data).splitlines()[:6] == [
        "Pod:      default/web",
        "Profile:  default-scheduler",
        "What-if:  1970-01-01T00:00:00Z, candidate configuration, 2 node(s); nothing was bound",
        "Result:   unschedulable",
        "Message:  0/2 nodes are available: 2 Insufficient cpu.",
        "Note:     needs preemption",
    ]
