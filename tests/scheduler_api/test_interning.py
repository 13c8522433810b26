"""scheduler.api.interning: a pod's decoded JSON keeps its value, and repeated strings are
shared between pods (the memory a view keeps per pod, issue 22)."""

from __future__ import annotations

import copy
from types import MappingProxyType
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler import testing
from scheduler.api.interning import intern_strings
from scheduler.api.objects import PodView

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(["metadata", "uid", "name", "spec", "a"]), children)
    ),
    max_leaves=30,
)


@settings(deadline=None)  # the machine is shared: no timing in a property
@given(st.dictionaries(st.sampled_from(["metadata", "spec", "status", "kind"]), json_values))
def test_interning_changes_no_value(obj: dict[str, Any]) -> None:
    before = copy.deepcopy(obj)
    intern_strings(obj)
    assert obj == before


def _decoded(name: str) -> dict[str, Any]:
    """A pod as an informer holds it: decoded by orjson, so no string is shared yet."""
    pod = testing.make_pod(name, namespace="team-a", node_name="node-1", uid=f"uid-{name}")
    decoded: dict[str, Any] = orjson.loads(orjson.dumps(pod.raw))
    return decoded


def test_pods_share_repeated_strings_but_not_their_identity() -> None:
    first, second = PodView.from_dict(_decoded("a")), PodView.from_dict(_decoded("b"))
    assert first.namespace is second.namespace
    assert first.node_name is second.node_name
    assert first.raw["spec"]["nodeName"] is second.raw["spec"]["nodeName"]
    assert first.raw["metadata"]["namespace"] is second.raw["metadata"]["namespace"]
    assert first.uid == "uid-a" and second.name == "b"


def test_views_are_what_they_were_without_interning() -> None:
    raw = _decoded("a")
    untouched = copy.deepcopy(raw)
    view = PodView.from_dict(raw)
    assert view.raw == untouched
    assert (view.namespace, view.node_name, view.scheduler_name, view.phase) == (
        untouched["metadata"]["namespace"],
        untouched["spec"]["nodeName"],
        untouched["spec"].get("schedulerName", "default-scheduler"),
        untouched["status"].get("phase", ""),
    )


def test_read_only_mappings_are_left_alone() -> None:
    frozen = MappingProxyType({"spec": {"nodeName": "n1"}})
    intern_strings(frozen)  # no error, nothing to do
    assert frozen["spec"] == {"nodeName": "n1"}
