"""ClusterObjects.default_selector: upstream's helper.DefaultSelector
(pkg/scheduler/framework/plugins/helper/spread.go and spread_test.go's cases): Services selecting
the pod merged, plus the controlling RC / ReplicaSet / StatefulSet's selector."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api.objects import PodView
from scheduler.listers.cluster_objects import ClusterObjects

Obj = dict[str, Any]


def pod(labels: dict[str, str], owner: tuple[str, str, str] | None = None) -> PodView:
    meta: Obj = {"name": "p", "namespace": "ns", "uid": "u", "labels": labels}
    if owner is not None:
        api_version, kind, name = owner
        meta["ownerReferences"] = [
            {"apiVersion": api_version, "kind": kind, "name": name, "uid": "o", "controller": True}
        ]
    return PodView.from_dict({"metadata": meta, "spec": {"containers": []}})


def service(name: str, selector: dict[str, str] | None, namespace: str = "ns") -> Obj:
    spec = {} if selector is None else {"selector": selector}
    return {"kind": "Service", "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def controller(kind: str, name: str, selector: Obj) -> Obj:
    return {"kind": kind, "metadata": {"name": name, "namespace": "ns"}, "spec": selector}


RS = controller("ReplicaSet", "rs", {"selector": {"matchLabels": {"app": "web", "hash": "1"}}})
SS = controller(
    "StatefulSet",
    "ss",
    {"selector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["db"]}]}},
)
RC = controller("ReplicationController", "rc", {"selector": {"app": "old"}})

# (objects, pod labels, owner, labels that must match, labels that must not)
CASES = [
    ("nothing selects the pod", [], {"app": "web"}, None, None, None),
    (
        "service in another namespace",
        [service("s", {"app": "web"}, "other")],
        {"app": "web"},
        None,
        None,
        None,
    ),
    ("service without selector", [service("s", None)], {"app": "web"}, None, None, None),
    (
        "service selecting",
        [service("s", {"app": "web"})],
        {"app": "web", "x": "1"},
        None,
        {"app": "web"},
        {"app": "db"},
    ),
    (
        "two services merged",
        [service("s1", {"app": "web"}), service("s2", {"tier": "fe"})],
        {"app": "web", "tier": "fe"},
        None,
        {"app": "web", "tier": "fe"},
        {"app": "web"},
    ),
    (
        "replicaset owner",
        [RS],
        {"app": "web", "hash": "1"},
        ("apps/v1", "ReplicaSet", "rs"),
        {"app": "web", "hash": "1"},
        {"app": "web", "hash": "2"},
    ),
    (
        "statefulset owner",
        [SS],
        {"app": "db"},
        ("apps/v1", "StatefulSet", "ss"),
        {"app": "db"},
        {"app": "web"},
    ),
    (
        "rc owner with a service",
        [RC, service("s", {"tier": "fe"})],
        {"app": "old", "tier": "fe"},
        ("v1", "ReplicationController", "rc"),
        {"app": "old", "tier": "fe"},
        {"app": "old"},
    ),
    ("owner not found", [], {"app": "web"}, ("apps/v1", "ReplicaSet", "gone"), None, None),
]


@pytest.mark.parametrize(("name", "objects", "labels", "owner", "match", "mismatch"), CASES)
def test_default_selector(
    name: str,
    objects: list[Obj],
    labels: dict[str, str],
    owner: tuple[str, str, str] | None,
    match: dict[str, str] | None,
    mismatch: dict[str, str] | None,
) -> None:
    store = ClusterObjects()
    for obj in objects:
        store.add_object(obj)
    selector = store.default_selector(pod(labels, owner))
    if match is None:
        assert selector.is_everything()
        return
    assert not selector.is_everything()
    assert selector.matches(match)
    assert mismatch is not None and not selector.matches(mismatch)


def test_namespaces_by_selector_and_labels() -> None:
    from apimachinery.labels import LabelSelector

    store = ClusterObjects()
    for name, labels in (("a", {"team": "x"}), ("b", {"team": "y"}), ("c", {})):
        store.add_object({"kind": "Namespace", "metadata": {"name": name, "labels": labels}})
    team_x = LabelSelector.from_dict({"matchLabels": {"team": "x"}})
    assert store.namespaces_matching(team_x) == {"a"}
    assert store.namespaces_matching(LabelSelector.everything()) == {"a", "b", "c"}
    assert store.namespaces_matching(LabelSelector.nothing()) == frozenset()
    assert store.namespace_labels("b") == {"team": "y"}
    assert store.namespace_labels("missing") is None


def test_unknown_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="Pod"):
        ClusterObjects().add_object({"kind": "Pod", "metadata": {"name": "x"}})


def test_disruption_budgets_select_pods_of_their_namespace_by_a_non_empty_selector() -> None:
    def pdb(name: str, selector: Obj | None, namespace: str = "ns") -> Obj:
        spec = {} if selector is None else {"selector": selector}
        status = {"disruptionsAllowed": 1, "disruptedPods": {"p-old": "2026-01-01T00:00:00Z"}}
        meta = {"name": name, "namespace": namespace}
        return {"kind": "PodDisruptionBudget", "metadata": meta, "spec": spec, "status": status}

    store = ClusterObjects()
    for budget in (
        pdb("web", {"matchLabels": {"app": "web"}}),
        pdb("everything", {}),  # an empty selector selects nothing (upstream)
        pdb("missing", None),
        pdb("elsewhere", {"matchLabels": {"app": "web"}}, namespace="other"),
    ):
        store.add_object(budget)
    (found,) = store.disruption_budgets_for(pod({"app": "web"}))
    assert (found.name, found.disruptions_allowed, found.disrupted_pods) == (
        "web",
        1,
        frozenset({"p-old"}),
    )
    assert store.disruption_budgets_for(pod({"app": "db"})) == []
