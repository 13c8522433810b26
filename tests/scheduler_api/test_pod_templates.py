"""PodParser: a new pod whose spec equals a recent pod's of the same owner takes what that pod's
view derived from the spec. Whatever the two pods are, the view must be a fresh parse's."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler.api.objects import MalformedObject, PodView
from scheduler.api.pod import PodParser, pod_view_from_dict

_ANTI_AFFINITY = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "labelSelector": {"matchLabels": {"app": "web"}},
                "topologyKey": "kubernetes.io/hostname",
                "matchLabelKeys": ["tier"],
            }
        ]
    }
}

#: spec variants, each reading something beyond the spec when parsed: the pod's namespace and
#: labels (pod affinity terms), its name (generic ephemeral volumes), its status (a resize).
_SPECS: list[dict[str, Any]] = [
    {"containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": "100m"}}}]},
    {
        "containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": "1"}}}],
        "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "nodeSelector": {"disk": "ssd"},
        "priority": 7,
    },
    {"containers": [{"name": "c", "image": "pause"}], "affinity": _ANTI_AFFINITY},
    {
        "containers": [{"name": "c", "image": "pause"}],
        "volumes": [
            {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
            {"name": "data", "persistentVolumeClaim": {"claimName": "data-1"}},
        ],
    },
]

_STATUSES: list[dict[str, Any]] = [
    {},
    {"phase": "Pending", "qosClass": "Burstable"},
    {  # an in-place resize under way: allocated differs from the spec's request
        "phase": "Running",
        "containerStatuses": [
            {
                "name": "c",
                "allocatedResources": {"cpu": "3"},
                "resources": {"requests": {"cpu": "3"}},
            }
        ],
    },
]


@st.composite
def _pods(draw: st.DrawFn, index: int) -> dict[str, Any]:
    spec = copy.deepcopy(draw(st.sampled_from(_SPECS)))
    if draw(st.booleans()):
        spec["nodeName"] = draw(st.sampled_from(["node-a", "node-b"]))
    meta: dict[str, Any] = {
        "name": f"pod-{index}",
        "namespace": draw(st.sampled_from(["default", "team"])),
        "uid": f"uid-{index}",
        "resourceVersion": str(index),
        "generateName": "web-",
        "labels": draw(st.dictionaries(st.sampled_from(["app", "tier"]), st.sampled_from("xy"))),
    }
    if draw(st.booleans()):
        meta["ownerReferences"] = [{"kind": "ReplicaSet", "name": "web", "uid": "rs-1"}]
    status = copy.deepcopy(draw(st.sampled_from(_STATUSES)))
    return {"metadata": meta, "spec": spec, "status": status}


def _assert_same_view(view: PodView, fresh: PodView) -> None:
    for field in dataclasses.fields(PodView):
        assert getattr(view, field.name) == getattr(fresh, field.name), field.name


@given(_pods(1), _pods(2))
def test_a_pod_parsed_after_another_equals_a_fresh_parse(
    first: dict[str, Any], second: dict[str, Any]
) -> None:
    parser = PodParser()
    expected_first = pod_view_from_dict(copy.deepcopy(first))
    expected_second = pod_view_from_dict(copy.deepcopy(second))
    _assert_same_view(parser(first), expected_first)
    _assert_same_view(parser(second), expected_second)


@given(_pods(1))
def test_a_pod_of_the_same_spec_takes_the_templates_derived_fields(first: dict[str, Any]) -> None:
    second = copy.deepcopy(first)
    second["metadata"].update(name="pod-2", uid="uid-2", resourceVersion="2")
    parser = PodParser()
    template = parser(first)
    view = parser(second)
    _assert_same_view(view, pod_view_from_dict(copy.deepcopy(second)))
    assert view.tolerations is template.tolerations
    assert view.images is template.images
    assert view.raw["spec"]["containers"] is template.raw["spec"]["containers"]
    assert view.raw is second and view.uid == "uid-2"


def test_pods_of_other_owners_or_namespaces_are_not_templates() -> None:
    spec = _SPECS[1]
    parser = PodParser()
    template = parser({"metadata": {"name": "a", "namespace": "default", "uid": "a"}, "spec": spec})
    other = parser(
        {
            "metadata": {"name": "b", "namespace": "team", "uid": "b"},
            "spec": copy.deepcopy(spec),
        }
    )
    assert other.tolerations is not template.tolerations
    assert other.tolerations == template.tolerations


def test_a_malformed_pod_names_its_field_whatever_the_template() -> None:
    parser = PodParser()
    good = {"metadata": {"name": "a", "namespace": "default", "uid": "a"}, "spec": _SPECS[0]}
    parser(good)
    bad = copy.deepcopy(good)
    bad["metadata"]["labels"] = {"app": 3}
    with pytest.raises(MalformedObject, match=r"metadata\.labels"):
        parser(bad)
    for metadata in ({"namespace": 5, "name": "b", "uid": "b"}, "not an object"):
        broken = {"metadata": metadata, "spec": copy.deepcopy(_SPECS[0])}
        with pytest.raises(MalformedObject):
            parser(broken)


def test_the_templates_kept_are_bounded() -> None:
    parser = PodParser()
    for i in range(PodParser.MAX_TEMPLATES * 2 + 3):
        parser(
            {
                "metadata": {"name": f"p{i}", "namespace": "ns", "uid": f"u{i}",
                             "generateName": f"family-{i}-"},
                "spec": _SPECS[0],
            }
        )  # fmt: skip
    assert len(parser._templates) <= PodParser.MAX_TEMPLATES
