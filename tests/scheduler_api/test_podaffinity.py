"""Parsing a pod's inter-pod affinity terms (scheduler/api/podaffinity.py), with upstream's
namespace rules (framework/types.go getNamespacesFromPodAffinityTerm) and matchLabelKeys /
mismatchLabelKeys merged into the selector."""

from __future__ import annotations

from typing import Any

import pytest

from apimachinery.labels import LabelSelector
from scheduler.api.objects import PodView
from scheduler.api.podaffinity import NO_POD_AFFINITY

REQ = "requiredDuringSchedulingIgnoredDuringExecution"
PREF = "preferredDuringSchedulingIgnoredDuringExecution"


def pod(affinity: dict[str, Any] | None, labels: dict[str, str] | None = None) -> PodView:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "pause"}]}
    if affinity is not None:
        spec["affinity"] = affinity
    meta = {"name": "p", "namespace": "ns1", "uid": "u", "labels": labels or {}}
    return PodView.from_dict({"metadata": meta, "spec": spec})


def other(namespace: str, labels: dict[str, str]) -> PodView:
    meta = {"name": "o", "namespace": namespace, "uid": "o", "labels": labels}
    return PodView.from_dict({"metadata": meta, "spec": {"containers": []}})


def term(**fields: Any) -> dict[str, Any]:
    return {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "web"}}, **fields}


def test_no_pod_affinity_is_the_shared_empty_value() -> None:
    assert pod(None).pod_affinity is NO_POD_AFFINITY
    assert pod({"nodeAffinity": {}}).pod_affinity is NO_POD_AFFINITY


# (term fields, (namespace, namespace labels) of the other pod, whether the term selects it)
NAMESPACE_CASES = [
    ({}, ("ns1", {}), True),  # neither namespaces nor a selector: the pod's own namespace
    ({}, ("ns2", {}), False),
    ({"namespaces": ["ns2"]}, ("ns2", {}), True),
    ({"namespaces": ["ns2"]}, ("ns1", {}), False),
    ({"namespaceSelector": {}}, ("any", {}), True),  # an empty selector: every namespace
    ({"namespaceSelector": {"matchLabels": {"team": "a"}}}, ("x", {"team": "a"}), True),
    ({"namespaceSelector": {"matchLabels": {"team": "a"}}}, ("ns1", {"team": "b"}), False),
    ({"namespaces": ["ns3"], "namespaceSelector": {"matchLabels": {"t": "a"}}}, ("ns3", {}), True),
]


@pytest.mark.parametrize(("fields", "target", "want"), NAMESPACE_CASES)
def test_term_namespaces(
    fields: dict[str, Any], target: tuple[str, dict[str, str]], want: bool
) -> None:
    info = pod({"podAffinity": {REQ: [term(**fields)]}}).pod_affinity
    (parsed,) = info.required_affinity
    namespace, namespace_labels = target
    assert parsed.matches(other(namespace, {"app": "web"}), namespace_labels) is want


def test_match_and_mismatch_label_keys_merge_the_pods_own_values() -> None:
    affinity = {
        "podAntiAffinity": {
            REQ: [term(matchLabelKeys=["hash", "absent"], mismatchLabelKeys=["tenant"])]
        }
    }
    info = pod(affinity, {"app": "web", "hash": "h1", "tenant": "t1"}).pod_affinity
    (parsed,) = info.required_anti_affinity
    assert info.uses_label_keys
    assert parsed.matches(other("ns1", {"app": "web", "hash": "h1", "tenant": "t2"}), None)
    assert not parsed.matches(other("ns1", {"app": "web", "hash": "h2", "tenant": "t2"}), None)
    assert not parsed.matches(other("ns1", {"app": "web", "hash": "h1", "tenant": "t1"}), None)


def test_preferred_terms_keep_their_weights() -> None:
    affinity = {
        "podAffinity": {PREF: [{"weight": 5, "podAffinityTerm": term()}]},
        "podAntiAffinity": {PREF: [{"weight": 7, "podAffinityTerm": term(topologyKey="host")}]},
    }
    info = pod(affinity).pod_affinity
    assert [t.weight for t in info.preferred_affinity] == [5]
    assert info.preferred_anti_affinity[0].term.topology_key == "host"
    assert info.required_affinity == () and info.required_anti_affinity == ()


def test_missing_label_selector_selects_nothing() -> None:
    info = pod({"podAffinity": {REQ: [{"topologyKey": "zone"}]}}).pod_affinity
    assert info.required_affinity[0].selector == LabelSelector.nothing()


def test_invalid_selector_is_kept_as_a_parse_error_not_a_lost_pod() -> None:
    bad = {"matchExpressions": [{"key": "app", "operator": "Bogus", "values": ["x"]}]}
    info = pod({"podAffinity": {REQ: [term(labelSelector=bad)]}}).pod_affinity
    assert info.parse_error is not None and "Bogus" in info.parse_error
    assert info.required_affinity == ()


def test_label_change_recomputes_terms_that_read_labels() -> None:
    affinity = {"podAffinity": {REQ: [term(matchLabelKeys=["hash"])]}}
    first = pod(affinity, {"app": "web", "hash": "h1"})
    raw = dict(first.raw)
    raw["metadata"] = {**raw["metadata"], "labels": {"app": "web", "hash": "h2"}}
    second = PodView.from_dict(raw, first)
    selected = other("ns1", {"app": "web", "hash": "h2"})
    assert second.pod_affinity.required_affinity[0].matches(selected, None)
    assert not first.pod_affinity.required_affinity[0].matches(selected, None)
